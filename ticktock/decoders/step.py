"""The chunk step: timed, logged access to the target model for one chunk's work.

``Phase`` runs forwards and audio encodings through the run's clock (``Stopwatch``), logs every forward
(``ForwardRecord``) and counts it (``ChunkCounters``). ``ChunkStep`` is the post-audio decoding of one
chunk: ``verify`` runs one forward over a prefix and a draft tree, commits the accepted path plus the
target's own next token, and compacts the KV cache to it. See ``ticktock.decoders.contract`` for the loop
every decoder runs over it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from ticktock.adapters.base import ModelAdapter, Segment, TreeLayout
from ticktock.clocks.base import ENCODE, FORWARD, DeviceWork, Stopwatch
from ticktock.decoders.counters import DRAFT, EARLY_PREFILL, POST_AUDIO, ChunkCounters, ForwardRecord
from ticktock.decoders.trees import DraftTree, Verification, tree_layout


@dataclass
class ChunkInputs:
    """The known inputs of a chunk: ``head`` tokens, the audio embeddings, then ``tail`` tokens.

    ``head`` = the previous chunk's last token + ``</unit>`` (absent for chunk 0) + ``<unit>``;
    ``tail`` = injected text (a tool response); ``audio`` is None until the audio is encoded.
    """

    head: list[int]
    tail: list[int] = field(default_factory=list)
    audio: Segment | None = None
    prefilled_samples: int = 0  # early prefill: the chunk's first samples, already encoded and in the cache
    head_fed_at: int | None = None  # early prefill: the cache position where ``head`` was fed (None: not yet)

    def segments(self, audio: Segment | None = None) -> list:
        """What is still to be fed for this chunk: ``head`` (unless early prefill fed it), the audio (the rest of
        it after an early prefill), ``tail``."""
        audio = self.audio if audio is None else audio
        head = self.head if self.head_fed_at is None else None
        return [s for s in (head, audio, self.tail) if s is not None and len(s)]




class Phase:
    """Timed access to the target model for one phase of work on one chunk (post-audio, or its idle window).

    Built from the session's replay state (``ticktock.replay.session_state.SessionState``): the adapter, the
    session's token selector, the forward log and the chunk's counters all come from there.
    """

    phase_name = POST_AUDIO

    def __init__(self, state, chunk_index: int, stopwatch: Stopwatch):
        self.state = state
        self.adapter: ModelAdapter = state.adapter
        self.selector = state.selector
        self.protocol = state.adapter.protocol
        self.stopwatch = stopwatch
        self.chunk_index = chunk_index
        self.counters: ChunkCounters = state.counters_for(chunk_index)
        self.encode_wall_ms = 0.0

    @property
    def inputs(self) -> ChunkInputs:
        """The chunk's known inputs (head, tail; ``audio`` once encoded), built once by the session state."""
        return self.state.inputs_for(self.chunk_index)

    @property
    def history(self) -> tuple[int, ...]:
        """The session's text tokens before this chunk's output (audio excluded; read-only)."""
        return self.state.history

    def forward(self, segments, tree: TreeLayout | None = None, logits_from: int = 0, draft_tokens: int = 0,
                phase: str | None = None):
        """One target forward through this phase's stopwatch, logged (``phase``: the log's label, default this
        phase's; an early prefill in an idle window is logged as ``early_prefill``)."""
        adapter = self.adapter
        context = adapter.cache_length
        query = sum(adapter.segment_length(s) for s in segments)
        work = DeviceWork(FORWARD, lambda: adapter.forward(segments, tree, logits_from), adapter, query, context,
                          call=(segments, tree, logits_from), hypothesis=self._hypothesis(),
                          early_prefill=phase == EARLY_PREFILL)
        done = self.stopwatch.run(work)
        self.state.forwards.append(ForwardRecord(self.chunk_index, phase or self.phase_name, query, context,
                                                 done.wall_ms, done.charged_ms, 0, draft_tokens, tree is not None,
                                                 done.batch_size, done.waited_ms, self.stopwatch.elapsed_ms()))
        self.counters.count_forward(self.phase_name, query, done.waited_ms)
        return done.result

    def _hypothesis(self) -> tuple[int, ...]:
        return ()

    def encode(self, samples, peek: bool = False, fraction: float = 1.0, early_prefill: bool = False,
               silence_after: int = 0):
        """Encode audio through this phase's stopwatch (``peek``: without advancing the front-end); ``fraction``:
        the share of the chunk's audio it is (what a cost profile charges for a piece: ``encode_fixed_ms``);
        ``early_prefill``: the encoding feeds arrived audio into the cache before the chunk is complete;
        ``silence_after``: in the same step, also encode that many samples of silence from the state the audio leaves
        (rolled back), and return ``(embeddings, silence embeddings)`` (``DeviceWork.silence_after``)."""
        adapter = self.adapter

        def run():
            return work.with_silence(adapter.peek_audio(samples) if peek else adapter.encode_audio(samples))

        work = DeviceWork(ENCODE, run, adapter, call=(samples, peek), audio_fraction=fraction,
                          early_prefill=early_prefill, first_audio=self.chunk_index == 0, silence_after=silence_after)
        done = self.stopwatch.run(work)
        self.encode_wall_ms += done.wall_ms
        if self.phase_name == POST_AUDIO:
            self.counters.device_wait_ms += done.waited_ms
        return done.result

    def elapsed_ms(self) -> float:
        return self.stopwatch.elapsed_ms()


