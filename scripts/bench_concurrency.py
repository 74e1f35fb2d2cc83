"""Figure 4c on the embedded model: N sessions sharing one device, and the draft scheduler against round robin.

For every N, replays the corpus with AR and with each decoder under each draft policy (modeled clock by
default: a deterministic simulation, so one run per point is the figure), then prints per N the speak- and
tool-chunk speedup over AR at the same N, the deadline-miss rates (all chunks, tool chunks), the mean
per-session max lag, the mean device wait of post-audio work, where the device's time went (shares of its span:
post-audio work, idle-window work, talker work, idle) and what sharing the device costs in wall time per chunk
(the scheduler's decisions, its bookkeeping and the switches between sessions; run.json ``shared_device``). Runs
resume (rerun to continue). Every decoder shares the device, those that wait for audio in their idle windows too.

The sensitivity view: the same sweep with the profile's audio-encoding cost scaled (``clock.encode_scale``, a
what-if: the shipped profile's encoding cost is derived, not measured), into another folder.

Run (about 2 minutes per run on 2 CPU cores with the default 6 sessions per task)::

    python scripts/bench_concurrency.py --out results/concurrency --sessions 1,2,4,8
    python scripts/bench_concurrency.py --per-task 0 --decoders speclisten_plus --policies expected_savings,round_robin
    python scripts/bench_concurrency.py --out results/concurrency-enc025 --sessions 4 clock.encode_scale=0.25
    python scripts/bench_concurrency.py --out results/concurrency-batch --sessions 8 concurrency.batching=true
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import pyarrow.parquet as pq

from ticktock.replay.runner import compose_run, run


def replay(decoder: str, sessions: int, policy: str, args) -> Path:
    overrides = [f"concurrency.sessions={sessions}", f"draft_policy={policy}", *args.overrides]
    cfg = compose_run(decoder, args.model, args.per_task or None, overrides)
    return run(cfg, Path(args.out) / f"{decoder}-N{sessions}-{policy}").run_dir


def figures(run_dir: Path) -> dict:
    chunks = pq.read_table(run_dir / "chunks.parquet").to_pandas()
    sessions = pq.read_table(run_dir / "sessions.parquet").to_pandas()
    meta = json.loads((run_dir / "run.json").read_text())
    device = meta.get("shared_device") or {}
    tool = chunks[chunks.kind == "tool"]
    return {
        "speak_ms": chunks[chunks.kind == "speak"].post_audio_ms.mean(),
        "tool_ms": tool.post_audio_ms.mean(),
        "miss": chunks.missed_deadline.mean(),
        "tool_miss": tool.missed_deadline.mean(),
        "max_lag_ms": sessions.max_lag_ms.mean(),
        "wait_ms": chunks.device_wait_ms.mean(),
        "overhead_ms": device.get("overhead_wall_ms", 0.0) / max(len(chunks), 1),
        "shares": [device.get(key, math.nan) / device["span_ms"] if device.get("span_ms") else math.nan
                   for key in ("post_audio_busy_ms", "draft_busy_ms", "talker_busy_ms", "idle_ms")],
        "clock": meta["clock"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="results/concurrency")
    parser.add_argument("--model", default="embedded")
    parser.add_argument("--per-task", type=int, default=6, help="sessions per task type (0: all)")
    parser.add_argument("--sessions", default="1,2,4,8", help="the values of N")
    parser.add_argument("--decoders", default="speclisten,speclisten_plus")
    parser.add_argument("--policies", default="expected_savings,round_robin")
    parser.add_argument("overrides", nargs="*", help="run config overrides, e.g. clock=wall")
    args = parser.parse_args()
    rows = []
    for n in [int(v) for v in args.sessions.split(",")]:
        ar = figures(replay("ar", n, "round_robin", args))  # AR never drafts: the policy does not matter
        rows.append(("ar", n, "-", ar, ar))
        for decoder in args.decoders.split(","):
            for policy in args.policies.split(",") if n > 1 else ["expected_savings"]:
                rows.append((decoder, n, policy, figures(replay(decoder, n, policy, args)), ar))
    clock = rows[0][3]["clock"]
    scale = f" (encode cost x{clock['encode_scale']:g})" if "encode_scale" in clock else ""
    print(f"Figure 4c, model {args.model}, clock {clock.get('name')} {clock.get('profile', '')}{scale}, "
          f"{args.per_task or 'all'} sessions per task")
    print(f"{'decoder':18} {'N':>2} {'policy':17} {'speak x':>8} {'tool x':>8} {'miss':>6} {'tool miss':>9} "
          f"{'max lag ms':>10} {'wait ms':>8} {'post%':>6} {'idle-w%':>7} {'talk%':>6} {'idle%':>6} {'sched ms/chunk':>14}")
    for decoder, n, policy, f, ar in rows:
        print(f"{decoder:18} {n:>2} {policy:17} {ar['speak_ms'] / f['speak_ms']:>8.2f} {ar['tool_ms'] / f['tool_ms']:>8.2f} "
              f"{100 * f['miss']:>5.1f}% {100 * f['tool_miss']:>8.1f}% {f['max_lag_ms']:>10.1f} {f['wait_ms']:>8.1f} "
              + "".join(f" {100 * v:>{w}.1f}" for v, w in zip(f["shares"], (6, 7, 6, 6))) + f" {f['overhead_ms']:>14.3f}")


if __name__ == "__main__":
    main()
