"""The eSpeak NG talker (``talker=espeak``): the core dependency's formant synthesizer, on the CPU.

Each piece of text is spoken in a freshly forked process (``ticktock.corpus.espeak``), so the same text gives the
same samples byte for byte in any order: the audio depends on the text alone (``text_only``), which makes
speculative synthesis exact. Text is folded to ASCII first (eSpeak's engine here takes ASCII only). The cost of a
piece is measured under the wall clock (the fork included: it is what this talker costs here) and charged from the
cost profile's ``talkers.espeak`` entry under the modeled clock (``python -m ticktock.calibrate`` measures it).

Example::

    >>> talker = EspeakTalker(voice="en-us", rate_wpm=175)
    >>> samples = talker.synthesize("Hello there.")          # doctest: +SKIP
    >>> round(len(samples) / talker.sample_rate, 1)          # doctest: +SKIP
    0.9
"""

from __future__ import annotations

import numpy as np

from ticktock.talkers.base import Talker, TalkerError, ascii_text

MIN_WPM, MAX_WPM = 80, 450  # eSpeak's rate range


class EspeakTalker(Talker):
    name = "espeak"

    def __init__(self, voice: str = "en-us", rate_wpm: int = 175, pitch: int = 50):
        from ticktock.corpus.espeak import ESPEAK_RATE, Voice

        if not isinstance(voice, str) or not voice or voice.startswith("piper:"):
            raise TalkerError(f"talker.voice: must be an eSpeak voice name such as 'en-us' or 'en-us+f2', got {voice!r}")
        if isinstance(rate_wpm, bool) or not isinstance(rate_wpm, int) or not MIN_WPM <= rate_wpm <= MAX_WPM:
            raise TalkerError(f"talker.rate_wpm: must be an integer from {MIN_WPM} to {MAX_WPM} (words per minute), "
                              f"got {rate_wpm!r}")
        if isinstance(pitch, bool) or not isinstance(pitch, int) or not 0 <= pitch <= 99:
            raise TalkerError(f"talker.pitch: must be an integer from 0 to 99, got {pitch!r}")
        self.voice = Voice(voice, rate_wpm, pitch)
        self.sample_rate = ESPEAK_RATE

    def synthesize(self, text: str):
        from ticktock.corpus.espeak import synthesize

        text = ascii_text(text)
        if not text:
            return np.zeros(0, dtype=np.float32)
        samples, _ = synthesize(text, self.voice)
        return samples.astype(np.float32) / 32768.0

    def describe(self) -> dict:
        return {**super().describe(), "voice": self.voice.to_json(), "engine": "espeak-ng (libespeak-ng, one forked process per piece)"}
