"""The wire codec of ``WS /v1/realtime?duplex=1``: client events parsed, input audio decoded, server events built.

Pure functions and small frozen value objects; nothing here owns a session (the server holds the state: the
session's settings, its ids and counters). The vocabulary is vLLM-Omni's full-duplex contract (its
``DuplexClient`` and its event definitions), which is OpenAI's Realtime GA vocabulary plus the duplex events
(``response.listen`` / ``response.speak``, ``playback.ack``, ``session.heartbeat``, ``session.close``). Every
message is one JSON text frame. Input audio is bare base64 PCM16, 16 kHz mono unless the session (or the append
itself) declares another format: ``pcm16`` or ``pcm_f32le`` at a rate from ``MIN_SAMPLE_RATE_HZ`` to
``MAX_SAMPLE_RATE_HZ``, resampled to 16 kHz with ``ticktock.sessions.audio.resample``. The model's units are
1000 ms, the first one included.

A client frame becomes a typed event, a bad one a ``ProtocolError`` whose code is vLLM-Omni's where one fits and
whose message is one line naming the field:

>>> event = parse_client_event('{"type": "input_audio_buffer.append", "audio": "AAAAQA==", "event_id": "e1"}')
>>> event
AudioAppend(event_id='e1', audio='AAAAQA==', encoding=None, sample_rate_hz=None)
>>> decode_audio(event.audio, event.audio_format(SessionSettings().input_audio), event.event_id).tolist()
[0.0, 0.5]
>>> try:
...     parse_client_event('{"type": "input_audio_buffer.append", "audio": 7, "event_id": "e2"}')
... except ProtocolError as err:
...     print(err.code, "|", err, "|", err.event_id)
...     answer = error_event(err.code, str(err), err.event_id)
bad_event | input_audio_buffer.append: 'audio' must be a string, not int | e2
>>> answer["error"]["code"], answer["error"]["event_id"]
('bad_event', 'e2')

A unit's server events, as the real client reads them (the measurements ride under the additive ``ticktock``
key, which vLLM-Omni's client and the OpenAI SDK ignore):

>>> report = UnitReport(unit=3, post_audio_ms=12.5, draft_accepted=True, deadline_miss=False)
>>> speak = response_speak("resp_1", "item_1", report)
>>> speak["type"], speak["response_id"], speak["ticktock"]
('response.speak', 'resp_1', {'unit': 3, 'post_audio_ms': 12.5, 'draft_accepted': True, 'deadline_miss': False})
>>> response_listen(UnitReport(unit=4))["response"]["status"]
'listening'

The events of a unit, in the order vLLM-Omni's client demultiplexes them into responses (``ResponseHandle``): a
unit the model listens through is one ``response.listen`` without a response id (a standalone decision). A spoken
turn is one response: ``response.created`` when it starts, then per spoken unit ``response.speak`` and that unit's
``response.output_text.delta`` / ``response.output_audio_transcript.delta`` / ``response.output_audio.delta``
events (and a function call's ``response.output_item.added``, ``response.function_call_arguments.delta`` /
``.done``, ``response.output_item.done``), until ``response.done`` ends it, or a ``response.listen`` carrying its
response id (the model yields the turn: that unit's decision, and the response's end). The client hands a response
to its application at its first output and ends its audio at ``response.done`` or that listen.

What of vLLM-Omni's contract is NOT implemented, and why:

- ``session.resume`` (and ``resume_token``, ``server_event_seq``, ``session.event_ack``'s journal): TickTock keeps
  no replay journal of sent events, so a dropped socket ends the session; ``session.resume`` is answered with
  ``unsupported_session_resume`` (a code the client treats as final) and ``session.event_ack`` is accepted and
  ignored.
- Video and image input (``video_frames`` on an append): TickTock's models hear audio only
  (``invalid_input_modality``).
- G.711 (``g711_ulaw`` / ``g711_alaw``) input, and any output format but PCM16: ``unsupported_audio_format``.
- Text input into a live turn (``input.text.append``, ``conversation.item.create`` of a ``message``), client-forced
  barge-in (``barge_in``, ``input.cancel``, ``turn.signal``) and conversation editing (``conversation.item.delete``
  / ``truncate`` / ``retrieve``, ``output_audio_buffer.clear``): the replayed model decides per unit from the audio
  alone, as in the benchmark; these are answered with ``unknown_event`` naming them as not served.
- ``overlap.decision``, ``turn.event``, ``playback.acknowledged`` and the ``*.done`` events of text and audio
  parts are not built: the client needs none of them to hold a session (``input_audio_buffer.committed``, the
  answer to a turn commit, and ``session.expired``, the end of an idle session, are built).
- Server VAD (``turn_detection``) is read and ignored: the duplex model listens or speaks every unit itself.

Each input append is resampled on its own; a client that streams at a rate other than 16 kHz in small appends gets
the resampler's edge effects at every append boundary (PCM16 at 16 kHz, the default, is not resampled).
"""

from __future__ import annotations

import base64
import binascii
import json
import math
from dataclasses import dataclass, field, replace
from typing import Mapping, Union
from uuid import uuid4

import numpy as np

