"""Find result runs on disk, validate them, and group them into cells (setup x decoder).

A run directory holds ``run.json`` and the three tables of ``ticktock.results.schema``. Every argument of
the tables command is a run directory, a folder searched recursively for run directories, or a glob of
either. Runs are grouped by **setup** (model, and whether its weights were random: run.json
``environment.model.random_weights``, a miniature or ``random_init``, labelled in every table; clock and
profile with its audio-encoding what-if (run.json ``clock.encode_scale``, 1 when absent), device, sampling,
seed, and how many sessions shared the device: ``concurrency.sessions`` N, batching, max_batch, stagger,
batched audio encodings (``concurrency.batch_encodings``, false when absent) and the draft policy, and the talker
that spoke the assistant's text with its settings: ``config.talker``, none for a run without one, and the jitter
buffer its speech was played with: ``config.playback_delay_ms``, 0 when absent): only runs of the same setup are
ever compared. Within a setup, runs of the same decoder form one **cell**; several runs may
share a cell when they hold disjoint sessions (e.g. one run per task, or the shards of a sharded run: all of them,
each once, complete; ``check_splits``), never the same chunk twice.

A run with N = 1 and no batching replays one session alone on the device: its draft policy, max_batch and
stagger do not apply and are not part of its setup. Every other run is a **concurrency run**: the tables
of one session at a time (Tables 2-7, Figures 4a-4b, losslessness, quality) use only the single-session runs
(``Results.single_session``: all runs when there are no single-session runs); Figure 4c uses them all.

Nothing here imports torch or model code: the tables are a pure function of the files.

An unreadable run (a truncated parquet file, a broken run.json, a run.json of the wrong shape:
``ticktock.results.runjson``) stops the build with one line naming the file, unless ``skip_bad_runs``: then it
is left out, listed in ``Results.skipped`` and in every table's provenance. An **interrupted** run (run.json says
"interrupted", or still "running" while its process is gone: ``ticktock.results.liveness``) or a **failed** one
(status "failed: ...", e.g. a full disk) is refused the same way unless ``allow_interrupted`` (a failed shard of a
sharded run is refused or allowed with its split: ``check_splits``): then its completed sessions are used (from its
per-session parts when it was killed before consolidating) and the provenance says so. A run with no completed session adds nothing:
it is left out, said in the provenance (nothing at all to build from is one line).

Results that cannot be compared honestly are refused, each in one line naming the runs (``check_results``):

- one session id replayed from different inputs in two runs (their ``audio_sha256`` or ``manifest_sha256`` differ:
  another corpus, an edited line, a replaced audio file);
- a run whose rows name another decoder or model than its run.json, or whose sessions were charged by different
  cost profiles (``profile_sha256``: a profile edited between a kill and a resume of a run written before resume
  checked it), or by another profile than its run.json's;
- two run folders with one run id (a copied run folder).

Setups are keyed by the cost profile's content (run.json ``clock.profile_sha256``), not its name: two profiles of
one name are two setups, their clock labelled ``modeled:<name>#<first 8 hex of the digest>``, said in the
provenance. A decoder whose state outlives a session but not a decoder instance (Token Recycling's adjacency
matrix, run.json ``decoder.adjacency_matrix_scope``) depends on N and the shard count: when its runs here differ
in them, the provenance says so.

Example::

    >>> results = load_results(["results/runs/*"])          # doctest: +SKIP
    >>> [(c.setup.model, c.decoder, len(c.chunks)) for c in results.cells]   # doctest: +SKIP
    [('fixture', 'ar', 24), ('fixture', 'speclisten', 24)]
"""

from __future__ import annotations

import glob
import json
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePath

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ticktock.decoders import DECODERS
from ticktock.errors import EXIT_CONFIG, TickTockError, one_line
from ticktock.results.liveness import interruption
from ticktock.results.runjson import kind_of, shape_problem
from ticktock.results.rows import SESSION_SPEECH_COLUMNS, SPEECH_COLUMNS
from ticktock.results.schema import SCHEMA_VERSION, TABLES
from ticktock.tables.paper import measured_by_paper

