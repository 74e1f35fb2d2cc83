"""Certify's replays: real runs (``ticktock.replay.runner.run``) into a folder, observed, with their tables read back.

``replay(cfg, run_dir)`` runs ``cfg`` with its model and decoder observed (``ticktock.conformance.observe``) and
returns a ``Replay``: the rows of chunks.parquet, sessions.parquet and forwards.parquet, and the recorder.
``cut_audio`` writes a copy of a run's sessions whose audio after a given time is replaced (by silence, noise,
another session's audio or its own shifted: what the no-peeking check replays). ``Timeline`` places a run's
forwards and chunks on its clock.

Example::

    cfg = compose_run("pld", "fixture", 1, ["limit.chunks=4"])
    result = replay(cfg, Path("results/certify/pld"))
    result.session_ids()              # ['fdb_v3-eval-0-0000', ...] (sessions.parquet's order)
    result.forwards_of(result.session_ids()[0])[0]["phase"]   # 'post_audio'
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path

from omegaconf import DictConfig

from ticktock.conformance.checks import Check
from ticktock.conformance.observe import Recorder, audio_reads_watched, observed_config
from ticktock.decoders.counters import POST_AUDIO

# Columns measured in wall time: they differ between two runs of one config and are never compared.
WALL_COLUMNS = frozenset({"run_id", "post_audio_wall_ms", "encode_wall_ms", "window_wall_ms", "replay_wall_s",
                          "wall_ms"})


@dataclass
class Replay:
    """One observed run: its folder, the rows of its three tables (as written), and what the recorder saw."""

    run_dir: Path
    chunks: list[dict]
    sessions: list[dict]
    forwards: list[dict]
    recorder: Recorder

    def session_ids(self) -> list[str]:
        return [row["session_id"] for row in self.sessions]

    def chunks_of(self, session_id: str) -> list[dict]:
        return sorted((r for r in self.chunks if r["session_id"] == session_id), key=lambda r: r["chunk_index"])

    def forwards_of(self, session_id: str) -> list[dict]:
        """The session's forward log rows, in the order they ran."""
        return [r for r in self.forwards if r["session_id"] == session_id]

    def session_row(self, session_id: str) -> dict:
        return next(r for r in self.sessions if r["session_id"] == session_id)


WATCHDOG = "every chunk ends within watchdog.chunk_s"


class ReplayTimedOut(Exception):
    """A replay's session ran past ``watchdog.chunk_s`` (``ticktock.replay.watchdog``): certify reports it as one
    failed check naming the chunk (``check``) instead of comparing a replay that lacks the session."""

    def __init__(self, failed: list[dict]):
        self.failed = failed
        super().__init__(failed[0].get("error", ""))

    def check(self, setting: str) -> Check:
        more = f" ({len(self.failed)} sessions failed)" if len(self.failed) > 1 else ""
        return Check(WATCHDOG, setting, False, self.failed[0].get("session_id", ""), f"{self}{more}")


def replay(cfg: DictConfig, run_dir: Path, capture_caches: bool = True) -> Replay:
    """Run ``cfg`` into ``run_dir`` (a fresh folder) with its model and decoder observed; read the tables back. A
    session the watchdog stopped (run.json ``failed_sessions``) is a ``ReplayTimedOut``."""
    import json

    import pyarrow.parquet as pq

    from ticktock.replay.runner import run

    recorder = Recorder(capture_caches)
    with audio_reads_watched(recorder):
        run(observed_config(cfg, recorder), run_dir)
    failed = json.loads((run_dir / "run.json").read_text()).get("failed_sessions") or []
    if failed:
        raise ReplayTimedOut(failed)
    tables = [pq.read_table(run_dir / f"{name}.parquet").to_pylist() for name in ("chunks", "sessions", "forwards")]
    return Replay(run_dir, *tables, recorder)


def comparable(row: dict) -> dict:
    """A row without its wall-clock columns (and the run id, which names the run's folder)."""
    return {k: v for k, v in row.items() if k not in WALL_COLUMNS}