from ticktock.sessions.audio import SAMPLE_RATE, resample

#: Accepted input sample rates, inclusive: telephone audio to studio audio (outside: ``unsupported_audio_format``).
MIN_SAMPLE_RATE_HZ = 8_000
MAX_SAMPLE_RATE_HZ = 192_000
#: The most base64 characters one ``input_audio_buffer.append`` may carry: 4 MiB, about 98 s of PCM16 at 16 kHz or
#: 4 s of ``pcm_f32le`` at 192 kHz. vLLM-Omni's client appends 200 ms at a time; more is ``event_too_large``.
MAX_APPEND_BYTES = 4 * 1024 * 1024
#: The largest number a numeric field (``played_ms``, ``server_event_seq``...) may hold: 10**12 ms is 31 years.
MAX_FIELD_NUMBER = 10**12
#: The largest client frame read at all (an append at its bound plus room for the other keys).
MAX_FRAME_BYTES = MAX_APPEND_BYTES + 64 * 1024
#: The most characters of a client-supplied value (an ``event_id``, a ``call_id``, an event type) that any error
#: message or ``event_id`` echo repeats back (``clipped``): a client cannot make the server's answers large.
ECHO_CHARS = 64

ENCODING_BYTES = {"pcm16": 2, "pcm_f32le": 4}
ENCODING_ALIASES = {
    "pcm16": "pcm16",
    "pcm_s16le": "pcm16",
    "s16le": "pcm16",
    "pcm": "pcm16",
    "audio/pcm": "pcm16",
    "audio/pcm16": "pcm16",
    "pcm_f32le": "pcm_f32le",
    "f32le": "pcm_f32le",
    "audio/pcm_f32le": "pcm_f32le",
}

#: OpenAI's ``error.type`` bucket of every code this codec and the server use (vLLM-Omni's codes).
ERROR_TYPES = {
    "invalid_json": "invalid_request_error",
    "bad_event": "invalid_request_error",
    "unknown_event": "invalid_request_error",
    "bad_audio": "invalid_request_error",
    "event_too_large": "invalid_request_error",
    "unsupported_audio_format": "invalid_request_error",
    "invalid_input_modality": "invalid_request_error",
    "invalid_function_call_output": "invalid_request_error",
    "unsupported_session_resume": "invalid_request_error",
    "session_closed": "invalid_request_error",
    "invalid_request": "invalid_request_error",
    "config_timeout": "invalid_request_error",
    "resource_exhausted": "rate_limit_error",
    "input_backpressure": "rate_limit_error",
    "internal_error": "server_error",
    "engine_error": "server_error",
}

NOT_SERVED = {
    "input.text.append": "text input into a live turn",
    "barge_in": "client-forced barge-in",
    "input.cancel": "client-forced barge-in",
    "turn.signal": "client turn signals",
    "conversation.item.delete": "conversation editing",
    "conversation.item.truncate": "conversation editing",
    "conversation.item.retrieve": "conversation editing",
    "output_audio_buffer.clear": "conversation editing",
    "transcription_session.update": "transcription sessions",
}


