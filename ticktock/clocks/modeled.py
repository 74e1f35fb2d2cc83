"""Modeled clock: each forward is charged from a measured (or derived) cost profile.

A profile is a YAML file::

    name: qwen3-8b-a100-bf16-derived
    model: 8B dense decoder (Qwen3-8B backbone), bf16, batch 1
    device: NVIDIA A100 80GB
    provenance: "how the numbers were obtained (measured by `ticktock calibrate` / derived from ...)"
    encode_ms: 12.0                       # audio front-end, one chunk
    encode_fixed_ms: 3.0                  # optional: the part of encoding a piece of a chunk that does not scale
                                          #   with its length (a piece of fraction f costs 3 + 9 f; no field: 12)
    query_tokens:   [1, 4, 16, 64]        # grid rows
    context_tokens: [0, 2048, 8192]       # grid columns
    forward_ms:                           # forward_ms[i][j] = cost of query_tokens[i] at context_tokens[j]
      - [20.1, 20.9, 23.0]
      - ...

A measured profile (``ticktock calibrate``) also says where it was measured, in ``measured_on`` (optional; every
entry text or null, null where it could not be found out; older profiles have no such block)::

    measured_on:
      device: NVIDIA H100 80GB HBM3       # torch.cuda.get_device_name, or the CPU's name
      driver: 550.54.15                   # the NVIDIA driver (nvidia-smi); null on a CPU
      torch: 2.13.0+cu128                 # torch.__version__
      cuda: '12.8'                        # torch.version.cuda: null for a CPU build of torch
      cudnn: '90100'                      # torch.backends.cudnn.version()
      date: '2026-12-05'
      command: python -m ticktock.calibrate --gpu model=gander

Costs between grid points are bilinear; beyond the grid they extend linearly along the last segment.
Every field is checked when the file is read (``profile_problem``), naming the file, the line and the field: a
field that is not one of the above is an error (with the closest known name: a typo must not silently leave a
cost out); every cost is a finite number of milliseconds from 0 to ``MAX_COST_MS`` (one hour: no forward or
encoding of a real-time model takes longer, and larger values only overflow the device's clock); token counts
are integers up to ``MAX_TOKENS``.

Optional batch dimension (for sessions sharing a device with ``concurrency.batching=true``)::

    batch_sizes:  [1, 2, 4, 8]
    batch_factor: [1.0, 1.03, 1.08, 1.2]  # measured batched step / forward_ms(total query, batch x max context)

Optional batch dimension of audio encodings (sessions sharing a device with ``concurrency.batch_encodings=true``)::

    encode_batch_sizes:  [1, 2, 4, 8]
    encode_batch_factor: [1.0, 1.02, 1.05, 1.11]  # a step of B sessions' encodings / the dearest of them alone

A step that encodes several sessions' audio at once (whole chunks, or pieces of early prefill) costs its dearest
encoding alone (``encode_cost_ms``) times the factor for B (linear between the listed sizes, the last factor beyond
them): the factor is 1.0 at B = 1, never below it (a batch costs at least one encoding) and never falls as B grows.
``ticktock calibrate`` measures it with a real batched encoder call (``ModelAdapter.encode_many``).

Optional cold start: ``encode_first_ms`` is what a session's first whole chunk costs to encode, where it differs from
the later ones (a published figure: MiniCPM-o 4.5's encoder takes 29.8 ms on the first 1 s unit and 10.0 ms on later
ones); without it every whole chunk costs ``encode_ms``.

Optional per-field provenance (``sources``: ``ticktock.clocks.sources``): each cost field names where its number comes
from, ``{measured: command}``, ``{published: reference}``, ``{derived: derivation}`` or ``{assumed: why}``.

Optional talker costs (a talker's work per piece of speech: ``ticktock.clocks.talker_cost.TalkerCost``), each with the
device it was measured on and where its numbers come from::

    talkers:
      espeak: {first_packet_ms: 9.0, ms_per_audio_s: 1.2, streams: false, device: "CPU ...", provenance: "measured ..."}

A replay with ``talker=espeak`` under the modeled clock charges each piece from ``talkers.espeak``.

A batched step of B forwards (query q_i, context c_i) reads the weights once, like one forward of all
their query tokens, and each session's padded KV cache: it costs ``forward_ms(sum q_i, B * max c_i)`` (never
less than its costliest forward alone) times the factor for B (linear between the listed sizes, the last
factor beyond them). ``ticktock calibrate``
measures the factors; a profile without them cannot charge batched steps.

The clock's one option besides its profile, ``clock.encode_scale`` (``configs/clock/modeled.yaml``, default 1), is a
what-if: every audio-encoding charge (a whole chunk or a piece, ``CostProfile.encode_cost_ms``) is multiplied by it,
forwards and talkers are charged as the profile says. The shipped profile's encoding cost is derived, not measured,
and it decides where a shared device saturates: replaying at 0.25, 0.5 and 1 shows how much that matters.

Example::

    >>> p = CostProfile("p", [1, 11], [0, 1000], [[10.0, 12.0], [15.0, 17.0]], encode_ms=3.0)
    >>> p.forward_ms(6, 500)
    13.5
"""

from __future__ import annotations

import bisect
import difflib
import math
import numbers
from dataclasses import dataclass
from pathlib import Path

