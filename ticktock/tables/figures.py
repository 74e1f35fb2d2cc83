"""Figure 4 as PNG files (matplotlib, Agg backend: no display needed).

- 4a: mean post-audio forwards per chunk by output-length bucket, one panel per setup (greedy setups when
  there are any, as the paper), a log axis when the counts span more than 20.
- 4b: speak and tool speedup versus sampling temperature, one line per (setup, decoder).
- 4c: speak and tool speedup versus N concurrent sessions on one device (each over the baseline at the same
  N), one line per (setup, decoder, draft policy, batching, batched encodings), a log axis for tool speedups
  spanning more than 20; and, when the runs recorded it (run.json ``shared_device``), a panel of where the device's
  time went: a stacked bar per (N, row label) of its post-audio, drafting, talker and idle shares; not drawn without
  concurrency runs (the table says so; no data is faked).

Example::

    >>> paths = write_figures(fig4a_data(results), fig4b_data(results), Path("out"), fig4c_data(results))  # doctest: +SKIP
    >>> [p.name for p in paths]                                                      # doctest: +SKIP
    ['fig4a_forwards_by_length.png', 'fig4b_temperature.png', 'fig4c_concurrency.png']
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.ticker import LogLocator, NullFormatter, PercentFormatter, ScalarFormatter  # noqa: E402

from ticktock.tables.analysis import FIXED_COLUMN  # noqa: E402
from ticktock.tables.metrics import BUCKET_LABELS  # noqa: E402

LABELS = {"ar": "AR", "speclisten_silence": "silence draft only", "speclisten": "Speculative Listening"}
MAX_PANELS = 6


def fig4a(data: pd.DataFrame, path: Path) -> Path | None:
    """Grouped bars: forwards per chunk by bucket and decoder; None when there is no data."""
    if data.empty:
        return None
    greedy = data[data["setup"].str.contains(" / T=0 / ", regex=False)]
    data = greedy if len(greedy) else data  # the paper's Figure 4a is greedy
    setups = list(dict.fromkeys(data["setup"]))[:MAX_PANELS]
    fig, axes = plt.subplots(len(setups), 1, figsize=(8, 3.6 * len(setups)), squeeze=False)
    for ax, setup in zip(axes[:, 0], setups):
        part = data[data["setup"] == setup]
        buckets = [b for b in BUCKET_LABELS if b in set(part["bucket"])]
        decoders = list(dict.fromkeys(part["decoder"]))
        width = 0.8 / max(len(decoders), 1)
        for i, decoder in enumerate(decoders):
            rows = part[part["decoder"] == decoder].set_index("bucket").reindex(buckets)
            x = [j + (i - (len(decoders) - 1) / 2) * width for j in range(len(buckets))]
            bars = ax.bar(x, rows["forwards"], width, label=LABELS.get(decoder, decoder))
            ax.bar_label(bars, labels=[f"{v:.1f}" if v == v else "" for v in rows["forwards"]], fontsize=7)
        ax.set_xticks(range(len(buckets)), buckets)
        _y_scale(ax, part["forwards"].max())
        ax.set_xlabel("output tokens in the chunk")
        ax.set_ylabel("post-audio forwards per chunk")
        ax.set_title(f"{setup} ({part['tasks'].iloc[0]})", fontsize=9)
        ax.legend(fontsize=8)
    fig.suptitle("Figure 4a: post-audio forwards per chunk by output length")
    return _save(fig, path)


def _y_scale(ax, top: float) -> None:
    """Linear up to 20 forwards per chunk; beyond, a log axis with 1-2-5 ticks in plain numbers."""
    if top <= 20:
        ax.set_ylim(0, top * 1.15)
        return
    ax.set_yscale("log")
    ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(ScalarFormatter())
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_ylim(0.8, top * 1.5)


FIXED_WHAT = {"speak": "speak outputs", "tool": "tool calls"}


def fig4b_annotations(data: pd.DataFrame) -> dict[str, str]:
    """The line a panel of Figure 4b carries when, in every sweep it shows, the baseline's outputs of its kind are
    token-identical at every temperature (``analysis.FIXED_COLUMN``): why its speedup does not move with T.

    >>> rows = pd.DataFrame({"kind": ["tool", "speak"], "baseline": ["ar", "ar"],
    ...                      "same outputs at every T": [True, False]})
    >>> fig4b_annotations(rows)
    {'tool': "ar's tool calls token-identical at every T"}
    """
    if FIXED_COLUMN not in data:
        return {}
    found = {}
    for kind, rows in data.groupby("kind", sort=False):
        if rows[FIXED_COLUMN].astype(bool).all():
            found[str(kind)] = f"{'/'.join(dict.fromkeys(rows['baseline']))}'s {FIXED_WHAT.get(kind, kind)} " \
                               "token-identical at every T"
    return found


def fig4b(data: pd.DataFrame, path: Path) -> Path | None:
    """Speedup versus temperature, speak and tool panels (a panel whose baseline outputs never change with T says so:
    ``fig4b_annotations``); None without a temperature sweep."""
    if data.empty:
        return None
    notes = fig4b_annotations(data)
    kinds = [k for k in ("speak", "tool") if (data["kind"] == k).any()]
    several = data["group"].nunique() > 1
    fig, axes = plt.subplots(1, len(kinds), figsize=(max(7, 6 * len(kinds)), 5), squeeze=False)
    for ax, kind in zip(axes[0], kinds):
        part = data[data["kind"] == kind]
        for (group, decoder), rows in part.groupby(["group", "decoder"], sort=False):
            rows = rows.sort_values("temperature")
            label = f"{decoder} ({group})" if several else decoder
            ax.plot(rows["temperature"], rows["speedup"], marker="o", label=label)
        ax.axhline(1.0, color="grey", linewidth=0.8, linestyle="--")
        ax.set_xlabel("sampling temperature")
        ax.set_ylabel(f"{kind} speedup over AR")
        ax.set_title(f"{kind} chunks" + (" (FDB v3)" if kind == "tool" else ""))
        ax.set_ylim(bottom=0)
        if kind in notes:
            ax.text(0.5, 0.04, notes[kind], transform=ax.transAxes, ha="center", fontsize=8, color="dimgray")
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=2, frameon=False)
    title = "Figure 4b: speedup versus temperature"
    fig.suptitle(title if several else f"{title}\n{textwrap.fill(data['group'].iloc[0], 90)}", fontsize=9)
    return _save(fig, path)


def fig4c_lines(data: pd.DataFrame) -> dict[tuple[str, str], pd.DataFrame]:
    """The lines of Figure 4c: per (setup group, row label) of the decoders (not the baseline), its rows by N. A line
    of a shared device without an N = 1 point starts from the decoder's single-session run (one session alone),
    which then has no line of its own.

    >>> rows = pd.DataFrame({"group": ["g"] * 3, "decoder": ["sl"] * 3, "label": ["sl", "sl, rr", "sl, es"],
    ...                      "N": [1, 4, 4], "batching": [False] * 3, "is baseline": [False] * 3})
    >>> {key: lines["N"].tolist() for key, lines in fig4c_lines(rows).items()}
    {('g', 'sl, rr'): [1, 4], ('g', 'sl, es'): [1, 4]}
    """
    data = data[~data["is baseline"].astype(bool)]
    encodings = (data["batched encodings"] if "batched encodings" in data else pd.Series(False, index=data.index))
    encodings = encodings.fillna(False).astype(bool)
    alone = data[(data["N"] == 1) & ~data["batching"].astype(bool) & ~encodings]
    lines, used = {}, set()
    for (group, label), rows in data.groupby(["group", "label"], sort=False):
        if len(alone) and rows.index.isin(alone.index).all():
            continue  # single-session points: drawn as the start of the decoder's concurrency lines (or alone below)
        start = alone[(alone["group"] == group) & (alone["decoder"] == rows["decoder"].iloc[0])]
        if (rows["N"] != 1).all() and len(start):
            used.update(start.index)
            rows = pd.concat([start, rows])
        used.update(rows.index.intersection(alone.index))
        lines[(group, label)] = rows.sort_values("N")
    for (group, label), rows in alone.drop(index=list(used)).groupby(["group", "label"], sort=False):
        lines[(group, label)] = rows
    return lines


def fig4c(data: pd.DataFrame, path: Path) -> Path | None:
    """Speak and tool speedup versus N concurrent sessions, and where the device's time went (``utilisation_bars``)
    when the runs recorded it; None without concurrency runs."""
    if data.empty:
        return None
    lines = fig4c_lines(data)
    kinds = [k for k in ("speak", "tool") if any(rows[f"{k} speedup"].notna().any() for rows in lines.values())]
    bars = utilisation_bars(data)
    if not kinds and bars.empty:
        return None
    several = data["group"].nunique() > 1
    panels = len(kinds) + (not bars.empty)
    fig, axes = plt.subplots(1, panels, figsize=(max(7, 6 * panels), 5), squeeze=False)
    if not bars.empty:
        _utilisation_panel(axes[0, -1], bars)
    for ax, kind in zip(axes[0], kinds):
        column = f"{kind} speedup"
        for (group, label), rows in lines.items():
            rows = rows[rows[column].notna()]
            if len(rows):
                ax.plot(rows["N"], rows[column], marker="o", label=f"{label} ({group})" if several else label)
        ns = sorted(set(data["N"]))
        ax.set_xscale("log", base=2)
        ax.set_xticks(ns, [str(n) for n in ns])
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.axhline(1.0, color="grey", linewidth=0.8, linestyle="--")
        finite = data.loc[~data["is baseline"].astype(bool), column].replace(float("inf"), float("nan"))
        top = finite.max()
        if kind == "tool" and top == top and top > 20:
            _y_scale(ax, top)
            ax.set_ylim(min(0.8, 0.8 * finite.min()), top * 1.5)
        else:
            ax.set_ylim(bottom=0)
        ax.set_xlabel("concurrent sessions on one device (N)")
        ax.set_ylabel(f"{kind} speedup over AR at the same N")
        ax.set_title(f"{kind} chunks" + (" (FDB v3)" if kind == "tool" else ""))
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=2, frameon=False)
    title = "Figure 4c: speedup versus concurrent sessions"
    fig.suptitle(title if several else f"{title}\n{textwrap.fill(data['group'].iloc[0], 90)}", fontsize=9)
    return _save(fig, path)


SHARES = {"post-audio %": "post-audio", "drafting %": "drafting", "talker %": "talker", "idle %": "idle"}


def utilisation_bars(data: pd.DataFrame) -> pd.DataFrame:
    """The bars of Figure 4c's device-time panel: one per row of ``data`` (``fig4c_data``) with recorded shares
    (``SHARES``: all four), labelled by N and the row label (and the setup group when there are several), in the
    table's order.

    >>> rows = pd.DataFrame({"group": ["g", "g"], "N": [4, 1], "label": ["sl", "ar"], "post-audio %": [0.5, None],
    ...                      "drafting %": [0.2, None], "talker %": [0.0, None], "idle %": [0.3, None]})
    >>> utilisation_bars(rows).to_dict("records")
    [{'bar': 'N=4\\nsl', 'post-audio': 0.5, 'drafting': 0.2, 'talker': 0.0, 'idle': 0.3}]
    """
    if not set(SHARES) <= set(data.columns):
        return pd.DataFrame()
    rows = data[data[list(SHARES)].notna().all(axis=1)]
    several = data["group"].nunique() > 1
    bars = [f"N={n}\n{label}" + (f"\n{group}" if several else "")
            for n, label, group in zip(rows["N"], rows["label"], rows["group"])]
    shares = rows[list(SHARES)].rename(columns=SHARES).reset_index(drop=True)
    return shares.assign(bar=bars)[["bar", *SHARES.values()]]


def _utilisation_panel(ax, bars: pd.DataFrame) -> None:
    """Stacked bars of the device's time by what ran (``utilisation_bars``), as shares of its span."""
    bottom = pd.Series(0.0, index=bars.index)
    for part in SHARES.values():
        ax.bar(range(len(bars)), bars[part], 0.7, bottom=bottom, label=part,
               color="lightgrey" if part == "idle" else None)
        bottom = bottom + bars[part]
    labels = ["\n".join(textwrap.fill(line, 22) for line in bar.split("\n")) for bar in bars["bar"]]
    ax.set_xticks(range(len(bars)), labels, fontsize=7)
    ax.set_ylim(0, max(1.0, float(bottom.max())) * 1.05)
    ax.yaxis.set_major_formatter(PercentFormatter(1.0))
    ax.set_ylabel("share of the device's span")
    ax.set_title("where the device's time went")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)  # clear of the bar labels


def _save(fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def write_figures(data4a: pd.DataFrame, data4b: pd.DataFrame, out: Path, data4c: pd.DataFrame | None = None) -> list[Path]:
    """Write the figures that have data into ``out``; returns their paths."""
    made = [fig4a(data4a, out / "fig4a_forwards_by_length.png"), fig4b(data4b, out / "fig4b_temperature.png")]
    if data4c is not None:
        made.append(fig4c(data4c, out / "fig4c_concurrency.png"))
    return [p for p in made if p is not None]
