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
(the run marks the session failed and goes on; ``ticktock.endpoints.run``). What the server does that the
measurement cannot use is a fault: a unit decided twice or out of order, a decision for a unit whose audio was not
sent, an ``error`` event, malformed JSON, audio that is not base64.

Example::

    record = asyncio.run(hold_session(endpoint, VllmOmniDuplex(), session, samples, units=8, tools=executor))
    record.failure, len(record.frames), [type(s.event).__name__ for s in record.events][:3]
    # (None, 80, ['SessionStarted', 'Other', 'UnitDecided'])
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field

import numpy as np

from ticktock.endpoints.endpoint import Endpoint, EndpointError, redacted
from ticktock.endpoints.protocol import EndpointProtocol
from ticktock.serve.client_events import (AudioDelta, CallMade, ReplyDone, ReplyStarted, ServerError, ServerEvent,
                                          SessionEnded, SessionStarted, UnitDecided, parse_server_event)
from ticktock.serve.protocol import ProtocolError
from ticktock.sessions.audio import SAMPLE_RATE

UNIT_MS = 1000


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
class Stamped:
    """A server event and when it arrived (ms from the session's start)."""

    at_ms: float
    event: ServerEvent


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
    None; ``wall_s``: how long it lasted."""

    session_id: str
    units: int
    started_at: float = 0.0
    frames: list[SentFrame] = field(default_factory=list)
    events: list[Stamped] = field(default_factory=list)
    calls: list[AnsweredCall] = field(default_factory=list)
    turn_ends_ms: list[float] = field(default_factory=list)
    info: SessionStarted | None = None
    failure: str | None = None
    wall_s: float = 0.0

    def unit_end_ms(self, unit: int) -> float | None:
        """When the frame completing ``unit`` left (None if it was never sent)."""
        for frame in self.frames:
            if frame.completes_unit == unit:
                return frame.sent_ms
        return None


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
        self.waiting_s = 0.0  # how long the last wait for a server event could last (what timed out)
        self.ws = None

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
            if k in turn_ends:
                self.record.turn_ends_ms.append(self.now_ms())
                await self.send(self.protocol.turn_ended())
            await self.send(self.protocol.played(self.player.played_ms(self.now_ms()), self.open_reply))
        await self.send(self.protocol.input_ended())
        self.input_done_ms = self.now_ms()
        self.input_done = True

    # ----------------------------------------------------------------------------------------- receiving

    async def receive(self) -> None:
        """Read and stamp server events until the session ends (``SessionFault`` when it cannot)."""
        from aiohttp import WSMsgType

        while True:
            try:
                self.waiting_s = self.wait_s()
                message = await self.ws.receive(timeout=self.waiting_s)
            except asyncio.TimeoutError:
                if not self.protocol.per_unit and self.open_reply is None:
                    if self.finished():
                        return  # a turn-based session ends once the server is quiet after the last frame
                    continue  # a turn-based server says nothing while the user speaks: nothing is awaited yet
                raise
            at_ms = self.now_ms()
            if message.type in (WSMsgType.CLOSE, WSMsgType.CLOSED, WSMsgType.CLOSING, WSMsgType.ERROR):
                if self.finished():
                    return
                raise SessionFault(self.closed_early(message))
            if message.type not in (WSMsgType.TEXT, WSMsgType.BINARY):
                continue
            try:
                event = parse_server_event(message.data)
            except ProtocolError as err:
                raise SessionFault(f"server event {len(self.record.events) + 1}: {err}") from None
            self.record.events.append(Stamped(at_ms, event))
            if await self.handle(event, at_ms):
                return

    def wait_s(self) -> float:
        """How long the next event may take: ``event_timeout_s``, shortened to ``quiet_s`` once a turn-based session's
        input is done and no reply is open, and to what is left of ``end_timeout_s`` after the last frame."""
        wait = self.endpoint.event_timeout_s
        if self.input_done:
            left = self.endpoint.end_timeout_s - (self.now_ms() - self.input_done_ms) / 1000.0
            wait = min(wait, max(0.0, left))
            if not self.protocol.per_unit and self.open_reply is None:
                wait = min(wait, self.endpoint.quiet_s)
        return max(wait, 0.001)

    def finished(self) -> bool:
        """Whether the session has all it needs: every unit decided (per-unit protocols), or the input done."""
        if self.protocol.per_unit:
            return self.input_done and self.next_unit >= self.record.units
        return self.input_done

    def closed_early(self, message) -> str:
        code = getattr(self.ws, "close_code", None)
        why = f" (close code {code}{': ' + str(message.extra) if message.extra else ''})" if code else ""
        return (f"the server closed the connection{why} after {self.next_unit} of {self.record.units} units were "
                "decided")

    async def handle(self, event: ServerEvent, at_ms: float) -> bool:
        """React to one event; True when the session is over."""
        if isinstance(event, ServerError):
            raise SessionFault(f"server error {event.code or ''}: {event.message}".replace("  ", " "))
        if isinstance(event, SessionStarted) and self.record.info is None:
            self.record.info = event
        elif isinstance(event, UnitDecided):
            self.check_decision(event)
        elif isinstance(event, ReplyStarted):
            self.open_reply = event.response_id or "reply"
        elif isinstance(event, ReplyDone):
            self.open_reply = None
        elif isinstance(event, AudioDelta):
            self.player.add(at_ms, event.audio_s, event.response_id)
        elif isinstance(event, CallMade):
            await self.answer(event, at_ms)
        elif isinstance(event, SessionEnded):
            if not self.finished():
                raise SessionFault(f"the server ended the session ({event.reason or 'no reason given'}) after "
                                   f"{self.next_unit} of {self.record.units} units were decided")
            return True
        return False

    def check_decision(self, event: UnitDecided) -> None:
        unit = self.next_unit if event.unit is None else event.unit
        what = "listen" if not event.speak else "speak"
        if unit < self.next_unit:
            raise SessionFault(f"response.{what} for unit {unit}: that unit was already decided")
        if unit > self.next_unit:
            raise SessionFault(f"response.{what} for unit {unit} before unit {self.next_unit}'s decision (out of "
                               "order)")
        sent = sum(1 for frame in self.record.frames if frame.completes_unit is not None)
        if unit >= sent:
            raise SessionFault(f"response.{what} for unit {unit}, whose audio was not all sent yet")
        self.next_unit = unit + 1

    async def answer(self, event: CallMade, at_ms: float) -> None:
        from ticktock.replay.injection import INVALID_CALL_RESPONSE, parse_tool_call

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
    turn_ends = turn_end_frames([t.end_s for t in session.turns if t.role == "user"], endpoint.frame_ms, frames)
    async with client_session(endpoint) as http:
        live.ws = await connect(http, endpoint, protocol)
        try:
            await opening(live, session)
            record.started_at = live.began = time.monotonic()
            await run_both(live, audio, turn_ends)
        except SessionFault as err:
            record.failure = f"session {session.session_id}: {err}"
        except (aiohttp.ClientError, ConnectionError, asyncio.TimeoutError) as err:
            record.failure = f"session {session.session_id}: {describe_error(err, live)}"
        finally:
            record.wall_s = time.monotonic() - live.began if live.began else 0.0
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
                            f"{err.message})") from None
    except (aiohttp.ClientError, OSError) as err:
        raise EndpointError(f"endpoint {redacted(url)}: cannot connect ({type(err).__name__}: "
                            f"{' '.join(str(err).split())[:200]})") from None


async def opening(live: LiveSession, session) -> None:
    """Send the opening events and wait for ``session.created``; a server that refuses the session (an ``error``
    event, or closing) before any audio is an ``EndpointError``."""
    from aiohttp import WSMsgType

    url = redacted(live.protocol.url(live.endpoint.url))
    try:
        await live.send(live.protocol.opening(session.system_prompt, list(session.tools or [])))
    except (ConnectionError, RuntimeError) as err:
        raise EndpointError(f"endpoint {url}: the connection closed before the session opened ({err})") from None
    deadline = time.monotonic() + live.endpoint.connect_timeout_s
    while live.record.info is None:
        left = deadline - time.monotonic()
        if left <= 0:
            raise EndpointError(f"endpoint {url}: no session.created within {live.endpoint.connect_timeout_s} s "
                                "(model.connect_timeout_s)")
        try:
            message = await live.ws.receive(timeout=left)
        except asyncio.TimeoutError:
            continue
        if message.type != WSMsgType.TEXT:
            if message.type in (WSMsgType.CLOSE, WSMsgType.CLOSED, WSMsgType.CLOSING, WSMsgType.ERROR):
                raise EndpointError(f"endpoint {url}: the server closed the connection before the session opened"
                                    f"{' (' + str(message.extra) + ')' if message.extra else ''}")
            continue
        try:
            event = parse_server_event(message.data)
        except ProtocolError as err:
            raise EndpointError(f"endpoint {url}: its first events cannot be read: {err}") from None
        if isinstance(event, ServerError):
            raise EndpointError(f"endpoint {url}: the server refused the session: {event.code}: {event.message}")
        if isinstance(event, SessionStarted):
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


def describe_error(err: BaseException, live: LiveSession) -> str:
    """One line for a connection-level fault during the session."""
    if isinstance(err, asyncio.TimeoutError):
        waited, limit = live.waiting_s, "model.event_timeout_s"
        if live.input_done and waited < live.endpoint.event_timeout_s:
            limit = f"model.end_timeout_s={live.endpoint.end_timeout_s} after the last frame"
        return (f"the server sent nothing for {waited:.1f} s ({limit}) while unit {live.next_unit}'s decision was "
                f"awaited ({live.next_unit} of {live.record.units} units decided)")
    return f"the connection failed: {type(err).__name__}: {' '.join(str(err).split())[:200]}"
