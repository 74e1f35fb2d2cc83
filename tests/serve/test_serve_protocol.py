"""The wire codec against clients nobody here wrote: every server event the builders make is read by vLLM-Omni's
real ``DuplexClient`` as the typed event it should be, and a whole session's events go through its real reader and
response demultiplexing; every client event that client sends in a session parses, its audio decoding to the PCM
that was streamed; the OpenAI SDK's typed client events parse and our server events validate against its models;
each kind of bad input is a ``ProtocolError`` with a code and a one-line message."""

from __future__ import annotations

import asyncio
import base64
import json
import os

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from ticktock import wire as p
from ticktock.sessions.audio import SAMPLE_RATE

from vllm_client import duplex_module, loopback

SESSION_ID = "sess_test"
TALKER_RATE = 24_000


@pytest.fixture(scope="module")
def duplex():
    return duplex_module()


def wire(event: p.WireEvent | dict) -> dict:
    """The event as it crosses the socket: one JSON text frame, read back."""
    return json.loads(json.dumps(event if isinstance(event, dict) else event.to_json()))


def tone(seconds: float, rate: int, hz: float = 220.0) -> np.ndarray:
    t = np.arange(int(seconds * rate)) / rate
    return (0.3 * np.sin(2 * np.pi * hz * t)).astype(np.float32)


def pcm16_bytes(samples: np.ndarray) -> bytes:
    return base64.b64decode(p.encode_pcm16(samples))


# ---------------------------------------------------------------------------------------------------------------
# (a) server events, read by the real client


def test_each_server_event_is_the_typed_event_the_real_client_expects(duplex):
    speech = tone(0.1, TALKER_RATE)
    report = p.UnitReport(unit=3, post_audio_ms=12.5, draft_accepted=True, deadline_miss=False)
    cases = [
        (p.SessionCreated(p.session_object(SESSION_ID, p.SessionSettings(model="m"))), duplex.SessionCreated),
        (p.SessionUpdated(p.session_object(SESSION_ID, p.SessionSettings())), duplex.SessionUpdated),
        (p.ResponseListen(report), duplex.ListenDecision),
        (p.ResponseSpeak("resp_1", "item_1", report), duplex.SpeakDecision),
        (p.ResponseCreated("resp_1"), duplex.ResponseCreated),
        (p.TextDelta("resp_1", "item_1", "Hello"), duplex.TextDelta),
        (p.TranscriptDelta("resp_1", "item_1", "Hello"), duplex.TranscriptDelta),
        (p.AudioDelta.of_samples("resp_1", "item_1", speech, TALKER_RATE), duplex.AudioDelta),
        (p.ResponseDone("resp_1"), duplex.ResponseDone),
        (p.ErrorEvent("bad_audio", "input_audio_buffer.append: 'audio' is not base64", "evt_9"), duplex.ErrorEvent),
        (p.SessionClosed(SESSION_ID, "client_close"), duplex.SessionClosed),
    ]
    for event, expected in cases:
        typed = duplex.wrap_event(wire(event))
        assert type(typed) is expected, event.type
        assert typed.event_id == event.event_id
    assert duplex.wrap_event(wire(cases[0][0])).session["session_id"] == SESSION_ID
    for index in (3, 4, 5, 6, 7, 8):
        assert duplex.wrap_event(wire(cases[index][0])).response_id == "resp_1"
    assert duplex.wrap_event(wire(cases[2][0])).response_id is None  # a standalone listen beat
    assert duplex.wrap_event(wire(p.ResponseListen(report, "resp_1"))).response_id == "resp_1"
    assert duplex.wrap_event(wire(cases[5][0])).text == "Hello"
    assert duplex.wrap_event(wire(cases[6][0])).text == "Hello"
    audio = duplex.wrap_event(wire(cases[7][0]))
    assert audio.audio == pcm16_bytes(speech) and audio.sample_rate_hz == TALKER_RATE
    error = duplex.wrap_event(wire(cases[9][0]))
    assert (error.code, error.message, error.related_event_id) == (
        "bad_audio", "input_audio_buffer.append: 'audio' is not base64", "evt_9")
    heartbeat = duplex.wrap_event(wire(p.HeartbeatAck(SESSION_ID)))  # vLLM-Omni's answer, untyped by its client
    assert heartbeat.type == "session.heartbeat_ack" and heartbeat.session_id == SESSION_ID
    assert wire(cases[3][0])["ticktock"] == {"unit": 3, "post_audio_ms": 12.5, "draft_accepted": True,
                                            "deadline_miss": False}


