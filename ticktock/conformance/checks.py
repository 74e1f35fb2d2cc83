"""One conformance check's outcome, the table ``ticktock certify`` prints, and its progress lines (``Progress``).

Example::

    >>> results = [Check("tokens equal AR", "embedded, greedy", True),
    ...            Check("KV cache equals AR", "embedded, greedy", False, "session s1 chunk 7",
    ...                  "cache length 412, AR's 411")]
    >>> print(table(results))
    property            setting           result  first counter-example
    ------------------  ----------------  ------  ----------------------------------------------
    tokens equal AR     embedded, greedy  PASS
    KV cache equals AR  embedded, greedy  FAIL    session s1 chunk 7: cache length 412, AR's 411
    >>> all_passed(results)
    False
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, TextIO

PASS, FAIL, SKIP = "PASS", "FAIL", "SKIP"


@dataclass(frozen=True)
class Check:
    """One property checked in one setting: ``passed`` True, False, or None for a declared skip (``detail`` says
    why). ``where`` names the first counter-example (session, chunk, token or tensor), ``detail`` what differed."""

    prop: str
    setting: str
    passed: bool | None
    where: str = ""
    detail: str = ""

    @property
    def result(self) -> str:
        return SKIP if self.passed is None else (PASS if self.passed else FAIL)

    def counterexample(self) -> str:
        return ": ".join(part for part in (self.where, self.detail) if part)


def table(results: list[Check]) -> str:
    """A fixed-width table: property, setting, PASS/FAIL/SKIP, the first counter-example (or the skip's reason)."""
    rows = [(c.prop, c.setting, c.result, c.counterexample()) for c in results]
    header = ("property", "setting", "result", "first counter-example")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(3)]
    last = max([len(header[3]), *(len(r[3]) for r in rows)])
    line = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, [*widths, 0])).rstrip()
    return "\n".join([line(header), line(["-" * w for w in [*widths, last]]), *(line(r) for r in rows)])


def all_passed(results: list[Check]) -> bool:
    """True when no check failed (skips are declared capability gaps, not failures)."""
    return not any(c.passed is False for c in results)


class Progress:
    """Where certify is, said on ``stream`` (certify's stderr) as it goes: a line as each check starts (with what it
    replays, where it replays something) and one as it ends (its result and how long it took), each with the seconds
    since certify began. Plain lines, written and flushed whole (no carriage return, no escape code), so a terminal, a
    pipe and a log file read them alike as they come. ``Progress()`` (no stream) says nothing: a caller that wants the
    results alone.

    >>> import io
    >>> seconds = iter([0.0, 1.0, 13.4])  # certify begins, the check starts, it ends
    >>> said = io.StringIO()
    >>> progress = Progress(said, clock=lambda: next(seconds))
    >>> progress.started("tokens equal AR", "fixture, greedy", "replays the decoder, then AR")
    >>> progress.ended(Check("tokens equal AR", "fixture, greedy", True)).result
    'PASS'
    >>> print(said.getvalue(), end="")
    certify [1 s] fixture, greedy: tokens equal AR: started (replays the decoder, then AR)
    certify [13 s] fixture, greedy: tokens equal AR: PASS in 12 s
    """

    def __init__(self, stream: TextIO | None = None, clock: Callable[[], float] = time.monotonic):
        self.stream = stream
        self.clock = clock
        self.began = clock()
        self._started: dict[tuple[str, str], float] = {}

    def started(self, prop: str, setting: str, doing: str = "") -> None:
        """Check ``prop`` in ``setting`` starts; ``doing``: what it replays, in words (empty when nothing)."""
        now = self.clock()
        self._started[(prop, setting)] = now
        self._say(now, f"{setting}: {prop}: started" + (f" ({doing})" if doing else ""))

    def ended(self, check: Check) -> Check:
        """``check`` is done: its result, and its time when its start was said. Returns ``check``."""
        now = self.clock()
        began = self._started.pop((check.prop, check.setting), None)
        took = "" if began is None else f" in {now - began:.0f} s"
        self._say(now, f"{check.setting}: {check.prop}: {check.result}{took}")
        return check

    def checked(self, prop: str, setting: str, check: Callable[[], Check]) -> Check:
        """``check()``, its start and its end said."""
        self.started(prop, setting)
        return self.ended(check())

    def _say(self, now: float, text: str) -> None:
        if self.stream is not None:
            self.stream.write(f"certify [{now - self.began:.0f} s] {text}\n")
            self.stream.flush()
