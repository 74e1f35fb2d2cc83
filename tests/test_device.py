"""Sessions sharing one device: hand-computed timelines (with waiting lanes too), N = 1 equals a session alone, tokens
never depend on N (decoders that wait for audio included), batched post-audio and draft steps, determinism, and a
session that fails to load."""

import re
from pathlib import Path

import numpy as np
import pytest

from ticktock.sessions.audio import AudioError
from ticktock.clocks.modeled import CostProfile, ModeledClock
from ticktock.replay.concurrency import ConcurrencySettings, ConcurrentReplay
from ticktock.decoders.ar import ARDecoder
from ticktock.decoders.selection import Sampling
from ticktock.clocks.base import ENCODE, FORWARD, DeviceWork, WindowClosed
from ticktock.replay.device import SessionLane, SharedDevice
from ticktock.replay.engine import ReplayEngine
from ticktock.sessions.manifest import Session, load_manifest
from ticktock.scheduling.expected_savings import ExpectedSavings
from ticktock.scheduling.round_robin import RoundRobin

from helpers import NoBarrier
from scripted import ScriptedAdapter

LISTEN, SPEAK, EOS = 3, 4, 5


def session(name: str, seconds: float = 3.0) -> Session:
    return Session(name, "test", Path(f"{name}.flac"), seconds)


def replay_together(scripts, clock, stagger=250.0, batching=False, decoder=ARDecoder, policy=None, sessions=None):
    """Replay one scripted session per script on a shared device; returns the traces by session id."""
    settings = ConcurrencySettings(sessions=len(scripts), batching=batching, stagger=stagger)
    engines = [ReplayEngine(ScriptedAdapter(script), decoder(), clock) for script in scripts]
    device = SharedDevice(clock, policy or RoundRobin(), batching)
    traces = {}
    sessions = sessions or [session(f"s{i}") for i in range(len(scripts))]
    ConcurrentReplay(engines, device, settings).replay(
        sessions, load=lambda s: np.zeros(int(16_000 * s.duration_s), np.float32),
        on_trace=lambda trace: traces.setdefault(trace.session.session_id, trace))
    return traces, device


def test_two_sessions_hand_computed_timeline():
    # A (slot 0, starts at 0):   chunk 0 listen (1 forward), chunk 1 speaks 11 tokens (1100 ms), chunk 2 listen.
    # B (slot 1, starts at 250): chunk 0 speaks 3 tokens, chunks 1 and 2 listen. Every forward costs 100 ms.
    a = {1: [SPEAK, *range(10, 18), 6, EOS]}
    b = {0: [SPEAK, 10, EOS]}
    traces, device = replay_together([a, b], ModeledClock(CostProfile.constant(100.0)))
    A, B = traces["s0"].chunks, traces["s1"].chunks
    # A: 1000-1100; 2000-3100 (misses by 100 ms); chunk 2 (arrived 3000) waits for B's chunk 1 (arrived 2250,
    # earlier) until 3200, then 3200-3300: response 300 = lag 100 + latency 200.
    assert [c.timing.response_ms for c in A] == pytest.approx([100.0, 1100.0, 300.0])
    assert [c.timing.lag_ms for c in A] == pytest.approx([0.0, 100.0, 0.0])
    assert [c.timing.missed_deadline for c in A] == [False, True, False]
    assert [c.counters.device_wait_ms for c in A] == pytest.approx([0.0, 0.0, 100.0])
    # B: 1250-1550; chunk 1 (arrived 2250) waits for A's long chunk until 3100, runs 3100-3200 (response 950);
    # chunk 2 (arrived 3250) waits for A's 3200-3300 forward, runs 3300-3400.
    assert [c.timing.response_ms for c in B] == pytest.approx([300.0, 950.0, 150.0])
    assert [c.counters.device_wait_ms for c in B] == pytest.approx([0.0, 850.0, 50.0])
    assert [c.timing.missed_deadline for c in B] == [False, False, False]
    assert traces["s1"].start_ms == 250.0 and traces["s1"].slot == 1
    assert device.now == pytest.approx(3400.0)
    assert device.stats.busy_ms == pytest.approx(100.0 * (1 + 11 + 1 + 3 + 1 + 1))


class PeekAfterWaiting(ARDecoder):
    """In every idle window: wait until 600 ms of the next chunk's audio have arrived, then encode them (a peek)."""

    def idle(self, window):
        if window.wait_for_audio(600.0):
            window.encode(window.arrived_audio(), peek=True)


