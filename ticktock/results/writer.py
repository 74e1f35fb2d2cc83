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
configuration is refused (an identity recorded with absolute paths, by an earlier TickTock, is compared with its
files named as today: ``ticktock.results.file_keys``). A part that cannot be read back (a disk that lost its end; ``unreadable_parts``) is set
aside with its session's other parts in ``parts/unreadable/`` (``set_aside``), so the session is replayed and the
merge never meets it. A sessions part records the fingerprint of the inputs it was replayed from
(``fingerprints()``), so the runner replays a session whose manifest line or audio changed, after ``forget``-ting
its parts. One process writes a directory at a time (``ticktock.results.lock``, taken by the runner).

Example::

    writer = RunWriter(Path("results/runs/x"), identity_config, overwrite=False)
    if session.session_id not in writer.completed():
        writer.write_session(session.session_id, chunk_rows, session_row, forward_rows)
    writer.consolidate()
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from ticktock.results.atomic import atomic_write
from ticktock.results.file_keys import location_free
from ticktock.errors import RunFolderError
from ticktock.results.fingerprint import FIELDS
from ticktock.results.schema import TABLES, with_version
from ticktock.results.writable import results_written

FINGERPRINT = tuple(FIELDS)  # sessions columns: the inputs a completed session was replayed from


class RunDirError(RunFolderError, RuntimeError):
    """The run directory holds a different run (or is unusable)."""


def part_key(session_id: str) -> str:
    """A file-name-safe, collision-free key for a session id."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", session_id)[:80]
    return f"{safe}-{hashlib.sha1(session_id.encode()).hexdigest()[:8]}"


def write_table(path: Path, rows: list[dict] | pa.Table, schema: pa.Schema) -> None:
    """Write rows (or a table) with the versioned schema, atomically; a failed write (disk full, read-only) is a
    ``ResultsWriteError`` naming the file, and leaves every other file as it was."""
    schema = with_version(schema)
    table = rows.cast(schema) if isinstance(rows, pa.Table) else pa.Table.from_pylist(rows, schema=schema)
    with results_written(path), atomic_write(path) as tmp:
        pq.write_table(table, tmp)


def read_previous(path: Path) -> dict:
    """The run.json of the run a folder holds (to resume it), or a ``RunDirError`` naming it when it is not a run's
    run.json (cut short, not JSON, not an object)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as err:
        reason = str(err).splitlines()[0] if str(err).strip() else type(err).__name__
        raise RunDirError(f"{path}: cannot read the run this folder holds ({reason}); choose another hydra.run.dir "
                          "or pass overwrite=true to replace it") from None
    if not isinstance(data, dict):
        raise RunDirError(f"{path}: not a run's run.json (a JSON {type(data).__name__}, not an object); choose another "
                          "hydra.run.dir or pass overwrite=true to replace it")
    return data