class ChunkStep(Phase):
    """Decoding of one chunk's output: ``output`` holds the tokens committed so far.

    The engine makes one per chunk for the post-audio work (``SessionState.chunk_step``).
    ``IdleWindow.decoding`` makes one in the ``draft`` phase, so a decoder can produce a hypothesis output
    with the same machinery (its forwards are logged and timed as idle work; its verifications are not
    counted as the chunk's drafts).
    """

    def __init__(self, state, chunk_index: int, stopwatch: Stopwatch, phase_name: str = POST_AUDIO,
                 output: Sequence[int] = ()):
        super().__init__(state, chunk_index, stopwatch)
        self.phase_name = phase_name
        self.output: list[int] = list(output)

    @property
    def done(self) -> bool:
        return self.protocol.is_done(self.output)

    def _hypothesis(self) -> tuple[int, ...]:
        return tuple(self.output) if self.phase_name == DRAFT else ()

    def root_token(self) -> int | None:
        """Token id at the root of the next forward: the last committed token, or on the audio prefill the
        last known input when it is text (a tool response); None when that position is an audio embedding."""
        if self.output:
            return self.output[-1]
        last = self.inputs.segments()[-1]
        return int(last[-1]) if isinstance(last, list) else None

    def context_tokens(self) -> list[int]:
        """The session's committed text tokens so far, this chunk's output included."""
        return [*self.history, *self.output]

    def commit(self, tokens: Sequence[int]) -> None:
        self.output.extend(int(t) for t in tokens)
        self.state.forwards[-1].tokens_committed += len(tokens)

    def verify(self, prefix: Sequence[Segment], draft: DraftTree | None = None,
               cost_cap: float | None = None) -> Verification:
        """One forward over ``prefix`` + ``draft``; commit the accepted path and the target's next token. With
        ``cost_cap``, the draft is first cut to what the forward can afford (``affordable``)."""
        draft = draft if draft is not None and len(draft) else DraftTree()
        prefix_length = sum(self.adapter.segment_length(s) for s in prefix)
        draft = self.affordable(draft, prefix_length, cost_cap)
        start = self.adapter.cache_length
        tree = None if draft.is_chain() else tree_layout(prefix_length, draft)
        segments = list(prefix) + ([list(draft.tokens)] if len(draft) else [])
        logits = self.forward(segments, tree, logits_from=prefix_length - 1, draft_tokens=draft.num_verifiable())
        committed, path = self._walk(logits, draft)
        kept = path[:-1] if len(committed) == len(path) else path  # the chunk's last token stays out
        self.adapter.keep(start + prefix_length, kept)
        self.commit(committed)
        if self.phase_name == POST_AUDIO:
            self.counters.count_verification(draft, path)
        return Verification(committed, path, logits, draft)

    def affordable(self, draft: DraftTree, prefix_length: int, cost_cap: float | None) -> DraftTree:
        """``draft`` cut to its first nodes (``DraftTree.first``: the drafts added first) so that the forward over the
        prefix and them is expected to cost at most ``cost_cap`` times a forward of the prefix and one token, on this
        phase's clock (``Stopwatch.forward_estimate_ms``). Whole when it fits, when ``cost_cap`` is None, or while
        nothing is known of the clock's costs. Lossless either way: fewer draft tokens only change how many forwards
        the same output takes.

        Where a forward's cost hardly grows with its tokens (a GPU) a cap of 2 keeps hundreds of nodes; where it grows
        with every token (a CPU: about 5 ms plus 0.14 ms a token for the embedded model on 2 cores) it keeps a few
        dozen, so a wide tree never costs more than the forwards it can save.
        """
        if cost_cap is None or len(draft) <= 1:
            return draft
        context = self.adapter.cache_length
        estimate = self.stopwatch.forward_estimate_ms
        base = estimate(prefix_length + 1, context)
        if base is None:
            return draft
        budget = cost_cap * base
        if estimate(prefix_length + len(draft), context) <= budget:
            return draft
        fits, too_many = 1, len(draft)  # (the first node always fits: cost_cap >= 1)
        while too_many - fits > 1:
            middle = (fits + too_many) // 2
            if estimate(prefix_length + middle, context) <= budget:
                fits = middle
            else:
                too_many = middle
        return draft.first(fits)

    def _walk(self, logits, draft: DraftTree) -> tuple[list[int], list[int]]:
        children = draft.children()
        node, committed, path = -1, [], []
        while True:
            token = self.selector.choose(logits[node + 1], self.output + committed, self.chunk_index)
            committed.append(token)
            nxt = children.get(node, {}).get(token)
            if nxt is None:
                break
            path.append(nxt)
            node = nxt
            if self.protocol.is_done(self.output + committed):
                break
        return committed, path