def test_a_waiting_lane_sleeps_while_the_other_session_runs_hand_computed():
    # Forwards cost 300 ms, encodings 50; both sessions only listen (chunk: encode + 1 forward = 350 ms). A starts at
    # 0, B at 500. Every idle window waits until 600 ms of its chunk have arrived, then peeks at them (50 ms).
    # A: 0-600 asleep, 600-650 peek; chunk 0 1000-1350. Window 1350-2000 (350 ms of chunk 1 arrived): asleep until
    #    1600, its peek waits for B's forward (1550-1850), runs 1850-1900; chunk 1 2000-2350; window asleep until 2600,
    #    peek waits until 2850 (B's forward), 2850-2900; chunk 2 3000-3350.
    # B: 500-1100 asleep; its peek waits for A's forward (1050-1350), runs 1350-1400; chunk 0 1500-1850; window asleep
    #    until 2100, peek 2350-2400 (after A's forward); chunk 1 2500-2850; asleep until 3100, peek 3350-3400; chunk 2
    #    3500-3850.
    clock = ModeledClock(CostProfile.constant(300.0, encode_ms=50.0))
    traces, device = replay_together([{}, {}], clock, stagger=500.0, decoder=PeekAfterWaiting)
    A, B = traces["s0"].chunks, traces["s1"].chunks
    for chunks in (A, B):
        assert [c.timing.response_ms for c in chunks] == pytest.approx([350.0] * 3)
        assert [c.counters.device_wait_ms for c in chunks] == [0.0] * 3  # post-audio work never waits for a sleeper
        assert [c.counters.window_waited_ms for c in chunks] == pytest.approx([600.0, 250.0, 250.0])
    assert [c.counters.window_used_ms for c in A] == pytest.approx([50.0, 300.0, 300.0])  # 250 of it waiting for B
    assert [c.counters.window_used_ms for c in B] == pytest.approx([300.0, 300.0, 300.0])
    assert device.now == pytest.approx(3850.0)
    assert device.stats.sleeps == 6 and device.stats.draft_steps == 6 and device.stats.dropped_drafts == 0
    assert device.stats.busy_ms == pytest.approx(2 * (3 * 50.0 + 3 * 350.0))
    assert device.stats.draft_busy_ms == pytest.approx(300.0) and device.stats.post_audio_busy_ms == pytest.approx(2100.0)


def test_a_waiting_lanes_work_is_dropped_when_its_window_closes_first():
    # As above, but A speaks 4 tokens in chunk 1 (arrives 2000): 2000-2050 encode, forwards 2050-3250 (response 1250).
    # B's window after its chunk 0 (1850-2500) sleeps until 2100; its peek waits behind A's post-audio forwards, and at
    # 2650 (the first step end after 2500) it is dropped: B's chunk 1 (arrived 2500) then waits for A's last two
    # forwards, 3250-3300 encode, 3300-3600 forward: response 1100, 750 of it waiting for the device.
    clock = ModeledClock(CostProfile.constant(300.0, encode_ms=50.0))
    traces, device = replay_together([{1: [SPEAK, 10, 11, EOS]}, {}], clock, stagger=500.0, decoder=PeekAfterWaiting)
    A, B = traces["s0"].chunks, traces["s1"].chunks
    assert A[1].timing.response_ms == pytest.approx(1250.0) and A[1].timing.missed_deadline
    assert device.stats.dropped_drafts == 1
    assert B[1].counters.window_waited_ms == pytest.approx(250.0)
    assert B[1].counters.window_used_ms == pytest.approx(400.0)  # waiting for the device until the window closed
    assert B[1].timing.response_ms == pytest.approx(1100.0)
    assert B[1].counters.device_wait_ms == pytest.approx(750.0)
    assert [c.output for c in B] == [[LISTEN]] * 3  # the dropped peek changed nothing


