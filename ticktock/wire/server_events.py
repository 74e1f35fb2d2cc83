"""Every event a server sends on ``WS /v1/realtime`` (``?duplex=1`` for the duplex contract), one frozen class each:
``ticktock serve`` builds them and sends ``to_json()``; the live client (``ticktock.endpoints``) reads every server's
frames back with ``parse_server_event``, so the two directions cannot drift apart.

The events of a unit, in the order vLLM-Omni's client demultiplexes them into responses (``ResponseHandle``): a unit
the model listens through is one ``response.listen`` without a response id (a standalone decision). A spoken turn
is one response: ``response.created`` when it starts, then per spoken unit ``response.speak`` and that unit's
``response.output_text.delta`` / ``response.output_audio_transcript.delta`` / ``response.output_audio.delta`` events
(and a function call's ``response.output_item.added``, ``response.function_call_arguments.delta`` / ``.done``,
``response.output_item.done``), until ``response.done`` ends it, or a ``response.listen`` carrying its response id
(the model yields the turn: that unit's decision, and the response's end). The client hands a response to its
application at its first output and ends its audio at ``response.done`` or that listen. TickTock's measurements of a
unit ride under the additive ``ticktock`` key of its decision (``UnitReport``), which vLLM-Omni's client and the
OpenAI SDK ignore:

>>> speak = ResponseSpeak("resp_1", "item_1", UnitReport(unit=3, post_audio_ms=12.5), event_id="event_1")
>>> speak.to_json()["ticktock"]
{'unit': 3, 'post_audio_ms': 12.5}
>>> event = parse_server_event(json.dumps(speak.to_json()))
>>> event == speak, event.unit, event.speak, event.server_ms
(True, 3, True, 12.5)

A frame the client cannot use (not JSON, not an object, no ``type``, a field it needs of the wrong type: a unit that
is not an integer, audio that is not base64) is a ``ProtocolError`` naming the event and the field; a type not known
here is ``Other`` (its type kept): servers add events freely, and a client must not fail on them.

>>> parse_server_event('{"type": "rate_limits.updated", "rate_limits": []}')
Other(type='rate_limits.updated')
>>> try:
...     parse_server_event('{"type": "response.speak", "ticktock": {"unit": "three"}}')
... except ProtocolError as err:
...     print(err)
response.speak: 'ticktock.unit' must be an integer, not string

Not built (the client needs none of them to hold a session): ``overlap.decision``, ``turn.event``,
``playback.acknowledged``, the ``*.done`` events of text and audio parts; no ``resume_token`` (no resume).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json  # noqa: F401 (the examples use it)
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import ClassVar, Mapping, Union

import numpy as np

from ticktock.wire.codec import (DEFAULT_OUTPUT_RATE_HZ, ERROR_TYPES, Fields, ProtocolError, SessionSettings,
                                 WireEvent, clipped, echoed, encode_pcm16, event_id_field, event_table, read_json_object)


def _server_event_id(fields: Fields) -> str | None:
    """A server event's ``event_id``; None when it has none, or not a string (the client does not check a server's
    ids)."""
    event_id = fields.event.get("event_id")
    return event_id if isinstance(event_id, str) else None


def _response_id(fields: Fields) -> str | None:
    """The event's top-level ``response_id`` (vLLM-Omni's)."""
    return fields.text("response_id")


def _response_id_anywhere(fields: Fields) -> str | None:
    """The top-level ``response_id``, else the ``id`` of the ``response`` object (OpenAI GA puts it there only)."""
    response = fields.nested("response")
    return _response_id(fields) or (response.text("id") if response else None)


# ---------------------------------------------------------------------------------------------------------------
# The session


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


@dataclass(frozen=True)
class SessionEvent(WireEvent):
    """What ``session.created`` and ``session.updated`` share: ``session``, the session object
    (``session_object``); ``ticktock serve`` adds the served model, decoder and talker under its additive ``ticktock``
    key, which the client reads (``served_model``...; None from other servers), each checked when the event is made.

    >>> created = SessionCreated({"model": "m", "ticktock": {"model": "embedded", "decoder": "ar"}})
    >>> created.model, created.served_model, created.served_decoder, created.served_talker
    ('m', 'embedded', 'ar', None)
    """

    session: Mapping[str, object] = field(default_factory=dict)
    event_id: str | None = event_id_field()

    def __post_init__(self) -> None:
        self._labels()

    def _labels(self) -> dict[str, str | None]:
        session = Fields(self.session, self.type, None, "session.")
        ours = session.nested_or_empty("ticktock")
        return {"model": session.text("model"), "served_model": ours.text("model"),
                "served_decoder": ours.text("decoder"), "served_talker": ours.text("talker")}

    @property
    def model(self) -> str | None:
        """The model name the server reports."""
        return self._labels()["model"]

    @property
    def served_model(self) -> str | None:
        return self._labels()["served_model"]

    @property
    def served_decoder(self) -> str | None:
        return self._labels()["served_decoder"]

    @property
    def served_talker(self) -> str | None:
        return self._labels()["served_talker"]

    def to_json(self) -> dict[str, object]:
        return {**self.head(), "session": dict(self.session)}

    @classmethod
    def from_fields(cls, fields: Fields) -> SessionEvent:
        session = fields.nested("session")
        return cls({} if session is None else dict(session.event), event_id=_server_event_id(fields))


@dataclass(frozen=True)
class SessionCreated(SessionEvent):
    """``session.created``, the answer to the handshake's ``session.update`` (no ``resume_token``: no resume)."""

    type: ClassVar[str] = "session.created"


