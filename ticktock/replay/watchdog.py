"""The per-chunk watchdog: a decoder, adapter or talker that hangs inside one chunk ends its session, not the run.

``watchdog.chunk_s`` (run option, wall-clock seconds; ``null`` disables it) bounds the work of one chunk of one
session: its idle window, its post-audio step and its talker's synthesis together. Past the limit a ``ChunkTimeout``
is raised inside the work that runs, wherever it is (a busy loop, ``time.sleep``, a blocked lock or queue wait); the
replay loop ends that session as **failed** with one line naming it, e.g. ``session s1: chunk 3 (post-audio step)
still running after 1 s of wall time (watchdog.chunk_s=1)``, records it in run.json ``failed_sessions``, and goes on
with the next session. A failed session writes nothing, so a rerun into the folder replays it again.

How the work is interrupted:

- in the main thread (``python -m ticktock.run``, ``ticktock certify``) where the platform has ``SIGALRM``: a
  ``setitimer(ITIMER_REAL)`` timer whose handler raises ``ChunkTimeout``; the previous handler and timer are put
  back when the watchdog stops. The timer fires again every ``REPEAT_S`` until the chunk ends, so code that
  swallows the exception (``except BaseException: pass``) is interrupted again;
- elsewhere (a replay in another thread, Windows): a monitor thread injects ``ChunkTimeout`` into the replaying
  thread (``PyThreadState_SetAsyncExc``), also repeatedly. It takes effect at the next Python bytecode, so it
  **cannot stop a hang inside one C call** (a native library that never returns to Python); neither can the
  signal when the C call does not return to the interpreter.

``ChunkTimeout`` derives from ``BaseException`` (as ``KeyboardInterrupt`` does), so an ``except Exception`` in a
decoder does not swallow it; Ctrl-C still stops the run.

On a shared device (``concurrency.sessions`` > 1, ``ticktock.replay.device``) the sessions interleave in one thread:
there the limit bounds each uninterrupted stretch of one session's work (its own code between two switches, or one
device step), and a session that runs past it fails alone; a batched device step that hangs fails every session in
the batch.

Example::

    watchdog = Watchdog(limit_s=120.0)
    with watchdog.running():
        watchdog.arm(("s1", 0), "session s1: chunk 0 (post-audio step)")
        decoder.decode_chunk(step)      # a ChunkTimeout if it is still running 120 s later
        watchdog.disarm()
"""

from __future__ import annotations

import ctypes
import math
import signal
import threading
import time
from contextlib import contextmanager

from ticktock.errors import ConfigError

DEFAULT_CHUNK_S = 300.0  # configs/run.yaml's default: generous, a real chunk's work takes well under a second
MAX_CHUNK_S = 86_400.0  # one day
REPEAT_S = 1.0  # once fired, the watchdog fires again this often until the chunk's work has ended


class ChunkTimeout(BaseException):
    """One chunk's work ran past ``watchdog.chunk_s``; ``str()`` is the one-line reason (session, chunk, phase,
    limit). Raised asynchronously (from a signal handler or another thread) inside the work that hangs."""


class WatchdogError(ConfigError):
    """``watchdog.*`` is not allowed; the message names the key, the value and what is allowed."""


def check_watchdog(values) -> float | None:
    """``watchdog.*`` of the run config, checked: the chunk limit in seconds, or None (disabled).

    >>> check_watchdog({"chunk_s": 2})
    2.0
    >>> check_watchdog({"chunk_s": None}) is None
    True
    >>> check_watchdog({"chunk_s": -1})
    Traceback (most recent call last):
    ...
    ticktock.replay.watchdog.WatchdogError: watchdog.chunk_s: must be null (no limit) or a number of seconds above 0 and at most 86400, got -1
    """
    values = dict(values or {})
    for key in values:
        if key != "chunk_s":
            raise WatchdogError(f"watchdog.{key}: unknown setting (known: chunk_s)")
    limit = values.get("chunk_s")
    if limit is None:
        return None
    number = isinstance(limit, (int, float)) and not isinstance(limit, bool)
    if not (number and math.isfinite(limit) and 0 < limit <= MAX_CHUNK_S):
        raise WatchdogError(f"watchdog.chunk_s: must be null (no limit) or a number of seconds above 0 and at most "
                            f"{MAX_CHUNK_S:.0f}, got {limit!r}")
    return float(limit)


def _seconds(limit_s: float) -> str:
    return f"{limit_s:g} s"


