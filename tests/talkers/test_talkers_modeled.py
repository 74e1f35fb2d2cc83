"""The modeled talker: a cost entry of a profile, checked; and talker cost entries in profiles, checked."""

import pytest

from ticktock.clocks.modeled import CostProfile, ProfileError
from ticktock.clocks.talker_cost import TalkerCost, TalkerCostError
from ticktock.talkers.base import TalkerError
from ticktock.talkers.modeled import ModeledTalker

GRID = "query_tokens: [1]\ncontext_tokens: [0]\nforward_ms: [[10.0]]\n"


def profile(tmp_path, talkers: str):
    path = tmp_path / "p.yaml"
    path.write_text(GRID + talkers)
    return path


def test_the_entry_prices_every_piece(tmp_path):
    path = profile(tmp_path, "talkers:\n  tts: {first_packet_ms: 200.0, ms_per_audio_s: 120.0, streams: true}\n")
    talker = ModeledTalker(entry="tts", profile=str(path))
    assert talker.cost == TalkerCost(200.0, 120.0, streams=True)
    assert (talker.cost.work_ms(2.0), talker.cost.ready_ms(2.0)) == (440.0, 200.0)
    assert talker.describe()["cost"]["first_packet_ms"] == 200.0 and len(talker.synthesize("Hello.")) > 0


def test_an_entry_the_profile_lacks_names_the_ones_it_has(tmp_path):
    path = profile(tmp_path, "talkers:\n  tts: {first_packet_ms: 1.0, ms_per_audio_s: 1.0}\n")
    with pytest.raises(TalkerError, match=r"talker\.entry: 'missing' is not a talker cost of profile p .*its talkers: tts"):
        ModeledTalker(entry="missing", profile=str(path))


@pytest.mark.parametrize("talkers, message", [
    ("talkers:\n  tts: {first_packet_ms: -1, ms_per_audio_s: 1}\n", r"p\.yaml:5: field 'talkers\.tts\.first_packet_ms': must be a finite number"),
    ("talkers:\n  tts: {first_packet_ms: 1, ms_per_audio: 1}\n", r"field 'talkers\.tts\.ms_per_audio': unknown field"),
    ("talkers:\n  tts: {first_packet_ms: 1, ms_per_audio_s: 1, streams: maybe}\n", r"'talkers\.tts\.streams': must be true or false"),
    ("talkers: [1, 2]\n", r"field 'talkers': must be a mapping"),
])
def test_bad_talker_entries_in_a_profile_name_the_line_and_field(tmp_path, talkers, message):
    with pytest.raises(ProfileError, match=message):
        CostProfile.load(profile(tmp_path, talkers))


def test_a_profile_keeps_its_talkers_through_yaml(tmp_path):
    path = profile(tmp_path, "talkers:\n  espeak: {first_packet_ms: 9.5, ms_per_audio_s: 3.25, device: CPU, provenance: measured}\n")
    loaded = CostProfile.load(path)
    (tmp_path / "again.yaml").write_text(loaded.to_yaml())
    assert CostProfile.load(tmp_path / "again.yaml").talkers == loaded.talkers
    assert loaded.talker_cost("espeak").device == "CPU"
    with pytest.raises(TalkerCostError, match=r"cost profile p has no talker entry 'piper' \(its talkers: espeak\); measure one"):
        loaded.talker_cost("piper")
