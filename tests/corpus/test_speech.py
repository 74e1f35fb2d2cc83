"""eSpeak NG through ctypes: every voice loads, output is deterministic in any call order, errors are clear."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from ticktock.corpus.espeak import ESPEAK_RATE, SpeechError, Voice, synthesize, word_starts
from ticktock.corpus.speech import VOICE_BASES, VOICE_VARIANTS, Piece, speak


def digest(samples: np.ndarray) -> str:
    return hashlib.sha256(samples.tobytes()).hexdigest()


def test_every_voice_in_the_pool_loads():
    for base in VOICE_BASES:
        for variant in VOICE_VARIANTS:
            name = f"{base}+{variant}" if variant else base
            samples, events = synthesize("Hello.", Voice(name))
            assert samples.dtype == np.int16 and samples.size > 0.2 * ESPEAK_RATE, name


def test_synthesis_does_not_depend_on_earlier_calls():
    voice = Voice("en-us+f2", 160, 60)  # f2 has breath noise: the noise seed must be fixed too
    alone = digest(synthesize("Who wrote Pride and Prejudice?", voice)[0])
    synthesize("Something else first, at another rate.", Voice("en+m3", 190, 30))
    assert digest(synthesize("Who wrote Pride and Prejudice?", voice)[0]) == alone


def test_speak_inserts_pauses_and_times_every_word():
    spoken = speak([Piece("Could you tell me", 1.5), Piece("the capital of Peru?")], Voice("en-us", 170, 50))
    assert [w.text for w in spoken.words] == ["Could", "you", "tell", "me", "the", "capital", "of", "Peru"]
    (start, end), = spoken.pause_spans
    assert 1.5 <= end - start < 1.6
    assert spoken.samples.dtype == np.float32 and 0.45 < np.abs(spoken.samples).max() <= 0.55
    assert spoken.duration_s <= spoken.samples.shape[0] / 16_000 <= spoken.duration_s + 0.05


def test_tokens_merged_by_espeak_get_their_own_word():
    spoken = speak([Piece("How should I prepare in the last week?")], Voice("en-us"))
    texts = [w.text for w in spoken.words]
    assert texts == ["How", "should", "I", "prepare", "in", "the", "last", "week"]
    assert all(a.end_s <= b.start_s + 1e-9 for a, b in zip(spoken.words, spoken.words[1:]))


def test_word_starts_maps_events_to_tokens():
    events = [(1, 1, 0), (1, 6, 100), (1, 9, 150), (5, 20, 300)]
    assert word_starts("Book TK212 now.", events) == [(("Book",), 0), (("TK212", "now"), 100)]


def test_clear_errors():
    with pytest.raises(SpeechError, match="voice 'xx-nowhere' not found"):
        synthesize("Hello.", Voice("xx-nowhere"))
    with pytest.raises(SpeechError, match="ASCII"):
        synthesize("Café?", Voice("en-us"))
    with pytest.raises(SpeechError, match="no pieces"):
        speak([], Voice("en-us"))
