"""The per-chunk watchdog (issue 42, item 5): a decoder that hangs inside one chunk (a busy loop, a sleep, a blocked
lock) ends its session as failed with one line naming the chunk; the run goes on with the next session, run.json
and the tables say so, a rerun retries it; ``certify`` reports a failed check instead of hanging.

The hanging decoders below are real decoders run by the real replay machinery, selected with
``decoder._target_=test_watchdog.<Class>`` (this module, on PYTHONPATH). Every hang is bounded (30 s), and every
subprocess has a timeout, so a broken watchdog fails these tests instead of hanging the suite.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from ticktock.decoders.ar import ARDecoder
from ticktock.replay.watchdog import ChunkTimeout, Watchdog, WatchdogError, check_watchdog

ROOT = Path(__file__).resolve().parents[1]
HANG_S = 30.0  # far past every limit used here: a hang that ends by itself means the watchdog did not stop it
HANG_VARIABLE = "TICKTOCK_TEST_HANG"  # "0": the decoders below do not hang (a rerun after the "fix")


def hang(how: str) -> None:
    """Hang for ``HANG_S`` (at most) the way ``how`` says."""
    end = time.monotonic() + HANG_S
    if how == "busy":
        while time.monotonic() < end:
            pass
    elif how == "sleep":
        time.sleep(HANG_S)
    elif how == "lock":
        lock = threading.Lock()
        lock.acquire()
        lock.acquire(timeout=HANG_S)  # never released: blocked
    else:
        raise ValueError(how)


class HangingDecoder(ARDecoder):
    """AR, but the post-audio step of chunk 1 of the first session the process replays hangs (``how``; counted over
    every instance: on a shared device each slot has its own), unless ``TICKTOCK_TEST_HANG=0``."""

    how = "busy"
    sessions_started = 0  # in this process, by every instance

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.session_number, self.chunk = 0, 0

    def start_session(self, session) -> None:
        super().start_session(session)
        HangingDecoder.sessions_started += 1
        self.session_number, self.chunk = HangingDecoder.sessions_started, 0

    def decode_chunk(self, step) -> None:
        if self.session_number == 1 and self.chunk == 1 and os.environ.get(HANG_VARIABLE) != "0":
            hang(self.how)
        self.chunk += 1
        super().decode_chunk(step)


class BusyLoop(HangingDecoder):
    how = "busy"


class Sleeper(HangingDecoder):
    how = "sleep"


class BlockedLock(HangingDecoder):
    how = "lock"


def ticktock(module: str, *arguments: str, hang_off: bool = False) -> subprocess.CompletedProcess:
    """``python -m <module>`` with this folder on PYTHONPATH (for ``decoder._target_=test_watchdog.*``)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "tests"), os.environ.get("PYTHONPATH")]))}
    env[HANG_VARIABLE] = "0" if hang_off else "1"
    return subprocess.run([sys.executable, "-m", module, *arguments], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=180)


def hanging_run(run_dir: Path, decoder: str, *arguments: str, hang_off: bool = False) -> subprocess.CompletedProcess:
    """Two sessions of four chunks on the fixture model, the decoder ``decoder`` of this module, a 1 s limit."""
    return ticktock("ticktock.run", "experiment=smoke", "limit.sessions=2", f"hydra.run.dir={run_dir}",
                    "progress=false", "threads=1", f"decoder._target_=test_watchdog.{decoder}", "decoder.name=hang",
                    "watchdog.chunk_s=1", *arguments, hang_off=hang_off)


def watchdog_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("watchdog: ")]


# ------------------------------------------------------------------------------------------ the watchdog alone


@pytest.mark.parametrize("how", ["busy", "sleep", "lock"])
def test_the_watchdog_stops_a_busy_loop_a_sleep_and_a_blocked_lock(how):
    before = signal.getsignal(signal.SIGALRM)
    watchdog = Watchdog(0.2)
    with watchdog.running():
        with pytest.raises(ChunkTimeout, match=r"^session s1: chunk 3 \(post-audio step\) still running after 0.2 s "
                                               r"of wall time \(watchdog.chunk_s=0.2\)$"):
            watchdog.arm(("s1", 3), "session s1: chunk 3 (post-audio step)")
            hang(how)
        watchdog.disarm()
    assert signal.getsignal(signal.SIGALRM) is before and signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_outside_the_main_thread_a_monitor_thread_stops_the_hang():
    caught = []

    def replay() -> None:
        watchdog = Watchdog(0.2)
        with watchdog.running():
            try:
                watchdog.arm(("s1", 0), "session s1: chunk 0 (idle window)")
                hang("busy")
            except ChunkTimeout as err:
                caught.append(watchdog.reason_of(err))
            watchdog.disarm()

    worker = threading.Thread(target=replay)
    worker.start()
    worker.join(timeout=HANG_S + 10)
    assert caught == ["session s1: chunk 0 (idle window) still running after 0.2 s of wall time (watchdog.chunk_s=0.2)"]


