"""The next chunk's audio arriving during its idle window (``ArrivingAudio``, ``IdleWindow.arrived_audio``,
``wait_for_audio``, ``follow_audio``) and early prefill (``IdleWindow.prefill_arrived``, the ``early_prefill`` knob):
no sample is ever visible before it arrives, on either clock; early prefill changes no token, and moves exactly
the prefill of the final audio into the window (a hand-computed example)."""

import time

import numpy as np
import pytest

from ticktock.sessions.audio import SAMPLE_RATE, chunk_samples, load_audio
from ticktock.clocks.modeled import CostProfile, ModeledClock
from ticktock.clocks.wall import WallClock
from ticktock.decoders.ar import ARDecoder
from ticktock.decoders.idle import ArrivingAudio
from ticktock.decoders.contract import Decoder
from ticktock.replay.engine import ReplayEngine
from ticktock.sessions.manifest import load_manifest

from helpers import outputs, replay


class Spy(Decoder):
    """Reads the arriving audio all through its idle windows, working and waiting in turn, and checks each read
    against the arrival time computed independently of the window: the chunk's time when the window opened (its
    duration minus the budget) plus the time since, on the run's clock."""

    def __init__(self, audio, now_ms):
        super().__init__("spy")
        self.audio, self.now_ms, self.reads = audio, now_ms, 0

    def idle(self, window):
        start_s = window.arriving.duration_ms - window.budget_ms  # chunk time at the window's opening
        span = window.state.session.chunk_spans()[window.chunk_index]
        chunk = chunk_samples(self.audio, span.start_s, span.end_s)  # zero-padded past the recording's end
        before = window.adapter.snapshot()
        while True:
            seen = window.arrived_audio()
            limit_ms = start_s + self.now_ms(window)
            assert len(seen) <= limit_ms * SAMPLE_RATE / 1000 + 1e-9, (window.chunk_index, len(seen), limit_ms)
            assert np.array_equal(seen, chunk[: len(seen)])  # the real samples, from the chunk's start
            self.reads += 1
            window.forward([[window.protocol.listen]], logits_from=1)  # some work, then some waiting
            if not window.wait_for_audio(window.arrived_ms() + 137.0):
                break
        assert len(window.arrived_audio()) <= window.next_samples
        window.adapter.restore(before)


def test_no_sample_is_visible_before_it_arrives_on_the_modeled_clock(fixture_adapter, small_manifest):
    session = load_manifest(small_manifest)[0]
    audio = load_audio(session.audio_path)
    spy = Spy(audio, now_ms=lambda window: window.elapsed_ms())
    trace = replay(fixture_adapter, session, spy, forward_ms=40.0, audio=audio)
    assert spy.reads > 10
    assert all(c.carried_ms == 0.0 for c in trace.chunks)  # waiting never runs past the window
    waited = [c.counters.window_waited_ms for c in trace.chunks]
    assert all(w > 0 for w in waited[:1]) and all(
        c.counters.window_used_ms + c.counters.window_waited_ms <= c.counters.window_budget_ms + 1e-9 for c in trace.chunks)


def test_no_sample_is_visible_before_it_arrives_on_the_wall_clock(fixture_adapter, small_manifest):
    session = load_manifest(small_manifest)[1]
    audio = load_audio(session.audio_path)
    # wall time since the window opened, read after the call returns: at least the time the window saw
    spy = Spy(audio, now_ms=lambda window: (time.perf_counter() - window.stopwatch.start) * 1000.0)
    engine = ReplayEngine(fixture_adapter, spy, WallClock(), max_chunks=3)
    engine.replay(session, audio)
    assert spy.reads > 3


def test_arrived_audio_is_a_copy_of_what_has_arrived():
    samples = np.arange(16_000, dtype=np.float32)
    arriving = ArrivingAudio(samples, budget_ms=300.0)  # the window opens 700 ms into the chunk
    assert arriving.arrived_ms(0.0) == 700.0 and arriving.arrived_ms(10_000.0) == 1000.0
    seen = arriving.arrived(100.0, start=1000)
    assert len(seen) == 12_800 - 1000 and seen[0] == 1000.0
    seen[:] = -1.0
    assert arriving.arrived(100.0)[1000] == 1000.0  # the caller's copy, not the chunk's samples


