"""One served session: a client's live audio replayed through the one replay loop, unit by unit, in real time.

``ServedModel`` is what every session of a server shares: the model adapter built once from the config (each
session replays on a ``replica()``: the same weights, a KV cache of its own), the ``ServedDevice`` whose scheduler
orders their device work (the replay's scheduler under real time: ``ticktock.serve.live``), and how to build a decoder
and a talker. ``ServedSession`` is one client: it owns a ``LiveAudio`` the server appends to, and a lane of the served
device on which ``ReplayEngine.replay`` runs (the same engine, decoder and talker code as a replay: no second decoding
loop). After each unit it reports a ``ServedUnit`` through ``on_unit``; the server turns that into the wire's events
(``ticktock.wire``: its ``UnitReport`` is what of a ``ServedUnit`` the client is sent).

Tool calls stay on the client's side, as in a deployment: the engine's tool executor (``ClientTools``) reports the
call through ``on_call`` and waits, up to ``tool_timeout_s``, for the client's output (``answer``), while the device
serves the other sessions; that output enters the next unit after its audio, as a replayed tool response does.

A unit's served latency (``ServedUnit.served_ms``) counts from the moment its last sample arrived at the server
(``LiveAudio.completed_at``) to the moment the report is made, on this machine's wall clock; ``post_audio_ms`` is the
engine's own measure of the same unit (its post-audio work plus what an idle window carried into it).

Example (the embedded model and AR; a client streams audio into ``session.audio`` in real time)::

    model = ServedModel(cfg)                                  # cfg: the composed serve config
    session = ServedSession(model, "s1", on_unit=print, on_call=print, on_end=print)
    session.start()
    session.audio.append(samples)                             # ... as they arrive
    session.audio.end()                                       # the client is done: it ends after its units
    session.cancel()                                          # or: stop now, report nothing more (session.close)
    model.close()                                             # the server is going away: the device stops
"""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

from ticktock.replay.audio_source import AudioEnded
from ticktock.replay.engine import ChunkTrace, ReplayEngine
from ticktock.serve.live import HOST_CODE_BOUND_S, LiveAudio, ServedDevice
from ticktock.sessions.manifest import Session

MAX_SESSION_S = 3600.0  # the longest a served session may last (its units are numbered up to here)
TOOL_TIMEOUT_S = 30.0
WRITE_WAIT_S = 0.002  # the longest a session waits, after a decision, for the server to write that unit's events
LIVE_AUDIO_PATH = Path("live")  # a served session has no audio file: its audio arrives (``LiveAudio``)


@dataclass
class ServedUnit:
    """What one served unit did (the session's record of it; what of it the client is sent is the wire's
    ``ticktock.wire.UnitReport``). ``decision`` is the duplex contract's (``listen`` or ``speak``; a unit that calls a
    tool speaks); ``kind`` is TickTock's (listen, speak, tool, other); ``text`` the unit's committed text, ``spoken``
    the words it says (its spoken tokens decoded as they are, so units join into the reply); ``served_ms`` from the
    unit's last sample arriving to this report (wall clock); ``post_audio_ms`` the engine's post-audio latency of the
    unit; ``draft_accepted`` whether a draft made in the idle window was accepted in the unit's audio pass (None when
    no draft was offered)."""

    index: int
    decision: str
    kind: str
    text: str
    spoken: str
    served_ms: float
    post_audio_ms: float
    deadline_miss: bool
    draft_accepted: bool | None
    accepted_draft_tokens: int
    output_tokens: list[int] = field(default_factory=list)


