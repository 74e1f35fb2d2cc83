"""Find result runs on disk, validate them, and group them into cells (setup x decoder).

A run directory holds ``run.json`` and the three tables of ``ticktock.results.schema``. Every argument of
the tables command is a run directory, a folder searched recursively for run directories, or a glob of
either. Runs are grouped by **setup** (model, clock and profile, device, sampling, seed, and how many sessions
shared the device: ``concurrency.sessions`` N, batching, max_batch, stagger and the draft policy): only runs of
the same setup are ever compared. Within a setup, runs of the same decoder form one **cell**; several runs may
share a cell when they hold disjoint sessions (e.g. one run per task, or the shards of a sharded run: all of them,
each once, complete; ``check_splits``), never the same chunk twice.

A run with N = 1 and no batching replays one session alone on the device: its draft policy, max_batch and
stagger do not apply and are not part of its setup. Every other run is a **concurrency run**: the tables
of one session at a time (Tables 2-7, Figures 4a-4b, losslessness, quality) use only the single-session runs
(``Results.single_session``: all runs when there are no single-session runs); Figure 4c uses them all.

Nothing here imports torch or model code: the tables are a pure function of the files.

An unreadable run (a truncated parquet file, a broken run.json) stops the build with one line naming the file,
unless ``skip_bad_runs``: then it is left out, listed in ``Results.skipped`` and in every table's provenance. An
**interrupted** run (run.json says "interrupted", or still "running" while its process is gone:
``ticktock.results.liveness``) is refused the same way unless ``allow_interrupted``: then its completed sessions
are used (from its per-session parts when it was killed before consolidating) and the provenance says so.

Example::

    >>> results = load_results(["results/runs/*"])          # doctest: +SKIP
    >>> [(c.setup.model, c.decoder, len(c.chunks)) for c in results.cells]   # doctest: +SKIP
    [('fixture', 'ar', 24), ('fixture', 'speclisten', 24)]
"""

from __future__ import annotations

import glob
import json
from dataclasses import dataclass, field, replace
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ticktock.decoders import DECODERS
from ticktock.results.liveness import interruption
from ticktock.results.schema import SCHEMA_VERSION, TABLES

VERSION_KEY = b"ticktock_schema_version"
GLOB_CHARS = set("*?[")


class TablesError(RuntimeError):
    """The results cannot be turned into tables (missing, malformed or inconsistent runs)."""


@dataclass(frozen=True)
class Setup:
    """What must be equal for two runs to be compared: everything but the decoder (and the task)."""

    model: str
    clock: str  # "modeled:a100-8b-derived", "wall"
    device: str
    temperature: float
    top_k: int
    top_p: float
    seed: int
    concurrency: int = 1  # N: sessions sharing the device (concurrency.sessions)
    batching: bool = False
    max_batch: int | None = None  # only with batching
    stagger: str = ""  # only for a shared device: "random" or a number of ms
    draft_policy: str = ""  # only for a shared device: the policy's name
    draft_policy_args: str = ""  # its other settings (canonical JSON, "" when none)

    @property
    def shares_device(self) -> bool:
        """A concurrency run: several sessions at once, or batching (``ConcurrencySettings.shares_device``)."""
        return self.concurrency > 1 or self.batching

    def sharing(self) -> tuple:
        """The concurrency fields: how the device was shared."""
        return (self.concurrency, self.batching, self.max_batch, self.stagger, self.draft_policy, self.draft_policy_args)

    def without_temperature(self) -> tuple:
        return (self.model, self.clock, self.device, self.top_k, self.top_p, self.seed, *self.sharing())

    def without_sharing(self) -> tuple:
        """Everything but the concurrency fields (Figure 4c compares N within this)."""
        return (self.model, self.clock, self.device, self.temperature, self.top_k, self.top_p, self.seed)


