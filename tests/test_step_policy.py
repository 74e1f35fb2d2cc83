"""The step policy of a shared device (``ticktock.replay.step_policy``) on hand-made waiting work: no device, no
greenlet, no model. Each case gives the waiting work, the time, the next arrival and constant costs (forwards of
100 ms, encodings of 30 or 60 ms), and checks the step the policy chooses; the device's own tests
(tests/test_device.py) check the same rules through whole sessions."""

import copy

import pytest

from ticktock.clocks.base import ENCODE, FORWARD, DeviceWork
from ticktock.clocks.modeled import CostProfile, ModeledClock
from ticktock.replay.measured_costs import MeasuredCosts
from ticktock.replay.step_policy import Estimates, StepPolicy, Waiting
from ticktock.scheduling.base import DraftPolicy
from ticktock.scheduling.expected_savings import ExpectedSavings
from ticktock.scheduling.round_robin import RoundRobin

INF = float("inf")


def forward(tokens: int = 1) -> DeviceWork:
    return DeviceWork(FORWARD, lambda: None, None, query_tokens=tokens, context_tokens=10)


def encoding() -> DeviceWork:
    return DeviceWork(ENCODE, lambda: None, None)


def estimates(encode_ms: float = 30.0, batch_factor: float | None = None) -> Estimates:
    profile = CostProfile.constant(100.0, encode_ms=encode_ms, batch_factor=batch_factor,
                                   encode_batch_factor=batch_factor)
    return Estimates(ModeledClock(profile), MeasuredCosts())


def post_audio(slot: int, arrival_ms: float, order: int, work: DeviceWork | None = None,
               submitted_ms: float | None = None) -> Waiting:
    return Waiting(work or forward(), slot, arrival_ms, arrival_ms if submitted_ms is None else submitted_ms, order)


def idle(slot: int, closes_ms: float, order: int, work: DeviceWork | None = None, submitted_ms: float = 0.0,
         talking: bool = False) -> Waiting:
    """Idle-window work; ``talking``: its session's last chunks were loud (the user may be speaking)."""
    return Waiting(work or forward(), slot, 0.0, submitted_ms, order, closes_ms=closes_ms,
                   recent_dbfs=-20.0 if talking else -80.0)


class Declines(DraftPolicy):
    name = "declines"

    def choose(self, candidates, now_ms):
        return None


def test_post_audio_work_runs_earliest_arrival_first_then_lower_slot():
    waiting = [post_audio(2, 1000.0, 1), post_audio(0, 1200.0, 2), post_audio(1, 1000.0, 3)]
    step = StepPolicy(RoundRobin()).next_step(waiting, 1300.0, INF, estimates())
    assert step.kind == "post_audio" and [w.slot for w in step.run] == [1]


def test_idle_work_whose_window_closed_is_dropped_before_anything_runs():
    closed, open_ = idle(0, 1000.0, 1), idle(1, 2000.0, 2)
    step = StepPolicy(RoundRobin()).next_step([closed, open_, post_audio(2, 1000.0, 3)], 1000.0, 2000.0, estimates())
    assert step.kind == "drop" and step.dropped == [closed] and not step.run


def test_idle_work_runs_only_when_it_ends_before_the_next_arrival():
    draft = idle(0, 5000.0, 1)
    assert StepPolicy(RoundRobin()).next_step([draft], 1000.0, 1099.0, estimates()).kind == "declined"
    assert StepPolicy(RoundRobin()).next_step([draft], 1000.0, 1100.0, estimates()).run == [draft]


def test_a_policy_that_leaves_the_device_idle_declines_and_nothing_waiting_is_none():
    assert StepPolicy(Declines()).next_step([idle(0, 5000.0, 1)], 0.0, INF, estimates()).kind == "declined"
    assert StepPolicy(Declines()).next_step([], 0.0, INF, estimates()).kind == "none"


