"""One wire vocabulary, both directions (``ticktock.wire``): every event class round-trips through its own JSON, the
parse tables hold every class, every event ``ticktock serve`` builds reads back through the client's parser as what
it says, what the live client sends the server parses, and a server event the client cannot use is one line naming
the event and the field."""

from __future__ import annotations

import asyncio
import inspect
import json
from dataclasses import replace

import numpy as np
import pytest

from ticktock import wire
from ticktock.wire import ProtocolError, client_events, server_events

CALL = wire.FunctionCall("item_1", "call_1", "track_order", '{"order_id": "A12"}')
REPORT = wire.UnitReport(unit=4, post_audio_ms=21.5, draft_accepted=True, deadline_miss=False)


def read(event: wire.WireEvent):
    """What the client reads of a server event sent on the socket."""
    return wire.parse_server_event(json.dumps(event.to_json()))


def served_session() -> dict:
    settings = wire.SessionSettings(model="embedded", output_rate_hz=24_000, instructions="Be brief.")
    labels = {"mode": "duplex", "model": "embedded", "decoder": "ar", "talker": "beeper"}
    return {**wire.session_object("sess_1", settings), "ticktock": labels}


CLIENT_EXAMPLES = [
    wire.SessionUpdate.declaring("Be brief.", [{"name": "track_order", "parameters": {"type": "object"}}],
                                 model="ticktock-embedded", input_rate_hz=24_000),
    wire.SessionUpdate({"audio": {"input": {"format": {"type": "audio/pcm_f32le", "rate": 48_000}},
                                  "output": {"voice": "alloy"}}}),
    wire.AudioAppend("AAAAQA=="),
    wire.AudioAppend("AAAAAAAAAAA=", "pcm_f32le", 24_000),
    wire.AudioCommit(),
    wire.AudioCommit(final=False, create_response=True),
    wire.AudioClear(),
    wire.ResponseCreate(),
    wire.ResponseCancel("resp_1"),
    wire.FunctionCallOutput("call_1", '{"ok": true}', "item_9"),
    wire.PlaybackAck(1234.6, 1000, "resp_1", "item_1"),
    wire.Heartbeat(),
    wire.EventAck(3),
    wire.SessionClose(),
    wire.SessionClose("bye"),
]
SERVER_EXAMPLES = [
    wire.SessionCreated(served_session()),
    wire.SessionUpdated(served_session()),
    wire.ResponseListen(wire.UnitReport(unit=2)),
    wire.ResponseListen(REPORT, "resp_1"),
    wire.ResponseSpeak("resp_1", "item_1", REPORT),
    wire.ResponseSpeak("resp_1", "item_1", wire.UnitReport(unit=5, post_audio_ms=9.0, kind="backchannel")),
    wire.ResponseCreated("resp_1", wire.response_modalities(("text",))),
    wire.TextDelta("resp_1", "item_1", "Hi"),
    wire.TranscriptDelta("resp_1", "item_1", "Hi"),
    wire.AudioDelta.of_samples("resp_1", "item_1", np.linspace(-0.5, 0.5, 2205, dtype=np.float32), 22_050),
    wire.OutputItemAdded.of_call("resp_1", CALL),
    wire.FunctionCallArgumentsDelta("resp_1", CALL.item_id, CALL.call_id, '{"order_id": '),
    wire.FunctionCallArgumentsDone.of_call("resp_1", CALL),
    wire.OutputItemDone.of_call("resp_1", CALL, output_index=1),
    wire.ResponseDone("resp_1", output=(CALL.item("completed"),)),
    wire.ResponseDone("resp_2", "cancelled"),
    wire.ErrorEvent("resource_exhausted", "full"),
    wire.ErrorEvent("bad_audio", "input_audio_buffer.append: 'audio' is not base64", "evt_9"),
    wire.HeartbeatAck("sess_1"),
    wire.InputAudioBufferCommitted("item_2", "item_1"),
    wire.SessionClosed("sess_1", "ended"),
    wire.SessionExpired("sess_1"),
]


def with_fixed_id(event, number: int):
    return replace(event, event_id=f"event_{number}")


@pytest.mark.parametrize("event", [with_fixed_id(e, n) for n, e in enumerate(CLIENT_EXAMPLES)],
                         ids=lambda e: e.type)
def test_every_client_event_round_trips_through_its_json(event):
    assert wire.parse_client_event(json.dumps(event.to_json())) == event
    assert event.to_json()["type"] == event.type and event.to_json()["event_id"] == event.event_id


@pytest.mark.parametrize("event", [with_fixed_id(e, n) for n, e in enumerate(SERVER_EXAMPLES)],
                         ids=lambda e: e.type)
def test_every_server_event_round_trips_through_its_json(event):
    assert wire.parse_server_event(json.dumps(event.to_json())) == event
    assert event.to_json()["type"] == event.type and event.to_json()["event_id"] == event.event_id