def test_batched_post_audio_forwards_share_one_step():
    # Two sessions in lockstep (no stagger) speak 3 tokens in chunk 0: each step batches both sessions' forwards.
    script = {0: [SPEAK, 10, EOS]}
    clock = ModeledClock(CostProfile.constant(100.0, batch_factor=1.5))
    traces, device = replay_together([script, script], clock, stagger=0.0, batching=True)
    for trace in traces.values():
        first = trace.chunks[0]
        assert first.timing.response_ms == pytest.approx(3 * 150.0)
        posts = [r for r in trace.forwards if r.phase == "post_audio" and r.chunk_index == 0]
        assert [r.batch_size for r in posts] == [2, 2, 2] and [r.charged_ms for r in posts] == [150.0] * 3
    assert device.stats.batched_steps == 3 + 2  # chunk 0's three forwards, then one per listen chunk
    assert device.stats.busy_ms == pytest.approx(5 * 150.0)
    alone, _ = replay_together([script, script], clock, stagger=0.0, batching=False)
    assert alone["s1"].chunks[0].timing.response_ms == pytest.approx(600.0)  # waits for s0's 300 ms, then 300 ms


def test_with_batching_an_arrived_chunks_encoding_leads_once_it_has_waited_its_cost_hand_computed():
    # A (slot 0, starts at 0) writes 11 tokens in chunk 0 (forwards of 100 ms); B (slot 1, starts at 310) listens.
    # Encodings cost 30 ms. A: encodes 1000-1030, forwards from 1030. B's chunk 0 arrives at 1310, while A's third
    # forward runs: at 1330 its encoding has waited 20 ms (< 30), so A's fourth forward runs first (1330-1430); at
    # 1430 it has waited 120 ms and leads (1430-1460), then B's forward joins A's fifth in one step (1460-1560).
    a = {0: [SPEAK, *range(10, 18), 6, EOS]}
    clock = ModeledClock(CostProfile.constant(100.0, encode_ms=30.0, batch_factor=1.0))
    traces, _ = replay_together([a, {}], clock, stagger=310.0, batching=True)
    A, B = traces["s0"].chunks, traces["s1"].chunks
    assert B[0].timing.response_ms == pytest.approx(250.0) and B[0].counters.device_wait_ms == pytest.approx(120.0)
    assert A[0].timing.response_ms == pytest.approx(30.0 + 1100.0 + 30.0)  # it gave way once, for one encoding
    # Without batching B's forward could not join A's: B waits for A's whole chunk (until 2130), as it always did.
    alone, _ = replay_together([a, {}], clock, stagger=310.0, batching=False)
    assert alone["s1"].chunks[0].timing.response_ms == pytest.approx(2130.0 + 130.0 - 1310.0)
    assert alone["s0"].chunks[0].timing.response_ms == pytest.approx(30.0 + 1100.0)


class LowestSlotFirst(RoundRobin):
    """Idle work of the lowest slot first; every waiting draft forward that fits its window joins a step."""

    carries_drafts = True

    def choose(self, candidates, now_ms):
        return min(candidates, key=lambda c: (c.slot, c.order))

    def join(self, candidates, now_ms, step_ms, post_audio):
        return [c for c in candidates if now_ms + step_ms([c]) <= c.window_closes_ms]


def drafting(lane, log, encode_first: bool, forwards: int) -> None:
    """An idle window from 0 to 1000 ms: an encoding of the hypothesis' audio first (``encode_first``), then up to
    ``forwards`` draft forwards; ``log`` gets (slot, kind, end ms) of each."""
    window = lane.stopwatch(window_ms=1000.0)
    kinds = [ENCODE] * encode_first + [FORWARD] * forwards
    try:
        for kind in kinds:
            window.run(DeviceWork(kind, lambda: None, NoBarrier(), query_tokens=1, context_tokens=1))
            log.append((lane.slot, kind, lane.device.now))
    except WindowClosed:
        pass


def two_drafting_sessions(encode_ms: float, batching: bool) -> list:
    """Slot 0 drafts 9 forwards of 100 ms, slot 1 encodes its hypothesis' audio (``encode_ms``) and drafts 9, both in a
    window from 0 to 1000 ms, the policy preferring slot 0 (batched steps cost one forward); what ``drafting`` logs."""
    log = []
    device = SharedDevice(ModeledClock(CostProfile.constant(100.0, encode_ms=encode_ms, batch_factor=1.0)),
                          LowestSlotFirst(), batching=batching)
    device.add(SessionLane(device, 0, 0.0), lambda lane: drafting(lane, log, False, 9))
    device.add(SessionLane(device, 1, 0.0), lambda lane: drafting(lane, log, True, 9))
    device.run(on_finished=lambda lane: None)
    return log


