"""The cost profile's batch model of audio encodings, its cold start (``encode_first_ms``) and the per-field sources:
what they charge, their checks (non-monotone, below one encoding, missing sizes, unknown source kinds and fields), and
the two shipped profiles, every number of which names its source."""

from pathlib import Path

import pytest

from ticktock.clocks.modeled import CostProfile, ModeledClock, ProfileError
from ticktock.results.fingerprint import profile_sha256

PROFILES = Path(__file__).parents[2] / "ticktock" / "configs" / "profiles"
HEAD = "query_tokens: [1]\ncontext_tokens: [0]\nforward_ms: [[10.0]]\nencode_ms: 50.0\n"


def write(tmp_path, text: str) -> Path:
    path = tmp_path / "p.yaml"
    path.write_text(HEAD + text)
    return path


def test_a_batch_of_encodings_costs_the_dearest_alone_times_its_factor():
    profile = CostProfile("p", [1], [0], [[10.0]], encode_ms=50.0, encode_fixed_ms=10.0, encode_first_ms=80.0,
                          encode_batch_sizes=[1, 2, 4], encode_batch_factor=[1.0, 1.1, 1.3])
    assert profile.encode_batch_ms([(1.0, False)]) == 50.0
    assert profile.encode_batch_ms([(1.0, False), (0.5, False)]) == pytest.approx(55.0)  # 50 x 1.1
    assert profile.encode_batch_ms([(0.5, False)] * 3) == pytest.approx(30.0 * 1.2)  # a piece: 10 + 40 x 0.5; B = 3
    assert profile.encode_batch_ms([(1.0, True), (1.0, False)]) == pytest.approx(88.0)  # a first chunk is dearest
    assert profile.encode_batch_ms([(1.0, False)] * 8) == pytest.approx(65.0)  # beyond the sizes: the last factor
    watch = ModeledClock(profile, encode_scale=0.5).stopwatch()
    assert watch.charge_encode_batch([(1.0, False), (1.0, False)], wall_ms=1.0) == pytest.approx(27.5)
    assert watch.charge_encode(1.0, first=True) == 40.0 and watch.charge_encode(1.0) == 25.0


def test_a_profile_without_a_batch_model_of_encodings_says_how_to_get_one():
    with pytest.raises(ProfileError, match=r"^profile constant: no batch dimension for audio encodings "
                                           r"\(encode_batch_sizes, encode_batch_factor\); measure one with "):
        CostProfile.constant(10.0, encode_ms=5.0).encode_batch_ms([(1.0, False), (1.0, False)])


@pytest.mark.parametrize("text, line, message", [
    ("encode_batch_sizes: [1, 2, 4]\nencode_batch_factor: [1.0, 1.2, 1.1]\n", 6,
     "field 'encode_batch_factor[2]': must not fall as the batch grows (a batch of 4 costs no less than a batch of 2: "
     "1.2), got 1.1"),
    ("encode_batch_sizes: [1, 2]\nencode_batch_factor: [1.0, 0.8]\n", 6,
     "field 'encode_batch_factor[1]': must be >= 1 (a batch of encodings costs at least one encoding), got 0.8"),
    ("encode_batch_sizes: [1, 2]\nencode_batch_factor: [1.2, 1.3]\n", 6,
     "field 'encode_batch_factor[0]': must be 1.0 (a batch of one is one encoding), got 1.2"),
    ("encode_batch_sizes: [2, 4]\nencode_batch_factor: [1.0, 1.3]\n", 5, "field 'encode_batch_sizes[0]': must start at 1, got 2"),
    ("encode_batch_sizes: [1, 2, 4]\nencode_batch_factor: [1.0, 1.3]\n", 6,
     "field 'encode_batch_factor': must be 3 numbers (one per encode_batch_sizes value), got [1.0, 1.3]"),
    ("encode_batch_sizes: [1, 4, 2]\nencode_batch_factor: [1.0, 1.1, 1.2]\n", 5,
     "field 'encode_batch_sizes[2]': must be increasing: 2 follows 4"),
    ("encode_first_ms: -3\n", 5, "field 'encode_first_ms': must be null or a finite number of milliseconds from 0 to "
                                 "3600000, got -3"),
])
def test_the_batch_model_of_encodings_is_checked(tmp_path, text, line, message):
    path = write(tmp_path, text)
    with pytest.raises(ProfileError) as err:
        CostProfile.load(path)
    assert str(err.value) == f"{path}:{line}: {message}"


def test_missing_sizes_of_the_batch_model_are_named(tmp_path):
    path = write(tmp_path, "encode_batch_factor: [1.0, 1.1]\n")
    with pytest.raises(ProfileError) as err:
        CostProfile.load(path)
    assert str(err.value) == (f"{path}:1: field 'encode_batch_sizes': missing (encode_batch_sizes and "
                              "encode_batch_factor go together)")