@dataclass(frozen=True)
class SessionUpdated(SessionEvent):
    """``session.updated``, the answer to a later ``session.update`` (the same session object)."""

    type: ClassVar[str] = "session.updated"


# ---------------------------------------------------------------------------------------------------------------
# A unit's decision


@dataclass(frozen=True)
class UnitReport:
    """TickTock's measurements of one unit, sent under the additive ``ticktock`` key of its decision event: the unit
    index, the time from its last sample to its decision (ms), whether Speculative Listening's draft was accepted
    (None for other decoders), whether the unit missed its deadline, and its kind where the contract's two decisions
    cannot say it (a backchannel is sent as ``response.speak``; ``kind`` says ``backchannel``). A None measurement is
    left out.

    >>> UnitReport(unit=2, post_audio_ms=40.0).to_json()
    {'unit': 2, 'post_audio_ms': 40.0}
    """

    unit: int | None
    post_audio_ms: float | None = None
    draft_accepted: bool | None = None
    deadline_miss: bool | None = None
    kind: str | None = None

    def to_json(self) -> dict[str, object]:
        values = {"unit": self.unit, "post_audio_ms": self.post_audio_ms, "draft_accepted": self.draft_accepted,
                  "deadline_miss": self.deadline_miss, "kind": self.kind}
        return {name: value for name, value in values.items() if value is not None}

    @classmethod
    def from_fields(cls, fields: Fields) -> UnitReport:
        """The report in a decision's ``ticktock`` object (every field optional: another server sends none)."""
        post_audio_ms = fields.read("post_audio_ms", (int, float), "a number")
        return cls(fields.integer("unit"), None if post_audio_ms is None else float(post_audio_ms),
                   fields.flag("draft_accepted"), fields.flag("deadline_miss"), fields.text("kind"))


class UnitDecision:
    """What ``response.listen`` and ``response.speak`` share, as the client reads a decision: ``unit`` (the unit
    index where the server says it, ``ticktock serve``'s ``ticktock.unit``, else None: the client counts decisions),
    ``speak``, ``server_ms`` (the server's own measurement of the unit, where it sends one) and ``kind``
    (``backchannel`` where the server says so; vLLM-Omni's contract has only listen and speak)."""

    speak: ClassVar[bool]
    report: UnitReport | None

    @property
    def unit(self) -> int | None:
        return None if self.report is None else self.report.unit

    @property
    def server_ms(self) -> float | None:
        return None if self.report is None else self.report.post_audio_ms

    @property
    def kind(self) -> str | None:
        kind = None if self.report is None else self.report.kind
        return kind if kind == "backchannel" else None


