"""Audio encodings batched across sessions (``concurrency.batch_encodings``): a hand-computed timeline where two
sessions' encodings share one step, batched encodings token-equal to unbatched on every decoder at N = 2 and 4 (the
modeled clock, and the wall clock's real batched encoder call), early prefill's pieces joining under the draft policy,
and the run option's checks."""

import numpy as np
import pytest

from ticktock.clocks.modeled import CostProfile, ModeledClock
from ticktock.decoders.ar import ARDecoder
from ticktock.decoders.selection import Sampling
from ticktock.replay.concurrency import ConcurrencySettings, ConcurrentReplay
from ticktock.replay.device import SharedDevice
from ticktock.replay.engine import ReplayEngine
from ticktock.scheduling.expected_savings import ExpectedSavings
from ticktock.scheduling.round_robin import RoundRobin
from ticktock.sessions.manifest import load_manifest

from scripted import ScriptedAdapter
from test_device import _audio, session


def replay_lockstep(clock, batch_encodings: bool, batching: bool = False, count: int = 2):
    """``count`` scripted sessions of 3 listen chunks, in lockstep (no stagger); the traces by id and the device."""
    settings = ConcurrencySettings(sessions=count, batching=batching, stagger=0.0, batch_encodings=batch_encodings)
    engines = [ReplayEngine(ScriptedAdapter({}), ARDecoder(), clock) for _ in range(count)]
    device = SharedDevice(clock, RoundRobin(), batching, batch_encodings=batch_encodings)
    traces = {}
    ConcurrentReplay(engines, device, settings).replay(
        [session(f"s{i}") for i in range(count)], load=lambda s: np.zeros(int(16_000 * s.duration_s), np.float32),
        on_trace=lambda trace: traces.setdefault(trace.session.session_id, trace))
    return traces, device


def test_two_sessions_encodings_share_one_step_hand_computed():
    # Forwards 100 ms, encodings 50 ms; a step of two encodings costs 50 x 1.2 = 60 ms. Both sessions only listen
    # (a chunk: its encoding, then one forward), and their chunks arrive together at 1000, 2000, 3000.
    clock = ModeledClock(CostProfile.constant(100.0, encode_ms=50.0, encode_batch_factor=1.2))
    # Batched: both encodings 0-60, then s0's forward 60-160 and s1's 160-260 (forwards are not batched).
    traces, device = replay_lockstep(clock, batch_encodings=True)
    assert [c.timing.response_ms for c in traces["s0"].chunks] == pytest.approx([160.0] * 3)
    assert [c.timing.response_ms for c in traces["s1"].chunks] == pytest.approx([260.0] * 3)
    assert [c.counters.device_wait_ms for c in traces["s1"].chunks] == pytest.approx([100.0] * 3)
    assert device.stats.batched_encode_steps == 3 and device.stats.batched_encodings == 6
    assert device.stats.busy_ms == pytest.approx(3 * (60.0 + 200.0))
    # Unbatched: s0 encodes 0-50 and its forward (slot 0 first) runs 50-150; s1 encodes 150-200, forward 200-300.
    alone, plain = replay_lockstep(clock, batch_encodings=False)
    assert [c.timing.response_ms for c in alone["s0"].chunks] == pytest.approx([150.0] * 3)
    assert [c.timing.response_ms for c in alone["s1"].chunks] == pytest.approx([300.0] * 3)
    assert plain.stats.batched_encode_steps == 0 and plain.stats.busy_ms == pytest.approx(3 * 300.0)


def test_batched_encodings_and_batched_forwards_together_hand_computed():
    # As above with batching too: encodings 0-60 (x1.2), then both forwards in one step of 100 x 1.5 = 150 ms: 60-210.
    clock = ModeledClock(CostProfile.constant(100.0, encode_ms=50.0, batch_factor=1.5, encode_batch_factor=1.2))
    traces, device = replay_lockstep(clock, batch_encodings=True, batching=True)
    for trace in traces.values():
        assert [c.timing.response_ms for c in trace.chunks] == pytest.approx([210.0] * 3)
    assert device.stats.batched_encode_steps == 3 and device.stats.batched_steps == 3


def test_the_profile_charges_a_batch_of_three_at_the_last_factor_and_the_dearest_piece():
    # Three sessions: the constant profile lists B = 1, 2 only, so B = 3 takes the last factor (1.2): 50 x 1.2 = 60.
    clock = ModeledClock(CostProfile.constant(100.0, encode_ms=50.0, encode_batch_factor=1.2))
    traces, device = replay_lockstep(clock, batch_encodings=True, count=3)
    assert [traces[s].chunks[0].timing.response_ms for s in ("s0", "s1", "s2")] == pytest.approx([160.0, 260.0, 360.0])
    assert device.stats.batched_encodings == 9


