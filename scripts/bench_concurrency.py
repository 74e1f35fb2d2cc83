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

Every argument is checked before any replay, each problem one line with exit 2: ``--sessions`` (whole numbers from
1 to 1024, none twice, none above the sessions a run replays), ``--per-task``, and every run the sweep would make
(decoder, draft policy, overrides).

Run (about 2 minutes per run on 2 CPU cores with the default 6 sessions per task)::

    python scripts/bench_concurrency.py --out results/concurrency --sessions 1,2,4,8
    python scripts/bench_concurrency.py --per-task 0 --decoders speclisten_plus --policies expected_savings,round_robin
    python scripts/bench_concurrency.py --out results/concurrency-enc025 --sessions 4 clock.encode_scale=0.25
    python scripts/bench_concurrency.py --out results/concurrency-batch --sessions 8 concurrency.batching=true
    python scripts/bench_concurrency.py --out results/concurrency-enc --sessions 4 concurrency.batch_encodings=true
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import pyarrow.parquet as pq

from ticktock.corpus.arguments import whole_number
from ticktock.errors import ConfigError, user_errors
from ticktock.replay.concurrency import MAX_SESSIONS
from ticktock.replay.config import build, check_run_options, compose_run, select_sessions
from ticktock.replay.runner import run


class ArgumentError(ConfigError):
    """A command-line argument of this script is not allowed."""


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a bad argument is one ``ArgumentError`` line (exit 2) instead of the usage and a line."""

    def error(self, message: str):
        raise ArgumentError(message)


def session_counts(text: str) -> list[int]:
    """``--sessions``: the values of N, comma-separated whole numbers from 1 to 1024, none twice.

    >>> session_counts("1,2,4,8")
    [1, 2, 4, 8]
    >>> session_counts("1,-2")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: expected whole numbers from 1 to 1024, comma-separated, got '1,-2' ('-2' is not one)
    """
    values = [v.strip() for v in text.split(",")]
    for value in values:
        try:
            whole_number(1, MAX_SESSIONS)(value)
        except argparse.ArgumentTypeError:
            raise argparse.ArgumentTypeError(f"expected whole numbers from 1 to {MAX_SESSIONS}, comma-separated, got "
                                             f"{text!r} ({value!r} is not one)") from None
    counts = [int(v) for v in values]
    twice = sorted({n for n in counts if counts.count(n) > 1})
    if twice:
        raise argparse.ArgumentTypeError(f"N={', '.join(map(str, twice))} given twice in {text!r}")
    return counts


def arms(args) -> list[tuple[str, int, str]]:
    """Every run the sweep makes: (decoder, N, draft policy), AR first at each N."""
    runs = []
    for n in args.sessions:
        runs.append(("ar", n, "round_robin"))  # AR never drafts: the policy does not matter
        for decoder in args.decoders.split(","):
            runs += [(decoder, n, policy) for policy in (args.policies.split(",") if n > 1 else ["expected_savings"])]
    return runs


def check_arguments(args) -> None:
    """Before any replay: every run's options (decoder, policy, overrides) and N against the sessions a run replays."""
    for decoder, n, policy in arms(args):
        check_run_options(config(decoder, n, policy, args))
    cfg = config("ar", 1, "round_robin", args)
    replayed = len(select_sessions(cfg, build(cfg.task)))
    above = [n for n in args.sessions if n > replayed]
    if above:
        raise ArgumentError(f"argument --sessions: N={', '.join(map(str, above))} above the {replayed} sessions a run "
                            f"replays (--per-task {args.per_task or 'all'} and the overrides): more sessions at once "
                            "than the run has cannot be measured")


def config(decoder: str, sessions: int, policy: str, args):
    return compose_run(decoder, args.model, args.per_task or None,
                       [f"concurrency.sessions={sessions}", f"draft_policy={policy}", *args.overrides])


def replay(decoder: str, sessions: int, policy: str, args) -> Path:
    return run(config(decoder, sessions, policy, args), Path(args.out) / f"{decoder}-N{sessions}-{policy}").run_dir


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
        "sharing": meta["config"].get("concurrency") or {},
    }


def parse_args(argv=None) -> argparse.Namespace:
    parser = OneLineParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="results/concurrency")
    parser.add_argument("--model", default="embedded")
    parser.add_argument("--per-task", type=whole_number(0), default=6, help="sessions per task type (0: all)")
    parser.add_argument("--sessions", type=session_counts, default="1,2,4,8", help="the values of N")
    parser.add_argument("--decoders", default="speclisten,speclisten_plus")
    parser.add_argument("--policies", default="expected_savings,round_robin")
    parser.add_argument("overrides", nargs="*", help="run config overrides, e.g. clock=wall")
    return parser.parse_args(argv)


def main(argv=None) -> None:
    args = parse_args(argv)
    check_arguments(args)  # every argument and every run, before any replay
    rows = []
    for decoder, n, policy in arms(args):
        if decoder == "ar":
            ar = figures(replay("ar", n, policy, args))
            rows.append(("ar", n, "-", ar, ar))
        else:
            rows.append((decoder, n, policy, figures(replay(decoder, n, policy, args)), ar))
    clock, sharing = rows[0][3]["clock"], rows[0][3]["sharing"]
    scale = f" (encode cost x{clock['encode_scale']:g})" if "encode_scale" in clock else ""
    batched = [what for key, what in (("batching", "batched forwards"), ("batch_encodings", "batched encodings"))
               if sharing.get(key)]
    print(f"Figure 4c, model {args.model}, clock {clock.get('name')} {clock.get('profile', '')}{scale}, "
          f"{args.per_task or 'all'} sessions per task{', ' + ' and '.join(batched) if batched else ''}")
    print(f"{'decoder':18} {'N':>2} {'policy':17} {'speak x':>8} {'tool x':>8} {'miss':>6} {'tool miss':>9} "
          f"{'max lag ms':>10} {'wait ms':>8} {'post%':>6} {'idle-w%':>7} {'talk%':>6} {'idle%':>6} {'sched ms/chunk':>14}")
    for decoder, n, policy, f, ar in rows:
        print(f"{decoder:18} {n:>2} {policy:17} {ar['speak_ms'] / f['speak_ms']:>8.2f} {ar['tool_ms'] / f['tool_ms']:>8.2f} "
              f"{100 * f['miss']:>5.1f}% {100 * f['tool_miss']:>8.1f}% {f['max_lag_ms']:>10.1f} {f['wait_ms']:>8.1f} "
              + "".join(f" {100 * v:>{w}.1f}" for v, w in zip(f["shares"], (6, 7, 6, 6))) + f" {f['overhead_ms']:>14.3f}")


if __name__ == "__main__":
    with user_errors(prog="bench_concurrency"):
        main()
