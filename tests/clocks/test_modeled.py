import re

import pytest

from ticktock.clocks.base import ENCODE, FORWARD, DeviceWork
from ticktock.clocks.modeled import CostProfile, ModeledClock, ProfileError
from ticktock.errors import ConfigError, shown
from ticktock.shipped import resource_path


def test_bilinear_interpolation_and_extrapolation():
    p = CostProfile("p", [1, 11], [0, 1000], [[10.0, 12.0], [15.0, 17.0]], encode_ms=3.0)
    assert p.forward_ms(1, 0) == 10.0
    assert p.forward_ms(11, 1000) == 17.0
    assert p.forward_ms(6, 500) == pytest.approx(13.5)
    assert p.forward_ms(21, 0) == pytest.approx(20.0)  # linear beyond the grid
    assert p.forward_ms(1, 2000) == pytest.approx(14.0)


def test_stopwatch_sums_charges_and_ignores_wall_time():
    watch = ModeledClock(CostProfile.constant(20.0, encode_ms=5.0)).stopwatch()
    assert watch.charge_encode(wall_ms=99.0) == 5.0
    assert watch.charge_forward(12, 300, wall_ms=99.0) == 20.0
    assert watch.charge_forward(1, 312, wall_ms=0.1) == 20.0
    assert watch.elapsed_ms() == 45.0


def test_shipped_profile_loads_and_is_memory_bound_for_short_forwards():
    profile = CostProfile.load(resource_path("configs/profiles/a100-8b-derived.yaml"))
    one = profile.forward_ms(1, 2000)
    assert 20 < one < 40
    assert profile.forward_ms(32, 2000) < 1.1 * one  # a short sequence costs about one token
    assert "DERIVED" in profile.provenance


def test_bad_profiles_name_the_file_and_field(tmp_path):
    with pytest.raises(ProfileError, match="not found"):
        CostProfile.load(tmp_path / "nope.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nquery_tokens: [1, 2]\ncontext_tokens: [0]\n")
    with pytest.raises(ProfileError, match=r"bad.yaml: field 'forward_ms' missing"):
        CostProfile.load(bad)
    bad.write_text("name: x\nquery_tokens: [2, 1]\ncontext_tokens: [0]\nforward_ms: [[1], [2]]\n")
    with pytest.raises(ProfileError, match="increasing"):
        CostProfile.load(bad)


def test_profile_round_trips_through_yaml(tmp_path):
    p = CostProfile("p", [1, 4], [0, 100], [[1.0, 2.0], [3.0, 4.0]], encode_ms=0.5, provenance="test")
    path = tmp_path / "p.yaml"
    path.write_text(p.to_yaml())
    q = CostProfile.load(path)
    assert (q.query_tokens, q.context_tokens, q.forward_table, q.encode_ms) == ([1, 4], [0, 100], [[1.0, 2.0], [3.0, 4.0]], 0.5)


GOOD = "name: x\nencode_ms: 5.0\nquery_tokens: [1, 4]\ncontext_tokens: [0, 100]\nforward_ms:\n- [1.0, 2.0]\n- [3.0, 4.0]\n"


