"""``ticktock calibrate``'s arithmetic on fixed timings, never on what this machine measured: a fixed timer makes
every timed block cost the same, so the whole profile is known in advance; fixed measurements of a busy machine (a
batch timed at 160.7 x one encoding) give a profile at the limit with a note, not a profile-check crash. The real
measurement path is run end to end by tests/test_calibrate.py, which asserts only on structure."""

import math

import pytest
from hydra import compose, initialize_config_dir

from ticktock.calibrate import (Measured, Measuring, batch_factors, batch_line, calibrate, encode_batch_factors,
                                encode_batch_line, measured_profile)
from ticktock.clocks.modeled import MAX_BATCH_FACTOR, CostProfile
from ticktock.shipped import resource_path

STEP_MS = 5.0


class FixedTimer:
    """A timer (seconds) that moves ``step_ms`` at every reading: every timed block takes exactly ``step_ms``."""

    def __init__(self, step_ms: float):
        self.now, self.step = 0.0, step_ms / 1000.0

    def __call__(self) -> float:
        self.now += self.step
        return self.now


def calibrate_config(out, *overrides):
    with initialize_config_dir(config_dir=str(resource_path("configs")), version_base=None):
        return compose("calibrate", overrides=["model=fixture", f"out={out}", "repeats=2", "warmup=1",
                                               "query_tokens=[1,8]", "context_tokens=[0,64]", *overrides])


def test_calibrate_on_a_fixed_timer_writes_exactly_the_profile_the_timings_give(tmp_path, capsys):
    out = tmp_path / "p.yaml"
    calibrate(calibrate_config(out, "batch_sizes=[1,2,4]", "encode_batch_sizes=[1,2,4]"), timer=FixedTimer(STEP_MS))
    profile = CostProfile.load(out)
    assert profile.forward_table == [[STEP_MS, STEP_MS], [STEP_MS, STEP_MS]] and profile.encode_ms == STEP_MS
    assert profile.encode_fixed_ms == STEP_MS  # a 100 ms step costing a whole chunk's time: all of it is fixed
    assert profile.batch_factor == [1.0, 1.0, 1.0]  # step / max(forward_ms(B, B x 64), forward_ms(1, 64)) = 5 / 5
    assert profile.encode_batch_factor == [1.0, 1.0, 1.0]
    printed = capsys.readouterr().out
    assert "batch steps at context 64: B=1: 5.00 ms (factor 1.000), B=2: 5.00 ms (factor 1.000), B=4: 5.00 ms" in printed
    assert "encode batches: B=1: 5.00 ms, B=2: 5.00 ms (factor 1.000), B=4: 5.00 ms (factor 1.000)" in printed


BUSY_NOTE = "above 100, the largest factor a profile takes: the machine was too busy to time this batch, 100 written"


def test_a_factor_a_busy_machine_pushed_above_the_limit_is_written_at_the_limit_with_a_note():
    factors, notes = encode_batch_factors([1, 2, 4, 8], [1.0, 1.2, 1.5, 160.7])  # the failure seen on a loaded machine
    assert factors == [1.0, 1.2, 1.5, MAX_BATCH_FACTOR] and notes[:3] == [None, None, None]
    assert notes[3].startswith("measured 160.700, " + BUSY_NOTE)
    assert "(factor 100.000; measured 160.700, above 100" in encode_batch_line([1, 2, 4, 8], [1.0, 1.2, 1.5, 160.7],
                                                                                factors, notes)
    profile = CostProfile("p", [1, 8], [0, 64], [[2.0, 2.0], [4.0, 4.0]])
    factors, notes = batch_factors(profile, [1, 2, 8], 64, [2.0, 3.0, 500.0])  # 500 / forward_ms(8, 512) = 125 x the model
    assert factors == [1.0, 3.0 / profile.forward_ms(2, 128), MAX_BATCH_FACTOR] and notes[:2] == [None, None]
    assert notes[2].startswith("measured 125.000, " + BUSY_NOTE)


def test_a_busy_machines_measurements_make_a_valid_profile_whose_sources_say_what_was_written(tmp_path):
    cfg = calibrate_config(tmp_path / "p.yaml")
    measured = Measured(table=[[2.0, 2.5], [3.0, 3.5]], encode=1.0, encode_fixed=0.5, batch_context=64,
                        sizes=[1, 2, 4, 8], batch_costs=[2.5, 2.6, 3.0, 900.0],
                        encode_sizes=[1, 2, 4, 8], encode_costs=[1.0, 1.2, 1.5, 160.7])
    env = {"cuda_device": None, "cpu": "a CPU", "torch_threads": 1, "versions": {"torch": "2"}}
    profile, batch_notes, encode_notes = measured_profile(cfg, measured, Measuring({}, env, 100), None, "calibrate")
    assert profile.encode_batch_factor[-1] == MAX_BATCH_FACTOR and profile.batch_factor[-1] == MAX_BATCH_FACTOR
    assert CostProfile.load(_written(tmp_path, profile)).encode_batch_factor == [1.0, 1.2, 1.5, 100.0]  # every check passes
    assert BUSY_NOTE in profile.sources["encode_batch_factor"]["measured"]
    assert "B=8: measured " in profile.sources["batch_factor"]["measured"]
    assert BUSY_NOTE in batch_line(64, [1, 2, 4, 8], measured.batch_costs, profile.batch_factor, batch_notes)


def _written(folder, profile):
    path = folder / "written.yaml"
    path.write_text(profile.to_yaml())
    return path


@pytest.mark.parametrize("costs", [[4.0, 4.4, 4.2, 6.0], [3.0, 1.0, 2.0, 9.0], [1e-9, 1.0, 1.0, 1.0]])
def test_encode_batch_factors_always_make_a_valid_batch_dimension(costs):
    from ticktock.clocks.modeled import encode_batch_problem

    factors, _ = encode_batch_factors([1, 2, 4, 8], costs)
    assert encode_batch_problem([1, 2, 4, 8], factors) is None
    assert all(math.isfinite(f) and 1.0 <= f <= MAX_BATCH_FACTOR for f in factors)
