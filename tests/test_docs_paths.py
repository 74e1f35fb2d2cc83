"""What README.md and docs/*.md name exists: every file path of the checkout (``ticktock/...``, ``scripts/...``,
``configs/...``), every ``python -m ticktock.X`` module, every dotted ``ticktock.x.y`` name, every link to a page."""

from __future__ import annotations

import importlib
import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
TOP_FOLDERS = ("ticktock", "scripts", "configs", "manifests", "tests", "docs", "examples", ".ci")
PATH = re.compile(r"(?<![\w./~$-])((?:%s)/[\w./<>-]*)" % "|".join(re.escape(top) for top in TOP_FOLDERS))
RUN_MODULE = re.compile(r"python3? -m (ticktock[\w.<>]*)")
FILE_NAME = re.compile(r"\.(json|yaml|md|py|lock|parquet|csv)$")  # `ticktock.json` is a file, not a module
DOTTED = re.compile(r"`(ticktock(?:\.\w+)+)`")
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def page_id(page: Path) -> str:
    return str(page.relative_to(ROOT))


def code_spans(text: str) -> list[str]:
    """Inline code spans and the lines of ```bash blocks (other blocks show output, trees or data)."""
    spans, in_block, block_info = [], False, ""
    for line in text.splitlines():
        if line.startswith("```"):
            in_block, block_info = not in_block, line[3:].strip()
            continue
        if in_block:
            if block_info == "bash":
                spans.append(line)
            continue
        spans += re.findall(r"`([^`]+)`", line)
    return spans


def named_paths(text: str) -> set[str]:
    """Checkout paths named in code, without placeholders (``<source>``) or globs."""
    return {match.rstrip(".") for span in code_spans(text) for match in PATH.findall(span)
            if not re.search(r"[<>*{}]", match)}


def resolves(dotted: str) -> bool:
    """``ticktock.a.b.C``: the longest importable module prefix, then attributes."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        name = ".".join(parts[:cut])
        try:
            spec = importlib.util.find_spec(name)
        except ModuleNotFoundError:
            spec = None
        if spec is None:
            continue
        value = importlib.import_module(name)
        for attribute in parts[cut:]:
            if not hasattr(value, attribute):
                return False
            value = getattr(value, attribute)
        return True
    return False


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_named_paths_exist(page):
    missing = sorted(path for path in named_paths(page.read_text(encoding="utf-8")) if not (ROOT / path).exists())
    assert not missing, f"{page_id(page)} names paths that do not exist: {missing}"


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_named_modules_exist(page):
    """``python -m ticktock.X`` runs a module (or a package with ``__main__``); dotted names resolve."""
    from ticktock.api import ENTRY_POINT_GROUPS

    text = page.read_text(encoding="utf-8")
    not_runnable = []
    for name in {name.rstrip(".") for name in RUN_MODULE.findall(text) if "<" not in name}:
        spec = importlib.util.find_spec(name)
        if spec is None or (spec.submodule_search_locations and importlib.util.find_spec(f"{name}.__main__") is None):
            not_runnable.append(name)
    assert not not_runnable, f"{page_id(page)}: `python -m` of modules that cannot run: {sorted(not_runnable)}"
    groups = set(ENTRY_POINT_GROUPS.values())  # entry-point group names, not modules
    dotted = {name for name in DOTTED.findall(text) if not FILE_NAME.search(name)} - groups
    unresolved = sorted(name for name in dotted if not resolves(name))
    assert not unresolved, f"{page_id(page)} names what does not exist: {unresolved}"


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_links_to_pages_exist(page):
    targets = [target for target in LINK.findall(page.read_text(encoding="utf-8")) if "://" not in target]
    missing = sorted(target for target in targets if not (page.parent / target).exists())
    assert not missing, f"{page_id(page)} links to missing files: {missing}"


def test_path_pattern():
    text = ("see `ticktock/replay/engine.py` and `python scripts/make_miniature.py`, not `~/dl/ticktock/x`, "
            "`tests/decoders/test_<name>.py` or `<a>`")
    assert named_paths(text) == {"ticktock/replay/engine.py", "scripts/make_miniature.py"}
