"""One session's replay state, owned by the engine: the only place its history and next inputs change.

What a session's replay carries from chunk to chunk lives here: the adapter (KV cache and streaming
front-end), the session's token selector, the clock that makes the stopwatches, the forward log, the
session's committed text history, the next chunk's known inputs, each chunk's counters, and the lag.

The chunk protocol, per chunk t::

    inputs = state.inputs_for(t)          # built once, when chunk t-1 was committed (or at the start)
    step = state.chunk_step(t)            # post-audio decoding of chunk t (sees inputs_for(t), history)
    ...
    state.commit(t, step.output, tail)    # history += output; then opens chunk t+1: head and tail
    window = state.idle_window(t + 1, budget_ms, samples)   # drafts chunk t+1: the same inputs, same history

so the idle-window drafts of chunk t+1 and its post-audio step see the identical inputs object and the
identical history. ``commit`` is also where the model's context policy is applied (``ticktock.adapters.context``):
before chunk t+1 is drafted or prefilled, old whole units may be evicted from the cache; the history
keeps the session's whole text. ``history`` is the session's text in order, audio excluded: the prompt, then per chunk
the unit head (``UnitProtocol.unit_head``), the injected tail and the chunk's output.

Example::

    state = SessionState(session, adapter, Sampling().selector(adapter.protocol, session.session_id, True), clock)
    state.inputs_for(0).head            # [<unit>]
    step = state.chunk_step(0); ...; state.commit(0, step.output, tail=[])
    state.inputs_for(1).head            # [<|listen|>, </unit>, <unit>]: chunk 0's last token + the unit head
"""

from __future__ import annotations

from typing import Sequence

from ticktock.adapters.context import ContextFull
from ticktock.decoders.counters import ChunkCounters, ForwardRecord
from ticktock.decoders.step import ChunkInputs, ChunkStep
from ticktock.decoders.idle import IdleWindow
from ticktock.errors import InputDataError


class ContextLimitError(InputDataError):
    """A session outgrew the model's context and the model has no policy to make room (exit code 3)."""


