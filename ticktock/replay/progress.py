"""A run's progress on stderr, the same for every kind of run (a model replayed in process, a live endpoint).

On a terminal, two progress bars (tqdm): the run's units (chunks, or a live run's units) and its sessions. Anywhere
else (a pipe, a log file, a cluster job's output) one plain line per session that ends, with no carriage return and
no escape code, e.g.::

    ar: session 3/12 done (fdb_v3-0002); 36/140 chunks, 12 s

A session ends ``done``, ``skipped`` (bad audio, with ``skip_bad_sessions``), ``failed`` or ``partial``
(``SessionOutcome.how``). ``say`` prints one line of its own (a live run's start: which server, how many sessions,
about how long), above the bars on a terminal. With the run option ``progress=false`` nothing is shown.

Example::

    with RunProgress("ar", sessions=2, units=8, enabled=cfg.progress) as progress:
        progress.unit_done()                        # after each chunk
        progress.session_ended("s0", "done")        # a line, or the sessions bar
"""

from __future__ import annotations

import sys
import time


def is_terminal(stream) -> bool:
    """Whether ``stream`` is a terminal (where progress bars may redraw themselves)."""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):  # no isatty, or a closed stream
        return False


class RunProgress:
    """The progress of one run over ``sessions`` sessions and ``units`` units (``unit``: what one is called) on
    ``stream`` (default stderr); nothing when not ``enabled`` (see the module docstring)."""

    def __init__(self, label: str, sessions: int, units: int, unit: str = "chunk", enabled: bool = True, stream=None):
        self.label, self.sessions, self.units, self.unit = label, sessions, units, unit
        self.enabled = enabled
        self.stream = stream if stream is not None else sys.stderr
        self.ended = self.units_done = 0
        self.began = time.monotonic()
        self.bars = self._bars() if enabled and is_terminal(self.stream) else None

    def _bars(self) -> tuple:
        from tqdm.auto import tqdm

        return (tqdm(total=self.units, desc=f"{self.label} {self.unit}s", unit=self.unit, file=self.stream),
                tqdm(total=self.sessions, desc="sessions", unit="session", file=self.stream, position=1))

    def say(self, line: str) -> None:
        """One line of the run's own (above the bars on a terminal)."""
        if not self.enabled:
            return
        if self.bars is not None:
            from tqdm.auto import tqdm

            tqdm.write(line, file=self.stream)
        else:
            print(line, file=self.stream, flush=True)

    def unit_done(self, count: int = 1) -> None:
        """``count`` more units done."""
        self.units_done += count
        if self.bars is not None:
            self.bars[0].update(count)

    def session_ended(self, session_id: str, how: str, units: int = 0) -> None:
        """A session ended (``how``: done, skipped, failed, partial), with ``units`` more units counted done; off a
        terminal, one line."""
        if units:
            self.unit_done(units)
        self.ended += 1
        if self.bars is not None:
            self.bars[1].update(1)
        elif self.enabled:
            print(self.line(session_id, how), file=self.stream, flush=True)

    def line(self, session_id: str, how: str) -> str:
        """The plain line of a session that ended, e.g. ``ar: session 3/12 done (s2); 36/140 chunks, 12 s``."""
        return (f"{self.label}: session {self.ended}/{self.sessions} {how} ({session_id}); "
                f"{self.units_done}/{self.units} {self.unit}s, {time.monotonic() - self.began:.0f} s")

    def close(self) -> None:
        if self.bars is not None:
            for bar in self.bars:
                bar.close()

    def __enter__(self) -> "RunProgress":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
