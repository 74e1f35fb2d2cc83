"""Lookahead Decoding (LADE; Fu et al. 2024, arXiv 2402.02057; hao-ai-lab/LookaheadDecoding greedy path).

Each forward carries two branches next to the root x0 (the token fed last):

- the *lookahead branch*, a 2D Jacobi window of N-1 levels: level 0 (``L0``, W-1 guessed tokens) and
  levels 1..N-2 (W tokens each, one Jacobi iteration apart). With B0 = [x0] + L0 (columns 0..W-1), the
  level-l token of column j sits at position p + l + j and sees B0 columns 0..j and the column-j tokens of
  levels 1..l. In our DraftTree that is exactly a tree: B0 is a chain from the root, and the level-l
  column-j node's parent is the level-(l-1) column-j node (B0 column j for l = 1; the root for j = 0), so
  position = depth and ancestors = what the original mask shows (the official Lookahead implementation). Window nodes are
  non-verifiable: their logits only feed the next level;
- the *verification branch*: the pool's (N-1)-grams keyed by x0 (up to G, oldest first), verifiable chains
  from the root.

After the forward: ``new`` = argmax at the last level's W nodes; each window column i gives the pool the
N-gram (key = x0 for i = 0, else L0[i-1]; value = L1[i], ..., L_{N-2}[i], new[i]) with LRU capacity G;
the window shifts by one (L0 <- L1[1:], L_l <- L_{l+1}, L_{N-2} <- new) however many tokens were accepted.
Warm-up ("fill"): the window starts as W+N-3 context tokens drawn at random (``random.Random(seed)`` per
session, as Spec-Bench calls ``random.seed(10)`` per generate); the first N-2 forwards build levels 1..N-2
one at a time and verify nothing.

Chunks and sessions: the pool and the window live for a session (the original's generate() call) and are
reset at ``start_session``. Across chunk boundaries the window keeps its content and shifts once per
forward; re-initialising it per chunk would spend N-2 warm-up forwards of every short chunk. Every forward
carries the window, the audio prefill included: there B0 hangs off the last prefill position, so the window
takes a Jacobi step conditioned on the new audio. On a prefill whose last input is an audio embedding (no
token id) nothing is verified and the column-0 pool entry (keyed by the root) is skipped; when the prefill
ends with tool-response text, its last token is the root and the pool's guesses for it are verified.
Guesses are cut after a chunk terminator and at the chunk's token room (``trim_draft``).

Deviations from the original, and why:

- A fully matched guess commits N tokens (N-1 drafts + the target's next token, our standard walk); the
  original commits only N-1 and re-feeds the last draft. More tokens per forward, same output.
  ``lade_commit: true`` reproduces the original's rule exactly. Its match loop (``gg`` in
  ``jacobi_greedy_search_multilevel``) stops at a guess's last, (N-1)-th token whether it matches or not, so
  at most the first N-2 tokens of a guess are accepted, then the target's token after the last accepted one
  is committed (on a full match it equals the guess's last token): at most N-1 tokens per forward. With the
  knob, a guess's (N-1)-th token still rides in the forward as a helper node that is never accepted
  (``add_guess``); the cache keeps the root and the accepted drafts and the last committed token is fed next,
  as the original keeps ``kvcache_len + max_hit`` entries and feeds ``hits[max_hit]``. Helper tokens are not
  counted as offered draft tokens (``ChunkCounters.draft_tokens`` counts what can be accepted).
- Guesses sharing a prefix are merged into a trie (``DraftTree.add_chain``), so shared prefixes are fed once.
  The deepest match in the trie is the original's longest match over candidates, so the same tokens are
  accepted; the original's "first candidate wins ties" only chose which identical KV entries to keep.
- The window outlives chunks and rides audio prefills (above): no counterpart in single-prompt LADE.
- Temperature sampling: the walk accepts a node when it equals the keyed sample at its parent
  (``selection.py``; exact), not LADE's SpecInfer-style multi-candidate rejection (also exact). The window is
  always argmax of the raw logits, as in the original (no unit grammar applied).
- The window is drawn from the session's committed text tokens so far (system prompt, unit tokens; audio
  has no ids) instead of the prompt tokens. Not supported: POOL_FROM_PROMPT (off by default in LADE),
  DIST_WORKERS, the flash-attention window reordering.

Example::

    >>> decoder = LookaheadDecoder(level=5, window=7, guess=7)
    >>> decoder.describe()
    {'name': 'lookahead', 'early_prefill': False, 'prefill_every_ms': 200.0, 'level': 5, 'window': 7, 'guess': 7,
     'seed': 10, 'lade_commit': False}
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Sequence

from ticktock.decoders.contract import Decoder, DecoderSettings, knob
from ticktock.decoders.trees import DraftTree, Verification, trim_draft


class NgramPool:
    """token -> its (N-1)-gram continuations, each list LRU-ordered (oldest first) with ``capacity`` entries.

    Example::

        >>> pool = NgramPool(capacity=2)
        >>> pool.add(1, (2, 3)); pool.add(1, (4, 5)); pool.add(1, (2, 3)); pool.add(1, (6, 7))
        >>> pool.candidates(1)          # (2, 3) was re-inserted (moved to the back); (4, 5) fell out
        [(2, 3), (6, 7)]
    """

    def __init__(self, capacity: int):
        self.capacity = capacity
        self.entries: dict[int, list[tuple[int, ...]]] = {}

    def add(self, key: int, ngram: tuple[int, ...]) -> None:
        bucket = self.entries.setdefault(key, [])
        if ngram in bucket:
            bucket.remove(ngram)
        elif len(bucket) >= self.capacity:
            del bucket[0]
        bucket.append(ngram)

    def candidates(self, key: int) -> list[tuple[int, ...]]:
        return list(self.entries.get(key, ()))


class JacobiWindow:
    """The 2D lookahead window: ``levels[0]`` = L0, ``levels[l]`` = level l; full with ``level - 1`` levels.

    Sizes: W+N-3 tokens in level 0 at the start; each warm-up forward drops the first token of every level
    and adds one level; when full, L0 has W-1 tokens and every other level W.

    Example (N=3, W=2: one warm-up forward, then steady)::

        >>> w = JacobiWindow(level=3, width=2, initial=[40, 41])
        >>> tree = DraftTree(); w.add_to(tree)
        [[0, 1]]
        >>> w.advance([50, 51]); w.levels, w.is_full
        ([[41], [50, 51]], True)
        >>> tree = DraftTree(); w.add_to(tree), tree.parents, tree.tokens
        ([[0], [1, 2]], [-1, -1, 0], [41, 50, 51])
        >>> w.ngrams(root=9, predictions=[60, 61])
        [(9, (50, 60)), (41, (51, 61))]
    """

    def __init__(self, level: int, width: int, initial: Sequence[int]):
        if len(initial) != width + level - 3:
            raise ValueError(f"lookahead: the window starts with {width + level - 3} tokens, got {len(initial)}")
        self.level = level
        self.width = width
        self.levels: list[list[int]] = [list(initial)]

    @property
    def is_full(self) -> bool:
        return len(self.levels) == self.level - 1

    def add_to(self, tree: DraftTree) -> list[list[int]]:
        """Add the window as non-verifiable nodes; return the node index of every token, level by level."""
        nodes = [self._add_level_zero(tree)]
        for depth, tokens in enumerate(self.levels[1:], start=1):
            below = [-1] + nodes[0] if depth == 1 else nodes[depth - 1]  # column j's parent, per column
            nodes.append([tree.add_node(t, below[j], False, "lookahead_window") for j, t in enumerate(tokens)])
        return nodes

    def _add_level_zero(self, tree: DraftTree) -> list[int]:
        """L0 as a chain from the root: B0 = [root] + L0."""
        nodes, parent = [], -1
        for token in self.levels[0]:
            parent = tree.add_node(token, parent, False, "lookahead_window")
            nodes.append(parent)
        return nodes

    def ngrams(self, root: int | None, predictions: Sequence[int]) -> list[tuple[int, tuple[int, ...]]]:
        """The pool entries of a steady-state forward: (key, N-1 tokens) per window column.

        ``predictions`` = argmax at the last level's nodes. Column 0's key is the root; skipped when None.
        """
        entries = []
        for column in range(self.width):
            key = root if column == 0 else self.levels[0][column - 1]
            if key is None:
                continue
            entries.append((key, tuple(lvl[column] for lvl in self.levels[1:]) + (int(predictions[column]),)))
        return entries

    def advance(self, predictions: Sequence[int]) -> None:
        """One Jacobi step; ``predictions`` = argmax at the newest level's nodes (the window shifts by one)."""
        predictions = [int(t) for t in predictions]
        if self.is_full:
            self.levels = [self.levels[1][1:]] + self.levels[2:] + [predictions]
        elif len(self.levels) == 1:  # first warm-up forward: level 1 = predictions of every L0 token
            self.levels = [self.levels[0][1:], predictions]
        else:
            self.levels = [lvl[1:] for lvl in self.levels] + [predictions[1:]]