class ProtocolError(ValueError):
    """A client frame that is not a valid event: ``code`` (vLLM-Omni's vocabulary), a one-line message naming the
    field, and the client's ``event_id`` it answers (None when the frame had none).

    >>> err = ProtocolError("bad_audio", "input_audio_buffer.append: 'audio' is not base64", "e9")
    >>> err.code, err.event_id, str(err)
    ('bad_audio', 'e9', "input_audio_buffer.append: 'audio' is not base64")
    """

    def __init__(self, code: str, message: str, event_id: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.event_id = event_id


# ---------------------------------------------------------------------------------------------------------------
# Value objects


@dataclass(frozen=True)
class AudioFormat:
    """One PCM wire format: ``pcm16`` or ``pcm_f32le``, mono, at ``sample_rate_hz``."""

    encoding: str = "pcm16"
    sample_rate_hz: int = SAMPLE_RATE


DEFAULT_INPUT_FORMAT = AudioFormat()


@dataclass(frozen=True)
class SessionSettings:
    """A session's settings as the client declared them; ``updated`` folds in a ``session.update``.

    >>> update = parse_client_event('{"type": "session.update", "session": {"sample_rate_hz": 24000}}')
    >>> SessionSettings().updated(update).input_audio
    AudioFormat(encoding='pcm16', sample_rate_hz=24000)
    """

    model: str | None = None
    modalities: tuple[str, ...] = ("audio", "text")
    input_audio: AudioFormat = DEFAULT_INPUT_FORMAT
    output_rate_hz: int | None = None
    instructions: str | None = None
    voice: str | None = None
    tools: tuple[Mapping[str, object], ...] = ()

    def updated(self, update: SessionUpdate) -> SessionSettings:
        """These settings with every field the update names replaced (a field it leaves out stays)."""
        changes: dict[str, object] = {
            name: getattr(update, name)
            for name in ("model", "modalities", "output_rate_hz", "instructions", "voice", "tools")
            if getattr(update, name) is not None
        }
        changes["input_audio"] = AudioFormat(
            update.input_encoding or self.input_audio.encoding,
            update.input_rate_hz or self.input_audio.sample_rate_hz,
        )
        return replace(self, **changes)


@dataclass(frozen=True)
class SessionUpdate:
    """``session.update``: each field None when the client left it out (vLLM-Omni's flat keys or OpenAI GA's
    ``audio.input.format``); ``raw`` is the whole session object as sent (``extra_body``, ``turn_detection``...)."""

    event_id: str | None = None
    model: str | None = None
    modalities: tuple[str, ...] | None = None
    input_encoding: str | None = None
    input_rate_hz: int | None = None
    output_rate_hz: int | None = None
    instructions: str | None = None
    voice: str | None = None
    tools: tuple[Mapping[str, object], ...] | None = None
    raw: Mapping[str, object] = field(default_factory=dict, repr=False)


@dataclass(frozen=True)
class AudioAppend:
    """``input_audio_buffer.append``: base64 audio, with the ``encoding`` and ``sample_rate_hz`` the append itself
    declares (vLLM-Omni's client declares both on every append; OpenAI's declares neither).

    >>> AudioAppend("e1", "", sample_rate_hz=48_000).audio_format(AudioFormat("pcm_f32le", 24_000))
    AudioFormat(encoding='pcm_f32le', sample_rate_hz=48000)
    """

    event_id: str | None
    audio: str
    encoding: str | None = None
    sample_rate_hz: int | None = None

    def audio_format(self, session_format: AudioFormat) -> AudioFormat:
        """The format of this append's audio: what it declares, the session's input format for the rest."""
        rate = self.sample_rate_hz or session_format.sample_rate_hz
        return AudioFormat(self.encoding or session_format.encoding, rate)


@dataclass(frozen=True)
class AudioCommit:
    """``input_audio_buffer.commit``: the end of a user turn (the input goes on); ``final`` and ``create_response``
    as sent."""

    event_id: str | None
    final: bool = True
    create_response: bool | None = None


@dataclass(frozen=True)
class AudioClear:
    """``input_audio_buffer.clear``."""

    event_id: str | None


@dataclass(frozen=True)
class ResponseCreate:
    """``response.create`` (OpenAI clients send it after a commit); the duplex model decides per unit anyway."""

    event_id: str | None


@dataclass(frozen=True)
class ResponseCancel:
    """``response.cancel``: the active response, or ``response_id``."""

    event_id: str | None
    response_id: str | None = None


@dataclass(frozen=True)
class FunctionCallOutput:
    """``conversation.item.create`` of a ``function_call_output`` item: the client's answer to a call."""

    event_id: str | None
    call_id: str
    output: str
    item_id: str | None = None


@dataclass(frozen=True)
class PlaybackAck:
    """``playback.ack``: how much of the speech the client has played, cumulative."""

    event_id: str | None
    played_ms: float
    committed_ms: float | None = None
    response_id: str | None = None
    item_id: str | None = None


@dataclass(frozen=True)
class Heartbeat:
    """``session.heartbeat``: answered with ``heartbeat_ack()``."""

    event_id: str | None


@dataclass(frozen=True)
class EventAck:
    """``session.event_ack``: the client confirms a ``server_event_seq`` (accepted; no journal to trim)."""

    event_id: str | None
    server_event_seq: int


@dataclass(frozen=True)
class SessionClose:
    """``session.close``: answered with ``session_closed(...)``."""

    event_id: str | None
    reason: str = "client_close"


ClientEvent = Union[
    SessionUpdate, AudioAppend, AudioCommit, AudioClear, ResponseCreate, ResponseCancel, FunctionCallOutput,
    PlaybackAck, Heartbeat, EventAck, SessionClose,
]


# ---------------------------------------------------------------------------------------------------------------
# Client events


def parse_client_event(frame: str | bytes) -> ClientEvent:
    """One client frame as its typed event; ``ProtocolError`` when it is not one.

    >>> parse_client_event('{"type": "playback.ack", "played_ms": 1200, "event_id": "e3"}')
    PlaybackAck(event_id='e3', played_ms=1200, committed_ms=None, response_id=None, item_id=None)
    >>> for bad in ('not json', '[1]', '{"type": "dance"}'):
    ...     try:
    ...         parse_client_event(bad)
    ...     except ProtocolError as err:
    ...         print(err.code, "|", err)
    invalid_json | frame is not JSON (Expecting value at character 0)
    bad_event | frame is a JSON array, not an object
    unknown_event | unknown event type 'dance'
    """
    event = _json_object(frame)
    event_id = event.get("event_id")
    if event_id is not None and not isinstance(event_id, str):
        raise ProtocolError("bad_event", f"'event_id' must be a string, not {_kind(event_id)}")
    event_type = event.get("type")
    if not isinstance(event_type, str):
        what = "has no 'type'" if event_type is None else f"'type' must be a string, not {_kind(event_type)}"
        raise ProtocolError("bad_event", f"event {what}", event_id)
    parser = _PARSERS.get(event_type)
    if parser is None:
        raise _unserved(event_type, event_id)
    return parser(_Fields(event, event_type, event_id))


def _json_object(frame: str | bytes) -> dict:
    if len(frame) > MAX_FRAME_BYTES:
        raise ProtocolError(
            "event_too_large", f"frame is {len(frame)} bytes, above the bound of {MAX_FRAME_BYTES} (MAX_FRAME_BYTES)"
        )
    if isinstance(frame, (bytes, bytearray)):
        try:
            frame = bytes(frame).decode("utf-8")
        except UnicodeDecodeError:
            raise ProtocolError("invalid_json", "frame is not UTF-8 text") from None
    try:
        event = json.loads(frame)
    except json.JSONDecodeError as err:
        raise ProtocolError("invalid_json", f"frame is not JSON ({err.msg} at character {err.pos})") from None
    except RecursionError:
        raise ProtocolError("invalid_json", "frame nests JSON too deeply to read") from None
    except ValueError as err:  # an integer literal too long to convert
        raise ProtocolError("invalid_json", f"frame is not JSON that can be read ({str(err)[:80]})") from None
    if not isinstance(event, dict):
        raise ProtocolError("bad_event", f"frame is a JSON {_kind(event)}, not an object")
    return event


def _unserved(event_type: str, event_id: str | None) -> ProtocolError:
    if event_type == "session.resume":
        return ProtocolError(
            "unsupported_session_resume", "session.resume is not served (no event journal): open a new session",
            event_id,
        )
    if event_type in NOT_SERVED:
        return ProtocolError("unknown_event", f"'{event_type}' is not served ({NOT_SERVED[event_type]})", event_id)
    return ProtocolError("unknown_event", f"unknown event type '{clipped(event_type)}'", event_id)


_JSON_KINDS = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}


