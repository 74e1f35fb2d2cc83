"""Speculative Listening (SL; Bian et al. 2026): draft the next chunk before its audio arrives.

1. **Silence draft** (idle window, after chunk t-1 is done): feed the next chunk's known inputs with the
   front-end's embeddings of a chunk of zeros, and greedily decode chunk t's output on the model's own
   cache until its terminator, the draft token cap, or the idle budget (checked between forwards; the
   engine charges any overrun to chunk t). The cache and front-end are then rolled back exactly.
2. **Runner-up branch** (``branches >= 2``): if budget remains, decode a second draft that starts with
   the second-best first token under silence (listen vs speak is the common change). ``branches = k > 2``
   adds the 3rd..k-th best first tokens (a top-k first-token tree; beyond the paper).
3. **Hypothesis pool** (``pool: true``): every draft of the session is kept, indexed by n-grams (``pool.py``).
4. **One-pass verification**: when the audio arrives, ONE forward feeds the audio prefill and the whole
   draft tree (main chain and branches under a tree mask); the longest greedily matching path is accepted,
   plus the target's correction token. The branches ride in the same pass rather than being verified only
   after the main draft's first token is rejected: that saves one post-audio forward exactly when the
   first token flips, the most common change, for a few extra query tokens in a memory-bound forward.
5. **Pool continuation**: each later forward first looks up the longest pool n-gram ending the chunk's
   committed tokens and verifies its continuation.
6. **Sampling**: verification compares each draft token with the token the selector commits there (the
   keyed sample at temperature > 0), which is speculative sampling for deterministic drafts: exact. The
   drafts are greedy (``draft_selection: greedy``), so a draft token is accepted with the target's
   probability of it. ``independent`` drafts sample with their own noise; ``shared`` drafts sample with the
   verification's own keyed noise (beyond the paper, and optimistic: see ``selection.py``).

Beyond the paper, behind knobs: ``lookup_context`` adds the session's own token context (the PLD source)
as a second lookup source, ranked with the pool by n-gram match length; ``lookup_branches`` verifies the
best few continuations as one tree per forward; ``lookup_tools`` drafts a tool call's literals (name,
argument names, enum values, closing braces) from the session's tool schemas (``call_schema.py``), so only
free argument values are left to decode; ``fresh_silence`` encodes the silence hypothesis from the
current streaming state instead of the cached silence-after-silence embeddings (charged as an encoding;
always so, without the knob, for an adapter whose silence depends on its state, e.g. MiniCPM-o);
``draft_with_pool`` uses the pool (and the context) *while drafting* (each idle-window
draft forward also verifies a pool continuation under the silence hypothesis, so successive windows extend
a long tool call instead of re-decoding its start), extends a budget-cut draft with the pool's continuation,
and reuses the pool's latest draft where no fresh one exists: as the draft of a draft's first forward,
and as the first-pass draft of a chunk that got no idle time (lagging). ``realign`` re-offers a rejected
draft's tail after the target's correction token (``realigned_tails``: one token substituted, inserted
or dropped), so a draft that differs from the output in one argument value (a digit, a name) is not
lost past the difference. ``speak_ahead`` (speculative synthesis, with a talker) has the talker speak the leading
draft's text in the window, after the drafts and after each re-draft, so a verified speak chunk's audio is ready at
once (``ticktock.replay.speech_out``; exact: the audio played is always that of the committed text).
``verify_cost_cap`` (a number >= 1) cuts every verification's draft tree, in the window and after the audio, to the
drafts that come first (the main draft, then the branches, then earlier and lookup drafts) while its forward is
expected to cost at most that many times a forward with one of them (``ChunkStep.affordable``, on the run's clock: the
cost profile, or what the wall clock measured so far): on a device where every query token costs time (a CPU), a tree
of hundreds of tokens is a dear forward that saves little when the drafts are wrong.

Per-chunk counters (``ChunkCounters``): ``draft_source`` (silence / runner_up / branch / pool, or none:
what supplied the draft tokens accepted in the audio pass), ``draft_full_match`` (the silence draft was
complete and equals the output), ``first_token_changed`` (the output's first token differs from the
silence draft's), ``lookup_hits`` (later forwards whose lookup draft, from the pool, context, schemas
or a realigned tail, had at least one token accepted).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ticktock.clocks.base import WindowClosed
from ticktock.decoders.idle import DRAFT_SELECTIONS, IdleWindow
from ticktock.decoders.step import ChunkStep
from ticktock.decoders.contract import Decoder, DecoderConfigError, DecoderSettings, knob
from ticktock.decoders.trees import DraftTree, Verification, trim_draft
from ticktock.decoders.call_schema import CallDrafter, call_patterns
from ticktock.decoders.ngram import NgramIndex
from ticktock.decoders.pool import HypothesisPool


def realigned_tails(result: Verification, limit: int) -> list[list[int]]:
    """Where a rejected draft chain may continue after the target's correction token.

    The walk stopped at the first chain node ``d[i]`` that differs from the committed correction ``c``.
    If ``c`` equals the next draft token (the draft had one token too many), the chain goes on from
    ``d[i + 2]``; otherwise ``c`` replaced ``d[i]`` (continue from ``d[i + 1]``) or was inserted before it
    (continue from ``d[i]``). Each tail is at most ``limit`` tokens; none when nothing was rejected.

    Example (the draft ``7 8 9 10``, the target accepted ``7`` and then committed ``5``)::

        >>> tree = DraftTree(); _ = tree.add_chain([7, 8, 9, 10])
        >>> realigned_tails(Verification([7, 5], [0], None, tree), limit=8)
        [[9, 10], [8, 9, 10]]
        >>> realigned_tails(Verification([7, 9], [0], None, tree), limit=8)     # 8 was one too many
        [[10]]
    """
    if limit <= 0 or not len(result.draft):
        return []
    children = result.draft.children()
    parent = result.accepted_nodes[-1] if result.accepted_nodes else -1
    rejected = [node for node in children.get(parent, {}).values() if result.draft.verifiable[node]]
    if not rejected:
        return []
    chain, node = [], min(rejected)  # the first-added chain: the main draft
    while node is not None:
        chain.append(result.draft.tokens[node])
        following = children.get(node, {})
        node = min(following.values()) if following else None
    correction = result.committed[-1]
    if len(chain) > 1 and chain[1] == correction:
        tails = [chain[2:]]
    else:
        tails = [chain[1:], chain]
    return [tail[:limit] for tail in tails if tail]


@dataclass
class Hypotheses:
    """The drafts made for one chunk: the main draft and the first-token branches made under silence, and with
    partial-audio hypotheses the main drafts re-made as the chunk's audio arrived (``earlier``: the mains they
    replaced, newest first, each with the milliseconds of real audio its hypothesis held)."""

    main: list[int] = field(default_factory=list)
    main_complete: bool = False
    branches: list[list[int]] = field(default_factory=list)
    fresh: bool = True
    source: str = "silence"  # what the main draft was made under: silence, or partial (arrived audio + silence)
    arrived_ms: float = 0.0  # real audio in the main draft's hypothesis
    duration_ms: float = 1000.0  # the chunk's audio
    earlier: list[tuple[list[int], str, float]] = field(default_factory=list)

    def tree(self) -> DraftTree:
        tree = DraftTree()
        tree.add_chain(self.main, source=self.source if self.fresh else "pool")
        for rank, branch in enumerate(self.branches):
            tree.add_chain(branch, source="runner_up" if rank == 0 else "branch")
        for tokens, source, _ in self.earlier:
            tree.add_chain(tokens, source=source)
        return tree

    def replace_main(self, tokens: list[int], complete: bool, arrived_ms: float) -> None:
        """A new main draft under a partial-audio hypothesis; the old main stays in the tree as an earlier one."""
        self.earlier.insert(0, (self.main, self.source, self.arrived_ms))
        self.main, self.main_complete, self.source, self.arrived_ms = tokens, complete, "partial", arrived_ms

    @property
    def drafted(self) -> int:
        """Hypotheses drafted for the chunk: the main drafts (silence, then each partial one) and the branches."""
        return 1 + len(self.earlier) + len(self.branches)

    def arrived_fraction(self, accepted: list[int]) -> float | None:
        """The share of real audio in the newest hypothesis whose draft starts with the ``accepted`` tokens."""
        if not accepted:
            return None
        for tokens, _, arrived in [(self.main, self.source, self.arrived_ms), *self.earlier]:
            if tokens[: len(accepted)] == accepted:
                return arrived / self.duration_ms if self.duration_ms else 0.0
        return 0.0  # a runner-up branch: drafted under silence


@dataclass(frozen=True)
class SpecListenSettings(DecoderSettings):
    """The knobs of ``configs/decoder/speclisten*.yaml`` (see the module docstring for what each does)."""

    branches: int = knob(2, int, minimum=1)
    pool: bool = knob(True, bool)
    pool_ngram: int = knob(4, int, minimum=1)
    draft_token_cap: int | None = knob(None, int, minimum=1, optional=True)
    pool_max_tokens: int = knob(96, int, minimum=1)
    draft_with_pool: bool = knob(False, bool)
    lookup_context: bool = knob(False, bool)
    fresh_silence: bool = knob(False, bool)
    realign: bool = knob(False, bool)
    lookup_branches: int = knob(1, int, minimum=1)
    lookup_tools: bool = knob(False, bool)
    hypothesis: str = knob("silence", str, choices=("silence", "partial"))
    redraft_policy: str = knob("interval", str, choices=("interval", "speech", "first_token"))
    redraft_every_ms: float = knob(200.0, float, minimum=1.0, maximum=60_000.0)
    redraft_speech_dbfs: float = knob(-45.0, float, minimum=-200.0, maximum=0.0)  # RMS dB full scale (-200: silence)
    draft_selection: str = knob("greedy", str, choices=DRAFT_SELECTIONS)
    speak_ahead: bool = knob(False, bool)
    verify_cost_cap: float | None = knob(None, float, minimum=1.0, optional=True)

    def check(self) -> None:
        if self.draft_with_pool and not self.pool:
            raise DecoderConfigError("decoder.draft_with_pool: true needs decoder.pool: true")


class SpeculativeListeningDecoder(Decoder):
    name = "speclisten"
    Settings = SpecListenSettings

    def __init__(self, name: str | None = None, **settings):
        super().__init__(name, **settings)
        self.tools: tuple[dict, ...] = ()
        self.call_drafter: CallDrafter | None = None
        self.pool = HypothesisPool(self.settings.pool_ngram)
        self.context = NgramIndex(self.settings.pool_ngram)
        self.pending: Hypotheses | None = None

    @property
    def cost_cap(self) -> float | None:
        """``verify_cost_cap``: each verification's draft tree is cut to what its forward can afford
        (``ChunkStep.affordable``)."""
        return self.settings.verify_cost_cap

    def start_session(self, session) -> None:
        self.pool = HypothesisPool(self.settings.pool_ngram)
        self.context = NgramIndex(self.settings.pool_ngram)
        self.pending = None
        self.tools = tuple(session.tools)
        self.call_drafter = None

    # ------------------------------------------------------------------------------- idle window

    @property
    def silence_first(self) -> bool:
        return not self.settings.early_prefill  # early prefill feeds the arrived audio before the silence draft

    @property
    def waits_for_audio(self) -> bool:
        return self.settings.early_prefill or self.settings.hypothesis == "partial"

    def idle(self, window: IdleWindow) -> None:
        if self.settings.early_prefill:
            window.prefill_arrived()  # what is final already, before drafting the rest
        adapter = window.adapter
        state = adapter.snapshot()
        try:
            hypotheses = self._draft(window, state)
        except WindowClosed:  # a shared device could not run the first forward before the audio arrived
            hypotheses = None
        adapter.restore(state)
        if hypotheses is None:
            return
        if self.settings.draft_with_pool and not hypotheses.main_complete:
            hypotheses.main += self._pool_draft(hypotheses.main, window.protocol)
        for draft in [hypotheses.main, *hypotheses.branches]:
            if self.settings.pool:
                self.pool.add(draft)
        hypotheses.duration_ms = window.arriving.duration_ms if window.arriving is not None else 1000.0
        self.pending = hypotheses
        self._speak_ahead(window, hypotheses)
        if self.waits_for_audio:
            every = self.settings.redraft_every_ms if self.settings.hypothesis == "partial" else self.settings.prefill_every_ms
            window.follow_audio(every, lambda: self._on_audio(window, hypotheses))

    # ------------------------------------------------------------------ as the chunk's audio arrives

    def _on_audio(self, window: IdleWindow, hypotheses: Hypotheses) -> None:
        """One step while the next chunk's audio arrives: early prefill of what is final, then (partial
        hypotheses) a new main draft under "arrived audio + silence" when the re-draft policy says so."""
        if self.settings.early_prefill:
            window.prefill_arrived()
        if self.settings.hypothesis != "partial" or not self._redraft_due(window, hypotheses):
            return
        adapter = window.adapter
        state = adapter.snapshot()
        try:
            redrafted = self._redraft(window, hypotheses)
        except WindowClosed:
            redrafted = None
        adapter.restore(state)
        if redrafted is not None:
            tokens, complete, arrived = redrafted
            if self.settings.draft_with_pool and not complete:
                tokens += self._pool_draft(tokens, window.protocol)
            if self.settings.pool:
                self.pool.add(tokens)
            hypotheses.replace_main(tokens, complete, arrived)
            self._speak_ahead(window, hypotheses)

    def _speak_ahead(self, window: IdleWindow, hypotheses: Hypotheses) -> None:
        """Speculative synthesis (``speak_ahead``): the talker speaks the leading draft's text now, while the window
        lasts, if that draft is a complete chunk (``IdleWindow.speak_ahead``)."""
        if not (self.settings.speak_ahead and hypotheses.main_complete and window.remaining_ms() > 0):
            return
        try:
            window.speak_ahead(hypotheses.main)
        except WindowClosed:  # a shared device: the chunk's audio arrived first
            pass

    def _redraft_due(self, window: IdleWindow, hypotheses: Hypotheses) -> bool:
        """``interval``: every step; ``speech``: when the audio arrived since the last hypothesis holds speech energy
        (RMS at least ``redraft_speech_dbfs``); ``first_token``: every step, but a re-draft stops after its first
        forward when the first token stays the same (``_redraft``)."""
        if self.settings.redraft_policy != "speech":
            return True
        from ticktock.sessions.audio import rms_dbfs

        new = window.arrived_audio(window.arriving.samples_by(hypotheses.arrived_ms))
        return rms_dbfs(new) >= self.settings.redraft_speech_dbfs

    def _redraft(self, window: IdleWindow, hypotheses: Hypotheses):
        """The main draft again under the hypothesis "the audio that has arrived, then silence" (encoded from the
        current streaming state, then rolled back), its first forward verifying the previous main draft; returns
        (tokens, complete, real audio ms in the hypothesis), or None when the window ended first."""
        audio, arrived = window.partial_audio()
        if window.remaining_ms() <= 0:
            return None
        hypothesis = window.decoding(selection=self.settings.draft_selection)
        previous = DraftTree()
        previous.add_chain(hypotheses.main, source=hypotheses.source)
        first = hypothesis.verify(window.next_inputs.segments(audio), self._trimmed(previous, hypothesis), self.cost_cap)
        if self.settings.redraft_policy == "first_token" and first.committed[:1] == hypotheses.main[:1]:
            return None  # the first token would not change: the previous draft stays the main one
        self._extend(window, hypothesis)
        return hypothesis.output, hypothesis.done, arrived

    def _draft(self, window: IdleWindow, state) -> Hypotheses:
        """The silence draft (main), then the runner-up branches while the window lasts."""
        adapter = window.adapter
        prefix = window.next_inputs.segments(window.silence(fresh=self.settings.fresh_silence))
        prefix_end = state.cache_length + sum(adapter.segment_length(s) for s in prefix)
        main = window.decoding(selection=self.settings.draft_selection)
        stale = self._stale_hypotheses()
        first = main.verify(prefix, self._trimmed(stale.tree(), main) if stale else None, self.cost_cap)
        ranked = window.selector.ranked(first.logits[0], [], self.settings.branches, window.chunk_index)
        hypotheses = Hypotheses(main=self._extend(window, main))
        hypotheses.main_complete = main.done
        for token in ranked[1:]:
            if window.remaining_ms() <= 0:
                break
            adapter.keep(prefix_end, [])  # back to the end of the silence prefill
            branch = window.decoding(output=[token], selection=self.settings.draft_selection)
            hypotheses.branches.append(self._extend(window, branch))
        return hypotheses

    def _extend(self, window: IdleWindow, hypothesis: ChunkStep) -> list[int]:
        """Greedy decoding of a hypothesis until it ends, hits the cap, or the budget is spent (or a shared
        device drops the next forward: the window closed while it waited)."""
        cap = self.settings.draft_token_cap or window.protocol.max_tokens_per_chunk
        last = None
        while not hypothesis.done and len(hypothesis.output) < cap and window.remaining_ms() > 0:
            draft = None
            if self.settings.draft_with_pool:
                draft = self._next_draft(hypothesis, cap - len(hypothesis.output) - 1, last)
            try:
                last = hypothesis.verify([[hypothesis.output[-1]]], draft, self.cost_cap)
            except WindowClosed:
                break
        return hypothesis.output[:cap]

    # --------------------------------------------------------------------------------- post-audio

    def decode_chunk(self, step: ChunkStep) -> None:
        hypotheses = self.pending or self._stale_hypotheses()
        self.pending = None
        tree = self._trimmed(hypotheses.tree(), step) if hypotheses else None
        result = step.verify(step.inputs.segments(), tree, self.cost_cap)
        audio_pass = result
        while not step.done:
            room = step.protocol.max_tokens_per_chunk - len(step.output) - 1
            result = step.verify([[step.output[-1]]], self._next_draft(step, room, result), self.cost_cap)
        if hypotheses is not None and hypotheses.main:  # the main draft: under silence, or the latest partial one
            complete = hypotheses.fresh and hypotheses.main_complete
            step.counters.record_silence_draft(hypotheses.main, complete, step.output)
        if hypotheses is not None:
            step.counters.hypotheses_drafted = hypotheses.drafted
            accepted = audio_pass.committed[: len(audio_pass.accepted_nodes)]
            step.counters.draft_arrived_fraction = hypotheses.arrived_fraction(accepted)

    def _stale_hypotheses(self) -> Hypotheses | None:
        if not (self.settings.pool and self.settings.draft_with_pool and len(self.pool)):
            return None
        return Hypotheses(main=list(self.pool.latest()), fresh=False)

    @staticmethod
    def _trimmed(tree: DraftTree, step: ChunkStep) -> DraftTree:
        """Drop nodes past a terminator or the chunk's token cap (drafts never run past the chunk)."""
        kept = DraftTree()
        depth: dict[int, int] = {-1: 0}
        remap: dict[int, int] = {-1: -1}
        room = step.protocol.max_tokens_per_chunk - 1
        for i, (token, parent) in enumerate(zip(tree.tokens, tree.parents)):
            if parent not in remap or depth[parent] >= room:
                continue
            if parent >= 0 and tree.tokens[parent] in step.protocol.terminators:
                continue
            remap[i] = kept.add_node(token, remap[parent], tree.verifiable[i], tree.sources[i])
            depth[i] = depth[parent] + 1
        return kept

    def _next_draft(self, step: ChunkStep, room: int, last: Verification | None) -> DraftTree | None:
        """The lookup tree (pool, context, schemas), plus with ``realign`` the last rejected draft's tails; None
        when no source is enabled or none has a draft."""
        knobs = self.settings
        tree = self._lookup_tree(step, room) if knobs.pool or knobs.lookup_context or knobs.lookup_tools else None
        if not (self.settings.realign and last is not None):
            return tree
        tree = tree or DraftTree()
        for tail in realigned_tails(last, min(room, self.settings.pool_max_tokens)):
            tail = trim_draft(tail, step.protocol, len(step.output))
            if tail:
                tree.add_chain(tail, source="realign")
        return tree if len(tree) else None

    def _lookup_tree(self, step: ChunkStep, room: int) -> DraftTree | None:
        """The continuations of the chunk's committed tokens as a draft tree, at most ``pool_max_tokens`` nodes.

        Sources: the pool; with ``lookup_context`` the session context; with ``lookup_tools`` the tool
        schemas (inside a call: its name, argument names and closing literals; see ``call_schema.py``).
        Up to ``lookup_branches`` continuations of the pool and context ride, longest n-gram match first
        (ties: the pool), so a 4-gram match in the context beats a 1-gram match in an old draft; with one
        branch and neither extra source this is the paper's pool lookup. Schema drafts come first: they
        are short, and exact whenever a single tool matches.
        """
        if room <= 0 or not step.output:
            return None
        limit = min(room, self.settings.pool_max_tokens)
        found = [(n, 1, tokens, "pool") for n, tokens in
                 self.pool.continuations(step.output, limit, len(step.output), self.settings.lookup_branches)]
        if self.settings.lookup_context:
            self.context.sync(step.history)
            found += [(n, 0, tokens, "context") for n, tokens in
                      self.context.find_all(step.context_tokens(), self.settings.pool_ngram, limit, self.settings.lookup_branches)]
        found.sort(key=lambda match: match[:2], reverse=True)
        chains = [(tokens, source) for _, _, tokens, source in found[: self.settings.lookup_branches]]
        if self.settings.lookup_tools:
            chains = [(tokens, "schema") for tokens in self._schema_drafts(step, limit)] + chains
        tree = DraftTree()
        for tokens, source in chains:
            tokens = trim_draft(tokens, step.protocol, len(step.output))[: self.settings.pool_max_tokens - len(tree)]
            tree.add_chain(tokens, source=source)
        return tree if len(tree) else None

    def _schema_drafts(self, step: ChunkStep, limit: int) -> list[list[int]]:
        """Drafts of the call being written, from the session's tool schemas (built on first use)."""
        if not self.tools or step.protocol.tool_call_open is None:
            return []
        if self.call_drafter is None:
            self.call_drafter = CallDrafter(call_patterns(step.adapter, self.tools), step.protocol.tool_call_open)
        return self.call_drafter.drafts(step.output, limit)[: self.settings.lookup_branches]

    def _pool_draft(self, tokens: list[int], protocol) -> list[int]:
        room = protocol.max_tokens_per_chunk - len(tokens) - 1
        if not tokens or room <= 0:
            return []
        return trim_draft(self.pool.continuation(tokens, room, position=len(tokens)), protocol, len(tokens))