@pytest.mark.parametrize("batching", [True, False])
def test_with_batching_an_idle_encoding_that_waited_its_cost_goes_before_another_sessions_drafts(batching):
    # Slot 0 drafts 9 forwards of 100 ms; slot 1 must first encode its hypothesis' audio (30 ms). The policy always
    # prefers slot 0. With batching, once the encoding has waited 30 ms (at 100 ms, after slot 0's first forward)
    # it runs (100-130), and slot 1's forwards join slot 0's 8 others (ending at 230, ..., 930), its ninth alone
    # (930-1030: a draft started inside its window completes). Without batching slot 1 waits until slot 0 has drafted
    # all 9 (900 ms), encodes (900-930) and starts one forward before its window closes.
    log = two_drafting_sessions(encode_ms=30.0, batching=batching)
    slot1 = [(kind, end) for slot, kind, end in log if slot == 1]
    if batching:
        assert slot1 == [(ENCODE, 130.0)] + [(FORWARD, 230.0 + 100.0 * k) for k in range(9)]
        assert [end for slot, _, end in log if slot == 0] == [100.0] + [230.0 + 100.0 * k for k in range(8)]
    else:
        assert slot1 == [(ENCODE, 930.0), (FORWARD, 1030.0)]


def test_an_idle_encoding_dearer_than_the_draft_forward_it_would_displace_does_not_go_first():
    # As above with batching, but the encoding costs 150 ms, more than slot 0's next forward: slot 1 waits for slot
    # 0's 9 forwards (900 ms), encodes (900-1050), and its window has closed: its forwards are dropped.
    log = two_drafting_sessions(encode_ms=150.0, batching=True)
    assert [(kind, end) for slot, kind, end in log if slot == 1] == [(ENCODE, 1050.0)]


def writing(lane, log, forwards: int) -> None:
    """Post-audio work from 0 ms: ``forwards`` forwards of a chunk that has arrived; ``log`` gets (slot, kind, end ms)."""
    watch = lane.stopwatch()
    for _ in range(forwards):
        watch.run(DeviceWork(FORWARD, lambda: None, NoBarrier(), query_tokens=1, context_tokens=1))
        log.append((lane.slot, FORWARD, lane.device.now))


class LowestSlotFirstNoCarry(LowestSlotFirst):
    """``LowestSlotFirst`` whose drafts never ride on a post-audio step."""

    carries_drafts = False

    def join(self, candidates, now_ms, step_ms, post_audio):
        return [] if post_audio else super().join(candidates, now_ms, step_ms, post_audio)


@pytest.mark.parametrize("batching", [True, False])
def test_with_batching_waiting_post_audio_forwards_lend_one_forwards_time_to_idle_encodings(batching):
    # Forwards of 100 ms, encodings of 60 ms. Slot 0 writes 10 post-audio forwards from 0 ms; slots 1 and 2 each
    # must encode their hypothesis' audio before 9 draft forwards, in a window from 0 to 1000 ms. With batching: at
    # 100 slot 1's encoding has waited 100 >= 60 ms and runs (100-160): slot 0 lends it 60 of its 100 ms. Slot 1's
    # forwards then ride slot 0's steps (160-260, ..., 860-960; a ninth would end past 1000), and slot 0's chunk ends
    # at 1060. Slot 2's encoding would exceed the lend (60 + 60 > 100): it waits, and its window closes first. Without
    # batching (drafts could not ride along) nothing is lent: slots 1 and 2 get no device time before 1000 ms.
    log = []
    device = SharedDevice(ModeledClock(CostProfile.constant(100.0, encode_ms=60.0, batch_factor=1.0)),
                          LowestSlotFirst(), batching=batching)
    device.add(SessionLane(device, 0, 0.0), lambda lane: writing(lane, log, 10))
    for slot in (1, 2):
        device.add(SessionLane(device, slot, 0.0), lambda lane: drafting(lane, log, True, 9))
    device.run(on_finished=lambda lane: None)
    ends = {slot: [(kind, end) for s, kind, end in log if s == slot] for slot in (0, 1, 2)}
    if batching:
        assert ends[0] == [(FORWARD, 100.0)] + [(FORWARD, 260.0 + 100.0 * k) for k in range(9)]
        assert ends[1] == [(ENCODE, 160.0)] + [(FORWARD, 260.0 + 100.0 * k) for k in range(8)]
        assert device.stats.lent_steps == 1
    else:
        assert ends[0] == [(FORWARD, 100.0 * k) for k in range(1, 11)]
        assert ends[1] == [] and device.stats.lent_steps == 0
    assert ends[2] == []


