"""Session audio: room tone, the utterances mixed in at their places, and an atomic FLAC write.

Example::

    >>> import numpy as np
    >>> tone = room_tone(16_000, seed=7, level_dbfs=-70.0)
    >>> round(float(20 * np.log10(np.sqrt(np.mean(tone ** 2)))), 1)
    -70.0
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Sequence

import numpy as np

from ticktock.results.atomic import atomic_write
from ticktock.sessions.audio import SAMPLE_RATE

BACKGROUND_GAIN_DB = -12.0  # level of the second voice ("other") relative to the user
ROOM_TONE_DBFS = -70.0
_ROOM_TONE_CUTOFF_HZ = 400.0  # room tone is mostly low-frequency hum and rumble


def stable_seed(text: str) -> int:
    """A 63-bit seed from ``text`` that is the same in every process (unlike ``hash``).

    >>> stable_seed("abc") == stable_seed("abc")
    True
    """
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") >> 1


def room_tone(num_samples: int, seed: int, level_dbfs: float = ROOM_TONE_DBFS) -> np.ndarray:
    """Low-pass filtered Gaussian noise at ``level_dbfs`` RMS, deterministic for a given seed."""
    from scipy.signal import butter, sosfilt

    rng = np.random.default_rng(seed)
    noise = rng.standard_normal(num_samples + SAMPLE_RATE // 10)
    sos = butter(2, _ROOM_TONE_CUTOFF_HZ, btype="low", fs=SAMPLE_RATE, output="sos")
    tone = sosfilt(sos, noise)[SAMPLE_RATE // 10 :]  # drop the filter's start-up transient
    rms = float(np.sqrt(np.mean(tone**2))) or 1.0
    return (tone * (10 ** (level_dbfs / 20) / rms)).astype(np.float32)


def mix(num_samples: int, parts: Sequence[tuple[int, np.ndarray, float]], bed: np.ndarray | None = None) -> np.ndarray:
    """Sum ``parts`` = (start sample, samples, gain in dB) over ``bed`` (or silence); clip to [-1, 1]."""
    out = np.zeros(num_samples, dtype=np.float32) if bed is None else bed[:num_samples].astype(np.float32, copy=True)
    for start, samples, gain_db in parts:
        end = min(num_samples, start + samples.shape[0])
        if start < 0 or end <= start:
            raise ValueError(f"mix: part at sample {start} (length {samples.shape[0]}) is outside 0..{num_samples}")
        out[start:end] += samples[: end - start] * np.float32(10 ** (gain_db / 20))
    return np.clip(out, -1.0, 1.0)


def write_flac(path: Path, samples: np.ndarray, sample_rate: int = SAMPLE_RATE) -> Path:
    """Write 16-bit mono FLAC atomically: to a temporary name in the same folder, then rename."""
    import soundfile

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_write(path) as tmp:
        soundfile.write(tmp, samples, sample_rate, format="FLAC", subtype="PCM_16")
    return path
