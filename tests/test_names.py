"""Names that become file names (``ticktock.results.names``): session ids, task names and judge names are checked
where they are read, and no path of the package is built from one without the check.

The attacks of issue 42: a dataset row or a manifest line whose ``session_id`` is ``../../../../../../../`` and an
absolute path made ``task=hf`` write audio over that path plus ``.flac``."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from ticktock.errors import InputDataError
from ticktock.shipped import resource_path
from ticktock.results.names import MAX_NAME_LENGTH, checked_name, is_name, name_problem, named_path
from ticktock.sessions.manifest import ManifestError, load_manifest

ROOT = Path(__file__).resolve().parents[1]
MINI = resource_path("manifests/ticktock-mini")


# --------------------------------------------------------------------------------------------- the check itself

@pytest.mark.parametrize("name", ["fdb_v3-eval-0-0008", "s0", "a", "big_bench_audio-0001-aug99", "x.y_z-1",
                                  "a" * MAX_NAME_LENGTH])
def test_the_project_s_own_ids_are_names(name):
    assert checked_name(name, "session_id", "here") == name


@pytest.mark.parametrize("text, problem", [
    ("", "empty"), (".", "starts with '.'"), ("..", "starts with '.'"), ("-rf", "starts with '-'"),
    ("_x", "starts with '_'"), ("a/b", "has '/' at position 2"), ("a\\b", "has '\\\\' at position 2"),
    ("a\x00b", "has '\\x00' at position 2"), ("caf\u00e9", "has '\u00e9' at position 4"), ("a b", "has ' ' at position 2"),
    ("a" * (MAX_NAME_LENGTH + 1), f"{MAX_NAME_LENGTH + 1} characters long"), (7, "expected a string, got int"),
    ("../../../../../../../tmp/x", "starts with '.'")])
def test_what_is_not_a_name_is_one_line_naming_where_and_the_field(text, problem):
    assert name_problem(text) == problem and not is_name(text)
    with pytest.raises(ManifestError) as caught:
        checked_name(text, "session_id", "m.jsonl:4", ManifestError)
    message = str(caught.value)
    assert message.startswith("m.jsonl:4: field 'session_id': ") and message.endswith(f"; {problem}")
    assert "it names files, so it must be 1 to 128 ASCII letters, digits, '.', '_' or '-'" in message
    assert "\n" not in message and len(message) < 400


def test_a_named_path_stays_in_its_folder(tmp_path):
    assert named_path(tmp_path, "s-1", ".flac", "session_id", "row 0") == tmp_path / "s-1.flac"
    with pytest.raises(InputDataError, match=r"^row 0: field 'session_id': .* leaves "):
        named_path(tmp_path, "s-1", "/../../x", "session_id", "row 0")  # a suffix with a separator
    (tmp_path / "link").symlink_to(tmp_path.parent)
    with pytest.raises(InputDataError, match=r"leaves"):
        named_path(tmp_path, "link", "/x", "session_id", "row 0")


def test_every_session_id_of_the_shipped_corpus_is_a_name():
    assert all(is_name(s.session_id) for s in load_manifest(MINI / "manifest.jsonl"))


# -------------------------------------------------------------------------------------------------- the attacks

def attack_id(target: Path) -> str:
    """The issue's id: up to the file system's root, then an absolute path (the run appended ``.flac``)."""
    return "../../../../../../../" + "../" * 24 + str(target)


def test_a_manifest_line_with_a_path_for_an_id_is_refused_naming_file_line_and_field(tmp_path):
    line = json.loads((MINI / "manifest.jsonl").read_text(encoding="utf-8").splitlines()[0])
    line["session_id"] = attack_id(tmp_path / "victim")
    manifest = tmp_path / "manifest.jsonl"
    manifest.write_text(json.dumps(line) + "\n", encoding="utf-8")
    with pytest.raises(ManifestError, match=rf"^{manifest}:1: field 'session_id': '\.\./\.\./.*' is not a name: "
                                            r"it names files, .*; starts with '\.'$"):
        load_manifest(manifest)


def test_bench_export_of_a_manifest_whose_id_is_a_path_is_refused_before_anything_is_written(tmp_path):
    from ticktock.corpus.bench.__main__ import main as bench

    lines = (MINI / "manifest.jsonl").read_text(encoding="utf-8").splitlines()[:2]
    hostile = [json.loads(text) for text in lines]
    for line in hostile:
        line["audio"] = str(MINI / line["audio"])
    hostile[1]["session_id"] = attack_id(tmp_path / "victim")
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "manifest.jsonl").write_text("".join(json.dumps(line) + "\n" for line in hostile), encoding="utf-8")
    with pytest.raises(ManifestError, match=rf"^{corpus / 'manifest.jsonl'}:2: field 'session_id': .* is not a name"):
        bench(["export", str(corpus), "--out", str(tmp_path / "out")])
    assert not (tmp_path / "out").exists() and not list(tmp_path.glob("victim*"))


def test_a_dataset_row_with_a_path_for_an_id_writes_nothing_and_is_one_line_exit_3(tmp_path):
    """The exact attack: ``R task=hf task.dataset=D task.config=fdb_v3 limit.sessions=1``, the row's audio path
    absolute (so the audio was unpacked under ``audio/<session id>``), the id a path to a file of the user's."""
    from ticktock.corpus.bench.card import composition, dataset_card
    from ticktock.corpus.bench.export import write_config

    victim = tmp_path / "victim"
    (tmp_path / "victim.flac").write_bytes(b"the user's own file")
    twin = next(s for s in load_manifest(MINI / "manifest.jsonl") if s.task == "fdb_v3")
    hostile = replace(twin, session_id=attack_id(victim), manifest_path=None)  # audio path absolute
    dataset = tmp_path / "D"
    dataset.mkdir()
    write_config(dataset / "fdb_v3", [hostile])
    (dataset / "README.md").write_text(dataset_card("D", composition([hostile]), None), encoding="utf-8")
    environment = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_CACHE": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin",
                   "HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-m", "ticktock.run", "progress=false", "threads=1", "task=hf",
                           f"task.dataset={dataset}", "task.config=fdb_v3", "limit.sessions=1", "model=fixture",
                           f"hydra.run.dir={tmp_path / 'run'}"], capture_output=True, text=True, timeout=300,
                          env=environment, cwd=tmp_path)
    assert done.returncode == 3, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(f"ticktock: error: {dataset}: config fdb_v3, split test, row 0: field 'session_id': "
                           "'../../")
    assert line.endswith("victim' is not a name: it names files, so it must be 1 to 128 ASCII letters, digits, '.', "
                         "'_' or '-', the first a letter or digit; starts with '.'")
    assert (tmp_path / "victim.flac").read_bytes() == b"the user's own file"