from ticktock.clocks.base import Clock, Stopwatch
from ticktock.clocks.sources import as_texts, present_fields, sources_problem, unsourced
from ticktock.errors import ConfigError, shown


class ProfileError(ConfigError, ValueError):
    """A cost profile file is missing or malformed (the message names the file and field), or the modeled clock's
    ``clock.encode_scale`` is not allowed (the message names the key)."""


MAX_COST_MS = 3_600_000.0  # one hour per forward or encoding
MAX_TOKENS = 100_000_000  # query, context and batch axes: beyond any model's context
COST = f"must be a finite number of milliseconds from 0 to {MAX_COST_MS:.0f} (one hour)"


def _interp(grid: list[float], x: float) -> tuple[int, float]:
    """Segment index i and weight w so that x = (1-w)*grid[i] + w*grid[i+1] (w may leave [0,1])."""
    if len(grid) == 1:
        return 0, 0.0
    i = min(max(bisect.bisect_right(grid, x) - 1, 0), len(grid) - 2)
    return i, (x - grid[i]) / (grid[i + 1] - grid[i])


@dataclass
class CostProfile:
    name: str
    query_tokens: list[int]
    context_tokens: list[int]
    forward_table: list[list[float]]
    encode_ms: float = 0.0
    model: str = ""
    device: str = ""
    provenance: str = ""
    batch_sizes: list[int] | None = None
    batch_factor: list[float] | None = None
    encode_fixed_ms: float | None = None  # the part of an encoding that does not scale with its audio (see encode_cost_ms)
    talkers: dict | None = None  # talker name -> ticktock.clocks.talker_cost.TalkerCost (see the module docstring)
    measured_on: dict | None = None  # where a measured profile was measured (MEASURED_ON: device, driver, versions, ...)
    encode_first_ms: float | None = None  # a session's first whole chunk (a cold start), where it differs
    encode_batch_sizes: list[int] | None = None  # the batch dimension of audio encodings (with encode_batch_factor)
    encode_batch_factor: list[float] | None = None
    sources: dict | None = None  # field -> {kind: text}: where each number comes from (``ticktock.clocks.sources``)

    def __post_init__(self):
        problem = profile_problem({"query_tokens": self.query_tokens, "context_tokens": self.context_tokens,
                                   "forward_ms": self.forward_table, "encode_ms": self.encode_ms,
                                   "batch_sizes": self.batch_sizes, "batch_factor": self.batch_factor,
                                   "encode_fixed_ms": self.encode_fixed_ms, "measured_on": self.measured_on,
                                   "encode_first_ms": self.encode_first_ms,
                                   "encode_batch_sizes": self.encode_batch_sizes,
                                   "encode_batch_factor": self.encode_batch_factor, "sources": self.sources,
                                   "talkers": self.talkers}, talkers_checked=True)
        if problem:
            raise ProfileError(f"profile {self.name}: field '{dotted(problem[0])}': {problem[1]}")

    def encode_cost_ms(self, fraction: float = 1.0, first: bool = False) -> float:
        """Cost of encoding ``fraction`` of a chunk's audio. A whole chunk costs ``encode_ms``, whatever its length
        (a session's first one ``encode_first_ms`` where the profile has it and ``first``). With ``encode_fixed_ms``,
        a piece of a chunk costs that fixed part plus its share of the rest; without it, any encoding costs
        ``encode_ms``.

            >>> p = CostProfile("p", [1], [0], [[10.0]], encode_ms=85.0, encode_fixed_ms=10.0, encode_first_ms=90.0)
            >>> p.encode_cost_ms(), p.encode_cost_ms(0.3), p.encode_cost_ms(first=True)
            (85.0, 32.5, 90.0)
        """
        if fraction >= 1.0 and first and self.encode_first_ms is not None:
            return self.encode_first_ms
        if self.encode_fixed_ms is None or fraction >= 1.0:
            return self.encode_ms
        return self.encode_fixed_ms + (self.encode_ms - self.encode_fixed_ms) * max(0.0, fraction)

    @property
    def encode_batches(self) -> bool:
        """True when the profile can charge a step of several sessions' encodings (``encode_batch_sizes``)."""
        return self.encode_batch_sizes is not None

    def encode_batch_ms(self, pieces: list[tuple[float, bool]]) -> float:
        """Cost of one step that encodes several sessions' audio, given as (audio fraction, first) per session: the
        dearest encoding alone times the factor for B = len(pieces).

            >>> p = CostProfile("p", [1], [0], [[10.0]], encode_ms=85.0, encode_fixed_ms=10.0,
            ...                 encode_batch_sizes=[1, 2, 4], encode_batch_factor=[1.0, 1.02, 1.06])
            >>> round(p.encode_batch_ms([(1.0, False), (0.2, False), (1.0, False)]), 3)   # 85 x 1.04
            88.4
        """
        if not self.encode_batches:
            raise ProfileError(f"profile {self.name}: no batch dimension for audio encodings (encode_batch_sizes, "
                               "encode_batch_factor); measure one with `python -m ticktock.calibrate`, or replay with "
                               "concurrency.batch_encodings=false")
        dearest = max(self.encode_cost_ms(fraction, first) for fraction, first in pieces)
        return dearest * batch_factor_at(self.encode_batch_sizes, self.encode_batch_factor, len(pieces))

    def forward_ms(self, query_tokens: int, context_tokens: int) -> float:
        i, wi = _interp(self.query_tokens, query_tokens)
        j, wj = _interp(self.context_tokens, context_tokens)
        table = self.forward_table

        def at(r: int, c: int) -> float:
            return table[min(r, len(table) - 1)][min(c, len(table[0]) - 1)]

        low = (1 - wj) * at(i, j) + wj * at(i, j + 1)
        high = (1 - wj) * at(i + 1, j) + wj * at(i + 1, j + 1)
        return max(0.0, (1 - wi) * low + wi * high)

    @property
    def batches(self) -> bool:
        """True when the profile can charge batched steps (it has ``batch_sizes`` and ``batch_factor``)."""
        return self.batch_sizes is not None

    def batch_forward_ms(self, shapes: list[tuple[int, int]]) -> float:
        """Cost of one batched step of forwards given as (query tokens, context tokens), one per session.

        Example::

            >>> p = CostProfile("p", [1, 11], [0, 1000], [[10.0, 12.0], [15.0, 17.0]], batch_sizes=[1, 2],
            ...                 batch_factor=[1.0, 1.1])
            >>> round(p.batch_forward_ms([(1, 500), (1, 0)]), 3)   # forward_ms(2, 2 x 500) x 1.1
            13.75
        """
        if not self.batches:
            raise ProfileError(f"profile {self.name}: no batch dimension (batch_sizes, batch_factor); measure one with "
                               "`python -m ticktock.calibrate`, or replay with concurrency.batching=false")
        size = len(shapes)
        cost = max(self.forward_ms(sum(q for q, _ in shapes), size * max(c for _, c in shapes)),
                   *(self.forward_ms(q, c) for q, c in shapes))
        return cost * batch_factor_at(self.batch_sizes, self.batch_factor, size)

    @staticmethod
    def constant(forward_ms: float, encode_ms: float = 0.0, batch_factor: float | None = None,
                 encode_fixed_ms: float | None = None, encode_batch_factor: float | None = None) -> "CostProfile":
        """Every forward costs ``forward_ms`` (tests); ``batch_factor``: a batched step of any size costs
        ``forward_ms`` times it; ``encode_fixed_ms``: see ``encode_cost_ms``; ``encode_batch_factor``: a step of
        several sessions' encodings costs the dearest of them times it."""
        batch = {} if batch_factor is None else {"batch_sizes": [1, 2], "batch_factor": [1.0, batch_factor]}
        if encode_batch_factor is not None:
            batch.update(encode_batch_sizes=[1, 2], encode_batch_factor=[1.0, encode_batch_factor])
        return CostProfile("constant", [1], [0], [[forward_ms]], encode_ms=encode_ms, provenance="constant (tests)",
                           encode_fixed_ms=encode_fixed_ms, **batch)

    @staticmethod
    def load(path: str | Path) -> "CostProfile":
        """Read and validate a profile file; a ``ProfileError`` names the file, the line and the field.

        Example::

            >>> import tempfile
            >>> path = Path(tempfile.mkdtemp()) / "p.yaml"
            >>> _ = path.write_text("query_tokens: [1]\\ncontext_tokens: [0]\\nforward_ms:\\n- [-100.0]\\n")
            >>> CostProfile.load(path)
            Traceback (most recent call last):
            ...
            ticktock.clocks.modeled.ProfileError: .../p.yaml:4: field 'forward_ms[0][0]': must be a finite number of milliseconds from 0 to 3600000 (one hour), got -100.0
            >>> _ = path.write_text("query_tokens: [1]\\ncontext_tokens: [0]\\nforward_ms: [[1.0]]\\nencode_fixd_ms: 2\\n")
            >>> CostProfile.load(path)
            Traceback (most recent call last):
            ...
            ticktock.clocks.modeled.ProfileError: .../p.yaml:4: field 'encode_fixd_ms': unknown field (did you mean 'encode_fixed_ms'?)
        """
        path = Path(path)
        if not path.is_file():
            raise ProfileError(f"{path}: cost profile not found")
        data, root = _read_yaml(path)
        if not isinstance(data, dict):
            raise ProfileError(f"{path}:1: expected a mapping of the profile's fields, got {type(data).__name__}")
        problem = profile_problem(data)
        if problem:
            keys, message = problem
            if message == "missing":
                raise ProfileError(f"{path}: field '{dotted(keys)}' missing")
            raise ProfileError(f"{path}:{_line_of(root, keys)}: field '{dotted(keys)}': {message}")
        return CostProfile(
            name=str(data.get("name", path.stem)),
            query_tokens=list(data["query_tokens"]),
            context_tokens=list(data["context_tokens"]),
            forward_table=[[float(v) for v in row] for row in data["forward_ms"]],
            encode_ms=float(data.get("encode_ms", 0.0)),
            model=str(data.get("model", "")),
            device=str(data.get("device", "")),
            provenance=str(data.get("provenance", "")),
            batch_sizes=list(data["batch_sizes"]) if data.get("batch_sizes") is not None else None,
            batch_factor=[float(v) for v in data["batch_factor"]] if data.get("batch_factor") is not None else None,
            encode_fixed_ms=float(data["encode_fixed_ms"]) if data.get("encode_fixed_ms") is not None else None,
            talkers=_talker_costs(data.get("talkers"), path.name),
            measured_on=measured_on_texts(data.get("measured_on")),
            encode_first_ms=float(data["encode_first_ms"]) if data.get("encode_first_ms") is not None else None,
            encode_batch_sizes=(list(data["encode_batch_sizes"]) if data.get("encode_batch_sizes") is not None
                                else None),
            encode_batch_factor=([float(v) for v in data["encode_batch_factor"]]
                                 if data.get("encode_batch_factor") is not None else None),
            sources=as_texts(data.get("sources")),
        )

    def unsourced(self) -> list[str]:
        """The numbers of this profile that name no source (``ticktock.clocks.sources``; empty for a shipped one)."""
        return unsourced(self.sources, self._present())

    def _present(self) -> set[str]:
        values = {"forward_ms": self.forward_table, "encode_ms": self.encode_ms, "encode_fixed_ms": self.encode_fixed_ms,
                  "encode_first_ms": self.encode_first_ms, "batch_factor": self.batch_factor,
                  "encode_batch_factor": self.encode_batch_factor}
        return present_fields(values, self.talkers)

    def talker_cost(self, name: str):
        """The ``TalkerCost`` of talker ``name``, else a ``TalkerCostError`` saying how to get one."""
        from ticktock.clocks.talker_cost import TalkerCostError

        if not self.talkers or name not in self.talkers:
            known = ", ".join(sorted(self.talkers or {})) or "none"
            raise TalkerCostError(f"cost profile {self.name} has no talker entry {name!r} (its talkers: {known}); measure one "
                              f"with `python -m ticktock.calibrate talker={name}` and add it under the profile's talkers:, "
                              "or replay with clock=wall")
        return self.talkers[name]

    def to_yaml(self) -> str:
        """The profile as its YAML file (``measured_on``, where present, one entry a line after the text fields; then
        the ``sources`` of the fields it has)."""
        import yaml

        head = {"name": self.name, "model": self.model, "device": self.device, "provenance": self.provenance}
        where = {"measured_on": self.measured_on} if self.measured_on is not None else {}
        present = self._present()  # a field set to None (or a talker removed) after the profile was made names no source
        named = {field: entry for field, entry in (self.sources or {}).items() if field in present}
        sources = {"sources": named} if named else {}
        data = {
            "encode_ms": round(self.encode_ms, 4),
            **({"encode_first_ms": round(self.encode_first_ms, 4)} if self.encode_first_ms is not None else {}),
            **({"encode_fixed_ms": round(self.encode_fixed_ms, 4)} if self.encode_fixed_ms is not None else {}),
            **({"encode_batch_sizes": self.encode_batch_sizes,
                "encode_batch_factor": [round(v, 4) for v in self.encode_batch_factor]} if self.encode_batches else {}),
            "query_tokens": self.query_tokens,
            "context_tokens": self.context_tokens,
            "forward_ms": [[round(v, 4) for v in row] for row in self.forward_table],
            **({"batch_sizes": self.batch_sizes, "batch_factor": [round(v, 4) for v in self.batch_factor]}
               if self.batches else {}),
            **({"talkers": {name: cost.to_json() for name, cost in self.talkers.items()}} if self.talkers else {}),
        }
        class Dumper(yaml.SafeDumper):
            def ignore_aliases(self, data):  # a list given twice (the two batch_sizes) is written twice, not as &id001
                return True

        return "".join(yaml.dump(part, Dumper=Dumper, sort_keys=False, width=120, default_flow_style=style)
                       for part, style in ((head, False), (where, False), (sources, False), (data, None)) if part)


