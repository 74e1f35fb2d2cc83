"""Every event a client sends on ``WS /v1/realtime`` (``?duplex=1`` for the duplex contract), one frozen class each:
the live client (``ticktock.endpoints``) builds them and sends ``to_json()``; ``ticktock serve`` reads frames back with
``parse_client_event``.

The vocabulary is vLLM-Omni's full-duplex contract, which is OpenAI's Realtime GA vocabulary plus the duplex events
(``playback.ack``, ``session.heartbeat``, ``session.event_ack``, ``session.close``). A frame that is not one of them
is a ``ProtocolError`` whose code is vLLM-Omni's where one fits and whose message is one line naming the field:

>>> event = parse_client_event('{"type": "input_audio_buffer.append", "audio": "AAAAQA==", "event_id": "e1"}')
>>> event
AudioAppend(audio='AAAAQA==', encoding=None, sample_rate_hz=None, event_id='e1')
>>> parse_client_event(json.dumps(event.to_json())) == event
True
>>> try:
...     parse_client_event('{"type": "input_audio_buffer.append", "audio": 7, "event_id": "e2"}')
... except ProtocolError as err:
...     print(err.code, "|", err, "|", err.event_id)
bad_event | input_audio_buffer.append: 'audio' must be a string, not int | e2

What of vLLM-Omni's client vocabulary is NOT served, and why (``parse_client_event`` names each):

- ``session.resume`` (and ``session.event_ack``'s journal): TickTock keeps no replay journal of sent events, so a
  dropped socket ends the session; ``session.resume`` is answered with ``unsupported_session_resume`` (a code the
  client treats as final) and ``session.event_ack`` is accepted and ignored.
- Video and image input (``video_frames`` on an append): TickTock's models hear audio only
  (``invalid_input_modality``).
- G.711 (``g711_ulaw`` / ``g711_alaw``) input, and any output format but PCM16: ``unsupported_audio_format``.
- Text input into a live turn (``input.text.append``, ``conversation.item.create`` of a ``message``), client-forced
  barge-in (``barge_in``, ``input.cancel``, ``turn.signal``) and conversation editing (``conversation.item.delete``
  / ``truncate`` / ``retrieve``, ``output_audio_buffer.clear``): the replayed model decides per unit from the audio
  alone, as in the benchmark; these are answered with ``unknown_event`` naming them as not served.
- Server VAD (``turn_detection``) is read and ignored: the duplex model listens or speaks every unit itself.
"""

from __future__ import annotations

import json  # noqa: F401 (the examples use it)
from dataclasses import dataclass, field
from typing import ClassVar, Mapping, Union

import numpy as np

from ticktock.wire.codec import (ENCODING_ALIASES, AudioFormat, Fields, ProtocolError, WireEvent, clipped, echoed,
                                 encode_pcm16, event_id_field, event_table, json_kind, new_event_id, read_json_object)

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


# ---------------------------------------------------------------------------------------------------------------
# session.update


