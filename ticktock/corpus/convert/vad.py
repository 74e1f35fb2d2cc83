"""An energy voice-activity detector: where in a clip someone is speaking, with no model and no download.

It measures the RMS level of 20 ms frames, takes the noise floor (10th percentile) and the loud level
(99th percentile), and calls a frame voiced when it is more than a third of the way from the floor up to
the loud level (and at least 6 dB above the floor). Voiced runs closer than ``min_gap_s`` are merged,
runs shorter than ``min_speech_s`` are dropped, and every span is padded by ``pad_s``. It is made for the
sources converted here: clean TTS questions, read speech with room tone, digital silence in between.

Example::

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> audio = np.zeros(48_000, dtype=np.float32)
    >>> audio[16_000:32_000] = 0.3 * rng.standard_normal(16_000)
    >>> [(round(a, 2), round(b, 2)) for a, b in speech_spans(audio)]
    [(0.97, 2.03)]
"""

from __future__ import annotations

import numpy as np

from ticktock.sessions.audio import SAMPLE_RATE

FRAME_S = 0.02
FLOOR_LIMIT_DB = -80.0  # digital silence counts as this level, so MP3 dither is not mistaken for speech
SILENT_DB = -50.0  # a clip whose loud level (99th percentile frame) is below this has no speech
THRESHOLD_FRACTION = 0.35
MIN_MARGIN_DB = 6.0


def frame_levels_db(audio: np.ndarray, sample_rate: int = SAMPLE_RATE) -> np.ndarray:
    """RMS level in dBFS of consecutive ``FRAME_S`` frames (a final partial frame is dropped)."""
    size = max(1, int(round(FRAME_S * sample_rate)))
    count = audio.shape[0] // size
    if count == 0:
        return np.zeros(0)
    frames = audio[: count * size].astype(np.float64).reshape(count, size)
    return 10.0 * np.log10(np.mean(frames**2, axis=1) + 1e-12)


def speech_spans(audio: np.ndarray, sample_rate: int = SAMPLE_RATE, min_gap_s: float = 0.3,
                 min_speech_s: float = 0.1, pad_s: float = 0.03) -> list[tuple[float, float]]:
    """Speech spans (start_s, end_s) of mono ``audio``, in order; empty when the clip is silent."""
    levels = frame_levels_db(audio, sample_rate)
    if levels.size == 0:
        return []
    floor = max(float(np.percentile(levels, 10)), FLOOR_LIMIT_DB)
    loud = float(np.percentile(levels, 99))
    if loud < SILENT_DB:
        return []
    if loud - floor < MIN_MARGIN_DB:  # one steady level throughout, and loud enough: all speech
        voiced = np.ones(levels.size, dtype=bool)
    else:
        threshold = floor + max(MIN_MARGIN_DB, THRESHOLD_FRACTION * (loud - floor))
        voiced = levels > threshold
    runs = _runs(voiced)
    merged: list[list[int]] = []
    gap = int(round(min_gap_s / FRAME_S))
    for start, end in runs:
        if merged and start - merged[-1][1] < gap:
            merged[-1][1] = end
        else:
            merged.append([start, end])
    duration = audio.shape[0] / sample_rate
    spans = []
    for start, end in merged:
        if (end - start) * FRAME_S < min_speech_s:
            continue
        spans.append((round(max(0.0, start * FRAME_S - pad_s), 3), round(min(duration, end * FRAME_S + pad_s), 3)))
    return spans


def _runs(mask: np.ndarray) -> list[tuple[int, int]]:
    """[start, end) frame indices of the True runs of ``mask``."""
    edges = np.diff(np.concatenate([[0], mask.astype(np.int8), [0]]))
    return list(zip(np.flatnonzero(edges == 1).tolist(), np.flatnonzero(edges == -1).tolist()))
