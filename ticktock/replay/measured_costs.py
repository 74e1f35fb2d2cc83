"""What a measuring clock's device steps cost so far: the estimates a shared device gives its draft policy under the
wall clock (served sessions, ``clock=wall`` replays), where no cost profile prices the work in advance.

A draft policy decides from expected costs: whether a draft forward ends before the next session's audio arrives,
whether drafts may join a batched step. A cost profile (``clock=modeled``) gives them. A measuring clock has only what
it measured, so ``MeasuredCosts`` keeps, per kind of work, a least-squares line of the measured cost over the work's
size (a forward's query tokens, an encoding's share of its chunk's audio): a 40-token verification is not priced like
a 1-token decode step. A batched step pads every member to the largest, so it is priced as its members times the
dearest of them alone, times a factor per kind learned from the batched steps measured so far (``batch_factor``: 1
until one is measured). A batch pays (``batch_pays``) when that is less than its members cost one after another: on
a GPU most batches do, on a CPU batches of unequal members do not. Once one piece of a kind was measured alone, the
next ``LEARN_BATCHES`` batches of that kind are tried whatever they are expected to cost, so the factor is learned.

Example (forwards of 1 and 9 query tokens measured; a 5-token one is expected in between)::

    >>> costs = MeasuredCosts()
    >>> costs.add("forward", 1, 2.0); costs.add("forward", 9, 10.0)
    >>> costs.estimate("forward", 5)
    6.0
    >>> costs.add_batch("forward", measured_ms=9.0, alone_ms=[2.0, 6.0])     # 2 members padded to the dearest: 12 ms
    >>> costs.batch_factor["forward"], costs.estimate_batch("forward", [6.0, 6.0])
    (0.75, 9.0)
"""

from __future__ import annotations

from ticktock.clocks.cost_line import CostLine

BATCH_WEIGHT = 0.2  # how much one measured batched step moves ``batch_factor`` (an exponential average)
LEARN_BATCHES = 8  # batched steps of a kind tried whatever they are expected to cost, to learn its factor


class MeasuredCosts:
    """Measured costs per kind of work (see the module docstring)."""

    def __init__(self):
        self.lines: dict[str, CostLine] = {}
        self.batch_factor: dict[str, float] = {}
        self.batched: dict[str, int] = {}

    def add(self, kind: str, size: float, cost_ms: float) -> None:
        """One step of one piece of work of ``kind`` and ``size``, measured at ``cost_ms``."""
        self.lines.setdefault(kind, CostLine()).add(float(size), cost_ms)

    def estimate(self, kind: str, size: float) -> float:
        """The expected cost of one piece of work of ``kind`` and ``size`` alone (0 before any of its kind)."""
        line = self.lines.get(kind)
        return line.at(float(size)) if line is not None else 0.0

    def add_batch(self, kind: str, measured_ms: float, alone_ms: list[float]) -> None:
        """A batched step of ``kind`` measured at ``measured_ms``, whose members were expected at ``alone_ms``."""
        padded = len(alone_ms) * max(alone_ms, default=0.0)
        if padded > 0:
            ratio, seen = measured_ms / padded, self.batched.get(kind, 0)
            before = self.batch_factor.get(kind, ratio)
            self.batch_factor[kind] = ratio if seen == 0 else (1 - BATCH_WEIGHT) * before + BATCH_WEIGHT * ratio
            self.batched[kind] = seen + 1

    def estimate_batch(self, kind: str, alone_ms: list[float]) -> float:
        """The expected cost of a batched step whose members cost ``alone_ms`` each alone."""
        return self.batch_factor.get(kind, 1.0) * len(alone_ms) * max(alone_ms, default=0.0)

    def batch_pays(self, kind: str, alone_ms: list[float]) -> bool:
        """Whether members costing ``alone_ms`` alone are expected to cost less batched than one after another
        (never before one piece of the kind was measured alone: its members' prices are not known; always, while the
        kind's factor is being learned)."""
        if kind not in self.lines:
            return False
        if self.batched.get(kind, 0) < LEARN_BATCHES:
            return True
        return self.estimate_batch(kind, alone_ms) < sum(alone_ms)
