"""The replay engine: the one loop that streams a session's audio into a model, chunk by chunk.

Per chunk t (audio [start, end) arrives at ``end``):

1. build the chunk's known inputs: the previous chunk's last token + ``</unit>`` + ``<unit>`` (head) and
   any tool response to the previous chunk's tool calls (tail);
2. post-audio work, timed by the clock: encode the audio, then ``decoder.decode_chunk``;
3. the deadline arithmetic (``ticktock.timeline``) with the overrun carried from the idle window;
4. tool calls in the output are executed; their responses become the next chunk's tail;
5. if the next chunk's audio is still in the future (idle budget > 0), ``decoder.idle`` may work until
   the budget is spent; overrun is carried into the next chunk's latency. The wait for the first chunk's
   audio (from the session start) is an idle window as well.

Nothing sleeps: times come from the clock's stopwatches (wall or modeled).

Example::

    engine = ReplayEngine(adapter, ARDecoder(), ModeledClock(profile), TokenSelector(adapter.protocol))
    trace = engine.replay(session, load_audio(session.audio_path))
    [c.kind for c in trace.chunks][:4]        # e.g. ['listen', 'listen', 'speak', 'speak']
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from ticktock.adapters.base import ModelAdapter
from ticktock.audio import SAMPLE_RATE, chunk_samples
from ticktock.clocks.base import Clock
from ticktock.decoders.base import ChunkCounters, ChunkInputs, ChunkStep, Decoder, ForwardRecord, IdleWindow
from ticktock.injection import Injection, ToolCallInjector
from ticktock.manifest import ChunkSpan, Session
from ticktock.timeline import ChunkTiming, advance, overrun


@dataclass
class ChunkTrace:
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
    idle_budget_ms: float = 0.0
    idle_used_ms: float = 0.0
    idle_wall_ms: float = 0.0


@dataclass
class SessionTrace:
    session: Session
    chunks: list[ChunkTrace] = field(default_factory=list)
    forwards: list[ForwardRecord] = field(default_factory=list)
    wall_s: float = 0.0


class ReplayEngine:
    def __init__(
        self,
        adapter: ModelAdapter,
        decoder: Decoder,
        clock: Clock,
        selector,
        injector: ToolCallInjector | None = None,
        max_chunks: int | None = None,
    ):
        self.adapter = adapter
        self.decoder = decoder
        self.clock = clock
        self.selector = selector
        self.injector = injector or ToolCallInjector()
        self.max_chunks = max_chunks

    def replay(self, session: Session, audio, on_chunk=None) -> SessionTrace:
        """Replay one session; ``audio`` is its 16 kHz mono float32 samples."""
        began = time.perf_counter()
        protocol = self.adapter.protocol
        spans = session.chunk_spans()[: self.max_chunks]
        trace = SessionTrace(session)
        history = list(self.adapter.start_session(session.system_prompt, session.tools))
        self.selector.start_session(session.session_id, tools_enabled=bool(session.tools))
        self.decoder.start_session(session)
        lag, carry_token, injected = 0.0, [], Injection()
        carried = self._first_idle(spans, history, trace.forwards)
        for i, span in enumerate(spans):
            fresh = ([protocol.unit_close] if i else []) + [protocol.unit_open]
            inputs = ChunkInputs(head=carry_token + fresh, tail=list(injected.tokens))
            history += fresh + inputs.tail
            step, wall_ms = self._post_audio(i, span, inputs, audio, history, trace.forwards)
            deadline_ms = 1000.0 * (spans[i + 1].duration_s if i + 1 < len(spans) else session.chunk_s)
            timing = advance(lag, step.elapsed_ms() + carried, deadline_ms)
            history += step.output
            chunk = ChunkTrace(
                span, step.output, protocol.kind_of(step.output), timing, wall_ms, step.encode_wall_ms, carried, step.counters,
                injected, [], idle_budget_ms=timing.idle_budget_ms,
            )
            chunk.counters.diagnostics = dict(self.decoder.diagnostics(step))
            injected = self.injector.after_chunk(self.adapter, step.output)
            chunk.calls = injected.calls
            carry_token = step.output[-1:]
            carried = 0.0
            if timing.idle_budget_ms > 0 and i + 1 < len(spans):
                next_inputs = ChunkInputs(head=carry_token + [protocol.unit_close, protocol.unit_open],
                                          tail=list(injected.tokens))
                carried = self._idle(chunk, i + 1, spans[i + 1], next_inputs, history, trace.forwards)
            lag = timing.lag_ms
            trace.chunks.append(chunk)
            if on_chunk is not None:
                on_chunk()
        trace.wall_s = time.perf_counter() - began
        return trace

    def _post_audio(self, index, span, inputs, audio, history, log) -> tuple[ChunkStep, float]:
        self.selector.start_chunk(index)
        start = time.perf_counter()
        step = ChunkStep(self.adapter, self.selector, self.clock.stopwatch(), log, index, inputs, history)
        inputs.audio = step.encode(chunk_samples(audio, span.start_s, span.end_s))
        self.decoder.decode_chunk(step)
        self.adapter.synchronize()
        return step, (time.perf_counter() - start) * 1000.0

    def _first_idle(self, spans, history, log) -> float:
        """The wait for the first chunk's audio is an idle window too (budget: the first chunk's duration)."""
        if not spans:
            return 0.0
        inputs = ChunkInputs(head=[self.adapter.protocol.unit_open])
        used, _ = self._run_idle(0, spans[0], 1000.0 * spans[0].duration_s, inputs, history, log)
        return overrun(used, 1000.0 * spans[0].duration_s)

    def _idle(self, chunk: ChunkTrace, next_index, next_span, next_inputs, history, log) -> float:
        """Run the decoder's idle work for the next chunk; return the overrun carried into it."""
        chunk.idle_used_ms, chunk.idle_wall_ms = self._run_idle(next_index, next_span, chunk.idle_budget_ms, next_inputs,
                                                                history, log)
        return overrun(chunk.idle_used_ms, chunk.idle_budget_ms)

    def _run_idle(self, index, span, budget_ms, inputs, history, log) -> tuple[float, float]:
        self.selector.start_chunk(index)
        start = time.perf_counter()
        samples = int(round(span.duration_s * SAMPLE_RATE))
        window = IdleWindow(self.adapter, self.selector, self.clock.stopwatch(), log, index, budget_ms, inputs, samples,
                            history)
        self.decoder.idle(window)
        self.adapter.synchronize()
        return window.elapsed_ms(), (time.perf_counter() - start) * 1000.0
