"""The client's side of the wire codec (``ticktock.serve.protocol`` is the server's): client events built, server
events parsed into small typed values.

The live-endpoint client (``ticktock.endpoints``) speaks through these functions to ``ticktock serve``, to vLLM-Omni
and to OpenAI Realtime-style servers; the server builds its events with ``ticktock.serve.protocol``. Both sides share
the same vocabulary and the same PCM16 encoding, and the tests read every event ``ticktock serve`` builds back through
``parse_server_event``, so the two directions cannot drift apart.

A server frame becomes one ``ServerEvent``; a frame that is not JSON, not an object, has no ``type``, or whose fields
the client needs have the wrong type (a unit that is not an integer, audio that is not base64) is a
``ProtocolError`` naming the event and the field. An event the client does not need is ``Other`` (its type kept):
servers add events freely, and a client must not fail on them.

>>> from ticktock.serve import protocol
>>> event = parse_server_event(json.dumps(protocol.response_speak("resp_1", "item_1", protocol.UnitReport(3, 12.5))))
>>> event
UnitDecided(unit=3, speak=True, response_id='resp_1', server_ms=12.5, kind=None)
>>> parse_server_event('{"type": "response.output_audio.delta", "delta": "AAAAQA==", "sample_rate_hz": 24000}')
AudioDelta(response_id=None, samples=2, sample_rate_hz=24000, sha256='d88c86f1')
>>> try:
...     parse_server_event('{"type": "response.speak", "ticktock": {"unit": "three"}}')
... except ProtocolError as err:
...     print(err)
response.speak: 'ticktock.unit' must be an integer, not string
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json  # noqa: F401 (the examples use it)
from dataclasses import dataclass
from typing import Mapping, Union

import numpy as np

from ticktock.serve.protocol import ProtocolError, _Fields, _json_object, encode_pcm16, new_event_id

#: The sample rate of output audio when a server's delta does not say (OpenAI Realtime GA's PCM16 is 24 kHz).
DEFAULT_OUTPUT_RATE_HZ = 24_000


# ---------------------------------------------------------------------------------------------------------------
# Client events


def session_update(instructions: str | None, tools: list[Mapping[str, object]] = (), model: str | None = None,
                   input_rate_hz: int = 16_000) -> dict[str, object]:
    """``session.update`` declaring PCM16 input at ``input_rate_hz``, the session's instructions and tools (a manifest's
    ``{"name", "description", "parameters"}`` schemas as GA function tools), in OpenAI GA's shape plus vLLM-Omni's
    flat keys (both servers read it).

    >>> session_update("Be brief.", [{"name": "track_order", "parameters": {"type": "object"}}])["session"]["tools"]
    [{'type': 'function', 'name': 'track_order', 'description': '', 'parameters': {'type': 'object'}}]
    """
    session: dict[str, object] = {
        "type": "realtime",
        "output_modalities": ["audio"],
        "audio": {"input": {"format": {"type": "audio/pcm", "rate": input_rate_hz}}},
        "input_audio_format": "pcm16",
        "sample_rate_hz": input_rate_hz,
        "tools": [{"type": "function", "name": str(tool.get("name", "")),
                   "description": str(tool.get("description") or ""),
                   "parameters": tool.get("parameters") or {"type": "object", "properties": {}}} for tool in tools],
    }
    if instructions:
        session["instructions"] = instructions
    if model:
        session["model"] = model
    return {"type": "session.update", "event_id": new_event_id(), "session": session}


def append(samples: np.ndarray) -> dict[str, object]:
    """``input_audio_buffer.append`` of float samples as PCM16 (16 kHz mono: the session's declared format)."""
    return {"type": "input_audio_buffer.append", "event_id": new_event_id(), "audio": encode_pcm16(samples)}


def commit() -> dict[str, object]:
    """``input_audio_buffer.commit``: in duplex mode the end of the input, in turn mode the end of a user turn."""
    return {"type": "input_audio_buffer.commit", "event_id": new_event_id()}


def response_create() -> dict[str, object]:
    """``response.create``: a turn-based server's cue to answer the committed turn."""
    return {"type": "response.create", "event_id": new_event_id()}


def function_call_output(call_id: str, output: str) -> dict[str, object]:
    """``conversation.item.create`` of a ``function_call_output``: the answer to the server's function call."""
    return {"type": "conversation.item.create", "event_id": new_event_id(),
            "item": {"type": "function_call_output", "call_id": call_id, "output": output}}


def playback_ack(played_ms: float, response_id: str | None = None) -> dict[str, object]:
    """``playback.ack``: how many ms of the assistant's speech the client has played (cumulative)."""
    event: dict[str, object] = {"type": "playback.ack", "event_id": new_event_id(), "played_ms": round(played_ms, 1)}
    if response_id is not None:
        event["response_id"] = response_id
    return event


def session_close() -> dict[str, object]:
    """``session.close``: the client is done (vLLM-Omni's duplex vocabulary)."""
    return {"type": "session.close", "event_id": new_event_id()}


# ---------------------------------------------------------------------------------------------------------------
# Server events


@dataclass(frozen=True)
class SessionStarted:
    """``session.created``: the model name the server reports, and, from ``ticktock serve``, the served model, decoder
    and talker (its additive ``ticktock`` key; None from other servers)."""

    model: str | None = None
    served_model: str | None = None
    served_decoder: str | None = None
    served_talker: str | None = None


@dataclass(frozen=True)
class UnitDecided:
    """``response.listen`` / ``response.speak``: the model's decision for a unit (vLLM-Omni's duplex tier). ``unit``
    is the unit index where the server says it (``ticktock serve``'s ``ticktock.unit``), else None: the client counts
    decisions. ``server_ms``: the server's own measurement of the unit, where it sends one; ``kind``: a backchannel,
    where the server says so (``ticktock serve``; vLLM-Omni's contract has only listen and speak)."""

    unit: int | None
    speak: bool
    response_id: str | None = None
    server_ms: float | None = None
    kind: str | None = None  # ticktock serve's ``ticktock.kind``: "backchannel" for a backchannel sent as speak


@dataclass(frozen=True)
class ReplyStarted:
    """``response.created``: a response (a spoken reply) starts."""

    response_id: str | None


@dataclass(frozen=True)
class TextDelta:
    """Text of the reply: ``response.output_text.delta`` (``transcript`` False) or
    ``response.output_audio_transcript.delta`` (True)."""

    response_id: str | None
    text: str
    transcript: bool


@dataclass(frozen=True)
class AudioDelta:
    """``response.output_audio.delta``: ``samples`` PCM16 samples at ``sample_rate_hz`` (the delta's own rate, else
    ``DEFAULT_OUTPUT_RATE_HZ``); ``sha256``: the first 8 hex digits of the PCM bytes' SHA-256."""

    response_id: str | None
    samples: int
    sample_rate_hz: int
    sha256: str

    @property
    def audio_s(self) -> float:
        return self.samples / self.sample_rate_hz


@dataclass(frozen=True)
class CallMade:
    """A function call, complete (``response.function_call_arguments.done``): the client runs it and answers."""

    response_id: str | None
    call_id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class ReplyDone:
    """``response.done``: the response ended (``status`` completed, cancelled...)."""

    response_id: str | None
    status: str | None


@dataclass(frozen=True)
class ServerError:
    """``error``: the server's ``code`` and ``message``."""

    code: str | None
    message: str


@dataclass(frozen=True)
class SessionEnded:
    """``session.closed``: the server ended the session, and why."""

    reason: str | None


@dataclass(frozen=True)
class Other:
    """Any other server event (``session.updated``, ``input_audio_buffer.committed``, heartbeats, argument deltas):
    kept by its type only."""

    type: str


ServerEvent = Union[SessionStarted, UnitDecided, ReplyStarted, TextDelta, AudioDelta, CallMade, ReplyDone, ServerError,
                    SessionEnded, Other]


def parse_server_event(frame: str | bytes) -> ServerEvent:
    """One server frame as its typed event (see the module docstring); ``ProtocolError`` when it cannot be read.

    >>> parse_server_event('{"type": "response.listen", "response": {"status": "listening"}}')
    UnitDecided(unit=None, speak=False, response_id=None, server_ms=None, kind=None)
    >>> parse_server_event('{"type": "session.heartbeat_ack"}')
    Other(type='session.heartbeat_ack')
    """
    event = _json_object(frame)
    event_type = event.get("type")
    if not isinstance(event_type, str):
        raise ProtocolError("bad_event", "server event has no 'type'" if event_type is None else
                            "server event's 'type' is not a string")
    fields = _Fields(event, event_type, None)
    reader = _READERS.get(event_type)
    return Other(event_type) if reader is None else reader(fields)


def _response_id(fields: _Fields) -> str | None:
    return fields.text("response_id")


def _session_started(fields: _Fields) -> SessionStarted:
    session = fields.nested("session") or _Fields({}, fields.event_type, None)
    ours = session.nested("ticktock") or _Fields({}, fields.event_type, None)
    return SessionStarted(session.text("model"), ours.text("model"), ours.text("decoder"), ours.text("talker"))


def _unit_decided(fields: _Fields) -> UnitDecided:
    ours = fields.nested("ticktock") or _Fields({}, fields.event_type, None, "ticktock.")
    server_ms = ours.read("post_audio_ms", (int, float), "a number")
    kind = ours.text("kind")
    return UnitDecided(ours.integer("unit"), fields.event_type == "response.speak", _response_id(fields),
                       None if server_ms is None else float(server_ms), kind if kind == "backchannel" else None)


def _text_delta(fields: _Fields) -> TextDelta:
    return TextDelta(_response_id(fields), fields.text("delta", required=True),
                     fields.event_type == "response.output_audio_transcript.delta")


def _audio_delta(fields: _Fields) -> AudioDelta:
    data = fields.text("delta", required=True)
    try:
        pcm = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise fields.error("delta", "is not base64", "bad_audio") from None
    if len(pcm) % 2:
        raise fields.error("delta", f"is {len(pcm)} bytes, not whole PCM16 samples", "bad_audio")
    rate = fields.rate("sample_rate_hz") or DEFAULT_OUTPUT_RATE_HZ
    return AudioDelta(_response_id(fields), len(pcm) // 2, rate, hashlib.sha256(pcm).hexdigest()[:8])


def _call_made(fields: _Fields) -> CallMade:
    return CallMade(_response_id(fields), fields.text("call_id", required=True), fields.text("name") or "",
                    fields.text("arguments") or "")


def _nested_id(fields: _Fields, name: str) -> str | None:
    """The ``id`` of the event's ``name`` object (OpenAI GA puts a response's id there, vLLM-Omni also at the top)."""
    block = fields.nested(name)
    return block.text("id") if block else None


def _reply_done(fields: _Fields) -> ReplyDone:
    response = fields.nested("response")
    return ReplyDone(_response_id(fields) or _nested_id(fields, "response"),
                     response.text("status") if response else None)


def _server_error(fields: _Fields) -> ServerError:
    error = fields.nested("error") or _Fields({}, fields.event_type, None)
    return ServerError(error.text("code"), error.text("message") or "")


_READERS = {
    "session.created": _session_started,
    "response.listen": _unit_decided,
    "response.speak": _unit_decided,
    "response.created": lambda fields: ReplyStarted(_response_id(fields) or _nested_id(fields, "response")),
    "response.output_text.delta": _text_delta,
    "response.output_audio_transcript.delta": _text_delta,
    "response.output_audio.delta": _audio_delta,
    "response.function_call_arguments.done": _call_made,
    "response.done": _reply_done,
    "error": _server_error,
    "session.closed": lambda fields: SessionEnded(fields.text("reason")),
}
