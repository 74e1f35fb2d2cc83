"""OpenAudioBench converter on a tiny copy in the published layout (CSV + MP3 under eval_datas/<subset>/)."""

from __future__ import annotations

import csv

import numpy as np
import pytest
import soundfile

from convert_helpers import (assert_nothing_left, cached_snapshot, check_manifest, offline_hub, speech_level,
                             write_speech)
from ticktock.corpus.convert import ConvertError, convert
from ticktock.corpus.convert.hub import SourceNotCached
from ticktock.corpus.convert.__main__ import cli

ROWS = {  # subset -> (header, rows); column names as third-party loaders of the real CSVs report them
    "llama_questions": (["Questions", "Answer", "audio_filename"],
                        [["What is the capital of France?", "Paris", "llama_questions_0.mp3"],
                         ["Who wrote Hamlet?", "William Shakespeare", "llama_questions_1.mp3"]]),
    "web_questions": (["question", "answers", "audio_filename"],
                      [["what language do jamaican people speak?", "['Jamaican English', 'Jamaican Creole English Language']",
                        "web_questions_0.mp3"]]),
    "trivia_qa": (["question", "answer_normalized_value", "answer_normalized_aliases", "audio_filename"],
                  [["Which planet is known as the red planet?", "mars", "['mars', 'planet mars']", "trivia_qa_0.mp3"]]),
}
SPEECH = [(0.3, 1.5)]  # where the question is spoken inside each 2 s clip


