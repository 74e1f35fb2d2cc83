"""Big Bench Audio converter on a tiny copy in the published audiofolder layout (metadata.jsonl + data/)."""

from __future__ import annotations

import json

import pytest

from convert_helpers import assert_nothing_left, cached_snapshot, check_manifest, offline_hub, write_speech
from ticktock.corpus.convert import ConvertError, convert

ROWS = [  # the real metadata.jsonl's fields: id, category, official_answer, file_name (no question text)
    {"id": 0, "category": "formal_fallacies", "official_answer": "invalid", "file_name": "data/question_0.mp3"},
    {"id": 1, "category": "object_counting", "official_answer": "7", "file_name": "data/question_1.mp3"},
    {"id": 2, "category": "navigate", "official_answer": "Yes", "file_name": "data/question_2.mp3"},
]


def make_copy(root, rows=ROWS):
    root.mkdir(parents=True, exist_ok=True)
    (root / "metadata.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    for i, row in enumerate(rows):
        write_speech(root / row["file_name"], 3.0, [(0.2, 2.6)], 44_100, seed=i)
    return root


@pytest.fixture
def source(tmp_path):
    return make_copy(tmp_path / "big_bench_audio")


def test_converts_questions_with_official_answers(source, tmp_path):
    result = convert("big_bench_audio", source, tmp_path / "out", warn=lambda line: None)
    sessions = check_manifest(result.manifest)
    assert [s.session_id for s in sessions] == ["big_bench_audio-0000", "big_bench_audio-0001", "big_bench_audio-0002"]
    assert {s.task for s in sessions} == {"big_bench_audio"}
    fallacy, counting, navigate = sessions
    turn = fallacy.turns[0]
    assert abs(turn.start_s - 1.2) < 0.06 and abs(turn.end_s - 3.6) < 0.06
    assert abs(fallacy.duration_s - (turn.end_s + 3.3)) < 1e-3
    assert fallacy.expected["reference_answer"] == "invalid" and fallacy.expected["answer_aliases"] == []
    assert fallacy.expected["behaviour"]["categories"] == ["formal_fallacies"]
    assert fallacy.expected["script"] == [{"turn": 0, "action": "speak", "text": "invalid"}]
    assert counting.expected["answer_aliases"] == ["seven"]
    assert counting.expected["answers"] == [{"turn": 0, "reference_answer": "7", "answer_aliases": ["seven"]}]
    assert [s.turns[0].text for s in sessions] == ["", "", ""]  # the file has no question text
    assert navigate.expected["reference_answer"] == "Yes"
    assert fallacy.provenance == {
        "source": "big_bench_audio", "source_id": "0", "source_path": "data/question_0.mp3",
        "metadata_path": "metadata.jsonl:1", "category": "formal_fallacies", "converter_version": "1",
        "layout": fallacy.provenance["layout"]}
    assert convert("big_bench_audio", source, tmp_path / "two", limit=2, warn=lambda line: None).sessions[-1].session_id == "big_bench_audio-0001"


def test_a_question_text_field_is_used_when_a_copy_has_one(tmp_path):
    rows = [{**ROWS[2], "transcript": "Take three steps forward. Take three steps backward. Are you back at the start?"}]
    (session,) = convert("big_bench_audio", make_copy(tmp_path / "src", rows), tmp_path / "out",
                         warn=lambda line: None).sessions
    assert session.turns[0].text.startswith("Take three steps forward.")


def test_bad_metadata_is_named(source, tmp_path):
    out = tmp_path / "out"
    metadata = source / "metadata.jsonl"
    metadata.write_text(json.dumps(ROWS[0]) + "\n{not json\n")
    with pytest.raises(ConvertError, match=r"metadata.jsonl:2: not valid JSON"):
        convert("big_bench_audio", source, out)
    metadata.write_text(json.dumps({"id": 5, "category": "navigate", "answer_text": "Yes", "file_name": "data/q.mp3"}) + "\n")
    with pytest.raises(ConvertError, match=r"metadata.jsonl:1: no answer field .*answer_text"):
        convert("big_bench_audio", source, out)
    write_speech(source / "data/q.mp3", 2.0, [(0.5, 1.5)], 16_000)
    result = convert("big_bench_audio", source, out, columns={"answer": "answer_text"}, warn=lambda line: None)
    assert result.sessions[0].expected["reference_answer"] == "Yes"
    metadata.unlink()
    with pytest.raises(ConvertError, match=r"metadata.jsonl: Big Bench Audio metadata not found"):
        convert("big_bench_audio", source, tmp_path / "other")


def test_missing_and_corrupt_audio(source, tmp_path):
    out = tmp_path / "out"
    (source / "data/question_2.mp3").unlink()
    with pytest.raises(ConvertError, match=r"question_2.mp3: audio file not found"):
        convert("big_bench_audio", source, out)
    assert_nothing_left(out)
    (source / "data/question_2.mp3").write_bytes(b"\xff\xfb" + b"\x00" * 300)
    with pytest.raises(ConvertError, match=r"question_2.mp3: cannot read audio"):
        convert("big_bench_audio", source, out)
    assert_nothing_left(out)


def test_a_deeply_nested_metadata_line_is_named(source, tmp_path):
    (source / "metadata.jsonl").write_text(json.dumps(ROWS[0]) + "\n" + "[" * 100_000 + "]" * 100_000 + "\n")
    with pytest.raises(ConvertError, match=r"metadata.jsonl:2: not valid JSON \(nested deeper than 64 levels\)"):
        convert("big_bench_audio", source, tmp_path / "out")
    assert_nothing_left(tmp_path / "out")


def test_the_hub_id_is_read_from_the_hub_cache_offline(tmp_path, monkeypatch):
    hub_cache = offline_hub(monkeypatch, tmp_path / "caches")
    make_copy(cached_snapshot(hub_cache, "ArtificialAnalysis/big_bench_audio"), ROWS[:1])
    result = convert("big_bench_audio", "ArtificialAnalysis/big_bench_audio", tmp_path / "out", warn=lambda line: None)
    assert [s.session_id for s in check_manifest(result.manifest)] == ["big_bench_audio-0000"]
    assert result.sessions[0].provenance["source_path"] == "data/question_0.mp3"