def _report(fields: Fields) -> UnitReport | None:
    ours = fields.nested("ticktock")
    return None if ours is None else UnitReport.from_fields(ours)


def _stage_ttft_ms(metadata: Mapping[str, object]) -> float | None:
    """The first stage's ``vllm_ttft_ms`` in vLLM-Omni's listen metadata, when it is a finite number >= 0.

    >>> _stage_ttft_ms({"vllm_omni": {"stage_metrics": {"0": {"vllm_ttft_ms": 97.9}}}}), _stage_ttft_ms({})
    (97.9, None)
    """
    ours = metadata.get("vllm_omni")
    stages = ours.get("stage_metrics") if isinstance(ours, dict) else None
    first = stages.get("0") if isinstance(stages, dict) else None
    value = first.get("vllm_ttft_ms") if isinstance(first, dict) else None
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value < 1e9:
        return float(value)
    return None


@dataclass(frozen=True)
class ResponseListen(UnitDecision, WireEvent):
    """``response.listen``: the model keeps listening this unit. Without ``response_id`` it is a standalone decision;
    with one, it ends that response (the model yields the turn), as vLLM-Omni's client reads it.

    ``stage_ttft_ms``: vLLM-Omni's own measure of the unit's model step, where it reports one (the Thinker stage's
    ``vllm_ttft_ms`` in ``response.metadata.vllm_omni.stage_metrics``: from the step's request reaching the stage to
    its first token). ``reason`` and ``buffering``: what vLLM-Omni says of it in ``response.metadata``. ``buffering: true`` (its reason
    ``buffering`` or a prefill error) is sent when the model's prefill of the input did not complete, so the model
    decided nothing; ``silence_or_noise`` answers a silent append of a session without ``auto_response``.

    >>> listen = ResponseListen(UnitReport(unit=4), "resp_1").to_json()
    >>> listen["response"], listen["response_id"], listen["ticktock"]
    ({'object': 'realtime.response', 'status': 'listening', 'metadata': {}, 'id': 'resp_1'}, 'resp_1', {'unit': 4})
    >>> parse_server_event('{"type": "response.listen", "response": {"metadata": {"reason": "buffering", '
    ...                    '"buffering": true}}}').buffering
    True
    """

    type: ClassVar[str] = "response.listen"
    speak: ClassVar[bool] = False
    report: UnitReport | None = None
    response_id: str | None = None
    event_id: str | None = event_id_field()
    reason: str | None = None
    buffering: bool = False
    stage_ttft_ms: float | None = None

    def to_json(self) -> dict[str, object]:
        metadata: dict[str, object] = {}
        if self.reason is not None:
            metadata["reason"] = self.reason
        if self.buffering:
            metadata["buffering"] = True
        response: dict[str, object] = {"object": "realtime.response", "status": "listening", "metadata": metadata}
        event: dict[str, object] = {**self.head(), "response": response}
        if self.response_id is not None:
            response["id"] = self.response_id
            event["response_id"] = self.response_id
        if self.report is not None:
            event["ticktock"] = self.report.to_json()
        return event

    @classmethod
    def from_fields(cls, fields: Fields) -> ResponseListen:
        # the metadata is the server's own (vLLM-Omni's runner fills it as it likes): read leniently, clipped
        response = fields.event.get("response")
        metadata = response.get("metadata") if isinstance(response, dict) else None
        metadata = metadata if isinstance(metadata, dict) else {}
        reason = metadata.get("reason")
        reason = echoed(reason) if isinstance(reason, str) else None
        buffering = metadata.get("buffering") is True
        return cls(_report(fields), _response_id(fields), event_id=_server_event_id(fields), reason=reason,
                   buffering=buffering, stage_ttft_ms=_stage_ttft_ms(metadata))


