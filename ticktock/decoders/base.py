"""The decoder contract: what a decoding method does with a chunk, and how it is counted.

The engine gives a decoder two kinds of work:

(a) ``decode_chunk(step)``: post-audio work. The chunk's audio has arrived and is encoded
    (``step.inputs``); the decoder must commit the chunk's output tokens (decision, content, terminator)
    through ``step.verify`` / ``step.commit``, which record every target forward and its tokens.
(b) ``idle(window)``: optional work after a chunk is done and before the next chunk's audio arrives,
    within ``window.budget_ms``. Forwards made here are logged in phase ``draft`` against the next chunk.

Every decoder is a draft-and-verify loop; autoregressive decoding is the loop with empty drafts::

    prefix = step.inputs.segments()                 # [<|chunk_eos|> </unit> <unit>] + audio + tool text
    while not step.done:
        result = step.verify(prefix, self.propose(step))   # ONE target forward over prefix + draft tree
        self.observe(step, result)
        prefix = [[step.output[-1]]]                # the last committed token is fed next

``step.verify`` accepts, along the draft tree, each node whose token equals the token the selector commits
at its parent (greedy argmax, or the keyed sample; see ``selection.py``), commits the accepted tokens plus
the target's own next token, and compacts the KV cache to the accepted path. Cache convention: after a
chunk, the cache holds every committed token except the chunk's last one (fed with ``</unit>`` next).

Counters per chunk (raw, rates are derived by the tables): post-audio forwards, tokens committed per
forward, draft tokens offered for verification, draft tokens accepted, idle draft forwards and tokens.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from ticktock.adapters.base import ModelAdapter, Segment, TreeLayout
from ticktock.clocks.base import Stopwatch


@dataclass
class ForwardRecord:
    """One target forward, as written to forwards.parquet."""

    chunk_index: int
    phase: str  # "post_audio" or "draft"
    query_tokens: int
    context_tokens: int
    wall_ms: float
    charged_ms: float
    tokens_committed: int = 0
    draft_tokens: int = 0
    tree: bool = False


@dataclass
class ChunkInputs:
    """The known inputs of a chunk: ``head`` tokens, the audio embeddings, then ``tail`` tokens.

    ``head`` = the previous chunk's last token + ``</unit>`` (absent for chunk 0) + ``<unit>``;
    ``tail`` = injected text (a tool response); ``audio`` is None until the audio is encoded.
    """

    head: list[int]
    tail: list[int] = field(default_factory=list)
    audio: Segment | None = None

    def segments(self, audio: Segment | None = None) -> list:
        audio = self.audio if audio is None else audio
        return [s for s in (self.head, audio, self.tail) if s is not None and len(s)]


@dataclass
class DraftTree:
    """Draft tokens hanging off the root (the last query position of the prefix).

    ``parents[i] == -1``: node i follows the root. ``verifiable[i]`` False marks helper nodes that ride in
    the forward but are never accepted (Lookahead's Jacobi window). ``add_chain`` inserts like a trie, so a
    token never appears twice under the same parent.

    Example::

        >>> t = DraftTree(); t.add_chain([5, 6, 7]); t.add_chain([5, 9])
        [0, 1, 2]
        [0, 3]
        >>> t.parents
        [-1, 0, 1, 0]
    """

    tokens: list[int] = field(default_factory=list)
    parents: list[int] = field(default_factory=list)
    verifiable: list[bool] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.tokens)

    def add_node(self, token: int, parent: int = -1, verifiable: bool = True, source: str = "") -> int:
        self.tokens.append(int(token))
        self.parents.append(parent)
        self.verifiable.append(verifiable)
        self.sources.append(source)
        return len(self.tokens) - 1

    def add_chain(self, tokens: Sequence[int], parent: int = -1, source: str = "") -> list[int]:
        nodes = []
        for token in tokens:
            existing = self.child(parent, token)
            parent = existing if existing is not None else self.add_node(token, parent, True, source)
            nodes.append(parent)
        return nodes

    def child(self, parent: int, token: int) -> int | None:
        for i, (p, t, ok) in enumerate(zip(self.parents, self.tokens, self.verifiable)):
            if p == parent and t == token and ok:
                return i
        return None

    def children(self) -> dict[int, dict[int, int]]:
        """parent -> {token: first verifiable child with that token}."""
        index: dict[int, dict[int, int]] = {}
        for i, (p, t, ok) in enumerate(zip(self.parents, self.tokens, self.verifiable)):
            if ok:
                index.setdefault(p, {}).setdefault(t, i)
        return index

    def is_chain(self) -> bool:
        return all(p == i - 1 for i, p in enumerate(self.parents))

    def num_verifiable(self) -> int:
        return sum(self.verifiable)


@dataclass
class Verification:
    """Outcome of one verify forward. ``logits[0]`` is the root row, ``logits[1 + i]`` node i's row."""

    committed: list[int]
    accepted_nodes: list[int]
    logits: Any
    draft: DraftTree


@dataclass
class ChunkCounters:
    num_draft_tokens: int = 0
    num_accepted_draft_tokens: int = 0
    num_idle_forwards: int = 0
    num_idle_tokens: int = 0
    diagnostics: dict = field(default_factory=dict)


class Phase:
    """Timed access to the target model for one phase of work (post-audio, or an idle window)."""

    phase_name = "post_audio"

    def __init__(self, adapter: ModelAdapter, selector, stopwatch: Stopwatch, log: list, chunk_index: int):
        self.adapter = adapter
        self.selector = selector
        self.protocol = adapter.protocol
        self.stopwatch = stopwatch
        self.log = log
        self.chunk_index = chunk_index
        self.encode_wall_ms = 0.0

    def forward(self, segments, tree: TreeLayout | None = None, logits_from: int = 0, draft_tokens: int = 0):
        import time

        context = self.adapter.cache_length
        query = sum(self.adapter.segment_length(s) for s in segments)
        self.adapter.synchronize()
        start = time.perf_counter()
        logits = self.adapter.forward(segments, tree, logits_from)
        self.adapter.synchronize()
        wall = (time.perf_counter() - start) * 1000.0
        charged = self.stopwatch.charge_forward(query, context, wall)
        self.log.append(
            ForwardRecord(self.chunk_index, self.phase_name, query, context, wall, charged, 0, draft_tokens, tree is not None)
        )
        return logits

    def encode(self, samples, peek: bool = False):
        import time

        start = time.perf_counter()
        embeds = self.adapter.peek_audio(samples) if peek else self.adapter.encode_audio(samples)
        self.adapter.synchronize()
        wall = (time.perf_counter() - start) * 1000.0
        self.encode_wall_ms += wall
        self.stopwatch.charge_encode(wall)
        return embeds

    def elapsed_ms(self) -> float:
        return self.stopwatch.elapsed_ms()


class ChunkStep(Phase):
    """Decoding of one chunk's output: ``output`` holds the tokens committed so far.

    The engine makes one per chunk for the post-audio work. ``IdleWindow.decoding`` makes one in the
    ``draft`` phase, so a decoder can produce a hypothesis output with the same machinery (its forwards
    are logged and timed as idle work).
    """

    def __init__(self, adapter, selector, stopwatch, log, chunk_index: int, inputs: ChunkInputs, history: list[int],
                 phase_name: str = "post_audio", output: Sequence[int] = ()):
        super().__init__(adapter, selector, stopwatch, log, chunk_index)
        self.phase_name = phase_name
        self.inputs = inputs
        self.history = history  # the session's text tokens before this chunk's output (audio excluded)
        self.output: list[int] = list(output)
        self.counters = ChunkCounters()

    @property
    def done(self) -> bool:
        return self.protocol.is_done(self.output)

    @property
    def num_forwards(self) -> int:
        return sum(1 for r in self.log if r.phase == self.phase_name and r.chunk_index == self.chunk_index)

    def root_token(self) -> int | None:
        """Token id at the root of the next forward: the last committed token, or on the audio prefill the
        last known input when it is text (a tool response); None when that position is an audio embedding."""
        if self.output:
            return self.output[-1]
        last = self.inputs.segments()[-1]
        return int(last[-1]) if isinstance(last, list) else None

    def context_tokens(self) -> list[int]:
        """The session's committed text tokens so far, this chunk's output included."""
        return self.history + self.output

    def commit(self, tokens: Sequence[int]) -> None:
        self.output.extend(int(t) for t in tokens)
        self.log[-1].tokens_committed += len(tokens)

    def verify(self, prefix: Sequence[Segment], draft: DraftTree | None = None) -> Verification:
        """One forward over ``prefix`` + ``draft``; commit the accepted path and the target's next token."""
        draft = draft if draft is not None and len(draft) else DraftTree()
        prefix_length = sum(self.adapter.segment_length(s) for s in prefix)
        start = self.adapter.cache_length
        tree = None if draft.is_chain() else _layout(prefix_length, draft)
        segments = list(prefix) + ([list(draft.tokens)] if len(draft) else [])
        logits = self.forward(segments, tree, logits_from=prefix_length - 1, draft_tokens=draft.num_verifiable())
        committed, path = self._walk(logits, draft)
        kept = path[:-1] if len(committed) == len(path) else path  # the chunk's last token stays out
        self.adapter.keep(start + prefix_length, kept)
        self.commit(committed)
        self.counters.num_draft_tokens += draft.num_verifiable()
        self.counters.num_accepted_draft_tokens += len(path)
        return Verification(committed, path, logits, draft)

    def _walk(self, logits, draft: DraftTree) -> tuple[list[int], list[int]]:
        children = draft.children()
        node, committed, path = -1, [], []
        while True:
            token = self.selector.choose(logits[node + 1], self.output + committed)
            committed.append(token)
            nxt = children.get(node, {}).get(token)
            if nxt is None:
                break
            path.append(nxt)
            node = nxt
            if self.protocol.is_done(self.output + committed):
                break
        return committed, path


def trim_draft(tokens: Sequence[int], protocol, committed: int) -> list[int]:
    """Cut a draft so it never runs past the chunk: after its first terminator, and at the token cap."""
    room = max(protocol.max_tokens_per_chunk - committed - 1, 0)
    out: list[int] = []
    for token in tokens[:room]:
        out.append(int(token))
        if token in protocol.terminators:
            break
    return out


def _layout(prefix_length: int, draft: DraftTree) -> TreeLayout:
    parents = list(range(-1, prefix_length - 1))
    parents += [prefix_length - 1 if p < 0 else prefix_length + p for p in draft.parents]
    return TreeLayout(tuple(parents))


class IdleWindow(Phase):
    """The idle time after a chunk is done, before the next chunk's audio arrives.

    ``next_inputs`` are the next chunk's known inputs (no audio yet); ``next_samples`` its length in
    samples. Work past ``budget_ms`` is carried into the next chunk's post-audio latency by the engine.
    """

    phase_name = "draft"

    def __init__(self, adapter, selector, stopwatch, log, chunk_index, budget_ms: float, next_inputs: ChunkInputs,
                 next_samples: int, history: list[int]):
        super().__init__(adapter, selector, stopwatch, log, chunk_index)
        self.budget_ms = budget_ms
        self.next_inputs = next_inputs
        self.next_samples = next_samples
        self.history = history

    def remaining_ms(self) -> float:
        return self.budget_ms - self.elapsed_ms()

    def silence(self, fresh: bool = False):
        """Embeddings of a chunk of silence for the next chunk.

        Default: the front-end applied to zeros after zeros, computed once per adapter and cached (no
        cost). ``fresh``: the front-end applied to zeros from the current streaming state (the exact
        "next second is silent" counterfactual; charged as one audio encoding).
        """
        import numpy as np

        if fresh:
            return self.encode(np.zeros(self.next_samples, dtype=np.float32), peek=True)
        return self.adapter.silence_audio(self.next_samples)

    def decoding(self, output: Sequence[int] = ()) -> ChunkStep:
        """A hypothesis decoding of the next chunk in this window (forwards logged as ``draft``).

        ``output`` pre-commits tokens without a forward (e.g. a forced runner-up first token).
        """
        return ChunkStep(self.adapter, self.selector, self.stopwatch, self.log, self.chunk_index, self.next_inputs,
                         self.history, phase_name=self.phase_name, output=output)


class Decoder:
    """Base decoder: the draft-and-verify loop. Subclasses override ``propose`` / ``observe`` / ``idle``.

    ``lossless``: the decoder commits exactly the tokens AR commits (checked by the tables).
    """

    name = "decoder"
    lossless = True

    def start_session(self, session) -> None:
        """Called before a session's first chunk (``session`` is a ticktock.manifest.Session)."""

    def decode_chunk(self, step: ChunkStep) -> None:
        prefix = step.inputs.segments()
        while not step.done:
            result = step.verify(prefix, self.propose(step))
            self.observe(step, result)
            prefix = [[step.output[-1]]]

    def propose(self, step: ChunkStep) -> DraftTree | None:
        """The draft for the next forward (None = a plain autoregressive step)."""
        return None

    def observe(self, step: ChunkStep, result: Verification) -> None:
        """Feedback after each verify forward (e.g. update n-gram pools)."""

    def idle(self, window: IdleWindow) -> None:
        """Optional work in the idle window."""

    def diagnostics(self, step: ChunkStep) -> dict:
        """Per-chunk diagnostic columns (draft source, matches, pool hits); merged into the chunk row."""
        return step.counters.diagnostics

    def describe(self) -> dict:
        return {"name": self.name}