_TEXT = ("name", "model", "device", "provenance")
_KNOWN = (*_TEXT, "encode_ms", "encode_fixed_ms", "encode_first_ms", "query_tokens", "context_tokens", "forward_ms",
          "batch_sizes", "batch_factor", "encode_batch_sizes", "encode_batch_factor", "talkers", "measured_on", "sources")


def profile_problem(data: dict, talkers_checked: bool = False) -> tuple[tuple, str] | None:
    """The first problem of a profile's fields, as (field path, what is wrong), or None when they are valid.

    Checked: every field is a known one (``_KNOWN``); the text fields are text; ``query_tokens`` (integers >= 1)
    and ``context_tokens`` (integers >= 0) are non-empty, increasing and at most ``MAX_TOKENS``; ``forward_ms`` is
    one row per query length of one value per context length; every cost (``forward_ms``, ``encode_ms``) is a
    finite number of milliseconds from 0 to ``MAX_COST_MS``, and ``encode_fixed_ms`` (optional) at most
    ``encode_ms``, ``encode_first_ms`` (optional) a cost; the batch fields of forwards and of encodings
    (``encode_batch_problem``), the talkers (unless ``talkers_checked``: a ``CostProfile``'s are parsed already),
    ``measured_on`` (``measured_on_problem``) and ``sources`` (``ticktock.clocks.sources``) where present.

    Example::

        >>> profile_problem({"query_tokens": [1, 4], "context_tokens": [0], "forward_ms": [[1.0], [2.0]]}) is None
        True
        >>> profile_problem({"query_tokens": [1], "context_tokens": [0], "forward_ms": [[1.0]], "encode_ms": -5})
        (('encode_ms',), 'must be a finite number of milliseconds from 0 to 3600000 (one hour), got -5')
        >>> profile_problem({"query_tokens": [1], "context_tokens": [0], "forward_ms": [[1.0]], "endoce_ms": 5})
        (('endoce_ms',), "unknown field (did you mean 'encode_ms'?)")
        >>> profile_problem({"query_tokens": [1, 4], "context_tokens": [0], "forward_ms": [[1.0]]})
        (('forward_ms',), 'must be 2 rows (one per query_tokens value), got 1')
    """
    for key in data:
        if key not in _KNOWN:
            return (key,), unknown_field(key)
    for key in _TEXT:
        if isinstance(data.get(key), (list, tuple, dict, set)):
            return (key,), f"must be text, got {type(data[key]).__name__}"
    for key in ("query_tokens", "context_tokens", "forward_ms"):
        if data.get(key) is None:
            return (key,), "missing"
    for key, least in (("query_tokens", 1), ("context_tokens", 0)):
        problem = _axis_problem(data[key], least)
        if problem:
            return (key, *problem[0]), problem[1]
    rows, columns = len(data["query_tokens"]), len(data["context_tokens"])
    table = data["forward_ms"]
    if not isinstance(table, (list, tuple)) or len(table) != rows:
        got = f"{len(table)}" if isinstance(table, (list, tuple)) else shown(table)
        return ("forward_ms",), f"must be {rows} rows (one per query_tokens value), got {got}"
    for i, row in enumerate(table):
        if not isinstance(row, (list, tuple)) or len(row) != columns:
            got = f"{len(row)} values" if isinstance(row, (list, tuple)) else shown(row)
            return ("forward_ms", i), f"must be a row of {columns} values (one per context_tokens value), got {got}"
        for j, value in enumerate(row):
            if not _is_cost(value):
                return ("forward_ms", i, j), f"{COST}, got {shown(value)}"
    encode = data.get("encode_ms", 0.0)
    if not _is_cost(encode):
        return ("encode_ms",), f"{COST}, got {shown(encode)}"
    fixed = data.get("encode_fixed_ms")
    if fixed is not None and not (_is_cost(fixed) and fixed <= encode):
        return ("encode_fixed_ms",), f"must be null or a number from 0 to encode_ms = {shown(encode)} (milliseconds), got {shown(fixed)}"
    first = data.get("encode_first_ms")
    if first is not None and not _is_cost(first):
        return ("encode_first_ms",), f"must be null or a finite number of milliseconds from 0 to {MAX_COST_MS:.0f}, got {shown(first)}"
    talkers = data.get("talkers")
    return (_batch_problem(data.get("batch_sizes"), data.get("batch_factor"))
            or encode_batch_problem(data.get("encode_batch_sizes"), data.get("encode_batch_factor"))
            or (None if talkers_checked else _talkers_problem(talkers)) or measured_on_problem(data.get("measured_on"))
            or sources_problem(data.get("sources"), present_fields(data, talkers if isinstance(talkers, dict) else None)))


