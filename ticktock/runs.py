"""``python -m ticktock.runs <folder>...``: the runs under folders, one line each, and where each one stands.

Columns: run id; model/decoder/clock/task; shard (``2/4``: shard 2 of a run split over 4 jobs, ``-``: a whole
run); status (complete, running, interrupted, failed: read from run.json and the run's heartbeat,
``ticktock.results.liveness``; ``complete, 1 failed``: a session the per-chunk watchdog stopped, retried by a
rerun); sessions done / total (completed per-session parts); the last heartbeat and how long ago it was. Below the table, one line per sharded run: its shards present and missing, how many are in
each state, and its sessions done of the whole split (``ticktock.replay.shards``). A run folder whose run.json cannot be read,
or is not of a run.json's shape (``ticktock.results.runjson``: a list, a missing key, a value of the wrong kind),
is listed as "unreadable" with the reason. Reads only run.json and file names (no parquet, no torch); exits 2 with
one line (``ticktock: error: ...``) when a folder does not exist or holds no runs.

Example::

    python -m ticktock.runs results/runs

    >>> print(format_rows([{"run": "m-ar-modeled-1a2b3c4d", "what": "m/ar/modeled/mini", "shard": "-",
    ...                     "status": "interrupted", "sessions": "3/8", "heartbeat": "2025-01-02 03:04:05 (2 h ago)",
    ...                     "path": "results/x"}]))
    run                    model/decoder/clock/task  shard  status       sessions  last heartbeat                 path
    m-ar-modeled-1a2b3c4d  m/ar/modeled/mini         -      interrupted  3/8       2025-01-02 03:04:05 (2 h ago)  results/x
    >>> ago(75.0), ago(7200.0), ago(3 * 86400.0)
    ('1 min ago', '2 h ago', '3 d ago')
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from ticktock.results.liveness import run_state
from ticktock.results.runjson import shape_problem

COLUMNS = {"run": "run", "what": "model/decoder/clock/task", "shard": "shard", "status": "status",
           "sessions": "sessions", "heartbeat": "last heartbeat", "path": "path"}


def run_folders(folder: Path) -> list[Path]:
    """Every run folder (holding run.json) at or under ``folder``, not looking inside a run's parts."""
    if (folder / "run.json").is_file():
        return [folder]
    return sorted(p.parent for p in folder.rglob("run.json") if "parts" not in p.parent.relative_to(folder).parts)


def ago(seconds: float) -> str:
    for unit, size in (("d", 86400.0), ("h", 3600.0), ("min", 60.0)):
        if seconds >= size:
            return f"{seconds / size:.0f} {unit} ago"
    return f"{seconds:.0f} s ago"


def describe(path: Path, now: float | None = None) -> dict:
    """One row: what the run is and where it stands."""
    now = time.time() if now is None else now
    try:
        meta = json.loads((path / "run.json").read_text(encoding="utf-8"))
        mtime = (path / "run.json").stat().st_mtime
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as err:
        return unreadable(path, f"{type(err).__name__}: {err}")
    problem = shape_problem(meta)
    if problem:
        return unreadable(path, f"run.json {problem}")
    config = meta["config"]
    names = [(config.get(k) or {}).get("name") or "?" for k in ("model", "decoder", "clock", "task")]
    beat = meta.get("heartbeat") or {}
    updated = beat.get("updated")
    updated = mtime if updated is None else updated
    done = len(list((path / "parts").glob("*.sessions.parquet")))
    shard = meta.get("shard") or {}
    return {"run": meta.get("run_id", path.name), "what": "/".join(map(str, names)),
            "shard": f"{shard['index']}/{shard['count']}" if int(shard.get("count", 1)) > 1 else "-",
            "status": run_state(meta, mtime, now) + failed_note(meta), "sessions": f"{done}/{meta.get('sessions_total', '?')}",
            "heartbeat": f"{time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(updated))} ({ago(max(0.0, now - updated))})",
            "path": str(path), "meta": meta, "done": done}


def failed_note(meta: dict) -> str:
    """What the status adds for sessions the per-chunk watchdog stopped (run.json ``failed_sessions``): a rerun
    into the folder retries them.

    >>> failed_note({"failed_sessions": [{"session_id": "s1", "error": "..."}]}), failed_note({})
    (', 1 failed', '')
    """
    failed = meta.get("failed_sessions") or []
    return f", {len(failed)} failed" if failed else ""


def unreadable(path: Path, reason: str) -> dict:
    """The row of a run folder whose run.json cannot be used: the reason, on one line, as its status."""
    line = " ".join(str(reason).split())
    return {"run": path.name, "what": "?", "shard": "?", "status": f"unreadable: {line[:200]}", "sessions": "?",
            "heartbeat": "?", "path": str(path), "meta": None}


def split_lines(rows: list[dict]) -> list[str]:
    """One line per sharded run among the rows: its shards present and missing, their states, sessions done
    (``ticktock.replay.shards.Split.summary``)."""
    from ticktock.replay.shards import group_splits

    readable = [(Path(r["path"]), r["meta"], r["status"], r["done"]) for r in rows if r.get("meta") is not None]
    return [split.summary() for split in group_splits(readable)]


def format_rows(rows: list[dict]) -> str:
    """The rows as an aligned text table with a header."""
    table = [list(COLUMNS.values())] + [[str(row[key]) for key in COLUMNS] for row in rows]
    widths = [max(len(line[i]) for line in table) for i in range(len(COLUMNS))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(line, widths)).rstrip() for line in table)


class RunsParser(argparse.ArgumentParser):
    """argparse whose mistakes are one ``ticktock: error:`` line (exit 2), as every other mistake here, not its
    usage block.

    >>> RunsParser(prog="python -m ticktock.runs").error("the following arguments are required: folders")
    Traceback (most recent call last):
    ...
    SystemExit: 2
    """

    def error(self, message: str):
        print(f"ticktock: error: runs: {message} (usage: python -m ticktock.runs FOLDER [FOLDER ...])",
              file=sys.stderr)
        raise SystemExit(2)


def main(argv: list[str] | None = None) -> int:
    parser = RunsParser(prog="python -m ticktock.runs", description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="+", type=Path, help="folders holding run folders (searched recursively)")
    args = parser.parse_args(argv)
    rows = []
    for folder in args.folders:
        if not folder.is_dir():
            print(f"ticktock: error: {folder}: no such folder", file=sys.stderr)
            return 2
        found = run_folders(folder)
        if not found:
            print(f"ticktock: error: {folder}: no runs found (a run folder holds run.json)", file=sys.stderr)
            return 2
        rows += [describe(path) for path in found]
    print(format_rows(rows))
    splits = split_lines(rows)
    if splits:
        print("\n" + "\n".join(splits))
    return 0


if __name__ == "__main__":
    sys.exit(main())