def make_copy(root, rows=ROWS, rate=22_050):
    for subset, (header, lines) in rows.items():
        folder = root / "eval_datas" / subset
        (folder / "audios").mkdir(parents=True)
        with (folder / f"{subset}.csv").open("w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(header)
            writer.writerows(lines)
        for i, line in enumerate(lines):
            write_speech(folder / "audios" / line[-1], 2.0, SPEECH, rate, seed=i)
    return root


@pytest.fixture
def source(tmp_path):
    return make_copy(tmp_path / "OpenAudioBench")


def test_converts_all_three_subsets(source, tmp_path):
    out = tmp_path / "out"
    result = convert("openaudiobench", source, out, warn=lambda line: None)
    sessions = check_manifest(out / "manifest.jsonl")
    assert [s.session_id for s in sessions] == ["llama_questions-0000", "llama_questions-0001", "web_questions-0000", "trivia_qa-0000"]
    assert [s.task for s in sessions] == ["llama_questions", "llama_questions", "web_questions", "trivia_qa"]
    assert not result.warnings
    first = sessions[0]
    (turn,) = first.turns
    assert turn.text == "What is the capital of France?" and turn.words == () and turn.expects_response
    assert turn.speaker == "user" and turn.role == "request"
    # 1.0 s lead + the speech at 0.3-1.5 s of the clip (VAD, 20 ms frames, 30 ms padding)
    assert abs(turn.start_s - 1.3) < 0.06 and abs(turn.end_s - 2.5) < 0.06
    # reply room: 1 answer word x 0.3 s + 3 s after the question ends
    assert abs(first.duration_s - (turn.end_s + 3.3)) < 1e-3
    assert speech_level(first.audio_path, 0.0, 0.95) < 0.01 < speech_level(first.audio_path, 1.4, 2.4)
    assert speech_level(first.audio_path, turn.end_s + 0.1, first.duration_s) < 0.01
    assert first.expected["reference_answer"] == "Paris"
    assert first.expected["answers"] == [{"turn": 0, "reference_answer": "Paris", "answer_aliases": []}]
    assert first.expected["script"] == [{"turn": 0, "action": "speak", "text": "Paris"}]
    assert first.expected["behaviour"] == {"type": "question_answering", "respond_after_s": [turn.end_s]}
    assert first.provenance["source"] == "openaudiobench"
    assert first.provenance["source_id"] == "llama_questions/0"
    assert first.provenance["source_path"] == "eval_datas/llama_questions/audios/llama_questions_0.mp3"
    assert first.provenance["layout"]["source_sample_rate"] == 22_050
    assert abs(sessions[1].duration_s - (sessions[1].turns[0].end_s + 3.6)) < 1e-3  # two answer words
    web, trivia = sessions[2], sessions[3]
    assert web.expected["reference_answer"] == "Jamaican English"
    assert web.expected["answer_aliases"] == ["Jamaican Creole English Language"]
    assert trivia.expected["reference_answer"] == "mars" and trivia.expected["answer_aliases"] == ["planet mars"]


def test_trivia_aliases_in_one_comma_separated_string(tmp_path):
    rows = {"trivia_qa": (ROWS["trivia_qa"][0], [
        ["Which planet is known as the red planet?", "mars", "mars, planet mars, the red planet", "trivia_qa_0.mp3"],
        ["Who painted the Mona Lisa?", "leonardo da vinci", "['leonardo', 'da vinci, leonardo']", "trivia_qa_1.mp3"]])}
    source = make_copy(tmp_path / "src", rows)
    mars, mona_lisa = convert("openaudiobench", source, tmp_path / "out", warn=lambda line: None).sessions
    assert mars.expected["reference_answer"] == "mars"
    assert mars.expected["answer_aliases"] == ["planet mars", "the red planet"]  # one alias per part
    assert mona_lisa.expected["answer_aliases"] == ["leonardo", "da vinci, leonardo"]  # a list keeps its commas


def test_limit_and_subsets(source, tmp_path):
    result = convert("openaudiobench", source / "eval_datas", tmp_path / "out", limit=1,
                     subsets=["llama_questions", "trivia_qa"], warn=lambda line: None)
    assert [s.session_id for s in result.sessions] == ["llama_questions-0000", "trivia_qa-0000"]
    with pytest.raises(ConvertError, match="unknown OpenAudioBench subset"):
        convert("openaudiobench", source, tmp_path / "out2", subsets=["alpaca_eval"])


def test_stereo_48k_is_downmixed_and_resampled(tmp_path):
    source = tmp_path / "src"
    make_copy(source, {"llama_questions": ROWS["llama_questions"]})
    path = source / "eval_datas/llama_questions/audios/llama_questions_0.mp3"
    write_speech(path, 2.0, SPEECH, 48_000, channels=2)
    result = convert("openaudiobench", source, tmp_path / "out", warn=lambda line: None)
    session = check_manifest(result.manifest)[0]
    assert session.provenance["layout"]["source_sample_rate"] == 48_000
    assert session.provenance["layout"]["source_channels"] == 2
    assert abs(session.turns[0].start_s - 1.3) < 0.06


def test_missing_audio_is_named_and_nothing_is_left(source, tmp_path):
    missing = source / "eval_datas/web_questions/audios/web_questions_0.mp3"
    missing.unlink()
    out = tmp_path / "out"
    with pytest.raises(ConvertError, match="web_questions_0.mp3: audio file not found"):
        convert("openaudiobench", source, out)
    assert_nothing_left(out)


def test_corrupt_audio_is_named_and_an_old_manifest_survives(source, tmp_path):
    out = tmp_path / "out"
    convert("openaudiobench", source, out, warn=lambda line: None)
    before = (out / "manifest.jsonl").read_bytes()
    (source / "eval_datas/trivia_qa/audios/trivia_qa_0.mp3").write_bytes(b"not an mp3 at all" * 50)
    with pytest.raises(ConvertError, match=r"trivia_qa_0.mp3: cannot read audio"):
        convert("openaudiobench", source, out)
    assert (out / "manifest.jsonl").read_bytes() == before
    assert not list(out.glob(".convert-*"))


def test_missing_csv_and_unknown_columns(source, tmp_path):
    (source / "eval_datas/llama_questions/llama_questions.csv").unlink()
    with pytest.raises(ConvertError, match=r"llama_questions.csv: OpenAudioBench CSV not found"):
        convert("openaudiobench", source, tmp_path / "out", subsets=["llama_questions"])
    result = convert("openaudiobench", source, tmp_path / "out", warn=lambda line: None)  # the subsets that are there
    assert {s.task for s in result.sessions} == {"web_questions", "trivia_qa"}
    with pytest.raises(ConvertError, match=r"no OpenAudioBench CSV"):
        convert("openaudiobench", tmp_path / "out", tmp_path / "out2")
    rows = {"llama_questions": (["Query", "Gold", "audio_filename"], [["Who?", "Me", "llama_questions_0.mp3"]])}
    other = make_copy(tmp_path / "other", rows)
    with pytest.raises(ConvertError, match=r"llama_questions.csv: no question column .*Query, Gold, audio_filename"):
        convert("openaudiobench", other, tmp_path / "out3")
    result = convert("openaudiobench", other, tmp_path / "out3", columns={"question": "Query", "answer": "Gold"},
                     warn=lambda line: None)
    assert result.sessions[0].expected["reference_answer"] == "Me"
    assert result.sessions[0].turns[0].text == "Who?"


def test_cli_reports_clipped_and_silent_audio(source, tmp_path, capsys):
    folder = source / "eval_datas/llama_questions/audios"
    write_speech(folder / "llama_questions_0.mp3", 2.0, SPEECH, 22_050, gain=40.0)  # driven far past full scale
    soundfile.write(str(folder / "llama_questions_1.mp3"), np.zeros(22_050, dtype=np.float32), 22_050, format="MP3")
    out = tmp_path / "out"
    assert cli(["openaudiobench", "--src", str(source), "--out", str(out), "--lead-s", "0.5"]) == 0
    captured = capsys.readouterr()
    assert "warning: " in captured.err and "llama_questions_0.mp3: audio is clipped" in captured.err
    assert "llama_questions_1.mp3: no speech found" in captured.err
    assert "warnings         clipped=1, silent=1" in captured.out
    assert "llama_questions  sessions=   2" in captured.out
    sessions = check_manifest(out / "manifest.jsonl")
    silent = sessions[1]
    assert silent.turns[0].start_s == 0.5 and abs(silent.turns[0].end_s - 1.5) < 1e-3  # whole clip, after the lead
    assert abs(sessions[0].turns[0].start_s - 0.8) < 0.06


def test_cli_error_exit(tmp_path, capsys):
    from test_convert_fdb_v3 import command_exit

    assert command_exit(cli, ["openaudiobench", "--src", str(tmp_path), "--out", str(tmp_path / "out")]) == 3
    assert capsys.readouterr().err.startswith("ticktock: error: ")
    assert not (tmp_path / "out" / "manifest.jsonl").exists()


def test_the_hub_id_is_read_from_the_hub_cache_offline(tmp_path, monkeypatch):
    hub_cache = offline_hub(monkeypatch, tmp_path / "caches")
    make_copy(cached_snapshot(hub_cache, "baichuan-inc/OpenAudioBench"))
    out = tmp_path / "out"
    result = convert("openaudiobench", "baichuan-inc/OpenAudioBench", out, subsets=["web_questions"],
                     warn=lambda line: None)
    assert [s.session_id for s in check_manifest(result.manifest)] == ["web_questions-0000"]
    assert result.sessions[0].provenance["source_path"] == "eval_datas/web_questions/audios/web_questions_0.mp3"
    assert '"--src": "baichuan-inc/OpenAudioBench"' in (out / "made_by.json").read_text()
    with pytest.raises(SourceNotCached, match=r"^someone/oab: openaudiobench is not in the local Hugging Face cache "
                                              r"and offline mode is on; fetch it once online with: ticktock bench "
                                              r"fetch openaudiobench --src openaudiobench=someone/oab$"):
        convert("openaudiobench", "someone/oab", tmp_path / "other")
    with pytest.raises(ConvertError, match=r"^someone/fdb: source folder or file not found \(fdb_v3 is not on the "
                                           r"Hugging Face Hub"):
        convert("fdb_v3", "someone/fdb", tmp_path / "other")