def _talkers_problem(talkers) -> tuple[tuple, str] | None:
    """``talkers``: absent, or a mapping of talker name to its cost (``ticktock.talkers.base.cost_problem``)."""
    from ticktock.clocks.talker_cost import cost_problem

    if talkers is None:
        return None
    if not isinstance(talkers, dict):
        return ("talkers",), f"must be a mapping of talker name to its cost, got {shown(talkers)}"
    for name, cost in talkers.items():
        problem = cost_problem(cost)
        if problem:
            return (("talkers", str(name), problem[0]) if problem[0] else ("talkers", str(name))), problem[1]
    return None


def _talker_costs(talkers, where: str) -> dict | None:
    from ticktock.clocks.talker_cost import TalkerCost

    if not talkers:
        return None
    return {str(name): TalkerCost.parse(cost, f"{where}: talkers.{name}") for name, cost in talkers.items()}


MEASURED_ON = ("device", "driver", "torch", "cuda", "cudnn", "date", "command")  # a profile's measured_on entries


def measured_on_problem(block) -> tuple[tuple, str] | None:
    """``measured_on``: absent, or a mapping of entries of ``MEASURED_ON`` to text (a number or a date is read as its
    text) or null.

    >>> measured_on_problem({"device": "NVIDIA A100 80GB PCIe", "cuda": None, "date": "2026-12-05"}) is None
    True
    >>> measured_on_problem({"devise": "NVIDIA A100 80GB PCIe"})
    (('measured_on', 'devise'), "unknown entry (did you mean 'device'?)")
    >>> measured_on_problem({"torch": ["2.13.0"]})
    (('measured_on', 'torch'), "must be text or null, got ['2.13.0']")
    """
    if block is None:
        return None
    if not isinstance(block, dict):
        return ("measured_on",), f"must be a mapping of {', '.join(MEASURED_ON)} (each text or null), got {shown(block)}"
    for key, value in block.items():
        if key not in MEASURED_ON:
            close = difflib.get_close_matches(str(key), MEASURED_ON, n=1)
            hint = f"did you mean {close[0]!r}?" if close else f"known: {', '.join(MEASURED_ON)}"
            return ("measured_on", str(key)), f"unknown entry ({hint})"
        if isinstance(value, (list, tuple, dict, set, bool)):
            return ("measured_on", str(key)), f"must be text or null, got {shown(value)}"
    return None