@pytest.mark.parametrize("old, new, message", [
    ("- [3.0, 4.0]", "- [3.0, -100.0]", r"p.yaml:7: field 'forward_ms\[1\]\[1\]': must be a finite number of milliseconds from 0 to 3600000 \(one hour\), got -100.0"),
    ("- [3.0, 4.0]", "- [3.0, .nan]", r"p.yaml:7: field 'forward_ms\[1\]\[1\]': must be a finite number of milliseconds from 0 to 3600000 \(one hour\), got nan"),
    ("- [1.0, 2.0]", "- [1.0, fast]", r"p.yaml:6: field 'forward_ms\[0\]\[1\]': must be a finite number of milliseconds from 0 to 3600000 \(one hour\), got 'fast'"),
    ("encode_ms: 5.0", "encode_ms: -1", r"p.yaml:2: field 'encode_ms': must be a finite number of milliseconds from 0 to 3600000 \(one hour\), got -1"),
    ("- [3.0, 4.0]", "- [3.0]", r"p.yaml:7: field 'forward_ms\[1\]': must be a row of 2 values \(one per context_tokens value\), got 1 values"),
    ("query_tokens: [1, 4]", "query_tokens: [1, 2.5]", r"p.yaml:3: field 'query_tokens\[1\]': must be an integer from 1 to 100000000, got 2.5"),
    ("context_tokens: [0, 100]", "context_tokens: [-8, 100]", r"p.yaml:4: field 'context_tokens\[0\]': must be an integer from 0 to 100000000, got -8"),
    ("query_tokens: [1, 4]", "query_tokens: [1, 4", r"p.yaml:4:15: not valid YAML \(expected ',' or '\]', but got ':'\)"),
    ("- [3.0, 4.0]", "- [3.0, 1.0e+300]", r"p.yaml:7: field 'forward_ms\[1\]\[1\]': must be a finite number of milliseconds from 0 to 3600000 \(one hour\), got 1e\+300"),
    ("context_tokens: [0, 100]", "context_tokens: [0, 1000000000000000000000000]", r"p.yaml:4: field 'context_tokens\[1\]': must be an integer from 0 to 100000000"),
    ("encode_ms: 5.0", "encode_ms: 5.0\nencode_fixd_ms: 2.0", r"p.yaml:3: field 'encode_fixd_ms': unknown field \(did you mean 'encode_fixed_ms'\?\)"),
    ("name: x", "name: x\nspeed: fast", r"p.yaml:2: field 'speed': unknown field \(known: name, model, device, provenance, encode_ms, "),
    ("name: x", "name: [x, y]", r"p.yaml:1: field 'name': must be text, got list"),
])
def test_every_cost_profile_value_is_checked_naming_file_line_and_field(tmp_path, old, new, message):
    path = tmp_path / "p.yaml"
    path.write_text(GOOD)
    assert CostProfile.load(path).forward_ms(4, 100) == 4.0
    path.write_text(GOOD.replace(old, new))
    with pytest.raises(ProfileError, match=message):
        CostProfile.load(path)


def test_profiles_built_in_code_are_checked_too():
    with pytest.raises(ProfileError, match=r"profile p: field 'forward_ms\[0\]\[0\]': must be a finite number of milliseconds from 0 to 3600000"):
        CostProfile("p", [1], [0], [[-100.0]])
    with pytest.raises(ProfileError, match=r"profile c: field 'encode_ms': must be a finite number of milliseconds from 0 to 3600000"):
        CostProfile("c", [1], [0], [[1.0]], encode_ms=float("inf"))


def test_a_piece_of_a_chunk_costs_the_fixed_part_and_its_share_of_the_rest():
    watch = ModeledClock(CostProfile.constant(20.0, encode_ms=85.0, encode_fixed_ms=16.5)).stopwatch()
    assert watch.charge_encode(wall_ms=1.0) == 85.0 and watch.charge_encode(1.0, fraction=0.2) == pytest.approx(30.2)
    plain = ModeledClock(CostProfile.constant(20.0, encode_ms=85.0)).stopwatch()
    assert plain.charge_encode(1.0, fraction=0.2) == 85.0  # no encode_fixed_ms: every encoding costs encode_ms
    with pytest.raises(ProfileError, match="encode_fixed_ms': must be null or a number from 0 to encode_ms = 85.0"):
        CostProfile.constant(20.0, encode_ms=85.0, encode_fixed_ms=90.0)
    shipped = CostProfile.load(resource_path("configs/profiles/a100-8b-derived.yaml"))
    assert (shipped.encode_ms, shipped.encode_fixed_ms) == (85.0, 16.5)


