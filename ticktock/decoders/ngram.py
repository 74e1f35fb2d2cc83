"""N-gram lookup over token sequences: the drafting core of Prompt Lookup and the hypothesis pool.

``prompt_lookup`` is the reference (a pure function, as the original PLD code): for n from ``max_ngram``
down to 1, take the last n tokens as the pattern and return the continuation after its *leftmost*
occurrence that has a full ``num_pred`` tokens inside the sequence and starts before the trailing
pattern itself. ``NgramIndex`` gives the same answers from an incrementally built index.

Example::

    >>> prompt_lookup([1, 2, 3, 4, 5, 9, 1, 2, 3], max_ngram=3, num_pred=2)
    [4, 5]
    >>> prompt_lookup([7, 8, 9], max_ngram=3, num_pred=2)
    []
"""

from __future__ import annotations

from typing import Iterable, Sequence


def prompt_lookup(tokens: Sequence[int], max_ngram: int, num_pred: int, allow_short: bool = False) -> list[int]:
    """The PLD draft for ``tokens`` (longest n-gram first, leftmost occurrence).

    ``allow_short``: accept continuations cut by the end of the sequence (transformers' variant);
    the original requires a full ``num_pred`` tokens.
    """
    length = len(tokens)
    for n in range(min(max_ngram, length - 1), 0, -1):
        pattern = list(tokens[length - n :])
        for start in range(0, length - n):  # every occurrence but the trailing pattern itself
            if list(tokens[start : start + n]) == pattern and _valid(start, n, num_pred, length, allow_short):
                return list(tokens[start + n : min(start + n + num_pred, length)])
    return []


def _valid(start: int, n: int, num_pred: int, length: int, allow_short: bool) -> bool:
    """Original PLD: the continuation starts before the trailing pattern and has num_pred tokens."""
    if allow_short:
        return True
    return start + n < length - n and start + n + num_pred <= length


def is_prefix_of_any(tokens: Sequence[int], others: Iterable[Sequence[int]]) -> bool:
    """True when ``tokens`` starts one of ``others``: as a draft it adds nothing to those already taken.

    Example::

        >>> is_prefix_of_any([3, 4], [[1], [3, 4, 8]]), is_prefix_of_any([3, 5], [[3, 4, 8]])
        (True, False)
    """
    tokens = list(tokens)
    return any(list(other[: len(tokens)]) == tokens for other in others)


class NgramIndex:
    """Positions of every n-gram (n <= max_n) of an append-only token sequence.

    Example::

        >>> index = NgramIndex(3); index.extend([1, 2, 3, 4, 5, 9, 1, 2, 3])
        >>> index.lookup(max_ngram=3, num_pred=2)
        [4, 5]
    """

    def __init__(self, max_n: int):
        self.max_n = max_n
        self.tokens: list[int] = []
        self.positions: dict[tuple[int, ...], list[int]] = {}

    def extend(self, tokens: Sequence[int]) -> None:
        for token in tokens:
            self.tokens.append(int(token))
            end = len(self.tokens)
            for n in range(1, min(self.max_n, end) + 1):
                self.positions.setdefault(tuple(self.tokens[end - n : end]), []).append(end - n)

    def sync(self, tokens: Sequence[int]) -> None:
        """Index the part of ``tokens`` not seen yet (``tokens`` must extend what was indexed)."""
        self.extend(tokens[len(self.tokens) :])

    def lookup(self, max_ngram: int, num_pred: int, allow_short: bool = False) -> list[int]:
        """Same answer as ``prompt_lookup(self.tokens, ...)``."""
        tokens, length = self.tokens, len(self.tokens)
        for n in range(min(max_ngram, self.max_n, length - 1), 0, -1):
            for start in self.positions.get(tuple(tokens[length - n :]), ()):
                if start >= length - n:
                    break
                if _valid(start, n, num_pred, length, allow_short):
                    return tokens[start + n : min(start + n + num_pred, length)]
        return []

    def find_all(
        self, suffix: Sequence[int], max_ngram: int, num_pred: int, limit: int = 1, latest: bool = True
    ) -> list[tuple[int, list[int]]]:
        """Up to ``limit`` distinct continuations, as ``(n, tokens)``, of the n-grams ending ``suffix`` (which
        need not be part of the indexed tokens): longest n-gram first, then latest occurrence first (leftmost
        first with ``latest=False``); a continuation that is a prefix of one already taken is skipped.

        Example::

            >>> index = NgramIndex(2); index.extend([5, 6, 7, 5, 6, 8, 1, 6, 9])
            >>> index.find_all([5, 6], max_ngram=2, num_pred=2, limit=3)
            [(2, [8, 1]), (2, [7, 5]), (1, [9])]
        """
        length = len(self.tokens)
        taken: list[tuple[int, list[int]]] = []
        for n in range(min(max_ngram, self.max_n, len(suffix)), 0, -1):
            starts = [s for s in self.positions.get(tuple(suffix[len(suffix) - n :]), ()) if s + n < length]
            for start in reversed(starts) if latest else starts:
                tokens = self.tokens[start + n : start + n + num_pred]
                if not is_prefix_of_any(tokens, (other for _, other in taken)):
                    taken.append((n, tokens))
                if len(taken) >= limit:
                    return taken
        return taken
