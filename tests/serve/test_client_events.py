"""The client's side of the wire codec reads back every event ``ticktock serve`` builds (one vocabulary, both
directions), and refuses what it cannot use in one line naming the event and the field."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ticktock.serve import client_events as client
from ticktock.serve import protocol
from ticktock.serve.protocol import ProtocolError


def read(event: dict):
    return client.parse_server_event(json.dumps(event))


def test_every_server_event_reads_back_as_what_it_says():
    report = protocol.UnitReport(unit=4, post_audio_ms=21.5, draft_accepted=True)
    call = protocol.FunctionCall("item_1", "call_1", "track_order", '{"order_id": "A12"}')
    settings = protocol.SessionSettings(model="embedded")
    session = {**protocol.session_object("sess_1", settings), "ticktock": {"model": "embedded", "decoder": "ar"}}
    samples = np.linspace(-0.5, 0.5, 2205, dtype=np.float32)
    assert read(protocol.session_created(session)) == client.SessionStarted("embedded", "embedded", "ar")
    assert read(protocol.response_listen(protocol.UnitReport(unit=2))) == client.UnitDecided(2, False)
    assert read(protocol.response_listen(report, "resp_1")) == client.UnitDecided(4, False, "resp_1", 21.5)
    assert read(protocol.response_speak("resp_1", "item_1", report)) == client.UnitDecided(4, True, "resp_1", 21.5)
    backchannel = protocol.UnitReport(unit=5, post_audio_ms=9.0, kind="backchannel")
    assert read(protocol.response_speak("resp_1", "item_1", backchannel)) == client.UnitDecided(
        5, True, "resp_1", 9.0, "backchannel")
    assert read(protocol.response_created("resp_1")) == client.ReplyStarted("resp_1")
    assert read(protocol.text_delta("resp_1", "item_1", "Hi")) == client.TextDelta("resp_1", "Hi", False)
    assert read(protocol.transcript_delta("resp_1", "item_1", "Hi")) == client.TextDelta("resp_1", "Hi", True)
    audio = read(protocol.audio_delta("resp_1", "item_1", samples, 22_050))
    assert (audio.samples, audio.sample_rate_hz, round(audio.audio_s, 3)) == (2205, 22_050, 0.1)
    assert read(protocol.function_call_arguments_done("resp_1", call)) == client.CallMade(
        "resp_1", "call_1", "track_order", '{"order_id": "A12"}')
    assert read(protocol.response_done("resp_1")) == client.ReplyDone("resp_1", "completed")
    assert read(protocol.error_event("resource_exhausted", "full")) == client.ServerError("resource_exhausted", "full")
    assert read(protocol.session_closed("sess_1", "ended")) == client.SessionEnded("ended")
    assert read(protocol.heartbeat_ack("sess_1")) == client.Other("session.heartbeat_ack")
    assert read(protocol.output_item_added("resp_1", call)) == client.Other("response.output_item.added")


def test_what_the_client_sends_the_server_parses():
    samples = np.array([0.0, 0.25, -0.5], dtype=np.float32)
    append = protocol.parse_client_event(json.dumps(client.append(samples)))
    assert protocol.decode_audio(append.audio, protocol.DEFAULT_INPUT_FORMAT).tolist() == pytest.approx(
        [0.0, 0.25, -0.5], abs=1e-4)
    update = protocol.parse_client_event(json.dumps(client.session_update(
        "Be brief.", [{"name": "track_order", "description": "", "parameters": {"type": "object"}}])))
    assert update.instructions == "Be brief." and update.input_rate_hz == 16_000
    assert update.tools[0]["name"] == "track_order"
    answer = protocol.parse_client_event(json.dumps(client.function_call_output("call_1", '{"ok": true}')))
    assert (answer.call_id, answer.output) == ("call_1", '{"ok": true}')
    assert protocol.parse_client_event(json.dumps(client.playback_ack(1234.56))).played_ms == 1234.6
    assert isinstance(protocol.parse_client_event(json.dumps(client.commit())), protocol.AudioCommit)
    assert isinstance(protocol.parse_client_event(json.dumps(client.response_create())), protocol.ResponseCreate)
    assert isinstance(protocol.parse_client_event(json.dumps(client.session_close())), protocol.SessionClose)


@pytest.mark.parametrize("frame, message", [
    ("not json", "frame is not JSON"),
    ("[1, 2]", "frame is a JSON array, not an object"),
    ('{"event_id": "e1"}', "server event has no 'type'"),
    ('{"type": "response.speak", "ticktock": {"unit": -1}}', "'ticktock.unit' must be an integer from 0"),
    ('{"type": "response.output_audio.delta", "delta": "%%%"}', "response.output_audio.delta: 'delta' is not base64"),
    ('{"type": "response.output_audio.delta", "delta": "AA=="}', "'delta' is 1 bytes, not whole PCM16"),
    ('{"type": "response.output_audio.delta", "delta": "AAAAAA==", "sample_rate_hz": 5}', "'sample_rate_hz' is 5 Hz"),
    ('{"type": "response.output_text.delta", "delta": 7}', "'delta' must be a string, not int"),
    ('{"type": "response.function_call_arguments.done", "name": "f"}', "'call_id' is missing"),
])
def test_a_server_event_the_client_cannot_use_is_one_line_naming_the_field(frame, message):
    with pytest.raises(ProtocolError, match=message.replace("(", r"\(").replace("[", r"\[")):
        client.parse_server_event(frame)
