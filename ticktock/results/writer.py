"""A run directory on disk: durable per-session parts, consolidated tables and run.json.

Layout::

    <run dir>/run.json                      resolved config, versions, git sha, device, clock, status
    <run dir>/chunks.parquet                all completed sessions (consolidated at the end of a run,
    <run dir>/sessions.parquet              also when it is interrupted)
    <run dir>/forwards.parquet
    <run dir>/parts/<session>.{chunks,forwards,sessions}.parquet   one set per completed session

Every file is written to a temporary name and renamed, so a crash never leaves a partial file. A
session is complete when its ``sessions`` part exists (written last). Rerunning into the same directory
skips completed sessions (resume) unless ``overwrite`` is set; a directory holding a run with a different
configuration is refused.

Example::

    writer = RunWriter(Path("results/runs/x"), identity_config, overwrite=False)
    if session.session_id not in writer.completed():
        writer.write_session(session.session_id, chunk_rows, session_row, forward_rows)
    writer.consolidate()
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from ticktock.manifest import atomic_write_text
from ticktock.results.schema import TABLES, with_version


class RunDirError(RuntimeError):
    """The run directory holds a different run (or is unusable)."""


def part_key(session_id: str) -> str:
    """A file-name-safe, collision-free key for a session id."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", session_id)[:80]
    return f"{safe}-{hashlib.sha1(session_id.encode()).hexdigest()[:8]}"


def write_table(path: Path, rows: list[dict] | pa.Table, schema: pa.Schema) -> None:
    """Write rows (or a table) with the versioned schema, atomically."""
    schema = with_version(schema)
    table = rows.cast(schema) if isinstance(rows, pa.Table) else pa.Table.from_pylist(rows, schema=schema)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        pq.write_table(table, tmp)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class RunWriter:
    def __init__(self, run_dir: Path, identity: dict, overwrite: bool = False):
        self.run_dir = Path(run_dir)
        self.parts = self.run_dir / "parts"
        self.identity = identity
        existing = self.run_dir / "run.json"
        if overwrite:
            self._clear()
        elif existing.is_file():
            previous = json.loads(existing.read_text()).get("identity")
            if previous != identity:
                raise RunDirError(
                    f"{self.run_dir} holds a run with a different configuration ({_difference(previous, identity)}); "
                    "choose another hydra.run.dir or pass overwrite=true"
                )
        self.parts.mkdir(parents=True, exist_ok=True)

    def _clear(self) -> None:
        if self.parts.is_dir():
            shutil.rmtree(self.parts)
        for name in [*(f"{t}.parquet" for t in TABLES), "run.json"]:
            (self.run_dir / name).unlink(missing_ok=True)

    def completed(self) -> set[str]:
        done = set()
        for path in self.parts.glob("*.sessions.parquet"):
            done.update(pq.read_table(path, columns=["session_id"]).column("session_id").to_pylist())
        return done

    def write_session(self, session_id: str, chunks: list[dict], session: dict, forwards: list[dict]) -> None:
        key = part_key(session_id)
        write_table(self.parts / f"{key}.chunks.parquet", chunks, TABLES["chunks"])
        write_table(self.parts / f"{key}.forwards.parquet", forwards, TABLES["forwards"])
        write_table(self.parts / f"{key}.sessions.parquet", [session], TABLES["sessions"])

    def consolidate(self) -> dict[str, int]:
        """Rewrite the three top-level tables from the completed parts; returns row counts."""
        complete = {p.name.removesuffix(".sessions.parquet") for p in self.parts.glob("*.sessions.parquet")}
        counts = {}
        for name, schema in TABLES.items():
            paths = sorted(self.parts / f"{key}.{name}.parquet" for key in complete)
            tables = [pq.read_table(p) for p in paths]
            table = pa.concat_tables(tables) if tables else pa.Table.from_pylist([], schema=schema)
            write_table(self.run_dir / f"{name}.parquet", table, schema)
            counts[name] = table.num_rows
        return counts

    def write_run_json(self, data: dict) -> None:
        data = {**data, "identity": self.identity}
        atomic_write_text(self.run_dir / "run.json", json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")


def _difference(previous, current) -> str:
    if not isinstance(previous, dict):
        return "no identity recorded"
    keys = sorted(k for k in set(previous) | set(current) if previous.get(k) != current.get(k))
    return ", ".join(f"{k}: {previous.get(k)!r} -> {current.get(k)!r}" for k in keys[:4])