def test_with_batching_post_audio_forwards_of_every_waiting_session_share_a_step_up_to_max_batch():
    waiting = [post_audio(slot, 1000.0, slot + 1) for slot in range(4)]
    step = StepPolicy(RoundRobin(), batching=True, max_batch=3).next_step(waiting, 1000.0, INF, estimates())
    assert step.kind == "post_audio" and [w.slot for w in step.run] == [0, 1, 2]
    alone = StepPolicy(RoundRobin()).next_step(waiting, 1000.0, INF, estimates())
    assert [w.slot for w in alone.run] == [0]


@pytest.mark.parametrize("now, first", [(1330.0, FORWARD), (1430.0, ENCODE)])
def test_an_arrived_chunks_encoding_leads_once_it_has_waited_its_cost(now, first):
    # the docstring's case: slot 0's forwards for its chunk of 1000 ms; slot 1's encoding of the chunk of 1310 ms
    # costs 30 ms, so it leads once it has waited 30 ms
    waiting = [post_audio(0, 1000.0, 1, submitted_ms=now), post_audio(1, 1310.0, 2, encoding())]
    step = StepPolicy(ExpectedSavings(), batching=True).next_step(waiting, now, INF, estimates())
    assert step.kind == "post_audio" and step.run[0].work.kind == first


def test_waiting_post_audio_forwards_lend_one_forwards_time_to_an_idle_encoding_and_no_more():
    # the docstring's case: slot 0 writes forwards (100 ms); slots 1 and 2, whose users speak, must encode a
    # hypothesis (60 ms) first
    waiting = [post_audio(0, 0.0, 3, submitted_ms=100.0), idle(1, 1000.0, 1, encoding(), talking=True),
               idle(2, 1000.0, 2, encoding(), talking=True)]
    policy = StepPolicy(ExpectedSavings(), batching=True)
    step = policy.next_step(waiting, 100.0, 1000.0, estimates(encode_ms=60.0))
    assert step.kind == "lent" and [w.slot for w in step.run] == [1]
    assert step.lenders == (0,) and step.lent_ms == 60.0
    after = policy.next_step(waiting[::2], 160.0, 1000.0, estimates(encode_ms=60.0), lent_ms={0: 60.0})
    assert after.kind == "post_audio" and [w.slot for w in after.run] == [0]  # 60 + 60 > 100: slot 2 waits


def test_nothing_is_lent_where_the_draft_policy_lets_no_draft_ride_along():
    waiting = [post_audio(0, 0.0, 2, submitted_ms=100.0), idle(1, 1000.0, 1, encoding(), talking=True)]
    step = StepPolicy(RoundRobin(), batching=True).next_step(waiting, 100.0, 1000.0, estimates(encode_ms=60.0))
    assert step.kind == "post_audio" and [w.slot for w in step.run] == [0]


def test_drafts_join_a_draft_step_while_their_windows_allow():
    waiting = [idle(0, 5000.0, 1), idle(1, 5000.0, 2), idle(2, 1080.0, 3)]
    step = StepPolicy(RoundRobin(), batching=True).next_step(waiting, 1000.0, INF, estimates(batch_factor=1.5))
    assert step.kind == "draft" and step.joined and [w.slot for w in step.run] == [0, 1]  # slot 2's window closes first


def test_the_policy_changes_nothing_it_is_given():
    waiting = [post_audio(0, 0.0, 3, submitted_ms=100.0), idle(1, 1000.0, 1, encoding(), talking=True),
               idle(2, 1000.0, 2, encoding(), talking=True)]
    lent = {0: 0.0}
    before = (copy.copy(waiting), [copy.copy(w) for w in waiting], dict(lent))
    first = StepPolicy(ExpectedSavings(), batching=True).next_step(waiting, 100.0, 1000.0, estimates(60.0), lent)
    second = StepPolicy(ExpectedSavings(), batching=True).next_step(waiting, 100.0, 1000.0, estimates(60.0), lent)
    assert first.kind == "lent" and (first.kind, first.run, first.lenders) == (second.kind, second.run, second.lenders)
    assert waiting == before[0] and lent == before[2]
    for was, now in zip(before[1], waiting):
        assert (was.slot, was.arrival_ms, was.submitted_ms, was.closes_ms, was.order) == \
            (now.slot, now.arrival_ms, now.submitted_ms, now.closes_ms, now.order)