def test_a_stopwatch_lets_time_pass_without_work():
    watch = ModeledClock(CostProfile.constant(20.0)).stopwatch()
    watch.charge_forward(1, 0, wall_ms=0.1)
    watch.wait(130.0)
    assert watch.elapsed_ms() == 150.0 and watch.waited_ms == 130.0


@pytest.mark.parametrize("text, message", [
    (GOOD.encode().replace(b"encode_ms", b"enc\xffode_ms"), r"p.yaml:2:4: not UTF-8 text \(byte 0xff\)"),
    (b"forward_ms: " + b"[" * 50_000 + b"]" * 50_000, r"p.yaml(:1:\d+: not valid YAML \(exceeded maximum nesting depth\)|: not a cost profile \(nested too deeply\))"),
])
def test_an_unreadable_cost_profile_is_one_line_naming_the_file(tmp_path, text, message):
    path = tmp_path / "p.yaml"
    path.write_bytes(text)
    with pytest.raises(ProfileError, match=message):
        CostProfile.load(path)


class _Device:
    """An adapter stand-in: the device barrier of ``Stopwatch.run``."""

    def synchronize(self):
        pass


def test_encode_scale_scales_every_encoding_and_nothing_else():
    profile = CostProfile.constant(20.0, encode_ms=85.0, encode_fixed_ms=16.5, batch_factor=1.5)
    half = ModeledClock(profile, encode_scale=0.5).stopwatch()
    assert half.charge_encode(wall_ms=1.0) == 42.5  # a whole chunk: 85 ms as profiled
    assert half.charge_encode(1.0, fraction=0.2) == pytest.approx(15.1)  # a piece: (16.5 + 68.5 x 0.2) / 2
    assert half.charge_forward(4, 100, wall_ms=1.0) == 20.0
    assert half.charge_batch([(1, 0), (1, 0)], wall_ms=1.0) == 30.0
    assert half.charge_priced(7.0, wall_ms=1.0) == 7.0  # a talker's work: its own price
    assert half.elapsed_ms() == pytest.approx(42.5 + 15.1 + 20.0 + 30.0 + 7.0)
    # the path a session (alone or on a shared device) takes: Stopwatch.run of the work
    watch = ModeledClock(profile, encode_scale=0.25).stopwatch()
    encoded = watch.run(DeviceWork(ENCODE, lambda: "features", _Device()))
    forward = watch.run(DeviceWork(FORWARD, lambda: "logits", _Device(), query_tokens=1, context_tokens=0))
    assert (encoded.charged_ms, forward.charged_ms) == (21.25, 20.0)
    assert ModeledClock(profile).stopwatch().charge_encode(1.0) == 85.0


def test_encode_scale_is_described_only_when_it_is_not_one():
    profile = CostProfile("p", [1], [0], [[10.0]], encode_ms=5.0, model="8B", device="A100", provenance="derived")
    plain = {"name": "modeled", "profile": "p", "profile_model": "8B", "profile_device": "A100",
             "profile_provenance": "derived"}
    assert ModeledClock(profile).describe() == plain
    assert ModeledClock(profile, encode_scale=1).describe() == plain
    assert ModeledClock(profile, encode_scale=0.25).describe() == {**plain, "encode_scale": 0.25}


@pytest.mark.parametrize("value", [0, -0.5, 100.5, float("nan"), float("inf"), True, "half", None])
def test_a_bad_encode_scale_is_one_line_naming_the_key_value_and_range(value):
    with pytest.raises(ConfigError, match=r"^clock\.encode_scale: must be a finite number > 0 and <= 100 \(.*\), got "
                                          + re.escape(shown(value)) + "$"):
        ModeledClock(CostProfile.constant(10.0), encode_scale=value)
    assert ModeledClock(CostProfile.constant(10.0), encode_scale=100).encode_scale == 100.0


