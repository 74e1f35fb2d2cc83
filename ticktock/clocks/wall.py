"""Wall clock: ``time.perf_counter`` with device synchronisation around the work (CUDA).

A test gives it a timer of its own (seconds), so that what it asserts never depends on this machine's load::

    >>> readings = iter([10.0, 10.25])
    >>> WallClock(timer=lambda: next(readings)).stopwatch().elapsed_ms()
    250.0
"""

from __future__ import annotations

import time
from typing import Callable

from ticktock.clocks.base import Clock, Stopwatch
from ticktock.clocks.cost_line import CostLine


class WallStopwatch(Stopwatch):
    def __init__(self, synchronize: Callable[[], None], timer: Callable[[], float] = time.perf_counter,
                 forwards: CostLine | None = None):
        super().__init__()
        self.synchronize, self.timer = synchronize, timer
        self.forwards = forwards if forwards is not None else CostLine()  # the clock's forwards measured so far
        synchronize()
        self.start = timer()

    def elapsed_ms(self) -> float:
        self.synchronize()
        return (self.timer() - self.start) * 1000.0

    def _advance(self, ms: float) -> None:
        self.start -= ms / 1000.0  # measured time so far plus the time let pass

    def charge_forward(self, query_tokens: int, context_tokens: int, wall_ms: float) -> float:
        self.forwards.add(query_tokens, wall_ms)
        return wall_ms

    def forward_estimate_ms(self, query_tokens: int, context_tokens: int) -> float | None:
        return self.forwards.at(query_tokens) if self.forwards.n else None

    def charge_encode(self, wall_ms: float, fraction: float = 1.0, first: bool = False) -> float:
        return wall_ms

    def charge_encode_batch(self, pieces: list[tuple[float, bool]], wall_ms: float) -> float:
        return wall_ms

    def charge_batch(self, shapes: list[tuple[int, int]], wall_ms: float) -> float:
        return wall_ms

    def charge_priced(self, cost_ms: float | None, wall_ms: float) -> float:
        if cost_ms is None:
            return wall_ms
        self._advance(cost_ms - wall_ms)  # the priced cost in place of the measured time
        return cost_ms


class WallClock(Clock):
    """Measured time on this machine. ``synchronize`` is the adapter's device barrier; ``timer`` (seconds) is
    ``time.perf_counter`` unless a test fixes it. The forwards its stopwatches measure (one at a time; not batched
    steps) feed one least-squares line of cost over query tokens (``forwards``), each stopwatch's
    ``forward_estimate_ms``."""

    name = "wall"
    measured = True
    batches_encodings = True  # a step of several encodings is measured like any other

    def __init__(self, synchronize: Callable[[], None] | None = None, timer: Callable[[], float] = time.perf_counter):
        self.synchronize = synchronize or (lambda: None)
        self.timer = timer
        self.forwards = CostLine()

    def stopwatch(self, window_ms: float | None = None) -> WallStopwatch:
        return WallStopwatch(self.synchronize, self.timer, self.forwards)

    def estimate_ms(self, query_tokens: int, context_tokens: int) -> float | None:
        return self.forwards.at(query_tokens) if self.forwards.n else None
