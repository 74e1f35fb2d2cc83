"""The server: TickTock's served sessions behind ``WS /v1/realtime?duplex=1`` (and its turn-based mode).

Built on aiohttp (a well-kept asyncio HTTP and WebSocket server in one package, with no ASGI server to add; its
WebSocket handler reads and writes frames in one coroutine per connection, which is all a duplex session needs).

One connection is one session (``ticktock.serve.session.ServedSession``): the handler parses each client frame into
its typed event (``ticktock.wire.parse_client_event``), appends input audio to the session's ``LiveAudio``, and sends
what the session's engine reports (from the served device's thread), in order, through a queue bounded in bytes
(``serve.max_queue_bytes``): a client that stops reading is closed (1008, with a reason) instead of growing the
server's memory. Every bad client event is answered with an ``error`` event (code and message; a client's own values
are echoed ``clipped``) and the session goes on; a bad token and a session over ``serve.max_sessions`` are refused
with an ``error`` event and a 1008 close. Sessions share one model (``ServedModel``) on one device, scheduled as a
replay's sessions are (``ticktock.serve.live.ServedDevice``: post-audio work first, earliest arrival first; idle-window
work only while none waits; batched with ``concurrency.batching`` and ``concurrency.batch_encodings``).

A session's lifecycle, as vLLM-Omni's duplex server holds it:

- **Handshake.** Duplex mode: the client's first message is ``session.update``, answered ``session.created`` then
  ``session.updated``; a first message of another type opens the session with defaults (``session.created`` only)
  and is then handled; nothing within ``serve.config_timeout_s`` is an ``error`` (``config_timeout``) and the
  connection closes. Turn mode: ``session.created`` is sent on connect, before any client event.
- **Commit.** ``input_audio_buffer.commit`` ends a user turn, not the input: it is answered
  ``input_audio_buffer.committed`` and audio goes on being taken. In duplex mode the turn's partial unit is closed
  with silence (vLLM-Omni's MiniCPM-o 4.5 input buffer does the same), so the turn's last audio is decided now.
- **Close.** The session ends on ``session.close``, on the socket's close, or when the client sends nothing for
  ``serve.idle_timeout_s`` (``session.expired``). Duplex ``session.close`` is graceful as vLLM-Omni's: work is
  cancelled (no unit not already being decided is decided, nothing more is reported), ``session.closed`` with the
  client's reason (``client_close``), then the socket closes. Turn mode ``session.close`` ends the input: the last
  partial unit is closed with silence, the remaining units are decided and sent, then ``session.closed`` (``ended``).
- **Pings.** The server pings every ``serve.ping_interval_s``; a client that does not answer is closed.

Example (what ``python -m ticktock.serve`` does)::

    server = Server(ServedModel(cfg), ServeOptions.parse(cfg.serve))
    web.run_app(server.app(), host="127.0.0.1", port=8099)
"""

from __future__ import annotations

import asyncio
import hmac
import importlib.resources
import ipaddress
import json
import math
import os
import re
import time
import uuid
from dataclasses import dataclass, replace

import numpy as np
from aiohttp import WSMsgType, web

import ticktock.wire as wire
from ticktock.errors import ConfigError
from ticktock.replay.audio_source import AudioEnded
from ticktock.serve.live import HOST_CODE_BOUND_S, LiveAudio, LiveAudioFull
from ticktock.serve.session import ServedModel, ServedSession, ServedUnit

#: The page's files (``ticktock/serve/static/``) served at ``/static/{name}``, by name -> content type; nothing else.
STATIC_FILES = {"index.html": "text/html", "app.js": "text/javascript", "capture-worklet.js": "text/javascript"}
FRAME_LIMIT = 16 * 1024 * 1024  # a frame above this is closed with 1009; below it, the codec answers (MAX_APPEND_BYTES)
QUEUE_BYTES = 8 * 1024 * 1024  # serve.max_queue_bytes' default: events waiting for one client; past it, it is not reading
AUDIO_DELTA_S = 0.2  # the talker's audio is sent in pieces of this length
DUPLEX_QUERY = frozenset({"1", "true", "on"})  # ``?duplex=`` values that ask for the duplex contract (vLLM-Omni's)
CLOSE_WAIT_S = 5.0  # how long a close waits for the client's own close frame before the socket is closed anyway
SEND_WAIT_S = 5.0  # how long a connection's end waits for its last events to be written
ABORT_AFTER_S = 30.0  # a closed socket whose client still has not read what waits for it is dropped after this
SHUTDOWN_S = 2.0  # how long a shutdown waits for every open session's session.closed to be written
JOIN_S = 10.0  # how long a connection's end waits for its session to end (a hung-up turn session: its last units)
ORIGIN = re.compile(r"https?://[^/\s?#@]+")  # what ``serve.allowed_origins`` holds: scheme://host[:port], nothing more
LOOPBACK_NAMES = frozenset({"localhost", "localhost.", "ip6-localhost"})
FAILURE_CHARS = 400  # an engine_error's words on a session's failure (the server's own, not a client's: longer)