def test_function_call_events_follow_the_ga_vocabulary(duplex):
    call = p.FunctionCall("item_call", "call_1", "get_weather", '{"city": "Paris"}')
    added = wire(p.OutputItemAdded.of_call("resp_2", call))
    delta = wire(p.FunctionCallArgumentsDelta("resp_2", call.item_id, call.call_id, '{"city": '))
    done = wire(p.FunctionCallArgumentsDone.of_call("resp_2", call))
    item_done = wire(p.OutputItemDone.of_call("resp_2", call))
    assert added["item"]["type"] == "function_call" and added["item"]["arguments"] == ""
    assert (delta["call_id"], delta["item_id"], delta["delta"]) == ("call_1", "item_call", '{"city": ')
    assert (done["name"], done["arguments"]) == ("get_weather", '{"city": "Paris"}')
    assert item_done["item"]["status"] == "completed" and item_done["item"]["call_id"] == "call_1"
    for event in (added, delta, done, item_done):  # not duplex vocabulary: the client passes them on untyped
        assert type(duplex.wrap_event(event)) is duplex.DuplexEvent
        assert duplex.wrap_event(event).response_id == "resp_2"


class FakeServer:
    """The server side of the loopback: every client frame parsed with ``parse_client_event`` and kept; the
    handshake, heartbeats and the close answered as the server will answer them."""

    def __init__(self) -> None:
        self.frames: list[str] = []
        self.events: list[p.ClientEvent] = []
        self.settings = p.SessionSettings()

    def answer(self, frame: str) -> list[dict]:
        self.frames.append(frame)
        event = p.parse_client_event(frame)
        self.events.append(event)
        if isinstance(event, p.SessionUpdate):
            self.settings = self.settings.updated(event)
            return [p.SessionCreated(p.session_object(SESSION_ID, self.settings)).to_json()]
        if isinstance(event, p.Heartbeat):
            return [p.HeartbeatAck(SESSION_ID).to_json()]
        if isinstance(event, p.SessionClose):
            return [p.SessionClosed(SESSION_ID, event.reason).to_json()]
        return []

    def of(self, kind: type) -> list:
        return [event for event in self.events if isinstance(event, kind)]

    def audio(self) -> np.ndarray:
        pieces = [p.decode_audio(e.audio, e.audio_format(self.settings.input_audio), e.event_id)
                  for e in self.of(p.AudioAppend)]
        return np.concatenate(pieces)


def speak_unit(unit: int, response_id: str, speech: np.ndarray, words: list[str]) -> list[dict]:
    """One spoken unit's events, in the order the server sends them."""
    item = f"item_{unit}"
    events = [p.ResponseCreated(response_id), p.ResponseSpeak(response_id, item, p.UnitReport(unit=unit))]
    events += [p.TextDelta(response_id, item, word) for word in words]
    events += [p.TranscriptDelta(response_id, item, word) for word in words]
    events += [p.AudioDelta.of_samples(response_id, item, half, TALKER_RATE) for half in np.array_split(speech, 2)]
    return [wire(event) for event in [*events, p.ResponseDone(response_id)]]


def one_response_over_two_units(speech: np.ndarray) -> list[dict]:
    """A spoken turn over units 1 and 2, ended by unit 3's listen that carries its response id."""
    first, second = np.array_split(speech, 2)
    events = [p.ResponseCreated("resp_1")]
    for unit, words, half in ((1, ["Hel"], first), (2, ["lo"], second)):
        item = f"item_{unit}"
        events += [p.ResponseSpeak("resp_1", item, p.UnitReport(unit=unit)), p.TextDelta("resp_1", item, words[0]),
                   p.TranscriptDelta("resp_1", item, words[0]),
                   p.AudioDelta.of_samples("resp_1", item, half, TALKER_RATE)]
    return [wire(event) for event in [*events, p.ResponseListen(p.UnitReport(unit=3), "resp_1")]]


SPOKEN = {
    "one unit, ended by response.done": lambda speech: speak_unit(1, "resp_1", speech, ["Hel", "lo"]),
    "two units, ended by a listen": one_response_over_two_units,
}