class Watchdog:
    """A countdown over the work of one chunk in the thread that calls ``running()`` (see the module docstring).

    ``arm(key, where)`` starts the countdown when ``key`` differs from the armed one (a new chunk; the same key only
    updates ``where``, the phase now running) ; ``disarm()`` stops it. ``fired`` is the reason of the last timeout.
    """

    def __init__(self, limit_s: float | None):
        self.limit_s = limit_s
        self.fired: str | None = None
        self._key = None
        self._where: str | None = None
        self._deadline: float | None = None
        self._thread_id: int | None = None
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._monitor: threading.Thread | None = None
        self._stopping = False
        self._uses_signal = False
        self._previous = None
        self._monitor_wakes_at = math.inf  # when the monitor thread's wait ends by itself (``_watch``)

    # ------------------------------------------------------------------------------ arming

    def arm(self, key, where) -> None:
        """The work of ``key`` (e.g. ``(session_id, chunk_index)``) runs now, described by ``where``: a string, or a
        function giving it when the watchdog fires (a served session's phase changes within one stretch)."""
        if self.limit_s is None:
            return
        with self._lock:
            if key != self._key or self._deadline is None:
                self._key, self._deadline = key, time.monotonic() + self.limit_s
                if self._uses_signal:
                    signal.setitimer(signal.ITIMER_REAL, self.limit_s, REPEAT_S)
                if self._monitor_wakes_at > self._deadline:  # (else it wakes in time by itself: no thread hand-off)
                    self._wake.notify()
            self._where = where

    def disarm(self) -> None:
        """No chunk's work runs (between sessions, while results are written)."""
        if self.limit_s is None:
            return
        with self._lock:
            self._key, self._where, self._deadline = None, None, None
            if self._uses_signal:
                signal.setitimer(signal.ITIMER_REAL, 0.0)

    def reason(self) -> str:
        """The one-line reason of a timeout firing now."""
        return f"{self.where() or 'a chunk'} still running after {_seconds(self.limit_s)} of wall time " \
               f"(watchdog.chunk_s={self.limit_s:g})"

    def where(self) -> str | None:
        """What the armed work is doing now (``arm``'s ``where``)."""
        return self._where() if callable(self._where) else self._where

    def reason_of(self, err: BaseException) -> str:
        """The reason of a caught ``ChunkTimeout`` (one injected by the monitor thread carries none itself)."""
        return str(err) or self.fired or self.reason()

    # ------------------------------------------------------------------------------ running

    @contextmanager
    def running(self):
        """Watch the calling thread until the block ends; the previous SIGALRM handler and timer are restored."""
        if self.limit_s is None:
            yield self
            return
        self._thread_id = threading.get_ident()
        in_main = threading.current_thread() is threading.main_thread()
        if in_main and hasattr(signal, "SIGALRM") and hasattr(signal, "setitimer"):
            yield from self._with_signal()
        else:
            yield from self._with_monitor()

    def _due(self) -> bool:
        return self._deadline is not None and time.monotonic() >= self._deadline

    def _with_signal(self):
        def on_alarm(signum, frame):
            if self._due():
                self.fired = self.reason()
                raise ChunkTimeout(self.fired)

        timer = signal.getitimer(signal.ITIMER_REAL)
        self._previous = signal.signal(signal.SIGALRM, on_alarm)
        self._uses_signal = True
        try:
            yield self
        finally:
            self._uses_signal = False
            signal.setitimer(signal.ITIMER_REAL, 0.0)
            signal.signal(signal.SIGALRM, self._previous)
            if timer[0] > 0:
                signal.setitimer(signal.ITIMER_REAL, *timer)
            self._key = self._deadline = None

    def _with_monitor(self):
        self._stopping = False
        self._monitor = threading.Thread(target=self._watch, name="ticktock-watchdog", daemon=True)
        self._monitor.start()
        try:
            yield self
        finally:
            with self._lock:
                self._stopping = True
                self._key = self._deadline = None
                self._wake.notify()
            self._monitor.join()

    def _watch(self) -> None:
        """The monitor thread: inject ``ChunkTimeout`` into the watched thread when its chunk's time is up."""
        with self._lock:
            while not self._stopping:
                if self._deadline is None:  # (a timed wait: it then wakes by itself before any deadline armed meanwhile)
                    self._sleep(self.limit_s)
                    continue
                left = self._deadline - time.monotonic()
                if left > 0:
                    self._sleep(left)
                    continue
                self.fired = self.reason()
                ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(self._thread_id), ctypes.py_object(ChunkTimeout))
                self._sleep(REPEAT_S)
            self._monitor_wakes_at = math.inf

    def _sleep(self, seconds: float) -> None:
        """The monitor waits ``seconds`` unless woken; ``arm`` wakes it only when the new deadline comes before that
        (arming and disarming at every switch of a served device must not wake another thread each time)."""
        self._monitor_wakes_at = time.monotonic() + seconds
        self._wake.wait(seconds)