@dataclass(frozen=True)
class ResponseSpeak(UnitDecision, WireEvent):
    """``response.speak``: the model speaks this unit, within response ``response_id``."""

    type: ClassVar[str] = "response.speak"
    speak: ClassVar[bool] = True
    response_id: str | None
    item_id: str | None
    report: UnitReport | None = None
    event_id: str | None = event_id_field()

    def to_json(self) -> dict[str, object]:
        event = {**self.head(), "response_id": self.response_id, "item_id": self.item_id, "output_index": 0,
                 "content_index": 0, "metadata": {}}
        if self.report is not None:
            event["ticktock"] = self.report.to_json()
        return event

    @classmethod
    def from_fields(cls, fields: Fields) -> ResponseSpeak:
        return cls(_response_id(fields), fields.text("item_id"), _report(fields), event_id=_server_event_id(fields))


# ---------------------------------------------------------------------------------------------------------------
# A response


def response_modalities(modalities: tuple[str, ...]) -> tuple[str, ...]:
    """A response's output modalities from the session's: OpenAI GA allows one per response, audio (with its
    transcript) when the session has it.

    >>> response_modalities(("audio", "text")), response_modalities(("text",))
    (('audio',), ('text',))
    """
    return ("audio",) if "audio" in modalities else ("text",)


def _output_modalities(fields: Fields) -> tuple[str, ...]:
    response = fields.nested("response")
    value = response.event.get("output_modalities") if response else None
    return tuple(entry for entry in value if isinstance(entry, str)) if isinstance(value, list) else ()


@dataclass(frozen=True)
class ResponseCreated(WireEvent):
    """``response.created``: a spoken response starts (its id also at the top level, as vLLM-Omni sends it)."""

    type: ClassVar[str] = "response.created"
    response_id: str | None
    output_modalities: tuple[str, ...] = ("audio",)
    event_id: str | None = event_id_field()

    def to_json(self) -> dict[str, object]:
        response = {"id": self.response_id, "object": "realtime.response", "status": "in_progress", "output": [],
                    "output_modalities": list(self.output_modalities)}
        return {**self.head(), "response_id": self.response_id, "response": response}

    @classmethod
    def from_fields(cls, fields: Fields) -> ResponseCreated:
        return cls(_response_id_anywhere(fields), _output_modalities(fields), event_id=_server_event_id(fields))


@dataclass(frozen=True)
class ResponseDone(WireEvent):
    """``response.done``: the response ended, ``status`` ``completed`` or ``cancelled`` (None where a server sends no
    response object); ``output``: its function-call items."""

    type: ClassVar[str] = "response.done"
    response_id: str | None
    status: str | None = "completed"
    output: tuple[Mapping[str, object], ...] = ()
    output_modalities: tuple[str, ...] = ("audio",)
    event_id: str | None = event_id_field()

    def to_json(self) -> dict[str, object]:
        response = {"id": self.response_id, "object": "realtime.response", "status": self.status,
                    "output": [dict(item) for item in self.output], "output_modalities": list(self.output_modalities)}
        return {**self.head(), "response_id": self.response_id, "response": response}

    @classmethod
    def from_fields(cls, fields: Fields) -> ResponseDone:
        response = fields.nested("response")
        output = response.event.get("output") if response else None
        items = tuple(item for item in output if isinstance(item, dict)) if isinstance(output, list) else ()
        return cls(_response_id_anywhere(fields), response.text("status") if response else None, items,
                   _output_modalities(fields), event_id=_server_event_id(fields))


