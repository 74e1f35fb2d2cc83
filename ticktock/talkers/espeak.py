"""The eSpeak NG talker (``talker=espeak``): the core dependency's formant synthesizer, on the CPU.

Each piece of text is spoken in a freshly forked process (``ticktock.corpus.espeak``), so the same text gives the
same samples byte for byte in any order: the audio depends on the text alone (``text_only``), which makes
speculative synthesis exact. Text is folded to ASCII first (eSpeak's engine here takes ASCII only). The cost of a
piece is measured under the wall clock (the fork included: it is what this talker costs here) and charged from the
cost profile's ``talkers.espeak`` entry under the modeled clock (``python -m ticktock.calibrate`` measures it).

``talker.voice`` is checked when the talker is built (before any work): a language of the bundled eSpeak NG data
(``espeak-ng-data/lang``, any case), optionally ``+`` a variant of ``espeak-ng-data/voices/!v`` (exact name). eSpeak
itself would take a path there, and would speak an unknown variant as the plain language without a word; a voice
is only ever a name from these lists, never a path.

Example::

    >>> talker = EspeakTalker(voice="en-us", rate_wpm=175)
    >>> samples = talker.synthesize("Hello there.")          # doctest: +SKIP
    >>> round(len(samples) / talker.sample_rate, 1)          # doctest: +SKIP
    0.9
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

from ticktock.talkers.base import Talker, TalkerError, ascii_text

MIN_WPM, MAX_WPM = 80, 450  # eSpeak's rate range


@functools.lru_cache(maxsize=None)
def espeak_voices() -> tuple[dict[str, str], frozenset[str]]:
    """The voices of the bundled eSpeak NG data: its languages (lower-case name -> file name, from the files of
    ``lang/``) and its variants (the file names of ``voices/!v``)."""
    try:
        import espeakng_loader
    except ImportError:
        raise TalkerError("talker.voice: eSpeak NG is not installed (pip install espeakng-loader==0.2.4)") from None
    data = Path(espeakng_loader.get_data_path())
    languages = {path.name.lower(): path.name for path in (data / "lang").rglob("*") if path.is_file()}
    variants = frozenset(path.name for path in (data / "voices" / "!v").iterdir() if path.is_file())
    return languages, variants


def check_voice(voice) -> str:
    """``voice`` when it is an eSpeak voice of this installation (``<language>`` or ``<language>+<variant>``, see the
    module docstring); else a one-line ``TalkerError`` naming ``talker.voice``, the value and the valid names.

    >>> check_voice("en-us+f2")
    'en-us+f2'
    >>> check_voice("../../x")                                   # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ticktock.talkers.base.TalkerError: talker.voice: '../../x': not an eSpeak voice; valid: a language (af, am, ...), optionally +variant (...)
    """
    if not isinstance(voice, str) or not voice or voice.startswith("piper:"):
        raise TalkerError(f"talker.voice: must be an eSpeak voice name such as 'en-us' or 'en-us+f2', got {voice!r}")
    languages, variants = espeak_voices()
    language, plus, variant = voice.partition("+")
    if language.lower() not in languages or (plus and variant not in variants):
        what = f"eSpeak has no variant {variant!r}" if language.lower() in languages else "not an eSpeak voice"
        raise TalkerError(f"talker.voice: {voice!r}: {what}; valid: a language ({', '.join(sorted(languages))}), "
                          f"optionally +variant ({', '.join(sorted(variants))})")
    return voice


class EspeakTalker(Talker):
    name = "espeak"

    def __init__(self, voice: str = "en-us", rate_wpm: int = 175, pitch: int = 50):
        from ticktock.corpus.espeak import ESPEAK_RATE, Voice

        check_voice(voice)  # a name of the bundled voices, never a path
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
