"""``pool_rank``: drafts from the session's committed chunk outputs, ranked by frequency x recency, as a tree.

A full-duplex model says much the same thing in many chunks (a listen unit, a backchannel, the opening of an
answer). This decoder remembers every chunk output the session has committed and, before each target forward,
drafts a small tree of the top ``branches`` continuations of what the chunk has committed so far, each at most
``depth`` tokens. It needs no idle-window work: it only verifies, so it is lossless (``ChunkStep.verify`` accepts
a draft token only where it equals the token the target's selector commits there, greedy or sampled).

How it differs from TickTock's own lookups:

- the **source** is the committed outputs, one entry per chunk (Speculative Listening's pool holds the drafts it
  made in idle windows; Prompt Lookup reads the session's whole token context);
- the **ranking** is an exponentially decayed count: an output committed at steps t1..tm (one step per chunk)
  weighs ``sum(decay ** (now - ti))``, and a continuation scores the summed weight of every output it follows
  the matched n-gram in; so an answer given five times beats one given once just now, unless ``decay`` is small
  (SL's pool: the longest match, then the newest draft; PLD: the leftmost match);
- **chunk starts** are matched too: every output is stored after a start marker, so the audio pass (nothing
  committed yet) drafts the most likely whole outputs, decision token first;
- the draft is a **tree** of the top-k continuations, verified in one forward (the longest accepted path wins).

Settings (the keys of ``decoder=pool_rank``): ``branches`` continuations per forward (3), ``depth`` tokens per
continuation (8), ``decay`` per chunk (0.8; 1 = pure frequency, near 0 = the most recent output only).

Worked example (the pool alone; token ids are made up: 4 = a decision, 9 = a terminator)::

    >>> pool = RankedPool(max_n=2, decay=0.8)
    >>> for output in ([4, 1, 2, 9], [4, 1, 2, 9], [4, 1, 3, 9]):
    ...     pool.add(output)
    >>> pool.ranked([], depth=4, limit=2)         # a chunk's start: whole outputs, the twice-seen one first
    [[4, 1, 2, 9], [4, 1, 3, 9]]
    >>> pool.ranked([4, 1], depth=3, limit=2)     # after "4 1": its two continuations
    [[2, 9], [3, 9]]
    >>> RankedPool(max_n=2, decay=0.5).ranked([], depth=4, limit=1) == []   # an empty pool drafts nothing
    True

With ``decay=0.5`` the newest output wins instead (weights 0.75 against 1.0 after the third chunk)::

    >>> pool = RankedPool(max_n=2, decay=0.5)
    >>> for output in ([4, 1, 2, 9], [4, 1, 2, 9], [4, 1, 3, 9]):
    ...     pool.add(output)
    >>> pool.ranked([4, 1], depth=3, limit=1)
    [[3, 9]]

The decoder's settings are checked when it is made (one line naming the key)::

    >>> PoolRankDecoder(branches=2).describe()["branches"]
    2
    >>> PoolRankDecoder(decay=1.5)
    Traceback (most recent call last):
    ...
    ticktock.decoders.contract.DecoderConfigError: decoder.decay: must be at most 1 (1 = no decay), got 1.5
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ticktock.api import Decoder, DecoderConfigError, DecoderSettings, DraftTree, knob, trim_draft

START = -1  # stands before every stored output, so the n-gram (START,) matches a chunk's start
MAX_NGRAM = 3  # longest n-gram of the chunk's committed tokens looked up (longest match first)


class RankedPool:
    """The session's committed chunk outputs, each weighted by how often and how recently it was committed.

    ``add`` stores one chunk's output (an output seen before is stored once; its weight grows) and advances the
    pool's step; ``ranked`` returns the best continuations of a chunk's committed tokens (see the module
    docstring). Weights are kept lazily: the weight at the last update and that update's step.
    """

    def __init__(self, max_n: int = MAX_NGRAM, decay: float = 0.8):
        self.max_n = max_n
        self.decay = decay
        self.outputs: list[tuple[int, ...]] = []  # unique outputs, each with START in front
        self.ids: dict[tuple[int, ...], int] = {}
        self.weights: list[float] = []
        self.updated: list[int] = []
        self.index: dict[tuple[int, ...], list[tuple[int, int]]] = {}  # n-gram -> (output id, where it ends)
        self.now = 0

    def __len__(self) -> int:
        return len(self.outputs)

    def add(self, output: Sequence[int]) -> None:
        stored = (START, *(int(t) for t in output))
        self.now += 1
        known = self.ids.get(stored)
        if known is not None:
            self.weights[known] = self.weight(known) + 1.0
            self.updated[known] = self.now
            return
        output_id = len(self.outputs)
        self.ids[stored] = output_id
        self.outputs.append(stored)
        self.weights.append(1.0)
        self.updated.append(self.now)
        for end in range(1, len(stored)):  # an n-gram ending at ``end`` has a continuation from ``end`` on
            for n in range(1, min(self.max_n, end) + 1):
                self.index.setdefault(stored[end - n : end], []).append((output_id, end))

    def weight(self, output_id: int) -> float:
        """The output's decayed count now."""
        return self.weights[output_id] * self.decay ** (self.now - self.updated[output_id])

    def ranked(self, committed: Sequence[int], depth: int, limit: int) -> list[list[int]]:
        """Up to ``limit`` continuations (at most ``depth`` tokens each) of the longest n-gram of ``committed``
        (a chunk's output so far, from its start) that the pool holds, best score first, ties to the most
        recently committed; a continuation that starts one already taken is skipped (the tree holds it)."""
        context = (START, *(int(t) for t in committed))
        for n in range(min(self.max_n, len(context)), 0, -1):
            scores: dict[tuple[int, ...], list[float]] = {}
            for output_id, end in self.index.get(context[-n:], ()):
                tokens = self.outputs[output_id][end : end + depth]
                score = scores.setdefault(tokens, [0.0, 0])
                score[0] += self.weight(output_id)
                score[1] = max(score[1], self.updated[output_id])
            if scores:
                return _best(scores, limit)
        return []