@dataclass(frozen=True)
class TextDelta(WireEvent):
    """``response.output_text.delta``: text the model wrote (``transcript`` False: not the words of its speech)."""

    type: ClassVar[str] = "response.output_text.delta"
    transcript: ClassVar[bool] = False
    response_id: str | None
    item_id: str | None
    delta: str
    event_id: str | None = event_id_field()

    @property
    def text(self) -> str:
        return self.delta

    def to_json(self) -> dict[str, object]:
        return {**self.head(), "response_id": self.response_id, "item_id": self.item_id, "output_index": 0,
                "content_index": 0, "delta": self.delta}

    @classmethod
    def from_fields(cls, fields: Fields) -> TextDelta:
        return cls(_response_id(fields), fields.text("item_id"), fields.text("delta", required=True),
                   event_id=_server_event_id(fields))


@dataclass(frozen=True)
class TranscriptDelta(TextDelta):
    """``response.output_audio_transcript.delta``: the text of the speech being sent (``transcript`` True)."""

    type: ClassVar[str] = "response.output_audio_transcript.delta"
    transcript: ClassVar[bool] = True


@dataclass(frozen=True)
class AudioDelta(WireEvent):
    """``response.output_audio.delta``: speech as base64 PCM16 (``delta``) at ``sample_rate_hz``, which vLLM-Omni's
    client reads per chunk (None where a server does not say: ``rate_hz`` is then ``DEFAULT_OUTPUT_RATE_HZ``).
    ``samples``, ``audio_s`` and ``sha256`` (the first 8 hex digits of the PCM bytes' SHA-256) are what the client
    measures.

    >>> delta = AudioDelta.of_samples("resp_1", "item_1", np.zeros(2400, dtype=np.float32), 24_000)
    >>> delta.samples, delta.audio_s, delta.sha256
    (2400, 0.1, '24ddaa47')
    """

    type: ClassVar[str] = "response.output_audio.delta"
    response_id: str | None
    item_id: str | None
    delta: str = field(repr=False)
    sample_rate_hz: int | None = None
    event_id: str | None = event_id_field()

    def __post_init__(self) -> None:
        self._pcm()  # checked when the event is made

    @classmethod
    def of_samples(cls, response_id: str, item_id: str, samples: np.ndarray, sample_rate_hz: int) -> AudioDelta:
        """The talker's speech (float samples) as PCM16 at its own rate."""
        return cls(response_id, item_id, encode_pcm16(samples), int(sample_rate_hz))

    def _pcm(self) -> bytes:
        fields = Fields({}, self.type, None)
        try:
            pcm = base64.b64decode(self.delta, validate=True)
        except (binascii.Error, ValueError):
            raise fields.error("delta", "is not base64", "bad_audio") from None
        if len(pcm) % 2:
            raise fields.error("delta", f"is {len(pcm)} bytes, not whole PCM16 samples", "bad_audio")
        return pcm

    @property
    def rate_hz(self) -> int:
        """The audio's sample rate: the delta's own, else ``DEFAULT_OUTPUT_RATE_HZ``."""
        return self.sample_rate_hz or DEFAULT_OUTPUT_RATE_HZ

    @cached_property
    def samples(self) -> int:
        return len(self._pcm()) // 2

    @cached_property
    def sha256(self) -> str:
        return hashlib.sha256(self._pcm()).hexdigest()[:8]

    @property
    def audio_s(self) -> float:
        return self.samples / self.rate_hz

    def to_json(self) -> dict[str, object]:
        event = {**self.head(), "response_id": self.response_id, "item_id": self.item_id, "output_index": 0,
                 "content_index": 0, "delta": self.delta, "format": "pcm16"}
        if self.sample_rate_hz is not None:
            event["sample_rate_hz"] = self.sample_rate_hz
        return event

    @classmethod
    def from_fields(cls, fields: Fields) -> AudioDelta:
        return cls(_response_id(fields), fields.text("item_id"), fields.text("delta", required=True),
                   fields.rate("sample_rate_hz"), event_id=_server_event_id(fields))


# ---------------------------------------------------------------------------------------------------------------
# Function calls


