"""Capacity per device: how many sessions one device serves within the deadline criteria.

A service owner buys devices by capacity: per decoder, with and without ``concurrency.batching``, the largest N
(``concurrency.sessions``: sessions replayed at once on one device) at which the device keeps deadline misses at
or below 5% of chunks (chunks.parquet ``missed_deadline``) and the 95th-percentile response onset at or below
500 ms (``response_ms`` of the chunks with ``is_onset``): ``CapacityCriteria``, judged per run by ``verdict``.

``search_capacity`` picks which N to replay (``scripts/bench_capacity.py`` runs it: doubling N, then bisecting),
assuming misses and onsets only grow with N. ``capacity_data`` judges every N present in the results, per setup
group (everything but how the device was shared, as Figure 4c: ``analysis.fig4c_data``), decoder, batching and
batched encodings (``concurrency.batch_encodings``);
``capacity_table`` and ``capacity_figure`` are drawn from it.

Example::

    >>> search_capacity(lambda n: n <= 6, limit=16).capacity
    6
    >>> results = load_results(["results/capacity"])                       # doctest: +SKIP
    >>> capacity_table(results).frame[["decoder", "batching", "capacity", "x AR"]]   # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

from ticktock.tables.analysis import FIG4C_SETUP_FIELDS, group_label, sharing_cells, sharing_clock_note, shown_names
from ticktock.tables.common import Table, provenance_notes, setup_columns, varying
from ticktock.tables.load import Cell, Results, decoder_order


@dataclass(frozen=True)
class CapacityCriteria:
    """What one device must keep at N sessions: the share of chunks that miss their deadline at most
    ``max_miss_rate``, and the 95th-percentile response onset at most ``max_p95_onset_ms``.

    >>> CapacityCriteria().describe()
    'deadline misses <= 5% of chunks and 95th-percentile response onset <= 500 ms'
    >>> CapacityCriteria(max_miss_rate=1.5)
    Traceback (most recent call last):
    ...
    ValueError: max_miss_rate: must be a share from 0 to 1, got 1.5
    """

    max_miss_rate: float = 0.05
    max_p95_onset_ms: float = 500.0

    def __post_init__(self):
        if not 0.0 <= self.max_miss_rate <= 1.0:  # NaN fails too
            raise ValueError(f"max_miss_rate: must be a share from 0 to 1, got {self.max_miss_rate!r}")
        if not 0.0 < self.max_p95_onset_ms < math.inf:
            raise ValueError(f"max_p95_onset_ms: must be a finite number of ms > 0, got {self.max_p95_onset_ms!r}")

    def describe(self) -> str:
        return (f"deadline misses <= {self.max_miss_rate:.0%} of chunks and 95th-percentile response onset <= "
                f"{self.max_p95_onset_ms:g} ms")


@dataclass(frozen=True)
class Verdict:
    """One run (or cell) against the criteria: its deadline-miss rate, the 95th percentile of its response onsets
    (NaN without onset chunks), how many onset chunks, whether it passes, and how many of its sessions failed or
    ended early (``unserved``: any fails the N, whatever its chunks say)."""

    miss_rate: float
    p95_onset_ms: float
    onsets: int
    passes: bool
    failed: int = 0
    partial: int = 0


def verdict(chunks: pd.DataFrame, criteria: CapacityCriteria = CapacityCriteria()) -> Verdict:
    """Judge a chunks table (chunks.parquet) against ``criteria``: the miss rate over the chunks with a
    ``missed_deadline`` value, the 95th percentile (numpy's default, linear) of ``response_ms`` over the chunks with
    ``is_onset``. Without onset chunks the p95 is NaN and the onset criterion counts as met (nothing started a reply
    late); without any chunk nothing shows the device keeps up, and the verdict fails.

    >>> chunks = pd.DataFrame({"missed_deadline": [False, False, False, True], "is_onset": [True, True, False, True],
    ...                        "response_ms": [100.0, 300.0, 900.0, 500.0]})
    >>> verdict(chunks)
    Verdict(miss_rate=0.25, p95_onset_ms=480.0, onsets=3, passes=False, failed=0, partial=0)
    >>> verdict(chunks, CapacityCriteria(max_miss_rate=0.25))
    Verdict(miss_rate=0.25, p95_onset_ms=480.0, onsets=3, passes=True, failed=0, partial=0)
    >>> verdict(chunks.assign(is_onset=False, missed_deadline=False))
    Verdict(miss_rate=0.0, p95_onset_ms=nan, onsets=0, passes=True, failed=0, partial=0)
    """
    missed = chunks["missed_deadline"].dropna().astype(bool)
    onsets = chunks.loc[chunks["is_onset"].fillna(False).astype(bool), "response_ms"].dropna()
    miss_rate = float(missed.mean()) if len(missed) else math.nan
    p95 = float(np.percentile(onsets.to_numpy(float), 95)) if len(onsets) else math.nan
    passes = bool(len(missed)) and miss_rate <= criteria.max_miss_rate and (
        not len(onsets) or p95 <= criteria.max_p95_onset_ms)
    return Verdict(miss_rate, p95, len(onsets), bool(passes))


def unserved(result: Verdict, failed: list[str], partial: list[str]) -> Verdict:
    """``result`` with the sessions its run did not serve to the end: ``failed`` (refused, or stopped with nothing
    written) and ``partial`` (ended early with some units written); either fails it.

    >>> unserved(Verdict(0.0, 120.0, 4, True), ["s3"], [])
    Verdict(miss_rate=0.0, p95_onset_ms=120.0, onsets=4, passes=False, failed=1, partial=0)
    """
    return replace(result, passes=result.passes and not failed and not partial, failed=len(failed),
                   partial=len(partial))


def run_verdict(run_dir: Path, criteria: CapacityCriteria = CapacityCriteria()) -> Verdict:
    """The verdict of one run folder as a capacity search judges N: its chunks (``verdict``), failed by any session
    its run.json says was not served to the end (``unserved``: refused, failed or partial).

    >>> run_verdict(Path("results/capacity/ar-N4"))                                    # doctest: +SKIP
    Verdict(miss_rate=0.0, p95_onset_ms=180.0, onsets=40, passes=False, failed=1, partial=0)
    """
    import json

    import pyarrow.parquet as pq

    meta = json.loads((run_dir / "run.json").read_text())
    ids = [[entry.get("session_id") for entry in meta.get(key) or [] if isinstance(entry, dict)]
           for key in ("failed_sessions", "partial_sessions")]
    return unserved(verdict(pq.read_table(run_dir / "chunks.parquet").to_pandas(), criteria), *ids)


def unserved_sessions(cell: Cell) -> tuple[list[str], list[str]]:
    """The sessions the cell's runs did not serve to the end: run.json ``failed_sessions`` and ``partial_sessions``
    (lists of objects with a ``session_id``; a run written before either key existed has none), each id once.

    >>> from ticktock.tables.load import Run, Setup
    >>> meta = {"failed_sessions": [{"session_id": "s3", "error": "refused: server full"}],
    ...         "partial_sessions": [{"session_id": "s2", "reason": "closed", "failed_at_unit": 4}]}
    >>> run = Run(Path("r"), meta, pd.DataFrame(), pd.DataFrame())
    >>> unserved_sessions(Cell(Setup("m", "live:x", "d", 0.0, 0, 1.0, 0), "ar", [run], pd.DataFrame(), pd.DataFrame()))
    (['s3'], ['s2'])
    """
    found = {"failed_sessions": {}, "partial_sessions": {}}
    for run in cell.runs:
        for key, ids in found.items():
            entries = run.meta.get(key) or []
            for entry in entries if isinstance(entries, list) else [entries]:
                ids.setdefault(str(entry.get("session_id") if isinstance(entry, dict) else entry), None)
    return list(found["failed_sessions"]), list(found["partial_sessions"])


def shortfall(result: Verdict, criteria: CapacityCriteria = CapacityCriteria()) -> str:
    """Which criteria a failing verdict missed, in words ('' for a pass); sessions that failed or ended early first.

    >>> shortfall(Verdict(0.125, 620.0, 8, False))
    'miss 12.5% > 5%, p95 onset 620 ms > 500 ms'
    >>> shortfall(Verdict(math.nan, math.nan, 0, False))
    'no chunks'
    >>> shortfall(Verdict(0.0, 120.0, 4, False, failed=1, partial=2))
    '1 session failed, 2 sessions partial'
    """
    if result.passes:
        return ""
    parts = [f"{n} session{'' if n == 1 else 's'} {what}" for n, what in ((result.failed, "failed"),
                                                                           (result.partial, "partial")) if n]
    if math.isnan(result.miss_rate):
        return ", ".join([*parts, "no chunks"])
    if result.miss_rate > criteria.max_miss_rate:
        parts.append(f"miss {result.miss_rate:.1%} > {criteria.max_miss_rate:.0%}")
    if result.onsets and result.p95_onset_ms > criteria.max_p95_onset_ms:
        parts.append(f"p95 onset {result.p95_onset_ms:.0f} ms > {criteria.max_p95_onset_ms:g} ms")
    return ", ".join(parts)


@dataclass(frozen=True)
class CapacitySearch:
    """What ``search_capacity`` found: the capacity, every N it tried with whether it passed (in the order tried),
    and its limit (a capacity equal to the limit is a lower bound: ``at_limit``)."""

    capacity: int
    tried: dict[int, bool] = field(default_factory=dict)
    limit: int = 0

    @property
    def at_limit(self) -> bool:
        return self.capacity == self.limit


def search_capacity(passes: Callable[[int], bool], limit: int) -> CapacitySearch:
    """The largest N from 1 to ``limit`` for which ``passes(N)``: N = 1, 2, 4, ... doubling while it passes (the
    last step capped at ``limit``, never beyond), then bisecting between the last N that passed and the first that
    failed. Capacity 0 when N = 1 fails. It assumes that misses and onsets only grow with N (a pass above a failing
    N is never looked for), and calls ``passes`` once per N.

    >>> found = search_capacity(lambda n: n <= 6, limit=16)
    >>> found.capacity, found.tried
    (6, {1: True, 2: True, 4: True, 8: False, 6: True, 7: False})
    >>> search_capacity(lambda n: True, limit=5).tried, search_capacity(lambda n: False, limit=5).capacity
    ({1: True, 2: True, 4: True, 5: True}, 0)
    """
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ValueError(f"limit: must be a whole number >= 1, got {limit!r}")
    tried: dict[int, bool] = {}

    def check(n: int) -> bool:
        tried[n] = bool(passes(n))
        return tried[n]

    if not check(1):
        return CapacitySearch(0, tried, limit)
    low, high = 1, None
    while low < limit:
        n = min(2 * low, limit)
        if not check(n):
            high = n
            break
        low = n
    while high is not None and high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if check(middle) else (low, middle)
    return CapacitySearch(low, tried, limit)


def capacity_of(passes: dict[int, bool]) -> float:
    """The capacity the N tried show: the largest N such that every N tried up to it passes; 0 when N = 1 fails,
    NaN when the smallest N tried is above 1 and fails (below it nothing was tried).

    >>> capacity_of({1: True, 2: True, 4: False, 3: True}), capacity_of({1: True, 2: False, 4: True})
    (3, 1)
    >>> capacity_of({1: False}), capacity_of({4: False}), capacity_of({2: True})
    (0, nan, 2)
    """
    capacity = 0
    for n in sorted(passes):
        if not passes[n]:
            return math.nan if capacity == 0 and n > 1 else capacity
        capacity = n
    return capacity


# --- from results ------------------------------------------------------------------------------------------------

LINE_FIELDS = ("max_batch", "stagger", "draft_policy", "draft_policy_args")  # what else names a line, with batching
LINE_COLUMNS = ["group", "label", "batching", "batched encodings"]  # a line's rows in ``capacity_data``
MIN_ONSETS = 30  # fewer onset chunks than this behind a capacity's p95 onset: the table says so


def _line_key(cell: Cell) -> tuple:
    """A line of capacity: the setup group, the decoder, batching, batched encodings and the rest of how the device
    was shared, but N."""
    setup = cell.setup
    rest = tuple(getattr(setup, name) for name in LINE_FIELDS) if setup.shares_device else (None, "", "", "")
    return (setup.without_sharing(), cell.decoder, setup.batching, setup.batch_encodings, *rest)


def capacity_lines(results: Results) -> dict[tuple, list[Cell]]:
    """The cells of every setup group with a concurrency run, as lines by N: per (group, decoder, batching, batched
    encodings, max batch, stagger, draft policy), its cells. The run of one session alone (N = 1, no batching) is the
    start of every unbatched line (neither forwards nor encodings batched) of its decoder in its group; a decoder with
    no unbatched run at N > 1 has no unbatched line (``alone_only``)."""
    cells = sharing_cells(results)
    lines: dict[tuple, list[Cell]] = {}
    for cell in cells:
        if cell.setup.shares_device:
            lines.setdefault(_line_key(cell), []).append(cell)
    for cell in cells:
        if not cell.setup.shares_device:
            for key in [key for key in lines if key[:4] == _line_key(cell)[:4]]:
                lines[key].insert(0, cell)
    order = sorted(lines, key=lambda k: (tuple(map(str, k[0])), k[2], k[3], decoder_order(k[1]),
                                         tuple(map(str, k[4:]))))
    return {key: sorted(lines[key], key=lambda c: c.setup.concurrency) for key in order}


def alone_only(results: Results) -> list[Cell]:
    """The runs of one session alone that start no line: their decoder has no unbatched run at N > 1 in their group."""
    cells = sharing_cells(results)
    unbatched = {_line_key(c)[:4] for c in cells if c.setup.shares_device}
    return [c for c in cells if not c.setup.shares_device and _line_key(c)[:4] not in unbatched]


def _labels(keys: list[tuple]) -> dict[tuple, str]:
    """Row labels: the decoder, then each other sharing field that takes several values among the lines (a draft
    policy's settings when one policy runs with several).

    >>> keys = [("g", "ar", False, False, None, "random", "expected_savings", '{"speech_dbfs": -45.0}'),
    ...         ("g", "sl", True, False, None, "random", "round_robin", "")]
    >>> list(_labels(keys).values())
    ['ar, expected_savings', 'sl, round_robin']
    """
    several = [i for i in range(4, 7) if len({k[i] for k in keys}) > 1]
    if any(len({k[7] for k in keys if k[6] == policy}) > 1 for policy in {k[6] for k in keys}):
        several.append(7)  # a policy's settings, when one policy runs with several
    words = {4: lambda v: f"max batch {v or 'all'}", 5: lambda v: f"stagger {v}", 6: lambda v: v or "no draft policy",
             7: lambda v: v or "(default settings)"}
    return {key: ", ".join([key[1], *(words[i](key[i]) for i in several)]) for key in keys}


def session_set(cell: Cell) -> str:
    """The sessions a cell was replayed on, as one label: their count and a digest of their sorted ids (the first
    8 hex digits of SHA-256 over the ids, one a line), so that two runs on the same sessions read the same.

    >>> import pandas as pd
    >>> from ticktock.tables.load import Setup
    >>> cell = Cell(Setup("m", "modeled:p", "A100", 0.0, 0, 1.0, 0), "ar", [], pd.DataFrame(),
    ...             pd.DataFrame({"session_id": ["b", "a"]}))
    >>> session_set(cell)
    '2 sessions #911169dd'
    """
    frame = cell.sessions if "session_id" in cell.sessions else cell.chunks
    ids = sorted({str(s) for s in frame["session_id"]}) if "session_id" in frame else []
    digest = hashlib.sha256("".join(f"{s}\n" for s in ids).encode()).hexdigest()[:8]
    return f"{len(ids)} session{'' if len(ids) == 1 else 's'} #{digest}"


MIXED = "mixed"  # a line whose N were replayed on different session sets


def line_session_set(cells: list[Cell]) -> str:
    """A line's session set: the one all its N were replayed on, or ``MIXED`` when they differ."""
    sets = {session_set(cell) for cell in cells}
    return sets.pop() if len(sets) == 1 else MIXED


DATA_COLUMNS = ["group", "decoder", "label", "batching", "batched encodings", "N", "sessions", "miss rate",
                "p95 onset ms", "onsets", "chunks", "passes", "shortfall", "capacity", "lower bound", "first failing N", "line sessions",
                "x baseline", "x baseline bound", "baseline capacity", "baseline sessions"]


def capacity_data(results: Results, baseline: str = "ar",
                  criteria: CapacityCriteria = CapacityCriteria()) -> pd.DataFrame:
    """One row per line (setup group, decoder, batching, batched encodings, and how else the device was shared) and
    N present: its ``verdict`` and the sessions it was replayed on (``session_set``), the line's capacity
    (``capacity_of`` its N; ``lower bound`` when no N of the line failed), the first failing N above it, the line's
    session set (``line_session_set``), and the ratio to the baseline's capacity in the same group, batching and
    batched encodings (its max batch, stagger and draft policy the same when such a line exists, else any: the draft policy only orders draft
    forwards); NaN when the baseline has no line there, a capacity of 0, or a capacity found on other sessions (or on
    mixed ones): a ratio of capacities on different session sets compares different work. Empty without
    concurrency runs."""
    lines = capacity_lines(results)
    shown = varying(results, FIG4C_SETUP_FIELDS)
    labels = _labels(list(lines))
    found = {key: {c.setup.concurrency: unserved(verdict(c.chunks, criteria), *unserved_sessions(c)) for c in cells}
             for key, cells in lines.items()}
    capacities = {key: capacity_of({n: v.passes for n, v in by_n.items()}) for key, by_n in found.items()}
    bounds = {key: not any(not v.passes for v in by_n.values()) and capacities[key] > 0 for key, by_n in found.items()}
    sets = {key: line_session_set(cells) for key, cells in lines.items()}
    rows = []
    for key, cells in lines.items():
        capacity, base_key = capacities[key], _baseline_key(key, capacities, baseline)
        base = capacities[base_key] if base_key else math.nan
        comparable = base_key is not None and sets[key] == sets[base_key] != MIXED
        ratio, bound = capacity_ratio(capacity, base, bounds[key] and base_key != key,
                                      bool(base_key) and bounds[base_key] and base_key != key)
        fails = [n for n, v in found[key].items() if not v.passes]  # the first is above the capacity
        for cell in cells:
            result = found[key][cell.setup.concurrency]
            rows.append({**setup_columns(cell.setup, shown), "group": group_label(cell.setup), "decoder": key[1],
                         "label": labels[key], "batching": key[2], "batched encodings": key[3],
                         "N": cell.setup.concurrency,
                         "sessions": session_set(cell), "miss rate": result.miss_rate,
                         "p95 onset ms": result.p95_onset_ms, "onsets": result.onsets, "chunks": len(cell.chunks),
                         "passes": result.passes, "shortfall": shortfall(result, criteria), "capacity": capacity,
                         "lower bound": bounds[key], "first failing N": min(fails) if fails else math.nan,
                         "line sessions": sets[key],
                         "x baseline": ratio if comparable else math.nan, "x baseline bound": bound,
                         "baseline capacity": base, "baseline sessions": sets[base_key] if base_key else None})
    return pd.DataFrame(rows, columns=[*shown_names(results, shown), *DATA_COLUMNS])


def capacity_ratio(capacity: float, base: float, lower_bound: bool, base_lower_bound: bool) -> tuple[float, str]:
    """A capacity over the baseline's, and what kind of number it is: ``""`` exact, ``">="`` a lower bound (the
    capacity is one, the baseline's exact), ``"<="`` an upper bound (the baseline's capacity is a lower bound); NaN
    when the baseline's capacity is 0 or unknown, or when both are lower bounds (the ratio is then bounded by
    nothing). Used with the same baseline line, both bounds are passed False: a line over itself is 1.

    >>> capacity_ratio(4, 2, False, False), capacity_ratio(16, 8, True, False), capacity_ratio(4, 8, False, True)
    ((2.0, ''), (2.0, '>='), (0.5, '<='))
    >>> capacity_ratio(16, 16, True, True), capacity_ratio(4, 0, False, False)
    ((nan, ''), (nan, ''))
    """
    if not base > 0 or (lower_bound and base_lower_bound):
        return math.nan, ""
    return capacity / base, ">=" if lower_bound else "<=" if base_lower_bound else ""


def _baseline_key(key: tuple, capacities: dict[tuple, float], baseline: str) -> tuple | None:
    """The baseline's line that ``key`` is compared with (see ``capacity_data``), None when there is none."""
    exact = (key[0], baseline, *key[2:])
    if exact in capacities:
        return exact
    same = [k for k in capacities if k[1] == baseline and k[0] == key[0] and k[2:6] == key[2:6]]
    return same[0] if same else None


def capacity_table(results: Results, baseline: str = "ar", criteria: CapacityCriteria = CapacityCriteria(),
                   data: pd.DataFrame | None = None) -> Table:
    """Capacity as a table: one row per line (group, decoder, batching, batched encodings): its capacity, the ratio
    to the baseline's, the first failing N, the miss rate and p95 onset at the capacity with the number of onsets
    behind that p95, and the N that passed and failed (with what they missed); a ``batched encodings`` column where
    runs with and without them are present. Without concurrency runs: an empty table and a note saying so, nothing
    faked."""
    data = capacity_data(results, baseline, criteria) if data is None else data
    title = "Capacity: sessions per device within the deadline criteria"
    ratio = "x AR" if baseline == "ar" else f"x {baseline}"
    if not len(data):
        notes = ["no concurrency runs: every run replayed one session alone on the device; replay each decoder at "
                 "several N (concurrency.sessions=N; scripts/bench_capacity.py searches N) to measure capacity",
                 f"criteria: {criteria.describe()}"]
        return Table("capacity", title, pd.DataFrame(), {}, notes)
    shown = shown_names(results, varying(results, FIG4C_SETUP_FIELDS))
    rows = [_table_row(line, shown, ratio) for line in _lines(data).values()]
    frame = pd.DataFrame(rows)
    if _encodings(data).nunique() < 2:
        frame = frame.drop(columns="batched encodings")
    formats = {"capacity": ".0f", ratio: ".2f", "first failing N": ".0f", "miss rate at capacity": ".1%",
               "p95 onset ms at capacity": ".0f", "onsets at capacity": ".0f"}  # a bound (">= 16") is text already
    setups = list(dict.fromkeys(c.setup for c in sharing_cells(results)))
    return Table("capacity", title, frame, formats, _notes(results, data, baseline, criteria), [],
                 provenance_notes(results, setups))


def _encodings(data: pd.DataFrame) -> pd.Series:
    """``capacity_data``'s batched-encodings column as booleans (all false in data made before it existed)."""
    values = data["batched encodings"] if "batched encodings" in data else pd.Series(False, index=data.index)
    return values.fillna(False).astype(bool)


def _lines(data: pd.DataFrame) -> dict[tuple, pd.DataFrame]:
    """``capacity_data``'s rows by line: (group, label, batching, batched encodings) -> its rows, in the data's order.

    >>> data = pd.DataFrame({"group": ["g"] * 3, "label": ["ar"] * 3, "batching": [False] * 3,
    ...                      "batched encodings": [False, True, True], "N": [2, 2, 4]})
    >>> {key: line["N"].tolist() for key, line in _lines(data).items()}
    {('g', 'ar', False, False): [2], ('g', 'ar', False, True): [2, 4]}
    """
    keyed = data.assign(**{"batched encodings": _encodings(data)})
    return {key: data.loc[line.index] for key, line in keyed.groupby(LINE_COLUMNS, sort=False)}


def _where(key: tuple) -> str:
    """A line in a note: its label, how the device batched, its group.

    >>> _where(("g", "ar", True, True)), _where(("g", "ar", False, False))
    ('ar with batching, with batched encodings (g)', 'ar (g)')
    """
    group, label, batching, encodings = key
    return f"{label}{' with batching' if batching else ''}{', with batched encodings' if encodings else ''} ({group})"


def _table_row(line: pd.DataFrame, shown: list[str], ratio: str) -> dict:
    first = line.iloc[0]
    at = line[line["N"] == first["capacity"]]
    passing = ", ".join(str(n) for n in line.loc[line["passes"], "N"])
    fails = line[~line["passes"]]
    failing = ", ".join(f"{n} ({why})" for n, why in zip(fails["N"], fails["shortfall"]))
    encodings = bool(first["batched encodings"]) if "batched encodings" in first else False
    return {**first[shown].to_dict(), "decoder": first["label"], "batching": "yes" if first["batching"] else "no",
            "batched encodings": "yes" if encodings else "no",
            "capacity": bound_text(first["capacity"], ">=" if first["lower bound"] else "", ".0f"),
            ratio: bound_text(first["x baseline"], first["x baseline bound"], ".2f"),
            "first failing N": first["first failing N"], "sessions": first["line sessions"],
            "miss rate at capacity": at["miss rate"].iloc[0] if len(at) else math.nan,
            "p95 onset ms at capacity": at["p95 onset ms"].iloc[0] if len(at) else math.nan,
            "onsets at capacity": at["onsets"].iloc[0] if len(at) else math.nan,
            "N passing": passing or "none", "N failing": failing or "none"}


def bound_text(value: float, bound: str, spec: str):
    """A number the table shows, as text when it is only a bound (``>= 16``: no N above it failed); else the number
    itself, formatted by the table (NaN: –).

    >>> bound_text(4, "", ".0f"), bound_text(16, ">=", ".0f"), bound_text(0.5, "<=", ".2f")
    (4, '>= 16', '<= 0.50')
    """
    return f"{bound} {value:{spec}}" if bound and value == value else value


def _notes(results: Results, data: pd.DataFrame, baseline: str, criteria: CapacityCriteria) -> list[str]:
    notes = [f"capacity: the largest N (sessions replayed at once on one device) at which the device keeps "
             f"{criteria.describe()}, with every smaller N tried passing too; the miss rate over all chunks "
             "(chunks.parquet missed_deadline), the p95 over the response_ms of the chunks with is_onset (numpy's "
             "linear percentile); a run without onset chunks meets the onset criterion; an N whose run has a failed "
             "session (run.json failed_sessions: refused, or stopped with nothing written) or a partial one "
             "(partial_sessions: ended early) fails, whatever its chunks: a session not served is not held; "
             "0: one session alone fails, "
             "–: the smallest N tried (above 1) fails; onsets at capacity: the onset chunks behind that p95",
             "N passing / N failing: the N present for the line (an unbatched line starts from the decoder's run of "
             "one session alone), a failing N with what it missed; the capacity is exact when capacity + 1 failed, "
             "else between it and the first failing N - 1, and a lower bound, shown >= N, when no N above it failed",
             "sessions: the sessions the line's capacity was found on, their count and a digest of their ids "
             "(#8 hex digits); mixed: its N were replayed on different sessions",
             f"x {'AR' if baseline == 'ar' else baseline}: the capacity over {baseline}'s in the same setup group, "
             "batching and batched encodings (its max batch, stagger and draft policy the same when such a run "
             "exists), only when both were found on the same sessions; >= / <= when one of them is a lower bound; – when "
             f"{baseline} has no runs there, a capacity of 0, other sessions, or both capacities are lower bounds",
             "the search (scripts/bench_capacity.py: N = 1, 2, 4, ... while it passes, then bisection) assumes "
             "deadline misses and onsets only grow with N: N it skipped are taken to pass below the capacity and to "
             "fail above",
             sharing_clock_note(results)]
    for cell in alone_only(results):
        notes.append(f"{cell.decoder} ({group_label(cell.setup)}): replayed alone only, with no unbatched run at "
                     "N > 1: no unbatched capacity")
    for key, line in _lines(data).items():
        above = line[line["passes"] & (line["N"] > line["first failing N"])]
        if len(above):
            passing = ", ".join(str(n) for n in above["N"])
            notes.append(f"not monotonic: {_where(key)} passes at N={passing} above its failing "
                         f"N={line['first failing N'].iloc[0]:.0f}; its capacity counts the first failure")
    few = few_onsets_note(data)
    return notes + ([few] if few else []) + session_set_notes(data, baseline)


def few_onsets_note(data: pd.DataFrame, least: int = MIN_ONSETS) -> str | None:
    """The note on the lines whose p95 onset at their capacity rests on fewer than ``least`` onset chunks (a p95 of a
    handful of onsets is their maximum, or close to it), with each one's count; None when every capacity has enough.

    >>> data = pd.DataFrame({"group": ["g"] * 2, "label": ["ar"] * 2, "batching": [False] * 2, "N": [1, 2],
    ...                      "capacity": [2, 2], "onsets": [10, 12]})
    >>> print(few_onsets_note(data))
    p95 onset from fewer than 30 onsets: raise the sessions (--per-task): ar (g) 12 onsets at N=2
    >>> few_onsets_note(data.assign(onsets=40)) is None
    True
    """
    parts = []
    for key, line in _lines(data).items():
        at = line[line["N"] == line["capacity"]]
        if len(at) and int(at["onsets"].iloc[0]) < least:
            parts.append(f"{_where(key)} {int(at['onsets'].iloc[0])} onsets at N={int(at['N'].iloc[0])}")
    if not parts:
        return None
    return f"p95 onset from fewer than {least} onsets: raise the sessions (--per-task): " + "; ".join(parts)


def session_set_notes(data: pd.DataFrame, baseline: str) -> list[str]:
    """A note per line whose N were replayed on different sessions, and per line whose ratio to the baseline is not
    shown because the two capacities were found on different sessions."""
    notes = []
    for key, line in _lines(data).items():
        where = _where(key)
        first = line.iloc[0]
        if first["line sessions"] == MIXED:
            sets = ", ".join(f"N={n}: {sessions}" for n, sessions in zip(line["N"], line["sessions"]))
            notes.append(f"different sessions: {where} was replayed on different sessions at different N ({sets}); "
                         "its capacity compares runs of different work")
        base = first["baseline sessions"]
        if first["decoder"] != baseline and base is not None and (base != first["line sessions"] or base == MIXED):
            notes.append(f"not compared: {where} found its capacity on {first['line sessions']}, {baseline} on "
                         f"{base}: x {'AR' if baseline == 'ar' else baseline} is not shown (replay both on the same "
                         "sessions)")
    return notes


def capacity_figure(data: pd.DataFrame, path: Path, criteria: CapacityCriteria = CapacityCriteria()) -> Path | None:
    """Deadline-miss rate and p95 response onset versus N, one line per (group, decoder, batching, batched encodings;
    lines with batched forwards dashed), the criteria as dotted red lines and each line's capacity circled; None without concurrency runs."""
    if data.empty:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter

    several = data["group"].nunique() > 1
    panels = (("miss rate", 100.0, 100.0 * criteria.max_miss_rate, "deadline-miss rate (% of chunks)"),
              ("p95 onset ms", 1.0, criteria.max_p95_onset_ms, "95th-percentile response onset (ms)"))
    fig, axes = plt.subplots(1, 2, figsize=(13, 5.5), squeeze=False)
    for ax, (column, scale, limit, ylabel) in zip(axes[0], panels):
        for (group, label, batching, encodings), line in _lines(data).items():
            line = line.sort_values("N")
            name = (f"{label}{', batching' if batching else ''}{', batched encodings' if encodings else ''}, "
                    f"capacity {_count(line['capacity'].iloc[0])}")
            drawn = ax.plot(line["N"], scale * line[column], marker="o", linestyle="--" if batching else "-",
                            label=f"{name} ({group})" if several else name)
            at = line[line["N"] == line["capacity"]]
            ax.plot(at["N"], scale * at[column], marker="o", markersize=14, fillstyle="none",
                    color=drawn[0].get_color(), linestyle="none")
        ax.axhline(limit, color="red", linewidth=1.0, linestyle=":", label="criterion")
        if data[column].isna().all():
            ax.text(0.5, 0.5, "no onset chunks: the onset criterion is met", transform=ax.transAxes, ha="center")
        ns = sorted(set(data["N"]))
        ax.set_xscale("log", base=2)
        ax.set_xlim(ns[0] / 1.3, ns[-1] * 1.3)
        ax.set_xticks(ns, [str(n) for n in ns])
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_ylim(bottom=0)
        ax.set_xlabel("concurrent sessions on one device (N)")
        ax.set_ylabel(ylabel)
    handles, names = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, names, fontsize=7, loc="lower center", ncol=2, frameon=False)
    fig.suptitle(f"Capacity: sessions per device within {criteria.describe()} (capacity circled)", fontsize=9)
    fig.tight_layout(rect=(0, 0.06 + 0.025 * math.ceil(len(names) / 2), 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _count(value: float) -> str:
    return "–" if value != value else f"{value:.0f}"