class ServeOptionError(ConfigError):
    """A ``serve.*`` option that cannot work; names the key, the value and what is allowed."""


@dataclass(frozen=True)
class ServeOptions:
    """``serve.*``: where to listen, how many sessions at once, the bearer token's environment variable (None: no
    token), how far a client may send ahead of real time, how long a tool call waits for the client's output, how
    long a new connection may take to say ``session.update`` (vLLM-Omni's default, 10 s), how long a session may be
    idle (vLLM-Omni's default, 300 s), how often the server pings (20 s, as uvicorn and websockets do), how many
    bytes of events may wait for one client before it is closed for not reading, and how long one session's host code
    may hold the served device (``HostCodeBound``; None: unbounded)."""

    host: str = "127.0.0.1"
    port: int = 8099
    max_sessions: int = 4
    token_env: str | None = None
    max_ahead_s: float = 30.0
    tool_timeout_s: float = 30.0
    config_timeout_s: float = 10.0
    idle_timeout_s: float = 300.0
    ping_interval_s: float = 20.0
    max_queue_bytes: int = QUEUE_BYTES
    allowed_origins: tuple[str, ...] = ()
    host_code_bound_s: float | None = HOST_CODE_BOUND_S

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
        if "allowed_origins" in values:
            values["allowed_origins"] = origins(values["allowed_origins"])
        options = cls(**values)
        whole(options.port, "serve.port", 0, 65535)
        whole(options.max_sessions, "serve.max_sessions", 1, 256)
        seconds(options.max_ahead_s, "serve.max_ahead_s", 1.0, 3600.0)
        seconds(options.tool_timeout_s, "serve.tool_timeout_s", 0.1, 3600.0)
        seconds(options.config_timeout_s, "serve.config_timeout_s", 0.1, 3600.0)
        seconds(options.idle_timeout_s, "serve.idle_timeout_s", 0.1, 86400.0)
        seconds(options.ping_interval_s, "serve.ping_interval_s", 0.1, 3600.0)
        whole(options.max_queue_bytes, "serve.max_queue_bytes", 64 * 1024, 1024**3)
        if options.host_code_bound_s is not None:
            seconds(options.host_code_bound_s, "serve.host_code_bound_s", 0.05, 3600.0)
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


def origins(values) -> tuple[str, ...]:
    """``serve.allowed_origins`` checked and normalized (lower case, no trailing ``/``): a list of browser origins,
    ``scheme://host[:port]`` with an http or https scheme and no path; one line naming what is wrong otherwise.

    >>> origins(["https://App.example:8443/", "http://10.0.0.5:8099"])
    ('https://app.example:8443', 'http://10.0.0.5:8099')
    >>> origins(["app.example"])
    Traceback (most recent call last):
    ...
    ticktock.serve.server.ServeOptionError: serve.allowed_origins: 'app.example' is not an origin (scheme://host[:port], http or https, no path: https://app.example:8443)
    """
    if values is None:
        return ()
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise ServeOptionError(f"serve.allowed_origins: must be a list of origins such as [https://app.example:8443], "
                               f"got {values!r}")
    checked = []
    for value in values:
        origin = str(value).strip().lower().rstrip("/") if isinstance(value, str) else None
        if origin is None or not ORIGIN.fullmatch(origin):
            raise ServeOptionError(f"serve.allowed_origins: {str(value)[:80]!r} is not an origin "
                                   "(scheme://host[:port], http or https, no path: https://app.example:8443)")
        checked.append(origin)
    return tuple(checked)


def loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address, IPv6 with or without brackets) names this machine's loopback only.

    >>> loopback("127.0.0.1"), loopback("[::1]"), loopback("localhost"), loopback("0.0.0.0"), loopback("evil.example")
    (True, True, True, False, False)
    """
    host = host.strip().lower().strip("[]")
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def origin_allowed(origin: str | None, host: str, allowed: tuple[str, ...], served_on_loopback: bool) -> bool:
    """Whether a WebSocket handshake carrying ``Origin: origin`` may open a session (the check against cross-site
    WebSocket hijacking that Jupyter and other local servers make: a browser sends its page's origin, and any page
    the user visits could otherwise use the model and take its slots). Allowed: no ``Origin`` (the SDKs and other
    programs send none), the server's own page (the origin's ``host[:port]`` is the request's ``Host``; on a loopback
    server, a loopback name too, so a rebound DNS name is not the server's own page), and ``allowed``
    (``serve.allowed_origins``, normalized). Everything else, ``null`` included, is refused.

    >>> own = "127.0.0.1:8099"
    >>> origin_allowed(None, own, (), True), origin_allowed("http://127.0.0.1:8099", own, (), True)
    (True, True)
    >>> origin_allowed("http://evil.example", "127.0.0.1:8099", (), True)
    False
    >>> origin_allowed("http://evil.example:8099", "evil.example:8099", (), True)  # DNS rebinding to loopback
    False
    >>> origin_allowed("https://App.example:8443", "127.0.0.1:8099", ("https://app.example:8443",), True)
    True
    """
    if origin is None:
        return True
    origin = origin.strip().lower().rstrip("/")
    if origin in allowed:
        return True
    scheme, _, netloc = origin.partition("://")
    if scheme not in ("http", "https") or netloc != host.strip().lower():
        return False
    name = netloc.rsplit(":", 1)[0] if not netloc.endswith("]") else netloc
    return loopback(name) or not served_on_loopback


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
    """One client's connection and its session: the client's settings, the outgoing queue (events as JSON text,
    bounded in bytes, and after each unit's events the unit's index: ``written_unit`` once they are written) that the
    handler and the session's engine fill, and the response being spoken (a run of speak units is one response,
    ended by the next listen unit). ``mode`` is ``duplex`` or ``turns`` (``serving_mode``);
    ``decoder_name`` labels the session with ``model_name``.

    The queue ends with one end marker (``finish``): after it nothing more is queued, and the sender closes the socket
    with ``close_code`` and ``close_reason``. A client whose waiting events would pass ``max_queue_bytes`` is not
    reading: what waits is dropped and it is closed (1008, ``closing`` says why)."""

    def __init__(self, ws: web.WebSocketResponse | None, session_id: str, model_name: str,
                 loop: asyncio.AbstractEventLoop, decoder_name: str | None = None, mode: str = "duplex",
                 talker_name: str | None = None, max_queue_bytes: int = QUEUE_BYTES):
        self.ws = ws
        self.session_id = session_id
        self.loop = loop
        self.mode = mode
        self.model_name = model_name
        self.decoder_name = decoder_name
        self.talker_name = talker_name
        self.settings = wire.SessionSettings(model=model_name)
        self.session: ServedSession | None = None
        self.outgoing: asyncio.Queue = asyncio.Queue()
        self.queued_bytes = 0
        self.max_queue_bytes = max_queue_bytes
        self.finished = False  # the end marker is queued: nothing more is sent
        self.close_code = 1000
        self.close_reason = "session ended"
        self.closing: str | None = None  # why a client that does not read was closed
        self.response_id: str | None = None
        self.item_id: str | None = None
        self.committed_item: str | None = None  # the last commit's user item (previous_item_id of the next)
        self.played_ms = 0.0
        self.created = False  # session.created was sent
        self.sender: asyncio.Future | None = None
        self.written_unit = -1  # the last unit whose events were written to the socket

    # ------------------------------------------------------------------------------------ the outgoing queue

    def send_soon(self, *events: wire.WireEvent) -> None:
        """Queue events, from any thread (the session's engine reports here, from the served device's thread): on the
        server's loop at once, so a handler's events keep their order with its ``finish``; from another thread in the
        order it sent them."""
        self._soon(self._queue, events)

    def finish_soon(self, *events: wire.WireEvent, code: int = 1000, reason: str = "session ended") -> None:
        """``finish`` from any thread."""
        self._soon(lambda: self.finish(*events, code=code, reason=reason))

    def _soon(self, callback, *args) -> None:
        try:
            on_loop = asyncio.get_running_loop() is self.loop
        except RuntimeError:  # no loop in this thread: the served device's
            on_loop = False
        if on_loop:
            callback(*args)
            return
        try:
            self.loop.call_soon_threadsafe(callback, *args)
        except RuntimeError:  # the server's loop has stopped: nobody is left to send to
            pass

    def finish(self, *events: wire.WireEvent, code: int = 1000, reason: str = "session ended") -> None:
        """Queue the connection's last events and the end marker (once: a later finish does nothing); the socket is
        then closed with ``code`` and ``reason``. On the server's loop."""
        if self.finished:
            return
        self._queue(events)
        if self.finished:  # (the queue overflowed)
            return
        self.finished, self.close_code, self.close_reason = True, code, reason
        self.outgoing.put_nowait(None)

    def _queue(self, events) -> None:
        for event in events:
            if self.finished:
                return
            text = json.dumps(event.to_json())
            if self.queued_bytes + len(text) > self.max_queue_bytes:
                self._not_reading()
                return
            self.queued_bytes += len(text)
            self.outgoing.put_nowait(text)

    def _not_reading(self) -> None:
        """The client has not read what waits for it: drop it, and close the client (1008) rather than grow."""
        self.closing = (f"the client is not reading: more than {self.max_queue_bytes} bytes of events wait for it "
                        "(serve.max_queue_bytes)")
        while not self.outgoing.empty():
            self.outgoing.get_nowait()
        self.queued_bytes = 0
        self.finished, self.close_code, self.close_reason = True, 1008, self.closing
        self.outgoing.put_nowait(None)

    def sent(self, text: str) -> None:
        """A queued event left the queue (the sender took it)."""
        self.queued_bytes -= len(text)

    @property
    def turns(self) -> bool:
        """Whether this connection is served OpenAI Realtime GA's turn-based vocabulary (no per-unit decisions)."""
        return self.mode == "turns"

    def session_object(self) -> dict:
        """The session object of ``session.created`` / ``.updated``: its ``model`` is the model this server runs
        (not the name a client asked for), with what is served under the additive ``ticktock`` key: ``{"mode":
        "duplex" or "turns", "model": adapter name, "decoder": decoder name, "talker": talker name}`` (a live run
        against this server is labelled by them: ``ticktock.endpoints.run``)."""
        labels = {"mode": self.mode, "model": self.model_name, "decoder": self.decoder_name,
                  "talker": self.talker_name}
        served = replace(self.settings, model=self.model_name)
        return {**wire.session_object(self.session_id, served), "ticktock": labels}

    def announce(self) -> None:
        """``session.created`` (once): on connect in turn mode; in duplex mode in answer to the handshake, or before the
        first event of a client that skipped it (vLLM-Omni then opens the session with its defaults)."""
        if not self.created:
            self.created = True
            self.send_soon(wire.SessionCreated(self.session_object()))

    # ----------------------------------------------------------------------------------- the session's reports

    def on_unit(self, unit: ServedUnit) -> None:
        """A decided unit: its events, then a mark that the sender turns into ``written_unit`` once they are written
        (the session waits for it before its next idle work: ``ServedSession.written``)."""
        self.send_soon(*self.unit_events(unit))
        self._soon(self._mark, unit.index)

    def _mark(self, index: int) -> None:
        if not self.finished:
            self.outgoing.put_nowait(index)

    def wrote_unit(self, index: int) -> None:
        """The sender wrote unit ``index``'s events: the session waiting for them goes on (the device is woken)."""
        self.written_unit = index
        if self.session is not None:
            self.session.model.device.poke()

    def on_call(self, call_id: str, call: dict) -> None:
        """A tool call of the unit being decoded: its GA function-call events (the client runs it and answers)."""
        created = self._open_response()
        item = wire.FunctionCall(f"item_{uuid.uuid4().hex[:16]}", call_id, call["function"],
                                     json.dumps(call["args"]))
        rid = self.response_id
        self.send_soon(*created, wire.OutputItemAdded.of_call(rid, item),
                       wire.FunctionCallArgumentsDelta(rid, item.item_id, item.call_id, item.arguments),
                       wire.FunctionCallArgumentsDone.of_call(rid, item), wire.OutputItemDone.of_call(rid, item))

    def on_end(self, error: BaseException | None) -> None:
        """The session ended: the open response's ``response.done``, an ``engine_error`` if it failed, and
        ``session.closed`` (``ended``). Nothing, when the connection has already said its last word (a graceful
        close, an expiry, the server's shutdown: ``finish`` keeps the first)."""
        events: list[wire.WireEvent] = [wire.ResponseDone(self.response_id)] if self.response_id else []
        self.response_id = None
        reason = "ended"
        if error is not None:
            reason = "engine_error"
            events.append(wire.ErrorEvent("engine_error", "the session failed: " + failure_line(error)))
        self.finish_soon(*events, wire.SessionClosed(self.session_id, reason))

    def unit_events(self, unit: ServedUnit) -> list[wire.WireEvent]:
        """The events of one unit: a listen decision (after ``response.done`` of the response being spoken, if any),
        or a speak decision with the unit's text and transcript in the response of its run of speak units (its audio
        follows once the talker has spoken it: ``on_speech``). In turn mode the same without the decision events
        (``response.listen`` / ``response.speak``): a listen unit only ends the response being spoken."""
        measured = wire.UnitReport(unit.index, round(unit.served_ms, 2), unit.draft_accepted, unit.deadline_miss,
                                   "backchannel" if unit.kind == "backchannel" else None)
        if unit.decision == "listen":  # ends the response being spoken: response.done (OpenAI's clients wait for it)
            ending, self.response_id = self.response_id, None
            listen = [] if self.turns else [wire.ResponseListen(measured)]
            return [*([wire.ResponseDone(ending)] if ending else []), *listen]
        events = self._open_response()
        rid, item = self.response_id, self.item_id
        if not self.turns:
            events.append(wire.ResponseSpeak(rid, item, measured))
        if unit.spoken:
            events += [wire.TextDelta(rid, item, unit.spoken), wire.TranscriptDelta(rid, item, unit.spoken)]
        return events

    def on_speech(self, unit: int, samples, sample_rate: int) -> None:
        """The talker's speech of a speak unit, in pieces of ``AUDIO_DELTA_S``, in the response being spoken."""
        if self.response_id is None:
            return
        step = max(1, int(AUDIO_DELTA_S * sample_rate))
        self.send_soon(*[wire.AudioDelta.of_samples(self.response_id, self.item_id, samples[start: start + step],
                                                   sample_rate) for start in range(0, len(samples), step)])

    def _open_response(self) -> list[wire.WireEvent]:
        """``response.created`` when no response is open (and open one), else nothing."""
        if self.response_id is not None:
            return []
        self.response_id, self.item_id = f"resp_{uuid.uuid4().hex[:16]}", f"item_{uuid.uuid4().hex[:16]}"
        return [wire.ResponseCreated(self.response_id, wire.response_modalities(self.settings.modalities))]