def test_post_audio_forwards_lend_nothing_where_the_policy_lets_no_draft_ride_along():
    # The case above with batching, but the policy never carries drafts on a post-audio step: an encoding run first
    # would buy slot 1 no draft until slot 0's chain ends, so nothing is lent and slot 0 ends at 1000 ms.
    log = []
    device = SharedDevice(ModeledClock(CostProfile.constant(100.0, encode_ms=60.0, batch_factor=1.0)),
                          LowestSlotFirstNoCarry(), batching=True)
    device.add(SessionLane(device, 0, 0.0), lambda lane: writing(lane, log, 10))
    device.add(SessionLane(device, 1, 0.0), lambda lane: drafting(lane, log, True, 9))
    device.run(on_finished=lambda lane: None)
    assert [end for slot, kind, end in log if slot == 0] == [100.0 * k for k in range(1, 11)]
    assert [end for slot, kind, end in log if slot == 1] == [] and device.stats.lent_steps == 0


def test_one_session_on_the_device_equals_the_session_alone(fixture_adapter, small_manifest):
    from ticktock.decoders.speclisten import SpeculativeListeningDecoder

    clock = ModeledClock(CostProfile.constant(60.0, encode_ms=25.0))
    sessions = load_manifest(small_manifest)[:2]
    alone = ReplayEngine(fixture_adapter, SpeculativeListeningDecoder(), clock, Sampling())
    expected = [alone.replay(s, _audio(s)) for s in sessions]
    engine = ReplayEngine(fixture_adapter.replica(), SpeculativeListeningDecoder(), clock, Sampling())
    device = SharedDevice(clock, ExpectedSavings())
    got = []
    ConcurrentReplay([engine], device, ConcurrencySettings(sessions=1)).replay(sessions, _audio, got.append)
    for want, have in zip(expected, got):
        assert [c.output for c in have.chunks] == [c.output for c in want.chunks]
        for w, h in zip(want.chunks, have.chunks):
            assert h.timing.response_ms == pytest.approx(w.timing.response_ms)
            assert h.timing.lag_ms == pytest.approx(w.timing.lag_ms)
            assert h.carried_ms == pytest.approx(w.carried_ms)
            assert h.counters.window_used_ms == pytest.approx(w.counters.window_used_ms)
            assert h.counters.window_forwards == w.counters.window_forwards
            assert h.counters.post_audio_forwards == w.counters.post_audio_forwards
            assert h.counters.accepted_draft_tokens == w.counters.accepted_draft_tokens
            assert h.counters.device_wait_ms == 0.0


def test_tokens_at_four_sessions_equal_each_session_alone(fixture_adapter, small_manifest):
    from ticktock.decoders import DECODERS
    from ticktock.replay.config import build, compose_run

    sessions = load_manifest(small_manifest)
    clock = ModeledClock(CostProfile.constant(40.0, encode_ms=10.0))
    for name in DECODERS:
        decoder_cfg = compose_run(name, "fixture", None, []).decoder
        alone = ReplayEngine(fixture_adapter, build(decoder_cfg), clock, Sampling(), max_chunks=5)
        want = {s.session_id: [c.output for c in alone.replay(s, _audio(s)).chunks] for s in sessions}
        engines = [ReplayEngine(fixture_adapter.replica(), build(decoder_cfg), clock, Sampling(), max_chunks=5)
                   for _ in range(4)]
        got = {}
        ConcurrentReplay(engines, SharedDevice(clock, ExpectedSavings()), ConcurrencySettings(sessions=4)).replay(
            sessions, _audio, lambda trace: got.setdefault(trace.session.session_id, [c.output for c in trace.chunks]))
        assert got == want, name


def test_a_session_that_fails_to_load_does_not_stall_the_others():
    clock = ModeledClock(CostProfile.constant(100.0))
    engines = [ReplayEngine(ScriptedAdapter({0: [SPEAK, 10, EOS]}), ARDecoder(), clock) for _ in range(2)]
    skipped, done = [], []

    def load(s):
        if s.session_id == "bad":
            raise AudioError(f"{s.audio_path}: not a sound file")
        return np.zeros(16_000 * 3, np.float32)

    sessions = [session("s0"), session("bad"), session("s1"), session("s2")]
    ConcurrentReplay(engines, SharedDevice(clock, RoundRobin()), ConcurrencySettings(sessions=2, stagger=0.0)).replay(
        sessions, load, lambda trace: done.append(trace.session.session_id), on_skip=lambda s, err: skipped.append(s.session_id))
    assert skipped == ["bad"] and sorted(done) == ["s0", "s1", "s2"]


