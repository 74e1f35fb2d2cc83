"""``python -m ticktock.run``: replay a task's sessions through a model with a decoder, under a clock.

Examples::

    python -m ticktock.run                                      # embedded model, AR, mini corpus, modeled clock
    python -m ticktock.run decoder=speclisten clock=wall limit.sessions=4
    python -m ticktock.run -m decoder=ar,pld,recycling,lookahead,speclisten task=fdb_v3
    python -m ticktock.run hydra.run.dir=results/my_run         # resumes if it holds the same run

Each run writes chunks/sessions/forwards parquet tables and run.json into its Hydra run directory
(``ticktock.results.writer``) and prints a one-line summary.
"""

from __future__ import annotations

import hashlib
import json
import platform
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import hydra
from omegaconf import DictConfig, OmegaConf

from ticktock.resources import register_resolver, resource_path

register_resolver()


def build(node: DictConfig, **kwargs):
    """Instantiate a plug-in config (its ``name`` is a label kept by the harness, not an argument)."""
    from hydra.utils import instantiate

    spec = OmegaConf.to_container(node, resolve=True)
    name = spec.pop("name", None)
    obj = instantiate(spec, **kwargs)
    if name is not None and hasattr(obj, "name"):
        obj.name = name
    return obj


def identity(cfg: DictConfig) -> dict:
    """What makes two runs the same run (resume is allowed only into a run with the same identity)."""
    plain = OmegaConf.to_container(cfg, resolve=True)
    return {
        "model": plain["model"],
        "decoder": plain["decoder"],
        "task": plain["task"],
        "clock": plain["clock"],
        "sampling": plain["sampling"],
        "seed": plain["seed"],
        "chunks_limit": plain["limit"]["chunks"],
    }


def first_per_task(sessions: list, per_task: int | None) -> list:
    """Keep the first ``per_task`` sessions of every task type (all when None), in manifest order."""
    if per_task is None:
        return sessions
    seen: dict[str, int] = {}
    kept = []
    for session in sessions:
        seen[session.task] = seen.get(session.task, 0) + 1
        if seen[session.task] <= per_task:
            kept.append(session)
    return kept


def run_id_for(ident: dict, run_dir: Path) -> str:
    digest = hashlib.sha256(json.dumps([ident, str(run_dir.resolve())], sort_keys=True).encode()).hexdigest()
    return f"{ident['model']['name']}-{ident['decoder']['name']}-{ident['clock']['name']}-{digest[:8]}"


def environment(adapter) -> dict:
    import torch

    versions = {}
    for package in ("ticktock", "torch", "transformers", "numpy", "pyarrow", "hydra-core", "tokenizers"):
        try:
            from importlib.metadata import version

            versions[package] = version(package)
        except Exception:
            versions[package] = None
    return {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpu": _cpu_name(),
        "torch_threads": torch.get_num_threads(),
        "cuda_device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
        "git_sha": _git_sha(),
        "versions": versions,
        "model": adapter.describe(),
    }


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def _git_sha() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=resource_path("configs").parent,
                             capture_output=True, text=True, timeout=5)
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


@dataclass
class RunSummary:
    run_dir: Path
    run_id: str
    sessions: int
    skipped: int
    counts: dict
    stats: dict

    def line(self) -> str:
        s = self.stats
        return (
            f"run {self.run_id}: {self.sessions} sessions ({self.skipped} skipped), {self.counts.get('chunks', 0)} chunks | "
            f"post-audio mean {s.get('post_audio_ms', 0):.1f} ms ({s.get('clock')}) | speak {s.get('speak_ms', 0):.1f} ms | "
            f"#MAT {s.get('mat', 0):.2f} | deadline misses {100 * s.get('miss_rate', 0):.1f}% | -> {self.run_dir}"
        )


def chunk_stats(path: Path, clock: str) -> dict:
    import pyarrow.parquet as pq

    table = pq.read_table(path, columns=["kind", "post_audio_ms", "num_output_tokens", "num_post_audio_forwards", "missed_deadline"])
    rows = table.to_pydict()
    n = len(rows["kind"])
    if not n:
        return {"clock": clock}
    speak = [ms for ms, kind in zip(rows["post_audio_ms"], rows["kind"]) if kind == "speak"]
    forwards = sum(rows["num_post_audio_forwards"])
    return {
        "clock": clock,
        "post_audio_ms": sum(rows["post_audio_ms"]) / n,
        "speak_ms": sum(speak) / len(speak) if speak else 0.0,
        "mat": sum(rows["num_output_tokens"]) / forwards if forwards else 0.0,
        "miss_rate": sum(rows["missed_deadline"]) / n,
    }


