"""Run integrity under hostile conditions, with real processes and files: two writers into one run folder, inputs
changed between a run and its resume, a run killed hard (then listed, tabled and resumed)."""

import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

import pyarrow.parquet as pq
import pytest
from helpers import write_sessions

from ticktock.results.lock import read_holder

HOLD_LOCK = """
import sys
from pathlib import Path
from ticktock.results.lock import RunLock
RunLock(Path(sys.argv[1]), {"decoder": "ar", "model": "fixture", "clock": "modeled", "task": "held"}).acquire()
print("locked", flush=True)
sys.stdin.read()
"""


def run_args(manifest, run_dir, *extra):
    return [sys.executable, "-m", "ticktock.run", "model=fixture", f"task.manifest={manifest}", "task.tool_executor=null",
            f"hydra.run.dir={run_dir}", "progress=false", *extra]


def run_cli(manifest, run_dir, *extra):
    return subprocess.run(run_args(manifest, run_dir, *extra), capture_output=True, text=True, timeout=600)


def test_a_second_writer_is_refused_naming_the_holder_and_a_dead_holders_lock_is_taken_over(tmp_path, small_manifest):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(run_dir)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        refused = run_cli(small_manifest, run_dir, "decoder=pld", "limit.sessions=1", "limit.chunks=2")
    finally:
        holder.kill()  # killed hard: the kernel drops its lock, its lock file still names it
        holder.wait()
    assert refused.returncode != 0
    assert (f"{run_dir}: locked by another run (pid {holder.pid} on host {socket.gethostname()}, since "
            in refused.stderr), refused.stderr[-2000:]
    assert "decoder ar, model fixture, clock modeled, task held); wait for it to end" in refused.stderr
    assert [line for line in refused.stderr.splitlines() if "locked by another run" in line] == [
        next(line for line in refused.stderr.splitlines() if "locked by another run" in line)]
    assert sorted(p.name for p in run_dir.iterdir() if p.name != "run.log") == ["run.lock"]  # nothing else written

    taken = run_cli(small_manifest, run_dir, "decoder=pld", "limit.sessions=1", "limit.chunks=2")
    assert taken.returncode == 0, taken.stderr[-2000:]
    assert (f"run.lock: took over the lock of a run that ended without releasing it (pid {holder.pid} on host "
            in taken.stderr) and "that process is gone" in taken.stderr
    assert read_holder(run_dir) is None  # released at the end of the run
    assert json.loads((run_dir / "run.json").read_text())["config"]["decoder"]["name"] == "pld"


def wait_for_a_completed_session(run_dir, proc, timeout_s=300):
    deadline = time.monotonic() + timeout_s
    while not list((run_dir / "parts").glob("*.sessions.parquet")) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)


