"""Session audio: read any soundfile-readable file and bring it to 16 kHz mono float32.

Resampling uses soxr (a real band-limited resampler, VHQ quality), never sample dropping. Channels are
averaged. Bad audio raises :class:`AudioError` naming the file.

Example::

    >>> from ticktock.resources import resource_path
    >>> audio = load_audio(resource_path("manifests/ticktock-mini/audio/alpaca_eval-eval-0-0000.flac"))
    >>> audio.dtype, audio.ndim
    (dtype('float32'), 1)
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

SAMPLE_RATE = 16_000


class AudioError(ValueError):
    """The audio of a session is missing, unreadable, corrupt, empty or not finite."""


def load_audio(path: str | Path, sample_rate: int = SAMPLE_RATE) -> np.ndarray:
    """Read ``path`` and return mono float32 samples at ``sample_rate``."""
    import soundfile

    path = Path(path)
    if not path.is_file():
        raise AudioError(f"{path}: audio file not found")
    try:
        data, rate = soundfile.read(str(path), dtype="float32", always_2d=True)
    except Exception as err:  # soundfile raises LibsndfileError, RuntimeError or TypeError on bad files
        raise AudioError(f"{path}: cannot read audio ({err})") from None
    if data.size == 0:
        raise AudioError(f"{path}: audio is empty")
    mono = data.mean(axis=1, dtype=np.float32)
    if not np.isfinite(mono).all():
        raise AudioError(f"{path}: audio has NaN or infinite samples")
    return resample(mono, rate, sample_rate)


def resample(samples: np.ndarray, rate: int, target: int = SAMPLE_RATE) -> np.ndarray:
    """Band-limited resampling with soxr; a no-op when the rates match."""
    samples = np.ascontiguousarray(samples, dtype=np.float32)
    if rate == target:
        return samples
    import soxr

    return soxr.resample(samples, rate, target, quality="VHQ").astype(np.float32, copy=False)


def chunk_samples(audio: np.ndarray, start_s: float, end_s: float, sample_rate: int = SAMPLE_RATE) -> np.ndarray:
    """Samples of [start_s, end_s), zero-padded at the end when the audio is shorter."""
    start = int(round(start_s * sample_rate))
    end = int(round(end_s * sample_rate))
    piece = audio[start:end]
    if piece.shape[0] < end - start:
        piece = np.concatenate([piece, np.zeros(end - start - piece.shape[0], dtype=np.float32)])
    return piece
