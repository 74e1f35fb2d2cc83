"""Reading source audio (with clipping and silence checks) and writing a converted corpus all-or-nothing.

A :class:`CorpusWriter` stages every FLAC in a hidden folder inside the output folder. Only when all
sessions succeeded does :meth:`CorpusWriter.commit` write the record of the conversion (``OUT/made_by.json``),
move the audio into ``OUT/audio/`` and write ``OUT/manifest.jsonl`` (atomically, last). On any error the
staging folder is removed, so a failed conversion leaves neither a partial manifest nor stray audio behind.

Example::

    >>> writer = CorpusWriter(Path("out"), warn=print)                         # doctest: +SKIP
    >>> clip = writer.read_audio(Path("src/q_0.mp3"), label="src/q_0.mp3")          # doctest: +SKIP
    >>> writer.write_audio("llama_questions-0000", clip.samples)                     # doctest: +SKIP
    >>> writer.commit(sessions)                                                      # doctest: +SKIP
"""

from __future__ import annotations

import io
import os
import shutil
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable

import numpy as np

from ticktock.sessions.audio import CLIPPED_FRACTION, SAMPLE_RATE, clipped_fraction, resample
from ticktock.corpus.convert import ConvertError
from ticktock.results.names import checked_name, named_path
from ticktock.sessions.manifest import Session, write_manifest

if TYPE_CHECKING:
    from ticktock.corpus.output_folder import MadeBy

SILENT_PEAK = 10 ** (-60 / 20)  # silent: no sample louder than -60 dBFS


@dataclass(frozen=True)
class SourceClip:
    """A decoded source file: 16 kHz mono samples and what the file was."""

    samples: np.ndarray
    source_rate: int
    channels: int
    clipped_fraction: float
    peak: float

    @property
    def duration_s(self) -> float:
        return self.samples.shape[0] / SAMPLE_RATE


class CorpusWriter:
    """Stages a converted corpus in ``out`` and commits it at the end (see the module docstring). With
    ``out=None`` it is a dry run (``--check``): audio is read and checked, nothing is written."""

    def __init__(self, out: Path | None, warn: Callable[[str], None]):
        self.out = Path(out) if out is not None else None
        self.warn_line = warn
        self.warnings: Counter = Counter()
        self.staging: Path | None = None
        if self.out is not None:
            self.out.mkdir(parents=True, exist_ok=True)
            self.staging = Path(tempfile.mkdtemp(dir=self.out, prefix=".convert-"))
        self._staged: list[str] = []

    # -------------------------------------------------------------------------------------- audio in

    def read_audio(self, source: Path | bytes, label: str) -> SourceClip:
        """Decode a file (or its bytes), report clipping, and bring it to 16 kHz mono.

        ``label`` names the source in messages (a path, or "file.parquet row 3").
        """
        import soundfile

        if isinstance(source, Path) and not source.is_file():
            raise ConvertError(f"{label}: audio file not found")
        try:
            data, rate = soundfile.read(io.BytesIO(source) if isinstance(source, bytes) else str(source),
                                        dtype="float32", always_2d=True)
        except Exception as err:  # soundfile raises LibsndfileError, RuntimeError or TypeError on bad input
            raise ConvertError(f"{label}: cannot read audio ({err})") from None
        return self.check_samples(data, rate, label)

    def check_samples(self, data: np.ndarray, rate: int, label: str) -> SourceClip:
        """Check and convert decoded samples, shaped (frames,) or (frames, channels), at ``rate`` Hz."""
        data = np.asarray(data, dtype=np.float32)
        if data.ndim == 1:
            data = data[:, None]
        if data.size == 0:
            raise ConvertError(f"{label}: audio is empty")
        if not np.isfinite(data).all():
            raise ConvertError(f"{label}: audio has NaN or infinite samples")
        if rate <= 0:
            raise ConvertError(f"{label}: invalid sample rate {rate}")
        clipped = clipped_fraction(data)
        peak = float(np.max(np.abs(data)))
        if clipped >= CLIPPED_FRACTION:
            self.warn("clipped", f"{label}: audio is clipped ({clipped:.2%} of the samples at full scale)")
        mono = resample(data.mean(axis=1, dtype=np.float32), int(rate), SAMPLE_RATE)
        return SourceClip(mono, int(rate), data.shape[1], clipped, peak)

    def warn(self, kind: str, message: str) -> None:
        """Report a problem that does not stop the conversion; counted by ``kind`` for the summary."""
        self.warnings[kind] += 1
        self.warn_line(f"warning: {message}")

    def warn_if_silent(self, clip: SourceClip, spans: list, label: str) -> None:
        if clip.peak < SILENT_PEAK or not spans:
            self.warn("silent", f"{label}: no speech found (peak {20 * np.log10(clip.peak + 1e-12):.0f} dBFS)")

    # ------------------------------------------------------------------------------------- audio out

    def write_audio(self, session_id: str, samples: np.ndarray) -> Path:
        """Stage ``samples`` (16 kHz mono) as 16-bit FLAC; returns the path it will have after commit."""
        import soundfile

        checked_name(session_id, "session_id", "converted session", ConvertError)
        if session_id in self._staged:
            raise ConvertError(f"two sessions would get the same id {session_id!r}")
        self._staged.append(session_id)
        if self.out is None:
            return audio_file(Path("audio"), session_id)
        soundfile.write(str(audio_file(self.staging, session_id)), np.clip(samples, -1.0, 1.0), SAMPLE_RATE,
                        format="FLAC", subtype="PCM_16")
        return audio_file(self.out / "audio", session_id)

    def commit(self, sessions: Iterable[Session], made_by: MadeBy | None = None) -> Path:
        """Write ``made_by`` (the record of the conversion, ``output_folder``), move the staged audio into place,
        then write the manifest (atomically, last)."""
        from ticktock.corpus.output_folder import write_record

        if self.out is None:
            raise ValueError("a dry run (out=None) writes nothing and has nothing to commit")
        sessions = list(sessions)
        if made_by is not None:
            write_record(self.out, made_by)
        audio_dir = self.out / "audio"
        audio_dir.mkdir(exist_ok=True)
        for session_id in self._staged:
            os.replace(audio_file(self.staging, session_id), audio_file(audio_dir, session_id))
        path = write_manifest(self.out / "manifest.jsonl", sessions)
        self.discard()
        return path

    def discard(self) -> None:
        """Remove the staging folder and whatever is in it."""
        if self.staging is not None:
            shutil.rmtree(self.staging, ignore_errors=True)


def audio_file(folder: Path, session_id: str) -> Path:
    """``folder/<session_id>.flac``, the id checked as a name (``ticktock.results.names``: no ``/``, no ``..``)."""
    return named_path(folder, session_id, ".flac", "session_id", "converted session", ConvertError)