class ServedModel:
    """What the sessions of one server share: the model, the served device (its scheduler: ``draft_policy`` and
    ``concurrency.batching``, ``concurrency.max_batch``, ``concurrency.batch_encodings`` of the config; its bound on a
    session's host code, ``serve.host_code_bound_s``), the config
    that builds decoders and talkers. Built once, before the server listens (so a bad config fails before anything is
    served); ``close`` stops the device."""

    def __init__(self, cfg):
        from ticktock.clocks.wall import WallClock
        from ticktock.decoders.selection import Sampling
        from ticktock.replay.concurrency import ConcurrencySettings
        from ticktock.replay.config import build, build_checked
        from ticktock.adapters.base import ModelAdapter

        self.cfg = cfg
        self.concurrency = ConcurrencySettings.parse(cfg.get("concurrency"))
        policy = build(cfg.draft_policy)
        self.adapter = build_checked(cfg.model, "model", ModelAdapter)
        self.clock = WallClock(self.adapter.synchronize)
        self.device = ServedDevice(self.clock, policy, batching=self.concurrency.batching,
                                   max_batch=self.concurrency.max_batch,
                                   batch_encodings=self.concurrency.batch_encodings,
                                   host_code_bound_s=(cfg.get("serve") or {}).get("host_code_bound_s",
                                                                                  HOST_CODE_BOUND_S))
        self.sampling = Sampling(seed=cfg.seed, **cfg.sampling)
        self._build = build

    def close(self, timeout_s: float = 5.0) -> None:
        """Stop the device once its sessions have ended (cancel them first), waiting up to ``timeout_s``."""
        self.device.stop(timeout_s)

    @property
    def model_name(self) -> str:
        """The served model adapter's name (``embedded``, ``minicpmo45``...), as ``/health`` and ``session.created``
        give it."""
        return self.adapter.name

    @property
    def decoder_name(self) -> str:
        """The served decoder's name (``ar``, ``speclisten_stream``...), as ``/health`` and ``session.created`` give
        it."""
        return str(self.cfg.decoder.name)

    @property
    def talker_name(self) -> str:
        """The talker that speaks the served replies (``none``, ``espeak``...), as ``session.created`` gives it."""
        return str((self.cfg.get("talker") or {}).get("name") or "none")

    def decoder(self):
        """A fresh decoder of the config's ``decoder`` (each session has its own: decoders keep per-session state)."""
        return self._build(self.cfg.decoder)

    def engine(self, lane, tools):
        """A replay engine for one session on its lane of the served device: a replica of the model, a fresh
        decoder, its talker."""
        from ticktock.world.injection import ToolCallInjector
        from ticktock.replay.config import build_speech

        engine = ReplayEngine(self.adapter.replica(), self.decoder(), self.clock, self.sampling,
                              ToolCallInjector(tools), None, build_speech(self.cfg, self.clock))
        engine.clock = lane
        lane.where = lambda: engine.where
        return engine


class ServedAudio(LiveAudio):
    """A served session's ``LiveAudio`` that can also be cancelled: ``cancel()`` ends it at once, and the engine's
    next wait for audio ends the session even where whole units are still buffered (a graceful ``session.close``
    decides nothing more; ``end()`` lets the buffered units be decided).

    >>> import numpy as np
    >>> audio = ServedAudio()
    >>> audio.append(np.zeros(32_000, dtype=np.float32)); audio.cancel()
    >>> audio.wait_for(1000.0)
    Traceback (most recent call last):
    ...
    ticktock.replay.audio_source.AudioEnded: the session was closed: no more units are decided
    """

    cancelled = False

    def cancel(self) -> None:
        with self._changed:
            self.cancelled = True
        self.end()

    def wait_for(self, at_ms: float) -> None:
        if self.cancelled:
            raise AudioEnded("the session was closed: no more units are decided")
        super().wait_for(at_ms)
        if self.cancelled:
            raise AudioEnded("the session was closed: no more units are decided")


