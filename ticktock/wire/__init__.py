"""The wire protocol of ``WS /v1/realtime?duplex=1`` in one place: typed events, both directions, for the server
(``ticktock serve``), the live client (``ticktock.endpoints``) and the tests.

Every event is a frozen dataclass with a class-level ``type`` (its wire name), an ``event_id`` (a fresh one unless
given), ``to_json()`` (the one JSON object of its text frame) and ``from_fields`` (read back from a frame, every field
checked). ``parse_client_event`` (what ``ticktock serve`` reads) and ``parse_server_event`` (what the live client
reads) dispatch on ``type`` through tables built from the classes (``CLIENT_EVENTS``, ``SERVER_EVENTS``). The
vocabulary is vLLM-Omni's full-duplex contract: OpenAI's Realtime GA events plus the duplex ones (``response.listen``
/ ``response.speak``, ``playback.ack``, ``session.heartbeat``, ``session.close``); TickTock's measurements of a unit
ride under the additive ``ticktock`` key of its decision (``UnitReport``).

- ``codec``: ``ProtocolError``, the typed field reader (``Fields``), frames read as JSON objects, the bounds, the
  audio formats and the session's settings, PCM16 encoding and input audio decoding.
- ``client_events``: every event a client sends (``session.update``, ``input_audio_buffer.append``...).
- ``server_events``: every event a server sends (``session.created``, ``response.speak``..., ``Other`` for the rest).

A round trip, each way:

>>> append = AudioAppend("AAAAQA==", event_id="e1")
>>> parse_client_event(json.dumps(append.to_json())) == append
True
>>> decode_audio(append.audio, append.audio_format(DEFAULT_INPUT_FORMAT)).tolist()
[0.0, 0.5]
>>> listen = ResponseListen(UnitReport(unit=4, post_audio_ms=21.5), event_id="e2")
>>> listen.to_json()
{'type': 'response.listen', 'event_id': 'e2', 'response': {'object': 'realtime.response', 'status': 'listening', \
'metadata': {}}, 'ticktock': {'unit': 4, 'post_audio_ms': 21.5}}
>>> event = parse_server_event(json.dumps(listen.to_json()))
>>> event == listen, event.unit, event.speak, event.server_ms
(True, 4, False, 21.5)
>>> try:
...     parse_client_event('{"type": "playback.ack", "played_ms": -1, "event_id": "e3"}')
... except ProtocolError as err:
...     print(err.code, "|", err, "|", err.event_id)
bad_event | playback.ack: 'played_ms' must be a number from 0 to 1e+12, not -1 | e3
"""

from __future__ import annotations

import json  # noqa: F401 (the examples use it)

from ticktock.wire.client_events import (CLIENT_EVENT_TYPES, CLIENT_EVENTS, NOT_SERVED, AudioAppend, AudioClear,
                                         AudioCommit, ClientEvent, EventAck, FunctionCallOutput, Heartbeat,
                                         PlaybackAck, ResponseCancel, ResponseCreate, SessionClose, SessionUpdate,
                                         parse_client_event)
from ticktock.wire.codec import (DEFAULT_INPUT_FORMAT, DEFAULT_OUTPUT_RATE_HZ, ECHO_CHARS, ENCODING_ALIASES,
                                 ENCODING_BYTES, ERROR_TYPES, MAX_APPEND_BYTES, MAX_FIELD_NUMBER, MAX_FRAME_BYTES,
                                 MAX_SAMPLE_RATE_HZ, MIN_SAMPLE_RATE_HZ, AudioFormat, Fields, ProtocolError,
                                 SessionSettings, WireEvent, clipped, decode_audio, echoed, encode_pcm16, new_event_id,
                                 read_json_object)
from ticktock.wire.server_events import (SERVER_EVENT_TYPES, SERVER_EVENTS, AudioDelta, ErrorEvent, FunctionCall,
                                         FunctionCallArgumentsDelta, FunctionCallArgumentsDone, HeartbeatAck,
                                         InputAudioBufferCommitted, Other, OutputItemAdded, OutputItemDone,
                                         ResponseCreated, ResponseDone, ResponseListen, ResponseSpeak, ServerEvent,
                                         SessionClosed, SessionCreated, SessionEvent, SessionExpired, SessionUpdated,
                                         TextDelta, TranscriptDelta, UnitDecision, UnitReport, parse_server_event,
                                         response_modalities, session_object)

__all__ = [
    # codec
    "DEFAULT_INPUT_FORMAT", "DEFAULT_OUTPUT_RATE_HZ", "ECHO_CHARS", "ENCODING_ALIASES", "ENCODING_BYTES",
    "ERROR_TYPES", "MAX_APPEND_BYTES", "MAX_FIELD_NUMBER", "MAX_FRAME_BYTES", "MAX_SAMPLE_RATE_HZ",
    "MIN_SAMPLE_RATE_HZ", "AudioFormat", "Fields", "ProtocolError", "SessionSettings", "WireEvent", "clipped", "echoed",
    "decode_audio", "encode_pcm16", "new_event_id", "read_json_object",
    # client events
    "CLIENT_EVENTS", "CLIENT_EVENT_TYPES", "NOT_SERVED", "ClientEvent", "SessionUpdate", "AudioAppend", "AudioCommit",
    "AudioClear", "ResponseCreate", "ResponseCancel", "FunctionCallOutput", "PlaybackAck", "Heartbeat", "EventAck",
    "SessionClose", "parse_client_event",
    # server events
    "SERVER_EVENTS", "SERVER_EVENT_TYPES", "ServerEvent", "SessionEvent", "SessionCreated", "SessionUpdated",
    "UnitReport", "UnitDecision", "ResponseListen", "ResponseSpeak", "ResponseCreated", "ResponseDone", "TextDelta",
    "TranscriptDelta", "AudioDelta", "FunctionCall", "OutputItemAdded", "OutputItemDone", "FunctionCallArgumentsDelta",
    "FunctionCallArgumentsDone", "ErrorEvent", "HeartbeatAck", "InputAudioBufferCommitted", "SessionClosed",
    "SessionExpired", "Other", "parse_server_event", "response_modalities", "session_object",
]
