"""The deadline arithmetic of a replay (TickTock-Bench, appendix A), as pure functions.

Chunk t's audio is complete ("arrives") at the end of its span. Its post-audio latency ``l_t`` is the
compute time from then until its last output token is committed, plus any idle-window overrun carried
into it. With ``D`` the duration of the next chunk (the time until the next arrival):

- lag:            b_t = max(0, b_{t-1} + l_t - D),  b_{-1} = 0
- deadline miss:  b_{t-1} + l_t > D
- response time:  b_{t-1} + l_t  (when chunk t's outputs are done, after its audio arrived; onset and
                  tool-call latency are this quantity for the first speak chunk of a turn / a tool chunk)
- idle budget:    max(0, D - (b_{t-1} + l_t)): time left before the next chunk arrives; 0 while lagging.

Example: a tool call of 2600 ms in 1 s chunks makes the next two chunks late::

    >>> [advance(b, l, 1000.0).lag_ms for b, l in [(0.0, 2600.0), (1600.0, 20.0), (620.0, 20.0)]]
    [1600.0, 620.0, 0.0]
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ChunkTiming:
    lag_before_ms: float
    latency_ms: float
    lag_ms: float
    response_ms: float
    missed_deadline: bool
    idle_budget_ms: float


def advance(lag_before_ms: float, latency_ms: float, deadline_ms: float) -> ChunkTiming:
    """One step of the lag recursion for a chunk of post-audio latency ``latency_ms``."""
    response = lag_before_ms + latency_ms
    return ChunkTiming(
        lag_before_ms=lag_before_ms,
        latency_ms=latency_ms,
        lag_ms=max(0.0, response - deadline_ms),
        response_ms=response,
        missed_deadline=response > deadline_ms,
        idle_budget_ms=max(0.0, deadline_ms - response),
    )


def overrun(used_ms: float, budget_ms: float) -> float:
    """Idle work past the budget, carried into the next chunk's post-audio latency."""
    return max(0.0, used_ms - budget_ms)
