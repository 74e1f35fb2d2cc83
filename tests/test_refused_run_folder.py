"""A refused run leaves no run folder behind (``python -m ticktock.run``, real subprocesses, the fixture model):
refused before Hydra makes the folder (a bad option, no GPU, missing weights), or after it (missing audio, exit 3;
an endpoint that cannot be reached, exit 5), nothing of the refused run stays; a folder that existed before (a run
to resume, even one holding only a log) is kept with every file in it."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import write_sessions
from ticktock.errors import EXIT_CONFIG, EXIT_ENDPOINT, EXIT_INPUT_DATA
from ticktock.replay.sweeps import FOLDERS_TO_MAKE, holds_no_results, note_folders_to_make, refused_run_removed
from ticktock.results.writer import RunDirError


def ticktock_run(run_dir: Path, *overrides: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "TICKTOCK_DEBUG"}
    return subprocess.run([sys.executable, "-m", "ticktock.run", "progress=false", *overrides,
                           f"hydra.run.dir={run_dir}"], capture_output=True, text=True, timeout=300, env=env)


def fixture_over(manifest: Path) -> list[str]:
    return ["model=fixture", f"task.manifest={manifest}", "task.tool_executor=null", "limit.chunks=2"]


def one_line(done: subprocess.CompletedProcess) -> str:
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("ticktock: error: "), done.stderr
    return lines[0]


def manifest_without_audio(folder: Path) -> Path:
    manifest = write_sessions(folder, count=2)
    (folder / "audio" / "s0.flac").unlink()
    return manifest


def test_a_run_refused_before_any_work_leaves_no_folder(tmp_path):
    done = ticktock_run(tmp_path / "results" / "runs" / "x", "limit.sessions=-1")
    assert done.returncode == EXIT_CONFIG
    assert one_line(done) == "ticktock: error: limit.sessions: must be null or an integer >= 1, got -1"
    assert not (tmp_path / "results").exists()


def test_a_run_refused_after_hydra_made_its_folder_removes_it_and_the_parents_it_made(tmp_path):
    manifest = manifest_without_audio(tmp_path / "data")
    done = ticktock_run(tmp_path / "results" / "runs" / "x", *fixture_over(manifest))
    assert done.returncode == EXIT_INPUT_DATA
    assert "audio file not found" in one_line(done)
    assert not (tmp_path / "results").exists()  # the run folder, and results/runs/ made with it


def test_an_unreachable_endpoint_leaves_no_folder(tmp_path):
    done = ticktock_run(tmp_path / "runs" / "live", "model=endpoint", "model.url=ws://127.0.0.1:9/v1/realtime",
                        "limit.sessions=1", "model.connect_timeout_s=5")
    assert done.returncode == EXIT_ENDPOINT
    assert "cannot connect" in one_line(done)
    assert not (tmp_path / "runs").exists()


def test_a_refused_run_into_an_existing_run_folder_keeps_the_folder_and_its_files(tmp_path):
    data = tmp_path / "data"
    manifest = write_sessions(data, count=2)
    run_dir = tmp_path / "runs" / "kept"
    first = ticktock_run(run_dir, *fixture_over(manifest))
    assert first.returncode == 0, first.stderr
    before = files_of(run_dir)
    assert "run.json" in before and "chunks.parquet" in before
    (data / "audio" / "s0.flac").unlink()  # the resumed run is refused: its audio is gone
    done = ticktock_run(run_dir, *fixture_over(manifest))
    assert done.returncode == EXIT_INPUT_DATA and "audio file not found" in one_line(done)
    assert files_of(run_dir) == before


def test_a_folder_that_held_only_a_log_before_is_not_removed(tmp_path):
    run_dir = tmp_path / "runs" / "mine"
    run_dir.mkdir(parents=True)
    (run_dir / "run.log").write_text("")
    done = ticktock_run(run_dir, *fixture_over(manifest_without_audio(tmp_path / "data")))
    assert done.returncode == EXIT_INPUT_DATA
    assert run_dir.is_dir() and (run_dir / "run.log").is_file()


def test_only_a_folder_this_process_was_about_to_make_is_removed(tmp_path):
    made, existing = tmp_path / "new" / "runs" / "a", tmp_path / "old"
    existing.mkdir()
    for folder in (made, existing):
        note_folders_to_make(folder)
    made.mkdir(parents=True)
    for folder in (made, existing):
        (folder / "run.log").write_text("a warning\n")
        (folder / "run.lock").write_text("")
        with pytest.raises(RunDirError):
            with refused_run_removed(folder):
                raise RunDirError("refused")
    assert not (tmp_path / "new").exists()
    assert sorted(p.name for p in existing.iterdir()) == ["run.lock", "run.log"]
    assert str(existing) not in FOLDERS_TO_MAKE


def test_a_folder_holding_a_result_or_a_held_lock_is_kept(tmp_path):
    for name, body in (("run.json", "{}"), ("run.lock", '{"pid": 1}')):
        folder = tmp_path / f"with-{name}"
        note_folders_to_make(folder)
        folder.mkdir()
        (folder / "run.log").write_text("")
        (folder / name).write_text(body)
        assert not holds_no_results(folder)
        with pytest.raises(RunDirError):
            with refused_run_removed(folder):
                raise RunDirError("refused")
        assert (folder / name).read_text() == body


def test_a_bug_is_not_a_refusal_its_folder_stays_for_the_traceback(tmp_path):
    folder = tmp_path / "bug"
    note_folders_to_make(folder)
    folder.mkdir()
    with pytest.raises(ZeroDivisionError):
        with refused_run_removed(folder):
            raise ZeroDivisionError
    assert folder.is_dir()


def files_of(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` but Hydra's log (which each start appends to), by relative path, with its bytes."""
    return {str(path.relative_to(folder)): path.read_bytes() for path in sorted(folder.rglob("*"))
            if path.is_file() and path.name != "run.log"}
