"""The generated corpus: determinism, schema validity, timing sanity, atomic output."""

from __future__ import annotations

import argparse
import json

import numpy as np
import pytest
import soundfile

from ticktock.sessions.audio import SAMPLE_RATE, load_audio
from ticktock.corpus import synth
from ticktock.corpus.synth import SynthOptionError, add_arguments, generate, main
from ticktock.corpus.tasks import BUILDERS
from ticktock.world.mock_tools import TOOL_SCHEMAS

SEED = 0  # the seed of the conftest corpus


def test_same_seed_gives_byte_identical_manifest_and_audio(corpus_dir, tmp_path):
    generate(tmp_path, list(BUILDERS), "eval", SEED, 1)
    assert (tmp_path / "manifest.jsonl").read_bytes() == (corpus_dir / "manifest.jsonl").read_bytes()
    first = sorted(p.name for p in (corpus_dir / "audio").iterdir())
    assert first == sorted(p.name for p in (tmp_path / "audio").iterdir())
    for name in first:
        assert (tmp_path / "audio" / name).read_bytes() == (corpus_dir / "audio" / name).read_bytes(), name


def test_a_task_subset_reproduces_the_same_sessions(corpus_dir, tmp_path):
    generate(tmp_path, ["fdb_v3"], "eval", SEED, 1)
    name = "fdb_v3-eval-0-0000.flac"
    assert (tmp_path / "audio" / name).read_bytes() == (corpus_dir / "audio" / name).read_bytes()


def test_every_task_is_present_and_loads(corpus):
    assert sorted(s.task for s in corpus) == sorted(BUILDERS)
    for session in corpus:
        assert session.provenance["source"] == "ticktock-synth"
        assert session.provenance["split"] == "eval" and session.provenance["seed"] == SEED
        assert session.provenance["item"] == "+".join(session.provenance["item_parts"])


def test_audio_is_16k_mono_flac_of_the_stated_duration(corpus):
    for session in corpus:
        info = soundfile.info(str(session.audio_path))
        assert (info.format, info.samplerate, info.channels) == ("FLAC", SAMPLE_RATE, 1)
        assert info.frames == round(session.duration_s * SAMPLE_RATE), session.session_id


def test_word_timings_are_monotonic_inside_their_turn_and_the_audio(corpus):
    for session in corpus:
        for turn in session.turns:
            assert turn.words, f"{session.session_id}: turn without words"
            starts = [w.start_s for w in turn.words]
            assert starts == sorted(starts)
            assert turn.start_s <= turn.words[0].start_s and turn.words[-1].end_s <= turn.end_s + 1e-9
            assert all(w.start_s < w.end_s for w in turn.words)
            assert turn.end_s <= session.duration_s
            assert [w.text for w in turn.words] == [t.strip(".,?!") for t in turn.text.split() if t.strip(".,?!")]


