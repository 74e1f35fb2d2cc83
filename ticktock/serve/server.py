"""The server: TickTock's served sessions behind ``WS /v1/realtime?duplex=1`` (and its turn-based mode).

Built on aiohttp (a well-kept asyncio HTTP and WebSocket server in one package, with no ASGI server to add; its
WebSocket handler reads and writes frames in one coroutine per connection, which is all a duplex session needs).

One connection is one session (``ticktock.serve.session.ServedSession``): the handler parses each client frame with
the wire codec (``ticktock.serve.protocol``), appends input audio to the session's ``LiveAudio``, and sends what the
session's engine thread reports, in order, through a bounded queue: a client that stops reading is closed with a
reason instead of growing the server's memory. Every bad client event is answered with an ``error`` event (code and
message) and the session goes on; a bad token, a session over ``serve.max_sessions`` and a client that does not read
are closed with a reason. Sessions share one model (``ServedModel``): their device work runs one piece at a time in
the order it asked (``ticktock.serve.live.DeviceQueue``).

Two modes, chosen by the connection's query (``serving_mode``), serve the same session (the duplex model listens and
speaks unit by unit on the audio stream, and decides itself when to answer):

- ``duplex`` (``?duplex=1``): vLLM-Omni's full-duplex contract, a ``response.listen`` or ``response.speak`` per unit;
  ``input_audio_buffer.commit`` ends the input.
- ``turns`` (no ``duplex=1``): OpenAI Realtime GA's turn-based vocabulary only, as vLLM-Omni serves it there. A run
  of spoken units is one response (``response.created`` ... ``response.done``) with no per-unit decision events;
  ``input_audio_buffer.commit`` ends a user turn (answered ``input_audio_buffer.committed``) and the input goes on;
  the input ends at ``session.close`` or when the socket closes.

Example (what ``python -m ticktock.serve`` does)::

    server = Server(ServedModel(cfg), ServeOptions.parse(cfg.serve))
    web.run_app(server.app(), host="127.0.0.1", port=8099)
"""

from __future__ import annotations

import asyncio
import hmac
import importlib.resources
import json
import math
import os
import uuid
from dataclasses import dataclass

import numpy as np
from aiohttp import WSMsgType, web

from ticktock.errors import ConfigError
from ticktock.serve import protocol
from ticktock.replay.audio_source import AudioEnded
from ticktock.serve.live import LiveAudio, LiveAudioFull
from ticktock.serve.session import ServedModel, ServedSession, UnitReport

#: The page's files (``ticktock/serve/static/``) served at ``/static/{name}``, by name -> content type; nothing else.
STATIC_FILES = {"index.html": "text/html", "app.js": "text/javascript", "capture-worklet.js": "text/javascript"}
FRAME_LIMIT = 16 * 1024 * 1024  # a frame above this is closed with 1009; below it, the codec answers (MAX_APPEND_BYTES)
EVENT_QUEUE = 512  # events waiting to be sent to one client; past it the client is not reading
AUDIO_DELTA_S = 0.2  # the talker's audio is sent in pieces of this length
DUPLEX_QUERY = frozenset({"1", "true", "on"})  # ``?duplex=`` values that ask for the duplex contract (vLLM-Omni's)


class ServeOptionError(ConfigError):
    """A ``serve.*`` option that cannot work; names the key, the value and what is allowed."""


