"""One static HTML page with every table and figure (PNG embedded as data URIs: no server, one file), the case
studies (Figures 5-6) and the interactive session viewer (``ticktock.tables.viewer``: data embedded, no network).

The page opens with the clock every figure is on (``clock_lines``: modeled by which cost profile and whether it was
measured or derived, or measured on which device; one line per group of runs when they differ), then a banner of
what the losslessness and greedy-quality checks did (``Table.checks``): failures (a lossless decoder that changed an
output, greedy task scores that moved) in red, repeated in their table; what passed, and where; differences reported
but by rule no failure; and what was not checked, and why (no baseline run beside the runs, sampled decoding, a live
run, ...). Nothing is said to have passed that was not checked.

Example::

    >>> page = html_report(tables, {"fig4a_forwards_by_length": Path("fig4a_forwards_by_length.png")}, results)   # doctest: +SKIP
    >>> Path("report.html").write_text(page)                                                  # doctest: +SKIP
"""

from __future__ import annotations

import base64
import html
import time
from pathlib import Path

from ticktock.tables.cases import Case
from ticktock.tables.common import NOT_CHECKED, OUTCOMES, PASSED, REPORTED, Table, clock_lines, setup_label
from ticktock.tables.load import Results
from ticktock.tables.render import html_fragment
from ticktock.tables.viewer import VIEWER_STYLE, viewer_data, viewer_section

STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2rem auto; max-width: 1300px;
       padding: 0 1rem; color: #1d1d1f; }