class SessionState:
    def __init__(self, session, adapter, selector, clock, speech=None):
        self.session = session
        self.speech = speech  # the run's talker stage (``ticktock.replay.speech_out.SpeechOut``), None without one
        self._prepared: dict[int, dict[str, object]] = {}  # chunk -> text -> audio synthesized ahead
        self._silence: tuple[int, int, object] | None = None  # (chunk, samples, embeddings): ``prepare_silence``
        self.adapter = adapter
        self.selector = selector
        self.clock = clock
        self.forwards: list[ForwardRecord] = []
        self.lag_ms = 0.0
        self._turn_open = False  # the assistant's turn (``UnitProtocol.turn_open_after``)
        self._counters: dict[int, ChunkCounters] = {}
        self.context = adapter.context_policy()
        self._unit_starts: list[int] = []  # cache position of each unit's <unit> still in the cache
        prompt = adapter.start_session(session.system_prompt, session.tools)
        self._history: list[int] = [int(t) for t in prompt]
        self._history_view: tuple[int, ...] = ()
        self._next_index = 0
        self._next_inputs = self._open(0, carry=(), tail=())

    @property
    def history(self) -> tuple[int, ...]:
        """The session's committed text tokens so far (read-only; see the module docstring)."""
        if len(self._history_view) != len(self._history):
            self._history_view = tuple(self._history)
        return self._history_view

    def inputs_for(self, chunk_index: int) -> ChunkInputs:
        """The known inputs of the next chunk (the only chunk whose inputs exist)."""
        if chunk_index != self._next_index:
            raise ValueError(f"inputs of chunk {chunk_index} asked for, but the next chunk is {self._next_index}")
        return self._next_inputs

    def prepared_speech(self, chunk_index: int) -> dict:
        """Texts synthesized ahead for chunk ``chunk_index`` in its idle window (text -> samples); see
        ``ticktock.replay.speech_out``."""
        return self._prepared.setdefault(chunk_index, {})

    def take_prepared_speech(self, chunk_index: int) -> dict:
        """The texts synthesized ahead for chunk ``chunk_index``, removed (used or discarded once it is committed)."""
        return self._prepared.pop(chunk_index, {})

    def prepare_silence(self, chunk_index: int, samples: int, embeddings) -> None:
        """Keep the embeddings of ``samples`` of silence as chunk ``chunk_index``'s silence hypothesis, encoded from the
        front-end's state after the previous chunk's audio (in that audio's encoding step: ``ticktock.replay.engine``).
        The front-end does not move between that step and the chunk's idle window, so they are what
        ``IdleWindow.silence`` would encode there."""
        self._silence = (chunk_index, samples, embeddings)

    def prepared_silence(self, chunk_index: int, samples: int):
        """The silence hypothesis of ``samples`` kept for chunk ``chunk_index`` (``prepare_silence``), or None."""
        if self._silence is None or self._silence[:2] != (chunk_index, samples):
            return None
        return self._silence[2]

    def counters_for(self, chunk_index: int) -> ChunkCounters:
        return self._counters.setdefault(chunk_index, ChunkCounters())

    def chunk_step(self, chunk_index: int) -> ChunkStep:
        """The post-audio step of a chunk, with a fresh stopwatch."""
        start, inputs = self.adapter.cache_length, self.inputs_for(chunk_index)
        fed_at = start if inputs.head_fed_at is None else inputs.head_fed_at  # early prefill fed it in the window
        self._unit_starts.append(fed_at + len(inputs.head) - 1)
        self.counters_for(chunk_index).context_tokens = start
        return ChunkStep(self, chunk_index, self.clock.stopwatch())

    def idle_window(self, chunk_index: int, budget_ms: float, next_samples: int, arriving=None) -> IdleWindow:
        """The idle window that drafts chunk ``chunk_index`` (before its audio arrives), with a fresh stopwatch;
        ``arriving`` (``ArrivingAudio``): the chunk's audio as it streams in during the window."""
        return IdleWindow(self, chunk_index, self.clock.stopwatch(window_ms=budget_ms), budget_ms, next_samples,
                          arriving)

    def commit(self, chunk_index: int, output: Sequence[int], tail: Sequence[int]) -> ChunkInputs:
        """Chunk ``chunk_index`` is done with ``output``; open the next chunk with ``tail`` (injected text)
        after its unit head. Returns the next chunk's inputs."""
        if chunk_index != self._next_index:
            raise ValueError(f"chunk {chunk_index} committed, but the open chunk is {self._next_index}")
        self._history.extend(int(t) for t in output)
        self._turn_open = self.adapter.protocol.turn_open_after(self._turn_open, output)
        self.selector.set_turn_open(chunk_index + 1, self._turn_open)
        self._next_index = chunk_index + 1
        self._fit_context(chunk_index + 1, incoming=len(tail))
        self._next_inputs = self._open(chunk_index + 1, carry=output[-1:], tail=tail)
        return self._next_inputs

    def _fit_context(self, next_index: int, incoming: int) -> None:
        """Apply the model's context policy before chunk ``next_index``: evict old whole units, or stop."""
        try:
            count = self.context.units_to_evict(self.adapter.cache_length, incoming, self._unit_starts)
        except ContextFull as full:
            raise ContextLimitError(f"session {self.session.session_id}, chunk {next_index}: {full} "
                                    f"(model {self.adapter.name} has no eviction policy; shorten the session "
                                    f"or replay the first chunks with limit.chunks)") from None
        if count:
            start, end = self._unit_starts[0], self._unit_starts[count]
            self.adapter.evict(start, end)
            self._unit_starts = [s - (end - start) for s in self._unit_starts[count:]]
            self.counters_for(next_index).evicted_tokens = end - start

    def _open(self, chunk_index: int, carry: Sequence[int], tail: Sequence[int]) -> ChunkInputs:
        head = self.adapter.protocol.unit_head(chunk_index)
        self._history.extend([*head, *(int(t) for t in tail)])
        return ChunkInputs(head=[*(int(t) for t in carry), *head], tail=[int(t) for t in tail])