async def hold_session(duplex, server: FakeServer, config, pcm: bytes,
                       spoken=SPOKEN["one unit, ended by response.done"]):
    """A session of the real ``DuplexClient`` over the loopback: handshake, audio streamed, commit, a listen unit, a
    spoken response (its audio played and acked), one more listen, cancel, clear, close."""
    transport = loopback(duplex, server.answer)

    async def connect(url: str):
        assert "duplex=1" in url
        return transport

    client = duplex.DuplexClient("ws://loopback", model="ticktock-embedded", config=config, connect=connect,
                                 heartbeat_interval_s=0.01, reconnect=None)
    handles = []
    async with client:
        assert client.session_id == SESSION_ID
        await client.stream_pcm(pcm, realtime=False)
        await client.commit()
        transport.push(p.ResponseListen(p.UnitReport(unit=0, post_audio_ms=3.0)).to_json())
        for seq, event in enumerate(spoken(tone(0.5, TALKER_RATE)), start=1):
            transport.push({**event, "server_event_seq": seq})  # the client acks a stamped event
        transport.push(p.ResponseListen(p.UnitReport(unit=4)).to_json())
        async for handle in client.responses():
            chunks = [chunk async for chunk in handle.audio()]
            if chunks:
                await client.ack_playback(handle.played_ms, response_id=handle.response_id)
            handles.append((handle, b"".join(chunks)))
            if len(handles) == 3:
                break
        await asyncio.sleep(0.05)  # a few heartbeats
        await client.cancel_response("resp_1")
        await client.clear_input()
    return handles, transport


@pytest.mark.parametrize("spoken", list(SPOKEN))
def test_a_whole_session_through_the_real_client(duplex, spoken):
    server = FakeServer()
    pcm = pcm16_bytes(tone(1.3, SAMPLE_RATE))
    handles, transport = asyncio.run(hold_session(duplex, server, duplex.SessionConfig(), pcm, SPOKEN[spoken]))

    decisions = [(handle.decision, handle.response_id) for handle, _ in handles]
    assert decisions == [("listen", None), ("speak", "resp_1"), ("listen", None)]
    spoken_handle, audio = handles[1]
    assert spoken_handle.text == "Hello" and spoken_handle.transcript == "Hello"
    assert audio == pcm16_bytes(tone(0.5, TALKER_RATE))
    assert spoken_handle.played_ms == pytest.approx(500.0)
    assert transport.closed

    # (b) every client event it sent parsed, and the streamed audio decodes to the PCM that was streamed
    kinds = {type(event) for event in server.events}
    assert {p.SessionUpdate, p.AudioAppend, p.AudioCommit, p.PlaybackAck, p.Heartbeat, p.EventAck, p.ResponseCancel,
            p.AudioClear, p.SessionClose} <= kinds
    expected = np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768.0
    np.testing.assert_array_equal(server.audio(), expected)
    assert server.of(p.AudioCommit)[0].final is True
    assert server.of(p.PlaybackAck)[0].played_ms == 500 and server.of(p.PlaybackAck)[0].response_id == "resp_1"
    stamped = len(SPOKEN[spoken](tone(0.5, TALKER_RATE)))
    assert [ack.server_event_seq for ack in server.of(p.EventAck)] == list(range(1, stamped + 1))
    assert server.of(p.ResponseCancel)[0].response_id == "resp_1"
    update = server.of(p.SessionUpdate)[0]
    assert update.model == "ticktock-embedded" and update.input_rate_hz == SAMPLE_RATE
    assert update.output_rate_hz == TALKER_RATE and update.session["extra_body"] == {"auto_response": True}


@pytest.mark.parametrize("encoding, rate", [("pcm16", 24_000), ("pcm_f32le", 16_000), ("pcm_f32le", 48_000)])
def test_the_client_s_other_input_formats_decode_to_16_khz(duplex, encoding, rate):
    server = FakeServer()
    samples = tone(1.0, rate)
    pcm = pcm16_bytes(samples) if encoding == "pcm16" else samples.astype("<f4").tobytes()
    config = duplex.SessionConfig(input_audio=duplex.AudioFormat(encoding, rate))
    asyncio.run(hold_session(duplex, server, config, pcm))

    assert server.settings.input_audio == p.AudioFormat(encoding, rate)
    assert all((event.encoding, event.sample_rate_hz) == (encoding, rate) for event in server.of(p.AudioAppend))
    heard = server.audio()
    assert abs(len(heard) - SAMPLE_RATE) <= 8  # each 200 ms append resampled on its own
    reference = tone(len(heard) / SAMPLE_RATE, SAMPLE_RATE)[: len(heard)]
    middle = slice(100, len(heard) - 100)
    assert np.abs(heard[middle] - reference[middle]).max() < 0.05