def failure_line(error: BaseException) -> str:
    """What an ``engine_error`` says of a session's failure: the error's type and message on one line, control
    characters escaped, at most ``FAILURE_CHARS`` (``...`` after a cut): long enough for the host-code bound's line,
    which names the session, where it was and the bound.

    >>> failure_line(RuntimeError("a broken\\nforward\\x1b[31m"))
    'RuntimeError: a broken forward\\\\x1b[31m'
    >>> len(failure_line(RuntimeError("x" * 10_000)))
    403
    """
    text = " ".join(f"{type(error).__name__}: {error}".split())
    text = "".join(char if char.isprintable() else repr(char)[1:-1] for char in text)
    return text if len(text) <= FAILURE_CHARS else f"{text[:FAILURE_CHARS]}..."


def session_tool(tool) -> dict:
    """A client's tool (OpenAI's ``{"type": "function", "name", "description", "parameters"}``) as a session's tool
    schema (``{"name", "description", "parameters"}``, as a manifest's ``tools``).

    >>> session_tool({"type": "function", "name": "track_order", "parameters": {"type": "object"}})
    {'name': 'track_order', 'description': '', 'parameters': {'type': 'object'}}
    """
    return {"name": str(tool.get("name", "")), "description": str(tool.get("description", "") or ""),
            "parameters": tool.get("parameters") or {"type": "object", "properties": {}}}


