"""Real time for the shared device when it serves live sessions (``ticktock serve``).

A replay's shared device (``ticktock.replay.device.SharedDevice``) keeps its own time: it jumps to the next
arrival and adds each step's cost (charged by a cost profile, or measured). A served device runs the same
scheduler, but on the time of this machine: ``RealTime`` gives it the wall clock in milliseconds since the server
started (``ms``), lets it block until something happens (``wait``: a client's audio completing a unit, a session
arriving or closing, a tool's output, or the next timed wake-up), and carries what other threads hand it
(``post``: a new session, taken in the device's own thread by ``take``; greenlets never cross threads).

Every change from another thread calls ``poke``; the device reads ``pokes`` before it looks at what its sessions
wait for and passes that count to ``wait``, so a change that lands in between is never slept through.

Example (another thread pokes while the device waits)::

    >>> import threading
    >>> time_now = RealTime()
    >>> seen = time_now.pokes
    >>> threading.Timer(0.01, time_now.poke).start()
    >>> time_now.wait(seen, until_ms=time_now.ms() + 60_000.0)   # returns after ~10 ms, not a minute
    True
    >>> time_now.wait(time_now.pokes, until_ms=time_now.ms() + 5.0)  # nothing happens: returns at the time asked
    False
"""

from __future__ import annotations

import threading
import time
from typing import Callable

MAX_WAIT_S = 1.0  # the longest one wait blocks (a safety net: every change pokes, so this is never needed to progress)


class RealTime:
    """The wall clock of a served device, and how other threads wake it (see the module docstring)."""

    def __init__(self, timer: Callable[[], float] = time.perf_counter):
        self.timer = timer
        self.epoch = timer()
        self.pokes = 0
        self.stopping = False
        self._changed = threading.Condition()
        self._posted: list = []

    def ms(self) -> float:
        """Milliseconds since the device started, now."""
        return (self.timer() - self.epoch) * 1000.0

    def ms_at(self, moment: float) -> float:
        """``moment`` (a reading of ``timer``, e.g. when a unit's last sample arrived) on the device's time."""
        return (moment - self.epoch) * 1000.0

    def poke(self) -> None:
        """Something the device may be waiting for changed (from any thread)."""
        with self._changed:
            self.pokes += 1
            self._changed.notify_all()

    def post(self, item) -> None:
        """Hand ``item`` to the device's thread (it ``take``s it at its next look) and wake it."""
        with self._changed:
            self._posted.append(item)
        self.poke()

    def take(self) -> list:
        """What was posted since the last ``take``, in order."""
        with self._changed:
            items, self._posted = self._posted, []
        return items

    def stop(self) -> None:
        """The device stops serving once its sessions have ended."""
        self.stopping = True
        self.poke()

    def wait(self, seen: int, until_ms: float | None = None) -> bool:
        """Block until a poke after ``seen`` (True), or until ``until_ms`` on the device's time (False), or at most
        ``MAX_WAIT_S``."""
        with self._changed:
            while self.pokes == seen:
                left_s = MAX_WAIT_S if until_ms is None else min(MAX_WAIT_S, (until_ms - self.ms()) / 1000.0)
                if left_s <= 0:
                    return False
                self._changed.wait(left_s)
                if until_ms is None and self.pokes == seen:
                    return False
            return True