def measured_on_texts(block) -> dict | None:
    """A checked ``measured_on`` block with every entry as text (or None), in the order of ``MEASURED_ON``.

    >>> import datetime
    >>> measured_on_texts({"date": datetime.date(2026, 12, 5), "cudnn": 90100, "driver": None})
    {'driver': None, 'cudnn': '90100', 'date': '2026-12-05'}
    """
    if block is None:
        return None
    return {key: (None if block[key] is None else str(block[key])) for key in MEASURED_ON if key in block}


def _batch_problem(sizes, factors) -> tuple[tuple, str] | None:
    """Both batch fields or neither; sizes increasing integers from 1; one positive factor per size."""
    problem = _batch_axis_problem(sizes, factors, "batch_sizes", "batch_factor")
    if problem or sizes is None:
        return problem
    for i, value in enumerate(factors):
        if not _is_cost(value) or not 0 < value <= MAX_BATCH_FACTOR:
            return ("batch_factor", i), f"must be a number > 0 and <= {MAX_BATCH_FACTOR:g}, got {shown(value)}"
    return None


MAX_BATCH_FACTOR = 100.0  # a batched step measured against the profile's own batch model (1.0: exactly the model)


def encode_batch_problem(sizes, factors) -> tuple[tuple, str] | None:
    """The batch dimension of audio encodings: both fields or neither; sizes increasing integers from 1; one factor
    per size, 1.0 at B = 1, none below one encoding (1.0) and none below the factor of a smaller batch.

    >>> encode_batch_problem([1, 2, 4], [1.0, 1.1, 1.05])
    (('encode_batch_factor', 2), 'must not fall as the batch grows (a batch of 4 costs no less than a batch of 2: 1.1), got 1.05')
    >>> encode_batch_problem([1, 2], [1.0, 0.9])
    (('encode_batch_factor', 1), 'must be >= 1 (a batch of encodings costs at least one encoding), got 0.9')
    >>> encode_batch_problem(None, [1.0, 1.1])
    (('encode_batch_sizes',), 'missing (encode_batch_sizes and encode_batch_factor go together)')
    """
    problem = _batch_axis_problem(sizes, factors, "encode_batch_sizes", "encode_batch_factor")
    if problem or sizes is None:
        return problem
    for i, value in enumerate(factors):
        if not _is_cost(value) or value > MAX_BATCH_FACTOR:
            return ("encode_batch_factor", i), f"must be a number from 1 to {MAX_BATCH_FACTOR:g}, got {shown(value)}"
        if i == 0 and value != 1.0:
            return ("encode_batch_factor", 0), f"must be 1.0 (a batch of one is one encoding), got {shown(value)}"
        if value < 1.0:
            return ("encode_batch_factor", i), f"must be >= 1 (a batch of encodings costs at least one encoding), got {shown(value)}"
        if i and value < factors[i - 1]:
            return ("encode_batch_factor", i), (f"must not fall as the batch grows (a batch of {sizes[i]} costs no less "
                                                f"than a batch of {sizes[i - 1]}: {shown(factors[i - 1])}), got {shown(value)}")
    return None


