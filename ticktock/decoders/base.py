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

Both are built by the session's replay state (``ticktock.session_state``), which owns the history and the
chunk's inputs: a decoder reads ``step.history`` / ``step.inputs`` and never changes them. Everything
counted for a chunk goes through one channel, ``step.counters`` (``ChunkCounters``: forwards, draft tokens
offered and accepted, the audio-pass draft source, lookup hits, the idle window's use), which the
result rows read as they are. A decoder's settings are a frozen ``DecoderSettings`` dataclass, checked
in one place (``knob``), and ``describe()`` reports them.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Sequence

from ticktock.adapters.base import ModelAdapter, Segment, TreeLayout
from ticktock.clocks.base import ENCODE, FORWARD, DeviceWork, Stopwatch
from ticktock.errors import ConfigError


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
    batch_size: int = 1  # sessions whose forwards ran in the same device step (concurrency.batching)
    device_wait_ms: float = 0.0  # time it waited for the device while other sessions' work ran
    end_ms: float = 0.0  # the phase's clock time when it finished (from the phase's start: ``Stopwatch.elapsed_ms``)


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


POST_AUDIO = "post_audio"
DRAFT = "draft"


@dataclass
class ChunkCounters:
    """Everything counted for one chunk, in one place: the result row's counters come only from here.

    Post-audio forwards (after the chunk's audio arrived): ``post_audio_forwards``; ``draft_tokens``
    offered in them and ``accepted_draft_tokens``; ``lookup_hits``: forwards after the chunk's first (the
    audio pass) that accepted at least one draft token (the same meaning for every decoder);
    ``draft_source``: the source of the draft tokens accepted in the audio pass (``"none"`` when a draft
    was offered there and nothing was accepted; None when no draft was offered).

    The idle window that drafted this chunk (before its audio arrived): ``window_budget_ms`` on the run's
    clock, ``window_used_ms`` charged in it, ``window_wall_ms`` measured, ``window_forwards`` and the
    ``window_query_tokens`` they fed.

    Sharing a device (``concurrency.sessions`` > 1): ``device_wait_ms``, the time the chunk's post-audio work
    waited for the device while other sessions' work ran (0 for a session alone).

    Context: ``context_tokens`` in the cache when the chunk's post-audio work began; ``evicted_tokens`` removed
    from it just before the chunk by the model's context policy (``ticktock.context``).

    Silence-draft outcome (``record_silence_draft``; SL and the oracle probe): ``draft_full_match`` (the
    draft was complete and equals the output) and ``first_token_changed``; None for other decoders.

    The chunk's audio arriving during its idle window: ``window_waited_ms`` (time let pass with no work, waiting
    for it), ``prefilled_ms`` (its audio fed into the cache early); SL's ``hypotheses_drafted`` and
    ``draft_arrived_fraction`` (real audio in the hypothesis whose draft the audio pass accepted).

    Example::

        >>> c = ChunkCounters(); c.record_silence_draft([3, 9, 4], complete=True, output=[3, 9, 4]); c.draft_full_match
        True
    """

    post_audio_forwards: int = 0
    draft_tokens: int = 0
    accepted_draft_tokens: int = 0
    lookup_hits: int = 0
    draft_source: str | None = None
    draft_full_match: bool | None = None
    first_token_changed: bool | None = None
    window_budget_ms: float = 0.0
    window_used_ms: float = 0.0
    window_wall_ms: float = 0.0
    window_forwards: int = 0
    window_query_tokens: int = 0
    context_tokens: int = 0
    evicted_tokens: int = 0
    device_wait_ms: float = 0.0
    window_waited_ms: float = 0.0
    prefilled_ms: float = 0.0
    hypotheses_drafted: int | None = None
    draft_arrived_fraction: float | None = None

    def count_forward(self, phase: str, query_tokens: int, waited_ms: float = 0.0) -> None:
        if phase == POST_AUDIO:
            self.post_audio_forwards += 1
            self.device_wait_ms += waited_ms
        else:
            self.window_forwards += 1
            self.window_query_tokens += query_tokens

    def count_verification(self, draft: "DraftTree", accepted_nodes: list[int]) -> None:
        """A post-audio verify forward: what it offered, what it accepted, and from which source."""
        self.draft_tokens += draft.num_verifiable()
        self.accepted_draft_tokens += len(accepted_nodes)
        if self.post_audio_forwards == 1:  # the audio pass
            if len(draft):
                self.draft_source = draft.sources[accepted_nodes[0]] if accepted_nodes else "none"
        elif accepted_nodes:
            self.lookup_hits += 1

    def record_silence_draft(self, draft: Sequence[int], complete: bool, output: Sequence[int]) -> None:
        self.draft_full_match = bool(complete) and list(draft) == list(output)
        self.first_token_changed = list(draft[:1]) != list(output[:1])


class Phase:
    """Timed access to the target model for one phase of work on one chunk (post-audio, or its idle window).

    Built from the session's replay state (``ticktock.session_state.SessionState``): the adapter, the
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
                          call=(segments, tree, logits_from), hypothesis=self._hypothesis())
        done = self.stopwatch.run(work)
        self.state.forwards.append(ForwardRecord(self.chunk_index, phase or self.phase_name, query, context,
                                                 done.wall_ms, done.charged_ms, 0, draft_tokens, tree is not None,
                                                 done.batch_size, done.waited_ms, self.stopwatch.elapsed_ms()))
        self.counters.count_forward(self.phase_name, query, done.waited_ms)
        return done.result

    def _hypothesis(self) -> tuple[int, ...]:
        return ()

    def encode(self, samples, peek: bool = False, fraction: float = 1.0):
        """Encode audio through this phase's stopwatch (``peek``: without advancing the front-end); ``fraction``:
        the share of the chunk's audio it is (what a cost profile charges for a piece: ``encode_fixed_ms``)."""
        adapter = self.adapter
        work = DeviceWork(ENCODE, lambda: adapter.peek_audio(samples) if peek else adapter.encode_audio(samples), adapter,
                          audio_fraction=fraction)
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
        if self.phase_name == POST_AUDIO:
            self.counters.count_verification(draft, path)
        return Verification(committed, path, logits, draft)

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


DRAFT_SELECTIONS = ("greedy", "independent", "shared")  # how a hypothesis chooses tokens under sampling


class ArrivingAudio:
    """The next chunk's audio as it streams in during the idle window before it: only what has arrived.

    The window opens ``budget_ms`` before the chunk's audio is complete, so at ``elapsed_ms`` into the window
    (on the run's clock: the modeled charges, or measured wall time) the chunk's first
    ``duration_ms - budget_ms + elapsed_ms`` of audio have arrived (all of it once the window is over). The
    samples are private: ``arrived`` returns a copy of the arrived ones, never a sample from later.

    Example (a 1 s chunk, a window of 600 ms: 400 ms of its audio have already arrived when it opens)::

        >>> import numpy as np
        >>> audio = ArrivingAudio(np.arange(16000, dtype=np.float32), budget_ms=600.0)
        >>> audio.arrived_ms(0.0), audio.arrived_ms(250.0), len(audio.arrived(250.0)), audio.arrived_ms(900.0)
        (400.0, 650.0, 10400, 1000.0)
    """

    def __init__(self, samples, budget_ms: float, sample_rate: int = 16_000):
        import numpy as np

        self._samples = np.asarray(samples, dtype=np.float32)
        self.sample_rate = sample_rate
        self.num_samples = len(self._samples)
        self.duration_ms = 1000.0 * self.num_samples / sample_rate
        self.opened_at_ms = max(0.0, self.duration_ms - budget_ms)  # chunk time when the window opened

    def arrived_ms(self, elapsed_ms: float) -> float:
        return min(self.duration_ms, max(0.0, self.opened_at_ms + elapsed_ms))

    def samples_by(self, chunk_ms: float) -> int:
        """How many of the chunk's samples have arrived at ``chunk_ms`` into the chunk."""
        return min(self.num_samples, int(chunk_ms * self.sample_rate // 1000))

    def arrived(self, elapsed_ms: float, start: int = 0):
        """A copy of the arrived samples from ``start`` on, at ``elapsed_ms`` into the window."""
        return self._samples[start: max(start, self.samples_by(self.arrived_ms(elapsed_ms)))].copy()


class IdleWindow(Phase):
    """The idle time after a chunk is done, before the next chunk's audio arrives; drafts that chunk.

    ``chunk_index`` is the chunk being drafted; ``next_inputs`` are its known inputs (no audio yet: the same
    object its post-audio step will get); ``next_samples`` its length in samples. Work past ``budget_ms`` is
    carried into that chunk's post-audio latency by the engine. On a device shared with other sessions a
    forward or encoding here may raise ``ticktock.clocks.base.WindowClosed`` instead of running (the chunk's
    audio arrived while it waited); the engine rolls the model state back if the decoder does not catch it.

    The chunk's audio streams in while the window runs (``arriving``, an ``ArrivingAudio``): ``arrived_audio``
    is what has arrived by now on the run's clock, ``wait_for_audio`` lets time pass until more has, and
    ``prefill_arrived`` feeds its final embeddings into the cache (early prefill).
    """

    phase_name = DRAFT

    def __init__(self, state, chunk_index: int, stopwatch: Stopwatch, budget_ms: float, next_samples: int,
                 arriving: ArrivingAudio | None = None):
        super().__init__(state, chunk_index, stopwatch)
        self.budget_ms = budget_ms
        self.next_samples = next_samples
        self.arriving = arriving

    @property
    def next_inputs(self) -> ChunkInputs:
        return self.inputs

    def remaining_ms(self) -> float:
        return self.budget_ms - self.elapsed_ms()

    # ---------------------------------------------------------------------------- arriving audio

    def arrived_ms(self) -> float:
        """Milliseconds of the next chunk's audio that have arrived by now (0 when the window has no audio)."""
        return self.arriving.arrived_ms(self.elapsed_ms()) if self.arriving is not None else 0.0

    def arrived_audio(self, start: int = 0):
        """The samples of the next chunk that have arrived by now, from sample ``start`` on (a copy)."""
        if self.arriving is None:
            raise ValueError("this idle window has no arriving audio")
        return self.arriving.arrived(self.elapsed_ms(), start)

    def wait_for_audio(self, chunk_ms: float, reserve_ms: float = 0.0) -> bool:
        """Let time pass with no work until ``chunk_ms`` of the next chunk's audio have arrived, keeping
        ``reserve_ms`` of the window for the work to follow; False (and no wait) when that does not fit before
        the window's end."""
        needed = max(0.0, chunk_ms - self.arrived_ms())
        if needed + reserve_ms >= self.remaining_ms():
            return False
        self.stopwatch.wait(needed)
        return True

    def follow_audio(self, every_ms: float, step) -> int:
        """Call ``step()`` each time another ``every_ms`` of the next chunk's audio has arrived, while the window
        lasts; time passes with no work in between. A step starts only when one as costly as the last one still
        ends before the window does (nothing is carried into the chunk's latency by waiting). Returns the steps run.

        Example: early prefill every 200 ms of audio (``Decoder.idle``)::

            window.follow_audio(200.0, window.prefill_arrived)
        """
        steps, cost = 0, 0.0
        mark = self.arrived_ms()
        while self.wait_for_audio(mark + every_ms, reserve_ms=cost):
            began, mark = self.elapsed_ms(), self.arrived_ms()
            step()
            cost, steps = self.elapsed_ms() - began, steps + 1
        return steps

    @property
    def unfed_samples(self) -> int:
        """Samples of the next chunk not in the cache yet (all of them unless early prefill fed some)."""
        return self.next_samples - self.inputs.prefilled_samples

    def prefill_arrived(self) -> int:
        """Early prefill: feed the next chunk's embeddings that are final by now into the cache, committed (they
        are what its post-audio pass would feed), with the chunk's head first if not fed yet. Only for an adapter
        whose front-end is causal at ``causal_granularity_ms``; the chunk's last piece is always left to the
        post-audio pass (it completes when the window ends). One encoding (charged by its share of the chunk)
        and one forward, logged as ``early_prefill``; returns the samples fed (0: nothing new was final)."""
        granularity = self.adapter.causal_granularity_ms
        if not granularity or self.arriving is None:
            return 0
        inputs = self.inputs
        final = min(int(self.arrived_ms() // granularity), int(self.arriving.duration_ms // granularity) - 1)
        upto = self.arriving.samples_by(final * granularity)
        if upto <= inputs.prefilled_samples:
            return 0
        samples = self.arrived_audio(inputs.prefilled_samples)[: upto - inputs.prefilled_samples]
        embeds = self.encode(samples, fraction=len(samples) / self.next_samples)
        start = self.adapter.cache_length
        segments = [inputs.head, embeds] if inputs.head_fed_at is None else [embeds]
        length = sum(self.adapter.segment_length(s) for s in segments)
        self.forward(segments, logits_from=length, phase="early_prefill")
        if inputs.head_fed_at is None:
            inputs.head_fed_at = start
        inputs.prefilled_samples = upto
        return len(samples)

    def silence(self, fresh: bool = False):
        """Embeddings of a chunk of silence for the next chunk.

        Default: the front-end applied to zeros after zeros, computed once per adapter and cached (no
        cost). ``fresh``, and always for an adapter whose silence embeddings depend on its streaming state
        (``ModelAdapter.silence_depends_on_state``: MiniCPM-o's dynamic mel floor, prefix frames and encoder
        KV): the front-end applied to zeros from the current streaming state, then rolled back (the exact
        "next second is silent" counterfactual; charged to this window as one audio encoding).
        """
        import numpy as np

        unfed = self.unfed_samples  # all of the chunk, unless early prefill fed its first part
        if fresh or self.adapter.silence_depends_on_state or unfed < self.next_samples:
            return self.encode(np.zeros(unfed, dtype=np.float32), peek=True, fraction=unfed / self.next_samples)
        return self.adapter.silence_audio(self.next_samples)

    def partial_audio(self):
        """Embeddings of the "arrived audio + silence" hypothesis of the next chunk's part not in the cache yet:
        its samples that have arrived, then zeros to the chunk's end, encoded from the current streaming state and
        rolled back (one encoding, charged to this window); and the milliseconds of audio it holds."""
        import numpy as np

        arrived = self.arrived_audio(self.inputs.prefilled_samples)
        unfed = self.unfed_samples
        hypothesis = np.zeros(unfed, dtype=np.float32)
        hypothesis[: len(arrived)] = arrived
        return self.encode(hypothesis, peek=True, fraction=unfed / self.next_samples), self.arrived_ms()

    def decoding(self, output: Sequence[int] = (), selection: str = "shared") -> ChunkStep:
        """A hypothesis decoding of the next chunk in this window (forwards logged as ``draft``).

        ``output`` pre-commits tokens without a forward (e.g. a forced runner-up first token). ``selection``: how
        it chooses tokens under sampling (``TokenSelector.for_drafts``); ``shared``, the default, chooses as the
        post-audio step will (the oracle probe's comparison), ``greedy`` as a deterministic drafter.
        """
        step = ChunkStep(self.state, self.chunk_index, self.stopwatch, phase_name=self.phase_name, output=output)
        step.selector = self.selector.for_drafts(selection)
        return step


class DecoderConfigError(ConfigError, ValueError):
    """A decoder setting is unknown or out of range; the message names the key, the value and what is allowed."""


def knob(default, kind: type, minimum: float | None = None, optional: bool = False, choices: tuple = ()):
    """A decoder setting: a dataclass field with its type, lower bound, null-ability and allowed values."""
    return field(default=default, metadata={"kind": kind, "minimum": minimum, "optional": optional, "choices": choices})


@dataclass(frozen=True)
class DecoderSettings:
    """A decoder's settings: one frozen dataclass whose fields are the keys of its config file.

    Every field is declared with ``knob`` and checked here, in one place, when the settings are made;
    ``check`` adds rules between keys. A bad value is a ``DecoderConfigError`` naming the key.

    Example::

        >>> @dataclass(frozen=True)
        ... class Knobs(DecoderSettings):
        ...     width: int = knob(4, int, minimum=1)
        >>> Knobs.parse({"width": 2}).width
        2
        >>> Knobs.parse({"width": 0})
        Traceback (most recent call last):
        ...
        ticktock.decoders.base.DecoderConfigError: decoder.width: must be an integer >= 1, got 0
        >>> Knobs.parse({"depth": 2})
        Traceback (most recent call last):
        ...
        ticktock.decoders.base.DecoderConfigError: decoder.depth: unknown setting (known: early_prefill, prefill_every_ms, width)
    """

    # Every decoder's: early prefill of the next chunk's final audio embeddings in the idle window (beyond the
    # paper; only for an adapter whose front-end is causal below a chunk: ``ModelAdapter.causal_granularity_ms``).
    early_prefill: bool = knob(False, bool)
    prefill_every_ms: float = knob(200.0, float, minimum=1.0)  # feed what is final each time this much more arrived

    def __post_init__(self):
        for spec in fields(self):
            _check_knob(spec.name, getattr(self, spec.name), spec.metadata)
        self.check()

    def check(self) -> None:
        """Rules between keys (raise ``DecoderConfigError``); none by default."""

    @classmethod
    def parse(cls, values: dict) -> "DecoderSettings":
        known = [spec.name for spec in fields(cls)]
        for key in values:
            if key not in known:
                raise DecoderConfigError(f"decoder.{key}: unknown setting (known: {', '.join(known) or 'none'})")
        return cls(**values)


_KIND_NAMES = {int: "an integer", float: "a number", bool: "true or false", str: "a string"}


def _check_knob(key: str, value, spec) -> None:
    kind, minimum, optional, choices = spec["kind"], spec["minimum"], spec["optional"], spec["choices"]
    if value is None and optional:
        return
    allowed = _KIND_NAMES[kind] + (f" >= {minimum}" if minimum is not None else "") + (" or null" if optional else "")
    if choices:
        allowed = "one of " + ", ".join(map(repr, choices))
    fits = isinstance(value, kind) and not (kind is not bool and isinstance(value, bool))
    if kind is float:
        fits = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if not fits or (minimum is not None and value < minimum) or (choices and value not in choices):
        raise DecoderConfigError(f"decoder.{key}: must be {allowed}, got {value!r}")


class Decoder:
    """Base decoder: the draft-and-verify loop. Subclasses override ``propose`` / ``observe`` / ``idle``.

    ``lossless``: the decoder commits exactly the tokens AR commits (checked by the tables).
    ``Settings``: the decoder's settings class; the keyword arguments (a config file's keys) are parsed
    into ``self.settings`` and ``describe()`` reports them.
    """

    name = "decoder"
    lossless = True
    Settings: type[DecoderSettings] = DecoderSettings

    def __init__(self, name: str | None = None, **settings):
        if name is not None:
            self.name = name
        self.settings = self.Settings.parse(settings)

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
        """Optional work in the idle window. By default, with ``early_prefill``: feed the next chunk's embeddings
        into the cache as they become final (``IdleWindow.prefill_arrived``), every ``prefill_every_ms`` of audio."""
        if self.settings.early_prefill:
            window.prefill_arrived()
            window.follow_audio(self.settings.prefill_every_ms, window.prefill_arrived)

    @property
    def waits_for_audio(self) -> bool:
        """True when the decoder lets time pass in idle windows waiting for audio (``IdleWindow.wait_for_audio``)."""
        return self.settings.early_prefill

    def describe(self) -> dict:
        return {"name": self.name, **asdict(self.settings)}
