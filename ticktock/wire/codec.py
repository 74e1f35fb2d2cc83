"""What every wire event stands on: frames read as JSON objects, typed field reads that fail in one line, the bounds
a client's input is held to, PCM16 encoding, input audio decoding and the session's audio formats.

A field read that fails is a ``ProtocolError`` whose code is vLLM-Omni's where one fits and whose message names the
event and the field (``Fields``); the same reader serves the server (client events) and the client (server events):

>>> fields = Fields({"played_ms": "5"}, "playback.ack", "e1")
>>> try:
...     fields.number("played_ms")
... except ProtocolError as err:
...     print(err.code, "|", err, "|", err.event_id)
bad_event | playback.ack: 'played_ms' must be a number, not string | e1

Input audio is bare base64 PCM, 16 kHz mono unless the session (or the append itself) declares another format:
``pcm16`` or ``pcm_f32le`` at a rate from ``MIN_SAMPLE_RATE_HZ`` to ``MAX_SAMPLE_RATE_HZ``, resampled to 16 kHz with
``ticktock.sessions.audio.resample``. Each input append is resampled on its own; a client that streams at a rate
other than 16 kHz in small appends gets the resampler's edge effects at every append boundary (PCM16 at 16 kHz, the
default, is not resampled).
"""

from __future__ import annotations

import base64
import binascii
import json
import math
from dataclasses import dataclass, field, replace
from typing import ClassVar, Mapping
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
#: The largest frame read at all (an append at its bound plus room for the other keys).
MAX_FRAME_BYTES = MAX_APPEND_BYTES + 64 * 1024
#: The most characters of a client-supplied value (an ``event_id``, a ``call_id``, an event type) that any error
#: message or ``event_id`` echo repeats back (``clipped``): a client cannot make the server's answers large.
ECHO_CHARS = 64
#: The sample rate of output audio when a server's delta does not say (OpenAI Realtime GA's PCM16 is 24 kHz).
DEFAULT_OUTPUT_RATE_HZ = 24_000

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

#: OpenAI's ``error.type`` bucket of every code the wire and the server use (vLLM-Omni's codes).
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


class ProtocolError(ValueError):
    """A frame that is not a valid event: ``code`` (vLLM-Omni's vocabulary), a one-line message naming the field,
    and the client's ``event_id`` it answers (None when the frame had none, and for every server event).

    >>> err = ProtocolError("bad_audio", "input_audio_buffer.append: 'audio' is not base64", "e9")
    >>> err.code, err.event_id, str(err)
    ('bad_audio', 'e9', "input_audio_buffer.append: 'audio' is not base64")
    """

    def __init__(self, code: str, message: str, event_id: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.event_id = event_id


def new_event_id() -> str:
    """A fresh event id (``event_`` and 32 hex digits)."""
    return f"event_{uuid4().hex}"


# ---------------------------------------------------------------------------------------------------------------
# Frames and fields


def read_json_object(frame: str | bytes) -> dict:
    """One frame as a JSON object; ``ProtocolError`` for a frame above ``MAX_FRAME_BYTES``, not UTF-8, not JSON, or
    not an object.

    >>> read_json_object('{"type": "session.heartbeat"}')
    {'type': 'session.heartbeat'}
    """
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
        raise ProtocolError("bad_event", f"frame is a JSON {json_kind(event)}, not an object")
    return event


_JSON_KINDS = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}


def json_kind(value: object) -> str:
    """The JSON name of a value's type, as an error message says it (``object``, ``array``, ``string``, ``int``...)."""
    return _JSON_KINDS.get(type(value), type(value).__name__)


def clipped(value: object, chars: int = ECHO_CHARS) -> str:
    """A client-supplied value as an error may repeat it: its first ``chars`` characters (``ECHO_CHARS``), ``...``
    after a cut.

    >>> clipped("evt_1"), len(clipped("x" * 10_000))
    ('evt_1', 67)
    """
    text = str(value)
    return text if len(text) <= chars else f"{text[:chars]}..."


def echoed(value: object, chars: int = ECHO_CHARS) -> str:
    """A value from the other side as one line of a message: control characters escaped, then ``clipped`` to
    ``chars``. Only the characters that can be shown are escaped (a 3 MB value costs no more than a short one).

    >>> echoed("audio\\n/pcm"), len(echoed("\\t" * 100)), len(echoed("A" * 3_000_000, 200))
    ('audio\\\\n/pcm', 67, 203)
    """
    text = "".join(char if char.isprintable() else repr(char)[1:-1] for char in str(value)[: chars + 1])
    return clipped(text, chars)


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 24 else f"{text[:20]}..."