def _batch_axis_problem(sizes, factors, sizes_key: str, factors_key: str) -> tuple[tuple, str] | None:
    """A batch dimension's shape: both fields or neither, sizes increasing integers from 1, one factor per size (the
    factors' values are checked by the caller)."""
    if sizes is None and factors is None:
        return None
    if sizes is None or factors is None:
        return ((sizes_key if sizes is None else factors_key),), f"missing ({sizes_key} and {factors_key} go together)"
    problem = _axis_problem(sizes, 1)
    if problem:
        return (sizes_key, *problem[0]), problem[1]
    if sizes[0] != 1:
        return (sizes_key, 0), f"must start at 1, got {shown(sizes[0])}"
    if not isinstance(factors, (list, tuple)) or len(factors) != len(sizes):
        return (factors_key,), f"must be {len(sizes)} numbers (one per {sizes_key} value), got {shown(factors)}"
    return None


def batch_factor_at(sizes: list[int], factors: list[float], size: int) -> float:
    """The batch factor for ``size`` sessions: linear between the listed sizes, the last factor beyond them.

    >>> round(batch_factor_at([1, 2, 4], [1.0, 1.1, 1.3], 3), 6), batch_factor_at([1, 2, 4], [1.0, 1.1, 1.3], 8)
    (1.2, 1.3)
    """
    if size >= sizes[-1]:
        return factors[-1]
    i, w = _interp(sizes, size)
    return (1 - w) * factors[i] + w * factors[min(i + 1, len(factors) - 1)]


def unknown_field(key) -> str:
    """What is wrong with an unknown profile field: the closest known name, else the known names.

    >>> unknown_field("encode_fixd_ms")
    "unknown field (did you mean 'encode_fixed_ms'?)"
    """
    close = difflib.get_close_matches(str(key), _KNOWN, n=1)
    return f"unknown field (did you mean {close[0]!r}?)" if close else f"unknown field (known: {', '.join(_KNOWN)})"


