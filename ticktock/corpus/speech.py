"""Spoken utterances with word timings: pieces of text spoken with their pauses, as 16 kHz audio.

A voice's engine speaks each piece (``speak_piece``): eSpeak NG (``ticktock.corpus.espeak``, deterministic, every
voice synthetic) or Piper (``ticktock.corpus.piper_voice``, a ``piper:<voice>`` name). ``speak`` joins the pieces,
inserting each piece's pause, and returns the audio with every word's start and end.

Example::

    >>> voice = Voice("en-us+m3", rate_wpm=170, pitch=45)
    >>> spoken = speak([Piece("Could you tell me", 1.5), Piece("the capital of Peru?")], voice)  # doctest: +SKIP
    >>> [w.text for w in spoken.words][:3], spoken.pause_spans                                  # doctest: +SKIP
    (['Could', 'you', 'tell'], ((0.93, 2.46),))
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ticktock.sessions.audio import SAMPLE_RATE, resample
from ticktock.corpus.espeak import (ESPEAK_RATE, FRAME_S, TAIL_S, SpeechError, Voice, espeak_piece, fade_out,
                                    voiced_frames)
from ticktock.sessions.manifest import Word

_PEAK = 0.5  # utterances are peak-normalised to -6 dBFS

__all__ = ["ESPEAK_RATE", "FRAME_S", "TAIL_S", "Piece", "SpeechError", "SpokenText", "Voice", "fade_out", "pick_voice",
           "speak", "speak_piece", "voiced_frames"]


# Voice pool. "en" is British English ("en-gb" is not a voice name in espeak-ng 1.52). en-gb-scotland and the
# f1 variant were left out: a Whisper tiny.en round trip gave them about twice the word error rate of the rest.
VOICE_BASES = ("en-us", "en", "en-gb-x-rp", "en-us-nyc", "en-029")
VOICE_VARIANTS = ("", "m1", "m2", "m3", "m4", "m5", "m6", "m7", "f2", "f3", "f4", "f5")


@dataclass(frozen=True)
class Piece:
    """A stretch of continuous speech followed by ``pause_after_s`` seconds of silence."""

    text: str
    pause_after_s: float = 0.0


@dataclass(frozen=True)
class SpokenText:
    """One utterance: 16 kHz samples and word timings relative to its first sample.

    ``duration_s`` is the end of the last word; the samples run about 30 ms longer (a faded tail).
    ``pause_spans`` are the silent gaps between pieces, from the last word end of one piece to the
    first word start of the next.
    """

    samples: np.ndarray
    words: tuple[Word, ...]
    pause_spans: tuple[tuple[float, float], ...]

    @property
    def duration_s(self) -> float:
        return self.words[-1].end_s if self.words else 0.0


def pick_voice(rng, avoid: str | None = None) -> Voice:
    """A random voice variant, rate 140-200 wpm and pitch 30-70, different from ``avoid`` (a voice name).

    Example::

        >>> import random
        >>> pick_voice(random.Random(3)).name in {f"{b}+{v}" if v else b for b in VOICE_BASES for v in VOICE_VARIANTS}
        True
    """
    while True:
        base = rng.choice(VOICE_BASES)
        variant = rng.choice(VOICE_VARIANTS)
        name = f"{base}+{variant}" if variant else base
        rate, pitch = rng.randint(140, 200), rng.randint(30, 70)
        if name != avoid:
            return Voice(name, rate, pitch)


def speak(pieces: Sequence[Piece], voice: Voice) -> SpokenText:
    """Speak ``pieces`` with ``voice``, inserting each piece's pause, and return 16 kHz audio with word times."""
    if not pieces:
        raise SpeechError("speak: no pieces to speak")
    parts: list[np.ndarray] = []
    words: list[Word] = []
    pauses: list[tuple[float, float]] = []
    offset = 0
    for number, piece in enumerate(pieces):
        samples, piece_words = speak_piece(piece.text, voice)
        if words and piece_words:
            pauses.append((words[-1].end_s, offset / ESPEAK_RATE + piece_words[0].start_s))
        words.extend(Word(w.text, w.start_s + offset / ESPEAK_RATE, w.end_s + offset / ESPEAK_RATE) for w in piece_words)
        pause = piece.pause_after_s if number < len(pieces) - 1 else 0.0
        silence = np.zeros(int(round(pause * ESPEAK_RATE)), dtype=np.float32)
        parts.extend([samples, silence])
        offset += samples.shape[0] + silence.shape[0]
    audio = np.concatenate(parts)
    peak = float(np.abs(audio).max()) or 1.0
    audio16 = resample(audio * (_PEAK / peak), ESPEAK_RATE, SAMPLE_RATE)
    return SpokenText(audio16, tuple(_rounded(w) for w in words), tuple(pauses))


def _rounded(word: Word) -> Word:
    return Word(word.text, round(word.start_s, 4), round(word.end_s, 4))


def speak_piece(text: str, voice: Voice) -> tuple[np.ndarray, list[Word]]:
    """Float samples at 22,050 Hz (trimmed after the last word) and the piece's words, from the voice's engine."""
    if voice.engine == "piper":
        from ticktock.corpus import piper_voice

        return piper_voice.speak_piece(text, voice)
    return espeak_piece(text, voice)


