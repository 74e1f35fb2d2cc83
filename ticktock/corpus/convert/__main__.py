"""Convert a local copy of a published source into a TickTock session manifest.

Usage::

    python -m ticktock.corpus.convert SOURCE --src PATH --out DIR [--limit N] [--subsets A,B]
                                      [--lead-s 1.0] [--tail-s 8.0] [--column ROLE=NAME ...]

SOURCE is one of openaudiobench, voicebench_alpacaeval, big_bench_audio, fdb_v1, fdb_v1_5, fdb_v3. Writes
DIR/manifest.jsonl and DIR/audio/<session_id>.flac (16 kHz mono); nothing is downloaded. Problems that do
not stop the conversion (clipped or silent audio, ...) are printed as "warning: FILE: ..." lines and
counted in the summary; a missing or corrupt source file stops it with "error: FILE: ..." (exit status 1)
and leaves nothing behind in DIR.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from typing import Sequence

from ticktock.corpus.convert import SOURCES, ConvertError, convert


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("source", choices=SOURCES, help="which published source the local copy is")
    parser.add_argument("--src", required=True, help="the local copy, in its published layout")
    parser.add_argument("--out", required=True, help="output folder (manifest.jsonl + audio/)")
    parser.add_argument("--limit", type=int, default=None, help="convert at most N items per subset")
    parser.add_argument("--subsets", default=None,
                        help="comma-separated subsets (openaudiobench, fdb_v1, fdb_v1_5; voicebench config)")
    parser.add_argument("--lead-s", type=float, default=1.0,
                        help="silence before a single-utterance question (default 1.0)")
    parser.add_argument("--tail-s", type=float, default=8.0,
                        help="room for the reply after a question without reference answer (default 8.0)")
    parser.add_argument("--column", action="append", default=[], metavar="ROLE=NAME",
                        help="metadata field name for a role, e.g. answer=Answer "
                             "(openaudiobench, big_bench_audio, voicebench_alpacaeval)")


def parse_columns(pairs: Sequence[str]) -> dict[str, str]:
    columns = {}
    for pair in pairs:
        role, sep, name = pair.partition("=")
        if not sep or not role.strip() or not name.strip():
            raise SystemExit(f"--column: expected ROLE=NAME, got {pair!r}")
        columns[role.strip()] = name.strip()
    return columns


def main(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    subsets = [s.strip() for s in args.subsets.split(",") if s.strip()] if args.subsets else None
    try:
        result = convert(args.source, args.src, args.out, limit=args.limit, subsets=subsets, lead_s=args.lead_s,
                         tail_unknown_s=args.tail_s, columns=parse_columns(args.column))
    except ConvertError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    print(summary(result, time.perf_counter() - started))
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


def cli(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ticktock.corpus.convert", description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    return main(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(cli())
