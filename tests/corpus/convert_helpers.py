"""Shared pieces of the converter tests: speech-like audio files and the checks every manifest must pass."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import soundfile

from helpers import speech_like
from ticktock.sessions.manifest import load_manifest


def write_speech(path: Path, duration_s: float, spans, rate: int, seed: int = 0, channels: int = 1,
                 fmt: str | None = None, gain: float = 1.0, faint=()) -> Path:
    """Noise bursts in ``spans`` over a quiet floor, written as WAV/MP3/FLAC (by suffix or ``fmt``); ``faint``
    spans get bursts 20 dB quieter (background talk in room tone, still above the VAD threshold)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    mono = speech_like(duration_s, spans, seed=seed, rate=rate) * gain
    if faint:
        mono = mono + 0.1 * (speech_like(duration_s, faint, seed=seed + 1, rate=rate)
                             - speech_like(duration_s, [], seed=seed + 1, rate=rate))
    data = np.stack([mono] * channels, axis=1) if channels > 1 else mono
    soundfile.write(str(path), np.clip(data, -1, 1), rate, format=fmt or path.suffix[1:].upper())
    return path


def check_manifest(manifest: Path):
    """Load and check a converted manifest: 16 kHz mono FLACs of the stated length, timings inside them."""
    sessions = load_manifest(manifest)  # validates turn/word order and bounds
    for session in sessions:
        info = soundfile.info(str(session.audio_path))
        assert (info.samplerate, info.channels, info.format) == (16_000, 1, "FLAC"), session.session_id
        assert abs(info.frames / 16_000 - session.duration_s) < 1e-3, session.session_id
        for turn in session.turns:
            assert 0 <= turn.start_s < turn.end_s <= session.duration_s, (session.session_id, turn)
            starts = [w.start_s for w in turn.words]
            assert starts == sorted(starts)
        assert {"source", "source_id", "source_path"} <= set(session.provenance)
    return sessions


def assert_nothing_left(out: Path) -> None:
    """A failed conversion leaves no manifest, no audio and no staging folder."""
    assert not (out / "manifest.jsonl").exists()
    assert not list(out.glob("audio/*")), list(out.glob("audio/*"))
    assert not list(out.glob(".convert-*")), list(out.glob(".convert-*"))


def speech_level(path: Path, start_s: float, end_s: float) -> float:
    """RMS of a stretch of a converted file."""
    audio, rate = soundfile.read(str(path), dtype="float32")
    piece = audio[int(start_s * rate) : int(end_s * rate)]
    return float(np.sqrt(np.mean(piece**2))) if piece.size else 0.0


def offline_hub(monkeypatch, folder: Path) -> Path:
    """No Hugging Face Hub access for the test (as ``HF_HUB_OFFLINE=1``), and empty Hub and datasets caches under
    ``folder``; returns the Hub cache folder (see ``cached_snapshot``)."""
    import datasets
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(folder / "hub"))
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", folder / "datasets")
    return folder / "hub"


def cached_snapshot(hub_cache: Path, repo_id: str, commit: str = "0" * 40) -> Path:
    """The folder of a Hub dataset's snapshot in the Hub cache's layout (``refs/main`` names ``commit``), as a download
    leaves it; the test puts the repository's files in it."""
    repo = hub_cache / f"datasets--{repo_id.replace('/', '--')}"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit)
    snapshot = repo / "snapshots" / commit
    snapshot.mkdir(parents=True)
    return snapshot
