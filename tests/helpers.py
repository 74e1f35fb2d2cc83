"""Shared test helpers: small manifests with real audio files, written into a temporary folder."""

from __future__ import annotations

import fcntl
import shutil
from pathlib import Path

import numpy as np
import soundfile

from ticktock.sessions.manifest import Session, Turn, Word, write_manifest

TOOL = {"name": "track_order", "description": "Track an order", "parameters": {"type": "object"}}


def speech_like(duration_s: float, spans: list[tuple[float, float]], seed: int, rate: int = 16_000) -> np.ndarray:
    """Low noise everywhere, louder band-limited noise bursts inside ``spans`` (a stand-in for speech)."""
    rng = np.random.default_rng(seed)
    audio = rng.normal(0, 0.001, int(duration_s * rate)).astype(np.float32)
    for start, end in spans:
        a, b = int(start * rate), int(end * rate)
        burst = rng.normal(0, 0.2, b - a).astype(np.float32)
        audio[a:b] += np.convolve(burst, np.ones(8) / 8, mode="same").astype(np.float32)
    return audio


def write_sessions(folder: Path, count: int = 3, duration_s: float = 6.4, rate: int = 16_000, task: str = "fdb_v3") -> Path:
    """A manifest of ``count`` sessions with one user turn each; returns the manifest path."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "audio").mkdir(exist_ok=True)
    sessions = []
    for i in range(count):
        start, end = 1.0 + 0.3 * i, 2.6 + 0.3 * i
        words = (Word("where", start, start + 0.5), Word("is", start + 0.6, start + 0.9), Word("it", start + 1.0, end))
        turn = Turn("user", "request", "where is it", start, end, words, True)
        path = folder / "audio" / f"s{i}.flac"
        soundfile.write(path, speech_like(duration_s, [(start, end)], seed=i, rate=rate), rate)
        sessions.append(Session(f"s{i}", task, path, duration_s, tools=(TOOL,), turns=(turn,),
                                expected={"reference_answer": "it", "answer_aliases": [], "tool_calls": []}))
    return write_manifest(folder / "manifest.jsonl", sessions)


def made_once(shared_dir: Path, name: str, make) -> Path:
    """The folder ``shared_dir / name``, made by ``make(folder)`` once per test session: the first worker to ask makes
    it under a file lock, the others wait and read it (pytest-xdist's workers share nothing else). Its users read it;
    a test that changes files copies them first."""
    folder = shared_dir / name
    with open(shared_dir / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (folder / ".done").exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            make(folder)
            (folder / ".done").touch()
    return folder


def shared_miniatures(shared_dir: Path) -> dict[str, Path]:
    """Each real family's miniature checkpoint (seed 0, ``ticktock.miniatures``), written once per test session:
    family name -> folder (MiniCPM-o 4.5's is the Gander miniature's base). Tests read them; a test that changes a
    checkpoint, or needs it at a path of its own, takes a copy (``shutil.copytree``: far cheaper than writing one)."""

    def write(folder: Path) -> None:
        from ticktock.miniatures.minicpmo import write_miniature
        from ticktock.miniatures.qwen_omni import write_streaming_slm_miniature

        for family in ("gander", "realtime_venus", "lws"):
            write_miniature(family, folder / family)
        write_streaming_slm_miniature(folder / "streaming_slm")

    root = made_once(shared_dir, "miniatures", write)
    return {"gander": root / "gander", "minicpmo45": root / "gander" / "base", "realtime_venus": root / "realtime_venus",
            "lws": root / "lws", "streaming_slm": root / "streaming_slm"}


# ------------------------------------------------------------------------------------ replay set-up


def replay(adapter, session, decoder, *, forward_ms: float = 10.0, encode_ms: float = 0.0, clock=None, injector=None,
           max_chunks: int | None = None, audio=None, **sampling):
    """Replay ``session`` through the real engine: a constant modeled clock (``forward_ms`` per forward)
    unless ``clock`` is given; ``sampling`` keywords are ``Sampling`` fields (temperature, top_k, top_p, seed)."""
    from ticktock.sessions.audio import load_audio
    from ticktock.clocks.modeled import CostProfile, ModeledClock
    from ticktock.decoders.selection import Sampling
    from ticktock.replay.engine import ReplayEngine

    clock = clock or ModeledClock(CostProfile.constant(forward_ms, encode_ms))
    engine = ReplayEngine(adapter, decoder, clock, Sampling(**sampling), injector, max_chunks)
    return engine.replay(session, load_audio(session.audio_path) if audio is None else audio)


def outputs(trace) -> list[list[int]]:
    """Each chunk's committed tokens."""
    return [c.output for c in trace.chunks]


class ConstantToolExecutor:
    """Answers every tool call with the same response."""

    def respond(self, call):
        return '{"status": "shipped"}'


def table_rows(text: str, header_start: str) -> list[list[str]]:
    """The body rows of the Markdown table whose header line starts with ``header_start``, as lists of cells.

    >>> table_rows("| a | b |\\n|---|---|\\n| 1 | 2 |\\n\\nafter", "| a")
    [['1', '2']]
    """
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header_start))
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    return rows


class NoBarrier:
    """A device barrier with nothing to wait for: the ``adapter`` of scripted ``DeviceWork`` in scheduler tests."""

    def synchronize(self) -> None:
        pass
