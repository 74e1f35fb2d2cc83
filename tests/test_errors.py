"""Expected errors: one hierarchy, one line on stderr, an exit code per kind; tracebacks only with TICKTOCK_DEBUG; run
folders that cannot be written (read-only, full) are one line too, and keep what was written."""

import base64
import json
import os
import resource
import signal
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from ticktock.sessions.audio import AudioError
from ticktock.clocks.modeled import ProfileError
from ticktock.decoders.contract import DecoderConfigError
from ticktock.decoders.selection import SamplingError
from ticktock.errors import EXIT_CONFIG, EXIT_INPUT_DATA, EXIT_INTERRUPTED, EXIT_RUN_FOLDER, TickTockError, user_errors
from ticktock.sessions.manifest import ManifestError
from ticktock.results.writer import RunDirError
from ticktock.replay.config import RunOptionError, compose_run
from ticktock.replay.runner import run
from ticktock.results.writable import ResultsWriteError
from ticktock.replay.concurrency import ConcurrencyError
from ticktock.replay.targets import TargetError
from ticktock.scheduling.base import DraftPolicyError


@pytest.mark.parametrize("kind, code", [
    (ManifestError, EXIT_INPUT_DATA), (AudioError, EXIT_INPUT_DATA), (SamplingError, EXIT_CONFIG),
    (DecoderConfigError, EXIT_CONFIG), (ProfileError, EXIT_CONFIG), (RunOptionError, EXIT_CONFIG),
    (RunDirError, EXIT_RUN_FOLDER), (ResultsWriteError, EXIT_RUN_FOLDER), (TargetError, EXIT_CONFIG),
    (DraftPolicyError, EXIT_CONFIG), (ConcurrencyError, EXIT_CONFIG),
])
def test_every_expected_error_is_a_ticktock_error_with_its_exit_code(kind, code):
    assert issubclass(kind, TickTockError) and kind.exit_code == code
    assert (EXIT_CONFIG, EXIT_INPUT_DATA, EXIT_RUN_FOLDER, EXIT_INTERRUPTED) == (2, 3, 4, 130)


def test_an_expected_error_is_one_line_and_its_exit_code(capsys, monkeypatch):
    monkeypatch.delenv("TICKTOCK_DEBUG", raising=False)
    with pytest.raises(SystemExit) as done, user_errors():
        raise ManifestError("m.jsonl:2: field 'duration_s': missing")
    assert done.value.code == 3
    assert capsys.readouterr().err == "ticktock: error: m.jsonl:2: field 'duration_s': missing\n"


def test_ctrl_c_says_what_was_kept_and_exits_130(capsys, monkeypatch):
    monkeypatch.delenv("TICKTOCK_DEBUG", raising=False)
    with pytest.raises(SystemExit) as done, user_errors(interrupted=lambda: "3 of 9 sessions kept in r; run it again"):
        raise KeyboardInterrupt
    assert done.value.code == 130
    assert capsys.readouterr().err == "ticktock: interrupted: 3 of 9 sessions kept in r; run it again\n"


def test_other_errors_and_debug_mode_keep_their_tracebacks(monkeypatch):
    monkeypatch.delenv("TICKTOCK_DEBUG", raising=False)
    with pytest.raises(ZeroDivisionError), user_errors():  # a bug is not an expected error
        1 / 0
    monkeypatch.setenv("TICKTOCK_DEBUG", "1")
    with pytest.raises(AudioError), user_errors():
        raise AudioError("a.flac: cannot read audio")
    with pytest.raises(KeyboardInterrupt), user_errors():
        raise KeyboardInterrupt


# ---------------------------------------------------------------------- run folders that cannot be written


def fixture_run(manifest: Path, *overrides: str) -> list[str]:
    """The command-line overrides of a fixture-model run over ``manifest`` (``compose_run`` composes the same)."""
    return ["model=fixture", f"task.manifest={manifest}", "task.tool_executor=null", "progress=false", *overrides]