# ---------------------------------------------------------------------------------------------------------------
# (c) the OpenAI SDK's client events and server event models


@pytest.fixture(scope="module")
def realtime():
    pytest.importorskip("openai", reason="the OpenAI SDK is in the serve-test extra (README's test setup)")
    import openai.types.realtime as realtime

    return realtime


def sdk_frame(event) -> str:
    """A typed client event serialized as the SDK's connection sends it."""
    return event.to_json(use_api_names=True, exclude_unset=True)


def test_the_openai_sdk_s_client_events_parse(realtime):
    tool = realtime.RealtimeFunctionTool(type="function", name="get_weather", description="Weather in a city",
                                         parameters={"type": "object", "properties": {"city": {"type": "string"}}})
    session = realtime.RealtimeSessionCreateRequest(
        type="realtime", model="ticktock-embedded", output_modalities=["audio"], instructions="Be brief.",
        audio={"input": {"format": {"type": "audio/pcm", "rate": 24000}},
               "output": {"format": {"type": "audio/pcm", "rate": 24000}, "voice": "alloy"}},
        tools=[tool],
    )
    update = p.parse_client_event(sdk_frame(realtime.SessionUpdateEvent(type="session.update", session=session,
                                                                        event_id="evt_1")))
    assert isinstance(update, p.SessionUpdate) and update.event_id == "evt_1"
    assert (update.model, update.modalities, update.instructions, update.voice) == (
        "ticktock-embedded", ("audio",), "Be brief.", "alloy")
    assert (update.input_encoding, update.input_rate_hz, update.output_rate_hz) == ("pcm16", 24000, 24000)
    assert [t["name"] for t in update.tools] == ["get_weather"]
    settings = p.SessionSettings().updated(update)

    samples = tone(0.2, 24_000)
    append = p.parse_client_event(sdk_frame(realtime.InputAudioBufferAppendEvent(
        type="input_audio_buffer.append", audio=p.encode_pcm16(samples))))
    assert isinstance(append, p.AudioAppend) and (append.encoding, append.sample_rate_hz) == (None, None)
    assert abs(len(p.decode_audio(append.audio, append.audio_format(settings.input_audio))) - 3200) <= 2

    output = realtime.RealtimeConversationItemFunctionCallOutput(type="function_call_output", call_id="call_1",
                                                                 output='{"temperature_c": 21}')
    answer = p.parse_client_event(sdk_frame(realtime.ConversationItemCreateEvent(type="conversation.item.create",
                                                                                 item=output)))
    assert answer == p.FunctionCallOutput("call_1", '{"temperature_c": 21}', event_id=None)
    others = [
        (realtime.InputAudioBufferCommitEvent(type="input_audio_buffer.commit"), p.AudioCommit),
        (realtime.InputAudioBufferClearEvent(type="input_audio_buffer.clear"), p.AudioClear),
        (realtime.ResponseCreateEvent(type="response.create"), p.ResponseCreate),
        (realtime.ResponseCancelEvent(type="response.cancel", response_id="resp_1"), p.ResponseCancel),
    ]
    for event, kind in others:
        assert isinstance(p.parse_client_event(sdk_frame(event)), kind)


