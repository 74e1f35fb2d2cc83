"""The CLI end to end, in subprocesses (as a user runs it)."""

import json
import subprocess
import sys

import pyarrow.parquet as pq


def run_cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "ticktock.run", *args], capture_output=True, text=True, cwd=cwd, timeout=600)


def common(manifest, run_dir):
    return ["model=fixture", f"task.manifest={manifest}", "task.tool_executor=null", f"hydra.run.dir={run_dir}",
            "progress=false"]


def test_smoke_run_then_resume(tmp_path, small_manifest):
    run_dir = tmp_path / "run"
    first = run_cli(*common(small_manifest, run_dir), "limit.sessions=2", "limit.chunks=4")
    assert first.returncode == 0, first.stderr[-2000:]
    assert "2 sessions (0 skipped), 8 chunks" in first.stdout and "#MAT 1.00" in first.stdout
    chunks = pq.read_table(run_dir / "chunks.parquet").to_pandas()
    assert len(chunks) == 8 and set(chunks.decoder) == {"ar"} and set(chunks.clock) == {"modeled"}
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["status"] == "complete" and meta["schema_version"] == 1 and meta["environment"]["versions"]["torch"]
    second = run_cli(*common(small_manifest, run_dir), "limit.chunks=4")  # resume: only the third session runs
    assert second.returncode == 0, second.stderr[-2000:]
    assert "3 sessions (0 skipped), 12 chunks" in second.stdout
    sessions = pq.read_table(run_dir / "sessions.parquet").column("session_id").to_pylist()
    assert sorted(sessions) == ["s0", "s1", "s2"]
    clash = run_cli(*common(small_manifest, run_dir), "limit.chunks=4", "clock=wall")
    assert clash.returncode != 0 and "different configuration" in clash.stderr


def test_bad_manifest_line_is_named_before_any_work(tmp_path, small_manifest):
    bad = tmp_path / "bad.jsonl"
    lines = small_manifest.read_text().splitlines()
    broken = json.loads(lines[1])
    del broken["duration_s"]
    bad.write_text(lines[0] + "\n" + json.dumps(broken) + "\n")
    (tmp_path / "audio").symlink_to(small_manifest.parent / "audio")
    result = run_cli(*common(bad, tmp_path / "run"))
    assert result.returncode != 0
    assert f"{bad}:2: field 'duration_s': missing" in result.stderr
    assert not (tmp_path / "run" / "chunks.parquet").exists()


def test_missing_audio_error_or_skip(tmp_path, small_manifest):
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "manifest.jsonl").write_text(small_manifest.read_text())
    (folder / "audio").mkdir()
    for name in ("s0.flac", "s2.flac"):
        (folder / "audio" / name).symlink_to(small_manifest.parent / "audio" / name)
    failed = run_cli(*common(folder / "manifest.jsonl", tmp_path / "r1"))
    assert failed.returncode != 0 and "s1.flac: audio file not found" in failed.stderr
    skipped = run_cli(*common(folder / "manifest.jsonl", tmp_path / "r2"), "skip_bad_sessions=true", "limit.chunks=2")
    assert skipped.returncode == 0, skipped.stderr[-2000:]
    assert "2 sessions (1 skipped)" in skipped.stdout
    meta = json.loads((tmp_path / "r2" / "run.json").read_text())
    assert [s["session_id"] for s in meta["skipped_sessions"]] == ["s1"]


def test_unknown_decoder_lists_the_options(tmp_path, small_manifest):
    result = run_cli(*common(small_manifest, tmp_path / "run"), "decoder=nope")
    assert result.returncode != 0
    assert "Could not find 'decoder/nope'" in result.stderr and "ar" in result.stderr


def test_multirun_sweeps_clocks(tmp_path, small_manifest):
    sweep = tmp_path / "sweep"
    args = [a for a in common(small_manifest, tmp_path / "unused") if not a.startswith("hydra.run")]
    result = run_cli("-m", *args, "clock=modeled,wall", f"hydra.sweep.dir={sweep}", "limit.sessions=1", "limit.chunks=2")
    assert result.returncode == 0, result.stderr[-2000:]
    assert len(list(sweep.glob("*/chunks.parquet"))) == 2


def test_ticktock_command_dispatches_to_the_modules(tmp_path, small_manifest, capsys):
    from ticktock.cli import COMMANDS, main

    assert main(["--help"]) == 0
    listing = capsys.readouterr().out
    assert all(name in listing for name in COMMANDS)
    assert main(["no-such-command"]) == 2 and "unknown command 'no-such-command'" in capsys.readouterr().err
    assert main(["synth", "--help"]) == 0 and "--sessions-per-task" in capsys.readouterr().out
    run_dir = tmp_path / "run"
    assert main(["run", *common(small_manifest, run_dir), "limit.sessions=1", "limit.chunks=2"]) == 0
    assert (run_dir / "chunks.parquet").is_file()