class ClientTools:
    """The engine's tool executor for a served session: a call is reported to the client (``on_call(call_id,
    call)``) and answered by the client's output (``answer``, from the server's thread), awaited up to ``timeout_s``
    on the session's lane (``wait_event``: the device serves the other sessions meanwhile); no answer in time is
    answered with an error object, so the session goes on. ``poke`` wakes the device when an answer comes."""

    def __init__(self, on_call: Callable[[str, dict], None], timeout_s: float = TOOL_TIMEOUT_S):
        self.on_call = on_call
        self.timeout_s = timeout_s
        self.wait_event: Callable[[Callable[[], bool], float], None] | None = None  # the lane's (set at start)
        self.poke: Callable[[], None] = lambda: None
        self._answers: dict[str, str | None] = {}
        self.cancelled = False

    def respond(self, call: dict) -> str:
        call_id = f"call_{uuid.uuid4().hex[:16]}"
        if self.cancelled:
            return '{"error": "the session was closed"}'
        self._answers[call_id] = None
        self.on_call(call_id, call)
        try:
            self.wait_event(lambda: self._answers.get(call_id) is not None or self.cancelled, self.timeout_s)
            answer = self._answers.get(call_id)
        finally:
            self._answers.pop(call_id, None)
        if answer is not None:
            return answer
        if self.cancelled:
            return '{"error": "the session was closed"}'
        return f'{{"error": "the client sent no output for call {call_id} within {self.timeout_s:g} s"}}'

    def cancel(self) -> None:
        """The session is closed: a call still waiting is answered with an error object at once (and later ones
        too), so the session is not held for ``timeout_s``."""
        self.cancelled = True
        self.poke()

    def answer(self, call_id: str, output: str) -> bool:
        """Deliver the client's output for ``call_id``; False when no call of that id is waiting (answered twice: the
        first answer stands)."""
        if call_id not in self._answers:
            return False
        if self._answers.get(call_id) is None:
            self._answers[call_id] = output
            self.poke()
        return True