def test_a_chunk_within_its_limit_and_a_disabled_watchdog_never_fire():
    watchdog = Watchdog(0.3)
    with watchdog.running():
        for index in range(4):  # each chunk restarts the countdown: 4 x 0.15 s in all is fine
            watchdog.arm(("s1", index), f"session s1: chunk {index} (post-audio step)")
            time.sleep(0.15)
        watchdog.disarm()
        time.sleep(0.4)  # disarmed: nothing fires between sessions
    with Watchdog(None).running() as off:
        off.arm(("s1", 0), "session s1: chunk 0 (post-audio step)")
        time.sleep(0.1)


@pytest.mark.parametrize("value", [-1, 0, "abc", float("inf"), True, 1e9])
def test_a_bad_limit_is_one_line_naming_the_key(value):
    with pytest.raises(WatchdogError, match=r"^watchdog.chunk_s: must be null \(no limit\) or a number of seconds "
                                            r"above 0 and at most 86400, got "):
        check_watchdog({"chunk_s": value})


# ------------------------------------------------------------------------------------------ run


@pytest.mark.parametrize("decoder", ["BusyLoop", "Sleeper", "BlockedLock"])
def test_a_run_fails_the_hanging_session_goes_on_and_says_so(tmp_path, decoder):
    from ticktock.tables.load import load_results

    run_dir = tmp_path / "run"
    done = hanging_run(run_dir, decoder)
    assert done.returncode == 6, done.stderr  # the run ended, a session did not finish
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["status"] == "complete" and len(meta["failed_sessions"]) == 1
    failed = meta["failed_sessions"][0]
    assert failed["error"] == (f"session {failed['session_id']}: chunk 1 (post-audio step) still running after 1 s "
                               "of wall time (watchdog.chunk_s=1)")
    [line] = watchdog_lines(done.stderr)
    assert line.startswith(f"watchdog: {failed['error']}: session failed"), line
    sessions = pq.read_table(run_dir / "sessions.parquet").to_pydict()["session_id"]
    assert len(sessions) == 1 and failed["session_id"] not in sessions  # the next session completed
    assert not list(run_dir.rglob(f"*{failed['session_id']}*"))  # nothing half-written of the failed one
    assert "1 sessions (0 skipped, 1 failed)" in done.stdout
    assert done.stderr.strip().splitlines()[-1] == (f"ticktock: error: 1 of 2 sessions did not finish (run.json of "
                                                    f"{run_dir} says why); the same command again replays them")
    results = load_results([run_dir])
    note = f"run {run_dir}: 1 session failed, in no table (rerun into the folder to retry): {failed['error']}"
    assert note in results.warnings and note in results.provenance()


def test_a_rerun_retries_the_failed_session(tmp_path):
    run_dir = tmp_path / "run"
    assert hanging_run(run_dir, "BusyLoop").returncode == 6
    failed = json.loads((run_dir / "run.json").read_text())["failed_sessions"][0]["session_id"]
    again = hanging_run(run_dir, "BusyLoop", hang_off=True)  # the decoder "fixed": same run, resumed
    assert again.returncode == 0, again.stderr
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["failed_sessions"] == [] and not watchdog_lines(again.stderr)
    assert failed in pq.read_table(run_dir / "sessions.parquet").to_pydict()["session_id"]
    assert meta["row_counts"]["sessions"] == 2


def test_on_a_shared_device_the_hanging_session_fails_alone(tmp_path):
    run_dir = tmp_path / "run"
    done = hanging_run(run_dir, "BusyLoop", "limit.sessions=3", "concurrency.sessions=2")
    assert done.returncode == 6, done.stderr
    meta = json.loads((run_dir / "run.json").read_text())
    [failed] = meta["failed_sessions"]
    assert failed["error"].startswith(f"session {failed['session_id']}: chunk 1 (post-audio step) still running "
                                      "after 1 s of wall time"), failed
    sessions = pq.read_table(run_dir / "sessions.parquet").to_pydict()["session_id"]
    assert len(sessions) == 2 and failed["session_id"] not in sessions


@pytest.mark.parametrize("value", ["-1", "abc"])
def test_a_bad_option_is_one_line_exit_2_before_any_work(tmp_path, value):
    run_dir = tmp_path / "run"
    done = ticktock("ticktock.run", "experiment=smoke", f"hydra.run.dir={run_dir}", "progress=false",
                    f"watchdog.chunk_s={value}")
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [
        f"ticktock: error: watchdog.chunk_s: must be null (no limit) or a number of seconds above 0 and at most "
        f"86400, got {int(value) if value == '-1' else repr(value)}"]
    assert not run_dir.exists()


# ------------------------------------------------------------------------------------------ certify


def test_certify_of_a_hanging_decoder_ends_with_a_failed_check_naming_the_chunk(tmp_path):
    done = ticktock("ticktock.certify", "decoder=ar", "decoder._target_=test_watchdog.BusyLoop", "watchdog.chunk_s=1",
                    "--quick", "--settings", "greedy", "--sessions", "2", "--chunks", "4", "--cuts", "0")
    assert done.returncode == 1, done.stderr
    [row] = [line for line in done.stdout.splitlines() if line.startswith("every chunk ends within watchdog.chunk_s")]
    assert "FAIL" in row and "chunk 1 (post-audio step) still running after 1 s of wall time" in row, done.stdout
    assert "FAILED" in done.stdout.splitlines()[-1]