def add_guess(tree: DraftTree, guess: Sequence[int], acceptable: int) -> None:
    """Add one guess as a chain from the root: its first ``acceptable`` tokens as verifiable trie nodes (shared
    prefixes are fed once), the rest as helper nodes that ride in the forward and are never accepted.

    Example (LADE's rule for N = 4: a guess of 3 tokens, of which the first 2 can be accepted)::

        >>> tree = DraftTree(); add_guess(tree, [41, 42, 43], acceptable=2); add_guess(tree, [41, 42, 44], acceptable=2)
        >>> tree.tokens, tree.parents, tree.verifiable
        ([41, 42, 43, 44], [-1, 0, 1, 1], [True, True, False, False])
    """
    nodes = tree.add_chain(guess[:acceptable], source="lookahead")
    parent = nodes[-1] if nodes else -1
    for token in guess[acceptable:]:
        parent = tree.add_node(token, parent, False, "lookahead")


@dataclass(frozen=True)
class LookaheadSettings(DecoderSettings):
    level: int = knob(5, int, minimum=3)
    window: int = knob(7, int, minimum=1)
    guess: int = knob(7, int, minimum=1)
    seed: int = knob(10, int)
    lade_commit: bool = knob(False, bool)  # True: LADE's commit rule, at most N-1 tokens per forward (module docstring)