def test_a_failing_session_stops_the_device_with_its_error():
    class Broken(ARDecoder):
        def decode_chunk(self, step):
            if step.chunk_index == 1:
                raise RuntimeError("decoder bug")
            super().decode_chunk(step)

    clock = ModeledClock(CostProfile.constant(100.0))
    with pytest.raises(RuntimeError, match="decoder bug"):
        replay_together([{}, {}], clock, decoder=Broken)


def test_the_same_concurrent_run_twice_gives_the_same_parquet(tmp_path, small_manifest):
    import pyarrow.parquet as pq

    from ticktock.replay.config import compose_run

    from ticktock.replay.runner import run

    tables = []
    for name in ("a", "b"):
        cfg = compose_run("speclisten", "fixture", None, [f"task.manifest={small_manifest}", "concurrency.sessions=3",
                                                           "limit.chunks=5", "clock=modeled"])
        run(cfg, tmp_path / name)
        table = pq.read_table(tmp_path / name / "chunks.parquet").to_pandas()
        tables.append(table.drop(columns=[c for c in table.columns if "wall" in c or c == "run_id"]))
    assert tables[0].equals(tables[1])
    assert set(tables[0].concurrency) == {3} and set(tables[0].session_slot) == {0, 1, 2}


def _audio(s):
    from ticktock.sessions.audio import load_audio

    return load_audio(s.audio_path)


def test_wall_clock_sessions_run_really_batched_and_write_the_same_tokens(fixture_adapter, small_manifest):
    from ticktock.clocks.wall import WallClock

    sessions = load_manifest(small_manifest)
    alone = ReplayEngine(fixture_adapter, ARDecoder(), ModeledClock(CostProfile.constant(10.0)), max_chunks=4)
    want = {s.session_id: [c.output for c in alone.replay(s, _audio(s)).chunks] for s in sessions}
    clock = WallClock()
    engines = [ReplayEngine(fixture_adapter.replica(), ARDecoder(), clock, max_chunks=4) for _ in range(3)]
    device = SharedDevice(clock, ExpectedSavings(), batching=True)
    got, batched = {}, []

    def keep(trace):
        got[trace.session.session_id] = [c.output for c in trace.chunks]
        batched.extend(r.batch_size for r in trace.forwards)

    ConcurrentReplay(engines, device, ConcurrencySettings(sessions=3, batching=True, stagger=0.0)).replay(
        sessions, _audio, keep)
    assert got == want
    assert device.stats.batched_steps > 0 and max(batched) == 3  # lockstep sessions: their forwards ran together
    assert 0 < device.stats.sessions_wall_ms <= device.stats.run_wall_ms  # disjoint intervals of the run


def replay_within(seconds: float, **replay_kwargs):
    """``replay_together`` in a thread of its own, given ``seconds`` to end: the error it raised, or a failure if it
    did not end (the device's loop spinning forever, as it did on an infinite stagger)."""
    import threading

    outcome = {}

    def target():
        try:
            outcome["traces"] = replay_together(**replay_kwargs)
        except BaseException as err:  # handed back to the test
            outcome["error"] = err

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        pytest.fail(f"the shared device did not end within {seconds} s")
    return outcome.get("error")


@pytest.mark.parametrize("stagger", [float("inf"), float("nan"), 1e300])
def test_a_start_time_the_device_cannot_reach_is_refused_never_looped_on(stagger):
    from ticktock.replay.device import DeviceTimeError

    error = replay_within(20.0, scripts=[{}, {}], clock=ModeledClock(CostProfile.constant(100.0)), stagger=stagger)
    assert isinstance(error, DeviceTimeError)  # slot s starts at s x stagger ms: 0 x inf is nan, 1 x 1e300 too late
    assert re.fullmatch(r"slot [01]: session start: device time (nan|inf|1e\+300) ms is not a finite number of "
                        r"milliseconds from 0 to 1e\+13", str(error))