@dataclass(frozen=True)
class FunctionCall:
    """A function call the model makes: its output item ``item_id``, ``call_id`` (the client answers with it),
    the function ``name`` and its JSON ``arguments``.

    >>> FunctionCall("item_1", "call_1", "f", "{}").item("completed")["status"]
    'completed'
    """

    item_id: str
    call_id: str
    name: str
    arguments: str = ""

    def item(self, status: str) -> dict[str, object]:
        """The GA ``function_call`` conversation item."""
        return {"id": self.item_id, "object": "realtime.item", "type": "function_call", "status": status,
                "call_id": self.call_id, "name": self.name, "arguments": self.arguments}


def _item(fields: Fields) -> Mapping[str, object]:
    item = fields.nested("item")
    return {} if item is None else dict(item.event)


@dataclass(frozen=True)
class OutputItemAdded(WireEvent):
    """``response.output_item.added``: an output item starts (``ticktock serve``: a function call, arguments still
    empty; another server's items, messages included, are kept as sent)."""

    type: ClassVar[str] = "response.output_item.added"
    response_id: str | None
    item: Mapping[str, object] = field(default_factory=dict)
    output_index: int | None = 0
    event_id: str | None = event_id_field()

    @classmethod
    def of_call(cls, response_id: str, call: FunctionCall, output_index: int = 0) -> OutputItemAdded:
        return cls(response_id, replace(call, arguments="").item("in_progress"), output_index)

    def to_json(self) -> dict[str, object]:
        return {**self.head(), "response_id": self.response_id, "output_index": self.output_index,
                "item": dict(self.item)}

    @classmethod
    def from_fields(cls, fields: Fields) -> OutputItemAdded:
        return cls(_response_id(fields), _item(fields), fields.integer("output_index"),
                   event_id=_server_event_id(fields))


@dataclass(frozen=True)
class OutputItemDone(OutputItemAdded):
    """``response.output_item.done``: the item is complete (a function call: the client runs it and answers with a
    ``conversation.item.create`` of a ``function_call_output``)."""

    type: ClassVar[str] = "response.output_item.done"

    @classmethod
    def of_call(cls, response_id: str, call: FunctionCall, output_index: int = 0) -> OutputItemDone:
        return cls(response_id, call.item("completed"), output_index)


@dataclass(frozen=True)
class FunctionCallArgumentsDelta(WireEvent):
    """``response.function_call_arguments.delta``: a piece of the call's JSON arguments."""

    type: ClassVar[str] = "response.function_call_arguments.delta"
    response_id: str | None
    item_id: str | None
    call_id: str | None
    delta: str
    output_index: int | None = 0
    event_id: str | None = event_id_field()

    def to_json(self) -> dict[str, object]:
        return {**self.head(), "response_id": self.response_id, "item_id": self.item_id,
                "output_index": self.output_index, "call_id": self.call_id, "delta": self.delta}

    @classmethod
    def from_fields(cls, fields: Fields) -> FunctionCallArgumentsDelta:
        return cls(_response_id(fields), fields.text("item_id"), fields.text("call_id"), fields.text("delta") or "",
                   fields.integer("output_index"), event_id=_server_event_id(fields))


@dataclass(frozen=True)
class FunctionCallArgumentsDone(WireEvent):
    """``response.function_call_arguments.done``: the call's whole arguments; the client runs the call and answers.

    >>> done = FunctionCallArgumentsDone.of_call("resp_1", FunctionCall("item_1", "call_1", "f", "{}"))
    >>> done.call_id, done.name, done.arguments
    ('call_1', 'f', '{}')
    """

    type: ClassVar[str] = "response.function_call_arguments.done"
    response_id: str | None
    item_id: str | None
    call_id: str
    name: str = ""
    arguments: str = ""
    output_index: int | None = 0
    event_id: str | None = event_id_field()

    @classmethod
    def of_call(cls, response_id: str, call: FunctionCall, output_index: int = 0) -> FunctionCallArgumentsDone:
        return cls(response_id, call.item_id, call.call_id, call.name, call.arguments, output_index)

    def to_json(self) -> dict[str, object]:
        return {**self.head(), "response_id": self.response_id, "item_id": self.item_id,
                "output_index": self.output_index, "call_id": self.call_id, "name": self.name,
                "arguments": self.arguments}

    @classmethod
    def from_fields(cls, fields: Fields) -> FunctionCallArgumentsDone:
        return cls(_response_id(fields), fields.text("item_id"), fields.text("call_id", required=True),
                   fields.text("name") or "", fields.text("arguments") or "", fields.integer("output_index"),
                   event_id=_server_event_id(fields))