def close_partial_unit(audio: LiveAudio) -> None:
    """Close the unit the audio is in the middle of with silence (at a unit boundary: nothing), so that it is decided
    now. A partial unit that no longer fits the buffer (``serve.max_ahead_s``) is left open.

    >>> audio = LiveAudio()
    >>> audio.append(np.ones(4_000, dtype=np.float32)); close_partial_unit(audio)
    >>> audio.received_samples(), audio.ended
    (16000, False)
    """
    partial = audio.received_samples() % audio.unit_samples
    if partial and not audio.ended:
        try:
            audio.append(np.zeros(audio.unit_samples - partial, dtype=np.float32))
        except LiveAudioFull:
            pass


def end_input(audio: LiveAudio) -> None:
    """The end of a session's input: its last partial unit is closed with silence (``close_partial_unit``), and the
    session ends after it (its remaining units are still decided and sent). Ending twice does nothing.

    >>> audio = LiveAudio()
    >>> audio.append(np.ones(4_000, dtype=np.float32)); end_input(audio)
    >>> audio.received_samples(), audio.ended
    (16000, True)
    """
    if audio.ended:
        return
    close_partial_unit(audio)
    audio.end()


def bearer_token(header: str) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header (the scheme in any case, as RFC 7235 has it); None
    for anything else, a bare token included.

    >>> bearer_token("Bearer s3cret"), bearer_token("bearer s3cret"), bearer_token("s3cret"), bearer_token("")
    ('s3cret', 's3cret', None, None)
    """
    scheme, _, token = header.strip().partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


class Server:
    """The aiohttp application of ``ticktock serve`` (see the module docstring)."""

    def __init__(self, model: ServedModel, options: ServeOptions):
        self.model = model
        self.options = options
        self.token = options.token()
        self.connections: set[Connection] = set()
        self.sessions: set[ServedSession] = set()  # every session that may still run on the device

    def app(self) -> web.Application:
        app = web.Application(client_max_size=wire.MAX_FRAME_BYTES)
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
        """``{"status": "ok"}`` while the server serves; 503 with ``{"status": "error", "error": "the served device has
        stopped"}`` once its device has stopped on a fault (the server then exits). Open without a token, so it says
        nothing about sessions, the model or the decoder."""
        if not self.model.device.healthy:
            return web.json_response({"status": "error", "error": "the served device has stopped"}, status=503)
        return web.json_response({"status": "ok"})

    # ---------------------------------------------------------------------------------------- a session

    async def realtime(self, request: web.Request) -> web.WebSocketResponse:
        self.check_origin(request)
        ws = web.WebSocketResponse(heartbeat=self.options.ping_interval_s, max_msg_size=FRAME_LIMIT,
                                   timeout=CLOSE_WAIT_S)
        await ws.prepare(request)
        refusal = self.refusal(request)
        if refusal is not None:
            await self.refuse(ws, *refusal)
            return ws
        connection = self.open(ws, serving_mode(request.query))
        connection.sender = asyncio.ensure_future(self.send_events(connection))
        if connection.turns:
            connection.announce()  # as OpenAI-style servers do: before any client event
        try:
            await self.read_events(connection)
        finally:
            await self.end(connection, request.transport)
        return ws

    def check_origin(self, request: web.Request) -> None:
        """Refuse, with 403 before the upgrade, a handshake from a browser page that is neither this server's own page
        nor one of ``serve.allowed_origins`` (``origin_allowed``); the body says so in one line."""
        origin = request.headers.get("Origin")
        if not origin_allowed(origin, request.host, self.options.allowed_origins, loopback(self.options.host)):
            raise web.HTTPForbidden(text=f"Origin {wire.echoed(origin)} may not open a session: only this server's "
                                         "own page and serve.allowed_origins may (programs send no Origin)")

    def refusal(self, request: web.Request) -> tuple[str, str] | None:
        """Why a connection is refused (a code and a message), or None: a wrong or missing token (only
        ``Authorization: Bearer <token>`` is read, as vLLM's server reads it), a full server."""
        if self.token is not None:
            given = bearer_token(request.headers.get("Authorization", "")) or ""
            if not hmac.compare_digest(given.encode(), self.token.encode()):
                return "invalid_api_key", "missing or wrong bearer token (Authorization: Bearer ...)"
        if len(self.connections) >= self.options.max_sessions:
            return "resource_exhausted", (f"this server holds at most {self.options.max_sessions} sessions at once "
                                             "(serve.max_sessions); try again later")
        return None

    async def refuse(self, ws: web.WebSocketResponse, code: str, message: str) -> None:
        """Refuse a connection: its ``error`` event, then a 1008 close once the client has sent its first frame (or
        after ``serve.config_timeout_s``). A client that sends its ``session.update`` as soon as it is connected (the
        OpenAI SDK does) would otherwise find the socket closed under its first send, and never read the error."""
        await ws.send_json(wire.ErrorEvent(code, message).to_json())
        try:
            await ws.receive(timeout=self.options.config_timeout_s)
        except asyncio.TimeoutError:
            pass
        if not ws.closed:
            await ws.close(code=1008, message=message[:120].encode())

    def open(self, ws: web.WebSocketResponse, mode: str = "duplex") -> Connection:
        connection = Connection(ws, f"sess_{uuid.uuid4().hex[:16]}", self.model.model_name,
                                asyncio.get_running_loop(), decoder_name=self.model.decoder_name, mode=mode,
                                talker_name=self.model.talker_name, max_queue_bytes=self.options.max_queue_bytes)
        connection.session = ServedSession(self.model, connection.session_id, connection.on_unit, connection.on_call,
                                           connection.on_end, max_ahead_s=self.options.max_ahead_s,
                                           tool_timeout_s=self.options.tool_timeout_s,
                                           on_speech=connection.on_speech,
                                           written=lambda index: connection.written_unit >= index)
        self.connections.add(connection)
        self.sessions.add(connection.session)
        return connection

    async def send_events(self, connection: Connection) -> None:
        """Send the connection's queued events in order until the end marker (None), then close it."""
        ws = connection.ws
        while True:
            text = await connection.outgoing.get()
            if text is None or ws.closed:
                break
            if isinstance(text, int):  # a unit's events are all written
                connection.wrote_unit(text)
                continue
            connection.sent(text)
            try:
                await ws.send_str(text)
            except (ConnectionError, RuntimeError):
                break
        if not ws.closed:
            await ws.close(code=connection.close_code, message=connection.close_reason[:120].encode())

    async def read_events(self, connection: Connection) -> None:
        """Handle the client's frames until it disconnects, the session ends (``session.close``, an expiry, the
        server's shutdown), or it is closed for not reading."""
        while connection.closing is None:
            message = await self.next_frame(connection)
            if message is None or self.handle(connection, message.data) == "close":
                return

    async def next_frame(self, connection: Connection):
        """The client's next frame; None when the socket closed, or when the client said nothing in time: before its
        handshake within ``serve.config_timeout_s`` (an ``error``, ``config_timeout``), after it within
        ``serve.idle_timeout_s`` (``session.expired``; not once the input has ended and the last units are being
        decided)."""
        handshake = not connection.turns and not connection.created
        timeout = self.options.config_timeout_s if handshake else self.options.idle_timeout_s
        if connection.session.audio.ended:  # (turn mode after session.close: its last units are being decided)
            timeout = None
        try:
            message = await connection.ws.receive(timeout=timeout)
        except asyncio.TimeoutError:
            if handshake:
                connection.finish(wire.ErrorEvent("config_timeout", f"no session.update within {timeout:g} s of "
                                                   "connecting (serve.config_timeout_s)"), reason="config_timeout")
            else:
                connection.finish(wire.SessionExpired(connection.session_id), reason="idle_ttl_expired")
            return None
        return message if message.type in (WSMsgType.TEXT, WSMsgType.BINARY) else None

    def handle(self, connection: Connection, frame) -> str | None:
        """One client frame: parsed and handled; a bad one answered with an ``error`` event. ``"close"`` when the
        connection ends here."""
        try:
            event = wire.parse_client_event(frame)
            if not isinstance(event, wire.SessionUpdate):
                connection.announce()  # a duplex client that skipped the handshake: its session opens with defaults
            return self.handlers[type(event)](self, connection, event)
        except wire.ProtocolError as err:
            connection.send_soon(wire.ErrorEvent(err.code, str(err), err.event_id))
        except Exception as err:  # a fault of ours: the client is told, the session and the server go on
            connection.send_soon(wire.ErrorEvent("internal_error", wire.clipped(
                f"{type(err).__name__}: {' '.join(str(err).split())}")))
        return None

    async def end(self, connection: Connection, transport) -> None:
        """The connection's end: the server stops counting it, its session stops (in turn mode, a client that hung up
        still has its remaining units decided), its last events are written and the socket is closed. A client that
        does not read is not waited for: its socket is closed at once (1008), and dropped after ``ABORT_AFTER_S``
        if it still has not read what waits for it."""
        self.connections.discard(connection)
        session = connection.session
        if connection.turns and not connection.finished:
            end_input(session.audio)  # the socket closed: the input ends, its last units are still decided
        else:
            session.cancel()
        connection.finish()
        sender = connection.sender
        if connection.closing is not None:
            sender.cancel()  # it may be waiting to write to a client that does not read
        await asyncio.wait({sender}, timeout=SEND_WAIT_S)
        sender.cancel()
        if not connection.ws.closed:
            await connection.ws.close(code=connection.close_code, message=connection.close_reason[:120].encode(),
                                      drain=False)
        if transport is not None and transport.get_write_buffer_size():
            asyncio.get_running_loop().call_later(ABORT_AFTER_S, transport.abort)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + JOIN_S
        while session.running and loop.time() < deadline:  # (polled: a shutdown may cancel this wait)
            await asyncio.sleep(0.05)
        if not session.running:
            self.sessions.discard(session)

    def stop_sessions(self, timeout_s: float) -> None:
        """Cancel every session still running and wait for them, then stop the served device, ``timeout_s`` at most
        in all (the server is going away: no session may be left inside the model when the process exits)."""
        deadline = time.monotonic() + timeout_s
        for session in list(self.sessions):
            session.cancel()
        for session in list(self.sessions):
            session.join(max(0.0, deadline - time.monotonic()))
        self.model.close(max(0.0, deadline - time.monotonic()))

    # ------------------------------------------------------------------------ one handler per client event

    def on_session_update(self, connection: Connection, event: wire.SessionUpdate) -> None:
        """Fold the update into the session's settings, all or nothing. Once audio has started, the instructions,
        the tools and the input audio format are fixed (an ``invalid_request`` error for a format change: nothing
        changes). Answered ``session.created`` (the handshake, once) and ``session.updated``."""
        session = connection.session
        settings = connection.settings.updated(event)
        if session.started:
            if event.instructions is not None or event.tools is not None:
                raise wire.ProtocolError("bad_event", "session.update: instructions and tools are fixed once audio "
                                         "has started", event.event_id)
            before, after = connection.settings.input_audio, settings.input_audio
            if after != before:
                raise wire.ProtocolError(
                    "invalid_request", f"session.update: the input audio format is fixed once audio has started (it "
                    f"is {before.encoding} at {before.sample_rate_hz} Hz, asked {after.encoding} at "
                    f"{after.sample_rate_hz} Hz); nothing was changed", event.event_id)
        else:
            session.configure(settings.instructions, tuple(session_tool(t) for t in settings.tools))
        connection.settings = settings
        connection.announce()  # vLLM-Omni's client waits for session.created, OpenAI's for session.updated
        connection.send_soon(wire.SessionUpdated(connection.session_object()))

    def on_append(self, connection: Connection, event: wire.AudioAppend) -> None:
        samples = wire.decode_audio(event.audio, event.audio_format(connection.settings.input_audio),
                                    event.event_id)
        session = connection.session
        if not session.started:
            session.start()
        try:
            session.audio.append(samples)
        except LiveAudioFull as err:
            raise wire.ProtocolError("input_backpressure", str(err), event.event_id) from None
        except AudioEnded:
            raise wire.ProtocolError("session_closed", "the session's input has ended (session.close): no more "
                                     "audio is taken", event.event_id) from None

    def on_commit(self, connection: Connection, event: wire.AudioCommit) -> None:
        """The end of a user turn, in either mode: answered ``input_audio_buffer.committed`` (a fresh user item,
        after the previous commit's), and the input goes on. In duplex mode the turn's partial unit is closed with
        silence (``close_partial_unit``), as vLLM-Omni's MiniCPM-o 4.5 input buffer closes a turn's residual audio, so
        the turn's last audio is decided now. In turn mode the unit timeline is left as it is (the model has heard
        every sample as it arrived, and decides itself when to answer)."""
        if not connection.turns:
            close_partial_unit(connection.session.audio)
        item_id, previous = f"item_{uuid.uuid4().hex[:16]}", connection.committed_item
        connection.committed_item = item_id
        connection.send_soon(wire.InputAudioBufferCommitted(item_id, previous))

    def on_function_call_output(self, connection: Connection, event: wire.FunctionCallOutput) -> None:
        if not connection.session.tools.answer(event.call_id, event.output):
            raise wire.ProtocolError("invalid_function_call_output", f"no function call "
                                     f"'{wire.clipped(event.call_id)}' is waiting for its output", event.event_id)

    def on_playback_ack(self, connection: Connection, event: wire.PlaybackAck) -> None:
        connection.played_ms = max(connection.played_ms, float(event.played_ms))

    def on_heartbeat(self, connection: Connection, event: wire.Heartbeat) -> None:
        connection.send_soon(wire.HeartbeatAck(connection.session_id))

    def on_session_close(self, connection: Connection, event: wire.SessionClose) -> str | None:
        """Duplex mode: a graceful close, as vLLM-Omni's: work is cancelled (nothing more is decided or reported),
        then ``session.closed`` with the client's reason (``client_close`` unless it gave one) and the socket closes.
        Turn mode: the end of the input (``end_input``); the session's remaining units are still decided and sent,
        then ``session.closed`` (``ended``) closes the connection."""
        session = connection.session
        if connection.turns:
            end_input(session.audio)
            if session.started:
                return None  # (the session ends after its last unit: on_end)
            connection.finish(wire.SessionClosed(connection.session_id, "ended"))
            return "close"
        connection.finish(wire.SessionClosed(connection.session_id, event.reason))
        session.cancel()
        return "close"

    def on_clear(self, connection: Connection, event: wire.AudioClear) -> None:
        """Turn mode: accepted and ignored. Nothing waits in a buffer to be cleared: the model has heard every sample
        as it arrived, and a unit already decided cannot be taken back. Duplex mode: an error, as before."""
        if not connection.turns:
            self.on_not_in_duplex(connection, event)

    def on_nothing(self, connection: Connection, event) -> None:
        """Accepted with nothing to do: ``response.create`` (the duplex model decides every unit itself) and
        ``session.event_ack`` (no event journal to trim)."""

    def on_not_in_duplex(self, connection: Connection, event) -> None:
        """``response.cancel`` (either mode) and ``input_audio_buffer.clear`` (duplex mode): an error event."""
        raise wire.ProtocolError("bad_event", f"{event.type}: not served in {connection.mode.rstrip('s')} mode (the "
                                 "model listens and speaks unit by unit; a unit already decided cannot be taken back)",
                                 event.event_id)

    handlers = {
        wire.SessionUpdate: on_session_update, wire.AudioAppend: on_append, wire.AudioCommit: on_commit,
        wire.FunctionCallOutput: on_function_call_output, wire.PlaybackAck: on_playback_ack,
        wire.Heartbeat: on_heartbeat, wire.SessionClose: on_session_close,
        wire.ResponseCreate: on_nothing, wire.EventAck: on_nothing,
        wire.AudioClear: on_clear, wire.ResponseCancel: on_not_in_duplex,
    }

    async def close_all(self, app: web.Application | None = None) -> None:
        """On shutdown (Ctrl-C, SIGTERM): every open session's work is cancelled, it is told ``session.closed``
        (``server_shutdown``) and its connection is closed (1001); waits up to ``SHUTDOWN_S`` for that to be
        written."""
        senders = []
        for connection in list(self.connections):
            connection.finish(wire.SessionClosed(connection.session_id, "server_shutdown"), code=1001,
                              reason="server shutting down")
            connection.session.cancel()
            senders.append(connection.sender)
        if senders:
            await asyncio.wait(senders, timeout=SHUTDOWN_S)
