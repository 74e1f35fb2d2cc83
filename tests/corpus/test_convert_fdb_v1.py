"""Full-Duplex-Bench v1.0 converter on tiny samples in the published layout (one folder per sample)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import soundfile

from convert_helpers import assert_nothing_left, check_manifest, speech_level, write_speech
from ticktock.corpus.convert import ConvertError, convert


def words(*items):
    return [{"text": t, "timestamp": [s, e]} for t, s, e in items]


def write_json(path, data):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")


def make_copy(root):
    # turn-taking: the user (speaker 1) asks; the partner's original reply (speaker 0) is not in input.wav
    sample = root / "candor_turn_taking" / "7"
    write_speech(sample / "input.wav", 6.0, [(0.2, 2.0)], 16_000)
    write_json(sample / "turn_taking.json", [{"text": "[TURN-TAKING]", "timestamp": [2.0, 2.4]}])
    write_json(sample / "transcription.json", [
        {"speaker": 0, "item": words(("I", 2.0, 2.4), ("did", 2.4, 2.8), ("it", 2.8, 3.0), ("yesterday", 3.0, 3.5))},
        {"speaker": 1, "item": words(("Is", 0.2, 0.5), ("this", 0.5, 0.8), ("your", 0.8, 1.1), ("first", 1.1, 1.5),
                                     ("time", 1.5, 2.0))},
    ])
    # pause handling at 48 kHz with word timings around the pause
    sample = root / "candor_pause_handling" / "3"
    write_speech(sample / "input.wav", 5.0, [(0.3, 1.8), (2.8, 3.6)], 48_000)
    write_json(sample / "pause.json", [{"text": "[PAUSE]", "timestamp": [1.8, 2.8]}])
    write_json(sample / "transcription.json", [{"speaker": 0, "item": words(
        ("So", 0.3, 0.6), ("the", 0.6, 0.9), ("thing", 0.9, 1.8), ("is", 2.8, 3.1), ("this", 3.1, 3.6))}])
    # backchannel: the user talks on
    sample = root / "icc_backchannel" / "1"
    write_speech(sample / "input.wav", 5.0, [(0.5, 4.0)], 16_000)
    write_json(sample / "transcription.json", [{"speaker": 0, "item": words(("well", 0.5, 2.0), ("anyway", 2.2, 4.0))}])
    # synthetic pause handling without transcription.json (like the FDB example sample); folder 2 before 10
    for name in ("10", "2"):
        sample = root / "synthetic_pause_handling" / name
        write_speech(sample / "input.wav", 4.0, [(0.5, 1.5), (2.5, 3.2)], 22_050)
        write_json(sample / "pause.json", [{"text": "[PAUSE]", "timestamp": [1.5, 2.5]}])
    # user interruption: context, a gap for the model's reply, the interruption
    sample = root / "synthetic_user_interruption" / "1"
    write_speech(sample / "input.wav", 10.0, [(0.3, 2.5), (6.0, 7.5)], 16_000)
    write_json(sample / "interrupt.json", [{"context": "Suggest some books.", "interrupt": "How about fiction?",
                                           "timestamp": [5.8, 7.6]}])
    return root


@pytest.fixture
def source(tmp_path):
    return make_copy(tmp_path / "v1_0")


def by_id(sessions):
    return {s.session_id: s for s in sessions}


def test_converts_every_subset(source, tmp_path):
    result = convert("fdb_v1", source, tmp_path / "out", warn=lambda line: None)
    sessions = check_manifest(result.manifest)
    assert [s.session_id for s in sessions] == [
        "fdb_v1-candor_pause_handling-3", "fdb_v1-candor_turn_taking-7", "fdb_v1-icc_backchannel-1",
        "fdb_v1-synthetic_pause_handling-2", "fdb_v1-synthetic_pause_handling-10", "fdb_v1-synthetic_user_interruption-1"]
    assert not result.warnings
    s = by_id(sessions)

    turn_taking = s["fdb_v1-candor_turn_taking-7"]
    assert turn_taking.duration_s == 6.0 and len(turn_taking.turns) == 1
    (turn,) = turn_taking.turns
    assert (turn.speaker, turn.role, turn.text) == ("user", "request", "Is this your first time")
    assert [w.text for w in turn.words] == ["Is", "this", "your", "first", "time"]
    assert (turn.start_s, turn.end_s, turn.expects_response) == (0.2, 2.0, True)
    behaviour = turn_taking.expected["behaviour"]
    assert behaviour["turn_end_s"] == 2.0 and behaviour["respond_after_s"] == [2.0]
    assert behaviour["reference_turns"] == [{"speaker": 0, "text": "I did it yesterday", "start_s": 2.0, "end_s": 3.5}]
    assert turn_taking.expected["script"] == [{"turn": 0, "action": "speak", "text": "I did it yesterday"}]
    assert turn_taking.provenance["source_id"] == "candor_turn_taking/7"
    assert turn_taking.provenance["source_path"] == "candor_turn_taking/7"

    pause = s["fdb_v1-candor_pause_handling-3"]
    assert pause.provenance["source_sample_rate"] == 48_000 and pause.duration_s == 5.0
    (turn,) = pause.turns
    assert turn.text == "So the thing is this" and (turn.start_s, turn.end_s) == (0.3, 3.6)
    assert turn.expects_response is False  # FDB scores whether the model takes the turn at all
    assert pause.expected["behaviour"] == {"type": "pause_handling", "pause_spans": [[1.8, 2.8]], "takes_turn": False}
    assert speech_level(pause.audio_path, 1.9, 2.7) < 0.01 < speech_level(pause.audio_path, 0.4, 1.7)

    backchannel = s["fdb_v1-icc_backchannel-1"]
    assert backchannel.turns[0].role == "statement" and backchannel.turns[0].expects_response is False
    assert backchannel.expected["behaviour"] == {"type": "backchannel"}

    synthetic = s["fdb_v1-synthetic_pause_handling-2"]
    (turn,) = synthetic.turns
    assert turn.words == () and turn.text == ""  # no transcription.json: the VAD gives the span
    assert abs(turn.start_s - 0.5) < 0.06 and abs(turn.end_s - 3.2) < 0.06

    interruption = s["fdb_v1-synthetic_user_interruption-1"]
    context, barge = interruption.turns
    assert (context.role, context.text, context.expects_response) == ("request", "Suggest some books.", True)
    assert abs(context.start_s - 0.3) < 0.06 and abs(context.end_s - 2.5) < 0.06
    assert (barge.role, barge.text, barge.start_s, barge.end_s) == ("interruption", "How about fiction?", 5.8, 7.6)
    assert interruption.expected["behaviour"] == {"type": "user_interruption", "barge_in_s": 5.8,
                                                  "respond_after_s": [context.end_s, 7.6]}
    assert interruption.expected["script"] == [{"turn": 1, "action": "stop"}]


def test_audible_second_speaker_becomes_an_other_turn(source, tmp_path):
    sample = source / "icc_backchannel" / "1"
    write_json(sample / "transcription.json", [
        {"speaker": 0, "item": words(("well", 0.5, 2.0), ("anyway", 2.2, 4.0))},
        {"speaker": 1, "item": words(("mhm", 4.3, 4.6))},
    ])
    write_speech(sample / "input.wav", 5.0, [(0.5, 4.0), (4.3, 4.6)], 16_000)
    result = convert("fdb_v1", source, tmp_path / "out", subsets=["icc_backchannel"], warn=lambda line: None)
    (session,) = check_manifest(result.manifest)
    assert [(t.speaker, t.role, t.text) for t in session.turns] == [("user", "statement", "well anyway"),
                                                                    ("other", "background", "mhm")]


def test_limit_per_subset(source, tmp_path):
    result = convert("fdb_v1", source, tmp_path / "out", limit=1, subsets=["synthetic_pause_handling"],
                     warn=lambda line: None)
    assert [s.session_id for s in result.sessions] == ["fdb_v1-synthetic_pause_handling-2"]


def test_times_past_the_audio_are_clamped_with_a_warning(source, tmp_path):
    write_json(source / "candor_pause_handling/3/pause.json", [{"text": "[PAUSE]", "timestamp": [4.5, 9.0]}])
    lines = []
    result = convert("fdb_v1", source, tmp_path / "out", subsets=["candor_pause_handling"], warn=lines.append)
    assert result.sessions[0].expected["behaviour"]["pause_spans"] == [[4.5, 5.0]]
    assert result.warnings["timing"] == 1 and "pause_handling/3: time 9.000 s is after the end" in lines[0]


def test_bad_files_are_named(source, tmp_path):
    out = tmp_path / "out"
    (source / "candor_turn_taking/7/turn_taking.json").unlink()
    with pytest.raises(ConvertError, match=r"candor_turn_taking/7/turn_taking.json: required file not found"):
        convert("fdb_v1", source, out)
    write_json(source / "candor_turn_taking/7/turn_taking.json", [{"text": "[TURN-TAKING]", "timestamp": [2.4, 2.0]}])
    with pytest.raises(ConvertError, match=r"turn_taking.json entry 0: timestamp .* start <= end"):
        convert("fdb_v1", source, out)
    (source / "candor_turn_taking/7/turn_taking.json").write_text("[{")
    with pytest.raises(ConvertError, match=r"turn_taking.json: not valid JSON"):
        convert("fdb_v1", source, out)
    assert_nothing_left(out)
    write_json(source / "candor_turn_taking/7/turn_taking.json", [{"text": "[TURN-TAKING]", "timestamp": [2.0, 2.4]}])
    (source / "synthetic_user_interruption/1/input.wav").write_bytes(b"RIFF\x00\x00\x00\x00WAVEjunk")
    with pytest.raises(ConvertError, match=r"synthetic_user_interruption/1/input.wav: cannot read audio"):
        convert("fdb_v1", source, out)
    assert_nothing_left(out)
    (source / "synthetic_user_interruption/1/input.wav").unlink()
    with pytest.raises(ConvertError, match=r"synthetic_user_interruption/1/input.wav: required file not found"):
        convert("fdb_v1", source, out)
    with pytest.raises(ConvertError, match=r"none of the subset folders"):
        convert("fdb_v1", tmp_path / "out", tmp_path / "elsewhere")


def test_silent_input_is_reported(source, tmp_path):
    soundfile.write(str(source / "icc_backchannel/1/input.wav"), np.zeros(16_000 * 5, dtype=np.float32), 16_000)
    lines = []
    result = convert("fdb_v1", source, tmp_path / "out", subsets=["icc_backchannel"], warn=lines.append)
    assert result.warnings["silent"] == 1 and "icc_backchannel/1/input.wav: no speech found" in lines[0]
    check_manifest(result.manifest)


def gt_windows(duration_s, peak_s):
    """An icc_gt_distribution.json entry: 0.2 s windows over the input, peaking at ``peak_s``."""
    weights = [1.0 / (1.0 + abs(i * 0.2 - peak_s)) for i in range(int(duration_s / 0.2) + 1)]
    return [w / sum(weights) for w in weights]


def test_backchannel_ground_truth_is_read_next_to_the_source(source, tmp_path):
    truth = {"1": gt_windows(5.0, 2.0), "9": gt_windows(8.0, 1.0)}
    write_json(source / "icc_gt_distribution.json", truth)
    result = convert("fdb_v1", source, tmp_path / "out", warn=lambda line: None)
    assert not result.warnings
    backchannel = by_id(check_manifest(result.manifest))["fdb_v1-icc_backchannel-1"]
    assert backchannel.expected["behaviour"] == {
        "type": "backchannel", "backchannel_distribution": {"window_s": 0.2, "probabilities": truth["1"]}}
    assert backchannel.provenance["backchannel_gt"] == "icc_gt_distribution.json"
    others = [s for s in result.sessions if s.session_id != "fdb_v1-icc_backchannel-1"]
    assert all("backchannel_distribution" not in s.expected["behaviour"] for s in others)


def test_backchannel_ground_truth_from_the_option_and_missing_samples(source, tmp_path):
    path = tmp_path / "evaluation" / "icc_gt_distribution.json"
    write_json(path, {"0": gt_windows(23.0, 5.0)})
    lines = []
    result = convert("fdb_v1", source, tmp_path / "out", subsets=["icc_backchannel"], backchannel_gt=path,
                     warn=lines.append)
    assert result.warnings == {"no_backchannel_gt": 1}
    assert "icc_gt_distribution.json: no entry for sample '1'" in lines[0]
    assert result.sessions[0].expected["behaviour"] == {"type": "backchannel"}
    write_json(path, {"1": gt_windows(23.0, 5.0)})  # 116 windows for a 5 s input: another sample's entry
    result = convert("fdb_v1", source, tmp_path / "out2", subsets=["icc_backchannel"], backchannel_gt=path,
                     warn=lines.append)
    assert result.warnings == {"backchannel_gt_length": 1} and "has 116 windows" in lines[-1]
    write_json(path, {"1": [0.5, "x"]})
    with pytest.raises(ConvertError, match=r"icc_gt_distribution.json: entry '1': expected a non-empty list"):
        convert("fdb_v1", source, tmp_path / "out3", subsets=["icc_backchannel"], backchannel_gt=path)
    with pytest.raises(ConvertError, match=r"nowhere.json: backchannel ground truth file not found"):
        convert("fdb_v1", source, tmp_path / "out3", backchannel_gt=tmp_path / "nowhere.json")


def test_v1_and_v1_5_subsets_side_by_side_with_doubled_folders(tmp_path):
    import test_convert_fdb_v1_5 as fdb_v1_5

    download = tmp_path / "fdb"
    make_copy(download)
    nested = download / "icc_backchannel"  # as some official inference scripts read it: X/X/{ID}
    (nested / "icc_backchannel").mkdir()
    (nested / "1").rename(nested / "icc_backchannel" / "1")
    fdb_v1_5.make_sample(download / "user_interruption" / "user_interruption" / "4")
    fdb_v1_5.make_sample(download / "talking_to_other" / "2")
    v1 = convert("fdb_v1", download, tmp_path / "v1", warn=lambda line: None)
    assert [s.session_id for s in v1.sessions] == [
        "fdb_v1-candor_pause_handling-3", "fdb_v1-candor_turn_taking-7", "fdb_v1-icc_backchannel-1",
        "fdb_v1-synthetic_pause_handling-2", "fdb_v1-synthetic_pause_handling-10", "fdb_v1-synthetic_user_interruption-1"]
    assert by_id(v1.sessions)["fdb_v1-icc_backchannel-1"].provenance["source_path"] == "icc_backchannel/icc_backchannel/1"
    v1_5 = convert("fdb_v1_5", download, tmp_path / "v1_5", warn=lambda line: None)
    assert [s.session_id for s in v1_5.sessions] == ["fdb_v1_5-user_interruption-4", "fdb_v1_5-talking_to_other-2"]
    copy = tmp_path / "copy"  # a copy that keeps the v1.0 subsets under v1_0/
    copy.mkdir()
    download.rename(copy / "v1_0")
    assert len(convert("fdb_v1", copy, tmp_path / "v1b", subsets=["icc_backchannel"],
                       warn=lambda line: None).sessions) == 1