# ---------------------------------------------------------------------------------------------------------------
# Errors and the session's end


@dataclass(frozen=True)
class ErrorEvent(WireEvent):
    """``error``: OpenAI's envelope (``error.type`` from ``ERROR_TYPES``), vLLM-Omni's ``code``, and the client event
    it answers (its ``event_id`` echoed ``clipped`` to ``ECHO_CHARS``: the client's own id, not a way to grow the
    answer).

    >>> error = ErrorEvent("bad_audio", "input_audio_buffer.append: 'audio' is not base64", "e4").to_json()["error"]
    >>> error["type"], error["code"], error["event_id"]
    ('invalid_request_error', 'bad_audio', 'e4')
    >>> len(ErrorEvent("unknown_event", "unknown event type 'x'", "e" * 100_000).to_json()["error"]["event_id"])
    67
    """

    type: ClassVar[str] = "error"
    code: str | None
    message: str
    related_event_id: str | None = None
    event_id: str | None = event_id_field()

    @property
    def error_type(self) -> str:
        """OpenAI's ``error.type`` bucket of the code."""
        return ERROR_TYPES.get(self.code, "invalid_request_error")

    def to_json(self) -> dict[str, object]:
        error = {"type": self.error_type, "code": self.code, "message": self.message}
        if self.related_event_id:
            error["event_id"] = clipped(self.related_event_id)
        return {**self.head(), "error": error}

    @classmethod
    def from_fields(cls, fields: Fields) -> ErrorEvent:
        error = fields.nested_or_empty("error")
        return cls(error.text("code"), error.text("message") or "", error.text("event_id"),
                   event_id=_server_event_id(fields))


@dataclass(frozen=True)
class HeartbeatAck(WireEvent):
    """``session.heartbeat_ack``: vLLM-Omni's answer to a client's ``session.heartbeat``."""

    type: ClassVar[str] = "session.heartbeat_ack"
    session_id: str | None
    event_id: str | None = event_id_field()

    def to_json(self) -> dict[str, object]:
        return {**self.head(), "session_id": self.session_id}

    @classmethod
    def from_fields(cls, fields: Fields) -> HeartbeatAck:
        return cls(fields.text("session_id"), event_id=_server_event_id(fields))


@dataclass(frozen=True)
class InputAudioBufferCommitted(WireEvent):
    """``input_audio_buffer.committed``: the answer to a commit in either mode (the user's turn ends; the input goes
    on), naming the user item the turn's audio became and the previous commit's.

    >>> InputAudioBufferCommitted("item_1", event_id="e1").to_json()
    {'type': 'input_audio_buffer.committed', 'event_id': 'e1', 'previous_item_id': None, 'item_id': 'item_1'}
    """

    type: ClassVar[str] = "input_audio_buffer.committed"
    item_id: str | None
    previous_item_id: str | None = None
    event_id: str | None = event_id_field()

    def to_json(self) -> dict[str, object]:
        return {**self.head(), "previous_item_id": self.previous_item_id, "item_id": self.item_id}

    @classmethod
    def from_fields(cls, fields: Fields) -> InputAudioBufferCommitted:
        return cls(fields.text("item_id"), fields.text("previous_item_id"), event_id=_server_event_id(fields))