def rate_problem(rate: object) -> str:
    """What is wrong with a rate outside ``MIN_SAMPLE_RATE_HZ`` to ``MAX_SAMPLE_RATE_HZ``, as a message says it."""
    return f"is {_short(rate)} Hz: accepted are {MIN_SAMPLE_RATE_HZ} to {MAX_SAMPLE_RATE_HZ} Hz"


class Fields:
    """Typed reads of one event's fields (or of an object nested in it, ``where`` naming its path): each read gives
    None for a field left out, the value when it has the type asked for, and a ``ProtocolError`` naming the event and
    the field otherwise.

    >>> fields = Fields({"session": {"sample_rate_hz": 12}}, "session.update", None)
    >>> try:
    ...     fields.nested("session").rate("sample_rate_hz")
    ... except ProtocolError as err:
    ...     print(err.code, "|", err)
    unsupported_audio_format | session.update: 'session.sample_rate_hz' is 12 Hz: accepted are 8000 to 192000 Hz
    """

    def __init__(self, event: Mapping[str, object], event_type: str, event_id: str | None, where: str = "") -> None:
        self.event, self.event_type, self.event_id, self.where = event, event_type, event_id, where

    def error(self, name: str, problem: str, code: str = "bad_event") -> ProtocolError:
        """The error for field ``name``: ``<event type>: '<path>' <problem>``."""
        return ProtocolError(code, f"{self.event_type}: '{self.where}{name}' {problem}", self.event_id)

    def read(self, name: str, kind: type | tuple[type, ...], kind_name: str, required: bool = False):
        """Field ``name`` when it is a ``kind`` (a boolean only when ``kind`` names bool), None when left out."""
        value = self.event.get(name)
        if value is None:
            if required:
                raise self.error(name, "is missing")
            return None
        wrong_bool = isinstance(value, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,))
        if not isinstance(value, kind) or wrong_bool:
            raise self.error(name, f"must be {kind_name}, not {json_kind(value)}")
        return value

    def text(self, name: str, required: bool = False) -> str | None:
        return self.read(name, str, "a string", required)

    def flag(self, name: str) -> bool | None:
        return self.read(name, bool, "a boolean")

    def number(self, name: str, required: bool = False) -> float | int | None:
        """A number from 0 to ``MAX_FIELD_NUMBER``."""
        value = self.read(name, (int, float), "a number", required)
        if value is not None and not (0 <= value <= MAX_FIELD_NUMBER and math.isfinite(value)):
            raise self.error(name, f"must be a number from 0 to {MAX_FIELD_NUMBER:.0e}, not {_short(value)}")
        return value

    def integer(self, name: str, required: bool = False) -> int | None:
        """An integer from 0 to ``MAX_FIELD_NUMBER``."""
        value = self.read(name, int, "an integer", required)
        if value is not None and not 0 <= value <= MAX_FIELD_NUMBER:
            raise self.error(name, f"must be an integer from 0 to {MAX_FIELD_NUMBER:.0e}, not {_short(value)}")
        return value

    def nested(self, name: str, required: bool = False) -> Fields | None:
        """The object in field ``name``, read the same way (its fields named ``name.<field>``)."""
        value = self.read(name, dict, "an object", required)
        return None if value is None else Fields(value, self.event_type, self.event_id, f"{self.where}{name}.")

    def nested_or_empty(self, name: str) -> Fields:
        """``nested(name)``, or an empty object when the field is left out (every read of it then gives None)."""
        return self.nested(name) or Fields({}, self.event_type, self.event_id, f"{self.where}{name}.")

    def rate(self, name: str) -> int | None:
        """A sample rate from ``MIN_SAMPLE_RATE_HZ`` to ``MAX_SAMPLE_RATE_HZ`` (else ``unsupported_audio_format``)."""
        value = self.read(name, int, "an integer")
        if value is not None and not MIN_SAMPLE_RATE_HZ <= value <= MAX_SAMPLE_RATE_HZ:
            raise self.error(name, rate_problem(value), "unsupported_audio_format")
        return value

    def encoding(self, name: str) -> str | None:
        """An input encoding by any of its names (``ENCODING_ALIASES``), as ``pcm16`` or ``pcm_f32le``."""
        value = self.text(name)
        if value is None:
            return None
        encoding = ENCODING_ALIASES.get(value.lower())
        if encoding is None:
            raise self.error(name, f"is '{echoed(value)}': served are pcm16 and pcm_f32le", "unsupported_audio_format")
        return encoding