VERSION_KEY = b"ticktock_schema_version"
OLDEST_READ = 6  # results of schema versions 6 to SCHEMA_VERSION are read: 7 and 8 only added columns (ADDED_IN)
ADDED_IN = {7: {"chunks": SPEECH_COLUMNS, "sessions": SESSION_SPEECH_COLUMNS},
            8: {"chunks": ("send_lag_ms",), "sessions": ("max_send_lag_ms",)}}  # version -> columns it added
GLOB_CHARS = set("*?[")
LIVE_CLOCK = "live:"  # the clock label of a live run: live:<protocol> (ticktock.endpoints)


class TablesError(TickTockError, RuntimeError):
    """The results cannot be turned into tables (missing, malformed, inconsistent or incomparable runs): exit
    code 2, one line (``ticktock.errors``)."""

    exit_code = EXIT_CONFIG


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
    talker: str = "none"  # what spoke the assistant's text (config.talker.name): none, espeak, piper, modeled
    talker_args: str = ""  # its settings (canonical JSON, "" when none; ``talker_of``)
    encode_scale: float = 1.0  # the modeled clock's factor on audio-encoding costs (run.json clock.encode_scale; 1: none)
    playback_delay_ms: float = 0.0  # the speech's jitter buffer (config.playback_delay_ms; 0: none or absent)
    random_weights: bool = False  # the model's weights were random (run.json environment.model.random_weights)
    miniature: bool = False  # ... a miniature checkpoint's (environment.model.miniature; ticktock.miniatures)
    batch_encodings: bool = False  # the shared device batched sessions' audio encodings (concurrency.batch_encodings)

    @property
    def model_label(self) -> str:
        """The model as the tables name it: a setup whose weights were random says so (``weights_label``).

        >>> Setup("gander", "wall", "cpu", 0.0, 0, 1.0, 0, random_weights=True, miniature=True).model_label
        'gander (miniature, random weights)'
        >>> Setup("gander", "wall", "cpu", 0.0, 0, 1.0, 0).model_label
        'gander'
        """
        weights = weights_label(self.random_weights, self.miniature)
        return f"{self.model} ({weights})" if weights else self.model

    @property
    def paper_model(self) -> bool:
        """Whether this setup ran a model the paper measured (``paper.measured_by_paper``: the models listed in
        paper_numbers.yaml) with real weights (a model with random weights measures the harness, not the model).

        >>> Setup("gander", "modeled:p", "gpu", 0.0, 0, 1.0, 0).paper_model
        True
        >>> Setup("fixture", "modeled:p", "gpu", 0.0, 0, 1.0, 0).paper_model
        False
        >>> Setup("gander", "wall", "cpu", 0.0, 0, 1.0, 0, random_weights=True, miniature=True).paper_model
        False
        """
        return measured_by_paper(self.model) and not self.random_weights

    @property
    def of_paper_kind(self) -> bool:
        """Whether this setup is of the paper's kind in all but how many sessions shared the device (Figure 4c
        compares N sessions on its own terms): the paper's model with real weights (``paper_model``), greedy (the
        paper's tables are greedy), replayed in process (a live run measures a server over a network: its clock
        starts ``live:``), the profile's encoding costs as measured (``encode_scale`` 1: a what-if is no setup of
        the paper's) and batch 1 (no batching of forwards or of audio encodings)."""
        return (self.paper_model and self.temperature == 0 and not self.live and self.encode_scale == 1.0
                and not self.batching and not self.batch_encodings)

    @property
    def compares_with_paper(self) -> bool:
        """Whether the paper's figures may stand beside this setup's in the tables of one session at a time: a setup
        of the paper's kind (``of_paper_kind``) with one session alone on the device.

        >>> Setup("gander", "modeled:p", "gpu", 0.0, 0, 1.0, 0).compares_with_paper
        True
        >>> Setup("gander@127.0.0.1:8099", "live:vllm_omni_duplex", "endpoint", 0.0, 0, 1.0, 0).compares_with_paper
        False
        >>> Setup("fixture", "modeled:p", "gpu", 0.0, 0, 1.0, 0).compares_with_paper
        False
        """
        return self.of_paper_kind and not self.shares_device

    @property
    def speaks(self) -> bool:
        """A run with a talker: its speech is synthesized and placed (the speech-out columns are filled)."""
        return self.talker != "none"

    @property
    def live(self) -> bool:
        """A live run's setup: sessions streamed into a running server (``ticktock.endpoints``; clock
        ``live:<protocol>``), measured from the client's event stamps, never merged with an in-process setup."""
        return self.clock.startswith(LIVE_CLOCK)

    @property
    def shares_device(self) -> bool:
        """A concurrency run: several sessions at once, or batching of forwards or of audio encodings
        (``ConcurrencySettings.shares_device``)."""
        return self.concurrency > 1 or self.batching or self.batch_encodings

    def sharing(self) -> tuple:
        """The concurrency fields: how the device was shared."""
        return (self.concurrency, self.batching, self.max_batch, self.stagger, self.draft_policy, self.draft_policy_args,
                self.batch_encodings)

    def without_temperature(self) -> tuple:
        return (self.model, self.clock, self.encode_scale, self.device, self.top_k, self.top_p, self.seed,
                *self.sharing(), self.talker, self.talker_args, self.playback_delay_ms, self.random_weights,
                self.miniature)

    def without_sharing(self) -> tuple:
        """Everything but the concurrency fields (Figure 4c compares N within this)."""
        return (self.model, self.clock, self.encode_scale, self.device, self.temperature, self.top_k, self.top_p,
                self.seed, self.talker, self.talker_args, self.playback_delay_ms, self.random_weights, self.miniature)