@dataclass
class Run:
    """One run directory: its run.json and its chunks and sessions tables."""

    path: Path
    meta: dict
    chunks: pd.DataFrame
    sessions: pd.DataFrame
    note: str | None = None  # an interrupted run used anyway: what was used
    _forwards: pd.DataFrame | None = field(default=None, repr=False, compare=False)
    _forwards_by_session: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def decoder(self) -> str:
        return self.meta["config"]["decoder"]["name"]

    @property
    def run_id(self) -> str:
        return self.meta.get("run_id", self.path.name)

    @property
    def shard(self) -> str:
        """``"1 of 4"`` for a shard of a sharded run, ``""`` for a whole run."""
        shard = self.meta.get("shard") or {}
        return f"{shard['index']} of {shard['count']}" if int(shard.get("count", 1)) > 1 else ""

    @property
    def status(self) -> str:
        return "interrupted" if self.note else str(self.meta.get("status", "unknown"))

    def forwards(self, session_id: str | None = None) -> pd.DataFrame:
        """The run's forwards table (``ticktock.results.schema``), read when first asked for (the tables of
        aggregates never need it); one session's rows with ``session_id``."""
        if self._forwards is None:
            killed = self.note is not None and self.meta.get("status") == "running"
            self._forwards = (_read_parts(self.path, "forwards") if killed
                              else _read_table(self.path / "forwards.parquet", "forwards"))
            self._forwards_by_session = dict(tuple(self._forwards.groupby("session_id", sort=False)))
        if session_id is None:
            return self._forwards
        return self._forwards_by_session.get(session_id, self._forwards.iloc[:0])

    def setup(self) -> Setup:
        config, clock = self.meta["config"], self.meta.get("clock") or {}
        sampling = config.get("sampling") or {}
        label = clock.get("name") or config["clock"]["name"]
        if clock.get("profile"):
            label = f"{label}:{clock['profile']}"
        return Setup(
            model=config["model"]["name"],
            clock=label,
            device=device_of(self.meta),
            temperature=float(sampling.get("temperature", 0.0)),
            top_k=int(sampling.get("top_k", 0)),
            top_p=float(sampling.get("top_p", 1.0)),
            seed=int(config.get("seed", 0)),
            **sharing_of(config),
        )


def sharing_of(config: dict) -> dict:
    """The concurrency fields of a run's setup from its config (``concurrency``, ``draft_policy``); a run without
    them, or with N = 1 and no batching, is a single session alone on the device.

    >>> sharing_of({"concurrency": {"sessions": 1, "stagger": "random"}, "draft_policy": {"name": "round_robin"}})
    {'concurrency': 1, 'batching': False}
    >>> shared = sharing_of({"concurrency": {"sessions": 4, "batching": False, "max_batch": 8, "stagger": 50},
    ...                      "draft_policy": {"name": "expected_savings", "_target_": "x.Y", "speech_dbfs": -45.0}})
    >>> shared["max_batch"], shared["stagger"], shared["draft_policy"], shared["draft_policy_args"]
    (None, '50', 'expected_savings', '{"speech_dbfs": -45.0}')
    """
    concurrency = config.get("concurrency") or {}
    sessions, batching = int(concurrency.get("sessions") or 1), bool(concurrency.get("batching", False))
    fields = {"concurrency": sessions, "batching": batching}
    if sessions == 1 and not batching:
        return fields
    policy = dict(config.get("draft_policy") or {})
    name = str(policy.pop("name", "") or "")
    policy.pop("_target_", None)
    max_batch = concurrency.get("max_batch") if batching else None
    return {**fields, "max_batch": None if max_batch is None else int(max_batch),
            "stagger": _stagger(concurrency.get("stagger", "random")), "draft_policy": name,
            "draft_policy_args": json.dumps(policy, sort_keys=True) if policy else ""}


def device_of(meta: dict) -> str:
    """The device the latencies stand for: the cost profile's for a modeled clock, else the machine's."""
    clock, env = meta.get("clock") or {}, meta.get("environment") or {}
    if clock.get("profile_device"):
        return str(clock["profile_device"])
    return str(env.get("cuda_device") or env.get("cpu") or "unknown device")


def _stagger(value) -> str:
    """``concurrency.stagger`` as one text per value: "random", or the milliseconds ("50" for 50 and 50.0)."""
    try:
        return f"{float(value):g}"
    except (TypeError, ValueError):
        return str(value)


