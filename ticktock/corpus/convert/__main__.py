"""Convert a published source (a local copy, or a Hub id for the sources on the Hub) into a TickTock session manifest.

Usage::

    python -m ticktock.corpus.convert SOURCE --src PATH --out DIR [--limit N] [--subsets A,B]
                                      [--lead-s 1.0] [--tail-s 8.0] [--column ROLE=NAME ...]
                                      [--selection NAME|FILE | --per-task N [--seed S]]
                                      [--backchannel-gt FILE] [--overwrite]
    python -m ticktock.corpus.convert SOURCE --src PATH --check [...]

SOURCE is one of openaudiobench, voicebench_alpacaeval, big_bench_audio, fdb_v1, fdb_v1_5, fdb_v3. Writes
DIR/manifest.jsonl and DIR/audio/<session_id>.flac (16 kHz mono). ``--src`` of openaudiobench, voicebench_alpacaeval and
big_bench_audio may be a Hub id (read through the Hugging Face cache; offline, a source not cached is one line naming
the command that fetches it, ``ticktock.corpus.convert.hub``); nothing else is downloaded. Problems that do
not stop the conversion (clipped or silent audio, ...) are printed as "warning: FILE: ..." lines and
counted in the summary; a missing or corrupt source file stops it with "ticktock: error: FILE: ..." (exit status
3) and leaves nothing behind in DIR; options that cannot work together are one line too (exit status 2). A DIR that is the source, or that already holds another corpus, is refused
before any work (``ticktock: error: DIR: ...``, exit status 4) unless ``--overwrite`` (never over the source).
``--check`` reads and analyses the copy the same way and prints its statistics and every warning, but writes
nothing (``--out`` is not needed).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import Counter
from typing import Sequence

from ticktock.corpus.arguments import real_number, whole_number
from ticktock.corpus.convert import (LEAD_S_RANGE, MAX_LIMIT, SOURCES, TAIL_S_RANGE, ConvertOptionError, check,
                                     convert)
from ticktock.corpus.convert.selection import Selection, load_selection
from ticktock.sessions.hub import hub_reads


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("source", choices=SOURCES, help="which published source the local copy is")
    parser.add_argument("--src", required=True,
                        help="the local copy, in its published layout, or the Hub id of a source on the Hub")
    parser.add_argument("--out", default=None, help="output folder (manifest.jsonl + audio/); not with --check")
    parser.add_argument("--check", action="store_true",
                        help="print what the copy holds (statistics, every warning) without writing anything")
    parser.add_argument("--limit", type=whole_number(1, MAX_LIMIT), default=None,
                        help="convert at most N items per subset")
    parser.add_argument("--subsets", default=None,
                        help="comma-separated subsets (openaudiobench, fdb_v1, fdb_v1_5; voicebench config)")
    parser.add_argument("--lead-s", type=real_number(*LEAD_S_RANGE), default=1.0,
                        help="silence before a single-utterance question (default 1.0)")
    parser.add_argument("--tail-s", type=real_number(*TAIL_S_RANGE, above=True), default=8.0,
                        help="room for the reply after a question without reference answer (default 8.0)")
    parser.add_argument("--column", action="append", default=[], metavar="ROLE=NAME",
                        help="metadata field name for a role, e.g. answer=Answer "
                             "(openaudiobench, big_bench_audio, voicebench_alpacaeval)")
    parser.add_argument("--selection", default=None, metavar="NAME|FILE",
                        help="keep the sessions of a selection config: a shipped name (ticktock_bench: 95 per "
                             "task type, seed 0) or a YAML file (see ticktock/corpus/convert/selection.py)")
    parser.add_argument("--per-task", type=whole_number(1, MAX_LIMIT), default=None,
                        help="keep N sessions per task type, chosen reproducibly with --seed")
    parser.add_argument("--seed", type=whole_number(0, 2**32 - 1), default=0, help="seed of --per-task (default 0)")
    parser.add_argument("--backchannel-gt", default=None, metavar="FILE",
                        help="fdb_v1: icc_gt_distribution.json (default: looked for next to --src)")
    parser.add_argument("--overwrite", action="store_true",
                        help="write into a folder that already holds another corpus (never the source folder)")


def parse_columns(pairs: Sequence[str]) -> dict[str, str]:
    columns = {}
    for pair in pairs:
        role, sep, name = pair.partition("=")
        if not sep or not role.strip() or not name.strip():
            raise ConvertOptionError(f"--column: expected ROLE=NAME, got {pair!r}")
        columns[role.strip()] = name.strip()
    return columns


def selection_of(args: argparse.Namespace) -> Selection | None:
    """The selection the options ask for (``--selection`` or ``--per-task``), or None."""
    if args.selection and args.per_task is not None:
        raise ConvertOptionError("--selection and --per-task exclude each other (a selection config sets per_task)")
    if args.per_task is not None and args.per_task < 1:
        raise ConvertOptionError(f"--per-task must be >= 1, got {args.per_task}")
    if args.selection:
        return load_selection(args.selection)
    if args.per_task is not None:
        return Selection(per_task=args.per_task, seed=args.seed, name=f"per-task {args.per_task}, seed {args.seed}")
    return None


def main(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    if not args.check and not args.out:
        raise ConvertOptionError("--out is required (or --check, which writes nothing)")
    subsets = [s.strip() for s in args.subsets.split(",") if s.strip()] if args.subsets else None
    options = dict(limit=args.limit, subsets=subsets, lead_s=args.lead_s, tail_unknown_s=args.tail_s,
                   columns=parse_columns(args.column), backchannel_gt=args.backchannel_gt, selection=selection_of(args))
    with hub_reads([args.src]):  # a Hub id and no Hub: the cache at once, not half a minute of retry warnings
        if args.check:
            result = check(args.source, args.src, **options)
        else:  # a ConvertError (exit 3) or a refused output folder (exit 4) is one line: ``ticktock: error: ...``
            result = convert(args.source, args.src, args.out, overwrite=args.overwrite, **options)
    print(check_report(result, time.perf_counter() - started) if args.check
          else summary(result, time.perf_counter() - started))
    return 0


def summary(result, seconds: float) -> str:
    """One line per task type, then the totals and the warning counts."""
    lines = []
    sessions = result.sessions
    for task in dict.fromkeys(s.task for s in sessions):
        mine = [s for s in sessions if s.task == task]
        chunks = sum(len(s.chunk_spans()) for s in mine)
        lines.append(f"{task:16s} sessions={len(mine):4d} chunks={chunks:6d} "
                     f"median_s={statistics.median(s.duration_s for s in mine):5.1f}")
    total = sum(len(s.chunk_spans()) for s in sessions)
    lines.append(f"total            sessions={len(sessions):4d} chunks={total:6d} in {seconds:.1f} s"
                 f" -> {result.manifest}")
    counts = ", ".join(f"{kind}={n}" for kind, n in sorted(result.warnings.items()))
    lines.append(f"warnings         {counts or 'none'}")
    return "\n".join(lines)


def check_report(result, seconds: float) -> str:
    """Per task type: sessions, audio hours and lengths, chunks, turns, expected tool calls, and how the
    sessions spread over the source's subsets; then every warning kind with its count. Nothing was written."""
    lines = []
    sessions = result.sessions
    for task in dict.fromkeys(s.task for s in sessions):
        mine = [s for s in sessions if s.task == task]
        lengths = [s.duration_s for s in mine]
        lines.append(f"{task:16s} sessions={len(mine):4d} hours={sum(lengths) / 3600:6.2f} "
                     f"seconds min/median/max={min(lengths):.1f}/{statistics.median(lengths):.1f}/{max(lengths):.1f} "
                     f"chunks={sum(len(s.chunk_spans()) for s in mine):6d} turns={sum(len(s.turns) for s in mine):5d} "
                     f"tool_calls={sum(len(s.expected.get('tool_calls') or []) for s in mine):4d}")
        subsets = Counter(s.provenance.get("subset") for s in mine if s.provenance.get("subset"))
        if subsets:
            lines.append(f"{'':16s} subsets: " + ", ".join(f"{name}={n}" for name, n in subsets.items()))
    lines.append(f"total            sessions={len(sessions):4d} in {seconds:.1f} s (checked; nothing written)")
    counts = ", ".join(f"{kind}={n}" for kind, n in sorted(result.warnings.items()))
    lines.append(f"warnings         {counts or 'none'}")
    return "\n".join(lines)


def cli(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ticktock.corpus.convert", description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    return main(parser.parse_args(argv))


if __name__ == "__main__":
    from ticktock.errors import user_errors

    with user_errors():
        sys.exit(cli())