@dataclass
class Run:
    """One run directory: its run.json and its chunks and sessions tables."""

    path: Path
    meta: dict
    chunks: pd.DataFrame
    sessions: pd.DataFrame
    note: str | None = None  # an interrupted or failed run used anyway: what was used
    clock_tag: str = ""  # the profile digest's first hex digits, when two profiles here share this one's name
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
        """The run's status: run.json's, "interrupted" for a run killed while it said "running"."""
        status = str(self.meta.get("status", "unknown"))
        return "interrupted" if self.note and status == "running" else status

    @property
    def profile_digest(self) -> str | None:
        """The digest of the cost profile the run was charged by (run.json ``clock.profile_sha256``; None: none)."""
        return (self.meta.get("clock") or {}).get("profile_sha256")

    @property
    def live(self) -> bool:
        """A live run (run.json ``clock.kind`` "live", ``ticktock.endpoints.run``)."""
        return (self.meta.get("clock") or {}).get("kind") == "live"

    @property
    def per_unit(self) -> bool:
        """Whether the run measured every unit (run.json ``clock.per_unit``; every in-process run does): a live run
        of a turn-based protocol measures replies, with no lag, post-audio latency or deadline misses."""
        return (self.meta.get("clock") or {}).get("per_unit") is not False

    @property
    def shard_count(self) -> int:
        return int((self.meta.get("shard") or {}).get("count", 1))

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
        if self.clock_tag:
            label = f"{label}#{self.clock_tag}"
        return Setup(
            model=config["model"]["name"],
            clock=label,
            device=device_of(self.meta),
            temperature=float(sampling.get("temperature", 0.0)),
            top_k=int(sampling.get("top_k", 0)),
            top_p=float(sampling.get("top_p", 1.0)),
            seed=int(config.get("seed", 0)),
            **sharing_of(config),
            **talker_of(config),
            encode_scale=float(clock.get("encode_scale", 1.0)),
            playback_delay_ms=float(config.get("playback_delay_ms") or 0.0),
            **weights_of(self.meta),
        )


def weights_of(meta: dict) -> dict:
    """The weights fields of a run's setup from run.json ``environment.model`` (``random_weights``, ``miniature``, as
    the adapter's ``describe()`` wrote them); a run that records neither (written before they existed, the embedded
    model, a live endpoint) had real weights as far as the tables know.

    >>> weights_of({"environment": {"model": {"name": "gander", "miniature": True, "random_weights": True}}})
    {'random_weights': True, 'miniature': True}
    >>> weights_of({"environment": {"model": {"name": "embedded"}}}), weights_of({})
    ({}, {})
    """
    model = (meta.get("environment") or {}).get("model") or {}
    if not model.get("random_weights"):
        return {}
    return {"random_weights": True, "miniature": bool(model.get("miniature"))}