def _axis_problem(values, least: int) -> tuple[tuple, str] | None:
    if not isinstance(values, (list, tuple)) or not values:
        return (), f"must be a non-empty increasing list of integers >= {least}, got {shown(values)}"
    for i, value in enumerate(values):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or not least <= value <= MAX_TOKENS:
            return (i,), f"must be an integer from {least} to {MAX_TOKENS}, got {shown(value)}"
        if i and value <= values[i - 1]:
            return (i,), f"must be increasing: {shown(value)} follows {shown(values[i - 1])}"
    return None


def _is_cost(value) -> bool:
    """Whether ``value`` is a cost: a number (not a boolean) from 0 to ``MAX_COST_MS``, compared before anything
    converts it to a float (an integer of 400 digits is out of range, not an ``OverflowError``).

    >>> _is_cost(2.5), _is_cost(10 ** 400), _is_cost(float("nan")), _is_cost(True)
    (True, False, False, False)
    """
    return (not isinstance(value, bool) and isinstance(value, numbers.Real) and 0 <= value <= MAX_COST_MS
            and math.isfinite(value))


def dotted(keys: tuple) -> str:
    """A field path as written in messages (a name that is not printable, e.g. a line break, as its repr, so the
    message stays one line).

    >>> dotted(("forward_ms", 2, 1)), dotted(("encode_ms",)), dotted(("\\n",))
    ('forward_ms[2][1]', 'encode_ms', "'\\\\n'")
    """
    names = [k if isinstance(k, int) or str(k).isprintable() else repr(k) for k in keys]
    return "".join(f"[{k}]" if isinstance(k, int) else (f".{k}" if i else str(k)) for i, k in enumerate(names))


def _read_yaml(path: Path):
    """The file's data and its YAML node tree (for line numbers); a syntax error names the line and column, and
    so does a byte that is not UTF-8. Parsed by libyaml where PyYAML has it (fast, and it refuses nesting beyond
    1000 levels, on which the pure-Python parser spends seconds before a RecursionError); a syntax error is then
    described by the pure-Python parser, whose messages say what it found."""
    import yaml

    try:
        raw = path.read_bytes()
    except OSError as err:
        raise ProfileError(f"{path}: cannot read the cost profile ({err.strerror or err})") from None
    text = _utf8(raw, path)
    fast = getattr(yaml, "CSafeLoader", None)
    try:
        loader = fast or yaml.SafeLoader
        return yaml.load(text, Loader=_long_integers_kept(loader)), yaml.compose(text, Loader=loader)
    except RecursionError:  # the pure-Python parser, nested too deeply
        raise ProfileError(f"{path}: not a cost profile (nested too deeply)") from None
    except yaml.YAMLError as err:
        raise ProfileError(_yaml_problem(path, err if fast is None else _described(text, err))) from None


class LongInteger:
    """An integer written with more digits than Python converts from text (``sys.get_int_max_str_digits``), kept as
    its text so that the field's own check refuses it, naming the file, line and field, instead of a ``ValueError``.

    >>> LongInteger("1" + "0" * 5000)
    an integer of 5001 digits
    """

    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        return f"an integer of {len(self.text.lstrip('+-'))} digits"

    __str__ = __repr__


def _long_integers_kept(loader: type) -> type:
    """``loader`` with integers too long to convert read as ``LongInteger``."""
    import yaml

    def integer(self, node):
        try:
            return yaml.constructor.SafeConstructor.construct_yaml_int(self, node)
        except ValueError:
            return LongInteger(str(node.value))

    kept = type(f"LongIntegers{loader.__name__}", (loader,), {})
    kept.add_constructor("tag:yaml.org,2002:int", integer)
    return kept


def _described(text: str, err: Exception) -> Exception:
    """The pure-Python parser's error for ``text`` where libyaml raised ``err`` (its own when nesting was the problem,
    or when the pure-Python parser does not fail the same way)."""
    import yaml

    if "nesting depth" in str(getattr(err, "problem", "")):
        return err
    try:
        yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as described:
        return described
    except RecursionError:
        pass
    return err


def _yaml_problem(path: Path, err: Exception) -> str:
    mark = getattr(err, "problem_mark", None)
    where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark is not None else str(path)
    problem = getattr(err, "problem", None) or str(err).splitlines()[0]
    return f"{where}: not valid YAML ({problem})"


