"""Case-study figures (the paper's Figures 5-6) as PNG: one panel per decoder on a shared time axis.

Each panel has three lanes, top to bottom, over the case's chunks (``ticktock.tables.cases``):

- **audio**: each chunk's span (blue while the user speaks, grey otherwise) with its index; a dotted line at
  every arrival, which is also the previous chunk's deadline;
- **idle window**: the window before each arrival (pale green), the part it worked (green) and its draft
  forwards (dark green marks);
- **post-audio**: each chunk's work from its start to its end (outlined), one orange mark per forward (violet for
  a tree forward) and what the forwards committed above it (``committed_label``), the lag past a missed deadline in red with a cross at the
  deadline, and the onset (triangle) and tool call (diamond) with their latencies;

and under them the text each chunk committed, under the chunk's audio.

Example::

    >>> path = case_figure(case, case_timelines(results, case), Path("out/fig6_tool_call.png"))  # doctest: +SKIP
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Patch, Rectangle  # noqa: E402

from ticktock.tables.cases import Case, SessionTimeline  # noqa: E402
from ticktock.tables.common import setup_label  # noqa: E402
from ticktock.tables.figures import LABELS  # noqa: E402

LANES = {"audio": 3.0, "idle window": 2.0, "post-audio": 1.0}
HEIGHT = 0.6
LABEL_POINTS = 6  # font size of the per-chunk labels
LEGEND = (("speaking", "user speaking"), ("silent", "silence"), ("window", "idle window"), ("window_work", "its work"),
          ("draft", "draft forward"), ("forward", "post-audio forward"), ("tree", "tree forward"),
          ("lag", "lag past the deadline"))
COLOURS = {"speaking": "#7aa6d6", "silent": "#d9d9d9", "window": "#e3f4e1", "window_work": "#8fd18a",
           "draft": "#1e6b24", "forward": "#f08c2a", "tree": "#8a4fc9", "lag": "#e53935", "work": "#555555"}


def _bar(ax, lane: str, start_s: float, end_s: float, colour: str, height: float = HEIGHT, **style) -> None:
    y = LANES[lane]
    ax.add_patch(Rectangle((start_s, y - height / 2), max(end_s - start_s, 0.0), height, facecolor=colour, **style))


def _draw_audio(ax, timeline: SessionTimeline) -> None:
    for chunk in timeline.chunks.itertuples(index=False):
        start, arrival = chunk.start_ms / 1000, chunk.arrival_ms / 1000
        _bar(ax, "audio", start, arrival, COLOURS["speaking" if chunk.user_speaking else "silent"],
             edgecolor="white", linewidth=0.8)
        ax.text((start + arrival) / 2, LANES["audio"], str(chunk.chunk_index), ha="center", va="center", fontsize=7)
        ax.axvline(arrival, color="#999999", linestyle=":", linewidth=0.7, zorder=0)


def _draw_windows(ax, timeline: SessionTimeline) -> None:
    for chunk in timeline.chunks.itertuples(index=False):
        if chunk.window_open_ms == chunk.window_open_ms:  # not NaN: the chunk had an idle window
            _bar(ax, "idle window", chunk.window_open_ms / 1000, chunk.arrival_ms / 1000, COLOURS["window"])
            _bar(ax, "idle window", chunk.window_open_ms / 1000, chunk.window_work_end_ms / 1000,
                 COLOURS["window_work"], height=HEIGHT * 0.5)
    drafts = timeline.forwards[timeline.forwards["phase"] != "post_audio"]
    for forward in drafts.itertuples(index=False):
        _bar(ax, "idle window", forward.start_ms / 1000, forward.end_ms / 1000, COLOURS["draft"], height=HEIGHT * 0.8,
             edgecolor=COLOURS["draft"], linewidth=0.4)


def _draw_post_audio(ax, timeline: SessionTimeline, seconds_per_point: float) -> None:
    y = LANES["post-audio"]
    for chunk in timeline.chunks.itertuples(index=False):
        _bar(ax, "post-audio", chunk.work_start_ms / 1000, chunk.work_end_ms / 1000, "none",
             edgecolor=COLOURS["work"], linewidth=0.6)
        if chunk.missed_deadline:
            _bar(ax, "post-audio", chunk.deadline_ms / 1000, chunk.work_end_ms / 1000, COLOURS["lag"], alpha=0.35)
            ax.plot(chunk.deadline_ms / 1000, y + HEIGHT / 2 + 0.12, marker="x", color=COLOURS["lag"], markersize=6)
    post = timeline.forwards[timeline.forwards["phase"] == "post_audio"]
    for forward in post.itertuples(index=False):
        colour = COLOURS["tree" if forward.tree else "forward"]
        _bar(ax, "post-audio", forward.start_ms / 1000, forward.end_ms / 1000, colour, height=HEIGHT * 0.8,
             edgecolor="white", linewidth=0.3)
    free_from = [-float("inf"), -float("inf")]  # where each of two label rows is free again (s)
    for chunk_index, forwards in post.groupby("chunk_index"):
        start = timeline.chunks.loc[timeline.chunks["chunk_index"] == chunk_index, "work_start_ms"].iloc[0] / 1000
        label = committed_label(forwards["tokens_committed"].tolist())
        row = 0 if start >= free_from[0] else 1  # a label that would overlap the previous one goes a row up
        free_from[row] = start + len(label) * 0.6 * LABEL_POINTS * seconds_per_point
        ax.text(start, y + HEIGHT / 2 + 0.05 + 0.28 * row, label, ha="left", va="bottom", fontsize=LABEL_POINTS)
    for i, event in enumerate(timeline.events[timeline.events["event"] != "deadline miss"].itertuples(index=False)):
        marker = "^" if event.event == "onset" else "D"
        ax.plot(event.at_ms / 1000, y - HEIGHT / 2 - 0.12, marker=marker, color="black", markersize=5)
        ax.text(event.at_ms / 1000, y - HEIGHT / 2 - 0.3 - 0.22 * (i % 2), f"{event.event} {event.ms:.0f} ms",
                ha="left", va="top", fontsize=6.5, fontweight="bold")


def committed_label(tokens: list[int]) -> str:
    """What a chunk's post-audio forwards committed: each forward's tokens when there are few, else a total.

    >>> committed_label([8, 1, 1]), committed_label([1] * 27)
    ('8+1+1 tok', '27 fwd, 27 tok')
    """
    if len(tokens) <= 4:
        return "+".join(map(str, tokens)) + " tok"
    return f"{len(tokens)} fwd, {sum(tokens)} tok"


def _draw_text(ax, timeline: SessionTimeline, seconds_per_point: float) -> None:
    """Each chunk's committed text under its own audio span, wrapped to the span's width."""
    for chunk in timeline.chunks.itertuples(index=False):
        if chunk.text:
            chars = (chunk.arrival_ms - chunk.start_ms) / 1000 / (0.6 * 5.5 * seconds_per_point)
            lines = textwrap.wrap(chunk.text, max(6, int(chars * 0.95)))[:3]
            ax.text(chunk.start_ms / 1000, -0.15, "\n".join(lines), ha="left", va="top", fontsize=5.5,
                    family="monospace", color="#333333")


def _panel(ax, timeline: SessionTimeline, span: tuple[float, float], seconds_per_point: float) -> None:
    _draw_audio(ax, timeline)
    _draw_windows(ax, timeline)
    _draw_post_audio(ax, timeline, seconds_per_point)
    _draw_text(ax, timeline, seconds_per_point)
    ax.set_xlim(*span)
    ax.set_ylim(-1.0, LANES["audio"] + 0.6)
    ax.set_yticks(list(LANES.values()), list(LANES))
    misses = int(timeline.chunks["missed_deadline"].eq(True).sum())
    ax.set_title(f"{LABELS.get(timeline.decoder, timeline.decoder)} ({timeline.run_id}): {misses} deadline "
                 f"miss{'es' if misses != 1 else ''} in these chunks", fontsize=8, loc="left")
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)


def time_span(timelines: list[SessionTimeline]) -> tuple[float, float]:
    """Seconds shown: from the first chunk's start to the last deadline or end of work, whichever is later."""
    start = min(t.chunks["start_ms"].min() for t in timelines) / 1000
    end = max(max(t.chunks["deadline_ms"].max(), t.chunks["work_end_ms"].max()) for t in timelines) / 1000
    return start, end + 0.05 * (end - start)


def case_figure(case: Case, timelines: list[SessionTimeline], path: Path) -> Path:
    """Draw ``timelines`` (one per decoder of ``case``) into ``path`` (PNG)."""
    span = time_span(timelines)
    width = min(16.0, max(9.0, 1.6 * (span[1] - span[0])))
    fig, axes = plt.subplots(len(timelines), 1, figsize=(width, 2.9 * len(timelines)), sharex=True, squeeze=False)
    seconds_per_point = (span[1] - span[0]) / (width * 72 * 0.85)  # the axes take about 85% of the width
    for ax, timeline in zip(axes[:, 0], timelines):
        _panel(ax, timeline, span, seconds_per_point)
    axes[-1, 0].set_xlabel(f"time in the session (s, {timelines[0].clock} clock)")
    legend = [Patch(color=COLOURS[key], label=label, **({"alpha": 0.35} if key == "lag" else {}))
              for key, label in LEGEND]
    fig.legend(handles=legend, loc="lower center", ncol=8, fontsize=7, frameon=False)
    fig.suptitle(f"{case.title} ({timelines[0].task}); {setup_label(case.setup)}\n{textwrap.fill(case.why, 140)}",
                 fontsize=9)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
