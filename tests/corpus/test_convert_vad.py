"""The energy VAD the converters use for turn spans when a source has no word timings."""

from __future__ import annotations

import numpy as np

from helpers import speech_like
from ticktock.corpus.convert.vad import speech_spans
from ticktock.corpus.mixing import room_tone


def close(spans, expected, tol=0.06):
    return len(spans) == len(expected) and all(abs(a - c) < tol and abs(b - d) < tol for (a, b), (c, d) in zip(spans, expected))


def test_digital_silence_and_quiet_noise_have_no_speech():
    assert speech_spans(np.zeros(32_000, dtype=np.float32)) == []
    assert speech_spans(room_tone(32_000, seed=1, level_dbfs=-70.0)) == []
    assert speech_spans(np.zeros(100, dtype=np.float32)) == []


def test_bursts_over_room_tone():
    audio = speech_like(6.0, [(0.5, 1.5), (1.7, 2.5), (4.0, 5.0)], seed=3) + room_tone(96_000, seed=2, level_dbfs=-55.0)
    spans = speech_spans(audio)
    assert close(spans, [(0.5, 2.5), (4.0, 5.0)])  # a 0.2 s gap is merged, a 1.5 s gap is not
    assert close(speech_spans(audio, min_gap_s=0.1), [(0.5, 1.5), (1.7, 2.5), (4.0, 5.0)])


def test_speech_from_start_to_end_and_short_clicks():
    audio = speech_like(2.0, [(0.0, 2.0)], seed=4)
    assert close(speech_spans(audio), [(0.0, 2.0)])
    clicks = speech_like(3.0, [(1.0, 1.04)], seed=5)
    assert speech_spans(clicks) == []  # shorter than min_speech_s


def test_level_does_not_matter():
    quiet = speech_like(4.0, [(1.0, 3.0)], seed=6) * 0.05  # about -40 dBFS speech
    assert close(speech_spans(quiet), [(1.0, 3.0)])