def test_an_unknown_server_event_is_kept_by_its_type():
    assert read(wire.Other("rate_limits.updated")) == wire.Other("rate_limits.updated")
    assert wire.parse_server_event('{"type": "server.novelty", "note": {"x": [1]}}') == wire.Other("server.novelty")


def event_classes(module) -> set[type]:
    """Every event class a module defines (a ``WireEvent`` with a wire ``type`` of its own)."""
    return {cls for _, cls in inspect.getmembers(module, inspect.isclass)
            if issubclass(cls, wire.WireEvent) and cls.__module__ == module.__name__ and "type" in vars(cls)}


def test_the_parse_tables_hold_every_event_class_and_the_examples_cover_them():
    assert event_classes(client_events) == set(wire.CLIENT_EVENTS) == set(wire.CLIENT_EVENT_TYPES.values())
    assert event_classes(server_events) == set(wire.SERVER_EVENTS) == set(wire.SERVER_EVENT_TYPES.values())
    for table in (wire.CLIENT_EVENT_TYPES, wire.SERVER_EVENT_TYPES):
        assert all(cls.type == name for name, cls in table.items())
    assert {type(event) for event in CLIENT_EXAMPLES} == set(wire.CLIENT_EVENTS)
    assert {type(event) for event in SERVER_EXAMPLES} == set(wire.SERVER_EVENTS)
    assert len({e.event_id for e in CLIENT_EXAMPLES + SERVER_EXAMPLES}) == len(CLIENT_EXAMPLES + SERVER_EXAMPLES)


def test_every_server_event_reads_back_as_what_it_says():
    created = read(wire.SessionCreated(served_session()))
    assert (created.model, created.served_model, created.served_decoder, created.served_talker) == (
        "embedded", "embedded", "ar", "beeper")
    listen = read(wire.ResponseListen(wire.UnitReport(unit=2)))
    assert (listen.unit, listen.speak, listen.response_id, listen.server_ms, listen.kind) == (
        2, False, None, None, None)
    listen = read(wire.ResponseListen(REPORT, "resp_1"))
    assert (listen.unit, listen.speak, listen.response_id, listen.server_ms) == (4, False, "resp_1", 21.5)
    speak = read(wire.ResponseSpeak("resp_1", "item_1", REPORT))
    assert (speak.unit, speak.speak, speak.response_id, speak.server_ms, speak.kind) == (4, True, "resp_1", 21.5, None)
    backchannel = read(wire.ResponseSpeak("resp_1", "item_1", wire.UnitReport(5, 9.0, kind="backchannel")))
    assert (backchannel.unit, backchannel.speak, backchannel.server_ms, backchannel.kind) == (5, True, 9.0,
                                                                                              "backchannel")
    assert read(wire.ResponseCreated("resp_1")).response_id == "resp_1"
    text, transcript = read(wire.TextDelta("resp_1", "item_1", "Hi")), read(wire.TranscriptDelta("resp_1", "i", "Hi"))
    assert (text.text, text.transcript, transcript.text, transcript.transcript) == ("Hi", False, "Hi", True)
    audio = read(wire.AudioDelta.of_samples("resp_1", "item_1", np.linspace(-0.5, 0.5, 2205, dtype=np.float32),
                                            22_050))
    assert (audio.samples, audio.sample_rate_hz, round(audio.audio_s, 3), len(audio.sha256)) == (2205, 22_050, 0.1, 8)
    done = read(wire.FunctionCallArgumentsDone.of_call("resp_1", CALL))
    assert (done.response_id, done.call_id, done.name, done.arguments) == (
        "resp_1", "call_1", "track_order", '{"order_id": "A12"}')
    assert (read(wire.ResponseDone("resp_1")).response_id, read(wire.ResponseDone("resp_1")).status) == (
        "resp_1", "completed")
    error = read(wire.ErrorEvent("resource_exhausted", "full"))
    assert (error.code, error.message) == ("resource_exhausted", "full")
    assert read(wire.SessionClosed("sess_1", "ended")).reason == "ended"
    assert isinstance(read(wire.HeartbeatAck("sess_1")), wire.HeartbeatAck)
    assert isinstance(read(wire.OutputItemAdded.of_call("resp_1", CALL)), wire.OutputItemAdded)


