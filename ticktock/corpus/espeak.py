"""The eSpeak NG engine: speech with word timings through the libespeak-ng C API (ctypes, ``espeakng-loader``).

The synth callback delivers the PCM (22,050 Hz int16) together with WORD events that carry the word's
character position in the text and its exact sample position. A word starts at its event; it ends at the
last voiced 10 ms frame before the next word (or before the end of the text), so sentence pauses and the
pauses between pieces are not counted as speech.

Determinism: libespeak-ng keeps waveform state (phase, flutter) in globals that carry over from one call
to the next, and seeds its noise generator from the clock. Each call therefore runs in a freshly forked
child process that loads and initialises the library, seeds the noise generator with a fixed value, speaks
one text and exits. The same text and voice give byte-identical samples on every call, in any order.

``Voice``, ``SpeechError`` and the frame helpers (``voiced_frames``, ``fade_out``) are shared with the Piper
engine (``ticktock.corpus.piper_voice``); ``ticktock.corpus.speech`` speaks whole utterances with either.

Example::

    >>> samples, words = espeak_piece("Hello there", Voice("en-us", 175, 50))   # doctest: +SKIP
    >>> [w.text for w in words]                                                  # doctest: +SKIP
    ['Hello', 'there']
"""

from __future__ import annotations

import ctypes
import os
import pickle
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from ticktock.sessions.manifest import Word

ESPEAK_RATE = 22_050
NOISE_SEED = 20_240_601  # fixed seed for espeak's breath/noise generator

_AUDIO_OUTPUT_SYNCHRONOUS = 2
_INITIALIZE_DONT_EXIT = 0x8000
_CHARS_UTF8 = 1
_POS_CHARACTER = 1
_PARAM_RATE, _PARAM_PITCH = 1, 3
_EVENT_LIST_TERMINATED, _EVENT_WORD, _EVENT_END, _EVENT_MSG_TERMINATED = 0, 1, 5, 6

FRAME_S = 0.010  # frame length of the voiced/unvoiced decision for word ends
_VOICED_DB = -40.0  # a frame is voiced when its RMS is within 40 dB of the text's loudest frame
TAIL_S = 0.030  # audio kept after the last word's end (then faded out)


class SpeechError(RuntimeError):
    """eSpeak NG could not be loaded or could not speak a text."""


@dataclass(frozen=True)
class Voice:
    """An eSpeak voice: ``name`` is "<language>[+<variant>]", e.g. "en-us+f2"; rate in words per minute.
    A name ``piper:<voice>`` is a Piper voice instead (``ticktock.corpus.piper_voice``; pitch not used)."""

    name: str
    rate_wpm: int = 175
    pitch: int = 50

    @property
    def engine(self) -> str:
        """``"piper"`` or ``"espeak"``: which engine speaks this voice."""
        return "piper" if self.name.startswith("piper:") else "espeak"

    def to_json(self) -> dict:
        return {"name": self.name, "rate_wpm": self.rate_wpm, "pitch": self.pitch}


def espeak_piece(text: str, voice: "Voice") -> tuple[np.ndarray, list[Word]]:
    """Float samples at 22,050 Hz (trimmed after the last word) and the piece's words."""
    samples, events = synthesize(text, voice)
    audio = samples.astype(np.float32) / 32768.0
    starts = word_starts(text, events)
    if not starts:
        raise SpeechError(f"espeak produced no words for {text!r}")
    end_sample = max([s for kind, _, s in events if kind == _EVENT_END] + [starts[-1][1]])
    end_sample = min(end_sample, audio.shape[0])
    words = _timed_words(audio, starts, end_sample)
    keep = min(audio.shape[0], int(round(words[-1].end_s * ESPEAK_RATE)) + int(TAIL_S * ESPEAK_RATE))
    return fade_out(audio[:keep]), words


