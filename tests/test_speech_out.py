"""Speech out: the talker's work on the run's clock, and speculative synthesis (embedded model, a real session)."""

import pytest

from ticktock.clocks.modeled import CostProfile, ModeledClock
from ticktock.clocks.wall import WallClock
from ticktock.decoders.ar import ARDecoder
from ticktock.replay.engine import ReplayEngine
from ticktock.world.injection import ToolCallInjector
from ticktock.shipped import resource_path
from ticktock.replay.config import build, compose_run
from ticktock.replay.speech_out import SpeechOut, samples_sha256
from ticktock.sessions.audio import load_audio
from ticktock.sessions.manifest import load_manifest
from ticktock.adapters.base import spoken_text
from ticktock.clocks.talker_cost import TalkerCost
from ticktock.talkers.espeak import EspeakTalker
from ticktock.world.mock_tools import MockToolExecutor

CHUNKS = 14
PROFILE = "configs/profiles/a100-8b-derived.yaml"


@pytest.fixture(scope="module")
def session():
    return load_manifest(resource_path("manifests/ticktock-mini/manifest.jsonl"), tasks=["fdb_v3"])[0]


def replay(adapter, session, decoder, speech, clock=None):
    clock = clock or ModeledClock(CostProfile.load(resource_path(PROFILE)))
    engine = ReplayEngine(adapter, decoder, clock, injector=ToolCallInjector(MockToolExecutor()), max_chunks=CHUNKS,
                          speech=speech)
    return engine.replay(session, load_audio(session.audio_path))


def speak_chunks(trace):
    return [c for c in trace.chunks if c.speech is not None and c.speech.text]


def test_talker_work_is_charged_after_the_text_and_shrinks_the_next_window(embedded_adapter, session):
    cost = TalkerCost(first_packet_ms=40.0, ms_per_audio_s=25.0)
    trace = replay(embedded_adapter, session, ARDecoder(), SpeechOut(EspeakTalker(), cost))
    spoken = speak_chunks(trace)
    assert len(spoken) >= 3
    for chunk in spoken:
        assert chunk.speech.text == spoken_text(chunk.output, embedded_adapter)
        assert chunk.speech.talker_ms == pytest.approx(cost.work_ms(chunk.speech.audio_s))
        assert chunk.speech.ready_ms == pytest.approx(chunk.speech.talker_ms)  # not streaming: ready at the end
    for chunk, following in zip(trace.chunks, trace.chunks[1:]):
        talker = chunk.speech.talker_ms
        left = chunk.timing.idle_budget_ms - talker
        assert following.counters.window_budget_ms == pytest.approx(max(left, 0.0))
        if left <= 0:
            assert following.carried_ms == pytest.approx(talker - chunk.timing.idle_budget_ms)


def test_a_slow_talker_delays_the_next_chunk(embedded_adapter, session):
    without = replay(embedded_adapter, session, ARDecoder(), None)
    slow = replay(embedded_adapter, session, ARDecoder(), SpeechOut(EspeakTalker(), TalkerCost(1500.0, 0.0)))
    assert [c.output for c in slow.chunks] == [c.output for c in without.chunks]
    first = next(i for i, c in enumerate(slow.chunks) if c.speech.text)
    after = slow.chunks[first + 1]
    budget = without.chunks[first].timing.idle_budget_ms
    assert after.carried_ms == pytest.approx(1500.0 - budget)
    assert after.timing.latency_ms == pytest.approx(without.chunks[first + 1].timing.latency_ms + 1500.0 - budget)


def test_under_the_wall_clock_the_talker_is_measured(embedded_adapter, session):
    trace = replay(embedded_adapter, session, ARDecoder(), SpeechOut(EspeakTalker(), None), clock=WallClock())
    spoken = speak_chunks(trace)
    assert spoken and all(c.speech.talker_ms > 0.5 for c in spoken)  # a forked eSpeak process: milliseconds at least


def test_speculative_synthesis_plays_exactly_ar_audio_and_is_ready_at_once(embedded_adapter, session):
    cost = TalkerCost(first_packet_ms=30.0, ms_per_audio_s=10.0)
    ar = replay(embedded_adapter, session, ARDecoder(), SpeechOut(EspeakTalker(), cost))
    decoder = build(compose_run("speclisten_speak", "embedded", None, []).decoder)
    sl = replay(embedded_adapter, session, decoder, SpeechOut(EspeakTalker(), cost))
    assert [c.output for c in sl.chunks] == [c.output for c in ar.chunks]
    assert [c.speech.audio_sha256 for c in sl.chunks] == [c.speech.audio_sha256 for c in ar.chunks]
    ahead = [c for c in speak_chunks(sl) if c.speech.ahead]
    assert ahead, "no speak chunk verified its drafted text"
    assert all(c.speech.talker_ms == 0.0 and c.speech.ready_ms == 0.0 and c.speech.prepared >= 1 for c in ahead)
    assert all(c.speech.talker_ms > 0 for c in speak_chunks(ar))


def test_a_rejected_text_is_synthesized_after_the_commit_and_the_prepared_audio_dropped(embedded_adapter, session):
    speech = SpeechOut(EspeakTalker(), TalkerCost(30.0, 10.0))
    speak = embedded_adapter.protocol.speak
    tokens = [speak, *embedded_adapter.encode_text(" the order"), embedded_adapter.protocol.chunk_eos]
    wrong = {"something else": EspeakTalker().synthesize("something else")}
    clock = ModeledClock(CostProfile.constant(10.0))
    piece = speech.speak(clock, embedded_adapter, tokens, wrong)
    assert (piece.text, piece.ahead, piece.prepared) == ("the order", False, 1)
    assert piece.talker_ms == pytest.approx(30.0 + 10.0 * piece.audio_s)
    right = {"the order": EspeakTalker().synthesize("the order")}
    again = speech.speak(clock, embedded_adapter, tokens, right)
    assert (again.ahead, again.talker_ms, again.audio_sha256) == (True, 0.0, piece.audio_sha256)
    assert again.audio_sha256 == samples_sha256(right["the order"])


def test_on_a_shared_device_the_talker_is_scheduled_and_changes_no_token_or_byte(tmp_path):
    import pandas as pd

    from ticktock.clocks.modeled import CostProfile
    from ticktock.replay.runner import run

    profile = CostProfile.load(resource_path(PROFILE))
    profile.talkers = {"espeak": TalkerCost(first_packet_ms=60.0, ms_per_audio_s=20.0)}
    (tmp_path / "p.yaml").write_text(profile.to_yaml())
    common = ["talker=espeak", "task=fdb_v3", "limit.sessions=2", "limit.chunks=12", f"clock.profile={tmp_path / 'p.yaml'}"]
    frames = {}
    for n in (1, 2):
        cfg = compose_run("ar", "embedded", None, [*common, f"concurrency.sessions={n}", "concurrency.stagger=0"])
        run(cfg, tmp_path / f"n{n}")
        frames[n] = pd.read_parquet(tmp_path / f"n{n}" / "chunks.parquet").sort_values(["session_id", "chunk_index"])
    alone, shared = frames[1], frames[2]
    assert list(shared.output_token_ids.map(list)) == list(alone.output_token_ids.map(list))
    assert list(shared.audio_sha256) == list(alone.audio_sha256)
    speaking = shared[shared.talker_text.fillna("") != ""]
    assert len(speaking) >= 2
    assert (speaking.talker_ms >= 60.0 + 20.0 * speaking.audio_s - 1e-6).all()  # its cost, and waits for the device
    assert speaking.playback_start_ms.notna().all() and (speaking.audio_ready_ms >= speaking.response_ms).all()