def test_the_run_config_sets_encode_scale_and_checks_it_before_any_work():
    from ticktock.replay.config import build, check_run_options, compose_run

    assert compose_run("ar", "fixture", None, []).clock.encode_scale == 1.0
    cfg = compose_run("ar", "fixture", None, ["clock.encode_scale=0.25"])
    check_run_options(cfg)
    assert build(cfg.clock).describe()["encode_scale"] == 0.25
    with pytest.raises(ProfileError, match=r"clock\.encode_scale: must be a finite number > 0 and <= 100 .*got 0$"):
        check_run_options(compose_run("ar", "fixture", None, ["clock.encode_scale=0"]))


HUGE = "1" + "0" * 400  # a float() of it raised OverflowError before any check
LONGEST = "1" + "0" * 5000  # more digits than Python converts from text: YAML's int() raised ValueError
COST_RANGE = r"must be a finite number of milliseconds from 0 to 3600000"


@pytest.mark.parametrize("digits", [HUGE, LONGEST])
@pytest.mark.parametrize("old, new, message", [
    ("- [3.0, 4.0]", "- [3.0, {n}]", r"p.yaml:7: field 'forward_ms\[1\]\[1\]': " + COST_RANGE),
    ("encode_ms: 5.0", "encode_ms: {n}", r"p.yaml:2: field 'encode_ms': " + COST_RANGE),
    ("encode_ms: 5.0", "encode_ms: 5.0\nencode_fixed_ms: {n}", r"p.yaml:3: field 'encode_fixed_ms': must be null or a number from 0 to encode_ms"),
    ("encode_ms: 5.0", "encode_ms: 5.0\nencode_first_ms: {n}", r"p.yaml:3: field 'encode_first_ms': must be null or a finite number"),
    ("query_tokens: [1, 4]", "query_tokens: [1, {n}]", r"p.yaml:3: field 'query_tokens\[1\]': must be an integer from 1 to 100000000"),
    ("name: x", "name: x\nbatch_sizes: [1, 2]\nbatch_factor: [1.0, {n}]", r"p.yaml:3: field 'batch_factor\[1\]': must be a number > 0 and <= 100"),
    ("name: x", "name: x\nbatch_sizes: [1, {n}]\nbatch_factor: [1.0, 1.0]", r"p.yaml:2: field 'batch_sizes\[1\]': must be an integer from 1 to 100000000"),
    ("name: x", "name: x\nencode_batch_sizes: [1, 2]\nencode_batch_factor: [1.0, {n}]", r"p.yaml:3: field 'encode_batch_factor\[1\]': must be a number from 1 to 100"),
    ("name: x", "name: x\ntalkers:\n  espeak: {{first_packet_ms: {n}, ms_per_audio_s: 1.0}}", r"p.yaml:3: field 'talkers\.espeak\.first_packet_ms': " + COST_RANGE),
    ("name: x", "name: x\ntalkers:\n  espeak: {{first_packet_ms: 1.0, ms_per_audio_s: {n}}}", r"p.yaml:3: field 'talkers\.espeak\.ms_per_audio_s': " + COST_RANGE),
])
def test_a_huge_integer_in_any_numeric_field_is_the_one_line_profile_error(tmp_path, digits, old, new, message):
    path = tmp_path / "p.yaml"
    path.write_text(GOOD.replace(old, new.format(n=digits)))
    with pytest.raises(ProfileError, match=message) as refused:
        CostProfile.load(path)
    assert len(str(refused.value)) < 400 and "\n" not in str(refused.value)
    if digits is LONGEST:
        assert str(refused.value).endswith("got an integer of 5001 digits")


def test_a_huge_integer_encode_scale_is_out_of_range_not_an_overflow():
    with pytest.raises(ConfigError, match=r"^clock\.encode_scale: must be a finite number > 0 and <= 100 "):
        ModeledClock(CostProfile.constant(10.0), encode_scale=10 ** 400)