def _decoder_names():
    from ticktock.decoders import DECODERS

    return sorted(DECODERS)


@pytest.mark.parametrize("sessions", [2, 4])
def test_batched_encodings_are_token_equal_on_every_decoder(sessions, fixture_adapter, small_manifest):
    """Every decoder, N = 2 and 4, lockstep sessions, modeled clock with a batch model of encodings and early
    prefill's pieces: the tokens equal those of every session replayed alone."""
    from ticktock.replay.config import build, compose_run

    clock = ModeledClock(CostProfile.constant(40.0, encode_ms=30.0, encode_fixed_ms=5.0, encode_batch_factor=1.1))
    manifest = load_manifest(small_manifest)
    batched_steps = 0
    for name in _decoder_names():
        decoder_cfg = compose_run(name, "fixture", None, []).decoder
        alone = ReplayEngine(fixture_adapter, build(decoder_cfg), clock, Sampling(), max_chunks=5)
        want = {s.session_id: [c.output for c in alone.replay(s, _audio(s)).chunks] for s in manifest}
        engines = [ReplayEngine(fixture_adapter.replica(), build(decoder_cfg), clock, Sampling(), max_chunks=5)
                   for _ in range(sessions)]
        device, got = SharedDevice(clock, ExpectedSavings(), batch_encodings=True), {}
        settings = ConcurrencySettings(sessions=sessions, stagger=0.0, batch_encodings=True)
        ConcurrentReplay(engines, device, settings).replay(
            manifest, _audio,
            lambda trace: got.setdefault(trace.session.session_id, [c.output for c in trace.chunks]))
        assert got == want, name
        batched_steps += device.stats.batched_encode_steps
    assert batched_steps > 0


@pytest.mark.parametrize("sessions", [2, 4])
def test_wall_clock_encodings_run_as_one_batched_call_token_equal_on_every_decoder(sessions, fixture_adapter,
                                                                                  small_manifest):
    """Under the wall clock a step of encodings is one real batched encoder call (``encode_many``, whose embeddings
    may differ from one call at a time in the last bits): on every decoder, tokens equal the sessions alone, and the
    encode steps did batch."""
    from ticktock.clocks.wall import WallClock
    from ticktock.replay.config import build, compose_run

    manifest = load_manifest(small_manifest)
    clock, batched = WallClock(), 0
    for name in _decoder_names():
        decoder_cfg = compose_run(name, "fixture", None, []).decoder
        alone = ReplayEngine(fixture_adapter, build(decoder_cfg), ModeledClock(CostProfile.constant(10.0)), max_chunks=4)
        want = {s.session_id: [c.output for c in alone.replay(s, _audio(s)).chunks] for s in manifest}
        engines = [ReplayEngine(fixture_adapter.replica(), build(decoder_cfg), clock, max_chunks=4)
                   for _ in range(sessions)]
        device, got = SharedDevice(clock, ExpectedSavings(), batch_encodings=True), {}
        settings = ConcurrencySettings(sessions=sessions, stagger=0.0, batch_encodings=True)
        ConcurrentReplay(engines, device, settings).replay(
            manifest, _audio, lambda trace: got.setdefault(trace.session.session_id, [c.output for c in trace.chunks]))
        assert got == want, name
        batched += device.stats.batched_encode_steps
    assert batched > 0


def test_early_prefill_pieces_of_several_sessions_join_one_step(fixture_adapter, small_manifest):
    """ar_prefill in lockstep: the pieces of several sessions' arriving audio are encoded together (a draft step of
    encodings the draft policy lets them join), and the tokens stay AR's."""
    from ticktock.replay.config import build, compose_run

    clock = ModeledClock(CostProfile.constant(40.0, encode_ms=30.0, encode_fixed_ms=5.0, encode_batch_factor=1.1))
    manifest = load_manifest(small_manifest)
    ar = ReplayEngine(fixture_adapter, ARDecoder(), clock, Sampling(), max_chunks=5)
    want = {s.session_id: [c.output for c in ar.replay(s, _audio(s)).chunks] for s in manifest}
    decoder_cfg = compose_run("ar_prefill", "fixture", None, []).decoder
    engines = [ReplayEngine(fixture_adapter.replica(), build(decoder_cfg), clock, Sampling(), max_chunks=5)
               for _ in range(3)]
    device, got, pieces = SharedDevice(clock, ExpectedSavings(), batch_encodings=True), {}, []

    def keep(trace):
        got[trace.session.session_id] = [c.output for c in trace.chunks]
        pieces.extend(c.counters.prefilled_ms for c in trace.chunks)

    ConcurrentReplay(engines, device, ConcurrencySettings(sessions=3, stagger=0.0, batch_encodings=True)).replay(
        manifest, _audio, keep)
    assert got == want and max(pieces) > 0
    assert device.stats.batched_encode_steps > 0
    assert device.stats.batched_draft_steps > 0  # pieces of idle windows joined one another


