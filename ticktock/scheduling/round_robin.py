"""Round robin: the idle device's draft forwards go to the waiting sessions in turn, by slot.

This is how a serving system without a draft scheduler spends idle time: every session gets an equal
share, whether its next chunk will be a long reply or a one-token ``<|listen|>``.

Example::

    >>> from ticktock.scheduling.base import DraftCandidate
    >>> c = lambda slot, order: DraftCandidate(slot, 1000.0, 0, (), False, -80.0, None, order)
    >>> policy = RoundRobin()
    >>> [policy.choose([c(0, 1), c(2, 2)], 0.0).slot for _ in range(3)]
    [0, 2, 0]
"""

from __future__ import annotations

from ticktock.scheduling.base import DraftCandidate, DraftPolicy, fits_window


class RoundRobin(DraftPolicy):
    name = "round_robin"

    def __init__(self, name: str | None = None):
        if name is not None:
            self.name = name
        self.last_slot = -1

    def choose(self, candidates: list[DraftCandidate], now_ms: float) -> DraftCandidate:
        after = [c for c in candidates if c.slot > self.last_slot]
        chosen = min(after or candidates, key=lambda c: (c.slot, c.order))
        self.last_slot = chosen.slot
        return chosen

    def join(self, candidates, now_ms, step_ms, post_audio):
        """A draft step takes every other waiting draft forward along, by slot, while each still ends before its
        window closes; a post-audio step carries none (no draft delays a chunk that has arrived)."""
        joined: list[DraftCandidate] = []
        if post_audio:
            return joined
        for candidate in sorted(candidates, key=lambda c: (c.slot, c.order)):
            cost = step_ms([*joined, candidate])
            if all(fits_window(c, now_ms, cost) for c in [*joined, candidate]):
                joined.append(candidate)
        return joined