def _kind(value: object) -> str:
    return _JSON_KINDS.get(type(value), type(value).__name__)


class _Fields:
    """Typed reads of one event's fields; each wrong field a ``ProtocolError`` naming the event and the field."""

    def __init__(self, event: Mapping[str, object], event_type: str, event_id: str | None, where: str = "") -> None:
        self.event, self.event_type, self.event_id, self.where = event, event_type, event_id, where

    def error(self, name: str, problem: str, code: str = "bad_event") -> ProtocolError:
        return ProtocolError(code, f"{self.event_type}: '{self.where}{name}' {problem}", self.event_id)

    def read(self, name: str, kind: type | tuple[type, ...], kind_name: str, required: bool = False):
        value = self.event.get(name)
        if value is None:
            if required:
                raise self.error(name, "is missing")
            return None
        wrong_bool = isinstance(value, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,))
        if not isinstance(value, kind) or wrong_bool:
            raise self.error(name, f"must be {kind_name}, not {_kind(value)}")
        return value

    def text(self, name: str, required: bool = False) -> str | None:
        return self.read(name, str, "a string", required)

    def flag(self, name: str) -> bool | None:
        return self.read(name, bool, "a boolean")

    def number(self, name: str, required: bool = False) -> float | int | None:
        value = self.read(name, (int, float), "a number", required)
        if value is not None and not (0 <= value <= MAX_FIELD_NUMBER and math.isfinite(value)):
            raise self.error(name, f"must be a number from 0 to {MAX_FIELD_NUMBER:.0e}, not {_short(value)}")
        return value

    def integer(self, name: str, required: bool = False) -> int | None:
        value = self.read(name, int, "an integer", required)
        if value is not None and not 0 <= value <= MAX_FIELD_NUMBER:
            raise self.error(name, f"must be an integer from 0 to {MAX_FIELD_NUMBER:.0e}, not {_short(value)}")
        return value

    def nested(self, name: str, required: bool = False) -> _Fields | None:
        value = self.read(name, dict, "an object", required)
        return None if value is None else _Fields(value, self.event_type, self.event_id, f"{self.where}{name}.")

    def rate(self, name: str) -> int | None:
        value = self.read(name, int, "an integer")
        if value is not None and not MIN_SAMPLE_RATE_HZ <= value <= MAX_SAMPLE_RATE_HZ:
            raise self.error(name, _rate_problem(value), "unsupported_audio_format")
        return value

    def encoding(self, name: str) -> str | None:
        value = self.text(name)
        if value is None:
            return None
        encoding = ENCODING_ALIASES.get(value.lower())
        if encoding is None:
            raise self.error(name, f"is '{value[:40]}': served are pcm16 and pcm_f32le", "unsupported_audio_format")
        return encoding


def clipped(value: object) -> str:
    """A client-supplied value as an error may repeat it: its first ``ECHO_CHARS`` characters, ``...`` after a cut.

    >>> clipped("evt_1"), len(clipped("x" * 10_000))
    ('evt_1', 67)
    """
    text = str(value)
    return text if len(text) <= ECHO_CHARS else f"{text[:ECHO_CHARS]}..."


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 24 else f"{text[:20]}..."


def _rate_problem(rate: object) -> str:
    return f"is {_short(rate)} Hz: accepted are {MIN_SAMPLE_RATE_HZ} to {MAX_SAMPLE_RATE_HZ} Hz"