def weights_label(random_weights: bool, miniature: bool) -> str:
    """What the tables add to the name of a model whose weights were random ('' for real weights).

    >>> weights_label(True, True), weights_label(True, False), weights_label(False, False)
    ('miniature, random weights', 'random weights', '')
    """
    if not random_weights:
        return ""
    return "miniature, random weights" if miniature else "random weights"


def sharing_of(config: dict) -> dict:
    """The concurrency fields of a run's setup from its config (``concurrency``, ``draft_policy``); a run without
    them, or with N = 1 and no batching (of forwards or of encodings), is a single session alone on the device.
    ``batch_encodings`` is there only when true (a run written before it existed has none: false).

    >>> sharing_of({"concurrency": {"sessions": 1, "stagger": "random"}, "draft_policy": {"name": "round_robin"}})
    {'concurrency': 1, 'batching': False}
    >>> shared = sharing_of({"concurrency": {"sessions": 4, "batching": False, "max_batch": 8, "stagger": 50},
    ...                      "draft_policy": {"name": "expected_savings", "_target_": "x.Y", "speech_dbfs": -45.0}})
    >>> shared["max_batch"], shared["stagger"], shared["draft_policy"], shared["draft_policy_args"]
    (None, '50', 'expected_savings', '{"speech_dbfs": -45.0}')
    >>> sharing_of({"concurrency": {"sessions": 4, "batch_encodings": True}})["batch_encodings"]
    True
    """
    concurrency = config.get("concurrency") or {}
    sessions, batching = int(concurrency.get("sessions") or 1), bool(concurrency.get("batching", False))
    fields = {"concurrency": sessions, "batching": batching}
    if concurrency.get("batch_encodings"):
        fields["batch_encodings"] = True
    if sessions == 1 and not batching and not fields.get("batch_encodings"):
        return fields
    policy = dict(config.get("draft_policy") or {})
    name = str(policy.pop("name", "") or "")
    policy.pop("_target_", None)
    max_batch = concurrency.get("max_batch") if batching else None
    return {**fields, "max_batch": None if max_batch is None else int(max_batch),
            "stagger": _stagger(concurrency.get("stagger", "random")), "draft_policy": name,
            "draft_policy_args": json.dumps(policy, sort_keys=True) if policy else ""}


def talker_of(config: dict) -> dict:
    """The talker fields of a run's setup from its config (``config.talker``, as run.json records it): none for a run
    without one (``{"name": "none"}``, or a run.json written before talkers); else its name and its settings as
    canonical JSON (a modeled talker's cost profile by its file name: the folder differs between machines).

    >>> talker_of({}), talker_of({"talker": {"name": "none"}})
    ({}, {})
    >>> talker_of({"talker": {"name": "espeak", "_target_": "x.Y", "voice": "en-us", "rate_wpm": 175}})
    {'talker': 'espeak', 'talker_args': '{"rate_wpm": 175, "voice": "en-us"}'}
    """
    node = dict(config.get("talker") or {})
    name = str(node.pop("name", "none") or "none")
    if name == "none":
        return {}
    node.pop("_target_", None)
    if isinstance(node.get("profile"), str):
        node["profile"] = PurePath(node["profile"]).name
    return {"talker": name, "talker_args": json.dumps(node, sort_keys=True) if node else ""}


def talker_problem(meta: dict) -> str | None:
    """What is wrong with run.json's ``config.talker`` (None: nothing; missing or null: a run without a talker).

    >>> talker_problem({"config": {"talker": ["espeak"]}}), talker_problem({"config": {"talker": {"name": 3}}})
    ('config.talker: must be an object, got a list', 'config.talker.name: must be a string, got 3')
    """
    node = meta["config"].get("talker")
    if node is None:
        return None
    if not isinstance(node, dict):
        return f"config.talker: must be an object, got {kind_of(node)}"
    if not isinstance(node.get("name", "none"), str):
        return f"config.talker.name: must be a string, got {node['name']!r:.60}"
    return None


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

    @property
    def live(self) -> bool:
        return any(run.live for run in self.runs)

    @property
    def per_unit(self) -> bool:
        """False when a run of the cell measured replies, not units (a turn-based live protocol: ``Run.per_unit``)."""
        return all(run.per_unit for run in self.runs)


