"""``python -m ticktock.main_job``: the benchmark in one command, on the embedded model and corpus.

Replays the mini corpus with every decoder (AR, PLD, Token Recycling, Lookahead, and Speculative
Listening with its ablation configs) under the same clock, one run directory per decoder, plus AR and
Speculative Listening at two sampling temperatures (Figure 4b) and, with ``--concurrency 4``, AR and
``speclisten_plus`` with 4 sessions sharing the device (Figure 4c; off by default: it would take the job past
10 minutes on 2 CPU cores), with ``--talker espeak`` AR and ``speclisten_speak`` with the eSpeak talker speaking
every reply (speech out: first-audio onset, stalls, listening tracks in the report; off by default for the same
reason), then prints
Table 2 (speak-chunk speedup and #MAT), the tool-call table and Table 5 (onset and tool-call latency) and
writes the full report (tables, figures, report.html). Reruns resume: completed sessions are skipped.

By default it replays the first 6 sessions of each of the 8 task types (a documented subset that keeps
the job under 10 minutes on 2 CPU cores); ``--per-task 0`` replays the whole corpus. Any run override
can follow, e.g. ``clock=wall`` or ``sampling.temperature=0.7``. Runs on the modeled clock replay two at a time
on a machine with 2 or more cores (joblib worker processes, cores // 2 torch threads each): their figures are
charged by the cost profile, so the tables are the same as one at a time. A run that measures time on this
machine (``clock=wall``) makes the job run one at a time, so that runs do not slow each other down. ``--jobs N``
sets the number.

Example::

    python -m ticktock.main_job --out results/main
    python -m ticktock.main_job --per-task 0 clock=wall
    python -m ticktock.main_job --jobs 1            # one run at a time
    python -m ticktock.main_job --talker espeak     # + AR and speclisten_speak with a talker
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from ticktock.decoders import DECODERS
from ticktock.errors import ConfigError, TickTockError, one_line, user_errors
from ticktock.replay.config import check_run_options, compose_run
from ticktock.replay.run_folder import interrupted_note
from ticktock.replay.runner import run


class JobPlanError(TickTockError):
    """One of the job's runs cannot run as asked; the message names the run and its options, and the exit code
    is that of the underlying error (2 for an option, 3 for input data, ...)."""

    def __init__(self, message: str, exit_code: int):
        super().__init__(message)
        self.exit_code = exit_code


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="results/main", help="folder for the runs and the report")
    parser.add_argument("--model", default="embedded")
    parser.add_argument("--per-task", type=int, default=6, help="sessions per task type (0: all)")
    parser.add_argument("--decoders", default=",".join(DECODERS))
    parser.add_argument("--temperatures", default="0.3,1.0",
                        help="sampling temperatures for Figure 4b (AR and speclisten at each; '' for none)")
    parser.add_argument("--concurrency", default="",
                        help="values of N for Figure 4c, e.g. '4' or '2,4,8': AR and speclisten_plus with N sessions "
                             "sharing the device (each adds about 4 minutes on 2 CPU cores; '' for none)")
    parser.add_argument("--talker", default="",
                        help="talkers for speech out, e.g. 'espeak' or 'espeak,piper': AR and speclisten_speak with the "
                             "talker speaking every reply (first-audio onset, stalls, --listen tracks in the report; "
                             "'' for none)")
    parser.add_argument("--jobs", default="auto",
                        help="runs at once: joblib worker processes with cores // jobs torch threads each; the results "
                             "are the same as with 1. auto (default): 2 on 2 or more cores, 1 when a run measures "
                             "wall-clock time")
    parser.add_argument("overrides", nargs="*", help="run config overrides, e.g. clock=wall")
    args = parser.parse_args(argv)
    runs_dir = Path(args.out) / "runs"
    with user_errors(interrupted=lambda: interrupted_note(sorted(p.parent for p in runs_dir.glob("*/run.json")))):
        return run_all(args)


def run_all(args: argparse.Namespace) -> int:
    """Every run of the job (resuming), then the headline tables and the report."""
    from ticktock.tables.build import build_report, print_headline
    from ticktock.tables.load import load_results

    out = Path(args.out)
    began = time.time()
    plans = plan_runs(args)
    for line in run_plans(plans, job_count(args.jobs, [cfg for cfg, _ in plans])):
        print(line, flush=True)
    runs = load_results([out / "runs"])
    print_headline(runs)
    report = build_report(runs, out / "report")
    print(f"\nreport: {report}  ({(time.time() - began) / 60:.1f} min)")
    return 0


def plan_runs(args: argparse.Namespace) -> list:
    """Every run of the job as (config, run folder), each composed and checked (``check_run_options``) before any
    is replayed: a bad option of any run stops the job before its first replay, naming the run.

    Example: ``--temperatures -1`` stops with ``ticktock: error: run ar-T-1 (sampling.temperature=-1):
    sampling.temperature: must be 0 (greedy) or a number from 0.01 to 100, got -1``, AR not replayed."""
    if args.per_task < 0:
        raise ConfigError(f"--per-task: must be an integer >= 0 (0: every session), got {args.per_task}")
    jobs = [(decoder, []) for decoder in listed("--decoders", args.decoders, str)]
    for temperature in listed("--temperatures", args.temperatures, float):
        jobs += [(decoder, [f"sampling.temperature={temperature}"]) for decoder in ("ar", "speclisten")]
    for n in listed("--concurrency", args.concurrency, int):
        if n < 2:
            raise ConfigError(f"--concurrency: each N must be an integer >= 2 (N = 1 is every decoder's own run), got {n}")
        jobs += [(decoder, [f"concurrency.sessions={n}"]) for decoder in ("ar", "speclisten_plus")]
    for talker in listed("--talker", args.talker, str):
        jobs += [(decoder, [f"talker={talker}"]) for decoder in ("ar", "speclisten_speak")]
    plans = []
    for decoder, extra in jobs:
        try:
            cfg = compose_run(decoder, args.model, args.per_task or None, [*extra, *args.overrides])
            check_run_options(cfg)
        except TickTockError as err:
            name = f"{decoder}{_suffix_of(extra)}" + (f" ({' '.join(extra)})" if extra else "")
            raise JobPlanError(f"run {name}: {one_line(err)}", err.exit_code) from None
        plans.append((cfg, Path(args.out) / "runs" / f"{cfg.model.name}-{cfg.clock.name}-{decoder}{_suffix_of(extra)}"))
    return plans


def listed(option: str, text: str, kind: type) -> list:
    """The comma-separated values of a command-line option, each read as ``kind`` ('' for none).

    >>> listed("--concurrency", "2,4", int), listed("--temperatures", "", float)
    ([2, 4], [])
    >>> listed("--concurrency", "abc", int)
    Traceback (most recent call last):
    ...
    ticktock.errors.ConfigError: --concurrency: 'abc' is not an integer (values are separated by commas, e.g. 2,4)
    """
    what = {int: "an integer", float: "a number", str: "a name"}[kind]
    values = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        try:
            value = kind(item)
        except ValueError:
            raise ConfigError(f"{option}: {item!r} is not {what} (values are separated by commas, e.g. "
                              f"{ {int: '2,4', float: '0.3,1.0', str: 'ar,pld'}[kind]})") from None
        values.append(int(value) if kind is float and value.is_integer() and "." not in item else value)
    return values


def job_count(text: str, configs: list) -> int:
    """``--jobs``: a whole number >= 1, or ``auto``: 2 on a machine with 2 or more cores, unless a run's clock
    measures time on this machine (``Clock.measured``: runs side by side would slow each other's figures), then 1.

    Example: ``job_count("auto", [modeled run configs])`` is 2 on a 2-core machine; ``job_count("3", ...)`` is 3."""
    if text != "auto":
        if not text.isdigit() or int(text) < 1:
            raise ConfigError(f"--jobs: must be 'auto' or an integer >= 1, got {text!r}")
        return int(text)
    from hydra.utils import get_class

    if any(get_class(cfg.clock._target_).measured for cfg in configs):
        return 1
    return min(2, usable_cores())


def run_plans(plans: list, jobs: int = 1):
    """Each (run config, run folder) replayed, yielding its summary line in plan order: one after another in
    this process, or ``jobs`` at a time in joblib worker processes (the engine of ``hydra/launcher=joblib``), each
    with ``threads`` = cores // jobs unless the run sets it. The runs are independent, so their results do not
    depend on ``jobs``; only the wall-clock figures do (a wall-clock run shares the machine with the others)."""
    if jobs < 1:
        raise ConfigError(f"--jobs: must be an integer >= 1, got {jobs}")
    if jobs == 1:
        for cfg, run_dir in plans:
            yield run(cfg, run_dir).line()
        return
    from joblib import Parallel, delayed

    threads = max(1, usable_cores() // jobs)
    yield from Parallel(n_jobs=jobs, return_as="generator")(
        delayed(_run_line)(cfg, run_dir, threads) for cfg, run_dir in plans)


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity where the system tells it, e.g. under SLURM)."""
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity else (os.cpu_count() or 1)


def _run_line(cfg, run_dir: Path, threads: int) -> str:
    """One run in a worker process (``run_plans``), ``threads`` torch threads unless the run sets its own."""
    if cfg.get("threads") is None:
        cfg.threads = threads
    return run(cfg, run_dir).line()


def _suffix_of(extra: list[str]) -> str:
    """The run folder's suffix for a run beyond the decoder's plain run, from its extra override: ``-T0.3``, ``-N4``,
    ``-talker-espeak``.

    >>> _suffix_of([]), _suffix_of(["sampling.temperature=0.3"]), _suffix_of(["concurrency.sessions=4"])
    ('', '-T0.3', '-N4')
    >>> _suffix_of(["talker=espeak"])
    '-talker-espeak'
    """
    if not extra:
        return ""
    key, _, value = extra[0].partition("=")
    return f"-{SUFFIXES[key]}{value}"


SUFFIXES = {"concurrency.sessions": "N", "sampling.temperature": "T", "talker": "talker-"}


if __name__ == "__main__":
    sys.exit(main())