@dataclass(frozen=True)
class ServeOptions:
    """``serve.*``: where to listen, how many sessions at once, the bearer token's environment variable (None: no
    token), how far a client may send ahead of real time, how long a tool call waits for the client's output."""

    host: str = "127.0.0.1"
    port: int = 8099
    max_sessions: int = 4
    token_env: str | None = None
    max_ahead_s: float = 30.0
    tool_timeout_s: float = 30.0

    @classmethod
    def parse(cls, values) -> "ServeOptions":
        """``serve.*`` checked: one line naming the key for a value that cannot work.

        >>> ServeOptions.parse({"port": 0, "max_sessions": 2}).max_sessions
        2
        >>> ServeOptions.parse({"max_sessions": 0})
        Traceback (most recent call last):
        ...
        ticktock.serve.server.ServeOptionError: serve.max_sessions: must be a whole number from 1 to 256, got 0
        """
        values = dict(values or {})
        unknown = sorted(set(values) - set(cls.__dataclass_fields__))
        if unknown:
            raise ServeOptionError(f"serve.{unknown[0]}: unknown option (known: {', '.join(cls.__dataclass_fields__)})")
        options = cls(**values)
        whole(options.port, "serve.port", 0, 65535)
        whole(options.max_sessions, "serve.max_sessions", 1, 256)
        seconds(options.max_ahead_s, "serve.max_ahead_s", 1.0, 3600.0)
        seconds(options.tool_timeout_s, "serve.tool_timeout_s", 0.1, 3600.0)
        if not isinstance(options.host, str) or not options.host.strip():
            raise ServeOptionError(f"serve.host: must be an address to listen on, got {options.host!r}")
        if options.token_env is not None and not (isinstance(options.token_env, str) and options.token_env.strip()):
            raise ServeOptionError(f"serve.token_env: must be the name of an environment variable or null, got "
                                   f"{options.token_env!r}")
        return options

    def token(self) -> str | None:
        """The bearer token clients must send (read from ``token_env``; never logged); None when none is asked."""
        if self.token_env is None:
            return None
        value = os.environ.get(self.token_env, "")
        if not value:
            raise ServeOptionError(f"serve.token_env: the environment variable {self.token_env} is not set or empty")
        return value


def whole(value, key: str, least: int, most: int) -> None:
    if not (isinstance(value, int) and not isinstance(value, bool) and least <= value <= most):
        raise ServeOptionError(f"{key}: must be a whole number from {least} to {most}, got {value!r}")


def seconds(value, key: str, least: float, most: float) -> None:
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not (number and math.isfinite(value) and least <= value <= most):
        raise ServeOptionError(f"{key}: must be a number of seconds from {least:g} to {most:g}, got {value!r}")


def serving_mode(query) -> str:
    """The mode a connection is served in, from its query: ``duplex`` when ``duplex`` is 1, true or on (any case),
    else ``turns`` (OpenAI Realtime GA's turn-based vocabulary).

    >>> serving_mode({"duplex": "1"}), serving_mode({"duplex": "True"}), serving_mode({}), serving_mode({"duplex": "0"})
    ('duplex', 'duplex', 'turns', 'turns')
    """
    return "duplex" if str(query.get("duplex", "")).strip().lower() in DUPLEX_QUERY else "turns"


def static_file(name: str) -> web.Response:
    """A file of the allow-list read from the package (never a request's path joined onto the disk); 404 otherwise."""
    if name not in STATIC_FILES:
        raise web.HTTPNotFound(text=f"no such file: {name[:80]}")
    body = importlib.resources.files("ticktock.serve").joinpath("static", name).read_bytes()
    return web.Response(body=body, content_type=STATIC_FILES[name], charset="utf-8",
                        headers={"Cache-Control": "no-cache"})