def word_starts(text: str, events: Sequence[tuple[int, int, int]]) -> list[tuple[tuple[str, ...], int]]:
    """Spoken words of ``text`` grouped by WORD event: (words, start sample) per group, punctuation stripped.

    ``events`` are (type, text_position, sample) triples; a whitespace token starts at its first WORD
    event (numbers like "212" get one event per spoken part). espeak sometimes speaks two tokens as one
    word ("in the"); a token without an event of its own joins the group before it (or the first group).

    Example::

        >>> word_starts("Book TK212 in the morning.", [(1, 1, 0), (1, 6, 4857), (1, 8, 9000), (1, 12, 20000), (1, 19, 25000)])
        [(('Book',), 0), (('TK212',), 4857), (('in', 'the'), 20000), (('morning',), 25000)]
    """
    tokens = [(m.start(), m.end(), m.group()) for m in re.finditer(r"\S+", text)]
    first_event: dict[int, int] = {}
    for kind, position, sample in events:
        if kind != _EVENT_WORD:
            continue
        index = next((i for i, (a, b, _) in enumerate(tokens) if a <= position - 1 < b), None)
        if index is not None and index not in first_event:
            first_event[index] = sample
    groups: list[tuple[tuple[str, ...], int]] = []
    orphans: list[str] = []  # words before the first event
    for index, (_, _, token) in enumerate(tokens):
        word = token.strip(".,;:!?\"'()")
        if not any(ch.isalnum() for ch in word):
            continue
        if index in first_event:
            groups.append(((*orphans, word), first_event[index]))
            orphans = []
        elif groups:
            groups[-1] = ((*groups[-1][0], word), groups[-1][1])
        else:
            orphans.append(word)
    return groups