def _session_update(fields: _Fields) -> SessionUpdate:
    session = fields.nested("session", required=True)
    audio = session.nested("audio")
    audio_in = audio.nested("input") if audio else None
    audio_out = audio.nested("output") if audio else None
    format_in = _format_block(audio_in)
    format_out = _format_block(audio_out)
    _check_output_encoding(session, "output_audio_format")
    if format_out is not None:
        _check_output_encoding(format_out, "type")
    return SessionUpdate(
        event_id=fields.event_id,
        model=session.text("model"),
        modalities=_modalities(session),
        input_encoding=_first(session.encoding("input_audio_format"), _format_encoding(format_in)),
        input_rate_hz=_first(session.rate("sample_rate_hz"), _block_rate(audio_in, format_in)),
        output_rate_hz=_block_rate(audio_out, format_out),
        instructions=session.text("instructions"),
        voice=_first(session.text("voice"), audio_out.text("voice") if audio_out else None),
        tools=_tools(session),
        raw=dict(session.event),
    )


def _check_output_encoding(fields: _Fields, name: str) -> None:
    value = fields.text(name)
    if value is not None and ENCODING_ALIASES.get(value.lower()) != "pcm16":
        raise fields.error(name, f"is '{value[:40]}': the talker's speech is sent as pcm16 only",
                           "unsupported_audio_format")


def _format_block(block: _Fields | None) -> _Fields | None:
    """The GA ``format`` object of an ``audio.input`` / ``audio.output`` block (a bare string is read as its type)."""
    if block is None or block.event.get("format") is None:
        return None
    if isinstance(block.event["format"], str):
        return _Fields({"type": block.event["format"]}, block.event_type, block.event_id, f"{block.where}format.")
    return block.nested("format")


def _format_encoding(format_block: _Fields | None) -> str | None:
    return format_block.encoding("type") if format_block else None


def _block_rate(block: _Fields | None, format_block: _Fields | None) -> int | None:
    """vLLM-Omni's ``sample_rate_hz`` of an audio block, else GA's ``format.rate`` (both checked when both are sent)."""
    return _first(block.rate("sample_rate_hz") if block else None, format_block.rate("rate") if format_block else None)


def _first(*values):
    """The first value that is not None (every value already read and checked)."""
    return next((value for value in values if value is not None), None)


def _modalities(session: _Fields) -> tuple[str, ...] | None:
    name = "modalities" if "modalities" in session.event else "output_modalities"
    value = session.read(name, list, "an array")
    if value is None:
        return None
    if not all(entry in ("audio", "text") for entry in value):
        raise session.error(name, f"must hold only 'audio' and 'text', not {clipped(repr(value))}")
    return tuple(value)


def _tools(session: _Fields) -> tuple[Mapping[str, object], ...] | None:
    tools = session.read("tools", list, "an array")
    if tools is None:
        return None
    for index, tool in enumerate(tools):
        if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
            raise session.error(f"tools[{index}]", "must be an object with a string 'name'")
    return tuple(tools)


def _append(fields: _Fields) -> AudioAppend:
    audio = fields.text("audio", required=True)
    if fields.read("video_frames", list, "an array"):
        raise fields.error("video_frames", "are not served: TickTock's models hear audio only",
                           "invalid_input_modality")
    fields.flag("is_speech")
    return AudioAppend(fields.event_id, audio, fields.encoding("format"), fields.rate("sample_rate_hz"))


def _commit(fields: _Fields) -> AudioCommit:
    final = fields.flag("final")
    return AudioCommit(fields.event_id, True if final is None else final, fields.flag("response_create"))


def _function_call_output(fields: _Fields) -> FunctionCallOutput:
    item = fields.nested("item", required=True)
    item_type = item.text("type", required=True)
    if item_type != "function_call_output":
        raise item.error("type", f"is '{item_type[:40]}': served is only 'function_call_output'")
    try:
        call_id, output = item.text("call_id", required=True), item.text("output", required=True)
    except ProtocolError as err:
        raise ProtocolError("invalid_function_call_output", str(err), err.event_id) from None
    return FunctionCallOutput(fields.event_id, call_id, output, item.text("id"))


def _playback_ack(fields: _Fields) -> PlaybackAck:
    return PlaybackAck(
        fields.event_id, fields.number("played_ms", required=True), fields.number("committed_ms"),
        fields.text("response_id"), fields.text("item_id"),
    )


_PARSERS = {
    "session.update": _session_update,
    "input_audio_buffer.append": _append,
    "input_audio_buffer.commit": _commit,
    "input_audio_buffer.clear": lambda fields: AudioClear(fields.event_id),
    "response.create": lambda fields: ResponseCreate(fields.event_id),
    "response.cancel": lambda fields: ResponseCancel(fields.event_id, fields.text("response_id")),
    "conversation.item.create": _function_call_output,
    "playback.ack": _playback_ack,
    "session.heartbeat": lambda fields: Heartbeat(fields.event_id),
    "session.event_ack": lambda fields: EventAck(fields.event_id, fields.integer("server_event_seq", required=True)),
    "session.close": lambda fields: SessionClose(fields.event_id, fields.text("reason") or "client_close"),
}


# ---------------------------------------------------------------------------------------------------------------
# Audio


