"""One writer per run folder: an exclusive OS lock (``fcntl.flock``) on ``<run dir>/run.lock``, held for the run's life.

The lock file's body (JSON: pid, host, when the lock was taken, and what the run is) names the holder, so a second
writer is refused with one line naming it. The kernel drops the lock when the holding process ends in any way
(return, exception, Ctrl-C, ``kill -9``), so a lock left behind by a dead process is free to take: its body, which
only a clean release empties, is then reported in a note. The file is never removed (two writers could otherwise
lock two different files under one name) and never replaced by a rename (the lock belongs to the file, not the
name): its body is rewritten in place, and read as "unknown holder" if caught half-written.

Example::

    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> first = RunLock(folder, {"decoder": "ar"}).acquire()
    >>> RunLock(folder, {"decoder": "pld"}).acquire()              # a second writer, here or in any process
    Traceback (most recent call last):
    ticktock.results.lock.RunLockedError: ...: locked by another run (pid ... on host ..., since ..., decoder ar); ...
    >>> first.release()
    >>> with RunLock(folder, {"decoder": "pld"}) as second:
    ...     second.stale is None, read_holder(folder)["decoder"]
    (True, 'pld')
    >>> read_holder(folder) is None                                 # released: nobody holds it
    True
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from pathlib import Path

from ticktock.results.liveness import pid_alive, pid_started, this_host
from ticktock.results.writer import RunDirError

LOCK_FILE = "run.lock"
SHOWN = ("decoder", "model", "clock", "task")


class RunLockedError(RunDirError):
    """Another process holds the run folder's lock."""


def read_holder(run_dir: Path) -> dict | None:
    """The lock file's body: who holds (or, after a crash, held) the lock; None when empty or absent."""
    try:
        return _parse((Path(run_dir) / LOCK_FILE).read_bytes())
    except OSError:
        return None


def describe_holder(body: dict | None) -> str:
    """One line naming a lock holder.

    >>> describe_holder({"pid": 7, "host": "h", "started": "2025-01-02 03:04:05", "decoder": "ar", "task": "mini"})
    'pid 7 on host h, since 2025-01-02 03:04:05, decoder ar, task mini'
    >>> describe_holder(None)
    'holder unknown: the lock file names nobody'
    """
    if not body:
        return "holder unknown: the lock file names nobody"
    parts = [f"pid {body.get('pid', '?')} on host {body.get('host', '?')}", f"since {body.get('started', '?')}"]
    return ", ".join(parts + [f"{key} {body[key]}" for key in SHOWN if body.get(key) is not None])


class RunLock:
    """The exclusive lock of one run folder; ``about`` (decoder, model, clock, task) goes into the body.

    After ``acquire``, ``stale`` is the body a dead holder left behind (None when the lock was cleanly free).
    """

    def __init__(self, run_dir: Path, about: dict):
        self.run_dir, self.about = Path(run_dir), about
        self.path = self.run_dir / LOCK_FILE
        self.fd: int | None = None
        self.stale: dict | None = None

    def acquire(self) -> RunLock:
        fd = self._open_locked()
        previous = _parse(os.pread(fd, 1 << 16, 0))
        if _alive_here(previous):  # the OS lock was free, yet its holder lives: locks do not work on this file system
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
            raise RunLockedError(self._refusal(previous, "its OS lock was free: does this file system support locks?"))
        mine = previous and previous.get("pid") == os.getpid() and previous.get("host") == this_host()
        self.stale = None if mine else previous
        self.fd = fd
        now = time.time()
        _rewrite(fd, {"pid": os.getpid(), "host": this_host(), "pid_started": pid_started(os.getpid()),
                      "started": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(now)), "started_epoch": now,
                      **self.about})
        return self

    def _open_locked(self) -> int:
        """The lock file, opened (created if need be) and locked; a RunLockedError naming the holder if held."""
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            holder = read_holder(self.run_dir)
            orphaned = holder and holder.get("host") == this_host() and isinstance(holder.get("pid"), int) \
                and not pid_alive(holder["pid"], holder.get("pid_started"))
            raise RunLockedError(self._refusal(holder, "that pid is gone, but a process it started still holds the lock"
                                               if orphaned else None)) from None
        except OSError as err:
            os.close(fd)
            raise RunDirError(f"{self.path}: cannot lock the run folder ({err.strerror})") from None
        return fd

    def _refusal(self, holder: dict | None, detail: str | None) -> str:
        return (f"{self.run_dir}: locked by another run ({describe_holder(holder)}{'; ' + detail if detail else ''}); "
                "wait for it to end or choose another hydra.run.dir")

    def stale_note(self) -> str | None:
        """The note to print when the lock was taken over from a dead holder."""
        if self.stale is None:
            return None
        return (f"note: {self.path}: took over the lock of a run that ended without releasing it "
                f"({describe_holder(self.stale)}); that process is gone")

    def release(self) -> None:
        if self.fd is None:
            return
        fd, self.fd = self.fd, None
        try:
            os.ftruncate(fd, 0)
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


def _alive_here(body: dict | None) -> bool:
    """Whether a lock body names another live process on this host."""
    if not body or body.get("host") != this_host() or not isinstance(body.get("pid"), int) or body["pid"] == os.getpid():
        return False
    return pid_alive(body["pid"], body.get("pid_started"))


def _parse(data: bytes) -> dict | None:
    """The body as a dict; None when empty (nobody holds the lock), {} when unreadable (caught half-written)."""
    if not data.strip():
        return None
    try:
        body = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return {}
    return body if isinstance(body, dict) else {}


def _rewrite(fd: int, body: dict) -> None:
    data = (json.dumps(body, sort_keys=True, default=str) + "\n").encode("utf-8")
    os.ftruncate(fd, 0)
    os.pwrite(fd, data, 0)
