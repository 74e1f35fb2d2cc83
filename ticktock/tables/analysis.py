"""Draft acceptance (Table 7) and the in-depth analysis of Figure 4: post-audio forwards by output length
(4a), speedup versus temperature (4b) and versus N concurrent sessions on one device (4c, from runs with
``concurrency.sessions=N``).

``fig4a_data``, ``fig4b_data`` and ``fig4c_data`` return DataFrames that both the tables here and the figures in
``figures.py`` are drawn from. Table 7, 4a and 4b use the runs of one session alone on the device
(``Results.single_session``); 4c compares every N, each against the baseline at the same N, and says where the shared
device's time went (``device_shares``: post-audio work, drafting, the talker and idle time, as shares of the device's
span, from run.json ``shared_device``).

Example::

    >>> data = fig4a_data(results)                        # doctest: +SKIP
    >>> data[["decoder", "bucket", "forwards", "chunks"]].head(2).to_dict("records")   # doctest: +SKIP
    [{'decoder': 'ar', 'bucket': '1', 'forwards': 1.0, 'chunks': 3}, ...]
"""

from __future__ import annotations

import math
from dataclasses import replace

import pandas as pd

from ticktock.tables import metrics
from ticktock.tables.common import (Table, clock_label, encode_scale_note, paper_columns_kept, provenance_notes,
                                    run_names, setup_columns, setup_label, single_session, varying)
from ticktock.tables.load import Cell, Results, Setup, decoder_order
from ticktock.tables.paper import paper_note, paper_value

KIND_ORDER = ["listen", "speak", "tool", "backchannel", "interrupt"]
FIG4A_DECODERS = ["ar", "speclisten_silence", "speclisten"]


def _kind_order(label: str) -> tuple:
    return (KIND_ORDER.index(label), "") if label in KIND_ORDER else (len(KIND_ORDER), label)


@single_session
def acceptance_table(results: Results) -> Table:
    """Table 7: share of chunks whose committed output equals the silence draft (``draft_full_match``),
    by the output's chunk kind and by whether the user was speaking, per decoder that drafts."""
    shown, rows = varying(results), []
    for cell in results.cells:
        if not cell.chunks["draft_full_match"].notna().any():
            continue
        shares = metrics.acceptance(cell.chunks)
        rows.append((cell, shares))
    kinds = sorted({k for _, s in rows for k in s if k not in ("all", "user silent", "user speaking")}, key=_kind_order)
    columns = ["all", *kinds, "user silent", "user speaking"]
    frame = pd.DataFrame([{**setup_columns(cell.setup, shown), "decoder": cell.decoder,
                           **{c: _share_text(shares.get(c)) for c in columns}} for cell, shares in rows])
    notes = ["cells: share of chunks whose committed output equals the complete silence draft (chunks with a draft); "
             "kind = the committed output's chunk kind", paper_note(7)]
    if not rows:
        notes.insert(0, "no run records draft acceptance (draft_full_match is null everywhere)")
    return Table("table7_acceptance", "Table 7: draft acceptance of the silence draft", frame, {},
                 notes, [], provenance_notes(results))


def _share_text(value) -> str:
    if value is None:
        return "–"
    share, n = value
    return f"{share:.1%} ({n})"