def select_sessions(cfg: DictConfig, task) -> list:
    """The task's sessions after the limits; a missing audio file stops the run here unless skipped."""
    from ticktock.audio import AudioError

    sessions = first_per_task(task.sessions(), cfg.limit.get("per_task"))[: cfg.limit.sessions]
    missing = [s for s in sessions if not s.audio_path.is_file()]
    if missing and not cfg.skip_bad_sessions:
        raise AudioError(f"{missing[0].audio_path}: audio file not found (session {missing[0].session_id}; "
                         f"{len(missing)} sessions affected; skip_bad_sessions=true skips them)")
    return sessions


def build_engine(cfg: DictConfig, task):
    """The model adapter, decoder, clock and token selector of a run, wired into one replay engine."""
    from ticktock.decoders.selection import TokenSelector
    from ticktock.engine import ReplayEngine

    adapter = build(cfg.model)
    decoder = build(cfg.decoder)
    clock = build(cfg.clock, synchronize=adapter.synchronize)
    selector = TokenSelector(adapter.protocol, seed=cfg.seed, **cfg.sampling)
    return ReplayEngine(adapter, decoder, clock, selector, task.injector(), cfg.limit.chunks)


def replay_sessions(cfg, engine, sessions, writer, labels: dict) -> list[dict]:
    """Replay and write every session; returns the sessions skipped for bad audio."""
    from tqdm.auto import tqdm

    from ticktock.audio import AudioError, load_audio
    from ticktock.results.rows import chunk_rows, forward_rows, session_row

    skipped, adapter = [], engine.adapter
    chunks_total = sum(len(s.chunk_spans()[: cfg.limit.chunks]) for s in sessions)
    bar = tqdm(total=chunks_total, desc=f"{cfg.decoder.name} chunks", unit="chunk", disable=not cfg.progress, file=sys.stderr)
    with bar:
        for session in tqdm(sessions, desc="sessions", unit="session", disable=not cfg.progress, file=sys.stderr, position=1):
            try:
                audio = load_audio(session.audio_path)
            except AudioError as err:
                if not cfg.skip_bad_sessions:
                    raise
                skipped.append({"session_id": session.session_id, "error": str(err)})
                continue
            trace = engine.replay(session, audio, on_chunk=lambda: bar.update(1))
            chunks = chunk_rows(trace, labels, adapter)
            writer.write_session(session.session_id, chunks, session_row(trace, labels, chunks, adapter),
                                 forward_rows(trace, labels["run_id"]))
    return skipped


def run(cfg: DictConfig, run_dir: Path) -> RunSummary:
    """Replay every session of ``cfg.task`` into ``run_dir`` (resuming completed sessions)."""
    import torch

    from ticktock.results.schema import SCHEMA_VERSION
    from ticktock.results.writer import RunWriter

    torch.manual_seed(cfg.seed)
    task = build(cfg.task)
    sessions = select_sessions(cfg, task)
    engine = build_engine(cfg, task)
    ident = {**identity(cfg), "weights": engine.adapter.describe().get("weights_fingerprint")}
    run_dir.mkdir(parents=True, exist_ok=True)
    writer = RunWriter(run_dir, ident, overwrite=cfg.overwrite)
    run_id = run_id_for(ident, run_dir)
    labels = {"run_id": run_id, "model": cfg.model.name, "decoder": cfg.decoder.name, "clock": cfg.clock.name}
    meta = {"run_id": run_id, "schema_version": SCHEMA_VERSION, "config": OmegaConf.to_container(cfg, resolve=True),
            "clock": engine.clock.describe(), "environment": environment(engine.adapter),
            "decoder": {"lossless": engine.decoder.lossless, **engine.decoder.describe()}, "started": time.time()}
    done = writer.completed()
    writer.write_run_json({**meta, "status": "running"})
    status, skipped = "interrupted", []
    try:
        skipped = replay_sessions(cfg, engine, [s for s in sessions if s.session_id not in done], writer, labels)
        status = "complete"
    except Exception as err:
        status = f"failed: {type(err).__name__}: {err}"
        raise
    finally:  # also on Ctrl-C: every completed session stays in the consolidated tables
        counts = writer.consolidate()
        writer.write_run_json({**meta, "status": status, "finished": time.time(), "skipped_sessions": skipped,
                               "row_counts": counts, "sessions_total": len(sessions)})
    stats = chunk_stats(run_dir / "chunks.parquet", cfg.clock.name)
    return RunSummary(run_dir, run_id, counts.get("sessions", 0), len(skipped), counts, stats)


@hydra.main(version_base=None, config_path=str(resource_path("configs")), config_name="run")
def main(cfg: DictConfig) -> None:
    from hydra.core.hydra_config import HydraConfig

    summary = run(cfg, Path(HydraConfig.get().runtime.output_dir))
    print(summary.line())


if __name__ == "__main__":
    main()
