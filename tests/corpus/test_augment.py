"""Corpus augmentation: deterministic per seed, times scaled with the speed, the drawn SNR and level applied,
held-out settings outside the training ranges, clear errors."""

import json
from dataclasses import replace

import numpy as np
import pytest

from ticktock.sessions.audio import SAMPLE_RATE, load_audio
from ticktock.corpus.augment import (PROFILES, AugmentError, Augmentation, augment_audio, augment_corpus,
                                     change_speed, draw_augmentation, shift_pitch, speech_level)
from ticktock.sessions.manifest import check_audio_durations, load_manifest

PLAIN = Augmentation(speed=1.0, pitch_semitones=0.0, rt60_s=0.0, band="", noise="white", snr_db=200.0, gain_db=0.0,
                     seed=1)


def tone(seconds=1.0, hz=440.0):
    t = np.arange(int(SAMPLE_RATE * seconds)) / SAMPLE_RATE
    return (0.3 * np.sin(2 * np.pi * hz * t)).astype(np.float32)


def dominant_hz(audio):
    spectrum = np.abs(np.fft.rfft(audio * np.hanning(len(audio))))
    return float(np.fft.rfftfreq(len(audio), 1 / SAMPLE_RATE)[np.argmax(spectrum)])


def onset_s(audio):
    """Where the audio first gets loud: the first 10 ms frame above a third of the loudest."""
    frames = np.sqrt(np.mean(audio[: len(audio) // 160 * 160].reshape(-1, 160) ** 2, axis=1))
    return float(np.argmax(frames > frames.max() / 3)) * 0.01


def small_corpus(tmp_path, corpus_dir, count=3):
    source = tmp_path / "src"
    source.mkdir()
    lines = (corpus_dir / "manifest.jsonl").read_text().splitlines()[:count]
    (source / "manifest.jsonl").write_text("\n".join(lines) + "\n")
    (source / "audio").symlink_to(corpus_dir / "audio")
    return source


def test_the_same_seed_gives_identical_files_and_another_seed_others(tmp_path, corpus_dir):
    source = small_corpus(tmp_path, corpus_dir)
    first = augment_corpus(source, tmp_path / "a", "train", seed=4, copies=2)
    second = augment_corpus(source, tmp_path / "b", "train", seed=4, copies=2)
    other = augment_corpus(source, tmp_path / "c", "train", seed=5, copies=2)
    assert first.read_bytes() == second.read_bytes() != other.read_bytes()
    for line in first.read_text().splitlines():
        name = json.loads(line)["audio"]
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


def test_augmented_sessions_load_with_times_scaled_by_the_speed(tmp_path, corpus_dir):
    source = small_corpus(tmp_path, corpus_dir)
    manifest = augment_corpus(source, tmp_path / "out", "heldout", seed=1)
    originals = {s.session_id: s for s in load_manifest(source / "manifest.jsonl")}
    sessions = check_audio_durations(load_manifest(manifest))
    assert len(sessions) == 3
    for session in sessions:
        record = session.provenance["augmentation"]
        original = originals[record["of"]]
        assert session.session_id == record["of"] + "-aug0" and session.task == original.task
        assert session.duration_s == pytest.approx(original.duration_s / record["speed"], abs=1e-3)
        for new, old in zip(session.turns, original.turns):
            assert new.start_s == pytest.approx(old.start_s / record["speed"], abs=1e-3)
            assert [w.end_s for w in new.words] == pytest.approx([w.end_s / record["speed"] for w in old.words], abs=1e-3)
        assert session.chunk_s == original.chunk_s and session.expected.keys() == original.expected.keys()


def test_speed_and_pitch_move_a_tone_as_asked():
    faster = change_speed(tone(), 1.05)
    assert len(faster) == pytest.approx(SAMPLE_RATE / 1.05, abs=2) and dominant_hz(faster) == pytest.approx(462, abs=3)
    higher = shift_pitch(tone(), 2.0)
    assert len(higher) == SAMPLE_RATE and dominant_hz(higher) == pytest.approx(440 * 2 ** (2 / 12), abs=6)


def test_noise_at_the_drawn_snr_and_the_level_change():
    clean = tone(2.0)
    noisy = augment_audio(clean, replace(PLAIN, snr_db=10.0), others=[])
    measured = 20 * np.log10(speech_level(clean) / np.sqrt(np.mean((noisy - clean) ** 2)))
    assert measured == pytest.approx(10.0, abs=0.3)
    quieter = augment_audio(clean, replace(PLAIN, gain_db=-12.0), others=[])
    assert 20 * np.log10(np.max(np.abs(quieter)) / np.max(np.abs(clean))) == pytest.approx(-12.0, abs=0.1)
    with pytest.raises(AugmentError, match="babble noise needs other sessions"):
        augment_audio(clean, replace(PLAIN, noise="babble", snr_db=10.0), others=[])


def test_heldout_settings_lie_outside_the_training_ranges():
    train, heldout = PROFILES["train"], PROFILES["heldout"]
    assert heldout.snr_db[1] <= train.snr_db[0] and heldout.rt60_s[0] >= train.rt60_s[1]
    assert not set(heldout.bands) & set(train.bands) and set(heldout.noises) - set(train.noises)
    draws = [draw_augmentation(np.random.default_rng(i), train) for i in range(200)]
    assert all(train.speed[0] <= d.speed <= train.speed[1] and train.snr_db[0] <= d.snr_db <= train.snr_db[1]
               for d in draws)
    assert 0.3 < np.mean([d.rt60_s > 0 for d in draws]) < 0.7


def test_bad_input_is_named(tmp_path, corpus_dir):
    with pytest.raises(AugmentError, match=r"manifest.jsonl: no such manifest"):
        augment_corpus(tmp_path / "none", tmp_path / "out", "train", 0)
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "manifest.jsonl").write_text('{"session_id": "a", "audio": "audio/a.flac", "duration_s": 1.0}\n'
                                           '{"session_id": "b", "duration_s": 1.0}\n')
    with pytest.raises(AugmentError, match=r"broken/manifest.jsonl:2: field 'audio': missing"):
        augment_corpus(broken, tmp_path / "out", "train", 0)
    with pytest.raises(AugmentError, match=r"--profile: unknown profile 'loud' \(profiles: train, heldout\)"):
        augment_corpus(small_corpus(tmp_path, corpus_dir), tmp_path / "out", "loud", 0)


def test_a_mid_utterance_pause_moves_everything_after_it(corpus_dir):
    from ticktock.corpus.augment import insert_pause

    line = next(json.loads(text) for text in (corpus_dir / "manifest.jsonl").read_text().splitlines()
                if any(t["role"] == "request" and len(t["words"]) >= 4 for t in json.loads(text)["turns"]))
    audio = load_audio(corpus_dir / line["audio"])
    out, moved = insert_pause(audio, line, 1.5, np.random.default_rng(0))
    start, end = moved["expected"]["behaviour"]["pause_spans"][-1]
    assert end - start == pytest.approx(1.5) and len(out) == len(audio) + int(1.5 * SAMPLE_RATE)
    assert moved["duration_s"] == pytest.approx(line["duration_s"] + 1.5)
    turn = next(t for t in moved["turns"] if t["start_s"] < start < t["end_s"])
    original = line["turns"][moved["turns"].index(turn)]
    before = [w for w in turn["words"] if w["end_s"] <= start]
    assert 0 < len(before) < len(turn["words"])  # the pause is inside the request, between two words
    assert turn["end_s"] == pytest.approx(original["end_s"] + 1.5) and turn["start_s"] == original["start_s"]
    assert turn["words"][len(before)]["start_s"] == pytest.approx(original["words"][len(before)]["start_s"] + 1.5)
    pause = out[int(start * SAMPLE_RATE) : int(end * SAMPLE_RATE)]
    assert speech_level(pause) < 0.05 * speech_level(audio)  # room sound, not speech
    assert insert_pause(audio, line, 0.0, np.random.default_rng(0)) == (audio, line)


def test_short_lead_starts_the_versions_with_the_user_speaking_and_keeps_the_rest_of_the_draws(tmp_path, corpus_dir):
    source = small_corpus(tmp_path, corpus_dir)
    plain = {s.session_id: s for s in load_manifest(augment_corpus(source, tmp_path / "plain", "train", seed=3))}
    short = check_audio_durations(load_manifest(augment_corpus(source, tmp_path / "short", "train", seed=3,
                                                               short_lead=1.0)))
    for session in short:
        before, record = plain[session.session_id], session.provenance["augmentation"]
        cut = record.pop("lead_cut_s")
        assert record == before.provenance["augmentation"]  # the same speed, noise, pause, ... as without the option
        speed = record["speed"]
        assert min(t.start_s for t in session.turns) <= 0.3 / speed + 1e-3 < min(t.start_s for t in before.turns)
        assert session.duration_s == pytest.approx(before.duration_s - cut / speed, abs=2e-3)
        for new, old in zip(session.turns, before.turns):
            assert new.end_s == pytest.approx(old.end_s - cut / speed, abs=2e-3)
            assert [w.start_s for w in new.words] == pytest.approx([w.start_s - cut / speed for w in old.words], abs=2e-3)
        assert onset_s(load_audio(session.audio_path)) == pytest.approx(onset_s(load_audio(before.audio_path)) - cut / speed,
                                                                     abs=0.03)  # the audio moved with the times
    with pytest.raises(AugmentError, match=r"--short-lead: must be a rate between 0 and 1, got 1.5"):
        augment_corpus(source, tmp_path / "bad", "train", seed=3, short_lead=1.5)


def test_a_rerun_keeps_the_audio_already_written(tmp_path, corpus_dir):
    source = small_corpus(tmp_path, corpus_dir, count=2)
    manifest = augment_corpus(source, tmp_path / "out", "train", seed=2)
    kept = sorted((tmp_path / "out" / "audio").iterdir())[0]
    kept.write_bytes(b"kept")  # a rerun does not write an existing file again
    manifest.unlink()
    assert augment_corpus(source, tmp_path / "out", "train", seed=2).is_file() and kept.read_bytes() == b"kept"


def test_the_output_is_never_the_input_nor_another_corpus_unless_overwrite(tmp_path, corpus_dir, capsys):
    from ticktock.corpus.augment import main
    from ticktock.errors import RunFolderError, user_errors  # (output_folder.OutputFolderError is one)

    source = small_corpus(tmp_path, corpus_dir, count=2)
    before = (source / "manifest.jsonl").read_bytes()
    (tmp_path / "alias").symlink_to(source)
    refused = r": the output folder is the input \(--in .*src\); writing there would replace what it reads, even with " \
              r"--overwrite; choose another --out"
    with pytest.raises(RunFolderError, match=refused):
        augment_corpus(source, source, "train", seed=1)
    with pytest.raises(RunFolderError, match=refused):
        augment_corpus(source, tmp_path / "alias", "train", seed=1, overwrite=True)
    with pytest.raises(SystemExit) as done, user_errors():  # as python -m ticktock.corpus.augment runs it
        main(["--in", str(source), "--out", str(source)])
    assert done.value.code == 4 and len(capsys.readouterr().err.splitlines()) == 1
    assert (source / "manifest.jsonl").read_bytes() == before and sorted(source.iterdir()) == [source / "audio",
                                                                                               source / "manifest.jsonl"]
    other = tmp_path / "other"
    other.mkdir()
    (other / "manifest.jsonl").write_text((corpus_dir / "manifest.jsonl").read_text())
    with pytest.raises(RunFolderError, match=r"other: already holds a corpus \(8 sessions in manifest.jsonl, not made "
                                             r"by this command\); choose another --out, or pass --overwrite"):
        augment_corpus(source, other, "train", seed=1)
    assert (other / "manifest.jsonl").read_text() == (corpus_dir / "manifest.jsonl").read_text()
    assert len(load_manifest(augment_corpus(source, other, "train", seed=1, overwrite=True))) == 2


def test_an_interrupted_augmentation_resumes_but_another_ones_files_are_not_taken(tmp_path, corpus_dir):
    from ticktock.errors import RunFolderError  # (corpus.output_folder.OutputFolderError is one)

    source = small_corpus(tmp_path, corpus_dir, count=2)
    out = tmp_path / "out"
    manifest = augment_corpus(source, out, "train", seed=2)
    manifest.unlink()  # as if stopped before the manifest
    with pytest.raises(RunFolderError, match=r"out: holds the unfinished output of another command \(made by augment "
                                             r"--seed 2; here --seed 3\); rerun that command to finish it"):
        augment_corpus(source, out, "train", seed=3)
    kept = sorted((out / "audio").iterdir())[0]
    kept.write_bytes(b"kept")
    augment_corpus(source, out, "train", seed=2)  # the same command: resumes, keeping what is there
    assert kept.read_bytes() == b"kept"
    augment_corpus(source, out, "train", seed=3, overwrite=True)  # every file written again
    assert kept.read_bytes() != b"kept" and len(load_audio(kept)) > 0


@pytest.mark.parametrize("argv, line", [
    (["--copies", "0"], "argument --copies: expected a whole number from 1 to 100, got '0'"),
    (["--seed", "-1"], "argument --seed: expected a whole number from 0 to 4294967295, got '-1'"),
    (["--short-lead", "nan"], "argument --short-lead: expected a finite number from 0 to 1, got 'nan'"),
])
def test_absurd_numbers_are_refused_before_any_work(argv, line, tmp_path, capsys):
    from ticktock.corpus.augment import main

    with pytest.raises(SystemExit) as done:
        main(["--in", str(tmp_path / "in"), "--out", str(tmp_path / "out"), *argv])
    assert done.value.code == 2 and capsys.readouterr().err.splitlines()[-1].endswith(f"error: {line}")
    assert not (tmp_path / "out").exists()