def test_our_server_events_validate_against_the_sdk_s_models(realtime):
    call = p.FunctionCall("item_call", "call_1", "get_weather", '{"city": "Paris"}')
    settings = p.SessionSettings(model="ticktock-embedded", output_rate_hz=TALKER_RATE, instructions="Be brief.")
    cases = [
        (p.SessionCreated(p.session_object(SESSION_ID, settings)), realtime.SessionCreatedEvent),
        (p.SessionUpdated(p.session_object(SESSION_ID, p.SessionSettings())), realtime.SessionUpdatedEvent),
        (p.ResponseCreated("resp_1"), realtime.ResponseCreatedEvent),
        (p.TextDelta("resp_1", "item_1", "Hi"), realtime.ResponseTextDeltaEvent),
        (p.TranscriptDelta("resp_1", "item_1", "Hi"), realtime.ResponseAudioTranscriptDeltaEvent),
        (p.AudioDelta.of_samples("resp_1", "item_1", tone(0.05, TALKER_RATE), TALKER_RATE),
         realtime.ResponseAudioDeltaEvent),
        (p.OutputItemAdded.of_call("resp_1", call), realtime.ResponseOutputItemAddedEvent),
        (p.FunctionCallArgumentsDelta("resp_1", call.item_id, call.call_id, "{"),
         realtime.ResponseFunctionCallArgumentsDeltaEvent),
        (p.FunctionCallArgumentsDone.of_call("resp_1", call), realtime.ResponseFunctionCallArgumentsDoneEvent),
        (p.OutputItemDone.of_call("resp_1", call), realtime.ResponseOutputItemDoneEvent),
        (p.ResponseDone("resp_1", output=(call.item("completed"),)), realtime.ResponseDoneEvent),
        (p.ErrorEvent("unknown_event", "unknown event type 'dance'", "evt_2"), realtime.RealtimeErrorEvent),
    ]
    for event, model in cases:
        model.model_validate(wire(event))
    done = realtime.ResponseDoneEvent.model_validate(wire(cases[10][0]))
    assert done.response.output[0].call_id == "call_1" and done.response.status == "completed"
    assert realtime.RealtimeErrorEvent.model_validate(wire(cases[11][0])).error.code == "unknown_event"


# ---------------------------------------------------------------------------------------------------------------
# (d) bad input, each its own case


def append(audio: str, **declared) -> str:
    return json.dumps({"type": "input_audio_buffer.append", "event_id": "evt_bad", "audio": audio, **declared})


def decoded(frame: str, audio_format: p.AudioFormat = p.DEFAULT_INPUT_FORMAT) -> np.ndarray:
    event = p.parse_client_event(frame)
    return p.decode_audio(event.audio, event.audio_format(audio_format), event.event_id)