@dataclass
class Results:
    runs: list[Run]
    cells: list[Cell]
    warnings: list[str]
    skipped: list[str] = field(default_factory=list)  # runs left out (skip_bad_runs): one line each, naming the file
    scope: list[str] = field(default_factory=list)  # which of the runs a view uses, when not all (single_session)
    incomplete: list[str] = field(default_factory=list)  # sharded runs built without some shards (check_splits)
    caveats: list[str] = field(default_factory=list)  # what else the tables must say (runs left out, runs still
                                                      # running, profiles of one name, recycling's N and shards)

    def provenance(self) -> list[str]:
        """What the tables must say about the runs used: interrupted or failed runs used anyway, runs skipped,
        sharded runs missing shards, the caveats, and which runs a view uses (``single_session``)."""
        return ([r.note for r in self.runs if r.note] + [f"skipped: {reason}" for reason in self.skipped]
                + self.incomplete + self.caveats + self.scope)

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
    return (setup.model, setup.clock, setup.encode_scale, setup.device, setup.temperature, setup.top_k, setup.top_p,
            setup.seed, setup.concurrency, setup.batching, setup.batch_encodings, setup.max_batch or 0, setup.stagger,
            setup.draft_policy, setup.draft_policy_args, setup.talker != "none", setup.talker, setup.talker_args, setup.playback_delay_ms,
            setup.random_weights, setup.miniature)


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


def read_meta(path: Path) -> dict:
    """A run directory's run.json, its schema version and shape checked (``ticktock.results.runjson``)."""
    meta_path = path / "run.json"
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as err:
        raise TablesError(f"{meta_path}: cannot read run.json ({_first_line(err)})") from None
    if not isinstance(meta, dict):
        raise TablesError(f"{meta_path}: not a ticktock run.json (a JSON {type(meta).__name__}, not an object)")
    version = meta.get("schema_version")
    if not readable(version):
        shown = repr(version) if len(repr(version)) <= 40 else repr(version)[:37] + "..."
        raise TablesError(f"{meta_path}: schema_version {shown}, but these tables read version {SCHEMA_VERSION}; "
                          "rebuild the tables with the ticktock version that wrote the run, or rerun it")
    problem = shape_problem(meta) or talker_problem(meta)
    if problem:
        raise TablesError(f"{meta_path}: {problem} (not the run.json a ticktock run writes)")
    return meta


def read_run(path: Path, allow_interrupted: bool = False) -> Run:
    """One run directory, with its run.json's shape and its schema versions checked (run.json and every parquet
    file), and its rows checked against its run.json (``check_rows``); a run that stopped before its end
    (interrupted, or failed) is refused unless ``allow_interrupted``; a failed shard of a sharded run is read, and
    ``check_splits`` refuses it unless ``allow_missing_shards`` (see the module docstring)."""
    meta = read_meta(path)
    reason = stopped_because(path, meta)
    if reason is None:
        frames = {name: _read_table(path / f"{name}.parquet", name) for name in ("chunks", "sessions")}
        _check_version(path / "forwards.parquet")
        return check_rows(Run(path, meta, frames["chunks"], frames["sessions"]))
    kind, why = reason
    progress = f"{_sessions_done(path, meta)} of {meta.get('sessions_total', '?')} sessions done"
    failed_shard = kind == "failed" and int((meta.get("shard") or {}).get("count", 1)) > 1
    if not (allow_interrupted or failed_shard):
        raise TablesError(f"{path / 'run.json'}: {kind} run ({why}; {progress}); rerun it into {path} to resume it, "
                          "or pass --allow-interrupted to build from its completed sessions")
    killed = meta.get("status") == "running"  # no consolidation ran: its parts are the only complete record
    frames = {name: _read_parts(path, name) if killed else _read_table(path / f"{name}.parquet", name)
              for name in ("chunks", "sessions")}
    note = (f"run {path}: {kind} ({why}); built from its completed sessions only "
            f"({len(frames['sessions'])} sessions, {len(frames['chunks'])} chunks; {progress})")
    return check_rows(Run(path, meta, frames["chunks"], frames["sessions"], note))