def decode_audio(b64: str, audio_format: AudioFormat, event_id: str | None = None) -> np.ndarray:
    """Base64 PCM in ``audio_format`` as float32 mono samples at 16 kHz (other rates resampled); ``ProtocolError``
    for audio that is not base64, a byte count that is not whole samples, a rate outside ``MIN_SAMPLE_RATE_HZ`` to
    ``MAX_SAMPLE_RATE_HZ``, NaN or infinity in ``pcm_f32le``, or more than ``MAX_APPEND_BYTES`` of base64.

    >>> decode_audio(encode_pcm16(np.array([0.25, -0.5], dtype=np.float32)), DEFAULT_INPUT_FORMAT).tolist()
    [0.25, -0.5]
    >>> try:
    ...     decode_audio("AAE=", AudioFormat("pcm_f32le", 16_000))
    ... except ProtocolError as err:
    ...     print(err.code, "|", err)
    bad_audio | input_audio_buffer.append: 'audio' is 2 bytes, not whole pcm_f32le samples (4 bytes each)
    """
    where = "input_audio_buffer.append: 'audio'"
    if not isinstance(b64, str):
        raise ProtocolError("bad_audio", f"{where} must be a base64 string, not {_kind(b64)}", event_id)
    if len(b64) > MAX_APPEND_BYTES:
        raise ProtocolError(
            "event_too_large",
            f"{where} is {len(b64)} bytes of base64, above the bound of {MAX_APPEND_BYTES} (MAX_APPEND_BYTES)",
            event_id,
        )
    width = _check_format(audio_format, event_id)
    try:
        data = base64.b64decode(b64, validate=True)
    except (binascii.Error, ValueError):
        raise ProtocolError("bad_audio", f"{where} is not base64", event_id) from None
    if len(data) % width:
        raise ProtocolError(
            "bad_audio",
            f"{where} is {len(data)} bytes, not whole {audio_format.encoding} samples ({width} bytes each)",
            event_id,
        )
    samples = _samples(data, audio_format.encoding, where, event_id)
    return resample(samples, audio_format.sample_rate_hz) if len(samples) else samples


def _check_format(audio_format: AudioFormat, event_id: str | None) -> int:
    width = ENCODING_BYTES.get(audio_format.encoding)
    if width is None:
        raise ProtocolError(
            "unsupported_audio_format",
            f"input audio format '{audio_format.encoding}' is not served: served are pcm16 and pcm_f32le",
            event_id,
        )
    rate = audio_format.sample_rate_hz
    if isinstance(rate, bool) or not isinstance(rate, int) or not MIN_SAMPLE_RATE_HZ <= rate <= MAX_SAMPLE_RATE_HZ:
        raise ProtocolError("unsupported_audio_format", f"input sample rate {_rate_problem(rate)}", event_id)
    return width


def _samples(data: bytes, encoding: str, where: str, event_id: str | None) -> np.ndarray:
    if encoding == "pcm16":
        return np.frombuffer(data, dtype="<i2").astype(np.float32) / np.float32(32768.0)
    samples = np.frombuffer(data, dtype="<f4").astype(np.float32)
    if not np.isfinite(samples).all():
        raise ProtocolError("bad_audio", f"{where} holds NaN or infinity", event_id)
    return samples


def encode_pcm16(samples: np.ndarray) -> str:
    """Float samples (clipped to [-1, 1]) as base64 little-endian PCM16, the wire form of the talker's speech.

    >>> encode_pcm16(np.array([0.0, 0.5, -1.0, 2.0], dtype=np.float32))
    'AAAAQACA/38='
    """
    clipped = np.clip(np.nan_to_num(np.asarray(samples, dtype=np.float32)), -1.0, 1.0)
    pcm = np.round(clipped * 32767.0).astype("<i2")
    pcm[clipped <= -1.0] = -32768
    return base64.b64encode(pcm.tobytes()).decode("ascii")


# ---------------------------------------------------------------------------------------------------------------
# Server events


def new_event_id() -> str:
    """A fresh server event id."""
    return f"event_{uuid4().hex}"


@dataclass(frozen=True)
class UnitReport:
    """TickTock's measurements of one unit, sent under the additive ``ticktock`` key of its decision event: the unit
    index, the time from its last sample to its decision (ms), whether Speculative Listening's draft was accepted
    (None for other decoders), whether the unit missed its deadline, and its kind where the contract's two decisions
    cannot say it (a backchannel is sent as ``response.speak``; ``kind`` says ``backchannel``). A None measurement is
    left out.

    >>> UnitReport(unit=2, post_audio_ms=40.0).wire()
    {'unit': 2, 'post_audio_ms': 40.0}
    """

    unit: int
    post_audio_ms: float | None = None
    draft_accepted: bool | None = None
    deadline_miss: bool | None = None
    kind: str | None = None  # TickTock's kind where the two decisions cannot say it: "backchannel" (sent as speak)

    def wire(self) -> dict[str, object]:
        values = {"unit": self.unit, "post_audio_ms": self.post_audio_ms, "draft_accepted": self.draft_accepted,
                  "deadline_miss": self.deadline_miss, "kind": self.kind}
        return {name: value for name, value in values.items() if value is not None}


