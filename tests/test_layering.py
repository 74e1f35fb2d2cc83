"""The package's layering, as docs/layout.md states it, checked against every import statement of ``ticktock/``.

docs/layout.md holds three tables this test reads: which packages each package may import, the few modules that
may also reach up a layer, and which modules stay free of torch and transformers when imported. An import the
tables do not allow, a package they do not name, an import of test code or of ``ticktock.miniatures`` from a
production module, or an import cycle fails here, naming the module and the line.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from helpers import table_rows

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "ticktock"
LAYOUT = ROOT / "docs" / "layout.md"
TEST_MODULES = {"tests", "conftest", *(path.stem for path in (ROOT / "tests").rglob("*.py"))}


@dataclass(frozen=True)
class Import:
    """``module`` imports ``target`` (a ticktock module, or the top-level name of any other) at ``line``."""

    module: str
    target: str
    line: int


def module_files() -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its ``__init__.py``)."""
    modules = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


MODULES = module_files()


def imports_of(module: str) -> list[Import]:
    """Every import in a module, at any depth (inside functions too); a ticktock target is resolved to the module
    it names (``from ticktock.api import Decoder`` -> ``ticktock.api``), any other to its top-level name."""
    path = MODULES[module]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = absolute(node.module, node.level, module, path.name == "__init__.py")
            names = [f"{base}.{alias.name}" for alias in node.names] + [base]
        else:
            continue
        for name in names:
            found.append(Import(module, known_module(name), node.lineno))
    return sorted(set(found), key=lambda i: (i.line, i.target))


def absolute(name: str | None, level: int, module: str, is_package: bool) -> str:
    """The absolute name of a (possibly relative) ``from`` import.

    >>> absolute("base", 1, "ticktock.decoders.ar", False)
    'ticktock.decoders.base'
    """
    if level == 0:
        return name
    parts = module.split(".") if is_package else module.split(".")[:-1]
    parts = parts[: len(parts) - (level - 1)]
    return ".".join(parts + ([name] if name else []))


def known_module(name: str) -> str:
    """The longest prefix of ``name`` that is a ticktock module; for other packages the top-level name."""
    if not name.startswith("ticktock"):
        return name.split(".")[0]
    while name not in MODULES:
        name = name.rpartition(".")[0]
    return name


def package_of(module: str) -> str:
    """``ticktock.replay.runner`` -> ``ticktock.replay``; a top-level module (``ticktock.run``) is its own."""
    parts = module.split(".")
    if len(parts) > 1 and (PACKAGE / parts[1]).is_dir():
        return ".".join(parts[:2])
    return module


def markdown_table(header: str) -> list[list[str]]:
    """The rows (cells) of the table in docs/layout.md whose header row is ``header``."""
    return table_rows(LAYOUT.read_text(encoding="utf-8"), header)


def names(cell: str) -> list[str]:
    return re.findall(r"`(ticktock[\w.*]*)`", cell)


def allowed_imports() -> dict[str, set[str]]:
    """docs/layout.md's "may import" table: package -> the packages it may import."""
    return {package: set(names(row[2])) for row in markdown_table("| package | holds | may import |")
            for package in names(row[0])}


def upward_exceptions() -> list[tuple[str, str]]:
    """docs/layout.md's table of imports that reach up a layer: (importer pattern, imported module)."""
    return [(importer, target) for row in markdown_table("| module | may also import | why |")
            for importer in names(row[0]) for target in names(row[1])]


def is_excepted(imp: Import, exceptions: list[tuple[str, str]]) -> bool:
    for importer, target in exceptions:
        matches = imp.module == importer or (importer.endswith(".*") and imp.module.startswith(importer[:-1]))
        if matches and imp.target == target:
            return True
    return False


def ticktock_imports() -> list[Import]:
    return [imp for module in MODULES for imp in imports_of(module) if imp.target.startswith("ticktock")]


def test_every_package_is_in_the_layout_table():
    documented = set(allowed_imports())
    packages = {package_of(module) for module in MODULES} - {"ticktock"}
    assert not packages - documented, f"packages docs/layout.md does not place: {sorted(packages - documented)}"
    assert not documented - packages, f"docs/layout.md names packages that do not exist: {sorted(documented - packages)}"


def test_imports_follow_the_layers_of_docs_layout():
    allowed, exceptions = allowed_imports(), upward_exceptions()
    wrong = [f"{MODULES[imp.module].relative_to(ROOT)}:{imp.line}: {imp.module} imports {imp.target}"
             for imp in ticktock_imports()
             if package_of(imp.module) != package_of(imp.target)
             and package_of(imp.target) not in allowed.get(package_of(imp.module), set())
             and not is_excepted(imp, exceptions)]
    assert not wrong, "imports docs/layout.md does not allow (change the code, or the layers there):\n" + "\n".join(wrong)


def test_no_production_module_imports_tests_or_miniatures():
    wrong = [f"{MODULES[imp.module].relative_to(ROOT)}:{imp.line}: imports {imp.target}"
             for module in MODULES for imp in imports_of(module)
             if imp.target in TEST_MODULES
             or (imp.target.startswith("ticktock.miniatures") and not module.startswith("ticktock.miniatures"))]
    assert not wrong, "\n".join(wrong)


def test_no_import_cycles():
    graph = {module: set() for module in MODULES}
    for imp in ticktock_imports():
        if imp.target != imp.module and not imp.module.startswith(imp.target + "."):
            graph[imp.module].add(imp.target)
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A cycle of the directed graph as a list of nodes (first = last), or None.

    >>> find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}})
    ['a', 'b', 'c', 'a']
    >>> find_cycle({"a": {"b"}, "b": set()}) is None
    True
    """
    state, path = {}, []

    def visit(node):
        state[node] = "open"
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                return path[path.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        state[node] = "done"
        path.pop()
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


LIGHT_CHECK = """
import importlib, json, sys
heavy = ("torch", "transformers")
for name in json.loads(sys.argv[1]):
    importlib.import_module(name)
    loaded = [h for h in heavy if h in sys.modules]
    if loaded:
        print(json.dumps([name, loaded]))
        break
"""


def test_light_modules_do_not_import_torch_or_transformers():
    """The "no" rows of docs/layout.md's torch table, every module of a package named there, imported in a fresh
    interpreter: the first one that loads torch or transformers is named."""
    light = [name for row in markdown_table("| modules | torch or transformers when imported |")
             if row[1].startswith("no") for name in names(row[0])]
    modules = sorted(module for module in MODULES if not module.endswith(".__main__")
                     and any(module == name or module.startswith(name + ".") for name in light))
    assert len(modules) > 40, modules
    done = subprocess.run([sys.executable, "-c", LIGHT_CHECK, json.dumps(modules)], capture_output=True, text=True,
                          timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    assert not done.stdout.strip(), f"imported when this module was (docs/layout.md says it stays light): {done.stdout}"


def test_at_most_twelve_modules_at_the_top_of_the_package():
    """docs/layout.md: the top of ``ticktock/`` holds the commands and the public API only (``__init__`` counted); a
    command that belongs to one package lives there."""
    top = sorted(path.name for path in (Path(__file__).resolve().parents[1] / "ticktock").glob("*.py"))
    assert len(top) <= 12, top