class Connection:
    """One client's connection and its session: the client's settings, the outgoing queue the session's thread fills,
    and the response being spoken (a run of speak units is one response, ended by the next listen unit). ``mode`` is
    ``duplex`` or ``turns`` (``serving_mode``); ``decoder_name`` labels the session with ``model_name``."""

    def __init__(self, ws: web.WebSocketResponse, session_id: str, model_name: str, loop: asyncio.AbstractEventLoop,
                 decoder_name: str | None = None, mode: str = "duplex", talker_name: str | None = None):
        self.ws = ws
        self.session_id = session_id
        self.loop = loop
        self.mode = mode
        self.model_name = model_name
        self.decoder_name = decoder_name
        self.talker_name = talker_name
        self.settings = protocol.SessionSettings(model=model_name)
        self.session: ServedSession | None = None
        self.outgoing: asyncio.Queue = asyncio.Queue(maxsize=EVENT_QUEUE)
        self.response_id: str | None = None
        self.item_id: str | None = None
        self.closing: str | None = None
        self.played_ms = 0.0
        self.created = False  # session.created was sent

    def send_soon(self, *events: dict | None) -> None:
        """Queue events from any thread (the session's engine thread reports here); None ends the connection."""
        try:
            self.loop.call_soon_threadsafe(self._queue, events)
        except RuntimeError:  # the server's loop has stopped: nobody is left to send to
            pass

    def _queue(self, events) -> None:
        for event in events:
            if self.closing is not None and event is not None:
                continue
            try:
                self.outgoing.put_nowait(event)
            except asyncio.QueueFull:  # the client is not reading: drop what waits and close it, rather than grow
                self.closing = f"the client has not read its last {EVENT_QUEUE} events"
                while not self.outgoing.empty():
                    self.outgoing.get_nowait()
                self.outgoing.put_nowait(None)

    @property
    def turns(self) -> bool:
        """Whether this connection is served OpenAI Realtime GA's turn-based vocabulary (no per-unit decisions)."""
        return self.mode == "turns"

    def session_object(self) -> dict:
        """The session object of ``session.created`` / ``.updated``, with what is served under the additive
        ``ticktock`` key: ``{"mode": "duplex" or "turns", "model": adapter name, "decoder": decoder name, "talker":
        talker name}`` (a live run against this server is labelled by them: ``ticktock.endpoints.run``)."""
        labels = {"mode": self.mode, "model": self.model_name, "decoder": self.decoder_name,
                  "talker": self.talker_name}
        return {**protocol.session_object(self.session_id, self.settings), "ticktock": labels}

    # ----------------------------------------------------------------------------------- the session's reports

    def on_unit(self, report: UnitReport) -> None:
        self.send_soon(*self.unit_events(report))

    def on_call(self, call_id: str, call: dict) -> None:
        """A tool call of the unit being decoded: its GA function-call events (the client runs it and answers)."""
        created = self._open_response()
        item = protocol.FunctionCall(f"item_{uuid.uuid4().hex[:16]}", call_id, call["function"],
                                     json.dumps(call["args"]))
        rid = self.response_id
        self.send_soon(*created, protocol.output_item_added(rid, item),
                       protocol.function_call_arguments_delta(rid, item, item.arguments),
                       protocol.function_call_arguments_done(rid, item), protocol.output_item_done(rid, item))

    def on_end(self, error: BaseException | None) -> None:
        events = [protocol.response_done(self.response_id)] if self.response_id else []
        self.response_id = None
        reason = "ended"
        if error is not None:
            reason = "engine_error"
            events.append(protocol.error_event("engine_error", f"the session failed: {type(error).__name__}: "
                                                               f"{' '.join(str(error).split())}"))
        self.send_soon(*events, protocol.session_closed(self.session_id, reason), None)

    def unit_events(self, report: UnitReport) -> list[dict]:
        """The events of one unit: a listen decision (after ``response.done`` of the response being spoken, if any),
        or a speak decision with the unit's text and transcript in the response of its run of speak units (its audio
        follows once the talker has spoken it: ``on_speech``). In turn mode the same without the decision events
        (``response.listen`` / ``response.speak``): a listen unit only ends the response being spoken."""
        measured = protocol.UnitReport(report.index, round(report.served_ms, 2), report.draft_accepted,
                                       report.deadline_miss, "backchannel" if report.kind == "backchannel" else None)
        if report.decision == "listen":  # ends the response being spoken: response.done (OpenAI's clients wait for it)
            ending, self.response_id = self.response_id, None
            listen = [] if self.turns else [protocol.response_listen(measured)]
            return [*([protocol.response_done(ending)] if ending else []), *listen]
        events = self._open_response()
        rid, item = self.response_id, self.item_id
        if not self.turns:
            events.append(protocol.response_speak(rid, item, measured))
        if report.spoken:
            events += [protocol.text_delta(rid, item, report.spoken), protocol.transcript_delta(rid, item, report.spoken)]
        return events

    def on_speech(self, unit: int, samples, sample_rate: int) -> None:
        """The talker's speech of a speak unit, in pieces of ``AUDIO_DELTA_S``, in the response being spoken."""
        if self.response_id is None:
            return
        step = max(1, int(AUDIO_DELTA_S * sample_rate))
        self.send_soon(*[protocol.audio_delta(self.response_id, self.item_id, samples[start: start + step], sample_rate)
                         for start in range(0, len(samples), step)])

    def _open_response(self) -> list[dict]:
        """``response.created`` when no response is open (and open one), else nothing."""
        if self.response_id is not None:
            return []
        self.response_id, self.item_id = f"resp_{uuid.uuid4().hex[:16]}", f"item_{uuid.uuid4().hex[:16]}"
        return [protocol.response_created(self.response_id, self.settings.modalities)]