def _analysis_subset(chunks: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """FDB v3 chunks (the paper's Figure 4 subset) when present, else every chunk."""
    fdb = chunks[chunks["task"] == metrics.TOOL_TASK]
    return (fdb, metrics.TOOL_TASK) if len(fdb) else (chunks, "all tasks")


@single_session
def fig4a_data(results: Results) -> pd.DataFrame:
    """Mean post-audio forwards per chunk by output-length bucket for AR, silence-only SL and full SL;
    one row per (setup, decoder, bucket), with the setup's row columns and its label."""
    shown, rows = varying(results), []
    for cell in results.cells:
        if cell.decoder not in FIG4A_DECODERS:
            continue
        subset, label = _analysis_subset(cell.chunks)
        for bucket, row in metrics.forwards_by_bucket(subset).iterrows():
            rows.append({**setup_columns(cell.setup, shown), "setup": setup_label(cell.setup), "decoder": cell.decoder,
                         "tasks": label, "bucket": bucket, "forwards": row["forwards"], "chunks": int(row["chunks"])})
    return pd.DataFrame(rows, columns=[*shown_names(results), "setup", "decoder", "tasks", "bucket", "forwards", "chunks"])


def shown_names(results: Results, shown: list[str] | None = None) -> list[str]:
    shown = varying(results) if shown is None else shown
    return list(setup_columns(results.setups()[0], shown)) if results.cells else []


@single_session
def fig4a_table(results: Results, data: pd.DataFrame | None = None) -> Table:
    """Figure 4a as a table: 'mean forwards (chunks)' per bucket."""
    data = fig4a_data(results) if data is None else data
    keys, rows = [*shown_names(results), "decoder", "tasks"], []
    buckets = [b for b in metrics.BUCKET_LABELS if b in set(data["bucket"])]
    for _, group in data.groupby(["setup", "decoder", "tasks"], sort=False):
        cells = {b: f"{f:.1f} ({n})" for b, f, n in zip(group["bucket"], group["forwards"], group["chunks"])}
        rows.append({**group.iloc[0][keys].to_dict(), **{b: cells.get(b, "–") for b in buckets}})
    notes = ["cells: mean post-audio forwards per chunk (number of chunks); buckets by the chunk's output tokens; "
             "FDB v3 chunks when the runs have them (as the paper), else all chunks", paper_note("fig4a")]
    if not rows:
        notes.insert(0, f"no runs of {', '.join(FIG4A_DECODERS)}")
    title = "Figure 4a: post-audio forwards per chunk by output length"
    return Table("fig4a_forwards_by_length", title, pd.DataFrame(rows), {}, notes, [], provenance_notes(results))


FIXED_COLUMN = "same outputs at every T"  # fig4b_data: the baseline's outputs of the row's kind never change with T
KIND_MASKS = {"speak": metrics.speak_mask, "tool": metrics.tool_mask}  # Figure 4b's chunk subsets


def temperature_groups(results: Results) -> list[list[Setup]]:
    """The setups equal in everything but the sampling temperature, grouped (Figure 4b's sweeps), each by T."""
    by_rest: dict[tuple, list[Setup]] = {}
    for setup in results.setups():
        by_rest.setdefault(setup.without_temperature(), []).append(setup)
    return [sorted(setups, key=lambda s: s.temperature) for setups in by_rest.values()]


def temperature_group_label(setup: Setup) -> str:
    """A setup's label without its temperature: the name of its Figure 4b sweep."""
    return setup_label(setup).replace(f"T={setup.temperature:g} / ", "")


def fixed_at_every_temperature(bases: list[Cell], mask) -> bool:
    """Whether the baseline runs of one sweep (``bases``, one per temperature) committed the same output tokens on
    the chunks ``mask(chunks)`` selects at every temperature: the same chunks, each with the same tokens. False with
    fewer than two temperatures or no such chunk."""
    outputs = [metrics.chunk_outputs(base.chunks, mask(base.chunks)) for base in bases]
    return len(outputs) > 1 and bool(outputs[0]) and all(o == outputs[0] for o in outputs[1:])


@single_session
def fig4b_data(results: Results, baseline: str = "ar") -> pd.DataFrame:
    """Speak and tool speedup over the baseline at the same temperature, for decoders run at several
    temperatures with everything else equal; one row per (setup, decoder, temperature, kind), with the baseline's
    name and whether its outputs of that kind are token-identical at every temperature of the sweep
    (``FIXED_COLUMN``: ``fixed_at_every_temperature``; then the speedup is measured on the same outputs at each T)."""
    shown = [name for name in varying(results) if name != "temperature"]
    rows = []
    for setups in temperature_groups(results):
        bases = [base for base in (results.cell(s, baseline) for s in setups) if base is not None]
        fixed = {kind: fixed_at_every_temperature(bases, mask) for kind, mask in KIND_MASKS.items()}
        for setup in setups:
            base = results.cell(setup, baseline)
            for cell in results.in_setup(setup) if base is not None and len(setups) > 1 else []:
                if cell is not base:
                    rows += _temperature_rows(base, cell, shown, fixed)
    data = pd.DataFrame(rows, columns=[*shown_names(results, shown), "group", "decoder", "temperature", "kind",
                                       "speedup", "chunks", "baseline", FIXED_COLUMN])
    swept = data.groupby(["group", "decoder", "kind"])["temperature"].transform("nunique") > 1
    return data[swept].reset_index(drop=True)


def _temperature_rows(base, cell, shown: list[str], fixed: dict[str, bool]) -> list[dict]:
    rows, names = [], (run_names(base), run_names(cell))
    for kind, mask in KIND_MASKS.items():
        result = metrics.speedup(base.chunks, cell.chunks, mask(base.chunks), names, kind)
        if result.chunks:
            rows.append({**setup_columns(cell.setup, shown), "group": temperature_group_label(cell.setup),
                         "decoder": cell.decoder, "temperature": cell.setup.temperature, "kind": kind,
                         "speedup": result.speedup, "chunks": result.chunks, "baseline": base.decoder,
                         FIXED_COLUMN: fixed[kind]})
    return rows


def fixed_output_notes(results: Results, baseline: str, data: pd.DataFrame) -> list[str]:
    """Per sweep of Figure 4b (a group of ``data``), what its baseline's outputs say about its speedups: every output
    token-identical at every temperature (the temperature may not have been applied), or its FDB v3 tool calls
    token-identical (sampling drew the same calls at every T, so the tool speedup compares the same calls)."""
    notes, swept = [], set(data["group"])
    for setups in temperature_groups(results):
        bases = [base for base in (results.cell(s, baseline) for s in setups) if base is not None]
        group = temperature_group_label(setups[0])
        if group not in swept:
            continue
        temps = ", ".join(f"{base.setup.temperature:g}" for base in bases)
        if fixed_at_every_temperature(bases, lambda chunks: pd.Series(True, index=chunks.index)):
            notes.append(f"{group}: every output of {baseline} is token-identical at every temperature (T={temps}): "
                         "check that the temperature was applied (run.json config.sampling.temperature)")
        elif fixed_at_every_temperature(bases, metrics.tool_mask):
            calls = metrics.chunk_outputs(bases[0].chunks, metrics.tool_mask(bases[0].chunks))
            speak = ("; its sampled speak chunks do change" if metrics.speak_mask(bases[0].chunks).any()
                     and not fixed_at_every_temperature(bases, metrics.speak_mask) else "")
            notes.append(f"{group}: {baseline}'s {len(calls)} FDB v3 tool calls ({sum(map(len, calls.values()))} "
                         f"tokens) are token-identical at every temperature (T={temps}): sampling drew the same calls each "
                         f"time, so the tool speedup is measured on the same calls at every T{speak}")
    return notes


@single_session
def fig4b_table(results: Results, baseline: str = "ar", data: pd.DataFrame | None = None) -> Table:
    """Figure 4b as a table: speak and tool speedup per temperature."""
    data = fig4b_data(results, baseline) if data is None else data
    frame = pd.DataFrame()
    if len(data):
        keys = [c for c in data.columns if c not in ("kind", "speedup", "chunks", "baseline", FIXED_COLUMN)]
        frame = data.pivot_table(index=keys, columns="kind", values="speedup").reset_index()
        frame = frame.rename(columns={"speak": "speak speedup", "tool": "tool speedup", "temperature": "T"})
        order = sorted(range(len(frame)), key=lambda i: (frame["group"][i], decoder_order(frame["decoder"][i]), frame["T"][i]))
        frame = frame.iloc[order].drop(columns="group").reset_index(drop=True)
        frame.columns.name = None
    notes = [f"speedup over the {baseline} run at the same temperature (same seed), on speak chunks and FDB v3 tool "
             "chunks; decoders run at two or more temperatures", *fixed_output_notes(results, baseline, data),
             paper_note("fig4b")]
    if not len(data):
        temps = sorted({s.temperature for s in results.setups()})
        notes.insert(0, "no temperature sweep: no decoder was run at several temperatures with its baseline "
                        f"(temperatures present: {', '.join(f'T={t:g}' for t in temps)})")
    title = "Figure 4b: speedup versus sampling temperature"
    return Table("fig4b_temperature", title, frame, {"speak speedup": ".2f", "tool speedup": ".2f"}, notes, [],
                 provenance_notes(results))


FIG4C_SETUP_FIELDS = ("clock", "encode_scale", "device", "temperature", "seed", "top_k", "top_p", "talker",
                      "talker_args", "playback_delay_ms")
ALONE = {"concurrency": 1, "batching": False, "max_batch": None, "stagger": "", "draft_policy": "",
         "draft_policy_args": "", "batch_encodings": False}  # a setup's sharing fields for one session alone
FIG4C_METRICS = ["speak chunks", "speak speedup", "tool chunks", "tool speedup", "deadline-miss rate",
                 "tool deadline-miss rate", "mean max lag ms", "mean device wait ms", "sessions", "chunks"]
UTILISATION = {"post-audio %": "post_audio_busy_ms", "drafting %": "draft_busy_ms", "talker %": "talker_busy_ms",
               "idle %": "idle_ms", "device busy %": "busy_ms"}  # column -> run.json shared_device time (of span_ms)
FIG4C_PAPER = {"speak speedup": ("paper speak speedup", False), "tool speedup": ("paper tool speedup", False),
               "tool deadline-miss rate": ("paper tool deadline-miss rate", True)}


def fig4c_data(results: Results, baseline: str = "ar") -> pd.DataFrame:
    """Figure 4c: one row per cell of every setup group (everything but how the device was shared) that has
    concurrency runs, at every N present: speak and tool speedup over the baseline at the same N, batching and
    batched encodings (``metrics.speedup``, as Table 2 and the tool table), the deadline-miss rate over all chunks
    and over FDB v3 tool chunks, the mean per-session max lag and the mean device wait of the chunks' post-audio work,
    and where the device's time went (``UTILISATION``: ``device_shares``; NaN where the runs did not record it). Empty when no run
    shared the device."""
    cells = sharing_cells(results)
    shown = varying(results, FIG4C_SETUP_FIELDS)
    columns = [*shown_names(results, shown), "group", "paper kind", "N", "decoder", "label",
               "draft policy", "batching", "batched encodings", "is baseline", "baseline run", *FIG4C_METRICS,
               *UTILISATION]
    label = _fig4c_labeller(cells)
    rows = []
    for cell in cells:
        base = _baseline_at(results, cell.setup, baseline)
        speak, tool = _fig4c_speedups(base, cell)
        chunks, tools = cell.chunks, cell.chunks[metrics.tool_mask(cell.chunks)]
        rows.append({**setup_columns(cell.setup, shown), "group": group_label(cell.setup),
                     "paper kind": cell.setup.of_paper_kind,  # the paper's model, greedy, batch 1, ...
                     "N": cell.setup.concurrency,
                     "decoder": cell.decoder, "label": label(cell), "draft policy": cell.setup.draft_policy,
                     "batching": cell.setup.batching, "batched encodings": cell.setup.batch_encodings,
                     "is baseline": cell.decoder == baseline,
                     "baseline run": base.names if base is not None else "",
                     "speak chunks": speak.chunks, "speak speedup": speak.speedup,
                     "tool chunks": tool.chunks, "tool speedup": tool.speedup,
                     "deadline-miss rate": _rate(chunks["missed_deadline"]),
                     "tool deadline-miss rate": _rate(tools["missed_deadline"]),
                     "mean max lag ms": _mean(cell.sessions["max_lag_ms"]),
                     "mean device wait ms": _mean(chunks["device_wait_ms"]),
                     "sessions": len(cell.sessions), "chunks": len(chunks), **device_shares(cell),
                     "_order": _fig4c_order(cell)})
    data = pd.DataFrame(rows, columns=[*columns, "_order"])
    if len(data):
        data = data.iloc[sorted(range(len(data)), key=lambda i: data["_order"][i])]
    return data.drop(columns="_order").reset_index(drop=True)


def device_shares(cell: Cell) -> dict[str, float]:
    """Where the shared device's time went in a cell's runs: each ``UTILISATION`` time of run.json ``shared_device``
    (summed over the runs and their resumed invocations) as a share of the device's span (``span_ms``: the first
    session's start to the last one's end). NaN for a cell of one session alone on the device, and for a time some
    run (or some invocation of a resumed run) did not record (run.json written before the device counted it).

    Example (a cell whose one run spent 400 of its 1000 device ms on post-audio work)::

        >>> from types import SimpleNamespace as Run
        >>> shared = {"span_ms": 1000.0, "busy_ms": 700.0, "post_audio_busy_ms": 400.0, "draft_busy_ms": 250.0,
        ...           "talker_busy_ms": 50.0, "idle_ms": 300.0}
        >>> cell = Cell(Setup("m", "modeled:p", "A100", 0.0, 0, 1.0, 0, concurrency=4), "ar",
        ...             [Run(meta={"shared_device": shared})], None, None)
        >>> device_shares(cell)
        {'post-audio %': 0.4, 'drafting %': 0.25, 'talker %': 0.05, 'idle %': 0.3, 'device busy %': 0.7}
        >>> device_shares(replace(cell, runs=[Run(meta={"shared_device": {"busy_ms": 700.0}})]))["idle %"]
        nan
    """
    totals = dict.fromkeys(["span_ms", *UTILISATION.values()], 0.0)
    for run in cell.runs if cell.setup.shares_device else []:
        for key in totals:
            totals[key] += _device_time(run.meta.get("shared_device"), key)
    span = totals["span_ms"]
    return {column: totals[key] / span if span > 0 else math.nan for column, key in UTILISATION.items()}


def _device_time(shared, key: str) -> float:
    """run.json ``shared_device[key]`` (summed over invocations), NaN when it is missing there or in any invocation."""
    if not isinstance(shared, dict) or not isinstance(shared.get(key), (int, float)) or isinstance(shared[key], bool):
        return math.nan
    invocations = shared.get("invocations")
    if isinstance(invocations, list) and any(not isinstance(i, dict) or key not in i for i in invocations):
        return math.nan
    return float(shared[key])


def sharing_cells(results: Results) -> list[Cell]:
    """Every cell of the setup groups (everything but how the device was shared) that hold a concurrency run."""
    groups = {c.setup.without_sharing() for c in results.cells if c.setup.shares_device}
    return [c for c in results.cells if c.setup.without_sharing() in groups]


def group_label(setup: Setup) -> str:
    """The setup without how the device was shared (4c compares N within it)."""
    label = setup_label(replace(setup, **ALONE))
    return label + (f" / top_k {setup.top_k}, top_p {setup.top_p:g}" if setup.top_k or setup.top_p != 1.0 else "")


def _fig4c_order(cell: Cell) -> tuple:
    setup = cell.setup
    return (setup.without_sharing(), setup.concurrency, setup.batching, setup.max_batch or 0,
            setup.batch_encodings, setup.stagger, decoder_order(cell.decoder), setup.draft_policy,
            setup.draft_policy_args)


def _baseline_at(results: Results, setup: Setup, baseline: str) -> Cell | None:
    """The baseline at the same N, batching, max batch, stagger and batched encodings (everything else equal); its
    draft policy the same when such a run exists, else any (the draft policy only orders draft forwards)."""
    exact = results.cell(setup, baseline)
    if exact is not None:
        return exact
    same = [c for c in results.cells if c.decoder == baseline and c.setup.without_sharing() == setup.without_sharing()
            and _device_shared_alike(c.setup, setup)]
    return same[0] if same else None


def _device_shared_alike(one: Setup, other: Setup) -> bool:
    """Whether two setups shared the device alike but for the draft policy: the same N, batching, max batch, stagger
    and batched encodings.

    >>> a = Setup("m", "modeled:p", "A100", 0.0, 0, 1.0, 0, 4, False, None, "random", "round_robin")
    >>> _device_shared_alike(a, replace(a, draft_policy="expected_savings"))
    True
    >>> _device_shared_alike(a, replace(a, batch_encodings=True))
    False
    """
    return (one.concurrency, one.batching, one.max_batch, one.stagger, one.batch_encodings) == \
        (other.concurrency, other.batching, other.max_batch, other.stagger, other.batch_encodings)


def _fig4c_speedups(base: Cell | None, cell: Cell) -> tuple[metrics.Speedup, metrics.Speedup]:
    none = metrics.Speedup(0, math.nan, math.nan, math.nan, math.nan)
    if base is None:
        return none, none
    names = (run_names(base), run_names(cell))
    return (metrics.speedup(base.chunks, cell.chunks, metrics.speak_mask(base.chunks), names, "speak"),
            metrics.speedup(base.chunks, cell.chunks, metrics.tool_mask(base.chunks), names, "fdb_v3 tool"))


def _flags(data: pd.DataFrame, column: str) -> pd.Series:
    """A true/false column of Figure 4c's data as booleans (all false where the data has no such column: data
    made before it existed).

    >>> _flags(pd.DataFrame({"N": [1, 4]}), "batched encodings").tolist()
    [False, False]
    """
    values = data[column] if column in data else pd.Series(False, index=data.index)
    return values.fillna(False).astype(bool)


def _rate(values: pd.Series) -> float:
    values = values.dropna()
    return float(values.astype(bool).mean()) if len(values) else math.nan


def _mean(values: pd.Series) -> float:
    values = values.dropna()
    return float(values.mean()) if len(values) else math.nan


def _fig4c_labeller(cells: list[Cell]):
    """Row labels: the decoder, then (for a shared device) the draft policy when several are present (with its
    settings when one name has several), '+batching' (with its max batch when several), '+batched encodings' when
    runs with and without them are present, the stagger when several."""
    shared = [c.setup for c in cells if c.setup.shares_device]
    policies = {s.draft_policy for s in shared}
    settings = {name: {s.draft_policy_args for s in shared if s.draft_policy == name} for name in policies}
    max_batches = {s.max_batch for s in shared if s.batching}
    staggers = {s.stagger for s in shared}
    encodings = {s.batch_encodings for s in shared}

    def label(cell: Cell) -> str:
        setup, parts = cell.setup, [cell.decoder]
        if not setup.shares_device:
            return cell.decoder
        if len(policies) > 1 or any(len(v) > 1 for v in settings.values()):
            policy = setup.draft_policy or "no draft policy"
            if len(settings.get(setup.draft_policy, ())) > 1:
                policy += f" {setup.draft_policy_args or '(defaults)'}"
            parts.append(policy)
        if setup.batching:
            parts.append(f"+batching (max {setup.max_batch or 'all'})" if len(max_batches) > 1 else "+batching")
        if setup.batch_encodings and len(encodings) > 1:
            parts.append("+batched encodings")
        if len(staggers) > 1:
            parts.append(f"stagger {setup.stagger}")
        return ", ".join(parts)
    return label


def sharing_clock_note(results: Results) -> str:
    """The clocks (with their cost profiles) behind the 4c rows, in words."""
    parts = []
    for cell in sharing_cells(results):
        clock = cell.meta.get("clock") or {}
        if clock.get("profile"):
            scaled = encode_scale_note(cell.setup)
            part = (f"clock {clock_label(cell.setup)}: modeled from cost profile {clock['profile']} for device "
                    f"{cell.setup.device} (a deterministic simulation of the shared device; batched steps are "
                    f"charged by the profile's batch model{scaled})")
        elif cell.live:
            part = (f"clock {clock_label(cell.setup)}: measured live against {cell.setup.device} (the client's event "
                    "stamps of N sessions held at once; how the server shares its device is its own)")
        else:
            part = (f"clock {clock_label(cell.setup)}: measured on device {cell.setup.device} (each device step's "
                    "synchronised wall time)")
        if part not in parts:
            parts.append(part)
    return "times on " + "; ".join(parts)


def _utilisation_note(recorded: bool) -> str:
    """What the device-time columns of Figure 4c mean, or why they are not there."""
    if not recorded:
        return ("device time (post-audio %, drafting %, talker %, idle %): not recorded by these runs (their run.json "
                "shared_device has no span_ms: written before the device counted it); rerun them to get it")
    return ("device time, as shares of the device's span (run.json shared_device span_ms: the first session's start "
            "to the last one's end, summed over the cell's runs): post-audio % = encodings and forwards after a "
            "chunk's audio arrived (talker excluded), drafting % = idle-window work (draft forwards, early prefill), "
            "talker % = speech synthesis, idle % = nothing to run; device busy % = all of the device's steps; "
            "– for one session alone on the device and for runs that did not record it")


def fig4c_table(results: Results, baseline: str = "ar", data: pd.DataFrame | None = None) -> Table:
    """Figure 4c as a table: per N, decoder (and draft policy, batching) the speak and tool speedup over the
    baseline at the same N, deadline-miss rates, mean per-session max lag and mean device wait, with the paper's
    values beside ours, and where the device's time went (``UTILISATION``) when some run recorded it. Without
    concurrency runs: a note saying so, nothing faked."""
    data = fig4c_data(results, baseline) if data is None else data
    if not len(data):
        notes = ["no concurrency runs: every run replayed one session alone on the device; run with "
                 "concurrency.sessions=N (configs/run.yaml; e.g. N = 2, 4, 8, for the baseline and each decoder) to "
                 "measure speedup versus N concurrent sessions", paper_note("fig4c")]
        return Table("fig4c_concurrency", "Figure 4c: speedup versus concurrent sessions", pd.DataFrame(), {}, notes)
    frame = data[[*shown_names(results, varying(results, FIG4C_SETUP_FIELDS)), "N"]].copy()
    frame["decoder"] = data["label"]
    encodings = _flags(data, "batched encodings")
    if encodings.nunique() > 1:
        frame["batched encodings"] = ["yes" if flag else "no" for flag in encodings]
    comparable = data["paper kind"].astype(bool)  # Setup.of_paper_kind: the one decision of where the paper stands
    for column in FIG4C_METRICS[:-2]:
        frame[column] = data[column]
        if column in FIG4C_PAPER:
            name, percent = FIG4C_PAPER[column]
            frame[name] = [paper_value("fig4c", column, d, percent=percent, row=rf"N={n}\b") if g else ""
                           for d, n, g in zip(data["decoder"], data["N"], comparable)]
    recorded = data[list(UTILISATION)].notna().any().any()
    for column in UTILISATION if recorded else []:
        frame[column] = data[column]
    frame["sessions"], frame["chunks"] = data["sessions"], data["chunks"]
    notes = [f"speedup: mean post-audio latency of the {baseline} run at the same N, batching, max batch, stagger "
             "and batched encodings "
             f"(same seed; its draft policy the same when such a run exists) over its speak chunks (all tasks) and its "
             "FDB v3 tool chunks, divided by the decoder's over the same chunks (as Table 2 and the tool table)",
             "deadline-miss rate: share of chunks whose response time (lag carried in plus post-audio latency) exceeds "
             "the time until the next chunk arrives (missed_deadline), over all chunks and over FDB v3 tool chunks; "
             "mean max lag: sessions.parquet max_lag_ms averaged over all sessions; mean device wait: device_wait_ms of each chunk's post-audio work (waiting for other sessions' "
             "work on the device), averaged over chunks",
             "N = 1: one session alone on the device (the runs of Tables 2-5); N > 1: that many sessions replayed at "
             "once on one device, each started at a staggered offset (ticktock.replay.concurrency)",
             sharing_clock_note(results), _utilisation_note(recorded)]
    for _, row in data[data["baseline run"] == ""].iterrows():
        notes.append(f"no {baseline} run at N={row['N']} with the device shared as for {row['label']} ({row['group']}): "
                     "no speedups there")
    frame, notes = paper_columns_kept(frame, notes, [
        "paper columns: the paper's Streaming SLM values on FDB v3 at the same N (greedy, unbatched rows of a model "
        "the paper measured, with real weights, replayed in process only, none for a live run); its N = 1 tool "
        "speedup was measured on the wall clock", paper_note("fig4c")])
    formats = {"speak speedup": ".2f", "tool speedup": ".2f", "deadline-miss rate": ".1%",
               "tool deadline-miss rate": ".1%", "mean max lag ms": ".1f", "mean device wait ms": ".1f",
               **dict.fromkeys(UTILISATION, ".1%")}
    setups = list(dict.fromkeys(c.setup for c in sharing_cells(results)))
    title = f"Figure 4c: speedup over {baseline} versus N concurrent sessions on one device"
    return Table("fig4c_concurrency", title, frame.reset_index(drop=True), formats, notes, [],
                 provenance_notes(results, setups))
