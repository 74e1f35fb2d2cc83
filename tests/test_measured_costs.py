"""A measuring clock's estimates (``ticktock.replay.measured_costs``): they grow with the work, and a shared device
under the wall clock batches only where the batches it measured pay (a CPU's padded batches do not).

The work here costs virtual seconds (``VirtualTime``, the wall clock's timer): a sleep would cost what the machine's load
makes of it, and the batches' measured factor with it."""

import pytest

from ticktock.clocks.base import FORWARD, DeviceWork
from ticktock.clocks.wall import WallClock
from ticktock.replay.device import SessionLane, SharedDevice
from ticktock.replay.measured_costs import LEARN_BATCHES, MeasuredCosts
from ticktock.scheduling.round_robin import RoundRobin

UNIT_COST_S = 0.002
UNITS = 14


class VirtualTime:
    """Seconds that pass only when work says so."""

    def __init__(self):
        self.seconds = 0.0

    def __call__(self) -> float:
        return self.seconds

    def spend(self, seconds: float) -> None:
        self.seconds += seconds


class Padded:
    """An adapter whose batched forward costs ``factor`` times its members padded to the dearest."""

    def __init__(self, factor: float, time: VirtualTime):
        self.factor = factor
        self.time = time

    def synchronize(self) -> None:
        pass

    def forward_many(self, calls):
        self.time.spend(self.factor * len(calls) * max(call[1] for call in calls))
        return [None] * len(calls)


def one_forward_per_unit(lane, adapter, window_ms: float | None) -> None:
    """One forward per unit: post-audio once the unit has arrived, or (``window_ms``) a draft in the idle window
    that opens then."""
    for unit in range(UNITS):
        lane.wait_until(1000.0 * (unit + 1))
        work = DeviceWork(FORWARD, lambda: adapter.time.spend(UNIT_COST_S), adapter, query_tokens=1, call=(UNIT_COST_S,))
        lane.stopwatch(window_ms).run(work)


def three_sessions(factor: float, window_ms: float | None = None):
    """Three sessions whose units arrive together, each one forward, on a device under the wall clock whose batched
    forwards cost ``factor`` times their members padded; the device's stats. The draft policy (round robin) would let
    every waiting draft join a draft step."""
    seconds = VirtualTime()
    adapter = Padded(factor, seconds)
    device = SharedDevice(WallClock(timer=seconds), RoundRobin(), batching=True)
    for slot in range(3):
        device.add(SessionLane(device, slot, 0.0), lambda lane: one_forward_per_unit(lane, adapter, window_ms))
    device.run(on_finished=lambda lane: None)
    return device.stats


def test_batches_that_cost_more_than_their_members_alone_stop_once_learned_and_cheap_ones_go_on():
    assert three_sessions(factor=2.0).batched_steps == LEARN_BATCHES  # tried while learning, then each forward alone
    assert three_sessions(factor=0.2).batched_steps == UNITS  # every unit's three forwards in one step


def test_drafts_join_a_step_only_while_batches_pay_as_post_audio_forwards_do():
    # A batched draft step cannot be interrupted: on a CPU, where a batch costs what its members cost one after
    # another, it only makes a chunk that arrives meanwhile wait longer.
    assert three_sessions(factor=2.0, window_ms=900.0).batched_draft_steps == LEARN_BATCHES
    assert three_sessions(factor=0.2, window_ms=900.0).batched_draft_steps == UNITS


def test_an_estimate_grows_with_the_query_tokens_and_a_single_size_gives_its_mean():
    costs = MeasuredCosts()
    assert costs.estimate(FORWARD, 4) == 0.0  # nothing measured yet
    for tokens, cost in ((1, 3.0), (1, 5.0)):
        costs.add(FORWARD, tokens, cost)
    assert costs.estimate(FORWARD, 40) == 4.0  # one size so far: its mean, whatever the size asked
    costs.add(FORWARD, 41, 44.0)
    assert costs.estimate(FORWARD, 21) == pytest.approx(24.0)
    assert costs.estimate(FORWARD, 0) >= 0.0 and costs.estimate("encode", 1.0) == 0.0


def test_a_lane_of_a_measuring_device_expects_forwards_at_what_they_cost_so_far():
    """A decoder sharing a wall-clock device sizes its trees by the device's measured forwards (``forward_estimate_ms``);
    under a cost profile, by the profile."""
    from ticktock.clocks.modeled import CostProfile, ModeledClock

    device = SharedDevice(WallClock(), RoundRobin())
    lane = SessionLane(device, slot=0, start_ms=0.0)
    assert lane.stopwatch().forward_estimate_ms(5, 0) is None
    device.clock.stopwatch().charge_forward(1, 0, wall_ms=2.0)  # as the device's steps alone charge them
    device.clock.stopwatch().charge_forward(9, 0, wall_ms=10.0)
    assert lane.stopwatch().forward_estimate_ms(5, 0) == 6.0
    profiled = SharedDevice(ModeledClock(CostProfile.constant(7.0)), RoundRobin())
    assert SessionLane(profiled, slot=0, start_ms=0.0).stopwatch().forward_estimate_ms(40, 0) == 7.0
