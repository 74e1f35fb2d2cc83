"""Is the process writing a run still there? The heartbeat a run keeps in run.json, and the state read from it.

A run writes ``heartbeat`` into its run.json when it starts, after completed chunks and sessions (at most every
``HEARTBEAT_EVERY_S`` seconds) and when it ends::

    {"pid": 4242, "host": "gpu-3", "pid_started": 81234567, "updated": 1718000000.0, "sessions_done": 12}

(``pid_started``: the process's start time in clock ticks since boot, where the system tells it, so that a pid
reused by another process is not taken for the run.) A run.json whose status is still "running" belongs to an
**interrupted** run (killed hard: no ``finally`` ran) when its writer is gone:

- same host: the pid is not alive (or a zombie, or alive but started at another time: a reused pid);
- another host, or no heartbeat recorded: the last update (the heartbeat, else run.json's modification time) is
  older than ``STALE_AFTER_S``; a live run updates it at least after every chunk that ends more than
  ``HEARTBEAT_EVERY_S`` after the last update, so only a single chunk replayed for that long is misread.

Nothing here imports torch or pyarrow (the tables and ``python -m ticktock.runs`` use it).

Example::

    >>> gone = {"status": "running", "heartbeat": {"pid": 2**22 + 1, "host": this_host(), "updated": 0.0}}
    >>> run_state(gone), interruption(gone)                    # no process ever has pid 2**22 + 1
    ('interrupted', 'its process (pid 4194305 on host ...) is gone')
    >>> far = {"status": "running", "heartbeat": {"pid": 7, "host": "elsewhere", "updated": 1000.0}}
    >>> run_state(far, now=1060.0), run_state(far, now=1000.0 + STALE_AFTER_S + 1)
    ('running', 'interrupted')
    >>> [run_state({"status": s}) for s in ("complete", "failed: ValueError: bad", "interrupted")]
    ['complete', 'failed', 'interrupted']
"""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path
from typing import Callable

HEARTBEAT_EVERY_S = 5.0  # at most one run.json rewrite per this many seconds while replaying
STALE_AFTER_S = 900.0  # a heartbeat from another host older than this: the run is taken as interrupted

STATES = ("complete", "running", "interrupted", "failed")


def this_host() -> str:
    return socket.gethostname()


def pid_started(pid: int) -> int | None:
    """The process's start time (clock ticks since boot, Linux ``/proc``), or None where it cannot be read."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return int(stat.rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def pid_alive(pid: int, started: int | None = None) -> bool:
    """Whether ``pid`` is a live process on this host (and, when ``started`` is known, the same process).

    >>> pid_alive(os.getpid(), pid_started(os.getpid())), pid_alive(2**22 + 1)
    (True, False)
    """
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # alive, owned by someone else
    except (OverflowError, ValueError):
        return False
    try:
        if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
            return False  # a zombie: the process has ended, its parent has not collected it yet
    except (OSError, IndexError):
        pass
    current = pid_started(pid)
    return started is None or current is None or current == started


def heartbeat(sessions_done: int, now: float | None = None) -> dict:
    """This process's heartbeat record (see the module docstring)."""
    pid = os.getpid()
    return {"pid": pid, "host": this_host(), "pid_started": pid_started(pid),
            "updated": time.time() if now is None else now, "sessions_done": sessions_done}


class Heartbeat:
    """Calls ``write(record)`` with a fresh heartbeat record, at most every ``every_s`` seconds unless forced.

    >>> written = []
    >>> beat = Heartbeat(written.append, sessions_done=2, every_s=60.0)
    >>> beat.beat(force=True), beat.beat(), beat.session_done()
    (True, False, False)
    >>> len(written), written[0]["sessions_done"], beat.sessions_done
    (1, 2, 3)
    """

    def __init__(self, write: Callable[[dict], None], sessions_done: int = 0, every_s: float = HEARTBEAT_EVERY_S):
        self.write, self.sessions_done, self.every_s = write, sessions_done, every_s
        self.last: float | None = None

    def beat(self, force: bool = False) -> bool:
        now = time.monotonic()
        if not force and self.last is not None and now - self.last < self.every_s:
            return False
        self.write(heartbeat(self.sessions_done))
        self.last = now
        return True

    def session_done(self) -> bool:
        self.sessions_done += 1
        return self.beat()


def interruption(meta: dict, mtime: float | None = None, now: float | None = None,
                 stale_after_s: float = STALE_AFTER_S) -> str | None:
    """Why a run.json that says "running" belongs to a run that is gone (None: it may well be running)."""
    if meta.get("status") != "running":
        return None
    beat = meta.get("heartbeat") or {}
    pid, host = beat.get("pid"), beat.get("host")
    if isinstance(pid, int) and host == this_host():
        return None if pid_alive(pid, beat.get("pid_started")) else f"its process (pid {pid} on host {host}) is gone"
    updated = beat.get("updated", mtime)
    if updated is None:
        return None
    age = (time.time() if now is None else now) - float(updated)
    if age <= stale_after_s:
        return None
    where = f"pid {pid} on host {host}" if host else "no heartbeat recorded"
    return f"no heartbeat for {age / 60:.0f} min ({where}; taken as gone after {stale_after_s / 60:.0f} min)"


def run_state(meta: dict, mtime: float | None = None, now: float | None = None,
              stale_after_s: float = STALE_AFTER_S) -> str:
    """One of ``STATES`` for a run.json's contents (any other recorded status is returned as it is)."""
    status = str(meta.get("status", "unknown"))
    if status.startswith("failed"):
        return "failed"
    if status == "running" and interruption(meta, mtime, now, stale_after_s):
        return "interrupted"
    return status
