"""``python -m ticktock.tables <results dirs or globs> [--out DIR] [--baseline ar] [--format md,csv,tex,html] [--strict]``

Reads every run directory under the arguments, writes one .md/.csv/.tex per table, PNG figures and
report.html into ``--out`` (default ``results/tables/<timestamp>``), and prints Table 2, the tool-call
table and Table 5. A lossless decoder whose outputs differ from the baseline's is printed as a FAILURE;
``--strict`` makes that exit with status 1. Unusable results exit with status 2 and one clear message.

Example::

    python -m ticktock.tables results/runs/* --out results/tables/main --strict
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from ticktock.tables.build import HEADLINE, build_tables, headline_text, print_failures, print_headline, write_outputs
from ticktock.tables.load import Results, TablesError, load_results
from ticktock.tables.render import FORMATS

__all__ = ["build_report", "main", "print_headline"]  # build_report and print_headline serve ticktock.main_job


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m ticktock.tables", description=__doc__.split("\n\n")[0])
    parser.add_argument("results", nargs="+", help="run directories, folders of runs, or globs of either")
    parser.add_argument("--out", type=Path, default=None, help="output folder (default results/tables/<timestamp>)")
    parser.add_argument("--baseline", default="ar", help="decoder every speedup is measured against (default ar)")
    parser.add_argument("--format", default=",".join(FORMATS), help="comma-separated subset of md,csv,tex,html")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a losslessness or quality check fails")
    args = parser.parse_args(argv)
    args.formats = tuple(f.strip() for f in args.format.split(",") if f.strip())
    unknown = [f for f in args.formats if f not in FORMATS]
    if unknown:
        parser.error(f"unknown format(s) {', '.join(unknown)}; choose from {', '.join(FORMATS)}")
    return args


def build_report(results: Results, out: Path, baseline: str = "ar", formats: tuple[str, ...] = FORMATS) -> Path:
    """Write every table, figure and report.html into ``out``; print failures loudly; return report.html's path
    (for ``ticktock.main_job``: ``build_report(load_runs([dir]), Path("results/main/report"))``)."""
    built = build_tables(results, baseline)
    write_outputs(built, results, Path(out), formats)
    print_failures(built.failures)
    return Path(out) / "report.html"


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    out = args.out or Path("results/tables") / time.strftime("%Y-%m-%d_%H-%M-%S")
    try:
        results = load_results(args.results)
        built = build_tables(results, args.baseline)
        written = write_outputs(built, results, out, args.formats)
    except TablesError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    for warning in results.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    print(headline_text(built.tables[: len(HEADLINE)]))
    print_failures(built.failures)
    print(f"{len(results.runs)} runs -> {len(written)} files in {out}" + (f" (open {out / 'report.html'})" if "html" in args.formats else ""))
    return 1 if args.strict and built.failures else 0


if __name__ == "__main__":
    sys.exit(main())