def cli_run(run_dir: Path, overrides: list[str], file_size_limit: int | None = None) -> subprocess.CompletedProcess:
    """``python -m ticktock.run`` into ``run_dir``; with ``file_size_limit``, no file it writes may grow past that
    many bytes (RLIMIT_FSIZE: a write beyond fails with EFBIG, as on a full disk)."""
    def limit_file_size():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the write fails with EFBIG instead of killing the process
        resource.setrlimit(resource.RLIMIT_FSIZE, (file_size_limit, resource.RLIM_INFINITY))

    env = {k: v for k, v in os.environ.items() if k != "TICKTOCK_DEBUG"}
    return subprocess.run([sys.executable, "-m", "ticktock.run", *overrides, f"hydra.run.dir={run_dir}"],
                          capture_output=True, text=True, timeout=300, env=env,
                          preexec_fn=limit_file_size if file_size_limit else None)


@contextmanager
def read_only(folder: Path):
    """``folder`` read-only while the block runs: by its mode for a user other than root, by a read-only bind mount
    for root (whom modes do not stop); skipped where root may not mount."""
    if os.geteuid() != 0:
        mode = folder.stat().st_mode
        folder.chmod(0o555)
        try:
            yield "permission denied"
        finally:
            folder.chmod(mode)
        return
    mounted = subprocess.run(["mount", "--bind", str(folder), str(folder)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"root without the right to mount here ({mounted.stderr.decode().strip()}): no read-only folder")
    try:
        subprocess.run(["mount", "-o", "remount,ro,bind", str(folder)], check=True, capture_output=True)
        yield "read-only file system"
    finally:
        subprocess.run(["umount", str(folder)], check=True, capture_output=True)


def test_a_run_into_a_read_only_folder_is_one_line_exit_4(tmp_path, small_manifest):
    results = tmp_path / "results"
    results.mkdir()
    with read_only(results) as why:
        done = cli_run(results / "run", fixture_run(small_manifest, "limit.sessions=1", "limit.chunks=2"))
        assert (done.returncode, done.stderr) == (4, f"ticktock: error: {results}: cannot write a run folder here ({why})\n")
        with pytest.raises(ResultsWriteError, match=rf"^{results}: cannot write a run folder here \({why}\)$"):
            run(compose_run("ar", "fixture", None, fixture_run(small_manifest)[1:]), results / "run")  # main_job's way
    assert list(results.iterdir()) == []


def test_resuming_a_run_whose_folder_became_read_only_is_one_line_exit_4(tmp_path, small_manifest):
    cfg = compose_run("ar", "fixture", None, fixture_run(small_manifest, "limit.sessions=1", "limit.chunks=2")[1:])
    run(cfg, tmp_path / "run")
    before = sorted(p.name for p in (tmp_path / "run").iterdir())
    with read_only(tmp_path / "run") as why:
        with pytest.raises(ResultsWriteError) as failure:  # the command line's one line (the test above)
            run(cfg, tmp_path / "run")
    assert (failure.value.exit_code, str(failure.value)) == (4, f"{tmp_path / 'run'}: cannot write a run folder here "
                                                                f"({why})")
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == before


def test_a_disk_that_fills_mid_run_is_one_line_and_keeps_the_sessions_written_before(tmp_path):
    from helpers import write_sessions

    manifest = write_sessions(tmp_path / "corpus", count=2)
    lines = [json.loads(line) for line in manifest.read_text().splitlines()]
    notes = base64.b64encode(np.random.default_rng(0).bytes(60_000)).decode()  # s1's sessions row: ~45 kB compressed
    lines[1]["expected"]["notes"] = notes
    manifest.write_text("".join(json.dumps(line) + "\n" for line in lines))
    run_dir, overrides = tmp_path / "run", fixture_run(manifest, "limit.chunks=3")
    done = cli_run(run_dir, overrides, file_size_limit=30_000)  # every file of s0 fits; s1's sessions part does not
    part = run_dir / "parts" / "s1-640d87e7.sessions.parquet"
    assert (done.returncode, done.stderr) == (4, f"ticktock: error: {part}: cannot write (File too large); the sessions "
                                                 "completed before are kept, and the same command resumes once there "
                                                 "is room\n")
    assert pq.read_table(run_dir / "sessions.parquet").column("session_id").to_pylist() == ["s0"]
    assert json.loads((run_dir / "run.json").read_text())["status"].startswith("failed: ResultsWriteError: ")
    kept = (run_dir / "parts" / "s0-2d6c8a6d.sessions.parquet").stat().st_mtime_ns
    summary = run(compose_run("ar", "fixture", None, overrides[1:]), run_dir)  # room again: it resumes
    assert summary.sessions == 2 and (run_dir / "parts" / "s0-2d6c8a6d.sessions.parquet").stat().st_mtime_ns == kept