def _best(scores: dict[tuple[int, ...], list[float]], limit: int) -> list[list[int]]:
    taken: list[list[int]] = []
    for tokens in sorted(scores, key=lambda t: (scores[t][0], scores[t][1]), reverse=True):
        if not any(other[: len(tokens)] == list(tokens) for other in taken):
            taken.append(list(tokens))
        if len(taken) == limit:
            break
    return taken


@dataclass(frozen=True)
class PoolRankSettings(DecoderSettings):
    """``branches``: continuations drafted per forward; ``depth``: tokens per continuation; ``decay``: per chunk."""

    branches: int = knob(3, int, minimum=1)
    depth: int = knob(8, int, minimum=1)
    decay: float = knob(0.8, float, minimum=0.0)

    def check(self) -> None:
        if self.decay > 1:
            raise DecoderConfigError(f"decoder.decay: must be at most 1 (1 = no decay), got {self.decay!r}")


class PoolRankDecoder(Decoder):
    """Draft-and-verify with a tree of the top-ranked continuations from the session's committed outputs."""

    api_version = 1
    name = "pool_rank"
    Settings = PoolRankSettings

    def __init__(self, name: str | None = None, **settings):
        super().__init__(name, **settings)
        self.pool = RankedPool(MAX_NGRAM, self.settings.decay)

    def start_session(self, session) -> None:
        self.pool = RankedPool(MAX_NGRAM, self.settings.decay)

    def decode_chunk(self, step) -> None:
        super().decode_chunk(step)  # the draft-and-verify loop, drafting with ``propose``
        self.pool.add(step.output)

    def propose(self, step) -> DraftTree | None:
        tree = DraftTree()
        for tokens in self.pool.ranked(step.output, self.settings.depth, self.settings.branches):
            tree.add_chain(trim_draft(tokens, step.protocol, len(step.output)), source="pool_rank")
        return tree if len(tree) else None
