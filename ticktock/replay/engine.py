"""The replay engine: the one loop that streams a session's audio into a model, chunk by chunk.

Per chunk t (audio [start, end) arrives at ``end``):

1. the chunk's known inputs (the previous chunk's last token + the unit head, and any tool response to
   the previous chunk's calls) were built once when chunk t-1 was committed (``SessionState``);
2. post-audio work, timed by the clock: encode the audio, then ``decoder.decode_chunk``;
3. the deadline arithmetic (``ticktock.replay.timeline``) with the overrun carried from the idle window;
4. tool calls in the output are executed; the output is committed to the session state, which opens
   chunk t+1 with the responses as its tail;
5. with a talker (``ticktock.replay.speech_out``), the chunk's spoken text is synthesized on the same clock: the work
   shrinks the idle budget, and what runs past chunk t+1's arrival is carried into its latency;
6. if chunk t+1's audio is still in the future (idle budget > 0), ``decoder.idle`` may draft it until the
   budget is spent, on exactly the inputs and history its post-audio step will see; overrun is carried
   into chunk t+1's latency. The wait for the first chunk's audio (from the session start) is an idle
   window as well. Chunk t+1's audio streams in during the window (``ArrivingAudio``): a decoder sees only
   the samples that have arrived by the window's time on the run's clock, and may feed the final ones into
   the cache early (``IdleWindow.prefill_arrived``); the post-audio step then encodes and feeds only the rest.

Nothing sleeps: times come from the clock's stopwatches (wall or modeled).

With a ``watchdog`` (``ticktock.replay.watchdog``), each chunk's work (its idle window, post-audio step and talker) is
armed under the chunk's name: work past the limit raises ``ChunkTimeout`` out of ``replay``, and the caller fails
that session (``ticktock.replay.runner.replay_sessions``).

Example::

    engine = ReplayEngine(adapter, ARDecoder(), ModeledClock(profile), Sampling(temperature=0.7, seed=3))
    trace = engine.replay(session, load_audio(session.audio_path))
    [c.kind for c in trace.chunks][:4]        # e.g. ['listen', 'listen', 'speak', 'speak']
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from ticktock.adapters.base import ModelAdapter
from ticktock.sessions.audio import SAMPLE_RATE
from ticktock.clocks.base import Clock, WindowClosed, WindowOver
from ticktock.decoders.counters import ChunkCounters, ForwardRecord
from ticktock.decoders.step import ChunkStep
from ticktock.decoders.contract import Decoder
from ticktock.decoders.selection import Sampling
from ticktock.replay.audio_source import AudioEnded, as_audio_source
from ticktock.world.injection import Injection, ToolCallInjector
from ticktock.sessions.manifest import ChunkSpan, Session
from ticktock.replay.session_state import SessionState
from ticktock.replay.timeline import ChunkTiming, advance, overrun


@dataclass
class ChunkTrace:
    """One replayed chunk: its output, timing and counters (``counters.window_*``: the idle window that
    drafted it, before its audio arrived)."""

    span: ChunkSpan
    output: list[int]
    kind: str
    timing: ChunkTiming
    post_audio_wall_ms: float
    encode_wall_ms: float
    carried_ms: float
    counters: ChunkCounters
    injected: Injection  # what arrived in this chunk after its audio
    calls: list  # tool calls made in this chunk (canonical form, None when unparsable)
    speech: object = None  # with a talker: the chunk's ``SpokenPiece`` (``ticktock.replay.speech_out``)


@dataclass
class SessionTrace:
    """A replayed session; ``concurrency``, ``slot`` and ``start_ms`` place it on a shared device
    (``ticktock.replay.concurrency``; 1, 0 and 0.0 for a session replayed alone)."""

    session: Session
    chunks: list[ChunkTrace] = field(default_factory=list)
    forwards: list[ForwardRecord] = field(default_factory=list)
    wall_s: float = 0.0
    concurrency: int = 1
    slot: int = 0
    start_ms: float = 0.0


@dataclass(frozen=True)
class Hooks:
    """What ``ReplayEngine.replay`` calls per chunk: ``on_decided`` once its output is committed, ``on_spoken`` once
    its talker has spoken (with a talker), ``on_chunk`` after the idle window that follows it (each may be None)."""

    on_chunk: object = None
    on_decided: object = None
    on_spoken: object = None

    @staticmethod
    def call(hook, chunk) -> None:
        if hook is not None:
            hook(chunk)


class ReplayEngine:
    def __init__(
        self,
        adapter: ModelAdapter,
        decoder: Decoder,
        clock: Clock,
        sampling: Sampling = Sampling(),
        injector: ToolCallInjector | None = None,
        max_chunks: int | None = None,
        speech=None,
        watchdog=None,
    ):
        self.adapter = adapter
        self.decoder = decoder
        self.clock = clock
        self.sampling = sampling
        self.injector = injector or ToolCallInjector()
        self.max_chunks = max_chunks
        self.speech = speech  # ``SpeechOut`` (a talker on the run's clock) or None
        self.watchdog = watchdog  # ``ticktock.replay.watchdog.Watchdog`` or None
        self.where: str | None = None  # the work running now, as the watchdog names it

    def _enter(self, session: Session, index: int, phase: str) -> None:
        """Chunk ``index`` of ``session`` is in ``phase`` now (the watchdog's countdown starts with each chunk)."""
        self.where = f"session {session.session_id}: chunk {index} ({phase})"
        if self.watchdog is not None:
            self.watchdog.arm((session.session_id, index), self.where)

    def start(self, session: Session) -> SessionState:
        """A fresh replay state for ``session`` (the adapter is reset, its prompt prefilled). The state and the
        decoder get the session as a model is told it (``Session.told_to_model``: no transcript, no expected reply)."""
        told = session.told_to_model()
        selector = self.sampling.selector(self.adapter.protocol, told.session_id, tools_enabled=bool(told.tools))
        state = SessionState(told, self.adapter, selector, self.clock, self.speech)
        self.decoder.start_session(told)
        return state

    def replay(self, session: Session, audio, on_chunk=None, on_decided=None, on_spoken=None) -> SessionTrace:
        """Replay one session; ``audio`` is its 16 kHz mono float32 samples, or an audio source
        (``ticktock.replay.audio_source``: a live stream when served); ``on_chunk(chunk_trace)`` is called after each
        chunk (after the idle window that follows it). A server reports sooner: ``on_decided(chunk_trace)`` as soon
        as the chunk's output is committed (before its talker and the next idle window), ``on_spoken(chunk_trace)``
        once its talker has synthesized its speech (with a talker only). A live stream that ends (``AudioEnded``) ends the session with the chunks done so far."""
        try:
            return self._replay(session, as_audio_source(audio), Hooks(on_chunk, on_decided, on_spoken))
        finally:
            self.where = None
            if self.watchdog is not None:
                self.watchdog.disarm()

    def _replay(self, session: Session, audio, hooks: "Hooks") -> SessionTrace:
        began = time.perf_counter()
        spans = session.chunk_spans()[: self.max_chunks]
        self._enter(session, 0, "session start")
        state = self.start(session)
        trace = SessionTrace(session, forwards=state.forwards)
        if spans:
            self._enter(session, 0, "idle window")
        carried = self._idle(state, 0, spans[0], 1000.0 * spans[0].duration_s, audio) if spans else 0.0
        arrived = Injection()
        for i, span in enumerate(spans):
            self._enter(session, i, "waiting for its audio")
            try:
                self.clock.wait_until(1000.0 * span.end_s)  # at once for a session alone; see ticktock.replay.device
            except AudioEnded:  # a live stream ended: the session is what it said so far
                break
            self._enter(session, i, "post-audio step")
            step, wall_ms = self._post_audio(state, i, span, audio, spans[i + 1] if i + 1 < len(spans) else None)
            deadline_ms = 1000.0 * (spans[i + 1].duration_s if i + 1 < len(spans) else session.chunk_s)
            timing = advance(state.lag_ms, step.elapsed_ms() + carried, deadline_ms)
            state.lag_ms = timing.lag_ms
            injected = self.injector.after_chunk(self.adapter, step.output)
            state.commit(i, step.output, injected.tokens)
            chunk = ChunkTrace(span, step.output, self.adapter.protocol.kind_of(step.output), timing, wall_ms,
                               step.encode_wall_ms, carried, step.counters, arrived, injected.calls)
            trace.chunks.append(chunk)
            hooks.call(hooks.on_decided, chunk)
            arrived, talking_ms = injected, 0.0
            if self.speech is not None:
                self._enter(session, i, "talker")
                chunk.speech = self.speech.speak(self.clock, self.adapter, step.output, state.take_prepared_speech(i))
                talking_ms = chunk.speech.talker_ms
                hooks.call(hooks.on_spoken, chunk)
            budget = timing.idle_budget_ms - talking_ms
            carried = overrun(talking_ms, timing.idle_budget_ms)  # the talker's work past the next arrival
            if budget > 0 and i + 1 < len(spans):
                self._enter(session, i + 1, "idle window")
                carried = self._idle(state, i + 1, spans[i + 1], budget, audio)
            hooks.call(hooks.on_chunk, chunk)
        trace.wall_s = time.perf_counter() - began
        return trace

    def _post_audio(self, state: SessionState, index: int, span: ChunkSpan, audio,
                    next_span: ChunkSpan | None) -> tuple[ChunkStep, float]:
        step = state.chunk_step(index)
        samples = audio.chunk(span)
        done = step.inputs.prefilled_samples  # early prefill fed the chunk's first part in its idle window
        silence = self._silence_ahead(next_span)
        encoded = step.encode(samples[done:], fraction=(len(samples) - done) / max(len(samples), 1),
                              silence_after=silence)
        if silence:
            encoded, prepared = encoded
            state.prepare_silence(index + 1, silence, prepared)
        step.inputs.audio = encoded
        self.decoder.decode_chunk(step)
        self.adapter.synchronize()
        return step, step.stopwatch.wall_ms()

    def _silence_ahead(self, next_span: ChunkSpan | None) -> int:
        """Samples of silence to encode after a chunk's audio, in its step: the next chunk's, when the decoder drafts
        it as silence first and that silence depends on the front-end's state (an encoding it would otherwise pay in
        the idle window, where on a shared device it runs alone), and the clock can charge a step of two encodings;
        else 0. Example: Speculative Listening on the embedded model, whose front-end carries the last frame's energies
        into the next, pays 85 + 1.3 ms for its chunk and the silence after it on the derived A100 profile, not 85 ms
        for each."""
        if next_span is None or not (self.decoder.silence_first and self.adapter.silence_depends_on_state
                                     and self.clock.batches_encodings):
            return 0
        return int(round(next_span.duration_s * SAMPLE_RATE))

    def _idle(self, state: SessionState, index: int, span: ChunkSpan, budget_ms: float, audio) -> float:
        """Let the decoder draft chunk ``index`` before its audio arrives (while it streams in); return the overrun
        carried into it."""
        window = state.idle_window(index, budget_ms, int(round(span.duration_s * SAMPLE_RATE)),
                                   audio.arriving(span, budget_ms))
        before = self.adapter.snapshot()
        try:
            self.decoder.idle(window)
        except (WindowClosed, WindowOver):  # a shared device dropped idle work the decoder did not handle, or ended a
            # window that kept asking after that: roll the model back
            self.adapter.restore(before)
        self.adapter.synchronize()
        counters = state.counters_for(index)
        counters.window_budget_ms = budget_ms
        counters.window_used_ms = window.elapsed_ms() - window.stopwatch.waited_ms  # work, not waits for audio
        counters.window_waited_ms = window.stopwatch.waited_ms
        counters.prefilled_ms = 1000.0 * state.inputs_for(index).prefilled_samples / SAMPLE_RATE
        counters.window_wall_ms = window.stopwatch.wall_ms()
        return overrun(window.elapsed_ms(), budget_ms)
