"""The main job's runs two at a time (``--jobs 2``: joblib workers, cores // 2 torch threads each) against one
at a time, on this machine: wall time of each, their ratio pair by pair, and whether the tables are identical.

Each repeat replays the whole job into two fresh folders, one after the other (the order alternates between
repeats, A B then B A, so that drift on a noisy machine falls on both sides), and prints the median ratio over
the repeats. The tables (every .csv of the report) must be byte-identical: the runs are independent, and a
modeled clock does not depend on how busy the machine is.

Run (the default main job: about 16 minutes per repeat on 2 CPU cores; ``--per-task 2`` for a quick look)::

    python scripts/bench_parallel_runs.py --out results/bench-parallel --repeats 1
    python scripts/bench_parallel_runs.py --per-task 2 --repeats 3
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path


def main_job(out: Path, jobs: int, args) -> float:
    """Seconds of one main job from scratch into ``out``, ``jobs`` runs at a time."""
    shutil.rmtree(out, ignore_errors=True)
    command = [sys.executable, "-m", "ticktock.main_job", "--out", str(out), "--per-task", str(args.per_task),
               "--jobs", str(jobs), *args.overrides]
    began = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - began


def tables(out: Path) -> dict:
    return {p.name: p.read_bytes() for p in sorted((out / "report").glob("*.csv"))}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="results/bench-parallel")
    parser.add_argument("--per-task", type=int, default=6, help="sessions per task type, as the main job (0: all)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("overrides", nargs="*", help="run overrides passed to the main job")
    args = parser.parse_args(argv)
    out, ratios, identical = Path(args.out), [], True
    for repeat in range(args.repeats):
        order = [1, args.jobs] if repeat % 2 == 0 else [args.jobs, 1]
        seconds = {jobs: main_job(out / f"jobs{jobs}", jobs, args) for jobs in order}
        same = tables(out / "jobs1") == tables(out / f"jobs{args.jobs}")
        identical &= same
        ratios.append(seconds[1] / seconds[args.jobs])
        print(f"repeat {repeat + 1}: one at a time {seconds[1]:.1f} s, {args.jobs} at a time {seconds[args.jobs]:.1f} s, "
              f"speedup {ratios[-1]:.2f}x, tables identical: {same}", flush=True)
    print(f"median speedup of --jobs {args.jobs} over --jobs 1: {statistics.median(ratios):.2f}x over {len(ratios)} "
          f"repeat(s) (wall clock, this machine); tables identical in every repeat: {identical}")
    return 0 if identical else 1


if __name__ == "__main__":
    sys.exit(main())
