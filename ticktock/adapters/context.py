"""What happens when a session outgrows the model's context: the model's own policy, or a clear stop.

A session's KV cache grows by a unit per chunk (about 10 audio embeddings plus its text), so a long
session reaches the model's position limit. Every adapter declares its limit and its policy
(``ModelAdapter.context_policy``); the session state applies it at each chunk boundary, after chunk t is
committed and before chunk t+1 is drafted or prefilled, so drafts, verification and rollback all see
the same cache:

- ``EvictOldUnits``: a sliding window over whole old units that keeps the system prompt (MiniCPM-o's
  ``basic`` sliding window: once the next chunk might not fit, the oldest units go, down to a low
  watermark). The adapter removes them and re-positions the rest (``ModelAdapter.evict``).
- ``StopAtLimit``: no policy of the model's own; the run stops with an error naming the session and the
  chunk before any position past the limit is used.

``reserve`` is the room kept free for the next chunk besides its known tail: its head, its audio, its
output and the largest draft tree a decoder verifies on top (query tokens beyond the cache).

Example (a 1,000-position model, a prompt of 100 positions and units of 50)::

    >>> policy = EvictOldUnits(limit=1000, reserve=200, evict_to=0.6)
    >>> starts = [100 + 50 * i for i in range(15)]          # where each unit begins in the cache
    >>> policy.units_to_evict(cache_length=850, incoming=0, unit_starts=starts)   # 850 + 200 > 1000: down to 600
    5
    >>> policy.units_to_evict(cache_length=700, incoming=0, unit_starts=starts)
    0
    >>> StopAtLimit(limit=1000, reserve=200).units_to_evict(850, 0, starts)
    Traceback (most recent call last):
    ...
    ticktock.adapters.context.ContextFull: the next chunk needs up to 1050 positions, the model takes 1000
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence


class ContextFull(Exception):
    """The next chunk might not fit in the model's positions, and the policy cannot make room."""


@dataclass(frozen=True)
class StopAtLimit:
    """No eviction: refuse a chunk that might run past the limit (``limit`` None: never)."""

    limit: int | None
    reserve: int = 512

    def needed(self, cache_length: int, incoming: int) -> int:
        return cache_length + incoming + self.reserve

    def units_to_evict(self, cache_length: int, incoming: int, unit_starts: Sequence[int]) -> int:
        """How many of the oldest units to evict before the next chunk (0: none needed)."""
        if self.limit is not None and self.needed(cache_length, incoming) > self.limit:
            raise ContextFull(f"the next chunk needs up to {self.needed(cache_length, incoming)} positions, "
                              f"the model takes {self.limit}")
        return 0

    def describe(self) -> dict:
        return {"policy": "stop_at_limit", "limit": self.limit, "reserve": self.reserve}


@dataclass(frozen=True)
class EvictOldUnits(StopAtLimit):
    """Evict the oldest whole units (never the prompt, never the open unit) once the next chunk might not
    fit, until the cache holds at most ``evict_to`` x ``limit`` positions."""

    evict_to: float = 0.75

    def __post_init__(self):
        if self.limit is None or self.limit <= self.reserve:
            raise ValueError(f"EvictOldUnits: limit ({self.limit}) must exceed reserve ({self.reserve})")
        if not 0 < self.evict_to < 1:
            raise ValueError(f"EvictOldUnits: evict_to must be in (0, 1), got {self.evict_to}")

    def units_to_evict(self, cache_length: int, incoming: int, unit_starts: Sequence[int]) -> int:
        if self.needed(cache_length, incoming) <= self.limit:
            return 0
        target = min(self.evict_to * self.limit, self.limit - self.reserve - incoming)
        first = unit_starts[0] if unit_starts else cache_length
        for count in range(1, len(unit_starts)):  # the newest unit (still open) always stays
            if cache_length - (unit_starts[count] - first) <= target:
                return count
        raise ContextFull(f"the next chunk needs up to {self.needed(cache_length, incoming)} positions, the model "
                          f"takes {self.limit}, and evicting every closed unit leaves "
                          f"{cache_length - (unit_starts[-1] - first) if unit_starts else cache_length}")

    def describe(self) -> dict:
        return {"policy": "evict_old_units", "limit": self.limit, "reserve": self.reserve, "evict_to": self.evict_to}
