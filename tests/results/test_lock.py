"""The run folder's lock (real ``flock`` on a real file): held until released on any exit, refused to a second
writer with the holder named, taken over from a dead holder with a note."""

import json
import os
import signal
import socket
import subprocess
import sys

import pytest

from ticktock.results.liveness import pid_started
from ticktock.results.lock import LOCK_FILE, RunLock, RunLockedError, read_holder
from ticktock.results.writer import RunDirError

ABOUT = {"decoder": "ar", "model": "fixture", "clock": "modeled", "task": "mini"}


@pytest.mark.parametrize("error", [RuntimeError("boom"), KeyboardInterrupt()])
def test_the_lock_is_released_on_an_exception_or_ctrl_c(tmp_path, error):
    with pytest.raises(type(error)):
        with RunLock(tmp_path, ABOUT):
            assert read_holder(tmp_path)["pid"] == os.getpid()
            raise error
    assert read_holder(tmp_path) is None
    with RunLock(tmp_path, {**ABOUT, "decoder": "pld"}) as again:
        assert again.stale is None and again.stale_note() is None


def test_a_second_writer_in_another_process_is_refused_naming_the_holder(tmp_path):
    with RunLock(tmp_path, ABOUT):
        code = ("import sys; from pathlib import Path; from ticktock.results.lock import RunLock\n"
                "RunLock(Path(sys.argv[1]), {'decoder': 'pld'}).acquire()")
        done = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True)
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"ticktock.results.lock.RunLockedError: {tmp_path}: locked by another run (pid {os.getpid()} ")
    assert last.endswith("decoder ar, model fixture, clock modeled, task mini); wait for it to end or choose another "
                         "hydra.run.dir")
    assert issubclass(RunLockedError, RunDirError)


def test_a_lock_left_by_a_process_killed_hard_is_taken_over_with_a_note(tmp_path):
    code = ("import os, sys; from pathlib import Path; from ticktock.results.lock import RunLock\n"
            "RunLock(Path(sys.argv[1]), {'decoder': 'ar'}).acquire(); os.kill(os.getpid(), 9)")
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True)
    assert done.returncode == -signal.SIGKILL
    left = json.loads((tmp_path / LOCK_FILE).read_text())
    assert left["decoder"] == "ar" and left["pid"] != os.getpid()
    with RunLock(tmp_path, {"decoder": "pld"}) as lock:
        assert lock.stale["pid"] == left["pid"] and read_holder(tmp_path)["decoder"] == "pld"
        assert lock.stale_note().startswith(f"note: {tmp_path / LOCK_FILE}: took over the lock of a run that ended "
                                            f"without releasing it (pid {left['pid']} on host ")
    assert (tmp_path / LOCK_FILE).is_file() and read_holder(tmp_path) is None  # the file stays, emptied


def test_a_live_holder_on_this_host_is_respected_even_where_the_os_lock_is_free(tmp_path):
    """pid + host back the OS lock up: a body naming a live process here refuses the lock (locks not enforced)."""
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        body = {"pid": sleeper.pid, "host": socket.gethostname(), "pid_started": pid_started(sleeper.pid),
                "started": "2025-01-02 03:04:05", "decoder": "ar"}
        (tmp_path / LOCK_FILE).write_text(json.dumps(body))
        with pytest.raises(RunLockedError, match=rf"locked by another run \(pid {sleeper.pid} on host .+, since "
                                                 r"2025-01-02 03:04:05, decoder ar; its OS lock was free"):
            RunLock(tmp_path, ABOUT).acquire()
    finally:
        sleeper.kill()
        sleeper.wait()
    with RunLock(tmp_path, ABOUT) as lock:  # that process is gone now: taken over
        assert lock.stale["pid"] == sleeper.pid


def test_a_lock_kept_by_a_child_of_a_dead_holder_is_refused_with_the_reason(tmp_path):
    code = ("import os, sys, time; from pathlib import Path; from ticktock.results.lock import RunLock\n"
            "RunLock(Path(sys.argv[1]), {'decoder': 'ar'}).acquire()\n"
            "child = os.fork()\n"  # the child inherits the locked file and outlives its parent
            "if child == 0:\n    null = os.open(os.devnull, os.O_RDWR); os.dup2(null, 1); os.dup2(null, 2)\n"
            "    time.sleep(60); os._exit(0)\n"
            "print(os.getpid(), child, flush=True); os._exit(0)")
    parent = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=60)
    holder, child = map(int, parent.stdout.split())
    try:
        with pytest.raises(RunLockedError, match=rf"\(pid {holder} on host .+, decoder ar; that pid is gone, but a "
                                                 r"process it started still holds the lock\)"):
            RunLock(tmp_path, ABOUT).acquire()
    finally:
        os.kill(child, signal.SIGKILL)