# ---------------------------------------------------------------------------------------------------------------
# Audio formats and the session's settings


@dataclass(frozen=True)
class AudioFormat:
    """One PCM wire format: ``pcm16`` or ``pcm_f32le``, mono, at ``sample_rate_hz``."""

    encoding: str = "pcm16"
    sample_rate_hz: int = SAMPLE_RATE


DEFAULT_INPUT_FORMAT = AudioFormat()


@dataclass(frozen=True)
class SessionSettings:
    """A session's settings as the client declared them; ``updated`` folds in a ``session.update``
    (``ticktock.wire.client_events.SessionUpdate``).

    >>> from ticktock.wire.client_events import SessionUpdate
    >>> SessionSettings().updated(SessionUpdate({"sample_rate_hz": 24000})).input_audio
    AudioFormat(encoding='pcm16', sample_rate_hz=24000)
    """

    model: str | None = None
    modalities: tuple[str, ...] = ("audio", "text")
    input_audio: AudioFormat = DEFAULT_INPUT_FORMAT
    output_rate_hz: int | None = None
    instructions: str | None = None
    voice: str | None = None
    tools: tuple[Mapping[str, object], ...] = ()

    def updated(self, update) -> SessionSettings:
        """These settings with every field the update (a ``SessionUpdate``) names replaced (one it leaves out
        stays)."""
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
        raise ProtocolError("bad_audio", f"{where} must be a base64 string, not {json_kind(b64)}", event_id)
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
        raise ProtocolError("unsupported_audio_format", f"input sample rate {rate_problem(rate)}", event_id)
    return width


def _samples(data: bytes, encoding: str, where: str, event_id: str | None) -> np.ndarray:
    if encoding == "pcm16":
        return np.frombuffer(data, dtype="<i2").astype(np.float32) / np.float32(32768.0)
    samples = np.frombuffer(data, dtype="<f4").astype(np.float32)
    if not np.isfinite(samples).all():
        raise ProtocolError("bad_audio", f"{where} holds NaN or infinity", event_id)
    return samples


def encode_pcm16(samples: np.ndarray) -> str:
    """Float samples (clipped to [-1, 1]) as base64 little-endian PCM16, the wire form of speech both ways.

    >>> encode_pcm16(np.array([0.0, 0.5, -1.0, 2.0], dtype=np.float32))
    'AAAAQACA/38='
    """
    clipped_samples = np.clip(np.nan_to_num(np.asarray(samples, dtype=np.float32)), -1.0, 1.0)
    pcm = np.round(clipped_samples * 32767.0).astype("<i2")
    pcm[clipped_samples <= -1.0] = -32768
    return base64.b64encode(pcm.tobytes()).decode("ascii")


# ---------------------------------------------------------------------------------------------------------------
# The event contract


class WireEvent:
    """The contract of every wire event: a frozen dataclass with a class-level ``type`` (its wire name), an
    ``event_id``, ``to_json()`` (the JSON object it is sent as) and ``from_fields(fields)`` (the event read back from
    a frame's fields, every field checked). ``ticktock.wire.parse_client_event`` and ``parse_server_event``
    dispatch on ``type`` through tables built from these classes (``event_table``)."""

    type: ClassVar[str]
    event_id: str | None

    def head(self) -> dict[str, object]:
        """The keys every event starts with: ``type`` and ``event_id``."""
        return {"type": self.type, "event_id": self.event_id}

    def to_json(self) -> dict[str, object]:
        raise NotImplementedError

    @classmethod
    def from_fields(cls, fields: Fields) -> WireEvent:
        raise NotImplementedError


def event_id_field():
    """The ``event_id`` field of every event class: keyword-only, a fresh ``new_event_id()`` unless given (a parsed
    event keeps the id its frame had, None when it had none)."""
    return field(default_factory=new_event_id, kw_only=True)


def event_table(classes: tuple[type[WireEvent], ...]) -> dict[str, type[WireEvent]]:
    """The classes by their wire ``type``; a type two classes claim is a ``ValueError`` (a table reads one class
    per type)."""
    table = {cls.type: cls for cls in classes}
    if len(table) != len(classes):
        raise ValueError("two event classes share a wire type")
    return table