def test_what_other_servers_send_reads_as_the_client_needs_it():
    """OpenAI GA's ids under ``response.id`` only, no ``ticktock`` key, no rate on an audio delta."""
    done = wire.parse_server_event('{"type": "response.done", "response": {"id": "resp_9", "status": "cancelled"}}')
    assert (done.response_id, done.status) == ("resp_9", "cancelled")
    assert wire.parse_server_event('{"type": "response.done"}').status is None
    assert wire.parse_server_event('{"type": "response.created", "response": {"id": "resp_9"}}').response_id == "resp_9"
    listen = wire.parse_server_event('{"type": "response.listen", "response": {"status": "listening"}}')
    assert (listen.unit, listen.server_ms, listen.kind) == (None, None, None)
    speak = wire.parse_server_event('{"type": "response.speak", "ticktock": {"unit": 1, "kind": "speak"}}')
    assert (speak.unit, speak.kind) == (1, None)  # only a backchannel is a kind the decisions cannot say
    audio = wire.parse_server_event('{"type": "response.output_audio.delta", "delta": "AAAAQA=="}')
    assert (audio.samples, audio.sample_rate_hz, audio.rate_hz, audio.sha256) == (2, None, 24_000, "d88c86f1")
    created = wire.parse_server_event('{"type": "session.created", "session": {"model": "gpt-realtime"}}')
    assert (created.model, created.served_model) == ("gpt-realtime", None)


def served_unit(index: int, decision: str, kind: str | None = None, spoken: str = ""):
    from ticktock.serve.session import ServedUnit

    return ServedUnit(index, decision, kind or decision, spoken, spoken, 12.5, 10.0, False, None, 0)


def the_server_s_frames(mode: str) -> list[str]:
    """The frames a connection of ``ticktock serve`` queues through a session: created, a listen unit, a spoken unit
    with its speech, a tool call, a backchannel, a listen, and the session's end with an engine error."""
    from ticktock.serve.server import Connection

    async def drive() -> list[str]:
        connection = Connection(None, "sess_1", "embedded", asyncio.get_running_loop(), "ar", mode, "beeper")
        connection.announce()
        connection.on_unit(served_unit(0, "listen"))
        connection.on_unit(served_unit(1, "speak", spoken=" Hi"))
        connection.on_speech(1, np.zeros(9_600, dtype=np.float32), 24_000)
        connection.on_call("call_1", {"function": "track_order", "args": {"order_id": "A12"}})
        connection.on_unit(served_unit(2, "speak", kind="backchannel", spoken=" mm"))
        connection.on_unit(served_unit(3, "listen"))
        connection.on_end(RuntimeError("boom"))
        frames = []
        while (frame := connection.outgoing.get_nowait()) is not None:
            if isinstance(frame, str):  # (not a unit's "events written" mark: an int)
                frames.append(frame)
        return frames

    return asyncio.run(drive())


@pytest.mark.parametrize("mode", ["duplex", "turns"])
def test_every_event_the_server_sends_is_read_by_the_client_as_what_it_is(mode):
    frames = the_server_s_frames(mode)
    events = [wire.parse_server_event(frame) for frame in frames]
    assert not any(isinstance(event, wire.Other) for event in events)
    for frame, event in zip(frames, events):
        assert event.to_json() == json.loads(frame), event.type  # the class renders exactly what was sent
    types = [event.type for event in events]
    decisions = [(e.unit, e.speak, e.kind, e.server_ms) for e in events if isinstance(e, wire.UnitDecision)]
    if mode == "duplex":
        assert decisions == [(0, False, None, 12.5), (1, True, None, 12.5), (2, True, "backchannel", 12.5),
                             (3, False, None, 12.5)]
    else:
        assert decisions == [] and "response.listen" not in types
    assert types[0] == "session.created" and types[-2:] == ["error", "session.closed"]
    for needed in ("response.created", "response.output_text.delta", "response.output_audio_transcript.delta",
                   "response.output_audio.delta", "response.output_item.added",
                   "response.function_call_arguments.delta", "response.function_call_arguments.done",
                   "response.output_item.done", "response.done"):
        assert needed in types, needed
    audio = [event for event in events if isinstance(event, wire.AudioDelta)]
    assert sum(delta.samples for delta in audio) == 9_600 and {delta.rate_hz for delta in audio} == {24_000}
    call = next(event for event in events if isinstance(event, wire.FunctionCallArgumentsDone))
    assert (call.call_id, call.name, json.loads(call.arguments)) == ("call_1", "track_order", {"order_id": "A12"})
    assert events[0].served_decoder == "ar" and events[-1].reason == "engine_error"
    assert events[-2].code == "engine_error" and "boom" in events[-2].message