def session_object(session_id: str, settings: SessionSettings) -> dict[str, object]:
    """The session object of ``session.created`` / ``session.updated``: OpenAI GA's (``type``, ``id``, ``model``,
    ``output_modalities``...) plus vLLM-Omni's flat format keys and ``session_id``, which its client reads.

    >>> session_object("sess_1", SessionSettings(model="embedded"))["audio"]["input"]
    {'sample_rate_hz': 16000}
    """
    audio_out = {} if settings.output_rate_hz is None else {"sample_rate_hz": settings.output_rate_hz}
    session: dict[str, object] = {
        "type": "realtime",
        "object": "realtime.session",
        "id": session_id,
        "session_id": session_id,
        "model": settings.model,
        "output_modalities": list(settings.modalities),
        "modalities": list(settings.modalities),
        "input_audio_format": settings.input_audio.encoding,
        "output_audio_format": "pcm16",
        "sample_rate_hz": settings.input_audio.sample_rate_hz,
        "audio": {"input": {"sample_rate_hz": settings.input_audio.sample_rate_hz}, "output": audio_out},
        "tools": [dict(tool) for tool in settings.tools],
    }
    for name in ("instructions", "voice"):
        if getattr(settings, name) is not None:
            session[name] = getattr(settings, name)
    return session


def session_created(session: Mapping[str, object]) -> dict[str, object]:
    """``session.created``, the answer to the handshake's ``session.update`` (no ``resume_token``: no resume)."""
    return {"type": "session.created", "event_id": new_event_id(), "session": dict(session)}


def session_updated(session: Mapping[str, object]) -> dict[str, object]:
    """``session.updated``, the answer to a later ``session.update``."""
    return {"type": "session.updated", "event_id": new_event_id(), "session": dict(session)}


def response_listen(report: UnitReport, response_id: str | None = None) -> dict[str, object]:
    """``response.listen``: the model keeps listening this unit. Without ``response_id`` it is a standalone decision;
    with one, it ends that response (the model yields the turn), as vLLM-Omni's client reads it."""
    response: dict[str, object] = {"object": "realtime.response", "status": "listening", "metadata": {}}
    event: dict[str, object] = {"type": "response.listen", "event_id": new_event_id(), "response": response}
    if response_id is not None:
        response["id"] = response_id
        event["response_id"] = response_id
    event["ticktock"] = report.wire()
    return event


def response_speak(response_id: str, item_id: str, report: UnitReport) -> dict[str, object]:
    """``response.speak``: the model speaks this unit, within response ``response_id``."""
    return {
        "type": "response.speak", "event_id": new_event_id(), "response_id": response_id, "item_id": item_id,
        "output_index": 0, "content_index": 0, "metadata": {}, "ticktock": report.wire(),
    }


def response_created(response_id: str, modalities: tuple[str, ...] = ("audio", "text")) -> dict[str, object]:
    """``response.created``: a spoken response starts (its id also at the top level, as vLLM-Omni sends it)."""
    response = {"id": response_id, "object": "realtime.response", "status": "in_progress", "output": [],
                "output_modalities": _response_modalities(modalities)}
    return {"type": "response.created", "event_id": new_event_id(), "response_id": response_id, "response": response}


def _response_modalities(modalities: tuple[str, ...]) -> list[str]:
    """OpenAI GA allows one output modality per response: audio (with its transcript) when the session has it."""
    return ["audio"] if "audio" in modalities else ["text"]


def response_done(response_id: str, status: str = "completed", output: tuple[Mapping[str, object], ...] = (),
                  modalities: tuple[str, ...] = ("audio", "text")) -> dict[str, object]:
    """``response.done``: the response ended, ``completed`` or ``cancelled`` (``output``: its function-call items)."""
    response = {"id": response_id, "object": "realtime.response", "status": status,
                "output": [dict(item) for item in output], "output_modalities": _response_modalities(modalities)}
    return {"type": "response.done", "event_id": new_event_id(), "response_id": response_id, "response": response}


def _content_delta(event_type: str, response_id: str, item_id: str, delta: str) -> dict[str, object]:
    return {"type": event_type, "event_id": new_event_id(), "response_id": response_id, "item_id": item_id,
            "output_index": 0, "content_index": 0, "delta": delta}


def text_delta(response_id: str, item_id: str, delta: str) -> dict[str, object]:
    """``response.output_text.delta``: text the model wrote."""
    return _content_delta("response.output_text.delta", response_id, item_id, delta)


def transcript_delta(response_id: str, item_id: str, delta: str) -> dict[str, object]:
    """``response.output_audio_transcript.delta``: the text of the speech being sent."""
    return _content_delta("response.output_audio_transcript.delta", response_id, item_id, delta)


def audio_delta(response_id: str, item_id: str, samples: np.ndarray, sample_rate_hz: int) -> dict[str, object]:
    """``response.output_audio.delta``: the talker's speech as base64 PCM16 at its own rate (``sample_rate_hz``,
    which vLLM-Omni's client reads per chunk)."""
    event = _content_delta("response.output_audio.delta", response_id, item_id, encode_pcm16(samples))
    event.update(format="pcm16", sample_rate_hz=int(sample_rate_hz))
    return event