def test_a_run_into_a_folder_another_run_is_writing_is_refused_and_the_first_run_is_untouched(tmp_path):
    """Two real ``ticktock.run`` processes: the second (another decoder, even with overwrite=true) is refused while
    the first writes, and the first ends with only its own rows."""
    manifest, run_dir = write_sessions(tmp_path / "corpus", count=8, duration_s=20.0), tmp_path / "run"
    first = subprocess.Popen(run_args(manifest, run_dir, "decoder=ar"), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    wait_for_a_completed_session(run_dir, first)
    os.kill(first.pid, signal.SIGSTOP)  # paused mid-run, still holding the lock: no race with a fast first run
    try:
        assert first.poll() is None, "the first run ended before the second could try"
        second = run_cli(manifest, run_dir, "decoder=pld", "overwrite=true")
    finally:
        os.kill(first.pid, signal.SIGCONT)
    out, err = first.communicate(timeout=600)
    assert second.returncode != 0 and f"locked by another run (pid {first.pid} on host " in second.stderr, second.stderr[-2000:]
    assert "decoder ar, model fixture, clock modeled" in second.stderr
    assert first.returncode == 0 and "8 sessions (0 skipped)" in out, err[-2000:]
    assert json.loads((run_dir / "run.json").read_text())["config"]["decoder"]["name"] == "ar"
    assert set(pq.read_table(run_dir / "chunks.parquet").column("decoder").to_pylist()) == {"ar"}


def test_a_run_that_fails_releases_its_lock(tmp_path, small_manifest):
    run_dir = tmp_path / "run"
    failed = run_cli(small_manifest, run_dir, "limit.sessions=1", "model.seed=not-a-number")
    assert failed.returncode != 0
    assert read_holder(run_dir) is None
    assert run_cli(small_manifest, run_dir, "limit.sessions=1", "limit.chunks=2").returncode == 0


def sha256(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_resume_replays_a_session_whose_manifest_line_or_audio_changed(tmp_path, small_manifest):
    corpus = tmp_path / "corpus"
    shutil.copytree(small_manifest.parent, corpus)
    manifest, run_dir = corpus / small_manifest.name, tmp_path / "run"
    first = run_cli(manifest, run_dir, "limit.chunks=3")
    assert first.returncode == 0, first.stderr[-2000:]
    parts = {p.name: p.stat().st_mtime_ns for p in (run_dir / "parts").glob("*.sessions.parquet")}

    lines = [json.loads(line) for line in manifest.read_text().splitlines()]
    lines[1]["expected"]["reference_answer"] = "somewhere else"  # s1: its manifest line changes
    manifest.write_text("".join(json.dumps(line) + "\n" for line in lines))
    audio = corpus / lines[2]["audio"]
    audio.write_bytes((corpus / lines[0]["audio"]).read_bytes())  # s2: same path, other audio
    second = run_cli(manifest, run_dir, "limit.chunks=3")
    assert second.returncode == 0, second.stderr[-2000:]
    assert "resume: session s1: manifest line changed since its results were written; replaying it" in second.stderr
    assert "resume: session s2: audio file changed since its results were written; replaying it" in second.stderr
    assert "session s0" not in second.stderr and "3 sessions (0 skipped), 9 chunks" in second.stdout
    assert "resumed 1 of 3 sessions" in second.stderr.splitlines()  # s0 kept; s1 and s2 replayed
    rewritten = {p.name for p in (run_dir / "parts").glob("*.sessions.parquet") if p.stat().st_mtime_ns != parts[p.name]}
    assert sorted(name.split("-")[0] for name in rewritten) == ["s1", "s2"]
    rows = {r["session_id"]: r for r in pq.read_table(run_dir / "sessions.parquet").to_pylist()}
    assert rows["s2"]["audio_sha256"] == sha256(audio) == rows["s0"]["audio_sha256"]
    assert rows["s1"]["expected_json"] and "somewhere else" in rows["s1"]["expected_json"]

    third = run_cli(manifest, run_dir, "limit.chunks=3")  # nothing changed: nothing replayed
    assert third.returncode == 0 and "resume:" not in third.stderr
    assert "resumed 3 of 3 sessions" in third.stderr.splitlines()


def test_a_run_killed_hard_is_listed_and_tabled_as_interrupted_then_resumed(tmp_path, capsys):
    from ticktock.runs import main as runs_main
    from ticktock.tables.__main__ import main as tables_main

    manifest = write_sessions(tmp_path / "corpus", count=4, duration_s=20.0)
    run_dir = tmp_path / "runs" / "killed"
    proc = subprocess.Popen(run_args(manifest, run_dir), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_for_a_completed_session(run_dir, proc)
    proc.kill()
    proc.wait()
    done = len(list((run_dir / "parts").glob("*.sessions.parquet")))
    assert 1 <= done < 4, f"{done} sessions done when killed"
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["status"] == "running" and meta["heartbeat"]["pid"] == proc.pid and meta["sessions_total"] == 4

    assert runs_main([str(tmp_path / "runs")]) == 0
    listing = capsys.readouterr().out.splitlines()
    assert listing[0].split() == ["run", "model/decoder/clock/task", "shard", "status", "sessions", "last", "heartbeat", "path"]
    assert listing[1].split()[1:5] == ["fixture/ar/modeled/ticktock_mini", "-", "interrupted", f"{done}/4"], listing

    out = tmp_path / "tables"
    assert tables_main([str(run_dir), "--out", str(out), "--format", "md"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"ticktock: error: {run_dir}/run.json: interrupted run (status still "
                                                   f"'running', but its process (pid {proc.pid} on host "), err
    assert f"{done} of 4 sessions done); rerun it into {run_dir} to resume it, or pass --allow-interrupted" in err
    assert tables_main([str(run_dir), "--out", str(out), "--format", "md", "--allow-interrupted"]) == 0
    printed = capsys.readouterr().out
    assert f"- run {run_dir}: interrupted (status still 'running', but its process (pid {proc.pid}" in printed
    assert f"built from its completed sessions only ({done} sessions" in printed

    resumed = run_cli(manifest, run_dir)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert "4 sessions (0 skipped)" in resumed.stdout and f"(pid {proc.pid} on host" in resumed.stderr
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["status"] == "complete" and meta["heartbeat"]["sessions_done"] == 4
    assert runs_main([str(run_dir)]) == 0
    assert capsys.readouterr().out.splitlines()[1].split()[3:5] == ["complete", "4/4"]


def replay_in_process(manifest, run_dir, *overrides):
    """One ``ticktock.run`` of AR on the fixture model in this process (2 chunks per session)."""
    from ticktock.replay.config import compose_run
    from ticktock.replay.runner import run

    cfg = compose_run("ar", "fixture", None, [f"task.manifest={manifest}", "task.tool_executor=null", "limit.chunks=2",
                                              *overrides])
    return run(cfg, run_dir)


def test_a_cost_profile_edited_between_a_kill_and_a_resume_replays_the_sessions_it_charged(tmp_path, small_manifest,
                                                                                          capsys):
    """Today: session 0 kept at the old profile's costs, the others at the new one's, in one run, without a word."""
    import yaml

    from ticktock.shipped import resource_path

    profile = tmp_path / "profile.yaml"
    shutil.copy(resource_path("configs/profiles/a100-8b-derived.yaml"), profile)
    options = (f"clock.profile={profile}",)
    run_dir = tmp_path / "run"
    replay_in_process(small_manifest, run_dir, "limit.sessions=1", *options)  # stopped after its first session
    before = pq.read_table(run_dir / "chunks.parquet").column("post_audio_ms").to_pylist()
    data = yaml.safe_load(profile.read_text())
    data["forward_ms"] = [[cost / 4 for cost in row] for row in data["forward_ms"]]  # a quarter of the cost
    profile.write_text(yaml.safe_dump(data))
    capsys.readouterr()
    replay_in_process(small_manifest, run_dir, "limit.sessions=2", *options)  # the resume
    assert "resume: session s0: cost profile changed since its results were written; replaying it" in \
        capsys.readouterr().err
    meta = json.loads((run_dir / "run.json").read_text())
    sessions = pq.read_table(run_dir / "sessions.parquet").to_pylist()
    assert {s["profile_sha256"] for s in sessions} == {meta["clock"]["profile_sha256"]} and len(sessions) == 2

    fresh = tmp_path / "fresh"  # the same sessions replayed from scratch on the edited profile: the same figures
    replay_in_process(small_manifest, fresh, "limit.sessions=2", *options)
    costs = [sorted((c["session_id"], c["chunk_index"], c["post_audio_ms"]) for c in
                    pq.read_table(folder / "chunks.parquet").to_pylist()) for folder in (run_dir, fresh)]
    assert costs[0] == costs[1] and [ms for s, _, ms in costs[0] if s == "s0"] != before


@pytest.mark.parametrize("part", ["chunks", "forwards", "sessions"])
def test_a_part_file_cut_short_is_a_session_to_replay_said_in_one_line_never_a_crash(tmp_path, small_manifest, capsys,
                                                                                     part):
    """Today: 'resumed 1 of 3 sessions', then a pyarrow traceback in the merge, on every rerun (or at once, for a
    sessions part)."""
    from ticktock.results.writer import part_key

    run_dir = tmp_path / "run"
    replay_in_process(small_manifest, run_dir, "limit.sessions=3")
    cut = run_dir / "parts" / f"{part_key('s1')}.{part}.parquet"
    cut.write_bytes(cut.read_bytes()[:100])  # as a disk that lost the file's end leaves it
    capsys.readouterr()
    summary = replay_in_process(small_manifest, run_dir, "limit.sessions=3")
    err = capsys.readouterr().err.splitlines()
    [said] = [line for line in err if line.startswith("resume: ")]
    assert said.startswith(f"resume: session s1: {cut} cannot be read (") and said.endswith(
        f"); replaying it (its parts moved to {run_dir / 'parts' / 'unreadable'})"), said
    assert "resumed 2 of 3 sessions" in err and summary.sessions == 3
    assert sorted(pq.read_table(run_dir / "sessions.parquet").column("session_id").to_pylist()) == ["s0", "s1", "s2"]
    assert len(pq.read_table(run_dir / "chunks.parquet")) == 6
    replay_in_process(small_manifest, run_dir, "limit.sessions=3")  # and the next rerun keeps all three
    assert "resumed 3 of 3 sessions" in capsys.readouterr().err.splitlines()


def test_an_unreadable_part_of_no_session_of_this_run_is_set_aside_in_one_line(tmp_path, small_manifest, capsys):
    """A part whose session this run does not hold (a smaller limit.sessions now) cannot be read: the run says so and
    leaves it out of the tables, instead of dying in the merge."""
    from ticktock.results.writer import part_key

    run_dir = tmp_path / "run"
    replay_in_process(small_manifest, run_dir, "limit.sessions=3")
    cut = run_dir / "parts" / f"{part_key('s2')}.chunks.parquet"
    cut_bytes = cut.read_bytes()[:100]
    cut.write_bytes(cut_bytes)
    capsys.readouterr()
    replay_in_process(small_manifest, run_dir, "limit.sessions=2")
    err = capsys.readouterr().err.splitlines()
    [said] = [line for line in err if line.startswith("resume: ")]
    assert said.startswith(f"resume: {cut} cannot be read (") and said.endswith(
        f"); its session's parts moved to {run_dir / 'parts' / 'unreadable'}, out of the tables"), said
    assert (run_dir / "parts" / "unreadable" / cut.name).read_bytes() == cut_bytes  # nothing written is deleted
    assert sorted(pq.read_table(run_dir / "sessions.parquet").column("session_id").to_pylist()) == ["s0", "s1"]


def test_shared_device_covers_every_invocation_of_a_resumed_run(tmp_path, small_manifest):
    run_dir = tmp_path / "run"
    replay_in_process(small_manifest, run_dir, "concurrency.sessions=2", "limit.sessions=2")
    first = json.loads((run_dir / "run.json").read_text())["shared_device"]
    replay_in_process(small_manifest, run_dir, "concurrency.sessions=2", "limit.sessions=3")  # resumed: 1 more session
    device = json.loads((run_dir / "run.json").read_text())["shared_device"]
    assert len(device["invocations"]) == 2 and device["invocations"][0] == first["invocations"][0]
    assert device["steps"] == sum(i["steps"] for i in device["invocations"]) > first["steps"] > 0
    assert device["post_audio_steps"] == sum(i["post_audio_steps"] for i in device["invocations"])