def session_tool(tool) -> dict:
    """A client's tool (OpenAI's ``{"type": "function", "name", "description", "parameters"}``) as a session's tool
    schema (``{"name", "description", "parameters"}``, as a manifest's ``tools``).

    >>> session_tool({"type": "function", "name": "track_order", "parameters": {"type": "object"}})
    {'name': 'track_order', 'description': '', 'parameters': {'type': 'object'}}
    """
    return {"name": str(tool.get("name", "")), "description": str(tool.get("description", "") or ""),
            "parameters": tool.get("parameters") or {"type": "object", "properties": {}}}


def end_input(audio: LiveAudio) -> None:
    """The end of a session's input: its last partial unit is closed with silence, and the session ends after it
    (its remaining units are still decided and sent). A partial unit that no longer fits the buffer
    (``serve.max_ahead_s``) is dropped. Ending twice does nothing.

    >>> audio = LiveAudio()
    >>> audio.append(np.ones(4_000, dtype=np.float32)); end_input(audio)
    >>> audio.received_samples(), audio.ended
    (16000, True)
    """
    if audio.ended:
        return
    partial = audio.received_samples() % audio.unit_samples
    if partial:
        try:
            audio.append(np.zeros(audio.unit_samples - partial, dtype=np.float32))
        except LiveAudioFull:
            pass
    audio.end()


