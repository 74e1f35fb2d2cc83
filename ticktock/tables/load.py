"""Find result runs on disk, validate them, and group them into cells (setup x decoder).

A run directory holds ``run.json`` and the three tables of ``ticktock.results.schema``. Every argument of
the tables command is a run directory, a folder searched recursively for run directories, or a glob of
either. Runs are grouped by **setup** (model, clock and profile, device, sampling, seed): only runs of the
same setup are ever compared. Within a setup, runs of the same decoder form one **cell**; several runs may
share a cell when they hold disjoint sessions (e.g. one run per task), never the same chunk twice.

Nothing here imports torch or model code: the tables are a pure function of the files.

Example::

    >>> results = load_results(["results/runs/*"])          # doctest: +SKIP
    >>> [(c.setup.model, c.decoder, len(c.chunks)) for c in results.cells]   # doctest: +SKIP
    [('fixture', 'ar', 24), ('fixture', 'speclisten', 24)]
"""

from __future__ import annotations

import glob
import json
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq

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

    def without_temperature(self) -> tuple:
        return (self.model, self.clock, self.device, self.top_k, self.top_p, self.seed)


@dataclass
class Run:
    """One run directory: its run.json and its chunks and sessions tables."""

    path: Path
    meta: dict
    chunks: pd.DataFrame
    sessions: pd.DataFrame

    @property
    def decoder(self) -> str:
        return self.meta["config"]["decoder"]["name"]

    @property
    def run_id(self) -> str:
        return self.meta.get("run_id", self.path.name)

    @property
    def status(self) -> str:
        return str(self.meta.get("status", "unknown"))

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
        )


def device_of(meta: dict) -> str:
    """The device the latencies stand for: the cost profile's for a modeled clock, else the machine's."""
    clock, env = meta.get("clock") or {}, meta.get("environment") or {}
    if clock.get("profile_device"):
        return str(clock["profile_device"])
    return str(env.get("cuda_device") or env.get("cpu") or "unknown device")


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

    def setups(self) -> list[Setup]:
        return sorted({c.setup for c in self.cells}, key=setup_order)

    def cell(self, setup: Setup, decoder: str) -> Cell | None:
        return next((c for c in self.cells if c.setup == setup and c.decoder == decoder), None)

    def in_setup(self, setup: Setup) -> list[Cell]:
        return sorted((c for c in self.cells if c.setup == setup), key=lambda c: decoder_order(c.decoder))


DECODER_ORDER = ["ar", "pld", "recycling", "lookahead", "speclisten_silence", "speclisten_runnerup", "speclisten",
                 "speclisten_plus"]


def decoder_order(name: str) -> tuple:
    return (DECODER_ORDER.index(name), "") if name in DECODER_ORDER else (len(DECODER_ORDER), name)


def setup_order(setup: Setup) -> tuple:
    return (setup.model, setup.clock, setup.device, setup.temperature, setup.top_k, setup.top_p, setup.seed)


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


def read_run(path: Path) -> Run:
    """One run directory, with its schema versions checked (run.json and every parquet file)."""
    meta_path = path / "run.json"
    try:
        meta = json.loads(meta_path.read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise TablesError(f"{meta_path}: cannot read run.json ({err})") from err
    version = meta.get("schema_version")
    if version != SCHEMA_VERSION:
        raise TablesError(f"{meta_path}: schema_version {version!r}, but these tables read version {SCHEMA_VERSION}; "
                          "rebuild the tables with the ticktock version that wrote the run, or rerun it")
    if "config" not in meta:
        raise TablesError(f"{meta_path}: no 'config' (not a ticktock run.json)")
    frames = {name: _read_table(path / f"{name}.parquet", name) for name in ("chunks", "sessions")}
    _check_version(path / "forwards.parquet")
    return Run(path, meta, frames["chunks"], frames["sessions"])


def _check_version(path: Path):
    if not path.is_file():
        raise TablesError(f"{path}: missing (the run was not consolidated; is it still running?)")
    schema = pq.read_schema(path)
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
    return pq.read_table(path).to_pandas()


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


def load_results(arguments: list[str | Path]) -> Results:
    """Discover, read and group the runs named by ``arguments`` (paths or globs)."""
    runs = [read_run(path) for path in discover(arguments)]
    warnings = [f"run {r.path} has status {r.status!r} (not complete): its rows are used as they are"
                for r in runs if r.status != "complete"]
    return Results(runs, group_cells(runs), warnings)


load_runs = load_results  # the name ticktock.main_job uses