BAD_INPUT = {
    "not JSON": (lambda: p.parse_client_event("{'type': 'session.update'"), "invalid_json", "not JSON"),
    "not UTF-8": (lambda: p.parse_client_event(b"\xff\xfe"), "invalid_json", "UTF-8"),
    "nested too deeply": (lambda: p.parse_client_event("[" * 100_000), "invalid_json", "too deeply"),
    "not an object": (lambda: p.parse_client_event("[1, 2]"), "bad_event", "not an object"),
    "no type": (lambda: p.parse_client_event('{"audio": ""}'), "bad_event", "'type'"),
    "type not a string": (lambda: p.parse_client_event('{"type": 3}'), "bad_event", "'type' must be a string"),
    "unknown type": (lambda: p.parse_client_event('{"type": "dance", "event_id": "evt_bad"}'), "unknown_event",
                     "'dance'"),
    "not served": (lambda: p.parse_client_event('{"type": "barge_in"}'), "unknown_event", "not served"),
    "resume": (lambda: p.parse_client_event('{"type": "session.resume"}'), "unsupported_session_resume",
               "session.resume"),
    "audio not a string": (lambda: p.parse_client_event('{"type": "input_audio_buffer.append", "audio": 5}'),
                           "bad_event", "'audio' must be a string"),
    "audio missing": (lambda: p.parse_client_event('{"type": "input_audio_buffer.append"}'), "bad_event",
                      "'audio' is missing"),
    "audio not base64": (lambda: decoded(append("this is not base64!")), "bad_audio", "not base64"),
    "odd byte count": (lambda: decoded(append(base64.b64encode(b"\x00\x01\x02").decode())), "bad_audio",
                       "3 bytes"),
    "f32 not whole samples": (lambda: decoded(append("AAAAAAA=", format="pcm_f32le")), "bad_audio", "5 bytes"),
    "rate 0 on an append": (lambda: decoded(append("AAA=", sample_rate_hz=0)), "unsupported_audio_format",
                            "sample_rate_hz"),
    "rate 10**9 on an append": (lambda: decoded(append("AAA=", sample_rate_hz=10**9)), "unsupported_audio_format",
                                "1000000000 Hz"),
    "rate 0 in the session": (lambda: p.parse_client_event(json.dumps(
        {"type": "session.update", "session": {"sample_rate_hz": 0}})), "unsupported_audio_format", "0 Hz"),
    "rate 10**9 in the session": (lambda: p.parse_client_event(json.dumps(
        {"type": "session.update", "session": {"audio": {"input": {"format": {"type": "audio/pcm", "rate": 10**9}}}}})),
        "unsupported_audio_format", "session.audio.input.format.rate"),
    "rate 0 to decode_audio": (lambda: p.decode_audio("AAA=", p.AudioFormat("pcm16", 0)), "unsupported_audio_format",
                               "0 Hz"),
    "rate 10**9 to decode_audio": (lambda: p.decode_audio("AAA=", p.AudioFormat("pcm16", 10**9)),
                                   "unsupported_audio_format", "1000000000 Hz"),
    "g711": (lambda: decoded(append("AAA=", format="g711_ulaw")), "unsupported_audio_format", "g711_ulaw"),
    "10 MB in one frame": (lambda: decoded(append("A" * 10_000_000)), "event_too_large", str(p.MAX_FRAME_BYTES)),
    "10 MB to decode_audio": (lambda: p.decode_audio("A" * 10_000_000, p.DEFAULT_INPUT_FORMAT), "event_too_large",
                              "MAX_APPEND_BYTES"),
    "f32 NaN": (lambda: decoded(append(base64.b64encode(np.array([0.1, np.nan], "<f4").tobytes()).decode(),
                                       format="pcm_f32le")), "bad_audio", "NaN"),
    "f32 infinity": (lambda: p.decode_audio(base64.b64encode(np.array([np.inf], "<f4").tobytes()).decode(),
                                            p.AudioFormat("pcm_f32le", 16_000)), "bad_audio", "infinity"),
    "video frames": (lambda: p.parse_client_event(append("", video_frames=["abc"])), "invalid_input_modality",
                     "video_frames"),
    "event_id not a string": (lambda: p.parse_client_event('{"type": "session.heartbeat", "event_id": 1}'),
                              "bad_event", "event_id"),
    "session not an object": (lambda: p.parse_client_event('{"type": "session.update", "session": []}'),
                              "bad_event", "'session' must be an object"),
    "modalities wrong": (lambda: p.parse_client_event(json.dumps(
        {"type": "session.update", "session": {"modalities": ["video"]}})), "bad_event", "modalities"),
    "output not pcm16": (lambda: p.parse_client_event(json.dumps(
        {"type": "session.update", "session": {"output_audio_format": "g711_alaw"}})), "unsupported_audio_format",
        "output_audio_format"),
    "played_ms a string": (lambda: p.parse_client_event('{"type": "playback.ack", "played_ms": "5"}'), "bad_event",
                           "'played_ms' must be a number, not string"),
    "played_ms negative": (lambda: p.parse_client_event('{"type": "playback.ack", "played_ms": -1}'), "bad_event",
                           "from 0 to"),
    "final not a boolean": (lambda: p.parse_client_event('{"type": "input_audio_buffer.commit", "final": 1}'),
                            "bad_event", "'final' must be a boolean"),
    "function call output without call_id": (lambda: p.parse_client_event(json.dumps(
        {"type": "conversation.item.create", "item": {"type": "function_call_output", "output": "{}"}})),
        "invalid_function_call_output", "item.call_id"),
    "a message item": (lambda: p.parse_client_event(json.dumps(
        {"type": "conversation.item.create", "item": {"type": "message", "role": "user", "content": []}})),
        "bad_event", "function_call_output"),
    "event_ack without seq": (lambda: p.parse_client_event('{"type": "session.event_ack"}'), "bad_event",
                              "server_event_seq"),
}


@pytest.mark.parametrize("case", list(BAD_INPUT))
def test_bad_input_is_a_protocol_error_with_a_code_and_a_one_line_message(case):
    call, code, mentions = BAD_INPUT[case]
    with pytest.raises(p.ProtocolError) as caught:
        call()
    err = caught.value
    assert err.code == code and err.code in p.ERROR_TYPES
    assert mentions in str(err) and "\n" not in str(err) and len(str(err)) < 200
    assert wire(p.ErrorEvent(err.code, str(err), err.event_id).to_json())["error"]["code"] == code


