"""What every task builder gets: the session's identity, its random generator and an item dealer.

Randomness is per session (``random.Random`` seeded with the session id, which is stable across processes),
and item choice goes through one :class:`ItemDealer` per (task, split, seed), so session ``i`` is the same
whether 1 or 100 sessions are generated.

Example::

    >>> dealer = ItemDealer("llama_questions", "eval", 0)
    >>> first = dealer.deal("numbers", ["a", "b", "c"])
    >>> second = dealer.deal("numbers", ["a", "b", "c"])
    >>> first != second
    True
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Callable, Sequence, TypeVar

from ticktock.corpus.splits import split_of

T = TypeVar("T")
MAX_DRAWS = 2_000


def session_id(task: str, split: str, seed: int, index: int) -> str:
    """``session_id("fdb_v3", "eval", 0, 3) == "fdb_v3-eval-0-0003"``."""
    return f"{task}-{split}-{seed}-{index:04d}"


class ItemDealer:
    """Deals items of a task without repeats: from fixed pools in a seeded order (cycling when a pool runs
    out), or from a procedural generator filtered by split."""

    def __init__(self, task: str, split: str, seed: int):
        self.task, self.split, self.seed = task, split, seed
        self._orders: dict[str, list[int]] = {}
        self._cursors: dict[str, int] = {}
        self._used: set[str] = set()

    def deal(self, pool: str, items: Sequence[T]) -> T:
        """The next item of ``pool`` (``items`` must be the same sequence on every call for that pool)."""
        if not items:
            raise ValueError(f"{self.task}/{self.split}: item pool {pool!r} is empty")
        cursor = self._cursors.get(pool, 0)
        cycle, position = divmod(cursor, len(items))
        if position == 0:
            order = list(range(len(items)))
            random.Random(f"{self.task}:{self.split}:{self.seed}:{pool}:{cycle}").shuffle(order)
            self._orders[pool] = order
        self._cursors[pool] = cursor + 1
        return items[self._orders[pool][position]]

    def draw(self, rng: random.Random, make: Callable[[random.Random], T], item_id: Callable[[T], str]) -> T:
        """A procedural item of this split: ``make(rng)`` until its id is in the split, preferring ids not
        dealt before (small item spaces repeat once they are used up, but never cross splits)."""
        repeat = None
        for _ in range(MAX_DRAWS):
            item = make(rng)
            key = item_id(item)
            if split_of(key) != self.split:
                continue
            if key not in self._used:
                self._used.add(key)
                return item
            repeat = repeat or item
        if repeat is None:
            raise RuntimeError(f"{self.task}/{self.split}: no item of this split after {MAX_DRAWS} draws")
        return repeat


@dataclass
class SessionContext:
    """The session being built: ``rng`` drives all of its random choices."""

    task: str
    split: str
    seed: int
    index: int
    dealer: ItemDealer

    def __post_init__(self):
        self.rng = random.Random(f"content:{self.session_id}")

    @property
    def session_id(self) -> str:
        return session_id(self.task, self.split, self.seed, self.index)
