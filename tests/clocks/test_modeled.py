import pytest

from ticktock.clocks.modeled import CostProfile, ModeledClock, ProfileError
from ticktock.resources import resource_path


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