@dataclass(frozen=True)
class FunctionCall:
    """A function call the model makes: its output item ``item_id``, ``call_id`` (the client answers with it),
    the function ``name`` and its JSON ``arguments``."""

    item_id: str
    call_id: str
    name: str
    arguments: str = ""

    def item(self, status: str) -> dict[str, object]:
        """The GA ``function_call`` conversation item."""
        return {"id": self.item_id, "object": "realtime.item", "type": "function_call", "status": status,
                "call_id": self.call_id, "name": self.name, "arguments": self.arguments}


def output_item_added(response_id: str, call: FunctionCall, output_index: int = 0) -> dict[str, object]:
    """``response.output_item.added``: a function call starts (arguments still empty)."""
    item = replace(call, arguments="").item("in_progress")
    return {"type": "response.output_item.added", "event_id": new_event_id(), "response_id": response_id,
            "output_index": output_index, "item": item}


def function_call_arguments_delta(response_id: str, call: FunctionCall, delta: str,
                                  output_index: int = 0) -> dict[str, object]:
    """``response.function_call_arguments.delta``: a piece of the call's JSON arguments."""
    return {"type": "response.function_call_arguments.delta", "event_id": new_event_id(), "response_id": response_id,
            "item_id": call.item_id, "output_index": output_index, "call_id": call.call_id, "delta": delta}


def function_call_arguments_done(response_id: str, call: FunctionCall, output_index: int = 0) -> dict[str, object]:
    """``response.function_call_arguments.done``: the call's whole arguments."""
    return {"type": "response.function_call_arguments.done", "event_id": new_event_id(), "response_id": response_id,
            "item_id": call.item_id, "output_index": output_index, "call_id": call.call_id, "name": call.name,
            "arguments": call.arguments}


def output_item_done(response_id: str, call: FunctionCall, output_index: int = 0) -> dict[str, object]:
    """``response.output_item.done``: the function call is complete; the client runs it and answers with a
    ``conversation.item.create`` of a ``function_call_output``."""
    return {"type": "response.output_item.done", "event_id": new_event_id(), "response_id": response_id,
            "output_index": output_index, "item": call.item("completed")}


def error_event(code: str, message: str, related_event_id: str | None = None) -> dict[str, object]:
    """``error``: OpenAI's envelope (``error.type`` from ``ERROR_TYPES``), vLLM-Omni's ``code``, the client event it
    answers (its ``event_id`` echoed ``clipped`` to ``ECHO_CHARS``: the client's own id, not a way to grow the answer).

    >>> error = error_event("bad_audio", "input_audio_buffer.append: 'audio' is not base64", "e4")["error"]
    >>> error["type"], error["code"], error["event_id"]
    ('invalid_request_error', 'bad_audio', 'e4')
    >>> len(error_event("unknown_event", "unknown event type 'x'", "e" * 100_000)["error"]["event_id"])
    67
    """
    error = {"type": ERROR_TYPES.get(code, "invalid_request_error"), "code": code, "message": message}
    if related_event_id:
        error["event_id"] = clipped(related_event_id)
    return {"type": "error", "event_id": new_event_id(), "error": error}


def heartbeat_ack(session_id: str) -> dict[str, object]:
    """``session.heartbeat_ack``: vLLM-Omni's answer to a client's ``session.heartbeat``."""
    return {"type": "session.heartbeat_ack", "event_id": new_event_id(), "session_id": session_id}


def input_audio_buffer_committed(item_id: str, previous_item_id: str | None = None) -> dict[str, object]:
    """``input_audio_buffer.committed``: the answer to a commit in either mode (the user's turn ends; the input goes
    on), naming the user item the turn's audio became and the previous commit's.

    >>> committed = input_audio_buffer_committed("item_1")
    >>> committed["type"], committed["item_id"], committed["previous_item_id"]
    ('input_audio_buffer.committed', 'item_1', None)
    """
    return {"type": "input_audio_buffer.committed", "event_id": new_event_id(), "previous_item_id": previous_item_id,
            "item_id": item_id}


def session_closed(session_id: str, reason: str) -> dict[str, object]:
    """``session.closed``: the session ended, and why (``client_close`` or the reason the client's ``session.close``
    gave, ``ended``, ``server_shutdown``, ``engine_error``...); the reason is ``clipped``.

    >>> session_closed("sess_1", "client_close")["reason"]
    'client_close'
    """
    return {"type": "session.closed", "event_id": new_event_id(), "session_id": session_id, "reason": clipped(reason)}


def session_expired(session_id: str, reason: str = "idle_ttl_expired") -> dict[str, object]:
    """``session.expired``: vLLM-Omni's terminal event for a session that was idle past its timeout (its reason,
    ``idle_ttl_expired``, is vLLM-Omni's too).

    >>> expired = session_expired("sess_1")
    >>> expired["type"], expired["reason"]
    ('session.expired', 'idle_ttl_expired')
    """
    return {"type": "session.expired", "event_id": new_event_id(), "session_id": session_id, "reason": reason}