# -------------------------------------------------------------------------- no path built from an unchecked name

SUSPECT = {"session_id", "sid", "task", "task_name", "judge_name"}  # what holds a session id, task or judge name
CHECKS = {"checked_name", "named_path", "check_judge_name", "judgement_path", "augmented_audio", "audio_file",
          "part_key", "safe_stem", "safe_id"}  # the check, and the functions that apply it (or spell a safe name)
AUDITED = {  # "file: expression" built from a name checked elsewhere, or not a name at all -> why it is safe
    "ticktock/corpus/bench/export.py: staging / task": "every task is checked against CONFIG_NAME before (export)",
    'ticktock/corpus/bench/card.py: f"{row.task}/{SPLIT}-*"': "the Hub card's pattern of a task checked as above",
    "ticktock/tables/compute.py: PurePath(str(task.get('manifest', '?')))": "a run's task config: its manifest path",
}


def names_in(node: ast.AST) -> set[str]:
    """The suspect identifiers an expression reads, outside calls to ``CHECKS``."""
    if isinstance(node, ast.Call):
        called = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)
        if called in CHECKS:
            return set()
    own = {node.id} if isinstance(node, ast.Name) else {node.attr} if isinstance(node, ast.Attribute) else set()
    return (own & SUSPECT).union(*(names_in(child) for child in ast.iter_child_nodes(node)))


def path_like(node: ast.JoinedStr) -> bool:
    """An f-string that reads as a path: a ``/`` in its text and no spaces (a message has spaces)."""
    text = [str(v.value) for v in node.values if isinstance(v, ast.Constant)]
    return any("/" in t for t in text) and not any(ch.isspace() for t in text for ch in t)


def unchecked_paths(source: str) -> list[tuple[int, str]]:
    """``(line, expression)`` of every path expression (``a / b``, ``Path(...)``, a path-like f-string) built from a
    suspect name without a check."""
    found = []
    for node in ast.walk(ast.parse(source)):
        parts = []
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            parts = [node.right]
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("Path", "PurePath", "PurePosixPath",
                                                                                "open"):
            parts = node.args
        elif isinstance(node, ast.JoinedStr) and path_like(node):
            parts = [v for v in node.values if isinstance(v, ast.FormattedValue)]
        if any(names_in(part) for part in parts):
            found.append((node.lineno, ast.get_source_segment(source, node)))
    return found


def test_the_scan_finds_a_path_built_from_a_raw_session_id():
    assert unchecked_paths('out / f"{session.session_id}.flac"') == [(1, 'out / f"{session.session_id}.flac"')]
    assert unchecked_paths('root / "audio" / sid') and unchecked_paths('Path(f"runs/{task}")')
    assert unchecked_paths('f"audio/{session_id}-aug{copy}.flac"')
    assert not unchecked_paths('named_path(out, session.session_id, ".flac", "session_id", where)')
    assert not unchecked_paths('f"{where}: session {session_id} has no audio"')  # a message, not a path


def test_no_path_of_the_package_is_built_from_an_unchecked_name():
    found = []
    for path in sorted((ROOT / "ticktock").rglob("*.py")):
        name = path.relative_to(ROOT).as_posix()
        found += [f"{name}:{line}: {text}" for line, text in unchecked_paths(path.read_text(encoding="utf-8"))
                  if f"{name}: {text}" not in AUDITED]
    assert found == [], "build these paths with ticktock.results.names.named_path (or checked_name):\n" + "\n".join(found)