@pytest.mark.parametrize("name", ["ar_prefill", "speclisten_stream"])
def test_decoders_that_wait_for_audio_share_the_device_token_equal(name, fixture_adapter, small_manifest):
    """Early prefill and partial-audio re-drafts sleep inside their idle windows (waiting lanes) while the device runs
    the other sessions; their tokens still equal AR's alone."""
    from ticktock.replay.config import build, compose_run

    assert fixture_adapter.causal_granularity_ms  # the fixture's front-end is causal: early prefill feeds pieces
    sessions = load_manifest(small_manifest)
    clock = ModeledClock(CostProfile.constant(40.0, encode_ms=30.0, encode_fixed_ms=5.0))
    ar = ReplayEngine(fixture_adapter, ARDecoder(), clock, Sampling(), max_chunks=6)
    want = {s.session_id: [c.output for c in ar.replay(s, _audio(s)).chunks] for s in sessions}
    decoder_cfg = compose_run(name, "fixture", None, []).decoder
    engines = [ReplayEngine(fixture_adapter.replica(), build(decoder_cfg), clock, Sampling(), max_chunks=6)
               for _ in range(3)]
    device, got, prefilled = SharedDevice(clock, ExpectedSavings()), {}, []

    def keep(trace):
        got[trace.session.session_id] = [c.output for c in trace.chunks]
        prefilled.extend(c.counters.prefilled_ms for c in trace.chunks)

    ConcurrentReplay(engines, device, ConcurrencySettings(sessions=3, stagger=300.0)).replay(sessions, _audio, keep)
    assert got == want
    assert device.stats.sleeps > 0  # the lanes did wait for audio inside their windows
    if name == "ar_prefill":
        assert max(prefilled) > 0  # and fed some of it early


def test_batched_drafts_are_charged_by_the_profile_and_token_equal(fixture_adapter, small_manifest):
    """With batching, draft forwards of sessions in their idle windows at the same moment run as one step, charged
    from the profile's batch model; tokens stay those of each session alone."""
    from ticktock.replay.config import build, compose_run

    sessions = load_manifest(small_manifest)
    profile = CostProfile.constant(40.0, encode_ms=10.0, batch_factor=1.25)
    clock = ModeledClock(profile)
    decoder_cfg = compose_run("speclisten", "fixture", None, []).decoder
    alone = ReplayEngine(fixture_adapter, build(decoder_cfg), clock, Sampling(), max_chunks=6)
    want = {s.session_id: [c.output for c in alone.replay(s, _audio(s)).chunks] for s in sessions}
    engines = [ReplayEngine(fixture_adapter.replica(), build(decoder_cfg), clock, Sampling(), max_chunks=6)
               for _ in range(3)]
    device, got, drafts = SharedDevice(clock, RoundRobin(), batching=True), {}, []

    def keep(trace):
        got[trace.session.session_id] = [c.output for c in trace.chunks]
        drafts.extend(r for r in trace.forwards if r.phase == "draft")

    ConcurrentReplay(engines, device, ConcurrencySettings(sessions=3, batching=True, stagger=0.0)).replay(
        sessions, _audio, keep)
    assert got == want
    batched = [r for r in drafts if r.batch_size > 1]
    assert device.stats.batched_draft_steps > 0 and batched
    for record in batched:  # constant profile: forward_ms x batch_factor, whatever the shapes
        assert record.charged_ms == pytest.approx(40.0 * 1.25)
    assert device.stats.draft_busy_ms > 0


def test_a_draft_policy_that_joins_nothing_runs_every_draft_alone(fixture_adapter, small_manifest):
    from ticktock.replay.config import build, compose_run

    sessions = load_manifest(small_manifest)
    clock = ModeledClock(CostProfile.constant(40.0, encode_ms=10.0, batch_factor=1.25))
    decoder_cfg = compose_run("speclisten", "fixture", None, []).decoder
    engines = [ReplayEngine(fixture_adapter.replica(), build(decoder_cfg), clock, Sampling(), max_chunks=4)
               for _ in range(3)]
    device, sizes = SharedDevice(clock, ExpectedSavings(batch_drafts=False), batching=True), []
    ConcurrentReplay(engines, device, ConcurrencySettings(sessions=3, batching=True, stagger=0.0)).replay(
        sessions, _audio, lambda trace: sizes.extend(r.batch_size for r in trace.forwards if r.phase == "draft"))
    assert sizes and set(sizes) == {1} and device.stats.batched_draft_steps == 0 and device.stats.carried_drafts == 0