def test_waiting_past_the_window_is_refused_and_not_counted(fixture_adapter, small_manifest):
    session = load_manifest(small_manifest)[0]
    state = ReplayEngine(fixture_adapter, ARDecoder(), ModeledClock(CostProfile.constant(10.0))).start(session)
    window = state.idle_window(0, 400.0, 16_000, ArrivingAudio(np.zeros(16_000, dtype=np.float32), 400.0))
    assert window.arrived_ms() == 600.0
    assert window.wait_for_audio(800.0) and window.elapsed_ms() == 200.0 and window.stopwatch.waited_ms == 200.0
    assert not window.wait_for_audio(1000.0)  # the audio is complete only when the window ends
    assert not window.wait_for_audio(900.0, reserve_ms=100.0)  # the work after it would run past the end
    assert window.elapsed_ms() == 200.0
    assert window.follow_audio(50.0, lambda: None) == 3  # at 850, 900 and 950 ms; 1000 is the end
    assert window.remaining_ms() == pytest.approx(50.0)


def test_early_prefill_moves_the_final_audio_into_the_window_hand_computed(fixture_adapter, small_manifest):
    """Constant profile: forward 20 ms; encoding a whole chunk 50 ms, a piece of share f 10 + 40 f ms. AR with early
    prefill every 300 ms, chunk 0 (its window is the wait for it: 1000 ms, opening at 0 ms of its audio):
    wait 300 -> prefill 0-300 ms (encode 22 + forward 20 = 42); wait 258 -> 300-600 ms (42); wait 258 -> 600-900 ms
    (42); the next step would end past the window (258 + 42 >= 58 left). Its last 100 ms stay for the post-audio
    pass: encode 10 + 4 = 14 ms instead of 50, the same forwards: 36 ms less latency, nothing else changes."""
    session = load_manifest(small_manifest)[0]
    profile = CostProfile.constant(20.0, encode_ms=50.0, encode_fixed_ms=10.0)

    def run(decoder):
        clock = ModeledClock(profile)
        return ReplayEngine(fixture_adapter, decoder, clock, max_chunks=1).replay(session, load_audio(session.audio_path))

    ar, early = run(ARDecoder()), run(ARDecoder("ar_prefill", early_prefill=True, prefill_every_ms=300.0))
    assert outputs(early) == outputs(ar)
    chunk, plain = early.chunks[0], ar.chunks[0]
    assert chunk.counters.window_used_ms == pytest.approx(3 * 42.0)
    assert chunk.counters.window_waited_ms == pytest.approx(300.0 + 258.0 + 258.0)
    assert chunk.counters.prefilled_ms == 900.0 and chunk.carried_ms == 0.0
    assert plain.timing.latency_ms - chunk.timing.latency_ms == pytest.approx(50.0 - 14.0)
    prefills = [r for r in early.forwards if r.phase == "early_prefill"]
    assert [r.query_tokens for r in prefills] == [1 + 3, 3, 3]  # <unit> + 3 embeddings, then 3 embeddings each
    first_pass = [r for r in early.forwards if r.phase == "post_audio"][0]
    assert first_pass.query_tokens == 1  # the last 100 ms: one embedding
    assert [r.query_tokens for r in ar.forwards if r.phase == "post_audio"][0] == 1 + 10


def test_early_prefill_does_nothing_for_a_front_end_with_no_causal_step(fixture_adapter, small_manifest):
    session = load_manifest(small_manifest)[1]
    frontend = fixture_adapter.frontend
    step = frontend.causal_granularity_ms
    try:
        frontend.causal_granularity_ms = None  # as MiniCPM-o's bidirectional chunk encoder declares
        early = replay(fixture_adapter, session, ARDecoder("ar_prefill", early_prefill=True), forward_ms=20.0, encode_ms=50.0)
    finally:
        frontend.causal_granularity_ms = step
    ar = replay(fixture_adapter, session, ARDecoder(), forward_ms=20.0, encode_ms=50.0)
    assert outputs(early) == outputs(ar)
    assert [c.timing.latency_ms for c in early.chunks] == [c.timing.latency_ms for c in ar.chunks]
    assert not any(r.phase == "early_prefill" for r in early.forwards)


def test_the_real_models_chunk_encoders_declare_no_causal_step():
    from ticktock.adapters.minicpm_audio import MiniCPMAudioFrontend
    from ticktock.adapters.qwen_omni import QwenOmniChunkFrontend

    assert getattr(MiniCPMAudioFrontend, "causal_granularity_ms", None) is None
    assert getattr(QwenOmniChunkFrontend, "causal_granularity_ms", None) is None


def test_waiting_decoders_may_share_a_device():
    """A shared device schedules waiting lanes (``ticktock.replay.device``): the options check lets them through."""
    from ticktock.replay.config import check_run_options, compose_run

    for name in ("speclisten_stream", "ar_prefill", "speclisten_speak"):
        check_run_options(compose_run(name, "fixture", None, ["concurrency.sessions=2", "concurrency.batching=true"]))