@pytest.mark.parametrize("text, message", [
    ("sources:\n  encode_ms: {publshed: PR 6117}\n", "field 'sources.encode_ms': unknown kind 'publshed' (did you mean "
                                                     "'published'?)"),
    ("sources:\n  encode_first_ms: {published: PR 6117}\n",
     "field 'sources.encode_first_ms': the profile has no encode_first_ms to name a source for"),
    ("sources:\n  encode_msec: {derived: x}\n", "field 'sources.encode_msec': unknown field (did you mean 'encode_ms'?)"),
    ("sources:\n  encode_ms: {derived: x, measured: y}\n", "field 'sources.encode_ms': must be one entry {kind: text}, "
                                                           "kind one of measured, published, derived, assumed, got "),
    ("sources:\n  encode_ms: {measured: '  '}\n", "field 'sources.encode_ms.measured': must be non-empty text (the "
                                                  "command that measured it), got an empty text"),
    ("sources:\n  talkers.espeak: {measured: x}\n", "field 'sources.talkers.espeak': the profile has no talkers.espeak to "
                                                    "name a source for"),
])
def test_sources_are_checked(tmp_path, text, message):
    path = write(tmp_path, text)
    with pytest.raises(ProfileError) as err:
        CostProfile.load(path)
    assert str(err.value).startswith(f"{path}:6: {message}")


def test_sources_round_trip_and_reach_run_json(tmp_path):
    path = write(tmp_path, "encode_first_ms: 30.0\nencode_batch_sizes: [1, 2]\nencode_batch_factor: [1.0, 1.1]\n"
                           "sources:\n  forward_ms: {measured: python -m ticktock.calibrate}\n"
                           "  encode_ms: {published: vllm-omni PR 6117}\n")
    profile = CostProfile.load(path)
    assert profile.unsourced() == ["encode_first_ms", "encode_batch_factor"]
    again = tmp_path / "again.yaml"
    again.write_text(profile.to_yaml())
    assert CostProfile.load(again) == profile
    assert ModeledClock(profile).describe()["profile_sources"] == {
        "forward_ms": {"measured": "python -m ticktock.calibrate"}, "encode_ms": {"published": "vllm-omni PR 6117"}}
    assert "profile_sources" not in ModeledClock(CostProfile.constant(1.0)).describe()  # old runs: as before


def test_a_profile_without_the_new_fields_keeps_its_digest():
    """Runs written before the batch model of encodings existed resume: the digest only covers the new fields where a
    profile has them."""
    plain = CostProfile.constant(10.0, encode_ms=5.0)
    from ticktock.results.fingerprint import PROFILE_COSTS, canonical_sha256

    before = canonical_sha256({name: getattr(plain, name) for name in PROFILE_COSTS})  # the digest as it was written
    assert profile_sha256(ModeledClock(plain)) == before
    batched = CostProfile.constant(10.0, encode_ms=5.0, encode_batch_factor=1.1)
    assert profile_sha256(ModeledClock(plain)) != profile_sha256(ModeledClock(batched))


@pytest.mark.parametrize("name", ["a100-8b-derived", "a100-8b-published-encoder"])
def test_every_number_of_a_shipped_profile_names_its_source(name):
    profile = CostProfile.load(PROFILES / f"{name}.yaml")
    assert profile.unsourced() == []
    assert profile.encode_batches and profile.batches


def test_the_published_encoder_profile_carries_the_published_figures():
    published = CostProfile.load(PROFILES / "a100-8b-published-encoder.yaml")
    derived = CostProfile.load(PROFILES / "a100-8b-derived.yaml")
    assert (published.encode_ms, published.encode_first_ms) == (10.0, 29.8)
    assert "vllm-omni PR 6117" in published.sources["encode_ms"]["published"]
    assert published.forward_table == derived.forward_table  # only the encoder differs
    assert derived.sources["encode_ms"] == {"derived": derived.sources["encode_ms"]["derived"]}


def test_the_shipped_profiles_are_what_the_derivation_writes(tmp_path, monkeypatch):
    """``scripts/derive_a100_profile.py`` writes both shipped profiles exactly (sources included)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("derive", Path(__file__).parents[2] / "scripts" / "derive_a100_profile.py")
    derive = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(derive)
    derived = derive.derived_profile(*derive.shipped_talkers())
    for profile in (derived, derive.published_encoder_profile(derived)):
        assert profile.to_yaml() == (PROFILES / f"{profile.name}.yaml").read_text(), profile.name


def test_a_profile_changed_after_it_was_made_writes_the_sources_of_the_fields_it_has(tmp_path):
    profile = CostProfile.load(PROFILES / "a100-8b-derived.yaml")
    profile.talkers = {"espeak": profile.talkers["espeak"]}  # the other talkers removed
    profile.encode_batch_sizes = profile.encode_batch_factor = None
    path = tmp_path / "p.yaml"
    path.write_text(profile.to_yaml())
    again = CostProfile.load(path)
    assert set(again.sources) == {"forward_ms", "encode_ms", "encode_fixed_ms", "batch_factor", "talkers.espeak"}