class ServedSession:
    """One client's session (see the module docstring). ``on_unit(ServedUnit)`` as soon as a unit is decided,
    ``on_speech(unit, samples, sample_rate)`` once a talker has spoken it, ``on_call(call_id, call)`` and
    ``on_end(error or None)`` are called from the served device's thread (``on_end`` from the caller's when the
    session never started). ``written(unit)`` says whether the server has written that unit's events (default:
    always; ``_let_it_leave``)."""

    def __init__(self, model: ServedModel, session_id: str, on_unit, on_call, on_end, system_prompt: str | None = None,
                 tools: tuple = (), max_ahead_s: float = 30.0, tool_timeout_s: float = TOOL_TIMEOUT_S, on_speech=None,
                 written: Callable[[int], bool] | None = None):
        self.model = model
        self.session = Session(session_id, "live", LIVE_AUDIO_PATH, MAX_SESSION_S,
                               system_prompt=system_prompt, tools=tuple(tools))
        self.audio = ServedAudio(max_ahead_s=max_ahead_s)
        self.audio.on_change = model.device.poke
        self.tools = ClientTools(on_call, tool_timeout_s)
        self.tools.poke = model.device.poke
        self.on_unit = on_unit
        self.on_speech = on_speech
        self.on_end = on_end
        self.units: list[ServedUnit] = []
        self.written = written or (lambda index: True)  # whether unit ``index``'s events have been written
        self.cancelled = False
        self._lane = None
        self._ended = threading.Event()

    def configure(self, system_prompt: str | None = None, tools: tuple | None = None) -> None:
        """Change the prompt or tools before the session starts (``session.update``)."""
        if self._lane is not None:
            raise RuntimeError("the session has started: its prompt and tools are fixed")
        changes = {k: v for k, v in (("system_prompt", system_prompt), ("tools", tools)) if v is not None}
        if "tools" in changes:
            changes["tools"] = tuple(changes["tools"])
        self.session = replace(self.session, **changes)

    @property
    def started(self) -> bool:
        return self._lane is not None

    def start(self) -> None:
        """Admit the session to the served device: its replay starts there."""
        self._lane = self.model.device.lane(self.audio, self.model.adapter.protocol, self._end)
        self.tools.wait_event = self._lane.wait_event
        self.model.device.admit(self._lane, self._run)

    def close(self, timeout_s: float = 10.0) -> None:
        """End the audio and wait for the session (it ends after its remaining whole units)."""
        self.audio.end()
        if self._lane is None:
            self._end(None)  # no audio ever came: the session ends here
        else:
            self._ended.wait(timeout_s)

    def cancel(self) -> None:
        """Stop now (a graceful ``session.close``, a closed socket, the server's shutdown): nothing more is reported,
        no unit not yet being decided is decided, a tool call waiting for its output is answered with an error.
        ``on_end`` is still called once the session ends (at once when no audio ever came). Returns at once; ``join``
        waits for the end."""
        if self.cancelled:
            return
        self.cancelled = True
        self.tools.cancel()
        self.audio.cancel()
        if self._lane is None:
            self._end(None)

    def join(self, timeout_s: float) -> None:
        """Wait up to ``timeout_s`` for the session to end (nothing to wait for when it never started)."""
        if self._lane is not None:
            self._ended.wait(timeout_s)

    @property
    def running(self) -> bool:
        """Whether the session is still running on the device."""
        return self._lane is not None and not self._ended.is_set()

    def _end(self, error: BaseException | None) -> None:
        if self._ended.is_set():
            return
        self._ended.set()
        self.on_end(error)

    def _run(self, lane) -> None:
        """The session's replay, in its greenlet on the served device (an error ends it alone: ``on_end(error)``)."""
        engine = self.model.engine(lane, self.tools)
        lane.session = self.session
        lane.watch_from_now()  # its own code is bounded from here (serve.host_code_bound_s); building it was not

        def observe(chunk) -> None:  # what the draft policy may read of the unit
            lane.observe_chunk(chunk.kind, chunk.output, self.audio.last_chunk)

        engine.replay(self.session, self.audio, on_decided=self._report, on_spoken=self._speech, on_chunk=observe)

    def _words(self, output) -> str:
        """The words a unit says (its spoken tokens decoded as they are, spaces kept, so units join into the reply)."""
        from ticktock.adapters.base import spoken_tokens

        ids = spoken_tokens(output, self.model.adapter.protocol)
        return self.model.adapter.decode_tokens(ids) if ids else ""

    def _report(self, chunk: ChunkTrace) -> None:
        """The unit the engine has decided, recorded (``units``) and reported (``on_unit``)."""
        index = chunk.span.index
        arrived = self.audio.completed_at(index)
        served_ms = (time.perf_counter() - arrived) * 1000.0 if arrived is not None else float("nan")
        counters = chunk.counters
        offered = counters.draft_tokens > 0 or counters.window_forwards > 0
        unit = ServedUnit(
            index=index, decision="listen" if chunk.kind in ("listen", "other") else "speak", kind=chunk.kind,
            text=self.model.adapter.decode_tokens(chunk.output), spoken=self._words(chunk.output),
            served_ms=served_ms, post_audio_ms=chunk.timing.latency_ms, deadline_miss=chunk.timing.missed_deadline,
            draft_accepted=(counters.accepted_draft_tokens > 0) if offered else None,
            accepted_draft_tokens=counters.accepted_draft_tokens, output_tokens=list(chunk.output))
        self.units.append(unit)
        if not self.cancelled:
            self.on_unit(unit)
            self._let_it_leave(index)

    def _let_it_leave(self, index: int) -> None:
        """Wait until the server has written unit ``index``'s events (``written``), at most ``WRITE_WAIT_S``, before
        the session goes on to its next idle window. The wait is on the session's lane, so the device runs other
        sessions' work meanwhile; without it the device thread would start this session's drafting at once and hold
        the interpreter while the server's loop thread sends the decision (measured on a 2-core CPU: about 1 ms of
        serving overhead per unit)."""
        if self._lane is not None and not self.written(index):
            self._lane.wait_event(lambda: self.written(index) or self.cancelled, WRITE_WAIT_S)

    def _speech(self, chunk: ChunkTrace) -> None:
        """The unit's speech, once its talker has synthesized it: ``on_speech(unit, samples, sample_rate)``."""
        piece = chunk.speech
        if self.cancelled or self.on_speech is None:
            return
        if piece is not None and piece.samples is not None and len(piece.samples):
            self.on_speech(chunk.span.index, piece.samples, piece.sample_rate)
