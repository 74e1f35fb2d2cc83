"""Speculative Listening benchmark: the issue's targets on the embedded model, the ablation, both clocks.

Replays the mini corpus (``--per-task`` sessions of each task type; 0 = all) with AR, the paper's SL
ablation (silence only, + runner-up, + pool) and the beyond-the-paper variant, under the modeled clock
with the shipped A100 8B profile (a100-8b-derived: derived from the paper's AR latencies, not measured),
then under the wall clock on this CPU (``--wall-repeats`` rounds, median), and prints:
speak and tool-call speedup over AR, post-audio forwards per chunk by output length, mean response onset,
max lag on fdb_v3, draft acceptance, each against the targets.

Run: python scripts/bench_speclisten.py [--per-task 0] [--wall-repeats 3] [--wall-per-task 2]
"""

from __future__ import annotations

import argparse
import math
import statistics
from pathlib import Path

import pandas as pd

from ticktock.replay.config import compose_run

from ticktock.replay.runner import run
from ticktock.tables.metrics import BUCKETS, max_lag, onset_latency, speak_mask, speedup, tool_mask

VARIANTS = ("ar", "speclisten_silence", "speclisten_runnerup", "speclisten", "speclisten_plus")
TARGETS = "speak >= 2.6x, tool >= 10x, forwards/chunk <= 1.5 for 2-128 tokens, onset <= 250 ms, fdb_v3 max lag -90%"


def replay(decoder: str, clock: str, per_task: int | None, folder: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    run(compose_run(decoder, "embedded", per_task, [f"clock={clock}"]), folder)
    return pd.read_parquet(folder / "chunks.parquet"), pd.read_parquet(folder / "sessions.parquet")


def row(name, ar, method) -> dict:
    (ar_chunks, ar_sessions), (chunks, sessions) = ar, method
    speak = speedup(ar_chunks, chunks, speak_mask(ar_chunks), ("ar", name), "speak")
    tool = speedup(ar_chunks, chunks, tool_mask(ar_chunks), ("ar", name), "tool")
    lag, base_lag = max_lag(sessions), max_lag(ar_sessions)
    buckets = []
    for low, high, label in BUCKETS[1:]:
        rows = chunks[(chunks["num_output_tokens"] >= low) & (chunks["num_output_tokens"] <= high)]
        buckets.append(rows["num_post_audio_forwards"].mean() if len(rows) else math.nan)
    full = chunks["draft_full_match"].dropna()
    return {
        "decoder": name,
        "speak speedup": speak.speedup,
        "#MAT speak": speak.mat,
        "tool speedup": tool.speedup,
        "#MAT tool": tool.mat,
        "max fwd/chunk 2-128": max(b for b in buckets if not math.isnan(b)),
        "onset ms": onset_latency(chunks)["onset_ms"],
        "fdb_v3 max lag mean ms": lag["mean_ms"],
        "lag reduction": 1 - lag["mean_ms"] / base_lag["mean_ms"] if base_lag["mean_ms"] else math.nan,
        "draft acceptance": full.astype(bool).mean() if len(full) else math.nan,
        "buckets": buckets,
    }


def print_table(rows: list[dict], title: str) -> None:
    columns = [c for c in rows[0] if c != "buckets"]
    print(f"\n{title}\n| " + " | ".join(columns) + " |\n|" + "---|" * len(columns))
    for r in rows:
        print("| " + " | ".join(r[c] if isinstance(r[c], str) else f"{r[c]:.3g}" for c in columns) + " |")
    labels = [label for _, _, label in BUCKETS[1:]]
    print("\npost-audio forwards per chunk by output length\n| decoder | " + " | ".join(labels) + " |\n|" + "---|" * (len(labels) + 1))
    for r in rows:
        print(f"| {r['decoder']} | " + " | ".join("-" if math.isnan(b) else f"{b:.2f}" for b in r["buckets"]) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-task", type=int, default=0)
    parser.add_argument("--wall-per-task", type=int, default=2)
    parser.add_argument("--wall-repeats", type=int, default=3)
    parser.add_argument("--out", default="results/bench_speclisten")
    args = parser.parse_args()
    out = Path(args.out)
    modeled = {v: replay(v, "modeled", args.per_task or None, out / f"modeled-{v}") for v in VARIANTS}
    rows = [row(v, modeled["ar"], modeled[v]) for v in VARIANTS]
    n = len(modeled["ar"][0])
    print_table(rows, f"MODELED clock (a100-8b-derived profile), embedded model, {n} chunks. Targets: {TARGETS}")
    rounds = []
    for r in range(args.wall_repeats):
        wall = {v: replay(v, "wall", args.wall_per_task, out / f"wall{r}-{v}") for v in VARIANTS}
        rounds.append([row(v, wall["ar"], wall[v]) for v in VARIANTS])
    median = []
    for i, variant in enumerate(VARIANTS):
        merged = {"decoder": variant}
        for column in rows[0]:
            if column in ("decoder", "buckets"):
                continue
            merged[column] = statistics.median(rr[i][column] for rr in rounds)
        merged["buckets"] = rounds[-1][i]["buckets"]
        median.append(merged)
    print_table(median, f"WALL clock on this CPU, median of {args.wall_repeats} rounds, {len(pd.read_parquet(out / 'wall0-ar' / 'chunks.parquet'))} chunks")


if __name__ == "__main__":
    main()
