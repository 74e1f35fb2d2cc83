"""Session audio: read any soundfile-readable file and bring it to 16 kHz mono float32.

Resampling uses soxr (a real band-limited resampler, VHQ quality), never sample dropping. Channels are
averaged. Bad audio raises :class:`AudioError` naming the file. Audio that loads but is suspect is logged as a
warning naming the file (logger ``ticktock.sessions.audio``): clipped (at least 0.1 % of a channel's samples at full
scale, as the corpus converters judge it) or samples far outside [-1, 1] (peak above 1.5: a float file
holding unscaled integer PCM, say). ``audio_header`` reads only a file's header (length and rate), so every
session's duration can be checked before any work (``ticktock.sessions.manifest.check_audio_durations``).

Example::

    >>> from ticktock.shipped import resource_path
    >>> audio = load_audio(resource_path("manifests/ticktock-mini/audio/alpaca_eval-eval-0-0000.flac"))
    >>> audio.dtype, audio.ndim
    (dtype('float32'), 1)
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

from ticktock.errors import InputDataError

SAMPLE_RATE = 16_000
FULL_SCALE = 0.99  # a sample at or above this magnitude sits at full scale
CLIPPED_FRACTION = 0.001  # clipped: at least this share of some channel's samples at full scale
FAR_OUTSIDE = 1.5  # a peak above this is not clipping but a scaling error

log = logging.getLogger(__name__)


class AudioError(InputDataError, ValueError):
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
    problem = level_problem(data)
    if problem:
        log.warning("%s: %s", path, problem)
    return resample(mono, rate, sample_rate)


def rms_dbfs(samples: np.ndarray) -> float:
    """The RMS level of ``samples`` in dB relative to full scale (-200 for silence or no samples).

    >>> round(rms_dbfs(np.full(160, 0.1, dtype=np.float32)), 1), rms_dbfs(np.zeros(0, dtype=np.float32))
    (-20.0, -200.0)
    """
    rms = float(np.sqrt(np.mean(np.square(samples, dtype=np.float64)))) if len(samples) else 0.0
    return 20.0 * float(np.log10(max(rms, 1e-10)))


def level_problem(data: np.ndarray) -> str | None:
    """What is suspect about the sample levels of ``data`` ([samples, channels] floats), or None.

    Example::

        >>> level_problem(np.full((100, 1), 0.5, dtype=np.float32)) is None
        True
        >>> level_problem(np.array([[0.2], [1.0], [-1.0], [0.1]], dtype=np.float32))
        'audio is clipped (50.00% of the samples at full scale)'
        >>> level_problem(np.array([[0.2], [32767.0]], dtype=np.float32))
        'samples far outside [-1, 1] (peak 32767): the file is probably scaled wrongly'
    """
    peak = float(np.max(np.abs(data))) if data.size else 0.0
    if peak > FAR_OUTSIDE:
        return f"samples far outside [-1, 1] (peak {peak:g}): the file is probably scaled wrongly"
    clipped = clipped_fraction(data)
    if clipped >= CLIPPED_FRACTION:
        return f"audio is clipped ({clipped:.2%} of the samples at full scale)"
    return None


def clipped_fraction(data: np.ndarray) -> float:
    """The largest share of one channel's samples at full scale (``data``: [samples, channels] floats).

    Example::

        >>> clipped_fraction(np.array([[0.2, 1.0], [1.0, 1.0]], dtype=np.float32))
        1.0
    """
    return float(np.max(np.mean(np.abs(data) >= FULL_SCALE, axis=0))) if data.size else 0.0


def audio_header(path: str | Path) -> tuple[float, int]:
    """The duration in seconds and the sample rate of ``path``, from its header only (no samples decoded).

    Example::

        >>> from ticktock.shipped import resource_path
        >>> duration, rate = audio_header(resource_path("manifests/ticktock-mini/audio/alpaca_eval-eval-0-0000.flac"))
        >>> rate, duration > 0
        (16000, True)
    """
    import soundfile

    path = Path(path)
    if not path.is_file():
        raise AudioError(f"{path}: audio file not found")
    try:
        info = soundfile.info(str(path))
    except Exception as err:  # soundfile raises LibsndfileError, RuntimeError or TypeError on bad files
        raise AudioError(f"{path}: cannot read audio header ({err})") from None
    if info.frames <= 0 or info.samplerate <= 0:
        raise AudioError(f"{path}: audio is empty")
    return info.frames / info.samplerate, int(info.samplerate)


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
