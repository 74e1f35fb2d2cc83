from pathlib import Path

import numpy as np

from ticktock.clocks.modeled import CostProfile, ModeledClock
from ticktock.replay.concurrency import ConcurrencySettings, ConcurrentReplay
from ticktock.decoders.ar import ARDecoder
from ticktock.replay.device import SharedDevice
from ticktock.replay.engine import ReplayEngine
from ticktock.sessions.manifest import Session
from ticktock.scheduling.base import DraftCandidate
from ticktock.scheduling.expected_savings import ExpectedSavings
from ticktock.scheduling.round_robin import RoundRobin

from scripted import ScriptedAdapter

TOOL_OPEN = 7


def candidate(slot, closes=1000.0, hypothesis=(), reply_open=False, dbfs=-80.0, order=0, forwards=0):
    return DraftCandidate(slot, closes, forwards, hypothesis, reply_open, dbfs, TOOL_OPEN, order)


def test_tool_calls_first_then_what_a_first_forward_tells_then_replies_then_talking_users_then_the_rest():
    policy = ExpectedSavings(speech_dbfs=-45.0)
    quiet_soon = candidate(0, closes=200.0)
    talking_first = candidate(1, closes=900.0, dbfs=-30.0)
    drafting_call = candidate(2, closes=950.0, hypothesis=(TOOL_OPEN, 11, 12), forwards=3)
    replying = candidate(3, closes=990.0, hypothesis=(4, 10), reply_open=True, forwards=2)
    talking_more = candidate(4, closes=300.0, hypothesis=(4,), dbfs=-30.0, forwards=1)
    everyone = [quiet_soon, talking_first, drafting_call, replying, talking_more]
    ranked = sorted(everyone, key=lambda c: policy.rank(c, 0.0))
    assert [c.slot for c in ranked] == [2, 1, 3, 4, 0]
    assert policy.choose([quiet_soon, candidate(5, closes=100.0)], 0.0).slot == 5  # soonest chunk first


def test_a_low_value_draft_waits_rather_than_delay_another_sessions_chunk():
    policy = ExpectedSavings()
    quiet = DraftCandidate(0, 900.0, 0, (), False, -80.0, TOOL_OPEN, 1, step_ms=30.0, next_arrival_ms=120.0)
    replying = DraftCandidate(1, 900.0, 0, (), True, -80.0, TOOL_OPEN, 2, step_ms=30.0, next_arrival_ms=120.0)
    assert policy.choose([quiet], now_ms=80.0) is quiet  # ends at 110, before the arrival at 120
    assert policy.choose([quiet], now_ms=100.0) is None  # would end at 130: the device idles until 120
    assert policy.choose([quiet, replying], now_ms=100.0) is replying  # worth the delay



class Drafter(ARDecoder):
    """AR plus three throw-away draft forwards in every idle window (rolled back)."""

    def idle(self, window):
        state = window.adapter.snapshot()
        for _ in range(3):
            window.forward(window.next_inputs.segments(window.silence()))
        window.adapter.restore(state)


def windows_of_the_replying_session(policy):
    # Slot 0 speaks in chunk 0 without ending its turn (a reply is open); slot 1 only listens.
    scripts = [{0: [4, 10, 5]}, {}]
    clock = ModeledClock(CostProfile.constant(100.0))
    engines = [ReplayEngine(ScriptedAdapter(script), Drafter(), clock) for script in scripts]
    traces = {}
    sessions = [Session(f"s{i}", "test", Path(f"s{i}.flac"), 3.0) for i in range(2)]
    ConcurrentReplay(engines, SharedDevice(clock, policy), ConcurrencySettings(sessions=2, stagger=0.0)).replay(
        sessions, lambda s: np.zeros(48_000, np.float32), lambda trace: traces.setdefault(trace.session.session_id, trace))
    return traces["s0"].chunks[1].counters, traces["s1"].chunks[1].counters


def test_the_replying_session_gets_the_idle_device_first():
    replying, listening = windows_of_the_replying_session(ExpectedSavings())
    # chunk 0: s0 speaks 1000-1300, s1 listens 1300-1400; then s0's three drafts run back to back (1400-1700)
    assert replying.window_used_ms == 400.0 and listening.window_used_ms == 600.0
    replying_rr, listening_rr = windows_of_the_replying_session(RoundRobin())
    assert replying_rr.window_used_ms == 600.0  # drafts alternate: s0 s1 s0 s1 s0 s1 from 1400


def _candidate(slot, closes, hypothesis=(), reply_open=False, dbfs=-80.0, order=None, next_arrival=float("inf"),
               purpose="draft"):
    from ticktock.scheduling.base import DraftCandidate

    return DraftCandidate(slot, closes, 1, hypothesis, reply_open, dbfs, 7, order if order is not None else slot,
                          step_ms=20.0, next_arrival_ms=next_arrival, purpose=purpose)


def test_drafts_join_a_draft_step_in_rank_order_while_their_windows_and_the_next_arrival_allow():
    from ticktock.scheduling.expected_savings import ExpectedSavings

    policy = ExpectedSavings()
    step_ms = lambda joined: 20.0 + 5.0 * len(joined)  # noqa: E731 - each joined forward adds 5 ms
    replying = _candidate(1, 500.0, (5, 9), reply_open=True, next_arrival=130.0)
    quiet = _candidate(2, 500.0, next_arrival=130.0)
    closing = _candidate(3, 122.0, (5,), reply_open=True, next_arrival=130.0)  # its window closes too soon
    joined = policy.join([quiet, closing, replying], now_ms=100.0, step_ms=step_ms, post_audio=False)
    # replying: 100 + 25 <= 130; closing: 100 + 30 > 122; quiet: 100 + 30 <= 130
    assert [c.slot for c in joined] == [1, 2]
    late = policy.join([quiet], now_ms=110.0, step_ms=step_ms, post_audio=False)  # 110 + 25 > 130 (and > 110 + 20)
    assert late == []


def test_a_post_audio_step_carries_valuable_drafts_only_while_they_cost_little():
    from ticktock.scheduling.expected_savings import ExpectedSavings

    step_ms = lambda joined: 100.0 + 4.0 * len(joined)  # noqa: E731
    drafts = [_candidate(s, 900.0, (5,), reply_open=True, order=s) for s in range(1, 5)] + [_candidate(9, 900.0)]
    joined = ExpectedSavings(carry_slowdown=0.1).join(drafts, now_ms=0.0, step_ms=step_ms, post_audio=True)
    assert [c.slot for c in joined] == [1, 2]  # 108 <= 110 < 112; the quiet tier-4 draft never rides along
    assert ExpectedSavings(batch_drafts=False).join(drafts, 0.0, step_ms, True) == []
    assert ExpectedSavings().carries_drafts and not ExpectedSavings(batch_drafts=False).carries_drafts


def test_early_prefill_ranks_first():
    from ticktock.scheduling.expected_savings import ExpectedSavings

    policy = ExpectedSavings()
    prefill = _candidate(2, 900.0, purpose="prefill")
    calling = _candidate(1, 950.0, (7, 9))
    assert policy.choose([calling, prefill], 0.0).slot == 2