def test_words_cover_the_speech_energy(corpus):
    """Outside every word span (and outside the second voice) the audio is near-silent."""
    for session in corpus:
        audio = load_audio(session.audio_path)
        outside = np.ones(audio.shape[0], dtype=bool)
        for turn in session.turns:
            spans = turn.speech_spans() if turn.speaker == "user" else [(turn.start_s, turn.end_s + 0.1)]
            for a, b in spans:
                outside[int(a * SAMPLE_RATE) : int(b * SAMPLE_RATE) + 1] = False
        frames = audio[: audio.shape[0] // 160 * 160].reshape(-1, 160)
        quiet = outside[: frames.shape[0] * 160].reshape(-1, 160).all(axis=1)
        loud = np.sqrt((frames**2).mean(axis=1)) > 0.01
        assert (loud & quiet).sum() <= 3, session.session_id


def test_silence_has_room_tone_at_the_requested_level(corpus):
    session = corpus[0]
    audio = load_audio(session.audio_path)
    lead = audio[: int(0.9 * SAMPLE_RATE)]  # the first turn starts after >= 1 s
    assert -73 < 20 * np.log10(np.sqrt(np.mean(lead**2))) < -67


def test_next_user_turn_waits_for_the_expected_reply(corpus):
    for session in corpus:
        if session.task not in ("llama_questions", "web_questions", "trivia_qa", "big_bench_audio"):
            continue
        first, second = session.turns
        reply = session.expected["script"][0]["text"]
        assert second.start_s >= first.end_s + 1.0 + 0.3 * len(reply.split()) + 0.5 - 1e-3


def test_trailing_silence_covers_the_last_reply(corpus):
    for session in corpus:
        last_user_end = max(t.end_s for t in session.turns)
        assert session.duration_s >= last_user_end + 1.5
        assert 1.0 <= session.turns[0].start_s <= 3.0 + 1e-6 or session.turns[0].speaker == "other"


def test_script_actions_use_the_documented_records(corpus):
    allowed = {"speak", "tool_call", "speak_after_tools", "backchannel", "stop", "keep_speaking", "ignore"}
    for session in corpus:
        script = session.expected["script"]
        assert script and {a["action"] for a in script} <= allowed
        assert all(0 <= a["turn"] < len(session.turns) for a in script)
        assert "type" in session.expected["behaviour"]
        json.dumps(session.expected)  # every time reference was resolved to a number


def test_tool_sessions_carry_the_schemas_and_calls(corpus):
    for session in corpus:
        calls = session.expected["tool_calls"]
        if session.task == "fdb_v3":
            assert list(session.tools) == TOOL_SCHEMAS
            actions = [a["call"] for a in session.expected["script"] if a["action"] == "tool_call"]
            assert actions == calls and 1 <= len(calls) <= 3
        else:
            assert not session.tools and not calls


def test_backchannels_sit_at_pause_starts(corpus):
    for session in corpus:
        pauses = [tuple(span) for span in session.expected["behaviour"].get("pause_spans", [])]
        for action in session.expected["script"]:
            if action["action"] == "backchannel":
                assert any(abs(action["at_s"] - start) < 1e-9 for start, _ in pauses)
        for start, end in pauses:
            assert 0.3 < end - start < 3.2


def test_cli_rejects_mixed_up_seeds_and_unknown_tasks(tmp_path):
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    with pytest.raises(SynthOptionError, match="training seed"):
        main(parser.parse_args(["--out", str(tmp_path), "--seed", "1000000", "--sessions-per-task", "1"]))
    with pytest.raises(SynthOptionError, match="reserved for evaluation"):
        main(parser.parse_args(["--out", str(tmp_path), "--seed", "5", "--split", "train", "--sessions-per-task", "1"]))
    with pytest.raises(SynthOptionError, match="unknown task"):
        main(parser.parse_args(["--out", str(tmp_path), "--seed", "0", "--sessions-per-task", "1", "--tasks", "nope"]))
    assert not (tmp_path / "manifest.jsonl").exists()


def test_a_failed_run_leaves_no_manifest_and_no_temporary_files(tmp_path, monkeypatch):
    calls = {"n": 0}
    real_speak = synth.speak

    def failing_speak(pieces, voice):
        calls["n"] += 1
        if calls["n"] > 3:
            raise RuntimeError("synthetic failure")
        return real_speak(pieces, voice)

    monkeypatch.setattr(synth, "speak", failing_speak)
    with pytest.raises(RuntimeError, match="synthetic failure"):
        generate(tmp_path, ["llama_questions"], "eval", SEED, 3)
    assert not (tmp_path / "manifest.jsonl").exists()
    leftovers = [p.name for p in tmp_path.rglob("*") if p.name.startswith(".")]
    assert leftovers == []


def test_a_folder_holding_another_corpus_is_refused_before_any_work(corpus_dir, tmp_path):
    from ticktock.errors import RunFolderError  # (corpus.output_folder.OutputFolderError is one)

    other = tmp_path / "other"
    other.mkdir()
    (other / "manifest.jsonl").write_text((corpus_dir / "manifest.jsonl").read_text())
    with pytest.raises(RunFolderError, match=r"other: already holds a corpus \(8 sessions in manifest.jsonl, not made "
                                             r"by this command\); choose another --out, or pass --overwrite"):
        generate(other, ["llama_questions"], "eval", SEED, 1)
    assert sorted(p.name for p in other.iterdir()) == ["manifest.jsonl"]
    assert len(generate(other, ["llama_questions"], "eval", SEED, 1, overwrite=True)) == 1
    assert len(generate(other, ["llama_questions"], "eval", SEED, 1)) == 1  # its own output: written again
    with pytest.raises(RunFolderError, match=r"made by synth --seed 0 --sessions-per-task 1; here --seed 1 "
                                             r"--sessions-per-task 2"):
        generate(other, ["llama_questions"], "eval", 1, 2)


@pytest.mark.parametrize("argv, line", [
    (["--room-tone-dbfs", "nan"], "argument --room-tone-dbfs: expected a finite number from -120 to -20, got 'nan'"),
    (["--sessions-per-task", "0"], "argument --sessions-per-task: expected a whole number from 1 to 100000, got '0'"),
    (["--seed", "-4"], "argument --seed: expected a whole number from 0 to 4294967295, got '-4'"),
])
def test_absurd_numbers_are_refused_before_any_work(argv, line, tmp_path, capsys):
    options = {"--out": str(tmp_path / "out"), "--seed": "0", "--sessions-per-task": "1"}
    options.update(zip(argv[::2], argv[1::2]))
    with pytest.raises(SystemExit) as done:
        synth.cli([part for pair in options.items() for part in pair])
    assert done.value.code == 2 and capsys.readouterr().err.splitlines()[-1].endswith(f"error: {line}")
    assert not (tmp_path / "out").exists()
