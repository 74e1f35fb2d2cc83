"""Draft acceptance (Table 7) and the in-depth analysis of Figure 4: post-audio forwards by output length
(4a), speedup versus temperature (4b) and versus concurrent sessions (4c, not measured yet).

``fig4a_data`` and ``fig4b_data`` return long DataFrames that both the tables here and the figures in
``figures.py`` are drawn from.

Example::

    >>> data = fig4a_data(results)                        # doctest: +SKIP
    >>> data[["decoder", "bucket", "forwards", "chunks"]].head(2).to_dict("records")   # doctest: +SKIP
    [{'decoder': 'ar', 'bucket': '1', 'forwards': 1.0, 'chunks': 3}, ...]
"""

from __future__ import annotations

import pandas as pd

from ticktock.tables import metrics
from ticktock.tables.common import Table, provenance_notes, run_names, setup_columns, setup_label, varying
from ticktock.tables.load import Results, decoder_order
from ticktock.tables.paper import paper_note

KIND_ORDER = ["listen", "speak", "tool", "backchannel", "interrupt"]
FIG4A_DECODERS = ["ar", "speclisten_silence", "speclisten"]


def _kind_order(label: str) -> tuple:
    return (KIND_ORDER.index(label), "") if label in KIND_ORDER else (len(KIND_ORDER), label)


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
    return pd.DataFrame(rows, columns=[*_shown_names(results), "setup", "decoder", "tasks", "bucket", "forwards", "chunks"])


def _shown_names(results: Results, shown: list[str] | None = None) -> list[str]:
    shown = varying(results) if shown is None else shown
    return list(setup_columns(results.setups()[0], shown)) if results.cells else []


def fig4a_table(results: Results, data: pd.DataFrame | None = None) -> Table:
    """Figure 4a as a table: 'mean forwards (chunks)' per bucket."""
    data = fig4a_data(results) if data is None else data
    keys, rows = [*_shown_names(results), "decoder", "tasks"], []
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


def fig4b_data(results: Results, baseline: str = "ar") -> pd.DataFrame:
    """Speak and tool speedup over the baseline at the same temperature, for decoders run at several
    temperatures with everything else equal; one row per (setup, decoder, temperature, kind)."""
    by_rest: dict[tuple, list] = {}
    for setup in results.setups():
        by_rest.setdefault(setup.without_temperature(), []).append(setup)
    shown = [name for name in varying(results) if name != "temperature"]
    rows = []
    for setups in by_rest.values():
        for setup in setups:
            base = results.cell(setup, baseline)
            for cell in results.in_setup(setup) if base is not None and len(setups) > 1 else []:
                if cell is not base:
                    rows += _temperature_rows(base, cell, shown)
    data = pd.DataFrame(rows, columns=[*_shown_names(results, shown), "group", "decoder", "temperature", "kind",
                                       "speedup", "chunks"])
    swept = data.groupby(["group", "decoder", "kind"])["temperature"].transform("nunique") > 1
    return data[swept].reset_index(drop=True)


def _temperature_rows(base, cell, shown: list[str]) -> list[dict]:
    rows, names = [], (run_names(base), run_names(cell))
    group = setup_label(cell.setup).replace(f"T={cell.setup.temperature:g} / ", "")
    for kind, mask in (("speak", metrics.speak_mask(base.chunks)), ("tool", metrics.tool_mask(base.chunks))):
        result = metrics.speedup(base.chunks, cell.chunks, mask, names, kind)
        if result.chunks:
            rows.append({**setup_columns(cell.setup, shown), "group": group, "decoder": cell.decoder,
                         "temperature": cell.setup.temperature, "kind": kind, "speedup": result.speedup,
                         "chunks": result.chunks})
    return rows


def fig4b_table(results: Results, baseline: str = "ar", data: pd.DataFrame | None = None) -> Table:
    """Figure 4b as a table: speak and tool speedup per temperature."""
    data = fig4b_data(results, baseline) if data is None else data
    frame = pd.DataFrame()
    if len(data):
        keys = [c for c in data.columns if c not in ("kind", "speedup", "chunks")]
        frame = data.pivot_table(index=keys, columns="kind", values="speedup").reset_index()
        frame = frame.rename(columns={"speak": "speak speedup", "tool": "tool speedup", "temperature": "T"})
        order = sorted(range(len(frame)), key=lambda i: (frame["group"][i], decoder_order(frame["decoder"][i]), frame["T"][i]))
        frame = frame.iloc[order].drop(columns="group").reset_index(drop=True)
        frame.columns.name = None
    notes = [f"speedup over the {baseline} run at the same temperature (same seed), on speak chunks and FDB v3 tool "
             "chunks; decoders run at two or more temperatures", paper_note("fig4b")]
    if not len(data):
        temps = sorted({s.temperature for s in results.setups()})
        notes.insert(0, "no temperature sweep: no decoder was run at several temperatures with its baseline "
                        f"(temperatures present: {', '.join(f'T={t:g}' for t in temps)})")
    title = "Figure 4b: speedup versus sampling temperature"
    return Table("fig4b_temperature", title, frame, {"speak speedup": ".2f", "tool speedup": ".2f"}, notes, [],
                 provenance_notes(results))


def fig4c_table(results: Results) -> Table:
    """Figure 4c (speedup versus concurrent sessions): no concurrency runs exist; say so, fake nothing."""
    notes = ["no concurrency runs: the harness replays one session at a time (batch 1), so speedup versus N "
             "concurrent sessions on one device cannot be shown yet",
             paper_note("fig4c")]
    return Table("fig4c_concurrency", "Figure 4c: speedup versus concurrent sessions", pd.DataFrame(), {}, notes)
