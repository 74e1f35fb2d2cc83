"""The one replay loop on live audio: a session streamed in real time into ``LiveAudio`` commits, unit by unit, the
tokens of the in-process replay of the same session (embedded model, fp32, eager attention, greedy), for AR,
Speculative Listening and Speculative Listening on streaming audio; the idle window drafts on the audio that has
really arrived; a stream that ends early ends the session after its last complete unit."""

import threading
import time

import numpy as np
import pytest

from ticktock.decoders.ar import ARDecoder
from ticktock.decoders.selection import Sampling
from ticktock.replay.engine import ReplayEngine
from ticktock.world.injection import ToolCallInjector
from ticktock.shipped import resource_path
from ticktock.replay.config import build, compose_run
from ticktock.clocks.wall import WallClock
from ticktock.scheduling.round_robin import RoundRobin
from ticktock.serve.live import LiveAudio, LiveAudioFull, ServedDevice
from ticktock.sessions.audio import load_audio
from ticktock.sessions.manifest import load_manifest
from ticktock.world.mock_tools import MockToolExecutor

from helpers import outputs
from served import stream
from helpers import replay as replay_session

UNITS = 5
PIECE_MS = 100


def shipped(name):
    return ARDecoder() if name == "ar" else build(compose_run(name, "embedded", None, []).decoder)


@pytest.fixture(scope="module")
def session():
    manifest = resource_path("manifests/ticktock-mini/manifest.jsonl")
    return load_manifest(manifest, tasks=["fdb_v3"])[0]


def live_replay(adapter, session, decoder, seconds: float = UNITS):
    """The session replayed on a lane of a served device (the replay's scheduler under real time) while a client
    streams its first ``seconds`` of audio in real time."""
    device = ServedDevice(WallClock(adapter.synchronize), RoundRobin())
    audio = LiveAudio()
    audio.on_change = device.poke
    engine = ReplayEngine(adapter, decoder, WallClock(), Sampling(), ToolCallInjector(MockToolExecutor()))
    ended, errors = threading.Event(), []
    lane = device.lane(audio, adapter.protocol, lambda error: (errors.append(error), ended.set()))
    engine.clock = lane
    device.admit(lane, lambda lane: engine.replay(session, audio))
    sender = stream(audio, load_audio(session.audio_path), seconds)
    assert ended.wait(60)
    sender.join(timeout=30)
    device.stop()
    assert errors == [None]
    return lane.result, audio


@pytest.mark.parametrize("name", ["ar", "speclisten", "speclisten_stream"])
def test_a_session_streamed_live_commits_the_replay_s_tokens(embedded_adapter, session, name):
    expected = outputs(replay_session(embedded_adapter, session, shipped(name), max_chunks=UNITS,
                                      injector=ToolCallInjector(MockToolExecutor())))
    trace, audio = live_replay(embedded_adapter, session, shipped(name))
    assert outputs(trace) == expected
    assert len(trace.chunks) == UNITS  # the stream ended after unit 4: the session ends there
    assert [audio.completed_at(i) is not None for i in range(UNITS)] == [True] * UNITS
    if name == "speclisten_stream":  # it fed audio that had really arrived into the cache in the idle windows
        assert any(c.counters.prefilled_ms > 0 for c in trace.chunks[1:])
        assert all(c.counters.prefilled_ms < 1000.0 for c in trace.chunks)


def test_the_idle_window_sees_only_the_audio_that_has_arrived(embedded_adapter, session):
    seen = []

    class Watcher(ARDecoder):
        def idle(self, window):
            began = time.perf_counter()
            first = window.arrived_ms()
            window.stopwatch.wait(300.0)  # real time passes: more of the unit arrives
            seen.append((window.chunk_index, first, window.arrived_ms(), len(window.arrived_audio()),
                         time.perf_counter() - began))

    live_replay(embedded_adapter, session, Watcher(), seconds=3)
    streamed = [entry[1:] for entry in seen if entry[0] < 3]  # the stream ends after 3 units: unit 3 never arrives
    assert len(streamed) >= 2 and [entry[2] for entry in seen if entry[0] == 3] in ([], [0.0])
    for first, later, samples, waited in streamed:
        assert waited >= 0.29 and later >= first + 200.0  # about 300 ms more audio arrived while it waited
        assert samples == pytest.approx(16 * later, abs=16 * PIECE_MS)


def test_a_client_far_ahead_of_the_model_is_refused_saying_how_far():
    audio = LiveAudio(max_ahead_s=2.0)
    audio.append(np.zeros(32_000, dtype=np.float32))
    with pytest.raises(LiveAudioFull, match=r"2\.1 s ahead of the model, above the 2 s this server buffers"):
        audio.append(np.zeros(1_600, dtype=np.float32))


def test_a_served_session_reports_every_unit_with_its_latency_and_the_replay_s_tokens(session):
    from ticktock.serve.session import ServedModel, ServedSession

    cfg = compose_run("speclisten_stream", "embedded", None, ["progress=false"])
    model = ServedModel(cfg)
    ended, calls = [], []
    served = ServedSession(model, "s1", on_unit=lambda report: None, on_call=lambda *call: calls.append(call),
                           on_end=ended.append, system_prompt=session.system_prompt, tools=session.tools)
    served.start()
    stream(served.audio, load_audio(session.audio_path), UNITS).join(timeout=30)
    served.close(timeout_s=30)
    assert ended == [None]
    expected = outputs(replay_session(model.adapter, session, shipped("speclisten_stream"), max_chunks=UNITS,
                                      injector=ToolCallInjector(MockToolExecutor())))
    assert [u.output_tokens for u in served.units] == expected
    assert [u.index for u in served.units] == list(range(UNITS))
    assert {u.decision for u in served.units} <= {"listen", "speak"}
    assert all(0.0 <= u.served_ms < 5000.0 for u in served.units)
