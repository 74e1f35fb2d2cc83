"""One session held live against an endpoint: its recorded audio sent in real time, every server event stamped.

``hold_session`` connects (``Endpoint``: URL, token, timeouts), sends the protocol's opening events, then streams the
session's audio in frames of ``frame_ms`` on a **monotonic schedule from the session's start**: frame k (its audio
spans ``k * frame_ms`` to ``(k + 1) * frame_ms``) is due when its last sample would have been spoken,
``start + (k + 1) * frame_ms``, and the client waits until then, never "sleeps frame_ms after each send", so the
units do not drift; how late each frame really left is its *send lag* (a loaded client machine shows up there, not in
the server's figures). The audio is padded with silence to whole 1000 ms units, so the server closes every unit the
replay has. Every server event is stamped on the same clock, in ms from the session's start.

Meanwhile the client answers the server's function calls with the task's tool world (``ToolExecutor``, as the
replay's injector does), plays the assistant's speech in real time (``ticktock.results.playback.place``, with the
run's ``playback_delay_ms`` jitter buffer) and tells the protocol how much it has played after every frame.

The session ends when the server says so (``session.closed``), or, for a protocol without per-unit decisions, once
the server has been quiet for ``quiet_s`` after the last frame with no reply open. Every wait is bounded: no event
for ``event_timeout_s``, or the remaining units still undecided ``end_timeout_s`` after the last frame, ends the
session as failed. Each fault is one line in ``LiveRecord.failure`` naming the session, the event and what is wrong
(the run marks the session failed and goes on; ``ticktock.endpoints.run``); the server's own words in it (an error's
code and message, a close's reason) are ``server_words``: control characters escaped, cut to ``WORDS_CHARS``. What
one unit's output may hold is bounded (``LiveSession.take_output``): past ``model.max_unit_text_chars`` of text or
``model.max_unit_audio_s`` of audio the session fails, what it decided kept. What the server does that the
measurement cannot use is a fault: a unit decided twice or out of order, a speak decision (or a listen naming its
unit) for a unit whose audio was not sent, an ``error`` event, malformed JSON, audio that is not base64. A
``response.listen`` that decides no unit, as vLLM-Omni's runner sends them (``buffering``, or one that comes before
the awaited unit's audio is all sent), is counted apart and is no fault (``LiveSession.not_a_decision``).

The session opens with ``open_session``: a server that refuses it for capacity (vLLM-Omni's ``resource_exhausted``)
is asked again until ``model.capacity_wait_s`` has passed, then the session fails with the server's own words.

Example::

    record = asyncio.run(hold_session(endpoint, VllmOmniDuplex(), session, samples, units=8, tools=executor))
    record.failure, len(record.frames), [type(s.event).__name__ for s in record.events][:3]
    # (None, 80, ['SessionCreated', 'SessionUpdated', 'ResponseListen'])
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import time
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from ticktock.endpoints.endpoint import Endpoint, EndpointError, redacted
from ticktock.endpoints.protocol import EndpointProtocol
from ticktock.sessions.audio import SAMPLE_RATE
from ticktock.wire import (AudioDelta, ErrorEvent, FunctionCallArgumentsDelta, FunctionCallArgumentsDone, Other,
                           ProtocolError, ResponseCreated, ResponseDone, ResponseListen, ResponseSpeak, ServerEvent,
                           SessionClosed, SessionCreated, SessionExpired, TextDelta, TranscriptDelta, UnitDecision,
                           echoed, parse_server_event, read_json_object)

UNIT_MS = 1000
#: The server events that end a session: ``session.closed``, and vLLM-Omni's ``session.expired`` (idle past its
#: timeout).
SESSION_ENDS = (SessionClosed, SessionExpired)
POLL_S = 0.25  # the receiver looks at its deadlines at least this often
#: The most characters of a server's own words (an error's message, a close's reason) the client prints or keeps.
WORDS_CHARS = 200


def server_words(value: object) -> str:
    """A server's own words as the client prints or keeps them (a failure's line, run.json), as the server treats a
    client's values: control characters escaped (no terminal escape, newline or bell reaches a terminal or a file
    raw), then cut to ``WORDS_CHARS`` characters, ``...`` after a cut.

    >>> server_words("\\x1b[31mno\\ngo\\x07"), len(server_words("A" * 3_000_000))
    ('\\\\x1b[31mno\\\\ngo\\\\x07', 203)
    """
    return echoed(value, WORDS_CHARS)


def output_size(event: ServerEvent) -> tuple[int, float]:
    """What an event adds to its unit's output: characters of text (text, transcript, a function call's name and
    arguments) and seconds of audio.

    >>> output_size(TextDelta("r", "i", "Hi")), output_size(ResponseDone("r"))
    ((2, 0.0), (0, 0.0))
    """
    if isinstance(event, TextDelta):
        return len(event.text), 0.0
    if isinstance(event, FunctionCallArgumentsDelta):
        return len(event.delta), 0.0
    if isinstance(event, FunctionCallArgumentsDone):
        return len(event.name or "") + len(event.arguments or ""), 0.0
    if isinstance(event, AudioDelta):
        return 0, event.audio_s
    return 0, 0.0


@dataclass(frozen=True)
class SentFrame:
    """One audio frame: its index, when it was due and when it left (ms from the session's start), the unit it
    completes (None for a frame inside a unit) and the unit its audio belongs to."""

    index: int
    due_ms: float
    sent_ms: float
    completes_unit: int | None
    unit: int

    @property
    def lag_ms(self) -> float:
        return max(0.0, self.sent_ms - self.due_ms)


@dataclass(frozen=True)
class ServersOwnUnit:
    """Not a server event: the client's mark, among a session's events, that the server went on speaking in a unit
    of its own, past the audio sent (vLLM-Omni's silence units). The output after it, up to the next decision,
    belongs to no unit of the session, so it is not added to the last one's text."""


@dataclass(frozen=True)
class ListenNotSent:
    """Not a server event: the client's mark that the next unit was decided listen though no event said so
    (``EndpointProtocol.listens_unsent_while_speaking``: vLLM-Omni sends no ``response.listen`` for a unit decided
    while its reply's speech is being made). Set only once the session's every unit's audio was sent before the
    reply ended and the server has since been quiet for ``model.quiet_s``: had the server spoken in such a unit, its
    speech would have come. The unit has no decision time: its ``response_ms`` is null."""

    speak: ClassVar[bool] = False
    unit: ClassVar[None] = None
    kind: ClassVar[None] = None


@dataclass(frozen=True)
class Stamped:
    """A server event (or the client's ``ServersOwnUnit`` mark) and when it arrived (ms from the session's start)."""

    at_ms: float
    event: ServerEvent | ServersOwnUnit | ListenNotSent


@dataclass(frozen=True)
class AnsweredCall:
    """A function call the client answered: when it arrived, the call in canonical form and the answer sent."""

    at_ms: float
    call_id: str
    call: dict | None
    output: str


@dataclass
class LiveRecord:
    """What happened in one live session, all times in ms from its start on the client's monotonic clock.

    ``started_at``: the session's start on that clock (``time.monotonic()`` seconds, for the run's timeline);
    ``units``: the units whose audio was sent; ``turn_ends_ms``: when each user turn's end was committed (turn-based
    protocols); ``info``: the server's ``session.created``; ``failure``: one line when the session failed, else
    None, and ``failed_at_unit`` the unit then awaited; ``decided``: how many units were decided (per-unit
    protocols; turn-based: the units whose audio was sent before the last reply ended); ``closed_ms``: when the
    client began to close it; ``ended_by``: what ended it (``session.closed``, ``socket closed``, ``client closed``,
    or no ``session.closed`` within ``close_timeout_s``); ``wall_s``: how long it lasted; ``not_decisions``: the
    ``response.listen`` events that decided no unit (``LiveSession.not_a_decision``), counted by what they were."""

    session_id: str
    units: int
    started_at: float = 0.0
    frames: list[SentFrame] = field(default_factory=list)
    events: list[Stamped] = field(default_factory=list)
    calls: list[AnsweredCall] = field(default_factory=list)
    turn_ends_ms: list[float] = field(default_factory=list)
    info: SessionCreated | None = None
    failure: str | None = None
    failed_at_unit: int | None = None
    decided: int = 0
    closed_ms: float | None = None
    ended_by: str | None = None
    wall_s: float = 0.0
    not_decisions: dict[str, int] = field(default_factory=dict)

    def unit_end_ms(self, unit: int) -> float | None:
        """When the frame completing ``unit`` left (None if it was never sent)."""
        for frame in self.frames:
            if frame.completes_unit == unit:
                return frame.sent_ms
        return None


#: The types of the server events the client measures or acts on; an event of any other type is kept by its type
#: only when its fields are not as the wire package reads them (a server's own variant of an event the client does
#: not need).
MEASURED = frozenset(kind.type for kind in (
    SessionCreated, ResponseListen, ResponseSpeak, ResponseCreated, TextDelta, TranscriptDelta, AudioDelta,
    FunctionCallArgumentsDone, ResponseDone, ErrorEvent, *SESSION_ENDS))


def read_server_event(frame: str | bytes) -> ServerEvent:
    """A server frame as its event (``ticktock.wire.parse_server_event``); a frame of a type the client does not
    measure whose fields cannot be read is ``Other`` (a client must not fail on events it does not need), while a
    frame that is not JSON, or a measured event that cannot be read, is a ``ProtocolError``.

    >>> read_server_event('{"type": "input_audio_buffer.committed", "item_id": 5}')
    Other(type='input_audio_buffer.committed')
    >>> read_server_event('{"type": "response.speak", "ticktock": {"unit": "three"}}')
    Traceback (most recent call last):
    ...
    ticktock.wire.codec.ProtocolError: response.speak: 'ticktock.unit' must be an integer, not string
    """
    try:
        event = parse_server_event(frame)
    except ProtocolError:
        event_type = read_json_object(frame).get("type")  # (a frame that is not a JSON object raised before)
        if not isinstance(event_type, str) or event_type in MEASURED:
            raise
        event = Other(event_type)
    return Other(server_words(event.type)) if isinstance(event, Other) and len(event.type) > WORDS_CHARS else event


class SessionFault(Exception):
    """The session cannot go on; the message is the one line recorded as its failure."""


def whole_units(samples: np.ndarray, units: int) -> np.ndarray:
    """``samples`` cut or padded with silence to ``units`` whole units of 1000 ms.

    >>> whole_units(np.ones(1500, dtype=np.float32), 1).shape
    (16000,)
    """
    wanted = units * SAMPLE_RATE
    out = np.zeros(wanted, dtype=np.float32)
    out[: min(wanted, len(samples))] = samples[:wanted]
    return out


#: User turns that are not addressed to the assistant: a turn-based protocol commits none of them (a commit asks
#: the server for an answer).
NOT_ADDRESSED = frozenset({"backchannel", "background", "side_talk"})


def committed_turn(turn) -> bool:
    """Whether a turn-based protocol commits at this turn's end: a user's turn addressed to the assistant (a request,
    an interruption...; not a backchannel, background speech or side talk).

    >>> from ticktock.sessions.manifest import Turn
    >>> committed_turn(Turn("user", "request", "where is it", 1.0, 2.6)), committed_turn(Turn("user", "backchannel",
    ...     "mhm", 3.0, 3.2)), committed_turn(Turn("assistant", "answer", "here", 3.0, 4.0))
    (True, False, False)
    """
    return turn.speaker == "user" and turn.role not in NOT_ADDRESSED


def turn_end_frames(turn_ends_s: list[float], frame_ms: int, frames: int) -> set[int]:
    """The frames after which the user's turns end: the frame holding each turn's last sample.

    >>> sorted(turn_end_frames([1.25, 3.0], frame_ms=100, frames=40))
    [12, 29]
    """
    chosen = set()
    for end_s in turn_ends_s:
        k = int(np.ceil(round(1000.0 * end_s / frame_ms, 6))) - 1
        if 0 <= k < frames:
            chosen.add(k)
    return chosen


class LiveSession:
    """The state of one session being held (see ``hold_session``)."""

    def __init__(self, endpoint: Endpoint, protocol: EndpointProtocol, record: LiveRecord, tools, player):
        self.endpoint, self.protocol, self.record, self.tools, self.player = endpoint, protocol, record, tools, player
        self.began = 0.0
        self.next_unit = 0
        self.input_done = False
        self.input_done_ms: float | None = None
        self.open_reply: str | None = None
        self.input_done_at = 0.0  # these four: monotonic seconds
        self.last_decided_at: float | None = None
        self.last_output_at = 0.0
        self.reply_began = 0.0
        self.ws = None
        self.units_sent = 0  # units whose audio was all sent
        self.output_unit, self.output_chars, self.output_audio_s = -1, 0, 0.0  # take_output's count
        self.speaking: bool | None = None  # the last decision was speak (True once its unit has text); else None
        self.reply_ended_at: float | None = None  # monotonic seconds: the last response.done
        self.server_names_units = False  # the last decision named its unit (ticktock serve's ``ticktock.unit``)

    def now_ms(self) -> float:
        return 1000.0 * (time.monotonic() - self.began)

    async def send(self, events: list[dict]) -> None:
        for event in events:
            await self.ws.send_str(json.dumps(event))

    # ------------------------------------------------------------------------------------------ sending

    async def stream(self, samples: np.ndarray, turn_ends: set[int]) -> None:
        """Send every frame at its due time, the turn ends after their frames, then the end of the input."""
        frame_ms = self.endpoint.frame_ms
        per_frame = SAMPLE_RATE * frame_ms // 1000
        per_unit = UNIT_MS // frame_ms
        for k in range(len(samples) // per_frame):
            due_ms = (k + 1) * frame_ms
            await asyncio.sleep(max(0.0, (self.began + due_ms / 1000.0) - time.monotonic()))
            sent_ms = self.now_ms()
            await self.send(self.protocol.frame(samples[k * per_frame: (k + 1) * per_frame]))
            completes = (k + 1) // per_unit - 1 if (k + 1) % per_unit == 0 else None
            self.record.frames.append(SentFrame(k, due_ms, sent_ms, completes, k // per_unit))
            self.units_sent += completes is not None
            if k in turn_ends:
                self.record.turn_ends_ms.append(self.now_ms())
                await self.send(self.protocol.turn_ended())
            await self.send(self.protocol.played(self.player.played_ms(self.now_ms()), self.open_reply))
        await self.send(self.protocol.input_ended())
        self.input_done_ms = self.now_ms()
        self.input_done_at = time.monotonic()
        self.input_done = True

    # ----------------------------------------------------------------------------------------- receiving

    async def receive(self) -> None:
        """Read and stamp server events until the session has all it needs, then close it (``SessionFault`` when
        a deadline passes or the server does what the measurement cannot use).

        Every wait is bounded by an absolute deadline on the monotonic clock (``due``), never by the time since
        the last frame: a WebSocket ping, a heartbeat or an event of no interest does not move it."""
        from aiohttp import WSMsgType

        while not self.has_all():
            if self.record.ended_by is not None:
                return  # the server ended it once everything was measured
            message = await self.next_message()
            if message is None:
                continue
            at_ms = self.now_ms()
            if message.type in (WSMsgType.CLOSE, WSMsgType.CLOSED, WSMsgType.CLOSING, WSMsgType.ERROR):
                if self.measured():
                    self.record.ended_by = "socket closed"
                    return
                raise SessionFault(self.closed_early(message))
            if message.type not in (WSMsgType.TEXT, WSMsgType.BINARY):
                continue
            try:
                event = read_server_event(message.data)
            except ProtocolError as err:
                raise SessionFault(f"server event {len(self.record.events) + 1}: {err}") from None
            if self.not_a_decision(event):
                continue
            self.take_output(event)
            await self.continued_speech(event, at_ms)
            self.record.events.append(Stamped(at_ms, event))
            await self.handle(event, at_ms)
        await self.close()

    async def continued_speech(self, event: ServerEvent, at_ms: float) -> None:
        """A reply that goes on speaking in the next unit without a decision for it (``continues_speech``: vLLM-Omni
        sends ``response.speak`` once per reply): that unit is decided speak when its speech arrives, stamped then.
        Speech beyond the units whose audio was sent (the server's own silence units: vLLM-Omni goes on speaking
        without input) is counted in ``LiveRecord.not_decisions`` and marked ``ServersOwnUnit``: it is no unit's
        output (not the last unit's text). A server that names its units in its decisions (``ticktock serve``)
        decides every unit itself: nothing here applies to it, and a unit's text in several deltas stays that unit's
        (else, behind real time, a second delta would decide the next unit before the server's own decision for it)."""
        if self.server_names_units or self.speaking is None or not self.protocol.continues_speech(event, self.speaking):
            return
        if self.next_unit >= self.units_sent:
            what = "speech past the audio sent (the server's own units)"
            self.record.not_decisions[what] = self.record.not_decisions.get(what, 0) + 1
            self.record.events.append(Stamped(at_ms, ServersOwnUnit()))
            return
        implied = ResponseSpeak(getattr(event, "response_id", None), getattr(event, "item_id", None))
        self.record.events.append(Stamped(at_ms, implied))
        await self.handle(implied, at_ms)

    def not_a_decision(self, event: ServerEvent) -> bool:
        """Whether ``event`` is a ``response.listen`` that decides no unit, as vLLM-Omni's duplex runner sends them
        (``engine/duplex/session/runner.py`` and ``model_channel.py``, 0.30.0); it is counted in
        ``LiveRecord.not_decisions`` by what it was, never taken as the awaited unit's decision nor a fault:

        - ``buffering``: the runner says so (``response.metadata.buffering``) when the model's prefill of the input
          did not complete: the model decided nothing;
        - ``before its unit's audio``: a listen without a unit index while the awaited unit's audio is not all sent
          (reason named, e.g. ``silence_or_noise``: the runner's answer to a silent append when the session does not
          auto-respond). The model decides a unit from its whole audio, so it is not that unit's decision.

        A listen that names its unit (``ticktock serve``) or a speak is always taken as a decision and checked."""
        if not isinstance(event, ResponseListen) or event.unit is not None or not self.protocol.per_unit:
            return False
        if event.buffering:
            what = "buffering"
        elif self.next_unit >= self.units_sent:
            what = f"before its unit's audio ({event.reason or 'no reason given'})"
        else:
            return False
        self.record.not_decisions[what] = self.record.not_decisions.get(what, 0) + 1
        return True

    def take_output(self, event: ServerEvent) -> None:
        """Count ``event``'s output (``output_size``) against its unit's bounds, ``model.max_unit_text_chars`` and
        ``model.max_unit_audio_s``; past either, a ``SessionFault`` before it is kept: a server cannot grow the
        client's memory or a row without end, and the session ends with what it decided kept. The output belongs to
        the unit being answered: per-unit protocols, the last decided; turn-based, the last whose audio was sent."""
        chars, audio_s = output_size(event)
        if not chars and not audio_s:
            return
        unit = max(0, (self.next_unit if self.protocol.per_unit else self.units_sent) - 1)
        if unit != self.output_unit:
            self.output_unit, self.output_chars, self.output_audio_s = unit, 0, 0.0
        self.output_chars += chars
        self.output_audio_s += audio_s
        endpoint, passed = self.endpoint, None
        if self.output_chars > endpoint.max_unit_text_chars:
            passed = f"model.max_unit_text_chars={endpoint.max_unit_text_chars} characters of text"
        elif self.output_audio_s > endpoint.max_unit_audio_s:
            passed = f"model.max_unit_audio_s={endpoint.max_unit_audio_s:g} s of audio"
        if passed:
            raise SessionFault(f"unit {unit}'s output passed {passed} ({event.type}; {self.next_unit} of "
                               f"{self.record.units} units decided)")

    async def next_message(self):
        """The next frame from the server, or None when none came before the next check: a deadline that has
        passed is a ``SessionFault``; a turn-based session's quiet end, and listens not sent, are noticed here too."""
        self.listens_not_sent()
        self.check_due()
        if self.has_all():
            return None
        due = self.due()
        wake = min(self.ends_at(), due[0] if due is not None else math.inf)
        wait = min(POLL_S, max(0.0, wake - time.monotonic()))
        try:
            return await asyncio.wait_for(self.ws.receive(), timeout=max(wait, 0.001))
        except asyncio.TimeoutError:
            return None

    def listens_not_sent(self) -> None:
        """The units still undecided, decided listen without an event (``ListenNotSent``), when the protocol says its
        server sends none while its reply speaks (and names no units in its decisions: ``ticktock serve`` sends every
        one), every unit's audio was sent before the last reply ended, no reply is open, and the server has been
        quiet for ``quiet_s`` since its last output and the input's end."""
        if (not self.protocol.listens_unsent_while_speaking or self.server_names_units or not self.input_done
                or self.open_reply is not None or self.reply_ended_at is None or self.next_unit >= self.record.units):
            return
        if time.monotonic() < max(self.last_output_at, self.input_done_at) + self.endpoint.quiet_s:
            return
        last_sent = self.unit_sent_at(self.record.units - 1)
        if last_sent is None or last_sent > self.reply_ended_at:
            return
        for _ in range(self.next_unit, self.record.units):
            self.record.events.append(Stamped(self.now_ms(), ListenNotSent()))
        self.next_unit = self.record.units
        self.last_decided_at = time.monotonic()

    def due(self) -> tuple[float, str] | None:
        """The earliest deadline now in force (monotonic seconds) and what it waits for, or None: the next unit's
        decision (``unit_timeout_s`` from the end of its audio) and a turn-based reply's end (``reply_timeout_s``
        from its start). Passing one is a fault; the waits after the input (``ends_at``) are not."""
        endpoint, deadlines = self.endpoint, []
        if self.protocol.per_unit and self.next_unit < self.record.units:
            sent_at = self.unit_sent_at(self.next_unit)
            if sent_at is not None:
                deadlines.append((sent_at + endpoint.unit_timeout_s,
                                  f"unit {self.next_unit}'s decision did not come within model.unit_timeout_s="
                                  f"{endpoint.unit_timeout_s:g} s of the end of its audio"))
        if not self.protocol.per_unit and self.open_reply is not None:
            deadlines.append((self.reply_began + endpoint.reply_timeout_s,
                              f"the reply {self.open_reply} did not end within model.reply_timeout_s="
                              f"{endpoint.reply_timeout_s:g} s"))
        return min(deadlines) if deadlines else None

    def check_due(self) -> None:
        """A ``SessionFault`` when a deadline has passed."""
        due = self.due()
        if due is not None and time.monotonic() >= due[0]:
            raise SessionFault(f"{due[1]} ({self.next_unit} of {self.record.units} units decided)")

    def measured(self) -> bool:
        """Whether every unit the session will measure is in: the input is done and (per-unit protocols) every unit
        is decided."""
        return self.input_done and (not self.protocol.per_unit or self.next_unit >= self.record.units)

    def ends_at(self) -> float:
        """When (monotonic seconds) the session has all it will measure, so the client closes it (infinity while it
        cannot say yet): per-unit protocols, once every unit is decided and the reply in flight has ended, or
        ``grace_s`` after the last decision; turn-based, once the server has sent no output for ``quiet_s`` after the
        last frame with no reply open, or ``end_timeout_s`` after the last frame, for a server that keeps talking."""
        if not self.measured():
            return math.inf
        endpoint = self.endpoint
        if self.protocol.per_unit:
            return -math.inf if self.open_reply is None else (self.last_decided_at or -math.inf) + endpoint.grace_s
        quiet = max(self.last_output_at, self.input_done_at) + endpoint.quiet_s if self.open_reply is None else math.inf
        return min(self.input_done_at + endpoint.end_timeout_s, quiet)

    def has_all(self) -> bool:
        """Whether the session has all it will measure (``ends_at`` has come)."""
        return time.monotonic() >= self.ends_at()

    def unit_sent_at(self, unit: int) -> float | None:
        """When the frame completing ``unit`` left (monotonic seconds), or None if it has not."""
        sent = self.record.unit_end_ms(unit)
        return None if sent is None else self.began + sent / 1000.0

    async def close(self) -> None:
        """End the session: the protocol's closing events (``session.close`` for vLLM-Omni's duplex contract), then
        wait for ``session.closed`` or the socket's close up to ``close_timeout_s``; past it the client closes the
        socket itself. What ended it is ``LiveRecord.ended_by``; nothing measured depends on it."""
        from aiohttp import WSMsgType

        self.record.closed_ms = self.now_ms()
        try:
            await self.send(self.protocol.closing())
        except (ConnectionError, RuntimeError):
            self.record.ended_by = "socket closed"
            return
        if not self.protocol.awaits_closed:
            self.record.ended_by = "client closed"
            return
        deadline = time.monotonic() + self.endpoint.close_timeout_s
        while time.monotonic() < deadline:
            try:
                message = await asyncio.wait_for(self.ws.receive(), timeout=max(0.001, deadline - time.monotonic()))
            except asyncio.TimeoutError:
                break
            if message.type in (WSMsgType.CLOSE, WSMsgType.CLOSED, WSMsgType.CLOSING, WSMsgType.ERROR):
                self.record.ended_by = "socket closed"
                return
            if message.type not in (WSMsgType.TEXT, WSMsgType.BINARY):
                continue
            try:
                event = read_server_event(message.data)
                self.take_output(event)
            except (ProtocolError, SessionFault):
                continue  # the session is measured: a bad frame, or output past its bounds, while closing is dropped
            self.record.events.append(Stamped(self.now_ms(), event))
            if isinstance(event, SESSION_ENDS):
                self.record.ended_by = event.type
                return
        self.record.ended_by = f"no session.closed within model.close_timeout_s={self.endpoint.close_timeout_s:g} s"

    async def say_goodbye(self) -> None:
        """After a fault: the protocol's closing events, best effort and without waiting (a socket dropped without
        them reads as a resumable disconnect to vLLM-Omni, which then holds the session's slot for its grace)."""
        if self.ws is not None and not self.ws.closed:
            with contextlib.suppress(ConnectionError, RuntimeError, asyncio.TimeoutError):
                await asyncio.wait_for(self.send(self.protocol.closing()), timeout=1.0)
            self.record.ended_by = self.record.ended_by or "client closed after a fault"

    def closed_early(self, message) -> str:
        code = getattr(self.ws, "close_code", None)
        why = f" (close code {code}{': ' + server_words(message.extra) if message.extra else ''})" if code else ""
        return (f"the server closed the connection{why} after {self.next_unit} of {self.record.units} units were "
                "decided")

    async def handle(self, event: ServerEvent, at_ms: float) -> None:
        """React to one event."""
        if isinstance(event, ErrorEvent):
            raise SessionFault(f"server error {server_words(event.code or '')}: {server_words(event.message)}"
                               .replace("  ", " "))
        if isinstance(event, SessionCreated) and self.record.info is None:
            self.record.info = event
        elif isinstance(event, UnitDecision):
            self.check_decision(event)
            self.server_names_units = event.unit is not None
            self.last_decided_at = time.monotonic()
            self.speaking = False if event.speak else None
        elif isinstance(event, TextDelta) and self.speaking is not None and event.text.strip():
            self.speaking = True
        elif isinstance(event, ResponseCreated):
            self.open_reply = event.response_id or "reply"
            self.reply_began = self.last_output_at = time.monotonic()
        elif isinstance(event, ResponseDone):
            self.open_reply = None
            self.speaking = None
            self.last_output_at = self.reply_ended_at = time.monotonic()
        elif isinstance(event, AudioDelta):
            self.player.add(at_ms, event.audio_s, event.response_id)
            self.last_output_at = time.monotonic()
        elif isinstance(event, FunctionCallArgumentsDone):
            self.last_output_at = time.monotonic()
            await self.answer(event, at_ms)
        elif isinstance(event, SESSION_ENDS):
            if not self.measured():
                raise SessionFault(f"the server ended the session ({event.type}: "
                                   f"{server_words(event.reason or 'no reason given')}) "
                                   f"after {self.next_unit} of {self.record.units} units were decided")
            self.record.ended_by = event.type

    def decided_units(self) -> int:
        """How many units, from the first, are decided: per-unit protocols, those the server decided; turn-based,
        all of them once the session has all it needs, else the units whose audio was all sent before the last
        reply ended (what came after may still be answered)."""
        if self.protocol.per_unit:
            return self.next_unit
        if self.measured() and self.record.failure is None:
            return self.record.units
        done = [stamped.at_ms for stamped in self.record.events if isinstance(stamped.event, ResponseDone)]
        if not done:
            return 0
        return sum(1 for frame in self.record.frames if frame.completes_unit is not None and frame.sent_ms <= done[-1])

    def check_decision(self, event: UnitDecision) -> None:
        unit = self.next_unit if event.unit is None else event.unit
        what = "listen" if not event.speak else "speak"
        if unit < self.next_unit:
            raise SessionFault(f"response.{what} for unit {unit}: that unit was already decided")
        if unit > self.next_unit:
            raise SessionFault(f"response.{what} for unit {unit} before unit {self.next_unit}'s decision (out of "
                               "order)")
        if unit >= self.units_sent:
            raise SessionFault(f"response.{what} for unit {unit}, whose audio was not all sent yet")
        self.next_unit = unit + 1

    async def answer(self, event: FunctionCallArgumentsDone, at_ms: float) -> None:
        from ticktock.world.injection import INVALID_CALL_RESPONSE, parse_tool_call

        try:
            arguments = json.loads(event.arguments) if event.arguments else {}
        except json.JSONDecodeError:
            arguments = None
        call = parse_tool_call(json.dumps({"name": event.name, "arguments": arguments})) if isinstance(
            arguments, dict) else None
        output = INVALID_CALL_RESPONSE if call is None or self.tools is None else self.tools.respond(call)
        self.record.calls.append(AnsweredCall(at_ms, event.call_id, call, output))
        await self.send(self.protocol.answer(event.call_id, output))


async def hold_session(endpoint: Endpoint, protocol: EndpointProtocol, session, samples: np.ndarray, units: int,
                       tools=None, playback_delay_ms: float = 0.0) -> LiveRecord:
    """Hold one session against the endpoint (see the module docstring); the record, with ``failure`` set when the
    session failed once connected. ``EndpointError`` when it cannot connect or the server refuses the session before
    any audio (the run stops: no session could be held)."""
    import aiohttp

    from ticktock.endpoints.playback import LivePlayer

    record = LiveRecord(session.session_id, units)
    live = LiveSession(endpoint, protocol, record, tools, LivePlayer(playback_delay_ms))
    audio = whole_units(samples, units)
    frames = len(audio) // (SAMPLE_RATE * endpoint.frame_ms // 1000)
    turn_ends = turn_end_frames([t.end_s for t in session.turns if committed_turn(t)], endpoint.frame_ms, frames)
    async with client_session(endpoint) as http:
        await open_session(http, live, session)
        try:
            record.started_at = live.began = time.monotonic()
            await run_both(live, audio, turn_ends)
        except SessionFault as err:
            record.failure = f"session {session.session_id}: {err}"
        except (aiohttp.ClientError, ConnectionError) as err:
            record.failure = (f"session {session.session_id}: the connection failed: {type(err).__name__}: "
                              f"{' '.join(str(err).split())[:200]}")
        finally:
            record.wall_s = time.monotonic() - live.began if live.began else 0.0
            record.decided = live.decided_units()
            if record.failure is not None:
                record.failed_at_unit = min(live.next_unit if protocol.per_unit else record.decided, units)
                await live.say_goodbye()
            if not live.ws.closed:
                await live.ws.close()
    return record


class Redirected(Exception):
    """The server answered the handshake with a redirect: the client does not follow it."""


def client_session(endpoint: Endpoint):
    """The HTTP client session of one connection: its connect timeout, and a redirect ends the handshake
    (``Redirected``): a live run connects only to the URL given."""
    import aiohttp

    async def refuse(session, context, params) -> None:
        raise Redirected(str(params.response.headers.get("Location", "another URL")))

    tracing = aiohttp.TraceConfig()
    tracing.on_request_redirect.append(refuse)
    return aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None, connect=endpoint.connect_timeout_s),
                                 trace_configs=[tracing])


async def connect(http, endpoint: Endpoint, protocol: EndpointProtocol):
    """The WebSocket to the endpoint; ``EndpointError`` (one line, the URL redacted) when it cannot be opened."""
    import aiohttp

    url = protocol.url(endpoint.url)
    try:
        return await asyncio.wait_for(http.ws_connect(url, headers=endpoint.headers(), autoping=True,
                                                      max_msg_size=64 * 1024 * 1024),
                                      timeout=endpoint.connect_timeout_s)
    except asyncio.TimeoutError:
        raise EndpointError(f"endpoint {redacted(url)}: no connection within {endpoint.connect_timeout_s} s "
                            "(model.connect_timeout_s)") from None
    except Redirected as err:
        raise EndpointError(f"endpoint {redacted(url)}: the server redirects the WebSocket to {redacted(str(err))}; "
                            "a live run connects only to the URL given (give that URL as model.url)") from None
    except aiohttp.WSServerHandshakeError as err:
        raise EndpointError(f"endpoint {redacted(url)}: the server refused the WebSocket (HTTP {err.status}: "
                            f"{server_words(err.message)})") from None
    except (aiohttp.ClientError, OSError) as err:
        raise EndpointError(f"endpoint {redacted(url)}: cannot connect ({type(err).__name__}: "
                            f"{' '.join(str(err).split())[:200]})") from None


#: The error codes of a server that refuses a session for capacity (vLLM-Omni's ``duplex_session.max_sessions``:
#: ``resource_exhausted``, marked retryable): the client asks again (``open_session``).
CAPACITY_CODES = frozenset({"resource_exhausted"})
#: The waits between two asks of a server that refused for capacity (s): doubling from the first to the last.
CAPACITY_BACKOFF_S = (0.25, 2.0)


class CapacityRefused(EndpointError):
    """The server refused the session for capacity, every time it was asked within ``model.capacity_wait_s``."""


async def open_session(http, live: LiveSession, session) -> None:
    """Connect and open the session (``connect``, ``opening``); a refusal for capacity is asked again, on a new
    connection, with a doubling wait, until ``model.capacity_wait_s`` has passed since the first ask: then
    ``CapacityRefused`` with the server's own words and how long it was asked. Every other refusal is the
    ``EndpointError`` of ``opening``."""
    endpoint = live.endpoint
    deadline = time.monotonic() + endpoint.capacity_wait_s
    wait, asks = CAPACITY_BACKOFF_S[0], 1
    while True:
        live.ws = await connect(http, endpoint, live.protocol)
        try:
            await opening(live, session)
            return
        except CapacityRefused as err:
            await live.ws.close()
            left = deadline - time.monotonic()
            if left <= 0:
                raise CapacityRefused(f"{err} (asked {asks} times in {endpoint.capacity_wait_s:g} s: "
                                      "model.capacity_wait_s)") from None
            await asyncio.sleep(min(wait, left))
            wait, asks = min(2 * wait, CAPACITY_BACKOFF_S[1]), asks + 1


async def opening(live: LiveSession, session) -> None:
    """Send the opening events and wait for ``session.created``; a server that refuses the session (an ``error``
    event, or closing) before any audio is an ``EndpointError`` (``CapacityRefused`` for capacity)."""
    from aiohttp import WSMsgType

    url = redacted(live.protocol.url(live.endpoint.url))
    try:
        await live.send(live.protocol.opening(session.system_prompt, list(session.tools or []),
                                              live.endpoint.session_output()))
    except (ConnectionError, RuntimeError) as err:
        raise EndpointError(f"endpoint {url}: the connection closed before the session opened ({err})") from None
    deadline = time.monotonic() + live.endpoint.connect_timeout_s
    while live.record.info is None:
        left = deadline - time.monotonic()
        if left <= 0:
            raise EndpointError(f"endpoint {url}: no session.created within {live.endpoint.connect_timeout_s} s "
                                "(model.connect_timeout_s)")
        try:
            message = await asyncio.wait_for(live.ws.receive(), timeout=left)  # a ping never extends it
        except asyncio.TimeoutError:
            continue
        if message.type != WSMsgType.TEXT:
            if message.type in (WSMsgType.CLOSE, WSMsgType.CLOSED, WSMsgType.CLOSING, WSMsgType.ERROR):
                raise EndpointError(f"endpoint {url}: the server closed the connection before the session opened"
                                    f"{' (' + server_words(message.extra) + ')' if message.extra else ''}")
            continue
        try:
            event = read_server_event(message.data)
        except ProtocolError as err:
            raise EndpointError(f"endpoint {url}: its first events cannot be read: {err}") from None
        if isinstance(event, ErrorEvent):
            refusal = CapacityRefused if event.code in CAPACITY_CODES else EndpointError
            raise refusal(f"endpoint {url}: the server refused the session: {server_words(event.code)}: "
                          f"{server_words(event.message)}")
        if isinstance(event, SessionCreated):
            live.record.info = event


async def run_both(live: LiveSession, audio: np.ndarray, turn_ends: set[int]) -> None:
    """Stream and receive together; the first fault of either ends both."""
    sending = asyncio.ensure_future(live.stream(audio, turn_ends))
    receiving = asyncio.ensure_future(live.receive())
    try:
        done, _ = await asyncio.wait({sending, receiving}, return_when=asyncio.FIRST_EXCEPTION)
        for task in done:
            task.result()  # raise the fault
        await receiving
    finally:
        for task in (sending, receiving):
            if not task.done():
                task.cancel()
        await asyncio.gather(sending, receiving, return_exceptions=True)