@dataclass
class Cell:
    """All runs of one decoder in one setup, with their rows concatenated."""

    setup: Setup
    decoder: str
    runs: list[Run]
    chunks: pd.DataFrame = field(repr=False)
    sessions: pd.DataFrame = field(repr=False)

    @property
    def names(self) -> str:
        return ", ".join(str(r.path) for r in self.runs)

    @property
    def meta(self) -> dict:
        return self.runs[0].meta


@dataclass
class Results:
    runs: list[Run]
    cells: list[Cell]
    warnings: list[str]
    skipped: list[str] = field(default_factory=list)  # runs left out (skip_bad_runs): one line each, naming the file
    scope: list[str] = field(default_factory=list)  # which of the runs a view uses, when not all (single_session)
    incomplete: list[str] = field(default_factory=list)  # sharded runs built without some shards (check_splits)

    def provenance(self) -> list[str]:
        """What the tables must say about the runs used: interrupted runs used anyway, runs skipped, sharded runs
        missing shards, and which runs a view uses (``single_session``)."""
        return ([r.note for r in self.runs if r.note] + [f"skipped: {reason}" for reason in self.skipped]
                + self.incomplete + self.scope)

    def single_session(self) -> "Results":
        """The results of one session alone on the device (N = 1, no batching), as the tables of one session at a
        time compare; concurrency runs only when there is nothing else (said in ``scope``). Idempotent."""
        alone = [c for c in self.cells if not c.setup.shares_device]
        if len(alone) == len(self.cells):
            return self
        if alone:
            return replace(self, cells=alone)
        ns = ", ".join(f"N={n}" for n in sorted({c.setup.concurrency for c in self.cells}))
        note = (f"no single-session runs (concurrency.sessions=1 without batching): these tables use the concurrency "
                f"runs ({ns}), each N its own setup")
        return replace(self, scope=self.scope if note in self.scope else [*self.scope, note])

    def setups(self) -> list[Setup]:
        return sorted({c.setup for c in self.cells}, key=setup_order)

    def cell(self, setup: Setup, decoder: str) -> Cell | None:
        return next((c for c in self.cells if c.setup == setup and c.decoder == decoder), None)

    def in_setup(self, setup: Setup) -> list[Cell]:
        return sorted((c for c in self.cells if c.setup == setup), key=lambda c: decoder_order(c.decoder))


def decoder_order(name: str) -> tuple:
    """Sort key: the benchmark's decoders in ``DECODERS`` order, then any other decoder by name."""
    return (DECODERS.index(name), "") if name in DECODERS else (len(DECODERS), name)


def setup_order(setup: Setup) -> tuple:
    return (setup.model, setup.clock, setup.device, setup.temperature, setup.top_k, setup.top_p, setup.seed,
            setup.concurrency, setup.batching, setup.max_batch or 0, setup.stagger, setup.draft_policy,
            setup.draft_policy_args)


def discover(arguments: list[str | Path]) -> list[Path]:
    """Run directories (holding run.json) named by the arguments; a clear error when there are none."""
    if not arguments:
        raise TablesError("no results given: pass run directories, folders of runs, or globs")
    found: list[Path] = []
    for argument in map(str, arguments):
        paths = [Path(p) for p in sorted(glob.glob(argument, recursive=True))] if GLOB_CHARS & set(argument) else [Path(argument)]
        if not paths or not any(p.exists() for p in paths):
            raise TablesError(f"{argument}: no such file or folder")
        runs = [d for p in paths for d in _run_dirs(p)]
        if not runs:
            raise TablesError(f"{argument}: no result runs found (a run directory holds run.json and chunks.parquet)")
        found += [r for r in runs if r not in found]
    return found


def _run_dirs(path: Path) -> list[Path]:
    if path.is_file():
        return [path.parent] if path.name == "run.json" else []
    if (path / "run.json").is_file():
        return [path]
    return sorted(p.parent for p in path.rglob("run.json") if "parts" not in p.parent.parts[len(path.parts):])


