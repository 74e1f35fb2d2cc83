"""Full-Duplex-Bench v1.5 converter on tiny samples in the published layout (input, clean input, metadata)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from convert_helpers import assert_nothing_left, check_manifest, write_speech
from ticktock.corpus.convert import ConvertError, convert

SUBSETS = ("user_interruption", "user_backchannel", "talking_to_other", "background_speech")
CONTEXT, OVERLAP = (0.4, 2.6), (6.0, 7.2)


def make_sample(folder, rate=16_000, overlap=OVERLAP, context_text="What are good places to visit?",
                overlap_text="Oh, and restaurants nearby?"):
    write_speech(folder / "input.wav", 9.0, [CONTEXT, overlap], rate, seed=1)
    write_speech(folder / "clean_input.wav", 9.0, [CONTEXT], rate, seed=1)
    (folder / "metadata.json").write_text(json.dumps(
        {"context_text": context_text, "current_turn_text": overlap_text, "timestamps": list(overlap)}))


@pytest.fixture
def source(tmp_path):
    root = tmp_path / "v1_5"
    for i, subset in enumerate(SUBSETS):
        make_sample(root / subset / "1", rate=(16_000, 24_000, 44_100, 48_000)[i])
    return root


def test_converts_the_four_overlap_kinds(source, tmp_path):
    result = convert("fdb_v1_5", source, tmp_path / "out", warn=lambda line: None)
    sessions = {s.session_id: s for s in check_manifest(result.manifest)}
    assert list(sessions) == [f"fdb_v1_5-{s}-1" for s in SUBSETS]
    assert not result.warnings
    expected = {  # subset -> (speaker, role, expects_response, script action, spans key)
        "user_interruption": ("user", "interruption", True, "stop", None),
        "user_backchannel": ("user", "backchannel", False, "keep_speaking", "backchannel_spans"),
        "talking_to_other": ("user", "side_talk", False, "keep_speaking", "side_talk_spans"),
        "background_speech": ("other", "background", False, "keep_speaking", "background_spans"),
    }
    for subset, (speaker, role, expects, action, key) in expected.items():
        session = sessions[f"fdb_v1_5-{subset}-1"]
        assert session.task == "fdb_v1_5" and abs(session.duration_s - 9.0) < 1e-3
        request, overlap = session.turns
        assert (request.speaker, request.role, request.text, request.expects_response) == (
            "user", "request", "What are good places to visit?", True)
        assert abs(request.start_s - 0.4) < 0.06 and abs(request.end_s - 2.6) < 0.06
        assert (overlap.speaker, overlap.role, overlap.expects_response) == (speaker, role, expects)
        assert (overlap.text, overlap.start_s, overlap.end_s) == ("Oh, and restaurants nearby?", 6.0, 7.2)
        assert session.expected["script"] == [{"turn": 1, "action": action}]
        behaviour = session.expected["behaviour"]
        assert behaviour["overlap_s"] == [6.0, 7.2]
        if key:
            assert behaviour[key] == [[6.0, 7.2]] and behaviour["respond_after_s"] == [request.end_s]
        else:
            assert behaviour["barge_in_s"] == 6.0 and behaviour["respond_after_s"] == [request.end_s, 7.2]
    assert sessions["fdb_v1_5-talking_to_other-1"].expected["behaviour"]["during_reply"] is True
    assert sessions["fdb_v1_5-background_speech-1"].provenance["source_sample_rate"] == 48_000


def test_context_span_comes_from_the_clean_input(source, tmp_path):
    # the overlap starts while the user still speaks in input.wav; clean_input.wav bounds the request
    folder = source / "user_backchannel" / "1"
    write_speech(folder / "input.wav", 9.0, [(0.4, 5.0)], 16_000)
    result = convert("fdb_v1_5", source, tmp_path / "out", subsets=["user_backchannel"], warn=lambda line: None)
    request = result.sessions[0].turns[0]
    assert abs(request.end_s - 2.6) < 0.06


def test_bad_files_are_named(source, tmp_path):
    out = tmp_path / "out"
    (source / "talking_to_other/1/clean_input.wav").unlink()
    with pytest.raises(ConvertError, match=r"talking_to_other/1/clean_input.wav: required file not found"):
        convert("fdb_v1_5", source, out)
    make_sample(source / "talking_to_other" / "1")
    (source / "user_interruption/1/metadata.json").write_text(json.dumps({"context_text": "hi"}))
    with pytest.raises(ConvertError, match=r"user_interruption/1/metadata.json: expected"):
        convert("fdb_v1_5", source, out)
    make_sample(source / "user_interruption" / "1")
    (source / "background_speech/1/clean_input.wav").write_bytes(b"\x00" * 64)
    with pytest.raises(ConvertError, match=r"background_speech/1/clean_input.wav: cannot read audio"):
        convert("fdb_v1_5", source, out)
    assert_nothing_left(out)
    with pytest.raises(ConvertError, match=r"unknown subset"):
        convert("fdb_v1_5", source, out, subsets=["user_interrupt"])


def test_silent_input_is_reported(source, tmp_path):
    import soundfile

    folder = source / "user_interruption" / "1"
    for name in ("input.wav", "clean_input.wav"):
        soundfile.write(str(folder / name), np.zeros(16_000 * 9, dtype=np.float32), 16_000)
    lines = []
    result = convert("fdb_v1_5", source, tmp_path / "out", subsets=["user_interruption"], warn=lines.append)
    assert result.warnings == {"silent": 1, "no_request_speech": 1}
    assert all("user_interruption/1/input.wav" in line for line in lines)
    request = check_manifest(result.manifest)[0].turns[0]
    assert (request.start_s, request.end_s) == (0.0, 6.0)


def test_overlap_text_falls_back_to_the_subset_key(source, tmp_path):
    folder = source / "user_backchannel" / "1"
    meta = {"context_text": "What are good places to visit?", "backchannel_text": "Mm-hmm.", "timestamps": list(OVERLAP)}
    (folder / "metadata.json").write_text(json.dumps(meta))
    other = source / "talking_to_other" / "1"
    (other / "metadata.json").write_text(json.dumps({"context_text": "Any tips?", "timestamps": list(OVERLAP)}))
    lines = []
    result = convert("fdb_v1_5", source, tmp_path / "out", subsets=["user_backchannel", "talking_to_other"],
                     warn=lines.append)
    backchannel, side_talk = result.sessions
    assert backchannel.turns[1].text == "Mm-hmm." and backchannel.provenance["overlap_text_key"] == "backchannel_text"
    assert side_talk.turns[1].text == "" and "overlap_text_key" not in side_talk.provenance
    assert result.warnings == {"no_overlap_text": 1}
    assert "talking_to_other/1/metadata.json: no text for the overlap turn" in lines[0]