def test_batch_encodings_needs_a_profile_with_a_batch_model_of_encodings(tmp_path):
    from ticktock.replay.concurrency import ConcurrencyError
    from ticktock.replay.config import check_concurrency, compose_run

    cfg = compose_run("ar", "fixture", None, ["concurrency.sessions=2", "concurrency.batch_encodings=true"])
    with pytest.raises(ConcurrencyError, match=r"^concurrency.batch_encodings: the cost profile constant has no batch "
                                               r"dimension for audio encodings \(encode_batch_sizes, encode_batch_factor\)"):
        check_concurrency(cfg, ModeledClock(CostProfile.constant(10.0)))
    check_concurrency(cfg, ModeledClock(CostProfile.constant(10.0, encode_batch_factor=1.1)))  # accepted


def test_batch_encodings_must_be_a_boolean():
    from ticktock.replay.concurrency import ConcurrencyError

    with pytest.raises(ConcurrencyError, match=r"^concurrency.batch_encodings: must be true or false, got 'yes'$"):
        ConcurrencySettings.parse({"sessions": 2, "batch_encodings": "yes"})


def test_a_run_without_batched_encodings_keeps_its_identity():
    """Runs written before the option existed resume: ``batch_encodings: false`` is left out of the identity."""
    from ticktock.replay.config import compose_run, identity

    plain = identity(compose_run("ar", "fixture", None, ["concurrency.sessions=2"]))
    assert "batch_encodings" not in plain["concurrency"]
    batched = identity(compose_run("ar", "fixture", None, ["concurrency.sessions=2", "concurrency.batch_encodings=true"]))
    assert batched["concurrency"]["batch_encodings"] is True and batched != plain


def test_a_chunk_encoded_with_the_next_chunks_silence_counts_as_two_encodings_in_a_batched_step(fixture_adapter):
    """One session's chunk encoded with the silence after it (``DeviceWork.silence_after``: Speculative Listening's next
    silence draft) and another session's chunk, in one step: the modeled clock charges three encodings; under the wall
    clock the chunks run as one batched encoder call and the silence follows from the state its chunk left, equal to
    peeking it after encoding that chunk alone."""
    import torch

    from ticktock.clocks.base import ENCODE, DeviceWork
    from ticktock.clocks.modeled import CostProfile
    from ticktock.clocks.wall import WallClock

    chunk = (np.random.default_rng(0).standard_normal(16_000) * 0.1).astype(np.float32)
    first, second = fixture_adapter.replica(), fixture_adapter.replica()

    def works():
        return [DeviceWork(ENCODE, lambda: None, first, call=(chunk, False), silence_after=16_000),
                DeviceWork(ENCODE, lambda: None, second, call=(chunk, False), audio_fraction=0.5)]

    profile = CostProfile("p", [1], [0], [[10.0]], encode_ms=50.0, encode_batch_sizes=[1, 2, 4],
                          encode_batch_factor=[1.0, 1.1, 1.3])
    modeled = SharedDevice(ModeledClock(profile), ExpectedSavings(), batch_encodings=True)
    assert modeled.estimates.step_ms(works()) == pytest.approx(50.0 * 1.2)  # three encodings: between 2 and 4

    for adapter in (first, second):
        adapter.start_session(None, ())
    device = SharedDevice(WallClock(), ExpectedSavings(), batch_encodings=True)
    (embeddings, silence), other = device.executor.run_batch(works())[0]
    alone = fixture_adapter.replica()
    alone.start_session(None, ())
    assert torch.allclose(embeddings, alone.encode_audio(chunk), rtol=1e-4, atol=1e-4)  # a batched matmul
    assert torch.equal(silence, alone.peek_audio(np.zeros(16_000, dtype=np.float32)))
    assert torch.allclose(other, embeddings, rtol=1e-4, atol=1e-4)