h1 { font-size: 1.6rem; margin-bottom: .2rem; }
h2 { font-size: 1.15rem; margin-top: 2.2rem; border-bottom: 1px solid #ddd; padding-bottom: .3rem; }
table { border-collapse: collapse; font-size: .85rem; margin: .6rem 0; }
th, td { padding: .3rem .6rem; border-bottom: 1px solid #e5e5e5; vertical-align: top; }
th { background: #f4f4f6; text-align: left; border-bottom: 2px solid #bbb; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.bad { color: #b00020; font-weight: 700; background: #fdecee; }
tbody tr:hover { background: #fafafa; }
ul.notes { font-size: .8rem; color: #555; margin: .4rem 0 0 1rem; padding: 0; }
ul.notes li { margin: .15rem 0; }
.failure { color: #b00020; font-weight: 700; }
.banner { border: 3px solid #b00020; background: #fdecee; padding: .8rem 1rem; margin: 1rem 0; }
.banner.ok { border-color: #2e7d32; background: #edf7ee; color: #1b5e20; }
.banner.unchecked { border-color: #8a5a00; background: #fff8e5; color: #5c3d00; }
ul.clock { margin: .4rem 0 .8rem 0; padding-left: 1.2rem; }
.warning { color: #8a5a00; }
figure { margin: .8rem 0; }
figure img { max-width: 100%; border: 1px solid #ddd; }
figcaption { font-size: .8rem; color: #555; }
nav { line-height: 1.8; }
nav a { margin-right: .5rem; font-size: .85rem; white-space: nowrap; }
ul.provenance { color: #777; }
.meta { font-size: .8rem; color: #555; }
"""


def _image(path: Path, caption: str) -> str:
    data = base64.b64encode(path.read_bytes()).decode()
    return (f'<figure><img alt="{html.escape(caption)}" src="data:image/png;base64,{data}">'
            f"<figcaption>{html.escape(caption)} ({html.escape(path.name)})</figcaption></figure>")


def _items(lines: list[str]) -> str:
    return "<ul>" + "".join(f"<li>{html.escape(line)}</li>" for line in lines) + "</ul>"


def _banner(tables: list[Table], warnings: list[str]) -> str:
    """The failures (red), then what the tables' checks passed, reported and did not check (``Table.checks``)."""
    failures = [f for t in tables for f in t.failures]
    checks = [c for t in tables for c in t.checks]
    by_outcome = {outcome: [c.line for c in checks if c.outcome == outcome] for outcome in OUTCOMES}
    parts = []
    if failures:
        parts.append(f'<div class="banner"><p class="failure">{len(failures)} FAILURE(S)</p>{_items(failures)}</div>')
    if by_outcome[PASSED]:
        parts.append(f'<div class="banner ok"><p>Checks passed:</p>{_items(by_outcome[PASSED])}</div>')
    if by_outcome[REPORTED]:
        parts.append(f'<div class="banner unchecked"><p>Differences reported, not failed:</p>'
                     f"{_items(by_outcome[REPORTED])}</div>")
    if by_outcome[NOT_CHECKED] or not (checks or failures):
        ran = any(c.outcome != NOT_CHECKED for c in checks)
        head = "Not checked:" if ran else "Not checked: no losslessness or greedy quality check ran on these results"
        parts.append(f'<div class="banner unchecked"><p>{head}</p>{_items(by_outcome[NOT_CHECKED])}</div>')
    parts += [f'<p class="warning">{html.escape(w)}</p>' for w in warnings]
    return "\n".join(parts)


def _clock(results: Results) -> str:
    """The clock of the figures (``clock_lines``), as the page's first lines."""
    lines = clock_lines(results)
    head = "Every figure below is on this clock:" if len(lines) == 1 else "The figures are on these clocks, per group of runs:"
    return f'<p class="clock"><b>{head}</b></p>' + _items(lines).replace("<ul>", '<ul class="clock">', 1)


def _runs_table(results: Results) -> str:
    head = "".join(f"<th>{h}</th>" for h in ("run", "decoder", "setup", "shard", "status", "sessions", "chunks", "path"))
    rows = []
    for run in results.runs:
        cells = [run.run_id, run.decoder, setup_label(run.setup()), run.shard, run.status, len(run.sessions), len(run.chunks),
                 run.path]
        rows.append("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in cells) + "</tr>")
    incomplete = "".join(f'<p class="warning">{html.escape(note)}</p>' for note in results.incomplete)
    return (f'<section id="runs"><h2>Runs ({len(results.runs)})</h2><table><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(rows)}</tbody></table>{incomplete}</section>")


def _cases_section(cases: list[tuple[Case, Path]]) -> str:
    if not cases:
        return ('<section id="cases"><h2>Case studies</h2><p class="meta">no case to show: the results need a '
                "baseline run and another decoder's run of the same sessions, with a reply onset or a tool call</p></section>")
    parts = ['<section id="cases"><h2>Case studies (Figures 5-6)</h2><p class="meta">one session per figure, one panel '
             "per decoder, on the run's clock; the session viewer below shows every session</p>"]
    for case, path in cases:
        parts.append(f'<h3 id="{html.escape(case.key)}">{html.escape(case.title)}</h3>')
        parts.append(_image(path, f"{case.why}; decoders {', '.join(case.decoders)}; chunks {case.first}-{case.last}; "
                                  f"{setup_label(case.setup)}"))
    return "\n".join(parts) + "</section>"


def html_report(tables: list[Table], figures: dict[str, Path], results: Results, title: str = "TickTock results",
                cases: list[tuple[Case, Path]] = (), viewer: dict | None = None, tracks: str = "") -> str:
    """The whole page: banner, navigation, every table (with its figure after it), the case studies (each with its
    figure's path), the session viewer (``viewer``: its data; by default ``viewer_data(results)``; ``tracks``: the
    audio of the sessions to listen to, ``ticktock.tables.listen.tracks_markup``), the runs."""
    nav = " ".join(f'<a href="#{html.escape(t.key)}">{html.escape(t.key)}</a>' for t in tables)
    body = []
    for table in tables:
        body.append(html_fragment(table))
        if table.key in figures:
            body.append(_image(figures[table.key], table.title))
    generated = time.strftime("%Y-%m-%d %H:%M:%S")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title><style>{STYLE}{VIEWER_STYLE}</style></head>
<body>
<h1>{html.escape(title)}</h1>
{_clock(results)}
<p class="meta">generated {generated} by <code>python -m ticktock.tables</code> from {len(results.runs)} runs;
a pure function of the result files (no model was run).</p>
{_banner(tables, results.warnings)}
<nav>{nav} <a href="#cases">case studies</a> <a href="#viewer">session viewer</a> <a href="#runs">runs</a></nav>
{''.join(body)}
{_cases_section(list(cases))}
{viewer_section(viewer if viewer is not None else viewer_data(results), tracks)}
{_runs_table(results)}
</body></html>
"""
