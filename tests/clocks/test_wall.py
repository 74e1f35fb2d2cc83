import time

from ticktock.clocks.wall import WallClock


def test_wall_stopwatch_measures_elapsed_time_and_synchronises():
    calls = []
    clock = WallClock(synchronize=lambda: calls.append(1))
    watch = clock.stopwatch()
    busy_until = time.perf_counter() + 0.02
    while time.perf_counter() < busy_until:
        pass
    elapsed = watch.elapsed_ms()
    assert 19.0 <= elapsed < 500.0
    assert len(calls) >= 2  # at start and at each reading
    assert watch.charge_forward(10, 100, wall_ms=3.5) == 3.5  # charges what was measured
    assert watch.charge_encode(wall_ms=1.25) == 1.25