def stopped_because(path: Path, meta: dict) -> tuple[str, str] | None:
    """("interrupted" or "failed", why) for a run that stopped before its end, None for one that did not."""
    status = meta.get("status")
    if status.startswith("failed"):
        return "failed", f"status {status!r}"
    reason = interrupted_because(path, meta)
    return None if reason is None else ("interrupted", reason)


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


def check_rows(run: Run) -> Run:
    """``run`` when its rows agree with its run.json: every row of its decoder and model, and every session charged
    by one cost profile, the one run.json names; else a ``TablesError`` naming the file and both values."""
    config = run.meta["config"]
    for name, frame in (("chunks", run.chunks), ("sessions", run.sessions)):
        for column in ("decoder", "model"):
            expected = config[column]["name"]
            others = sorted(set(frame[column].dropna().astype(str)) - {expected})
            if others:
                raise TablesError(f"{run.path / f'{name}.parquet'}: rows of {column} {others[0]!r}, but run.json "
                                  f"says {column} {expected!r} (config.{column}.name): this folder mixes runs; "
                                  "rerun it into an empty folder")
    digests = run.sessions["profile_sha256"].value_counts(dropna=False)
    if len(digests) > 1:
        counts = ", ".join(f"{_profile(d)} for {n} sessions" for d, n in digests.items())
        raise TablesError(f"{run.path / 'sessions.parquet'}: its sessions were charged by {len(digests)} different cost "
                          f"profiles ({counts}): the profile changed while the run was resumed; rerun it with one "
                          "profile (overwrite=true)")
    if len(digests) == 1 and run.profile_digest is not None and digests.index[0] != run.profile_digest:
        raise TablesError(f"{run.path / 'sessions.parquet'}: its sessions were charged by {_profile(digests.index[0])}, "
                          f"but run.json says {_profile(run.profile_digest)} "
                          "(clock.profile_sha256); rerun it with one profile (overwrite=true)")
    return run


def _profile(digest) -> str:
    """A profile digest in a message: its first 8 hex digits (``cost profile sha256 1a2b3c4d``), or that there is
    none."""
    return f"cost profile sha256 {digest[:8]}" if isinstance(digest, str) and digest else "no cost profile"


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


def readable(version) -> bool:
    """Whether these tables read results of schema ``version`` (``OLDEST_READ`` to ``SCHEMA_VERSION``).

    >>> readable(SCHEMA_VERSION), readable(OLDEST_READ), readable(5), readable("7")
    (True, True, False, False)
    """
    return isinstance(version, int) and not isinstance(version, bool) and OLDEST_READ <= version <= SCHEMA_VERSION


def _check_version(path: Path) -> tuple[pa.Schema, int]:
    if not path.is_file():
        raise TablesError(f"{path}: missing (the run was not consolidated; is it still running?)")
    try:
        schema = pq.read_schema(path)
    except (OSError, pa.ArrowException) as err:
        raise TablesError(f"{path}: not a readable parquet file ({_first_line(err)})") from None
    version = (schema.metadata or {}).get(VERSION_KEY)
    number = int(version) if version and version.isdigit() else None
    if not readable(number):
        found = version.decode(errors="replace") if version else "none"
        raise TablesError(f"{path}: schema version {found}, but these tables read version {SCHEMA_VERSION}")
    return schema, number