def in_schema(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """A part's table with the columns of ``schema`` in its order; a column it lacks (a part written before the
    column existed, e.g. ``profile_sha256`` before schema version 6, kept on resume) is null."""
    for column in schema:
        if column.name not in table.column_names:
            table = table.append_column(column.name, pa.nulls(table.num_rows, column.type))
    return table.select(schema.names)


PARTIAL = "partial"  # the folder (under parts/ and the run folder) of sessions that ended early
UNREADABLE = "unreadable"  # the folder under parts/ where parts that cannot be read are set aside
PART_TABLES = {"": ("sessions", "chunks", "forwards"), PARTIAL: ("sessions", "chunks")}  # folder -> its parts


def unreadable(path: Path) -> str | None:
    """Why a part file cannot be read back, in one line (pyarrow's words, without the path it repeats), or None when
    it can.

    >>> import tempfile
    >>> cut = Path(tempfile.mkdtemp()) / "s.chunks.parquet"; _ = cut.write_bytes(b"PAR1" + bytes(96))
    >>> unreadable(cut)
    'Parquet magic bytes not found in footer. Either the file is corrupted or this is not a parquet file.'
    """
    try:
        pq.read_table(path)
    except (OSError, pa.ArrowException) as err:
        words = (str(err).strip().splitlines() or [type(err).__name__])[0]
        return re.sub(r"^Could not open Parquet input source '.*?': ", "", words)
    return None


def refuse_another_configuration(run_dir: Path, previous_run: dict, identity: dict, known_later: tuple = ()) -> None:
    """A ``RunDirError`` when the run ``run_dir`` holds (its run.json, ``previous_run``) has another identity than
    ``identity``. ``known_later``: identity keys not known yet (a replayed run's ``weights`` before its model is
    built), left out on both sides, so that a run into a folder of another configuration is refused before the
    model is loaded, and refused again, keys and all, once it is.

    >>> refuse_another_configuration(Path("r"), {"identity": {"seed": 0, "weights": "ab"}}, {"seed": 0}, ("weights",))
    >>> refuse_another_configuration(Path("r"), {"identity": {"seed": 0, "weights": "ab"}}, {"seed": 1}, ("weights",))
    Traceback (most recent call last):
    ticktock.results.writer.RunDirError: r holds a run with a different configuration (seed: 0 -> 1); choose another hydra.run.dir or pass overwrite=true
    """
    previous = previous_run.get("identity")
    if isinstance(previous, dict):  # one written when identities held absolute paths: named as today
        previous = {k: v for k, v in location_free(previous).items() if k not in known_later}
    if previous != identity:
        raise RunDirError(f"{run_dir} holds a run with a different configuration ({_difference(previous, identity)}); "
                          "choose another hydra.run.dir or pass overwrite=true")


def refuse_another_run_early(run_dir: Path, identity: dict, known_later: tuple) -> None:
    """``refuse_another_configuration`` for the folder ``run_dir`` before anything of the run is built; nothing when
    it holds no run.json (a new run: the writer checks again, and reads a bad run.json, under the folder's lock)."""
    existing = Path(run_dir) / "run.json"
    if existing.is_file():
        refuse_another_configuration(Path(run_dir), read_previous(existing), identity, known_later)


class RunWriter:
    def __init__(self, run_dir: Path, identity: dict, overwrite: bool = False):
        self.run_dir = Path(run_dir)
        self.parts = self.run_dir / "parts"
        self.identity = identity
        self.previous: dict | None = None  # the run.json of the run resumed (None: a new run)
        existing = self.run_dir / "run.json"
        if overwrite:
            self._clear()
        elif existing.is_file():
            self.previous = read_previous(existing)
            refuse_another_configuration(self.run_dir, self.previous, identity)
        with results_written(self.parts):
            self.parts.mkdir(parents=True, exist_ok=True)

    def _clear(self) -> None:  # run.lock stays: the running process holds it
        if self.parts.is_dir():
            shutil.rmtree(self.parts)
        if (self.run_dir / PARTIAL).is_dir():
            shutil.rmtree(self.run_dir / PARTIAL)
        for name in [*(f"{t}.parquet" for t in TABLES), "run.json"]:
            (self.run_dir / name).unlink(missing_ok=True)

    def unreadable_parts(self) -> dict[str, tuple[Path, str]]:
        """The sessions (by part key, ``part_key``) of which a part cannot be read back, completed or partial: key ->
        the first such file and why (``unreadable``). Every part of each session marked complete is read."""
        found = {}
        for folder, names in PART_TABLES.items():
            where = self.parts / folder
            for mark in sorted(where.glob("*.sessions.parquet")):
                key = mark.name.removesuffix(".sessions.parquet")
                for name in names:
                    path = where / f"{key}.{name}.parquet"
                    reason = unreadable(path) if path.exists() else "missing"
                    if reason is not None and key not in found:
                        found[key] = (path, reason)
        return found

    def set_aside(self, key: str) -> Path:
        """Move every part of the session ``key`` (completed and partial) into ``parts/unreadable/`` (its sessions
        part, the completion mark, first): it is no longer complete, and nothing written is deleted. The folder."""
        aside = self.parts / UNREADABLE
        with results_written(aside):
            aside.mkdir(parents=True, exist_ok=True)
            for folder, names in PART_TABLES.items():
                for name in names:
                    path = self.parts / folder / f"{key}.{name}.parquet"
                    if path.exists():
                        path.replace(aside / f"{folder + '.' if folder else ''}{path.name}")
        return aside

    def completed(self) -> set[str]:
        done = set()
        for path in self.parts.glob("*.sessions.parquet"):
            done.update(pq.read_table(path, columns=["session_id"]).column("session_id").to_pylist())
        return done

    def fingerprints(self) -> dict[str, dict]:
        """Completed session id -> the input fingerprint its sessions part recorded (``manifest_sha256``,
        ``audio_sha256``, ``profile_sha256``; None where a part holds none)."""
        recorded = {}
        for path in self.parts.glob("*.sessions.parquet"):
            table = pq.read_table(path)
            for row in table.select([c for c in ("session_id", *FINGERPRINT) if c in table.column_names]).to_pylist():
                recorded[row["session_id"]] = {key: row.get(key) for key in FINGERPRINT}
        return recorded

    def forget(self, session_id: str) -> None:
        """Remove a session's parts, its sessions part (the completion mark) first: it is no longer complete."""
        key = part_key(session_id)
        for name in ("sessions", "chunks", "forwards"):
            (self.parts / f"{key}.{name}.parquet").unlink(missing_ok=True)

    def write_session(self, session_id: str, chunks: list[dict], session: dict, forwards: list[dict]) -> None:
        """Write a completed session's parts (its sessions part last: the completion mark); a partial record of it
        from an earlier attempt goes."""
        key = part_key(session_id)
        write_table(self.parts / f"{key}.chunks.parquet", chunks, TABLES["chunks"])
        write_table(self.parts / f"{key}.forwards.parquet", forwards, TABLES["forwards"])
        write_table(self.parts / f"{key}.sessions.parquet", [session], TABLES["sessions"])
        for name in ("sessions", "chunks"):
            (self.parts / PARTIAL / f"{key}.{name}.parquet").unlink(missing_ok=True)

    def write_partial(self, session_id: str, chunks: list[dict], session: dict) -> None:
        """Write what a session that ended early decided (``parts/partial/``): it stays out of the run's tables and
        of the completed sessions, so a rerun replays it (and ``write_session`` then removes this record); the
        run folder's ``partial/`` tables gather them (``consolidate``)."""
        key, folder = part_key(session_id), self.parts / PARTIAL
        with results_written(folder):
            folder.mkdir(parents=True, exist_ok=True)
        write_table(folder / f"{key}.chunks.parquet", chunks, TABLES["chunks"])
        write_table(folder / f"{key}.sessions.parquet", [session], TABLES["sessions"])

    def consolidate(self) -> dict[str, int]:
        """Rewrite the three top-level tables from the completed parts, and ``partial/`` from the partial ones
        (removed when there are none); returns the completed tables' row counts (``partial_chunks`` too, when any)."""
        counts = self._gather(self.parts, self.run_dir, TABLES)
        partial = {name: TABLES[name] for name in ("sessions", "chunks")}
        if any((self.parts / PARTIAL).glob("*.sessions.parquet")):
            with results_written(self.run_dir / PARTIAL):
                (self.run_dir / PARTIAL).mkdir(exist_ok=True)
            counts["partial_chunks"] = self._gather(self.parts / PARTIAL, self.run_dir / PARTIAL, partial)["chunks"]
        elif (self.run_dir / PARTIAL).is_dir():
            shutil.rmtree(self.run_dir / PARTIAL)
        return counts

    @staticmethod
    def _gather(parts: Path, into: Path, tables: dict) -> dict[str, int]:
        complete = {p.name.removesuffix(".sessions.parquet") for p in parts.glob("*.sessions.parquet")}
        counts = {}
        for name, schema in tables.items():
            paths = sorted(parts / f"{key}.{name}.parquet" for key in complete)
            found = [in_schema(pq.read_table(p), schema) for p in paths]
            table = pa.concat_tables(found) if found else pa.Table.from_pylist([], schema=schema)
            write_table(into / f"{name}.parquet", table, schema)
            counts[name] = table.num_rows
        return counts

    def write_run_json(self, data: dict) -> None:
        data = {**data, "identity": self.identity}
        with results_written(self.run_dir / "run.json"), atomic_write(self.run_dir / "run.json") as tmp:
            tmp.write_text(json.dumps(data, indent=2, sort_keys=True, default=str) + "\n", encoding="utf-8")


def _difference(previous, current) -> str:
    if not isinstance(previous, dict):
        return "no identity recorded"
    keys = sorted(k for k in set(previous) | set(current) if previous.get(k) != current.get(k))
    return ", ".join(f"{k}: {previous.get(k)!r} -> {current.get(k)!r}" for k in keys[:4])