def _utf8(raw: bytes, path: Path) -> str:
    """``raw`` decoded as UTF-8, else a ``ProfileError`` naming the line and column of the first bad byte."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = raw.count(b"\n", 0, err.start) + 1
        column = err.start - (raw.rfind(b"\n", 0, err.start) + 1) + 1
        raise ProfileError(f"{path}:{line}:{column}: not UTF-8 text (byte 0x{raw[err.start]:02x})") from None


def _line_of(node, keys: tuple) -> int:
    """The 1-based line of the node at ``keys`` (or of the deepest node on the way that exists)."""
    import yaml

    for key in keys:
        found = None
        if isinstance(node, yaml.MappingNode):
            found = next((value for name, value in node.value if str(name.value) == str(key)), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
            found = node.value[key]
        if found is None:
            break
        node = found
    return node.start_mark.line + 1


class ModeledStopwatch(Stopwatch):
    def __init__(self, profile: CostProfile, encode_scale: float = 1.0):
        super().__init__()
        self.profile = profile
        self.encode_scale = encode_scale
        self.total = 0.0

    def elapsed_ms(self) -> float:
        return self.total

    def _advance(self, ms: float) -> None:
        self.total += ms

    def forward_estimate_ms(self, query_tokens: int, context_tokens: int) -> float:
        return self.profile.forward_ms(query_tokens, context_tokens)

    def charge_forward(self, query_tokens: int, context_tokens: int, wall_ms: float) -> float:
        cost = self.profile.forward_ms(query_tokens, context_tokens)
        self.total += cost
        return cost

    def charge_encode(self, wall_ms: float, fraction: float = 1.0, first: bool = False) -> float:
        cost = self.profile.encode_cost_ms(fraction, first) * self.encode_scale
        self.total += cost
        return cost

    def charge_encode_batch(self, pieces: list[tuple[float, bool]], wall_ms: float) -> float:
        cost = self.profile.encode_batch_ms(pieces) * self.encode_scale
        self.total += cost
        return cost

    def charge_batch(self, shapes: list[tuple[int, int]], wall_ms: float) -> float:
        cost = self.profile.batch_forward_ms(shapes)
        self.total += cost
        return cost

    def charge_priced(self, cost_ms: float | None, wall_ms: float) -> float:
        if cost_ms is None:
            raise TypeError("the modeled clock charges priced work only (a talker without a cost)")
        self.total += cost_ms
        return cost_ms


MAX_ENCODE_SCALE = 100.0  # clock.encode_scale: beyond a hundredfold the what-if is a typo, not a question


class ModeledClock(Clock):
    """Charges each forward from ``profile`` (a CostProfile or a path to its YAML), and each audio encoding from it
    times ``encode_scale`` (a what-if, see the module docstring; checked: ``encode_scale_problem``).

    Example::

        >>> clock = ModeledClock(CostProfile.constant(forward_ms=20.0, encode_ms=8.0), encode_scale=0.5)
        >>> watch = clock.stopwatch()
        >>> watch.charge_encode(wall_ms=1.0), watch.charge_forward(4, 100, wall_ms=1.0)
        (4.0, 20.0)
        >>> clock.describe()["encode_scale"], "encode_scale" in ModeledClock(clock.profile).describe()
        (0.5, False)
        >>> ModeledClock(clock.profile, encode_scale=0)
        Traceback (most recent call last):
        ...
        ticktock.clocks.modeled.ProfileError: clock.encode_scale: must be a finite number > 0 and <= 100 (the factor on the cost profile's audio-encoding costs; 1: as profiled), got 0
    """

    name = "modeled"

    def __init__(self, profile: CostProfile | str | Path, synchronize=None, encode_scale: float = 1.0):
        problem = encode_scale_problem(encode_scale)
        if problem:
            raise ProfileError(f"clock.encode_scale: {problem}")
        self.encode_scale = float(encode_scale)
        self.profile = profile if isinstance(profile, CostProfile) else CostProfile.load(profile)

    def stopwatch(self, window_ms: float | None = None) -> ModeledStopwatch:
        return ModeledStopwatch(self.profile, self.encode_scale)

    def estimate_ms(self, query_tokens: int, context_tokens: int) -> float:
        return self.profile.forward_ms(query_tokens, context_tokens)

    def estimate_batch_ms(self, shapes: list[tuple[int, int]]) -> float | None:
        return self.profile.batch_forward_ms(shapes) if self.profile.batches else None

    @property
    def batches_encodings(self) -> bool:
        return self.profile.encode_batches

    def estimate_encode_ms(self, pieces: list[tuple[float, bool]]) -> float | None:
        if len(pieces) == 1:
            return self.profile.encode_cost_ms(*pieces[0]) * self.encode_scale
        return self.profile.encode_batch_ms(pieces) * self.encode_scale if self.profile.encode_batches else None

    def talker_cost(self, name: str):
        return self.profile.talker_cost(name)

    def describe(self) -> dict:
        """The clock for run.json (``clock``): its profile's name, model, device and provenance, the sources of its
        numbers (``profile_sources``) where it names them, and ``encode_scale`` only when it is not 1 (so a run as
        profiled is described as before the option existed)."""
        p = self.profile
        scaled = {"encode_scale": self.encode_scale} if self.encode_scale != 1.0 else {}
        sources = {"profile_sources": p.sources} if p.sources else {}
        return {"name": self.name, "profile": p.name, "profile_model": p.model, "profile_device": p.device,
                "profile_provenance": p.provenance, **sources, **scaled}


def encode_scale_problem(value) -> str | None:
    """What is wrong with a ``clock.encode_scale`` value (None: nothing): it must be a finite number > 0 and at most
    ``MAX_ENCODE_SCALE``.

    >>> encode_scale_problem(0.25) is None, encode_scale_problem(1) is None
    (True, True)
    >>> encode_scale_problem("half")
    "must be a finite number > 0 and <= 100 (the factor on the cost profile's audio-encoding costs; 1: as profiled), got 'half'"
    """
    if (not isinstance(value, bool) and isinstance(value, numbers.Real) and 0 < value <= MAX_ENCODE_SCALE
            and math.isfinite(value)):  # compared first: a huge integer is out of range, not an OverflowError
        return None
    return (f"must be a finite number > 0 and <= {MAX_ENCODE_SCALE:g} (the factor on the cost profile's "
            f"audio-encoding costs; 1: as profiled), got {shown(value)}")