def _read_table(path: Path, name: str) -> pd.DataFrame:
    """A result table; one written by an older readable version gets the columns added since as nulls."""
    schema, version = _check_version(path)
    later = [column for added, tables in ADDED_IN.items() if added > version for column in tables.get(name, ())]
    missing = [f for f in TABLES[name].names if f not in schema.names and f not in later]
    if missing:
        raise TablesError(f"{path}: columns missing for schema version {version}: {', '.join(missing)}")
    try:
        frame = pq.read_table(path).to_pandas()
    except (OSError, pa.ArrowException) as err:
        raise TablesError(f"{path}: not a readable parquet file ({_first_line(err)})") from None
    for column in later:
        if column not in frame:
            frame[column] = None
    return frame


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
    The shards of a sharded run are combined when all of them are there, once and complete (``check_splits``);
    runs that cannot be compared honestly are refused (``check_results``)."""
    runs, skipped = [], []
    for path in discover(arguments):
        try:
            runs.append(read_run(path, allow_interrupted))
        except TablesError as err:
            if not skip_bad_runs:
                raise
            skipped.append(one_line(err))
    if not runs:
        raise TablesError(f"no usable runs: all {len(skipped)} were skipped (first: {skipped[0]})")
    shard_notes = check_splits(runs, allow_missing_shards)
    check_results(runs)
    used, empty = _with_sessions(runs)
    caveats = empty + tag_profiles(runs) + state_scope_notes(used)
    running = [f"run {r.path} has status {r.status!r} (not complete): its rows are used as they are"
               for r in runs if r.status != "complete" and not r.note] + failed_session_notes(runs)
    return Results(runs, group_cells(used), running, skipped, incomplete=shard_notes, caveats=caveats + running)


def failed_session_notes(runs: list[Run], shown: int = 3) -> list[str]:
    """One line per run with sessions that did not finish: failed (run.json ``failed_sessions``: the watchdog stopped
    it, or a live session in which nothing was decided) and partial (``partial_sessions``: a live session that ended
    early, its decided units written apart in the run folder's ``partial/``): how many, and the reasons of the first
    ``shown``. Those sessions are in no table, never counted as complete.

    >>> run = Run(Path("r"), {"failed_sessions": [{"session_id": "s1", "error": "session s1: chunk 3 (talker) still "
    ...                                          "running after 1 s of wall time (watchdog.chunk_s=1)"}]}, None, None)
    >>> failed_session_notes([run])
    ['run r: 1 session failed, in no table (rerun into the folder to retry): session s1: chunk 3 (talker) still running after 1 s of wall time (watchdog.chunk_s=1)']
    >>> partial = Run(Path("r"), {"partial_sessions": [{"session_id": "s2", "reason": "session s2: the server closed "
    ...     "the connection after 3 of 8 units were decided", "units_decided": 3, "units": 8}]}, None, None)
    >>> failed_session_notes([partial])
    ['run r: 1 session partial (3 of 8 units decided), in no table: its decided units are in r/partial (rerun into the folder to retry): session s2: the server closed the connection after 3 of 8 units were decided']
    """
    notes = []
    for run in runs:
        failed = [f for f in run.meta.get("failed_sessions") or [] if isinstance(f, dict)]
        partial = [p for p in run.meta.get("partial_sessions") or [] if isinstance(p, dict)]
        if failed:
            notes.append(f"run {run.path}: {_sessions(failed)} failed, in no table (rerun into the folder to retry): "
                         f"{_reasons(failed, 'error', 'failed_sessions', shown)}")
        if partial:
            decided, units = (sum(p.get(key) for p in partial if type(p.get(key)) is int)
                              for key in ("units_decided", "units"))
            notes.append(f"run {run.path}: {_sessions(partial)} partial ({decided} of {units} units decided), in no "
                         f"table: its decided units are in {run.path / 'partial'} (rerun into the folder to retry): "
                         f"{_reasons(partial, 'reason', 'partial_sessions', shown)}")
    return notes


def _sessions(entries: list) -> str:
    return f"{len(entries)} session{'s' if len(entries) != 1 else ''}"


def _reasons(entries: list[dict], key: str, record: str, shown: int) -> str:
    reasons = "; ".join(str(entry.get(key) or entry.get("session_id")) for entry in entries[:shown])
    return reasons + (f"; and {len(entries) - shown} more (run.json {record})" if len(entries) > shown else "")


def check_results(runs: list[Run]) -> None:
    """Refuse runs that cannot be compared honestly: two folders with one run id, and one session id replayed from
    different inputs (``check_same_inputs``)."""
    folders: dict[str, Path] = {}
    for run in runs:
        first = folders.setdefault(run.run_id, run.path)
        if first != run.path:
            raise TablesError(f"run id {run.run_id}: two run folders hold it, {first} and {run.path} (a copied run "
                              "folder?); pass only one of them")
    check_same_inputs(runs)


INPUTS = (("audio_sha256", "audio file"), ("manifest_sha256", "manifest line"))


def check_same_inputs(runs: list[Run]) -> None:
    """Every session id stands for one input across the runs: the same audio file's bytes (``audio_sha256``) and
    the same manifest line (``manifest_sha256``) wherever it was replayed; else a ``TablesError`` naming the
    session, two runs that differ and the digests (a speedup over different audio is not a speedup)."""
    columns = ["session_id", *(column for column, _ in INPUTS)]
    frames = [r.sessions[columns].assign(run=i) for i, r in enumerate(runs) if len(r.sessions)]
    if not frames:
        return
    frame = pd.concat(frames, ignore_index=True)
    for column, what in INPUTS:
        values = frame[column].fillna("")
        differing = values.groupby(frame["session_id"]).nunique()
        if not differing.gt(1).any():
            continue
        session_id = differing[differing.gt(1)].index[0]
        rows = frame[frame["session_id"] == session_id].assign(value=values)
        first = rows.iloc[0]
        other = rows[rows["value"] != first["value"]].iloc[0]
        a, b = runs[int(first["run"])], runs[int(other["run"])]
        raise TablesError(f"session {session_id}: runs {a.path} and {b.path} replayed it from different inputs (its "
                          f"{what} differs: {column} {_digest(first['value'])} vs {_digest(other['value'])}); their "
                          "numbers are not comparable: pass runs of one corpus, or rerun one of them on the other's "
                          "inputs")


def _digest(value: str) -> str:
    return f"{value[:12]}..." if value else "none"


def _with_sessions(runs: list[Run]) -> tuple[list[Run], list[str]]:
    """The runs that hold completed sessions, and a note for each one left out for holding none (a shard that was
    given no session is left out silently: it holds what it was given)."""
    used, notes = [], []
    for run in runs:
        if len(run.sessions):
            used.append(run)
        elif not (run.shard and run.status == "complete"):
            notes.append(f"run {run.path}: no completed session ({run.status}); nothing from it in the tables")
    if not used:
        raise TablesError(f"no completed session in any of the {len(runs)} runs ({runs[0].path}"
                          + (", ..." if len(runs) > 1 else "") + "): nothing to build tables from")
    return used, notes


def tag_profiles(runs: list[Run]) -> list[str]:
    """Tag the clock of runs whose cost profile shares its name with a profile of other content (``Run.clock_tag``:
    their setups differ) and say so; nothing when every profile name stands for one content."""
    by_name: dict[str, dict] = {}
    for run in runs:
        name = (run.meta.get("clock") or {}).get("profile")
        if name:
            by_name.setdefault(name, {}).setdefault(run.profile_digest, []).append(run)
    notes = []
    for name, digests in by_name.items():
        if len(digests) < 2:
            continue
        for digest, members in digests.items():
            for run in members:
                run.clock_tag = (digest or "unknown")[:8]
        listed = "; ".join(f"#{(d or 'unknown')[:8]}: {', '.join(str(r.path) for r in members)}"
                           for d, members in digests.items())
        notes.append(f"cost profile {name}: {len(digests)} profiles of different content share this name, so they "
                     f"are different setups, their clocks tagged with the first digits of each one's sha256 ({listed})")
    return notes


STATE_SCOPES = {"adjacency_matrix_scope": "adjacency matrix"}  # run.json decoder.<key>: state kept per instance


def state_scope_notes(runs: list[Run]) -> list[str]:
    """A note per decoder whose state lives as long as a decoder instance (one per concurrency slot and per shard:
    ``STATE_SCOPES``) and whose runs here differ in N or in the shard count: its figures depend on both."""
    notes = []
    for key, state in STATE_SCOPES.items():
        layouts: dict[str, dict[str, int]] = {}  # decoder -> "N=4, unsharded" -> runs
        for run in runs:
            if key in (run.meta.get("decoder") or {}):
                count = run.shard_count
                layout = f"N={run.setup().concurrency}, " + (f"{count} shards" if count > 1 else "unsharded")
                found = layouts.setdefault(run.decoder, {})
                found[layout] = found.get(layout, 0) + 1
        for decoder, found in sorted(layouts.items()):
            if len(found) > 1:
                listed = ", ".join(f"{layout} ({n} run{'s' if n > 1 else ''})" for layout, n in sorted(found.items()))
                notes.append(f"{decoder}: its {state} starts cold in each concurrency slot and each shard (run.json "
                             f"decoder.{key}), so its figures depend on N and the shard count, and its runs here "
                             f"differ in them: {listed}")
    return notes
