"""``python -m ticktock.embedded.evaluate``: the embedded model's quality gates on held-out sessions.

Replays every session of a manifest closed-loop with AR decoding (the model hears the real audio, its own
outputs go back into its context, tool calls are answered by the mock tool world), scores the outputs
(``ticktock.world.scoring``), keeps every session's chunk kinds as a timeline string (``timeline``) and measures CPU speed (median single-token forward; one chunk prefill of
``<unit>`` + 10 audio embeddings). Prints a table per task and writes ``evaluation.json``.

Example::

    python -m ticktock.embedded.evaluate --model ticktock/embedded/weights \\
        --manifest manifests/ticktock-mini/manifest.jsonl --out work_data/eval
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import torch

from ticktock.sessions.audio import load_audio
from ticktock.clocks.modeled import CostProfile, ModeledClock
from ticktock.decoders.ar import ARDecoder
from ticktock.embedded.model import load_embedded_adapter
from ticktock.replay.engine import ReplayEngine
from ticktock.world.injection import ToolCallInjector
from ticktock.sessions.manifest import load_manifest
from ticktock.world.mock_tools import MockToolExecutor
from ticktock.results.rows import chunk_rows, session_row
from ticktock.world.scoring import rates, score_session

QA_TASKS = ("llama_questions", "web_questions", "trivia_qa")
GATES = {  # metric: (threshold, higher is better); "qa" pools the three factual-QA tasks only
    "respond": (0.90, True),
    "false_speak": (0.05, False),
    "pause": (0.80, True),
    "stop": (0.80, True),
    "tool_args": (0.80, True),
    "tool_strict": (0.60, True),
    "tool_json": (0.98, True),
    "qa": (0.80, True),
}


def speed(adapter, repeats: int = 50) -> dict:
    """Median single-token forward and chunk-prefill times (ms) at a realistic context length."""
    adapter.start_session(None, [])
    p = adapter.protocol
    rng = np.random.default_rng(0)
    for _ in range(20):  # about 20 s of session context
        adapter.forward([[p.unit_open], adapter.encode_audio(rng.normal(0, 0.05, 16000).astype(np.float32)), [p.listen, p.unit_close]])
    audio = adapter.encode_audio(rng.normal(0, 0.05, 16000).astype(np.float32))
    single, prefill = [], []
    for _ in range(repeats):
        state = adapter.snapshot()
        start = time.perf_counter()
        adapter.forward([[p.listen]])
        single.append((time.perf_counter() - start) * 1000)
        adapter.restore(state)
        start = time.perf_counter()
        adapter.forward([[p.unit_open], audio])
        prefill.append((time.perf_counter() - start) * 1000)
        adapter.restore(state)
    return {"single_token_forward_ms": statistics.median(single), "chunk_prefill_ms": statistics.median(prefill),
            "context_tokens": adapter.cache_length, "torch_threads": torch.get_num_threads()}


def replay_all(adapter, sessions) -> list[dict]:
    engine = ReplayEngine(adapter, ARDecoder(), ModeledClock(CostProfile.constant(1.0)),
                          injector=ToolCallInjector(MockToolExecutor()))
    labels = {"run_id": "eval", "model": adapter.name, "decoder": "ar", "clock": "modeled"}
    results = []
    for session in sessions:
        trace = engine.replay(session, load_audio(session.audio_path))
        chunks = chunk_rows(trace, labels, adapter)
        row = session_row(trace, labels, chunks, adapter)
        results.append({"session": session, "chunks": chunks, "row": row})
    return results


KIND_LETTERS = {"listen": ".", "speak": "S", "tool": "T", "backchannel": "b", "interrupt": "I", "write": "w", "other": "?"}


def timeline(chunks: list[dict]) -> str:
    """A session's chunk kinds as one letter per chunk (``KIND_LETTERS``), e.g. ``"...SSS..T.SS"``: the model's
    behaviour at a glance (listening, speaking, tool calls) to read beside the session's turn times."""
    return "".join(KIND_LETTERS.get(c["kind"], "?") for c in sorted(chunks, key=lambda c: c["chunk_index"]))


def score_all(results) -> dict[str, Counter]:
    by_task: dict[str, Counter] = defaultdict(Counter)
    for r in results:
        session = r["session"]
        turns = json.loads(r["row"]["turns_json"])
        counts = score_session(r["chunks"], session.expected, turns)
        by_task[session.task] += counts
        by_task["all"] += counts
    return by_task


def gate_report(overall: dict[str, float]) -> dict[str, dict]:
    report = {}
    for name, (threshold, higher) in GATES.items():
        value = overall.get(name)
        passed = None if value is None else (value >= threshold if higher else value <= threshold)
        report[name] = {"value": value, "threshold": threshold, "higher_is_better": higher, "passed": passed}
    return report


def table(by_task: dict[str, Counter]) -> str:
    metrics = sorted({k.rsplit("_", 1)[0] for counts in by_task.values() for k in counts if k.endswith("_trials")})
    lines = ["| task | " + " | ".join(metrics) + " |", "|---" * (len(metrics) + 1) + "|"]
    for task, counts in sorted(by_task.items(), key=lambda kv: (kv[0] == "all", kv[0])):
        cells = []
        for m in metrics:
            trials = counts[f"{m}_trials"]
            cells.append(f"{counts[f'{m}_hits'] / trials:.1%} ({trials})" if trials else "")
        lines.append(f"| {task} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def model_adapter(folder: str | None):
    """The adapter of a model folder: v9's compact folder (``compact.safetensors``: ``model=embedded_v9``'s adapter
    over it), or a folder of ``ticktock.embedded.train`` (default: the shipped v8)."""
    from ticktock.embedded.real_layout import COMPACT_FILE, configured_adapter

    if folder is not None and (Path(folder) / COMPACT_FILE).is_file():
        return configured_adapter(Path(folder))
    return load_embedded_adapter(folder)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None, help="model folder (default: the shipped v8 weights); a compact v9 "
                        "folder (python -m ticktock.embedded.train_real_layout) is replayed as model=embedded_v9")
    parser.add_argument("--manifest", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--limit", type=int, default=None, help="only the first N sessions")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    adapter = model_adapter(args.model)
    sessions = load_manifest(args.manifest)[: args.limit]
    began = time.time()
    results = replay_all(adapter, sessions)
    by_task = score_all(results)
    overall = rates(by_task["all"])
    qa_counts = sum((by_task[t] for t in QA_TASKS if t in by_task), Counter())
    overall["qa"] = rates(qa_counts).get("qa")
    summary = {
        "manifest": str(args.manifest),
        "sessions": len(sessions),
        "replay_minutes": round((time.time() - began) / 60, 2),
        "gates": gate_report(overall),
        "rates_by_task": {task: rates(counts) for task, counts in by_task.items()},
        "counts_by_task": {task: dict(counts) for task, counts in by_task.items()},
        "speed": speed(adapter),
        "timeline_letters": KIND_LETTERS,
        "timelines": {r["session"].session_id: timeline(r["chunks"]) for r in results},
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "evaluation.json").write_text(json.dumps(summary, indent=2) + "\n")
    (out / "evaluation.md").write_text(table(by_task) + "\n")
    print(table(by_task))
    print(json.dumps({"gates": summary["gates"], "speed": summary["speed"]}, indent=2))


if __name__ == "__main__":
    main()