def read_run(path: Path, allow_interrupted: bool = False) -> Run:
    """One run directory, with its schema versions checked (run.json and every parquet file); an interrupted
    run is refused unless ``allow_interrupted`` (see the module docstring)."""
    meta_path = path / "run.json"
    try:
        meta = json.loads(meta_path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise TablesError(f"{meta_path}: cannot read run.json ({err})") from None
    if not isinstance(meta, dict):
        raise TablesError(f"{meta_path}: not a ticktock run.json (a JSON {type(meta).__name__}, not an object)")
    version = meta.get("schema_version")
    if version != SCHEMA_VERSION:
        raise TablesError(f"{meta_path}: schema_version {version!r}, but these tables read version {SCHEMA_VERSION}; "
                          "rebuild the tables with the ticktock version that wrote the run, or rerun it")
    if "config" not in meta:
        raise TablesError(f"{meta_path}: no 'config' (not a ticktock run.json)")
    reason = interrupted_because(path, meta)
    if reason is None:
        frames = {name: _read_table(path / f"{name}.parquet", name) for name in ("chunks", "sessions")}
        _check_version(path / "forwards.parquet")
        return Run(path, meta, frames["chunks"], frames["sessions"])
    progress = f"{_sessions_done(path, meta)} of {meta.get('sessions_total', '?')} sessions done"
    if not allow_interrupted:
        raise TablesError(f"{meta_path}: interrupted run ({reason}; {progress}); rerun it into {path} to resume it, "
                          "or pass --allow-interrupted to build from its completed sessions")
    killed = meta.get("status") == "running"  # no consolidation ran: its parts are the only complete record
    frames = {name: _read_parts(path, name) if killed else _read_table(path / f"{name}.parquet", name)
              for name in ("chunks", "sessions")}
    note = (f"run {path}: interrupted ({reason}); built from its completed sessions only "
            f"({len(frames['sessions'])} sessions, {len(frames['chunks'])} chunks; {progress})")
    return Run(path, meta, frames["chunks"], frames["sessions"], note)


def interrupted_because(path: Path, meta: dict) -> str | None:
    """Why the run in ``path`` stopped before its end (None: it did not): stopped in an orderly way (status
    "interrupted", e.g. Ctrl-C) or killed hard (status still "running", its process gone)."""
    if meta.get("status") == "interrupted":
        return "stopped before its end: status 'interrupted'"
    try:
        mtime = (path / "run.json").stat().st_mtime
    except OSError:
        mtime = None
    gone = interruption(meta, mtime)
    return f"status still 'running', but {gone}" if gone else None


def _sessions_done(path: Path, meta: dict) -> int:
    parts = path / "parts"
    if meta.get("status") == "running" and parts.is_dir():
        return len(list(parts.glob("*.sessions.parquet")))
    return int((meta.get("row_counts") or {}).get("sessions", 0))


def _read_parts(path: Path, name: str) -> pd.DataFrame:
    """One table of a run from its per-session parts, completed sessions only (those with a sessions part)."""
    parts = path / "parts"
    keys = sorted(p.name.removesuffix(".sessions.parquet") for p in parts.glob("*.sessions.parquet"))
    frames = [_read_table(parts / f"{key}.{name}.parquet", name) for key in keys]
    if not frames:
        return pa.Table.from_pylist([], schema=TABLES[name]).to_pandas()
    return pd.concat(frames, ignore_index=True)


def _check_version(path: Path):
    if not path.is_file():
        raise TablesError(f"{path}: missing (the run was not consolidated; is it still running?)")
    try:
        schema = pq.read_schema(path)
    except (OSError, pa.ArrowException) as err:
        raise TablesError(f"{path}: not a readable parquet file ({_first_line(err)})") from None
    version = (schema.metadata or {}).get(VERSION_KEY)
    if version != str(SCHEMA_VERSION).encode():
        found = version.decode() if version else "none"
        raise TablesError(f"{path}: schema version {found}, but these tables read version {SCHEMA_VERSION}")
    return schema


def _read_table(path: Path, name: str) -> pd.DataFrame:
    schema = _check_version(path)
    missing = [f for f in TABLES[name].names if f not in schema.names]
    if missing:
        raise TablesError(f"{path}: columns missing for schema version {SCHEMA_VERSION}: {', '.join(missing)}")
    try:
        return pq.read_table(path).to_pandas()
    except (OSError, pa.ArrowException) as err:
        raise TablesError(f"{path}: not a readable parquet file ({_first_line(err)})") from None


def _first_line(err: Exception) -> str:
    return (str(err).strip().splitlines() or [type(err).__name__])[0]


def group_cells(runs: list[Run]) -> list[Cell]:
    """Runs of the same setup and decoder form one cell; their chunk sets must not overlap."""
    groups: dict[tuple, list[Run]] = {}
    for run in runs:
        groups.setdefault((run.setup(), run.decoder), []).append(run)
    cells = []
    for (setup, decoder), members in groups.items():
        _check_same_decoder(members)
        chunks = pd.concat([r.chunks for r in members], ignore_index=True)
        duplicated = chunks.duplicated(["session_id", "chunk_index"])
        if duplicated.any():
            first = chunks[duplicated].iloc[0]
            raise TablesError(f"decoder {decoder}: runs {', '.join(str(r.path) for r in members)} share the setup "
                              f"{setup} and overlap (e.g. session {first.session_id} chunk {first.chunk_index}); "
                              "pass only one of them")
        sessions = pd.concat([r.sessions for r in members], ignore_index=True)
        cells.append(Cell(setup, decoder, members, chunks, sessions))
    return sorted(cells, key=lambda c: (setup_order(c.setup), decoder_order(c.decoder)))


def _check_same_decoder(runs: list[Run]) -> None:
    first = runs[0].meta["config"]["decoder"]
    for run in runs[1:]:
        if run.meta["config"]["decoder"] != first:
            raise TablesError(f"decoder {run.decoder}: {runs[0].path} and {run.path} use different decoder settings "
                              f"under the same name ({first} vs {run.meta['config']['decoder']}); give one a new name")


ALWAYS_REFUSED = ("counts", "twice")  # a split that cannot be combined at all
REFUSED_UNLESS_ALLOWED = ("missing", "failed", "running")  # ... unless --allow-missing-shards (interrupted shards:
                                                           # --allow-interrupted, checked when the run is read)


def check_splits(runs: list[Run], allow_missing_shards: bool = False) -> list[str]:
    """The shards of every sharded run among ``runs`` (``ticktock.replay.shards``): a split whose shards cannot be combined
    (different shard.count, a shard twice) stops the tables, and so does one with a shard missing or failed unless
    ``allow_missing_shards``; then the returned provenance notes say what was left out."""
    from ticktock.replay.shards import group_splits

    notes = []
    for split in group_splits([(r.path, r.meta, r.status, len(r.sessions)) for r in runs]):
        problems = split.problems()
        for kind, message in problems:
            if kind in ALWAYS_REFUSED or (kind in REFUSED_UNLESS_ALLOWED and not allow_missing_shards):
                hint = "" if kind in ALWAYS_REFUSED else " (or pass --allow-missing-shards to build from the shards there)"
                raise TablesError(message + hint)
        if any(kind in REFUSED_UNLESS_ALLOWED for kind, _ in problems):
            notes.append(f"incomplete: {split.summary()}")
    return notes


def load_results(arguments: list[str | Path], *, skip_bad_runs: bool = False, allow_interrupted: bool = False,
                 allow_missing_shards: bool = False) -> Results:
    """Discover, read and group the runs named by ``arguments`` (paths or globs). A run that cannot be used stops
    it with a ``TablesError`` naming the file, or with ``skip_bad_runs`` is left out and listed in ``skipped``.
    The shards of a sharded run are combined when all of them are there, once and complete (``check_splits``)."""
    runs, skipped = [], []
    for path in discover(arguments):
        try:
            runs.append(read_run(path, allow_interrupted))
        except TablesError as err:
            if not skip_bad_runs:
                raise
            skipped.append(str(err))
    if not runs:
        raise TablesError(f"no usable runs: all {len(skipped)} were skipped (first: {skipped[0]})")
    shard_notes = check_splits(runs, allow_missing_shards)
    warnings = [f"run {r.path} has status {r.status!r} (not complete): its rows are used as they are"
                for r in runs if r.status != "complete" and not r.note]
    return Results(runs, group_cells(runs), warnings, skipped, incomplete=shard_notes)
