"""``python -m ticktock.judge <results dirs or globs> judge=hf_local judge.path=DIR [judge.<option>=...] [--allow-interrupted]``

Grades every reply of every run with a judge (``ticktock.judges``; options in ``configs/judge/``): every user
turn that expects a response, in every session of every run directory under the arguments (found as the tables
find them). The verdicts go to ``<run dir>/judgements/<judge name>.parquet`` (``ticktock.judges.store``), and the
quality table then shows the judge's mean score per decoder next to the rule-based task scores.

Resuming: a reply already judged with the same judge fingerprint (same model files, prompt and arithmetic)
and the same text keeps its verdict; the others are judged. Verdicts are stored after every batch, so an
interrupted judge keeps what it did and the same command carries on. A changed option (another template, dtype,
...) changes the fingerprint: that run's replies are judged again and the file holds the new verdicts.

The default, ``judge=rule``, is no judge model: the command says what the quality table uses and how to plug in
a local judge, and exits 2. Arguments with ``=`` that are not existing paths are config overrides.

Examples::

    python -m ticktock.judge results/main/runs judge=hf_local judge.path=models/my-judge
    python -m ticktock.judge "results/runs/*" judge=hf_local judge.path=DIR judge.device=cpu judge.batch_size=1
    ticktock judge results/main/runs judge=hf_local judge.path=DIR      # the same, through the ticktock command
"""

from __future__ import annotations

import argparse
import glob
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from omegaconf import DictConfig

from ticktock.errors import one_line, user_errors
from ticktock.judges.base import Judge, JudgeError, Reply, Verdict
from ticktock.judges.replies import run_replies
from ticktock.judges.store import check_judge_name, judgement_path, read_judgements, verdict_rows, write_judgements
from ticktock.replay.resources import register_resolver
from ticktock.shipped import resource_path

INTERRUPTED = "the verdicts stored so far are kept in each run's judgements/ folder; the same command resumes"


@dataclass
class JudgedRun:
    """What judging one run did."""

    file: Path
    replies: int
    judged: int  # judged now
    kept: int  # verdicts reused from before (same fingerprint, same text)
    dropped: int  # stored verdicts no longer valid (another fingerprint, a changed or missing reply)
    mean: float

    def line(self) -> str:
        if not self.replies:
            return f"{self.file.parents[1]}: no replies to judge (no user turn expects a response)"
        dropped = f", {self.dropped} stale verdicts replaced" if self.dropped else ""
        return (f"{self.file.parents[1]}: {self.replies} replies: {self.judged} judged, {self.kept} kept from before"
                f"{dropped}; mean score {self.mean:.2f} -> {self.file}")


def split_arguments(items: list[str]) -> tuple[list[str], list[str]]:
    """(results, config overrides): an argument with ``=`` is an override unless it names existing files.

    >>> split_arguments(["results/runs", "judge=hf_local", "judge.path=/m"])
    (['results/runs'], ['judge=hf_local', 'judge.path=/m'])
    """
    results, overrides = [], []
    for item in items:
        is_path = Path(item).exists() or bool(glob.glob(item))
        (overrides if "=" in item and not is_path else results).append(item)
    return results, overrides


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m ticktock.judge", description=__doc__.split("\n\n")[1])
    parser.add_argument("items", nargs="*", metavar="results | override",
                        help="run directories, folders of runs or globs; and config overrides (judge=hf_local judge.path=DIR)")
    parser.add_argument("--allow-interrupted", action="store_true",
                        help="judge the completed sessions of interrupted runs (killed, or stopped before their end)")
    args = parser.parse_args(argv)
    args.results, args.overrides = split_arguments(args.items)
    return args


def compose_judge(overrides: list[str]) -> DictConfig:
    """``configs/judge.yaml`` with the overrides; one that Hydra cannot apply is a ``JudgeError``."""
    from hydra import compose, initialize_config_dir
    from hydra.errors import HydraException

    from ticktock.plugins import register_selected

    register_resolver()
    register_selected(overrides)
    with initialize_config_dir(config_dir=str(resource_path("configs")), version_base=None):
        try:
            return compose("judge", overrides=overrides)
        except HydraException as err:
            raise JudgeError(one_line(err)) from None


def check_verdicts(judge: Judge, replies: list[Reply], verdicts: list[Verdict]) -> None:
    """A plug-in must return one verdict per reply, each on its scale (anything else is a bug in it)."""
    low, high = judge.scale
    if len(verdicts) != len(replies):
        raise RuntimeError(f"judge {judge.name} returned {len(verdicts)} verdicts for {len(replies)} replies")
    wrong = [v.score for v in verdicts if not (isinstance(v.score, (int, float)) and low <= v.score <= high)]
    if wrong:
        raise RuntimeError(f"judge {judge.name} returned scores outside its scale {low}-{high}: {wrong[:3]}")


def still_valid(stored, judge: Judge, replies: list[Reply]) -> list[dict]:
    """The stored verdict rows that apply to ``replies`` as they are now: the same fingerprint and text."""
    fingerprint, digests = judge.fingerprint(), {r.key: r.digest() for r in replies}
    return [row for row in stored.to_dict("records") if row["judge_fingerprint"] == fingerprint
            and digests.get((row["session_id"], row["turn_index"])) == row["input_sha256"]]


def judge_run(judge: Judge, run) -> JudgedRun:
    """Judge the replies of one run (``ticktock.tables.load.Run``) not judged yet, storing after every batch."""
    path = judgement_path(run.path, judge.name)
    replies = run_replies(run)
    stored = read_judgements(path)
    rows = still_valid(stored, judge, replies)
    done = {(row["session_id"], row["turn_index"]) for row in rows}
    todo = [r for r in replies if r.key not in done]
    kept, dropped = len(rows), len(stored) - len(rows)
    if dropped and not todo:
        write_judgements(path, rows)
    for start in range(0, len(todo), judge.batch_size):
        batch = todo[start : start + judge.batch_size]
        verdicts = judge.judge(batch)
        check_verdicts(judge, batch, verdicts)
        rows += verdict_rows(judge, batch, verdicts, judged_at=time.time())
        write_judgements(path, sorted(rows, key=lambda row: (row["session_id"], row["turn_index"])))
    mean = sum(row["score"] for row in rows) / len(rows) if rows else math.nan
    return JudgedRun(path, len(replies), len(todo), kept, dropped, mean)


def read_runs(results: list[str], allow_interrupted: bool) -> list:
    """The runs under the arguments, read as the tables read them; a problem is a ``JudgeError`` naming the file."""
    from ticktock.tables.load import TablesError, discover, read_run

    try:
        return [read_run(path, allow_interrupted) for path in discover(results)]
    except TablesError as err:
        raise JudgeError(str(err)) from None


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    judge = build_judge(compose_judge(args.overrides))
    check_judge_name(judge.name)  # it names a file in every run folder: never a path
    reason = judge.unavailable()
    if reason:
        raise JudgeError(reason)
    for run in read_runs(args.results, args.allow_interrupted):
        if run.status != "complete":
            print(f"warning: run {run.path} has status {run.status!r}: judging the sessions it holds now; judge it "
                  "again when it is complete", file=sys.stderr)
        print(judge_run(judge, run).line(), flush=True)
    return 0


def build_judge(cfg: DictConfig) -> Judge:
    """The judge plug-in of the config (``cfg.judge``: ``_target_`` and its options)."""
    from ticktock.replay.config import build

    return build(cfg.judge)


if __name__ == "__main__":
    with user_errors(interrupted=lambda: INTERRUPTED):
        sys.exit(main())