def _timed_words(audio: np.ndarray, groups: list[tuple[tuple[str, ...], int]], end_sample: int) -> list[Word]:
    """Words with end = last voiced frame before the next group's start (or ``end_sample``); a group of
    several words is shared out in proportion to their lengths."""
    voiced_until = voiced_frames(audio)
    frame = int(FRAME_S * ESPEAK_RATE)
    words = []
    for number, (texts, start) in enumerate(groups):
        limit = groups[number + 1][1] if number + 1 < len(groups) else end_sample
        frames = voiced_until[start // frame : max(start // frame + 1, limit // frame)]
        voiced = np.nonzero(frames)[0]
        end = start + frame if voiced.size == 0 else (start // frame + int(voiced[-1]) + 1) * frame
        end = max(start + frame, min(end, limit))
        words.extend(_share(texts, int(start), int(end)))
    return words


def _share(texts: tuple[str, ...], start: int, end: int) -> list[Word]:
    """Split [start, end) samples among ``texts`` by character count (one word keeps the whole span)."""
    weights = [len(t) + 1 for t in texts]
    edges = [start + (end - start) * sum(weights[:i]) // sum(weights) for i in range(len(texts) + 1)]
    return [Word(t, a / ESPEAK_RATE, b / ESPEAK_RATE) for t, a, b in zip(texts, edges, edges[1:])]


def voiced_frames(audio: np.ndarray) -> np.ndarray:
    """Per ``FRAME_S`` frame of 22,050 Hz ``audio``, whether it is voiced (RMS within 40 dB of the loudest frame)."""
    frame = int(FRAME_S * ESPEAK_RATE)
    count = max(1, audio.shape[0] // frame)
    padded = np.zeros(count * frame, dtype=np.float32)
    padded[: min(audio.shape[0], count * frame)] = audio[: count * frame]
    rms = np.sqrt(np.mean(padded.reshape(count, frame) ** 2, axis=1))
    loudest = float(rms.max()) or 1.0
    return rms > loudest * 10 ** (_VOICED_DB / 20)


def fade_out(audio: np.ndarray, fade_s: float = 0.010) -> np.ndarray:
    """A copy of ``audio`` (22,050 Hz) whose last ``fade_s`` seconds ramp linearly down to silence."""
    n = min(audio.shape[0], int(fade_s * ESPEAK_RATE))
    out = audio.copy()
    if n:
        out[-n:] *= np.linspace(1.0, 0.0, n, dtype=np.float32)
    return out


# ------------------------------------------------------------------------------------ the C library


def synthesize(text: str, voice: Voice) -> tuple[np.ndarray, list[tuple[int, int, int]]]:
    """Raw espeak output for ``text``: int16 samples at 22,050 Hz and (type, text_position, sample) events.

    Runs in a forked child so that no library state carries over between calls (see the module docstring).

    Example::

        >>> samples, events = synthesize("Hello world.", Voice("en-us"))   # doctest: +SKIP
        >>> samples.dtype, [e for e in events if e[0] == 1]                  # doctest: +SKIP
        (dtype('int16'), [(1, 1, 0), (1, 7, 6879)])
    """
    if not text.isascii():
        raise SpeechError(f"espeak text must be ASCII (character offsets are used for word timing): {text!r}")
    if not hasattr(os, "fork"):
        raise SpeechError("deterministic espeak synthesis needs os.fork (Linux or macOS)")
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: speak, send the result, exit without returning into the caller
        os.close(read_fd)
        _child_main(write_fd, text, voice)
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as pipe:
        payload = pipe.read()
    _, status = os.waitpid(pid, 0)
    if not payload:
        raise SpeechError(f"espeak child process died (wait status {status}) while speaking {text!r}")
    kind, value = pickle.loads(payload)
    if kind == "error":
        raise SpeechError(value)
    return value


def _child_main(write_fd: int, text: str, voice: Voice) -> None:
    code = 0
    try:
        try:
            result = ("ok", _synthesize_here(text, voice))
        except Exception as err:  # report any failure to the parent instead of raising in the child
            result = ("error", f"{type(err).__name__}: {err}")
        with os.fdopen(write_fd, "wb") as pipe:
            pipe.write(pickle.dumps(result))
    except BaseException:
        code = 1
    finally:
        os._exit(code)


class _Event(ctypes.Structure):
    _fields_ = [
        ("type", ctypes.c_int),
        ("unique_identifier", ctypes.c_uint),
        ("text_position", ctypes.c_int),
        ("length", ctypes.c_int),
        ("audio_position", ctypes.c_int),
        ("sample", ctypes.c_int),
        ("user_data", ctypes.c_void_p),
        ("id", ctypes.c_void_p),
    ]


_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int, ctypes.POINTER(_Event))


def load_library() -> tuple[ctypes.CDLL, str]:
    """The libespeak-ng shared library bundled by ``espeakng-loader`` and the folder holding its data."""
    try:
        import espeakng_loader
    except ImportError:
        raise SpeechError("the corpus needs espeakng-loader (pip install espeakng-loader==0.2.4)") from None
    library = espeakng_loader.get_library_path()
    try:
        lib = ctypes.CDLL(library)
        data = Path(espeakng_loader.get_data_path())
    except (OSError, RuntimeError) as err:
        raise SpeechError(f"cannot load libespeak-ng from {library}: {err}") from None
    return lib, str(data.parent)


def _synthesize_here(text: str, voice: Voice) -> tuple[np.ndarray, list[tuple[int, int, int]]]:
    lib, data_dir = load_library()
    lib.espeak_Initialize.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
    rate = lib.espeak_Initialize(_AUDIO_OUTPUT_SYNCHRONOUS, 0, data_dir.encode(), _INITIALIZE_DONT_EXIT)
    if rate != ESPEAK_RATE:
        raise SpeechError(f"espeak_Initialize({data_dir}) returned {rate}, expected sample rate {ESPEAK_RATE}")
    lib.espeak_ng_SetRandSeed(ctypes.c_long(NOISE_SEED))
    chunks: list[np.ndarray] = []
    events: list[tuple[int, int, int]] = []

    def on_audio(wav, count, event_list):
        if count > 0 and wav:
            chunks.append(np.ctypeslib.as_array(wav, (count,)).copy())
        index = 0
        while event_list[index].type not in (_EVENT_LIST_TERMINATED, _EVENT_MSG_TERMINATED):
            event = event_list[index]
            events.append((event.type, event.text_position, event.sample))
            index += 1
        return 0

    callback = _CALLBACK(on_audio)
    lib.espeak_SetSynthCallback(callback)
    if lib.espeak_SetVoiceByName(voice.name.encode()) != 0:
        raise SpeechError(f"espeak voice {voice.name!r} not found in {data_dir}")
    lib.espeak_SetParameter(_PARAM_RATE, int(voice.rate_wpm), 0)
    lib.espeak_SetParameter(_PARAM_PITCH, int(voice.pitch), 0)
    encoded = text.encode("utf-8")
    lib.espeak_Synth.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint, ctypes.c_int, ctypes.c_uint,
                                 ctypes.c_uint, ctypes.c_void_p, ctypes.c_void_p]
    status = lib.espeak_Synth(encoded, len(encoded) + 1, 0, _POS_CHARACTER, 0, _CHARS_UTF8, None, None)
    if status != 0:
        raise SpeechError(f"espeak_Synth failed with status {status} for {text!r}")
    samples = np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.int16)
    return samples.astype(np.int16, copy=False), events
