"""Decoder benchmark (issue: training-free baselines): #MAT, post-audio forwards per chunk by output length,
decoder overhead per forward, and the speak-chunk speedup over AR under both clocks.

Every decoder replays the same sessions of the mini corpus on the embedded model:
- modeled clock (the shipped A100 8B profile): deterministic, one run each;
- wall clock on this CPU: ``--repeats`` runs each, side by side (decoders interleaved in every round), and
  the median speedup over the AR run of the same round is reported.
Decoder overhead per forward = (post-audio wall time - forward wall time - audio encoding) / forwards.

Run: python scripts/bench_decoders.py [--per-task 2] [--repeats 3] [--decoders ar,pld,recycling,lookahead,speclisten]
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

import pandas as pd

from ticktock.replay.config import compose_run

from ticktock.replay.runner import run
from ticktock.tables.metrics import speak_mask, speedup

BUCKETS = [(1, 1), (2, 4), (5, 8), (9, 16), (17, 32), (33, 64), (65, 128)]


def replay(decoder: str, clock: str, per_task: int, folder: Path) -> pd.DataFrame:
    cfg = compose_run(decoder, "embedded", per_task, [f"clock={clock}"])
    run(cfg, folder)
    return pd.read_parquet(folder / "chunks.parquet"), pd.read_parquet(folder / "forwards.parquet")


def speak_speedup(ar: pd.DataFrame, method: pd.DataFrame) -> float:
    return speedup(ar, method, speak_mask(ar), ("ar", "method"), "speak").speedup


def bucket_forwards(chunks: pd.DataFrame) -> list[str]:
    cells = []
    for low, high in BUCKETS:
        rows = chunks[(chunks["num_output_tokens"] >= low) & (chunks["num_output_tokens"] <= high)]
        cells.append(f"{rows['num_post_audio_forwards'].mean():.2f}" if len(rows) else "-")
    return cells


def overhead_per_forward(chunks: pd.DataFrame, forwards: pd.DataFrame) -> float:
    post = forwards[forwards["phase"] == "post_audio"]
    outside = chunks["post_audio_wall_ms"].sum() - post["wall_ms"].sum() - chunks["encode_wall_ms"].sum()
    return outside / max(len(post), 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-task", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--decoders", default="ar,pld,recycling,lookahead,speclisten")
    parser.add_argument("--out", default="results/bench_decoders")
    args = parser.parse_args()
    decoders = args.decoders.split(",")
    out = Path(args.out)
    modeled = {d: replay(d, "modeled", args.per_task, out / f"modeled-{d}") for d in decoders}
    wall_speedups: dict[str, list[float]] = {d: [] for d in decoders}
    wall_runs = {}
    for r in range(args.repeats):
        this_round = {d: replay(d, "wall", args.per_task, out / f"wall{r}-{d}") for d in decoders}
        for d in decoders:
            wall_speedups[d].append(speak_speedup(this_round["ar"][0], this_round[d][0]))
        wall_runs = this_round
    ar_chunks = modeled["ar"][0]
    print(f"embedded model, mini corpus ({args.per_task} sessions per task, {len(ar_chunks)} chunks, "
          f"{(ar_chunks['kind'] == 'speak').sum()} speak chunks); modeled = a100-8b-derived profile, "
          f"wall = this CPU, median of {args.repeats} rounds\n")
    header = ["decoder", "#MAT", *[f"fwd/chunk {lo}-{hi}" if lo != hi else "fwd/chunk 1" for lo, hi in BUCKETS],
              "overhead ms/fwd (wall)", "speak speedup (modeled)", "speak speedup (wall, median)"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for d in decoders:
        chunks, forwards = modeled[d]
        mat = chunks["num_output_tokens"].sum() / chunks["num_post_audio_forwards"].sum()
        overhead = overhead_per_forward(*wall_runs[d])
        speed = speak_speedup(ar_chunks, chunks)
        wall = statistics.median(wall_speedups[d])
        runs = ", ".join(f"{v:.2f}" for v in wall_speedups[d])
        print(f"| {d} | {mat:.2f} | " + " | ".join(bucket_forwards(chunks)) + f" | {overhead:.2f} | {speed:.2f} | {wall:.2f} ({runs}) |")


if __name__ == "__main__":
    main()