def test_an_error_names_the_client_event_it_answers():
    with pytest.raises(p.ProtocolError) as caught:
        decoded(append("not base64 at all!"))
    assert caught.value.event_id == "evt_bad"
    answer = p.ErrorEvent(caught.value.code, str(caught.value), caught.value.event_id).to_json()
    assert answer["error"]["event_id"] == "evt_bad"


# ---------------------------------------------------------------------------------------------------------------
# Any frame: an event or a ProtocolError, never another exception


GOOD_FRAMES = [
    {"type": "session.update", "event_id": "e", "session": {
        "model": "m", "modalities": ["audio", "text"], "input_audio_format": "pcm16", "sample_rate_hz": 16000,
        "audio": {"input": {"sample_rate_hz": 16000, "format": {"type": "audio/pcm", "rate": 24000}},
                  "output": {"sample_rate_hz": 24000, "voice": "v"}},
        "tools": [{"type": "function", "name": "f"}], "instructions": "i"}},
    {"type": "input_audio_buffer.append", "event_id": "e", "audio": "AAAAQA==", "format": "pcm16",
     "sample_rate_hz": 16000, "duration_ms": 0, "is_speech": True},
    {"type": "input_audio_buffer.commit", "final": True, "response_create": False},
    {"type": "conversation.item.create", "item": {"type": "function_call_output", "call_id": "c", "output": "{}"}},
    {"type": "playback.ack", "played_ms": 10, "committed_ms": 10, "response_id": "r", "item_id": "i"},
    {"type": "session.event_ack", "server_event_seq": 3},
    {"type": "response.cancel", "response_id": "r"},
    {"type": "session.close", "reason": "bye"},
]
HOSTILE = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(10**30), max_value=10**30), st.floats(allow_nan=True),
    st.text(max_size=12),
    st.sampled_from(["pcm_f32le", "g711_ulaw", "audio/pcm", "AAA", "////", "=", "AAAA", "a\nb", "\r\x00\t"]),
    st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=4), st.integers(), max_size=2),
)


def paths(value, prefix=()):
    """Every key path into a JSON object (the object itself included)."""
    yield prefix
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from paths(inner, (*prefix, key))


@st.composite
def mutated_frames(draw):
    event = json.loads(json.dumps(draw(st.sampled_from(GOOD_FRAMES))))
    path = draw(st.sampled_from([path for path in paths(event) if path]))
    holder = event
    for key in path[:-1]:
        holder = holder[key]
    holder[path[-1]] = draw(HOSTILE)
    return json.dumps(event)


@settings(max_examples=300, deadline=None, database=None, derandomize=os.environ.get("CI") == "true")
@given(frame=st.one_of(mutated_frames(), st.binary(max_size=40), st.text(max_size=40)))
@example(frame='{"type": "playback.ack", "played_ms": ' + "9" * 4000 + "}")
@example(frame='{"type": "playback.ack", "played_ms": ' + "9" * 5000 + "}")
@example(frame='{"type": "playback.ack", "played_ms": 1e400}')
@example(frame='{"type": "input_audio_buffer.append", "audio": "AAAA", "sample_rate_hz": NaN}')
@example(frame='{"type": "\\n", "event_id": "e"}')
@example(frame='{"type": "input_audio_buffer.append", "audio": "AAAA", "format": "a\\nb"}')
@example(frame='{"type": "session.update", "session": {"audio": {"output": {"format": {"type": "a\\nb"}}}}}')
@example(frame='{"type": "conversation.item.create", "item": {"type": "\\r\\n"}}')
def test_any_frame_is_an_event_or_a_protocol_error(frame):
    try:
        event = p.parse_client_event(frame)
        if isinstance(event, p.SessionUpdate):
            settings_now = p.SessionSettings().updated(event)
            json.dumps(p.SessionCreated(p.session_object(SESSION_ID, settings_now)).to_json())
            p.decode_audio("AAAA", settings_now.input_audio)
        if isinstance(event, p.AudioAppend):
            samples = p.decode_audio(event.audio, event.audio_format(p.DEFAULT_INPUT_FORMAT), event.event_id)
            assert samples.dtype == np.float32 and np.isfinite(samples).all()
    except p.ProtocolError as err:
        assert err.code in p.ERROR_TYPES and str(err) and "\n" not in str(err) and len(str(err)) < 300