@dataclass(frozen=True)
class SessionUpdate(WireEvent):
    """``session.update``: ``session`` is the whole session object as sent (``extra_body``, ``turn_detection``...);
    the settings the server reads from it are attributes, each None when the client left it out (vLLM-Omni's flat
    keys or OpenAI GA's ``audio.input.format``), checked when the event is made (a bad one is a ``ProtocolError``).

    >>> update = SessionUpdate.declaring("Be brief.", [{"name": "track_order"}], input_rate_hz=24_000)
    >>> update.instructions, update.input_encoding, update.input_rate_hz, update.tools[0]["name"]
    ('Be brief.', 'pcm16', 24000, 'track_order')
    """

    type: ClassVar[str] = "session.update"
    session: Mapping[str, object] = field(default_factory=dict)
    event_id: str | None = event_id_field()
    model: str | None = field(init=False, default=None, repr=False, compare=False)
    modalities: tuple[str, ...] | None = field(init=False, default=None, repr=False, compare=False)
    input_encoding: str | None = field(init=False, default=None, repr=False, compare=False)
    input_rate_hz: int | None = field(init=False, default=None, repr=False, compare=False)
    output_rate_hz: int | None = field(init=False, default=None, repr=False, compare=False)
    instructions: str | None = field(init=False, default=None, repr=False, compare=False)
    voice: str | None = field(init=False, default=None, repr=False, compare=False)
    tools: tuple[Mapping[str, object], ...] | None = field(init=False, default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        session = Fields(self.session, self.type, self.event_id, "session.")
        for name, value in _session_settings(session).items():
            object.__setattr__(self, name, value)

    @classmethod
    def declaring(cls, instructions: str | None, tools: list[Mapping[str, object]] = (), model: str | None = None,
                  input_rate_hz: int = 16_000, modalities: tuple[str, ...] = ("audio",),
                  extra: Mapping[str, object] | None = None) -> SessionUpdate:
        """The live client's update: PCM16 input at ``input_rate_hz``, the output ``modalities``, the session's
        instructions and tools (a manifest's ``{"name", "description", "parameters"}`` schemas as GA function tools),
        in OpenAI GA's shape plus vLLM-Omni's flat keys (both servers read it); ``extra``: more session keys of one
        server (vLLM-Omni's ``ref_audio``, ``extra_body``...), added as given.

        >>> SessionUpdate.declaring(None, [{"name": "f", "parameters": {"type": "object"}}]).session["tools"]
        [{'type': 'function', 'name': 'f', 'description': '', 'parameters': {'type': 'object'}}]
        >>> SessionUpdate.declaring(None, modalities=("text",), extra={"extra_body": {"k": 1}}).modalities
        ('text',)
        """
        session: dict[str, object] = {
            "type": "realtime",
            "output_modalities": list(modalities),
            "audio": {"input": {"format": {"type": "audio/pcm", "rate": input_rate_hz}}},
            "input_audio_format": "pcm16",
            "sample_rate_hz": input_rate_hz,
            "tools": [{"type": "function", "name": str(tool.get("name", "")),
                       "description": str(tool.get("description") or ""),
                       "parameters": tool.get("parameters") or {"type": "object", "properties": {}}}
                      for tool in tools],
        }
        if instructions:
            session["instructions"] = instructions
        if model:
            session["model"] = model
        session.update(extra or {})
        return cls(session)

    def to_json(self) -> dict[str, object]:
        return {**self.head(), "session": dict(self.session)}

    @classmethod
    def from_fields(cls, fields: Fields) -> SessionUpdate:
        return cls(dict(fields.nested("session", required=True).event), event_id=fields.event_id)


def _session_settings(session: Fields) -> dict[str, object]:
    """The settings a session object declares (each None when left out), every field checked."""
    audio = session.nested("audio")
    audio_in = audio.nested("input") if audio else None
    audio_out = audio.nested("output") if audio else None
    format_in = _format_block(audio_in)
    format_out = _format_block(audio_out)
    _check_output_encoding(session, "output_audio_format")
    if format_out is not None:
        _check_output_encoding(format_out, "type")
    return {
        "model": session.text("model"),
        "modalities": _modalities(session),
        "input_encoding": _first(session.encoding("input_audio_format"), _format_encoding(format_in)),
        "input_rate_hz": _first(session.rate("sample_rate_hz"), _block_rate(audio_in, format_in)),
        "output_rate_hz": _block_rate(audio_out, format_out),
        "instructions": session.text("instructions"),
        "voice": _first(session.text("voice"), audio_out.text("voice") if audio_out else None),
        "tools": _tools(session),
    }


def _check_output_encoding(fields: Fields, name: str) -> None:
    value = fields.text(name)
    if value is not None and ENCODING_ALIASES.get(value.lower()) != "pcm16":
        raise fields.error(name, f"is '{echoed(value)}': the talker's speech is sent as pcm16 only",
                           "unsupported_audio_format")


def _format_block(block: Fields | None) -> Fields | None:
    """The GA ``format`` object of an ``audio.input`` / ``audio.output`` block (a bare string is read as its type)."""
    if block is None or block.event.get("format") is None:
        return None
    if isinstance(block.event["format"], str):
        return Fields({"type": block.event["format"]}, block.event_type, block.event_id, f"{block.where}format.")
    return block.nested("format")


def _format_encoding(format_block: Fields | None) -> str | None:
    return format_block.encoding("type") if format_block else None


def _block_rate(block: Fields | None, format_block: Fields | None) -> int | None:
    """vLLM-Omni's ``sample_rate_hz`` of an audio block, else GA's ``format.rate`` (both checked when both are sent)."""
    return _first(block.rate("sample_rate_hz") if block else None, format_block.rate("rate") if format_block else None)


def _first(*values):
    """The first value that is not None (every value already read and checked)."""
    return next((value for value in values if value is not None), None)


def _modalities(session: Fields) -> tuple[str, ...] | None:
    name = "modalities" if "modalities" in session.event else "output_modalities"
    value = session.read(name, list, "an array")
    if value is None:
        return None
    if not all(entry in ("audio", "text") for entry in value):
        raise session.error(name, f"must hold only 'audio' and 'text', not {clipped(repr(value))}")
    return tuple(value)


def _tools(session: Fields) -> tuple[Mapping[str, object], ...] | None:
    tools = session.read("tools", list, "an array")
    if tools is None:
        return None
    for index, tool in enumerate(tools):
        if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
            raise session.error(f"tools[{index}]", "must be an object with a string 'name'")
    return tuple(tools)


# ---------------------------------------------------------------------------------------------------------------
# Input audio


@dataclass(frozen=True)
class AudioAppend(WireEvent):
    """``input_audio_buffer.append``: base64 audio, with the ``encoding`` and ``sample_rate_hz`` the append itself
    declares (vLLM-Omni's client declares both on every append; OpenAI's declares neither).

    >>> AudioAppend("", sample_rate_hz=48_000).audio_format(AudioFormat("pcm_f32le", 24_000))
    AudioFormat(encoding='pcm_f32le', sample_rate_hz=48000)
    >>> AudioAppend.of_samples(np.array([0.0, 0.5], dtype=np.float32), event_id="e1").to_json()
    {'type': 'input_audio_buffer.append', 'event_id': 'e1', 'audio': 'AAAAQA=='}
    """

    type: ClassVar[str] = "input_audio_buffer.append"
    audio: str
    encoding: str | None = None
    sample_rate_hz: int | None = None
    event_id: str | None = event_id_field()

    @classmethod
    def of_samples(cls, samples: np.ndarray, event_id: str | None = None) -> AudioAppend:
        """Float samples as PCM16 in the session's declared format (16 kHz mono for the live client)."""
        return cls(encode_pcm16(samples), event_id=event_id or new_event_id())

    def audio_format(self, session_format: AudioFormat) -> AudioFormat:
        """The format of this append's audio: what it declares, the session's input format for the rest."""
        rate = self.sample_rate_hz or session_format.sample_rate_hz
        return AudioFormat(self.encoding or session_format.encoding, rate)

    def to_json(self) -> dict[str, object]:
        event = {**self.head(), "audio": self.audio}
        if self.encoding is not None:
            event["format"] = self.encoding
        if self.sample_rate_hz is not None:
            event["sample_rate_hz"] = self.sample_rate_hz
        return event

    @classmethod
    def from_fields(cls, fields: Fields) -> AudioAppend:
        audio = fields.text("audio", required=True)
        if fields.read("video_frames", list, "an array"):
            raise fields.error("video_frames", "are not served: TickTock's models hear audio only",
                               "invalid_input_modality")
        fields.flag("is_speech")
        return cls(audio, fields.encoding("format"), fields.rate("sample_rate_hz"), event_id=fields.event_id)


@dataclass(frozen=True)
class AudioCommit(WireEvent):
    """``input_audio_buffer.commit``: the end of a user turn (the input goes on); ``final`` and ``create_response``
    as sent (``final`` is sent only when False, its default being True)."""

    type: ClassVar[str] = "input_audio_buffer.commit"
    final: bool = True
    create_response: bool | None = None
    event_id: str | None = event_id_field()

    def to_json(self) -> dict[str, object]:
        event = self.head()
        if not self.final:
            event["final"] = False
        if self.create_response is not None:
            event["response_create"] = self.create_response
        return event

    @classmethod
    def from_fields(cls, fields: Fields) -> AudioCommit:
        final = fields.flag("final")
        return cls(True if final is None else final, fields.flag("response_create"), event_id=fields.event_id)


@dataclass(frozen=True)
class AudioClear(WireEvent):
    """``input_audio_buffer.clear``."""

    type: ClassVar[str] = "input_audio_buffer.clear"
    event_id: str | None = event_id_field()

    def to_json(self) -> dict[str, object]:
        return self.head()

    @classmethod
    def from_fields(cls, fields: Fields) -> AudioClear:
        return cls(event_id=fields.event_id)


# ---------------------------------------------------------------------------------------------------------------
# Responses and function calls


@dataclass(frozen=True)
class ResponseCreate(WireEvent):
    """``response.create`` (OpenAI clients send it after a commit); the duplex model decides per unit anyway."""

    type: ClassVar[str] = "response.create"
    event_id: str | None = event_id_field()

    def to_json(self) -> dict[str, object]:
        return self.head()

    @classmethod
    def from_fields(cls, fields: Fields) -> ResponseCreate:
        return cls(event_id=fields.event_id)


@dataclass(frozen=True)
class ResponseCancel(WireEvent):
    """``response.cancel``: the active response, or ``response_id``."""

    type: ClassVar[str] = "response.cancel"
    response_id: str | None = None
    event_id: str | None = event_id_field()

    def to_json(self) -> dict[str, object]:
        return {**self.head(), **({} if self.response_id is None else {"response_id": self.response_id})}

    @classmethod
    def from_fields(cls, fields: Fields) -> ResponseCancel:
        return cls(fields.text("response_id"), event_id=fields.event_id)


@dataclass(frozen=True)
class FunctionCallOutput(WireEvent):
    """``conversation.item.create`` of a ``function_call_output`` item: the client's answer to a call (``item_id``:
    the item's own id, where the client gives one).

    >>> FunctionCallOutput("call_1", '{"ok": true}', event_id="e1").to_json()["item"]
    {'type': 'function_call_output', 'call_id': 'call_1', 'output': '{"ok": true}'}
    """

    type: ClassVar[str] = "conversation.item.create"
    call_id: str
    output: str
    item_id: str | None = None
    event_id: str | None = event_id_field()

    def to_json(self) -> dict[str, object]:
        item = {"type": "function_call_output", "call_id": self.call_id, "output": self.output}
        if self.item_id is not None:
            item["id"] = self.item_id
        return {**self.head(), "item": item}

    @classmethod
    def from_fields(cls, fields: Fields) -> FunctionCallOutput:
        item = fields.nested("item", required=True)
        item_type = item.text("type", required=True)
        if item_type != "function_call_output":
            raise item.error("type", f"is '{echoed(item_type)}': served is only 'function_call_output'")
        try:
            call_id, output = item.text("call_id", required=True), item.text("output", required=True)
        except ProtocolError as err:
            raise ProtocolError("invalid_function_call_output", str(err), err.event_id) from None
        return cls(call_id, output, item.text("id"), event_id=fields.event_id)


# ---------------------------------------------------------------------------------------------------------------
# The duplex session's own events


@dataclass(frozen=True)
class PlaybackAck(WireEvent):
    """``playback.ack``: how much of the speech the client has played, cumulative (ms).

    >>> PlaybackAck(1234.6, response_id="resp_1", event_id="e1").to_json()
    {'type': 'playback.ack', 'event_id': 'e1', 'played_ms': 1234.6, 'response_id': 'resp_1'}
    """

    type: ClassVar[str] = "playback.ack"
    played_ms: float
    committed_ms: float | None = None
    response_id: str | None = None
    item_id: str | None = None
    event_id: str | None = event_id_field()

    def to_json(self) -> dict[str, object]:
        optional = {"committed_ms": self.committed_ms, "response_id": self.response_id, "item_id": self.item_id}
        return {**self.head(), "played_ms": self.played_ms,
                **{name: value for name, value in optional.items() if value is not None}}

    @classmethod
    def from_fields(cls, fields: Fields) -> PlaybackAck:
        return cls(fields.number("played_ms", required=True), fields.number("committed_ms"),
                   fields.text("response_id"), fields.text("item_id"), event_id=fields.event_id)


@dataclass(frozen=True)
class Heartbeat(WireEvent):
    """``session.heartbeat``: answered with ``session.heartbeat_ack``."""

    type: ClassVar[str] = "session.heartbeat"
    event_id: str | None = event_id_field()

    def to_json(self) -> dict[str, object]:
        return self.head()

    @classmethod
    def from_fields(cls, fields: Fields) -> Heartbeat:
        return cls(event_id=fields.event_id)


@dataclass(frozen=True)
class EventAck(WireEvent):
    """``session.event_ack``: the client confirms a ``server_event_seq`` (accepted; no journal to trim)."""

    type: ClassVar[str] = "session.event_ack"
    server_event_seq: int
    event_id: str | None = event_id_field()

    def to_json(self) -> dict[str, object]:
        return {**self.head(), "server_event_seq": self.server_event_seq}

    @classmethod
    def from_fields(cls, fields: Fields) -> EventAck:
        return cls(fields.integer("server_event_seq", required=True), event_id=fields.event_id)


@dataclass(frozen=True)
class SessionClose(WireEvent):
    """``session.close``: answered with ``session.closed`` (``reason`` is sent only when not ``client_close``).

    >>> SessionClose(event_id="e1").to_json()
    {'type': 'session.close', 'event_id': 'e1'}
    """

    type: ClassVar[str] = "session.close"
    reason: str = "client_close"
    event_id: str | None = event_id_field()

    def to_json(self) -> dict[str, object]:
        return {**self.head(), **({} if self.reason == "client_close" else {"reason": self.reason})}

    @classmethod
    def from_fields(cls, fields: Fields) -> SessionClose:
        return cls(fields.text("reason") or "client_close", event_id=fields.event_id)


# ---------------------------------------------------------------------------------------------------------------
# Parsing


ClientEvent = Union[
    SessionUpdate, AudioAppend, AudioCommit, AudioClear, ResponseCreate, ResponseCancel, FunctionCallOutput,
    PlaybackAck, Heartbeat, EventAck, SessionClose,
]

#: Every client event class, in the order of the contract.
CLIENT_EVENTS: tuple[type[WireEvent], ...] = (
    SessionUpdate, AudioAppend, AudioCommit, AudioClear, ResponseCreate, ResponseCancel, FunctionCallOutput,
    PlaybackAck, Heartbeat, EventAck, SessionClose,
)
CLIENT_EVENT_TYPES = event_table(CLIENT_EVENTS)


def parse_client_event(frame: str | bytes) -> ClientEvent:
    """One client frame as its typed event; ``ProtocolError`` when it is not one.

    >>> parse_client_event('{"type": "playback.ack", "played_ms": 1200, "event_id": "e3"}')
    PlaybackAck(played_ms=1200, committed_ms=None, response_id=None, item_id=None, event_id='e3')
    >>> for bad in ('not json', '[1]', '{"type": "dance"}', '{"type": "barge_in"}'):
    ...     try:
    ...         parse_client_event(bad)
    ...     except ProtocolError as err:
    ...         print(err.code, "|", err)
    invalid_json | frame is not JSON (Expecting value at character 0)
    bad_event | frame is a JSON array, not an object
    unknown_event | unknown event type 'dance'
    unknown_event | 'barge_in' is not served (client-forced barge-in)
    """
    event = read_json_object(frame)
    event_id = event.get("event_id")
    if event_id is not None and not isinstance(event_id, str):
        raise ProtocolError("bad_event", f"'event_id' must be a string, not {json_kind(event_id)}")
    event_type = event.get("type")
    if not isinstance(event_type, str):
        what = "has no 'type'" if event_type is None else f"'type' must be a string, not {json_kind(event_type)}"
        raise ProtocolError("bad_event", f"event {what}", event_id)
    event_class = CLIENT_EVENT_TYPES.get(event_type)
    if event_class is None:
        raise _unserved(event_type, event_id)
    return event_class.from_fields(Fields(event, event_type, event_id))


def _unserved(event_type: str, event_id: str | None) -> ProtocolError:
    if event_type == "session.resume":
        return ProtocolError(
            "unsupported_session_resume", "session.resume is not served (no event journal): open a new session",
            event_id,
        )
    if event_type in NOT_SERVED:
        return ProtocolError("unknown_event", f"'{event_type}' is not served ({NOT_SERVED[event_type]})", event_id)
    return ProtocolError("unknown_event", f"unknown event type '{echoed(event_type)}'", event_id)
