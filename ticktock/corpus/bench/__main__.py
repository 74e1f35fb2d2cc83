"""TickTock-Bench as a Hugging Face dataset: ``ticktock bench fetch | build | export``.

Usage::

    python -m ticktock.corpus.bench fetch [SOURCE ...] [--src SOURCE=ID_OR_FOLDER ...]
    python -m ticktock.corpus.bench build --out DIR [--src SOURCE=ID_OR_FOLDER ...] [--selection NAME|FILE | --all]
                                          [--backchannel-gt FILE] [--overwrite]
    python -m ticktock.corpus.bench export CORPUS [CORPUS ...] --out DIR [--name NAME] [--overwrite]
                                           [--push-to-hub REPO [--private]]

``fetch`` puts the Hub sources (``openaudiobench``, ``voicebench_alpacaeval``, ``big_bench_audio``; default: all three,
from their Hub ids) into the local Hugging Face cache, so that ``build`` and ``convert`` run offline later
(``HF_HUB_OFFLINE=1``). ``build`` assembles TickTock-Bench from every source it finds (``ticktock.corpus.bench.build``).
``export`` writes a corpus as a dataset in the Hub's layout (``ticktock.corpus.bench.export``); ``--push-to-hub``
then uploads it (network and a Hub login needed). An error is one line, ``ticktock: error: ...`` (exit 2 for a bad
option such as ``--src nope=DIR``, 3 for bad input or a build that found nothing, 4 for an output folder that must not
be written). Without ``HF_HUB_OFFLINE``, ``fetch`` and ``build`` ask the Hub once whether it can be reached, and work
offline at once when it cannot (``ticktock.sessions.hub.offline_when_unreachable``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Sequence

from ticktock.corpus.bench import BenchError, BenchOptionError
from ticktock.errors import shown


def source_folders(pairs: Sequence[str]) -> dict[str, str]:
    """``--src SOURCE=ID_OR_FOLDER`` options as a mapping (a source named twice: the last one); a malformed one or
    an unknown source is a ``BenchOptionError`` naming it and the sources there are (exit 2, before any work)."""
    from ticktock.corpus.convert import SOURCES

    chosen = {}
    for pair in pairs:
        source, sep, where = (part.strip() for part in pair.partition("="))
        if not sep or not source or not where:
            raise BenchOptionError(f"--src {shown(pair)}: expected SOURCE=ID_OR_FOLDER, SOURCE one of "
                                   f"{', '.join(SOURCES)}")
        if source not in SOURCES:
            raise BenchOptionError(f"--src {shown(pair)}: no source {shown(source)}; the sources: {', '.join(SOURCES)}")
        chosen[source] = where
    return chosen


def parser() -> argparse.ArgumentParser:
    from ticktock.corpus.convert.hub import HUB_IDS

    main = argparse.ArgumentParser(prog="python -m ticktock.corpus.bench", description=__doc__.split("\n\n")[0])
    commands = main.add_subparsers(dest="command", required=True)
    fetch = commands.add_parser("fetch", help="put the Hub sources into the local Hugging Face cache")
    fetch.add_argument("sources", nargs="*", metavar="SOURCE", help=f"which ({', '.join(HUB_IDS)}; default: all)")
    fetch.add_argument("--src", action="append", default=[], metavar="SOURCE=ID_OR_FOLDER",
                       help="another Hub id (or a local copy) of a source")
    build = commands.add_parser("build", help="assemble TickTock-Bench from the available sources")
    build.add_argument("--out", required=True, help="the data root: one converted corpus per source, DIR/<source>/")
    build.add_argument("--src", action="append", default=[], metavar="SOURCE=ID_OR_FOLDER",
                       help="where a source is (default: its Hub id for the Hub sources; FDB sources need a folder)")
    build.add_argument("--selection", default="ticktock_bench", metavar="NAME|FILE",
                       help="the sessions kept (default ticktock_bench: 95 per task, seed 0; or a YAML file of ids)")
    build.add_argument("--all", action="store_true", help="keep every session (no selection)")
    build.add_argument("--backchannel-gt", default=None, metavar="FILE", help="fdb_v1: icc_gt_distribution.json")
    build.add_argument("--overwrite", action="store_true", help="replace corpora not written by this build")
    export = commands.add_parser("export", help="write a corpus as a Hugging Face dataset (one config per task)")
    export.add_argument("corpus", nargs="+", help="a corpus folder holding manifest.jsonl, that file, or a folder of "
                                                  "corpus folders (the output of build)")
    export.add_argument("--out", required=True, help="the dataset folder to write")
    export.add_argument("--name", default="TickTock-Bench", help="the dataset's name on its card")
    export.add_argument("--overwrite", action="store_true", help="write into a folder holding something else")
    export.add_argument("--push-to-hub", default=None, metavar="REPO", help="then upload it to this Hub dataset")
    export.add_argument("--private", action="store_true", help="with --push-to-hub: create the repository private")
    return main


def run_fetch(args: argparse.Namespace) -> int:
    from ticktock.sessions.hub import hub_reads
    from ticktock.corpus.bench.sources import fetch, locations

    chosen = source_folders(args.src)
    with hub_reads(locations(chosen).values()):  # no Hub: the cached copies at once, not half a minute of retries
        for line in fetch(args.sources or None, chosen):
            print(line)
    return 0


def run_build(args: argparse.Namespace) -> int:
    from ticktock.corpus.bench.build import build, report

    result = build(Path(args.out), source_folders(args.src), selection=None if args.all else args.selection,
                   backchannel_gt=args.backchannel_gt, overwrite=args.overwrite)
    print(report(result))
    return 0


def run_export(args: argparse.Namespace) -> int:
    from ticktock.corpus.bench.export import export, push_to_hub

    result = export([Path(c) for c in args.corpus], Path(args.out), name=args.name, repo=args.push_to_hub,
                    overwrite=args.overwrite)
    for row in result.rows:
        print(f"{row.task:16s} sessions={row.sessions:4d} chunks={row.chunks:6d}")
    print(f"total            sessions={sum(r.sessions for r in result.rows):4d} "
          f"chunks={sum(r.chunks for r in result.rows):6d} -> {result.out}")
    if args.push_to_hub:
        push_to_hub(result.out, args.push_to_hub, [row.task for row in result.rows], private=args.private or None)
        print(f"pushed to the Hub dataset {args.push_to_hub}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run one bench command; a source error (``ConvertError``) becomes a ``BenchError`` line."""
    from ticktock.corpus.convert import ConvertError

    args = parser().parse_args(argv)
    commands = {"fetch": run_fetch, "build": run_build, "export": run_export}
    try:
        return commands[args.command](args)
    except ConvertError as err:
        raise BenchError(str(err)) from None


if __name__ == "__main__":
    from ticktock.errors import user_errors

    with user_errors():
        sys.exit(main())
