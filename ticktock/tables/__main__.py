"""``python -m ticktock.tables <results dirs or globs> [--out DIR] [--baseline ar] [--format md,csv,tex,html] [--strict]
[--case SESSION_ID ...] [--case-decoders ar,speclisten] [--viewer-sessions N|all] [--listen SESSION_ID ...]``

Reads every run directory under the arguments, writes one .md/.csv/.tex per table, PNG figures, the case
studies and report.html (with the interactive session viewer) into ``--out`` (default
``results/tables/<timestamp>``), and prints Table 2, the tool-call table and Table 5. The case studies are a
session's timeline per decoder (Figures 5-6: a default onset and tool-call pick, plus one per ``--case``,
showing the baseline and Speculative Listening unless ``--case-decoders`` names others). The viewer embeds
``--viewer-sessions`` sessions (default 120, the case studies' first; ``all``: every one). For runs with a talker
(``talker=espeak|piper|modeled``), report.html lets one listen to a session as its user heard it under each decoder
(the user's audio and the assistant's re-synthesized speech at its playback times, under the viewer's timeline:
``ticktock.tables.listen``): the sessions named with ``--listen`` (repeatable), by default the case studies' sessions.

A lossless decoder whose outputs differ from the baseline's is printed as a FAILURE;
``--strict`` makes that exit with status 1. Unusable results exit with status 2 and one line,
``ticktock: error: <file / run / session>: <what is wrong>``, as every ticktock command (``ticktock.errors``);
an output folder that cannot be written exits with status 4.
An unreadable run (e.g. a truncated parquet file, a run.json of the wrong shape), an interrupted one or a failed
one (status "failed: ...", e.g. a full disk) stops the build with one line naming it; ``--skip-bad-runs`` leaves
unusable runs out (printed, and listed in every table's provenance), and ``--allow-interrupted`` uses the completed
sessions of an interrupted or failed run (said in the provenance). Runs that cannot be compared honestly are
refused in one line (one session id replayed from different audio or manifest lines, rows of another decoder than
run.json's, sessions charged by different cost profiles, two folders with one run id: ``ticktock.tables.load``).
The shards of a sharded run (``shard.index`` / ``shard.count``) are combined into one run when every shard is
there once and complete; a shard missing, failed or given twice stops the build with one line naming the
shards, unless ``--allow-missing-shards`` (missing and failed shards only; said in the provenance).

Example::

    python -m ticktock.tables results/runs/* --out results/tables/main --strict
    python -m ticktock.tables results/runs --skip-bad-runs --allow-interrupted
    python -m ticktock.tables results/sweeps/grid            # a sharded sweep: every shard folder under it
    python -m ticktock.tables results/main/runs --case fdb_v3-eval-0-0003 --case-decoders ar,pld,speclisten
    python -m ticktock.tables results/runs/espeak-* --listen fdb_v3-eval-0-0001 --listen fdb_v3-eval-0-0003
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from ticktock.errors import TickTockError, one_line, user_errors
from ticktock.tables.build import HEADLINE, build_tables, check_baseline, headline_text, print_failures, write_outputs
from ticktock.tables.common import noise_warnings
from ticktock.tables.load import load_results
from ticktock.tables.render import FORMATS
from ticktock.tables.viewer import DEFAULT_SESSIONS


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m ticktock.tables", description=__doc__.split("\n\n")[0])
    parser.add_argument("results", nargs="+", help="run directories, folders of runs, or globs of either")
    parser.add_argument("--out", type=Path, default=None, help="output folder (default results/tables/<timestamp>)")
    parser.add_argument("--baseline", default=None,
                        help="decoder every speedup is measured against (default ar; when no ar run is among the "
                             "results, the tables that need one say so and the others are built; a decoder named "
                             "here must have a run)")
    parser.add_argument("--format", default=",".join(FORMATS), help="comma-separated subset of md,csv,tex,html")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a losslessness or quality check fails")
    parser.add_argument("--skip-bad-runs", action="store_true",
                        help="leave out runs that cannot be read (listed in the output) instead of stopping")
    parser.add_argument("--allow-interrupted", action="store_true",
                        help="use the completed sessions of interrupted runs (killed, or stopped before their end) "
                             "and of failed runs (said in the provenance)")
    parser.add_argument("--allow-missing-shards", action="store_true",
                        help="build a sharded run from the shards there when some are missing or failed (said in the "
                             "provenance) instead of stopping")
    parser.add_argument("--case", action="append", default=[], metavar="SESSION_ID",
                        help="also draw this session's timeline (case study; repeatable)")
    parser.add_argument("--case-decoders", default=None, metavar="A,B",
                        help="decoders shown in --case timelines (default: the baseline and speclisten)")
    parser.add_argument("--viewer-sessions", default=str(DEFAULT_SESSIONS), metavar="N|all",
                        help=f"sessions the report's viewer embeds (default {DEFAULT_SESSIONS}; all: every one)")
    parser.add_argument("--listen", action="append", default=[], metavar="SESSION_ID",
                        help="in report.html, let one listen to this session as its user heard it under each decoder "
                             "of the runs with a talker (repeatable; default: the case studies' sessions)")
    args = parser.parse_args(argv)
    args.viewer_sessions = _session_count(parser, args.viewer_sessions)
    args.case_decoders = tuple(d.strip() for d in args.case_decoders.split(",") if d.strip()) \
        if args.case_decoders else None
    args.formats = tuple(f.strip() for f in args.format.split(",") if f.strip())
    unknown = [f for f in args.formats if f not in FORMATS]
    if unknown:
        parser.error(f"unknown format(s) {', '.join(unknown)}; choose from {', '.join(FORMATS)}")
    if args.listen and "html" not in args.formats:
        parser.error(f"--listen {args.listen[0]}: the tracks go into report.html; add html to --format")
    return args


def _session_count(parser: argparse.ArgumentParser, text: str) -> int | None:
    if text == "all":
        return None
    if not text.isdigit() or int(text) < 1:
        parser.error(f"--viewer-sessions: must be 'all' or an integer >= 1, got {text!r}")
    return int(text)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    out = args.out or Path("results/tables") / time.strftime("%Y-%m-%d_%H-%M-%S")
    try:
        results = load_results(args.results, skip_bad_runs=args.skip_bad_runs, allow_interrupted=args.allow_interrupted,
                               allow_missing_shards=args.allow_missing_shards)
        if args.baseline is not None:  # named: a run of it must be there
            check_baseline(results, args.baseline)
        baseline = args.baseline or "ar"
        built = build_tables(results, baseline, tuple(args.case), args.case_decoders, tuple(args.listen))
        written = write_outputs(built, results, out, args.formats, args.viewer_sessions)
    except TickTockError as err:  # unusable results (exit 2), an output folder that cannot be written (exit 4)
        print(f"ticktock: error: {one_line(err)}", file=sys.stderr)
        return err.exit_code
    for warning in (results.warnings + [f"skipped: {reason}" for reason in results.skipped] + noise_warnings(results)
                    + results.incomplete):
        print(f"warning: {warning}", file=sys.stderr)
    print(headline_text(built.tables[: len(HEADLINE)]))
    print_failures(built.failures)
    skipped = f" ({len(results.skipped)} skipped)" if results.skipped else ""
    print(f"{len(results.runs)} runs{skipped} -> {len(written)} files in {out}"
          + (f" (open {out / 'report.html'})" if "html" in args.formats else ""))
    return 1 if args.strict and built.failures else 0


if __name__ == "__main__":
    with user_errors():  # Ctrl-C: one line, exit 130
        sys.exit(main())