def first_difference(a: dict, b: dict) -> str | None:
    """The first column whose values differ, as ``column a vs b`` (None when the rows are equal)."""
    for key in [*a, *(k for k in b if k not in a)]:
        if a.get(key) != b.get(key):
            return f"{key} {a.get(key)!r} vs {b.get(key)!r}"
    return None


# ------------------------------------------------------------------------------------------- the clock


class Timeline:
    """Where a run's work happened on its clock, in milliseconds from the run's start (a shared device's time;
    for sessions replayed alone, each session's own time from its start).

    The schema's rule (``ticktock.results.schema``): a chunk's post-audio work starts at ``arrival_s +
    lag_before_ms + carried_ms``; the idle window that drafts chunk c opens when chunk c-1's work ends
    (``arrival_s + response_ms`` of chunk c-1), or at the session's start for chunk 0; a forward ran from
    ``end_ms - charged_ms`` to ``end_ms`` after its phase opened.
    """

    def __init__(self, result: Replay, session_id: str):
        self.start_ms = result.session_row(session_id)["start_ms"] or 0.0
        self.chunks = {row["chunk_index"]: row for row in result.chunks_of(session_id)}

    def chunk_done_ms(self, chunk_index: int) -> float:
        row = self.chunks[chunk_index]
        return self.start_ms + 1000.0 * row["arrival_s"] + row["response_ms"]

    def phase_open_ms(self, chunk_index: int, phase: str) -> float:
        if phase == POST_AUDIO:
            row = self.chunks[chunk_index]
            return self.start_ms + 1000.0 * row["arrival_s"] + row["lag_before_ms"] + row["carried_ms"]
        return self.start_ms if chunk_index == 0 else self.chunk_done_ms(chunk_index - 1)

    def forward_start_ms(self, forward: dict) -> float:
        return self.phase_open_ms(forward["chunk_index"], forward["phase"]) + forward["end_ms"] - forward["charged_ms"]

    def window_ms(self, chunk_index: int) -> tuple[float, float]:
        """(opens, closes) of the idle window that drafted chunk ``chunk_index`` (closes = its audio's arrival)."""
        opens = self.phase_open_ms(chunk_index, "draft")
        return opens, opens + self.chunks[chunk_index]["window_budget_ms"]


# ------------------------------------------------------------------------------------------- cut audio


def cut_audio(cfg: DictConfig, cuts_s: dict[str, float], folder: Path, seed: int = 0,
              perturbation: str = "noise") -> Path:
    """Write the task's sessions with their audio from ``cuts_s[session_id]`` seconds on replaced (all of a
    session's audio when its cut is <= 0, none when it has no cut or an infinite one) into ``folder``, with a
    manifest of them all in the task's order; return the manifest (a run replays it with ``task.manifest``).
    ``perturbation``: what replaces it (``ticktock.conformance.perturbations``: silence, noise, another session's
    audio, the session's own audio shifted); ``seed``: the noise's.

    The audio is written as float32 WAV, so every sample before the cut is exactly the original's.
    """
    import soundfile

    from ticktock.conformance.perturbations import perturbed
    from ticktock.replay.config import build
    from ticktock.sessions.audio import SAMPLE_RATE, load_audio
    from ticktock.sessions.manifest import write_manifest

    folder.mkdir(parents=True, exist_ok=True)
    originals = build(cfg.task).sessions()
    sessions = []
    for i, session in enumerate(originals):
        cut = cuts_s.get(session.session_id, math.inf)
        if cut < math.inf:
            first = int(cut * SAMPLE_RATE) if cut > 0 else 0
            other = load_audio(originals[(i + 1) % len(originals)].audio_path) if len(originals) > 1 else None
            audio = perturbed(load_audio(session.audio_path), first, perturbation, [seed, i], other)
            path = folder / f"{i:04d}.wav"
            soundfile.write(str(path), audio, SAMPLE_RATE, subtype="FLOAT")
            session = replace(session, audio_path=path.resolve())
        sessions.append(session)
    return write_manifest(folder / "manifest.jsonl", sessions).resolve()