@dataclass(frozen=True)
class SessionClosed(WireEvent):
    """``session.closed``: the session ended, and why (``client_close`` or the reason the client's ``session.close``
    gave, ``ended``, ``server_shutdown``, ``engine_error``...); the reason is sent ``clipped``.

    >>> SessionClosed("sess_1", "client_close").to_json()["reason"]
    'client_close'
    """

    type: ClassVar[str] = "session.closed"
    session_id: str | None
    reason: str | None
    event_id: str | None = event_id_field()

    def to_json(self) -> dict[str, object]:
        reason = None if self.reason is None else clipped(self.reason)
        return {**self.head(), "session_id": self.session_id, "reason": reason}

    @classmethod
    def from_fields(cls, fields: Fields) -> SessionClosed:
        return cls(fields.text("session_id"), fields.text("reason"), event_id=_server_event_id(fields))


@dataclass(frozen=True)
class SessionExpired(WireEvent):
    """``session.expired``: vLLM-Omni's terminal event for a session that was idle past its timeout (its reason,
    ``idle_ttl_expired``, is vLLM-Omni's too).

    >>> SessionExpired("sess_1", event_id="e1").to_json()
    {'type': 'session.expired', 'event_id': 'e1', 'session_id': 'sess_1', 'reason': 'idle_ttl_expired'}
    """

    type: ClassVar[str] = "session.expired"
    session_id: str | None
    reason: str | None = "idle_ttl_expired"
    event_id: str | None = event_id_field()

    def to_json(self) -> dict[str, object]:
        return {**self.head(), "session_id": self.session_id, "reason": self.reason}

    @classmethod
    def from_fields(cls, fields: Fields) -> SessionExpired:
        return cls(fields.text("session_id"), fields.text("reason"), event_id=_server_event_id(fields))


@dataclass(frozen=True)
class Other:
    """A server event of a type not known here (``rate_limits.updated``, a server's own additions): kept by its type
    only (``to_json`` gives just that)."""

    type: str

    def to_json(self) -> dict[str, object]:
        return {"type": self.type}


# ---------------------------------------------------------------------------------------------------------------
# Parsing


ServerEvent = Union[
    SessionCreated, SessionUpdated, ResponseListen, ResponseSpeak, ResponseCreated, TextDelta, TranscriptDelta,
    AudioDelta, OutputItemAdded, FunctionCallArgumentsDelta, FunctionCallArgumentsDone, OutputItemDone, ResponseDone,
    ErrorEvent, HeartbeatAck, InputAudioBufferCommitted, SessionClosed, SessionExpired, Other,
]

#: Every server event class with a wire type (``Other`` is the rest), in the order of the contract.
SERVER_EVENTS: tuple[type[WireEvent], ...] = (
    SessionCreated, SessionUpdated, ResponseListen, ResponseSpeak, ResponseCreated, TextDelta, TranscriptDelta,
    AudioDelta, OutputItemAdded, FunctionCallArgumentsDelta, FunctionCallArgumentsDone, OutputItemDone, ResponseDone,
    ErrorEvent, HeartbeatAck, InputAudioBufferCommitted, SessionClosed, SessionExpired,
)
SERVER_EVENT_TYPES = event_table(SERVER_EVENTS)


def parse_server_event(frame: str | bytes) -> ServerEvent:
    """One server frame as its typed event (see the module docstring); ``ProtocolError`` when it cannot be read.

    >>> parse_server_event('{"type": "response.listen", "response": {"status": "listening"}}')
    ResponseListen(report=None, response_id=None, event_id=None, reason=None, buffering=False, stage_ttft_ms=None)
    >>> parse_server_event('{"type": "session.heartbeat_ack", "session_id": "s1", "event_id": "e1"}')
    HeartbeatAck(session_id='s1', event_id='e1')
    """
    event = read_json_object(frame)
    event_type = event.get("type")
    if not isinstance(event_type, str):
        raise ProtocolError("bad_event", "server event has no 'type'" if event_type is None else
                            "server event's 'type' is not a string")
    event_class = SERVER_EVENT_TYPES.get(event_type)
    return Other(event_type) if event_class is None else event_class.from_fields(Fields(event, event_type, None))