class Server:
    """The aiohttp application of ``ticktock serve`` (see the module docstring)."""

    def __init__(self, model: ServedModel, options: ServeOptions):
        self.model = model
        self.options = options
        self.token = options.token()
        self.connections: set[Connection] = set()

    def app(self) -> web.Application:
        app = web.Application(client_max_size=protocol.MAX_FRAME_BYTES)
        app.router.add_get("/", self.page)
        app.router.add_get("/static/{name}", self.static)
        app.router.add_get("/health", self.health)
        app.router.add_get("/v1/realtime", self.realtime)
        app.on_shutdown.append(self.close_all)
        return app

    # --------------------------------------------------------------------------------------------- pages

    async def page(self, request: web.Request) -> web.Response:
        """The page to talk to the model (``static/index.html``)."""
        return static_file("index.html")

    async def static(self, request: web.Request) -> web.Response:
        """One of the page's files, by name from ``STATIC_FILES`` only (any other name: 404)."""
        return static_file(request.match_info["name"])

    async def health(self, request: web.Request) -> web.Response:
        return web.json_response({"sessions": len(self.connections), "max_sessions": self.options.max_sessions,
                                  "model": self.model.model_name, "decoder": self.model.decoder_name})

    # ---------------------------------------------------------------------------------------- a session

    async def realtime(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(heartbeat=30.0, max_msg_size=FRAME_LIMIT)
        await ws.prepare(request)
        refusal = self.refusal(request)
        if refusal is not None:
            code, message = refusal
            await ws.send_json(protocol.error_event(code, message))
            await ws.close(code=1008, message=message[:120].encode())
            return ws
        connection = self.open(ws, serving_mode(request.query))
        sender = asyncio.ensure_future(self.send_events(connection))
        try:
            await self.read_events(connection)
        finally:
            self.connections.discard(connection)
            if connection.turns:  # the socket closed: the input ends, its last units are still decided
                end_input(connection.session.audio)
            await asyncio.get_running_loop().run_in_executor(None, connection.session.close)
            connection.send_soon(None)
            await asyncio.wait_for(sender, timeout=10.0)
        return ws

    def refusal(self, request: web.Request) -> tuple[str, str] | None:
        """Why a connection is refused (a code and a message), or None: a wrong or missing token, a full server."""
        if self.token is not None:
            given = request.headers.get("Authorization", "").removeprefix("Bearer ").strip()
            if not hmac.compare_digest(given.encode(), self.token.encode()):
                return "invalid_api_key", "missing or wrong bearer token (Authorization: Bearer ...)"
        if len(self.connections) >= self.options.max_sessions:
            return "resource_exhausted", (f"this server holds at most {self.options.max_sessions} sessions at once "
                                             "(serve.max_sessions); try again later")
        return None

    def open(self, ws: web.WebSocketResponse, mode: str = "duplex") -> Connection:
        connection = Connection(ws, f"sess_{uuid.uuid4().hex[:16]}", self.model.model_name,
                                asyncio.get_running_loop(), decoder_name=self.model.decoder_name, mode=mode,
                                talker_name=self.model.talker_name)
        connection.session = ServedSession(self.model, connection.session_id, connection.on_unit, connection.on_call,
                                           connection.on_end, max_ahead_s=self.options.max_ahead_s,
                                           tool_timeout_s=self.options.tool_timeout_s,
                                           on_speech=connection.on_speech)
        self.connections.add(connection)
        return connection

    async def send_events(self, connection: Connection) -> None:
        """Send the connection's queued events in order until the end marker (None), then close it."""
        while True:
            event = await connection.outgoing.get()
            if event is None or connection.ws.closed:
                break
            try:
                await connection.ws.send_str(json.dumps(event))
            except (ConnectionError, RuntimeError):
                break
        if not connection.ws.closed:
            reason = connection.closing or "session ended"
            await connection.ws.close(code=1000 if connection.closing is None else 1008, message=reason[:120].encode())

    async def read_events(self, connection: Connection) -> None:
        """Handle the client's frames until it disconnects, says ``session.close``, or is closed for not reading."""
        async for message in connection.ws:
            if message.type not in (WSMsgType.TEXT, WSMsgType.BINARY):
                break
            try:
                event = protocol.parse_client_event(message.data)
                if self.handlers[type(event)](self, connection, event) == "close":
                    break
            except protocol.ProtocolError as err:
                connection.send_soon(protocol.error_event(err.code, str(err), err.event_id))
            except Exception as err:  # a fault of ours: the client is told, the session and the server go on
                connection.send_soon(protocol.error_event("internal_error", f"{type(err).__name__}: "
                                                                            f"{' '.join(str(err).split())}"))
            if connection.closing is not None:
                break

    # ------------------------------------------------------------------------ one handler per client event

    def on_session_update(self, connection: Connection, event: protocol.SessionUpdate) -> None:
        session = connection.session
        if session.started and (event.instructions is not None or event.tools is not None):
            raise protocol.ProtocolError("bad_event", "session.update: instructions and tools are fixed once audio "
                                         "has started", event.event_id)
        connection.settings = connection.settings.updated(event)
        session.configure(connection.settings.instructions, tuple(session_tool(t) for t in connection.settings.tools))
        created = [] if connection.created else [protocol.session_created(connection.session_object())]
        connection.created = True  # vLLM-Omni's client waits for session.created, OpenAI's for session.updated
        connection.send_soon(*created, protocol.session_updated(connection.session_object()))

    def on_append(self, connection: Connection, event: protocol.AudioAppend) -> None:
        if not connection.created:  # a client that skips the handshake still learns its session
            connection.created = True
            connection.send_soon(protocol.session_created(connection.session_object()))
        samples = protocol.decode_audio(event.audio, event.audio_format(connection.settings.input_audio),
                                        event.event_id)
        session = connection.session
        if not session.started:
            session.start()
        try:
            session.audio.append(samples)
        except LiveAudioFull as err:
            raise protocol.ProtocolError("input_backpressure", str(err), event.event_id) from None
        except AudioEnded:
            raise protocol.ProtocolError("session_closed", "the input has been committed: no more audio is taken",
                                         event.event_id) from None

    def on_commit(self, connection: Connection, event: protocol.AudioCommit) -> None:
        """Duplex mode: the end of the client's input (``end_input``). Turn mode: the end of a user turn, answered
        ``input_audio_buffer.committed``; the input goes on (the model has been listening all along, and decides
        itself when to answer)."""
        if connection.turns:
            connection.send_soon(protocol.input_audio_buffer_committed(f"item_{uuid.uuid4().hex[:16]}"))
        elif event.final and not connection.session.audio.ended:
            end_input(connection.session.audio)
            if not connection.session.started:
                connection.session.start()

    def on_function_call_output(self, connection: Connection, event: protocol.FunctionCallOutput) -> None:
        if not connection.session.tools.answer(event.call_id, event.output):
            raise protocol.ProtocolError("invalid_function_call_output", f"no function call {event.call_id!r} is "
                                         "waiting for its output", event.event_id)

    def on_playback_ack(self, connection: Connection, event: protocol.PlaybackAck) -> None:
        connection.played_ms = max(connection.played_ms, float(event.played_ms))

    def on_heartbeat(self, connection: Connection, event: protocol.Heartbeat) -> None:
        connection.send_soon(protocol.heartbeat_ack(connection.session_id))

    def on_session_close(self, connection: Connection, event: protocol.SessionClose) -> str | None:
        """Duplex mode: the connection closes now. Turn mode: the end of the input (``end_input``); the session's
        remaining units are still decided and sent, then ``session.closed`` (``ended``) closes the connection."""
        if connection.turns:
            end_input(connection.session.audio)
            if connection.session.started:
                return None
        return "close"  # (a turn-mode session that never had audio ends here: ``session.closed`` follows at once)

    def on_clear(self, connection: Connection, event: protocol.AudioClear) -> None:
        """Turn mode: accepted and ignored. Nothing waits in a buffer to be cleared: the model has heard every sample
        as it arrived, and a unit already decided cannot be taken back. Duplex mode: an error, as before."""
        if not connection.turns:
            self.on_not_in_duplex(connection, event)

    def on_nothing(self, connection: Connection, event) -> None:
        """Accepted with nothing to do: ``response.create`` (the duplex model decides every unit itself) and
        ``session.event_ack`` (no event journal to trim)."""

    def on_not_in_duplex(self, connection: Connection, event) -> None:
        """``response.cancel`` (either mode) and ``input_audio_buffer.clear`` (duplex mode): an error event."""
        name = {protocol.AudioClear: "input_audio_buffer.clear", protocol.ResponseCancel: "response.cancel"}[type(event)]
        raise protocol.ProtocolError("bad_event", f"{name}: not served in {connection.mode.rstrip('s')} mode (the model listens "
                                     "and speaks unit by unit; a unit already decided cannot be taken back)",
                                     event.event_id)

    handlers = {
        protocol.SessionUpdate: on_session_update, protocol.AudioAppend: on_append, protocol.AudioCommit: on_commit,
        protocol.FunctionCallOutput: on_function_call_output, protocol.PlaybackAck: on_playback_ack,
        protocol.Heartbeat: on_heartbeat, protocol.SessionClose: on_session_close,
        protocol.ResponseCreate: on_nothing, protocol.EventAck: on_nothing,
        protocol.AudioClear: on_clear, protocol.ResponseCancel: on_not_in_duplex,
    }

    async def close_all(self, app: web.Application) -> None:
        """On shutdown (Ctrl-C): every open session is told ``session.closed`` and its connection closed."""
        for connection in list(self.connections):
            connection.session.audio.end()
            if not connection.ws.closed:
                await connection.ws.send_json(protocol.session_closed(connection.session_id, "server_shutdown"))
                await connection.ws.close(code=1001, message=b"server shutting down")
