"""``ticktock bench build --out DIR``: TickTock-Bench from whatever sources are available, in one command.

Every source of ``ticktock.corpus.convert.SOURCES`` is converted with the selection (default ``ticktock_bench``: 95
sessions per task, seed 0; a YAML file listing session ids picks the paper's exact ones; None keeps all) into
``DIR/<source>/`` (``manifest.jsonl``, ``audio/``, ``made_by.json``): the layout the ``ticktock_bench`` task config
reads from ``$TICKTOCK_DATA/tickbench``. A Hub source is read from its Hub id unless a folder is given; a
Full-Duplex-Bench source only when its folder is given (``--src fdb_v3=DIR``). A source that cannot be read (not
given, not cached offline, not in its published layout) is reported and the others go on.

A build that finds no session at all (every source missing) is a ``BenchError``, "nothing built", giving each
source's reason in one line; the empty folders it made are removed (never a file, never a folder that was there).

A rerun resumes: a source whose folder already holds this very conversion (its ``made_by.json`` records the same
source and options, and its manifest is there) is kept as it is, not converted again; the others are tried again.

The report is a table per task: the sessions and 1 s chunks found against the selection's target and the paper's
(760 sessions and 15,883 chunks in all; the paper gives no per-task counts), then what is missing and why.

Example::

    >>> result = build(Path("data/tickbench"), {"fdb_v3": "downloads/fdb_v3_data_released"})  # doctest: +SKIP
    >>> print(report(result))                                                                  # doctest: +SKIP
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from ticktock.corpus.bench import BenchError
from ticktock.corpus.bench.sources import FDB_DOWNLOADS, SOURCE_TASKS, locations
from ticktock.corpus.convert import ConvertError
from ticktock.sessions.hub import hub_reads

PAPER = {"tasks": 8, "sessions": 760, "chunks": 15_883}  # the paper's totals (its Table 1); no per-task counts


@dataclass
class SourceResult:
    """One source of a build: where it was read from, its sessions (empty when missing), why it is missing."""

    source: str
    src: str | None
    sessions: list = field(default_factory=list)
    kept: bool = False  # an earlier build's conversion, kept as it was
    missing: str | None = None
    warnings: Counter = field(default_factory=Counter)


@dataclass
class Build:
    out: Path
    sources: list[SourceResult]
    targets: dict  # task -> sessions the selection asks for (None: all)


def build(out: Path, chosen: dict[str, str], selection: str | None = "ticktock_bench",
          backchannel_gt: str | None = None, overwrite: bool = False) -> Build:
    """Convert every available source into ``out/<source>/`` (module docstring). The Hub is asked once whether it
    can be reached; when it cannot, the Hub sources are read from the local cache only, at once and quietly
    (``ticktock.sessions.hub.offline_when_unreachable``). A build that finds no session at all is a ``BenchError``
    ("nothing built", each source's reason), and the empty folders it made are removed."""
    from ticktock.corpus.convert.selection import load_selection

    out = Path(out)
    picked = load_selection(selection) if selection else None
    folders = [out, *(out / source for source in SOURCE_TASKS)]
    existed = {folder for folder in folders if folder.exists()}
    where = locations(chosen)
    with hub_reads(where.values()):
        results = [build_source(out, source, src, picked, backchannel_gt, overwrite) for source, src in where.items()]
    if not any(result.sessions for result in results):
        remove_empty_folders([folder for folder in reversed(folders) if folder not in existed])
        raise BenchError(f"{out}: nothing built: {why_nothing(results)}")
    return Build(out, results, targets(picked))


def why_nothing(results: list[SourceResult]) -> str:
    """Why no source gave a session: the reason of each source read, then the sources not given, in one line."""
    reasons = [f"{r.source}: {r.missing or 'no session selected'}" for r in results if r.src is not None]
    not_given = [r.source for r in results if r.src is None]
    if not_given:
        reasons.append(f"{', '.join(not_given)}: not given (downloaded by hand; pass --src SOURCE=DIR)")
    return "no source could be read (" + "; ".join(reasons) + ")"


def remove_empty_folders(created: list[Path]) -> None:
    """Remove the folders a build created that hold nothing, innermost first (only empty folders: never a file)."""
    for folder in created:
        for path, _, _ in sorted(os.walk(folder), key=lambda entry: -len(Path(entry[0]).parts)):
            try:
                os.rmdir(path)
            except OSError:  # not empty: something of ours failed half-way, or someone else's file; kept
                pass


def build_source(out: Path, source: str, src: str | None, selection, backchannel_gt, overwrite) -> SourceResult:
    """One source: kept from an earlier build, converted now, or missing with the reason."""
    from ticktock.corpus.convert import convert, made_by, prepare
    from ticktock.corpus.output_folder import OutputFolderError, read_record
    from ticktock.sessions.manifest import load_manifest

    result = SourceResult(source, src)
    if src is None:
        result.missing = f"not given: download {FDB_DOWNLOADS[source]} and pass --src {source}=DIR"
        return result
    gt = backchannel_gt if source == "fdb_v1" else None
    folder = out / source
    try:
        _, options = prepare(source, src, None, None, 1.0, 8.0, None, gt)
        record = read_record(folder)
        if record is not None and record.to_json() == made_by(source, options, selection).to_json() and \
                (folder / "manifest.jsonl").is_file():
            result.sessions, result.kept = load_manifest(folder / "manifest.jsonl"), True
            return result
        conversion = convert(source, src, folder, selection=selection, backchannel_gt=gt, overwrite=overwrite,
                             warn=lambda line: None)
    except (ConvertError, OutputFolderError) as err:
        result.missing = str(err)
        return result
    result.sessions, result.warnings = conversion.sessions, conversion.warnings
    return result


def targets(selection) -> dict:
    """Per task, the sessions the selection asks for (the ids it lists, or ``per_task``; None: every one)."""
    tasks = [task for tasks in SOURCE_TASKS.values() for task in tasks]
    if selection is None:
        return dict.fromkeys(tasks)
    return {task: len(selection.ids[task]) if task in selection.ids else selection.per_task for task in tasks}


def report(result: Build) -> str:
    """The found-vs-target table per task, the totals against the paper's, then what is missing and why."""
    by_task = {}
    for source in result.sources:
        for task in SOURCE_TASKS[source.source]:
            by_task[task] = (source, [s for s in source.sessions if s.task == task])
    lines = [f"{'task':16s} {'sessions':>8s} {'target':>6s} {'chunks':>7s}  source (how)"]
    found_sessions = found_chunks = 0
    for task, (source, sessions) in by_task.items():
        chunks = sum(len(s.chunk_spans()) for s in sessions)
        found_sessions, found_chunks = found_sessions + len(sessions), found_chunks + chunks
        target = result.targets.get(task)
        lines.append(f"{task:16s} {len(sessions):8d} {target if target is not None else 'all':>6} {chunks:7d}  "
                     f"{source.source} ({how(source, len(sessions), target)})")
    known = [t for t in result.targets.values() if t is not None]
    target_total = sum(known) if len(known) == len(result.targets) else "all"
    lines.append(f"{'total':16s} {found_sessions:8d} {target_total:>6} {found_chunks:7d}  "
                 f"paper: {PAPER['sessions']} sessions, {PAPER['chunks']:,} chunks ({PAPER['tasks']} tasks)")
    lines.append(f"-> {result.out}")
    for source in result.sources:
        if source.missing:
            lines.append(f"missing {source.source}: {source.missing}")
        elif source.warnings:
            counts = ", ".join(f"{kind}={n}" for kind, n in sorted(source.warnings.items()))
            lines.append(f"warnings {source.source}: {counts}")
    return "\n".join(lines)


def how(source: SourceResult, found: int, target: int | None) -> str:
    """How a task's sessions came: ``converted``, ``kept from the last build``, ``missing``; ``short`` when the
    source holds fewer than the selection asks for."""
    if source.missing:
        return "missing"
    done = "kept from the last build" if source.kept else "converted"
    return f"{done}; short: {found} of {target}" if target is not None and found < target else done