def test_what_the_client_sends_the_server_parses():
    from ticktock.endpoints.openai_realtime import OpenAIRealtime
    from ticktock.endpoints.vllm_omni_duplex import VllmOmniDuplex

    duplex, turns = VllmOmniDuplex(), OpenAIRealtime()
    samples = np.array([0.0, 0.25, -0.5], dtype=np.float32)
    append = wire.parse_client_event(json.dumps(duplex.frame(samples)[0]))
    assert wire.decode_audio(append.audio, wire.DEFAULT_INPUT_FORMAT).tolist() == pytest.approx(
        [0.0, 0.25, -0.5], abs=1e-4)
    update = wire.parse_client_event(json.dumps(duplex.opening(
        "Be brief.", [{"name": "track_order", "description": "", "parameters": {"type": "object"}}])[0]))
    assert update.instructions == "Be brief." and update.input_rate_hz == 16_000
    assert update.tools[0]["name"] == "track_order"
    answer = wire.parse_client_event(json.dumps(duplex.answer("call_1", '{"ok": true}')[0]))
    assert (answer.call_id, answer.output) == ("call_1", '{"ok": true}')
    assert wire.parse_client_event(json.dumps(duplex.played(1234.56, None)[0])).played_ms == 1234.6
    commit, create = (wire.parse_client_event(json.dumps(event)) for event in turns.turn_ended())
    assert isinstance(commit, wire.AudioCommit) and isinstance(create, wire.ResponseCreate)
    assert isinstance(wire.parse_client_event(json.dumps(duplex.closing()[0])), wire.SessionClose)


def test_the_client_s_events_are_the_json_it_sent_before():
    """The rendering the real servers (vLLM-Omni, OpenAI GA) are tested against: no key added or lost."""
    assert wire.AudioCommit(event_id="e").to_json() == {"type": "input_audio_buffer.commit", "event_id": "e"}
    assert wire.SessionClose(event_id="e").to_json() == {"type": "session.close", "event_id": "e"}
    assert wire.PlaybackAck(250.0, event_id="e").to_json() == {"type": "playback.ack", "event_id": "e",
                                                              "played_ms": 250.0}
    assert wire.FunctionCallOutput("c", "{}", event_id="e").to_json() == {
        "type": "conversation.item.create", "event_id": "e",
        "item": {"type": "function_call_output", "call_id": "c", "output": "{}"}}
    session = wire.SessionUpdate.declaring(None, input_rate_hz=16_000).session
    assert session == {"type": "realtime", "output_modalities": ["audio"],
                       "audio": {"input": {"format": {"type": "audio/pcm", "rate": 16_000}}},
                       "input_audio_format": "pcm16", "sample_rate_hz": 16_000, "tools": []}


@pytest.mark.parametrize("frame, message", [
    ("not json", "frame is not JSON"),
    ("[1, 2]", "frame is a JSON array, not an object"),
    ('{"event_id": "e1"}', "server event has no 'type'"),
    ('{"type": 3}', "server event's 'type' is not a string"),
    ('{"type": "response.speak", "ticktock": {"unit": -1}}', "'ticktock.unit' must be an integer from 0"),
    ('{"type": "response.speak", "ticktock": {"unit": "three"}}', "'ticktock.unit' must be an integer, not string"),
    ('{"type": "response.listen", "ticktock": {"post_audio_ms": "5"}}', "'ticktock.post_audio_ms' must be a number"),
    ('{"type": "response.output_audio.delta", "delta": "%%%"}', "response.output_audio.delta: 'delta' is not base64"),
    ('{"type": "response.output_audio.delta", "delta": "AA=="}', "'delta' is 1 bytes, not whole PCM16"),
    ('{"type": "response.output_audio.delta", "delta": "AAAAAA==", "sample_rate_hz": 5}', "'sample_rate_hz' is 5 Hz"),
    ('{"type": "response.output_text.delta", "delta": 7}', "'delta' must be a string, not int"),
    ('{"type": "response.function_call_arguments.done", "name": "f"}', "'call_id' is missing"),
    ('{"type": "session.created", "session": {"ticktock": {"decoder": 3}}}', "'session.ticktock.decoder' must be"),
    ('{"type": "error", "error": "boom"}', "error: 'error' must be an object, not string"),
])
def test_a_server_event_the_client_cannot_use_is_one_line_naming_the_field(frame, message):
    with pytest.raises(ProtocolError, match=message.replace("(", r"\(").replace("[", r"\[")):
        wire.parse_server_event(frame)


def test_each_units_events_are_followed_by_its_mark_and_the_sender_records_it_written():
    from ticktock.serve.server import Connection

    async def drive() -> tuple[list, int]:
        connection = Connection(None, "sess_1", "embedded", asyncio.get_running_loop(), "ar")
        connection.on_unit(served_unit(0, "listen"))
        connection.on_unit(served_unit(1, "speak", spoken=" Hi"))
        queued = []
        while not connection.outgoing.empty():
            queued.append(connection.outgoing.get_nowait())
        connection.wrote_unit(1)
        return queued, connection.written_unit

    queued, written = asyncio.run(drive())
    kinds = [json.loads(q)["type"] if isinstance(q, str) else q for q in queued]
    assert kinds[:2] == ["response.listen", 0] and kinds[-1] == 1 and "response.speak" in kinds[2:-1]
    assert written == 1
