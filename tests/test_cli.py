"""The CLI end to end, in subprocesses (as a user runs it)."""

import json
import subprocess
import sys

import pyarrow.parquet as pq

from ticktock.results.schema import SCHEMA_VERSION


def run_cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "ticktock.run", *args], capture_output=True, text=True, cwd=cwd, timeout=600)


def one_line(result) -> str:
    """The command's whole stderr, which must be a single line (no traceback around the message)."""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr[-3000:]
    return lines[0]


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
    assert meta["status"] == "complete" and meta["schema_version"] == SCHEMA_VERSION == 8 and meta["environment"]["versions"]["torch"]
    second = run_cli(*common(small_manifest, run_dir), "limit.chunks=4")  # resume: only the third session runs
    assert second.returncode == 0, second.stderr[-2000:]
    assert "3 sessions (0 skipped), 12 chunks" in second.stdout
    sessions = pq.read_table(run_dir / "sessions.parquet").column("session_id").to_pylist()
    assert sorted(sessions) == ["s0", "s1", "s2"]
    clash = run_cli(*common(small_manifest, run_dir), "limit.chunks=4", "clock=wall")
    assert clash.returncode == 4 and "different configuration" in clash.stderr
    assert one_line(clash).startswith(f"ticktock: error: {run_dir} holds a run with a different configuration")
    unbuilt = run_cli(*common(small_manifest, run_dir), "limit.chunks=4", "+model.not_an_option=1")
    assert unbuilt.returncode == 4 and "(model: {" in one_line(unbuilt)  # refused before the model is built: its
    # build would fail (an option the fixture does not take)
    assert "'not_an_option': 1}" in one_line(unbuilt)


def test_bad_manifest_line_is_named_before_any_work(tmp_path, small_manifest):
    bad = tmp_path / "bad.jsonl"
    lines = small_manifest.read_text().splitlines()
    broken = json.loads(lines[1])
    del broken["duration_s"]
    bad.write_text(lines[0] + "\n" + json.dumps(broken) + "\n")
    (tmp_path / "audio").symlink_to(small_manifest.parent / "audio")
    result = run_cli(*common(bad, tmp_path / "run"))
    assert result.returncode == 3
    assert one_line(result) == f"ticktock: error: {bad}:2: field 'duration_s': missing"
    assert not (tmp_path / "run" / "chunks.parquet").exists()


def test_missing_audio_error_or_skip(tmp_path, small_manifest):
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "manifest.jsonl").write_text(small_manifest.read_text())
    (folder / "audio").mkdir()
    for name in ("s0.flac", "s2.flac"):
        (folder / "audio" / name).symlink_to(small_manifest.parent / "audio" / name)
    failed = run_cli(*common(folder / "manifest.jsonl", tmp_path / "r1"))
    assert failed.returncode == 3 and "s1.flac: audio file not found" in one_line(failed)
    skipped = run_cli(*common(folder / "manifest.jsonl", tmp_path / "r2"), "skip_bad_sessions=true", "limit.chunks=2")
    assert skipped.returncode == 0, skipped.stderr[-2000:]
    assert "2 sessions (1 skipped)" in skipped.stdout
    meta = json.loads((tmp_path / "r2" / "run.json").read_text())
    assert [s["session_id"] for s in meta["skipped_sessions"]] == ["s1"]


def test_unknown_decoder_lists_the_options(tmp_path, small_manifest):
    result = run_cli(*common(small_manifest, tmp_path / "run"), "decoder=nope")
    assert result.returncode == 2  # a config error, before Hydra composes: one line listing the shipped decoders
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ticktock: error: decoder=nope: no such decoder (shipped: ar, ")
    assert "Traceback" not in result.stderr


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


def test_bad_options_and_profiles_print_one_line_and_exit_2_before_any_work(tmp_path, small_manifest, monkeypatch):
    profile = tmp_path / "bad.yaml"
    profile.write_text("name: b\nquery_tokens: [1\ncontext_tokens: [0]\n")
    cases = [(["sampling.top_p=2"], "sampling.top_p: must be in (0, 1], got 2"),
             (["limit.sessions=abc"], "limit.sessions: must be null or an integer >= 1, got 'abc'"),
             ([f"clock.profile={profile}"], f"{profile}:3:15: not valid YAML (expected ',' or ']', but got ':')")]
    for extra, message in cases:
        result = run_cli(*common(small_manifest, tmp_path / "run"), *extra)
        assert result.returncode == 2 and one_line(result) == f"ticktock: error: {message}"
    assert not (tmp_path / "run" / "run.json").exists()
    monkeypatch.setenv("TICKTOCK_DEBUG", "1")  # the traceback, on request
    debug = run_cli(*common(small_manifest, tmp_path / "run"), "sampling.top_p=2")
    assert debug.returncode != 0 and "Traceback (most recent call last)" in debug.stderr and "SamplingError" in debug.stderr


def test_the_ticktock_command_reports_expected_errors_in_one_line(tmp_path, small_manifest, capsys):
    from ticktock.cli import main

    assert main(["run", *common(small_manifest, tmp_path / "run"), "limit.chunks=0"]) == 2
    assert capsys.readouterr().err == "ticktock: error: limit.chunks: must be null or an integer >= 1, got 0\n"


def test_ctrl_c_keeps_completed_sessions_and_says_how_to_resume(tmp_path, small_manifest):
    import signal
    import time

    lines = [json.loads(line) for line in small_manifest.read_text().splitlines()]
    many = [{**line, "session_id": f"{line['session_id']}-{k}", "audio": str(small_manifest.parent / line["audio"])}
            for k in range(20) for line in lines]  # 60 sessions: long enough to interrupt mid-run
    manifest = tmp_path / "many.jsonl"
    manifest.write_text("".join(json.dumps(line) + "\n" for line in many))
    run_dir = tmp_path / "run"
    def as_from_a_terminal():  # a test worker may hold SIGINT blocked (joblib's resource tracker blocks it while
        # it starts its process), and a child inherits the mask: Ctrl-C would never reach the run
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
        signal.signal(signal.SIGINT, signal.SIG_DFL)

    process = subprocess.Popen([sys.executable, "-m", "ticktock.run", *common(manifest, run_dir)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=as_from_a_terminal)
    deadline = time.time() + 300
    while not list((run_dir / "parts").glob("*.sessions.parquet")):  # the first session is complete
        assert process.poll() is None and time.time() < deadline, process.communicate()
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=120)
    meta = json.loads((run_dir / "run.json").read_text())
    kept = meta["row_counts"]["sessions"]
    assert process.returncode == 130 and meta["status"] == "interrupted" and 1 <= kept < len(many)
    assert err == f"ticktock: interrupted: {kept} of {len(many)} sessions kept in {run_dir}; run the same command again to resume\n"
