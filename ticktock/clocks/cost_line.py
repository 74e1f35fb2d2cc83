"""A least-squares line of measured cost over a size: what a measuring clock expects work of a new size to cost.

A wall clock prices nothing in advance; what it measured so far is all it knows. ``CostLine`` keeps running sums of
(size, cost) pairs, e.g. a forward's query tokens and its measured milliseconds, and reads the fitted line at any size
(the mean while every size measured was the same; 0 before anything was measured).

Example (forwards of 1 and 9 query tokens measured at 5 and 9 ms)::

    >>> line = CostLine(); line.add(1, 5.0); line.add(9, 9.0)
    >>> line.at(33)
    21.0
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class CostLine:
    """Running sums of (size, cost) pairs and their least-squares line."""

    n: int = 0
    sx: float = 0.0
    sy: float = 0.0
    sxx: float = 0.0
    sxy: float = 0.0

    def add(self, size: float, cost: float) -> None:
        self.n += 1
        self.sx += size
        self.sy += cost
        self.sxx += size * size
        self.sxy += size * cost

    def at(self, size: float) -> float:
        """The line's cost at ``size`` (the mean cost while the sizes measured are all one; 0 before any)."""
        if self.n == 0:
            return 0.0
        mean_x, mean_y = self.sx / self.n, self.sy / self.n
        spread = self.sxx - self.n * mean_x * mean_x
        if self.n < 2 or spread <= 1e-9 * max(1.0, self.sxx):
            return mean_y
        slope = (self.sxy - self.n * mean_x * mean_y) / spread
        return max(0.0, mean_y + slope * (size - mean_x))
