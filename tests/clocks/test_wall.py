import time

from ticktock.clocks.wall import WallClock


def test_wall_stopwatch_measures_elapsed_time_and_synchronises():
    """The real timer: only a lower bound, which no load can break (a busy machine only makes it later)."""
    calls = []
    clock = WallClock(synchronize=lambda: calls.append(1))
    watch = clock.stopwatch()
    busy_until = time.perf_counter() + 0.02
    while time.perf_counter() < busy_until:
        pass
    elapsed = watch.elapsed_ms()
    assert elapsed >= 19.0
    assert len(calls) >= 2  # at start and at each reading
    assert watch.charge_forward(10, 100, wall_ms=3.5) == 3.5  # charges what was measured
    assert watch.charge_encode(wall_ms=1.25) == 1.25


def test_wall_stopwatch_reads_its_timer_and_lets_priced_time_pass():
    """A fixed timer: the arithmetic, exactly."""
    readings = iter([100.0, 100.020, 100.030, 100.030])
    watch = WallClock(timer=lambda: next(readings)).stopwatch()
    assert round(watch.elapsed_ms(), 6) == 20.0
    assert watch.charge_priced(4.0, wall_ms=10.0) == 4.0  # the priced cost in place of the 10 ms measured
    assert round(watch.elapsed_ms(), 6) == 30.0 - 6.0


def test_the_wall_clock_learns_what_forwards_cost_from_every_stopwatch():
    """No estimate before a forward was measured; then a least-squares line over query tokens, shared by the clock's
    stopwatches (what a decoder's ``verify_cost_cap`` sizes its trees by)."""
    clock = WallClock(timer=lambda: 0.0)
    assert clock.stopwatch().forward_estimate_ms(5, 0) is None
    clock.stopwatch().charge_forward(1, 100, wall_ms=5.0)
    assert clock.stopwatch().forward_estimate_ms(33, 0) == 5.0  # one size measured: its mean
    clock.stopwatch().charge_forward(9, 100, wall_ms=9.0)
    assert clock.stopwatch().forward_estimate_ms(33, 0) == 21.0
    clock.stopwatch().charge_batch([(1, 100), (1, 100)], wall_ms=50.0)  # a batched step is not a forward alone
    assert clock.stopwatch().forward_estimate_ms(33, 0) == 21.0
