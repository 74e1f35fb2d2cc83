"""The clock contract.

A replay never sleeps: arrival times are simulated, and the time each piece of work takes comes from a
*stopwatch*. The engine opens one stopwatch per phase (a chunk's post-audio work, an idle window) and
every target forward and audio encoding inside the phase is reported to it.

- ``wall``: the stopwatch reads ``time.perf_counter`` (device-synchronised), so decoder bookkeeping,
  Python overhead and everything else in the phase counts.
- ``modeled``: the stopwatch sums a cost profile's charge for each forward (a function of query tokens and
  context length) and each audio encoding; the result is deterministic and hardware-independent.

Example::

    >>> from ticktock.clocks.modeled import ModeledClock, CostProfile
    >>> clock = ModeledClock(CostProfile.constant(forward_ms=20.0, encode_ms=5.0))
    >>> watch = clock.stopwatch()
    >>> watch.charge_encode(wall_ms=0.3), watch.charge_forward(11, 500, wall_ms=1.2)
    (5.0, 20.0)
    >>> watch.elapsed_ms()
    25.0
"""

from __future__ import annotations

from abc import ABC, abstractmethod


class Stopwatch(ABC):
    @abstractmethod
    def elapsed_ms(self) -> float:
        """Time spent in this phase so far, on this clock."""

    @abstractmethod
    def charge_forward(self, query_tokens: int, context_tokens: int, wall_ms: float) -> float:
        """Account one target forward; returns the milliseconds charged for it."""

    @abstractmethod
    def charge_encode(self, wall_ms: float) -> float:
        """Account one chunk's audio encoding; returns the milliseconds charged."""


class Clock(ABC):
    name: str

    @abstractmethod
    def stopwatch(self) -> Stopwatch: ...

    def describe(self) -> dict:
        return {"name": self.name}