class LookaheadDecoder(Decoder):
    """Lookahead Decoding: Jacobi window + n-gram pool + verification branch, in one forward per step.

    Example::

        decoder = LookaheadDecoder(level=5, window=7, guess=7, seed=10)
        trace = ReplayEngine(adapter, decoder, clock).replay(session, audio)
        # forwards 1-3 of the session warm the window up; afterwards each forward feeds 28 window tokens
        # plus up to 7 guesses of 4 tokens for the last committed token.
    """

    name = "lookahead"
    Settings = LookaheadSettings

    def __init__(self, name: str | None = None, **settings):
        super().__init__(name, **settings)
        self.start_session(None)

    def start_session(self, session) -> None:
        self.pool = NgramPool(self.settings.guess)
        self.window: JacobiWindow | None = None  # drawn from the context at the session's first forward
        self._window_nodes: list[list[int]] = []
        self._root: int | None = None

    def propose(self, step) -> DraftTree:
        if self.window is None:
            self.window = self._initial_window(step.context_tokens(), step.adapter.vocab_size)
        tree = DraftTree()
        self._window_nodes = self.window.add_to(tree)
        self._root = step.root_token()
        if self.window.is_full and self._root is not None:
            self._add_guesses(tree, step)
        return tree

    def _add_guesses(self, tree: DraftTree, step) -> None:
        """The verification branch: the pool's n-grams for the root, cut to the chunk, as a trie (with
        ``lade_commit``, only a guess's first N-2 tokens can be accepted)."""
        acceptable = self.settings.level - 2 if self.settings.lade_commit else self.settings.level - 1
        for ngram in self.pool.candidates(self._root):
            add_guess(tree, trim_draft(ngram, step.protocol, len(step.output)), acceptable)

    def observe(self, step, result: Verification) -> None:
        newest = [1 + node for node in self._window_nodes[-1]]
        predictions = result.logits[newest].argmax(dim=-1).tolist()
        if self.window.is_full:
            for key, ngram in self.window.ngrams(self._root, predictions):
                self.pool.add(key, ngram)
        self.window.advance(predictions)

    def _initial_window(self, context: Sequence[int], vocab_size: int) -> JacobiWindow:
        rng = random.Random(self.settings.seed)
        count = self.settings.window + self.settings.level - 3
        draw = (lambda: rng.choice(context)) if context else (lambda: rng.randrange(vocab_size))
        return JacobiWindow(self.settings.level, self.settings.window, [draw() for _ in range(count)])
