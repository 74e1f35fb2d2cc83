"""The hypothesis pool of Speculative Listening: every draft of the session, indexed by n-grams.

A draft is a token sequence that starts at a chunk's first output token. ``continuation(suffix, position)``
finds the longest n-gram (n <= max_n) that ends ``suffix`` (the chunk's committed tokens) inside any
draft and returns what follows it there. Ties between equally long matches go to the most recently
added draft, then to the occurrence nearest the aligned position (drafts start where chunk outputs start,
so an occurrence at ``position - n`` continues the same place in the output). Adding a draft that is
already in the pool only makes it the most recent.

Example::

    >>> pool = HypothesisPool(max_n=3)
    >>> pool.add([9, 1, 2, 3, 4, 5])
    >>> pool.add([9, 1, 7])
    >>> pool.continuation([9, 1], max_tokens=3, position=2)   # both drafts match "9 1"; the newer one wins
    [7]
    >>> pool.continuation([0, 2, 3], max_tokens=3, position=3)
    [4, 5]
"""

from __future__ import annotations

from typing import Sequence

from ticktock.decoders.ngram import is_prefix_of_any


class HypothesisPool:
    def __init__(self, max_n: int = 4):
        if max_n < 1:
            raise ValueError(f"pool n-gram size must be >= 1, got {max_n}")
        self.max_n = max_n
        self.drafts: list[tuple[int, ...]] = []
        self.recency: list[int] = []
        self.ids: dict[tuple[int, ...], int] = {}
        self.index: dict[tuple[int, ...], list[tuple[int, int]]] = {}
        self.clock = 0

    def __len__(self) -> int:
        return len(self.drafts)

    def add(self, tokens: Sequence[int]) -> None:
        draft = tuple(int(t) for t in tokens)
        if not draft:
            return
        self.clock += 1
        if draft in self.ids:
            self.recency[self.ids[draft]] = self.clock
            return
        draft_id = len(self.drafts)
        self.ids[draft] = draft_id
        self.drafts.append(draft)
        self.recency.append(self.clock)
        for end in range(1, len(draft) + 1):
            for n in range(1, min(self.max_n, end) + 1):
                self.index.setdefault(draft[end - n : end], []).append((draft_id, end - n))

    def latest(self) -> tuple[int, ...]:
        """The most recently added draft (empty when the pool is empty)."""
        if not self.drafts:
            return ()
        return self.drafts[max(range(len(self.drafts)), key=self.recency.__getitem__)]

    def continuation(self, suffix: Sequence[int], max_tokens: int, position: int | None = None) -> list[int]:
        """The best continuation (see the module docstring); empty when no n-gram of ``suffix`` matches."""
        found = self.continuations(suffix, max_tokens, position, limit=1)
        return found[0][1] if found else []

    def continuations(
        self, suffix: Sequence[int], max_tokens: int, position: int | None = None, limit: int = 1
    ) -> list[tuple[int, list[int]]]:
        """Up to ``limit`` distinct continuations as ``(n, tokens)``, best first: longer matches first, then
        by recency and alignment. A continuation that is a prefix of one already taken is skipped.

        Example::

            >>> pool = HypothesisPool(max_n=2)
            >>> pool.add([1, 2, 3]); pool.add([5, 2, 4])
            >>> pool.continuations([1, 2], max_tokens=4, limit=3)
            [(2, [3]), (1, [4])]
        """
        position = len(suffix) if position is None else position
        taken: list[tuple[int, list[int]]] = []
        for n in range(min(self.max_n, len(suffix)), 0, -1):
            found = [
                (draft_id, start)
                for draft_id, start in self.index.get(tuple(suffix[len(suffix) - n :]), ())
                if start + n < len(self.drafts[draft_id])
            ]
            found.sort(key=lambda o: (self.recency[o[0]], -abs(o[1] - (position - n)), -o[1]), reverse=True)
            for draft_id, start in found:
                tokens = list(self.drafts[draft_id][start + n : start + n + max_tokens])
                if not is_prefix_of_any(tokens, (other for _, other in taken)):
                    taken.append((n, tokens))
                if len(taken) >= limit:
                    return taken
        return taken
