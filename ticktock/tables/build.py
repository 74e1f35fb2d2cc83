"""Build every table and figure from loaded results, write them, and print the headline tables.

``build_report`` does all of it in one call (the main job's report); ``python -m ticktock.tables`` runs the
same steps with its own error handling.

Example::

    >>> from ticktock.tables import build_tables, load_results, print_headline
    >>> results = load_results(["results/runs"])                   # doctest: +SKIP
    >>> built = build_tables(results, baseline="ar")                # doctest: +SKIP
    >>> written = write_outputs(built, results, Path("results/tables/x"), ("md", "csv", "tex", "html"))  # doctest: +SKIP
    >>> print_headline(results)                                     # doctest: +SKIP
    >>> build_report(results, Path("results/main/report"))          # doctest: +SKIP
    PosixPath('results/main/report/report.html')
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from ticktock.errors import RunFolderError
from ticktock.tables import analysis, capacity, compute, quality
from ticktock.tables.cases import Case, pick_cases, session_case
from ticktock.tables.common import Table
from ticktock.tables.load import Results, Setup, TablesError, load_results
from ticktock.tables.render import FORMATS, markdown, write_tables
from ticktock.tables.viewer import DEFAULT_SESSIONS

HEADLINE = (compute.speak_speedup_table, compute.tool_speedup_table, compute.latency_table)
#: The tables whose figures are measured against the baseline's run (speedups, comparisons, the checks against it).
NEEDS_BASELINE = frozenset({"table2_speak_speedup", "tool_speedup", "table3_max_lag", "table4_ablation",
                            "fig4b_temperature", "fig4c_concurrency", "capacity", "losslessness", "quality"})
FIGURE_TABLES = {"fig4a_forwards_by_length": "fig4a_forwards_by_length.png", "fig4b_temperature": "fig4b_temperature.png",
                 "fig4c_concurrency": "fig4c_concurrency.png", "capacity": "capacity.png"}


@dataclass
class Built:
    tables: list[Table]
    fig4a: pd.DataFrame
    fig4b: pd.DataFrame
    fig4c: pd.DataFrame = field(default_factory=pd.DataFrame)
    cases: list[Case] = field(default_factory=list)  # the case studies (Figures 5-6 and any --case)
    listen: list[tuple[Setup, str]] = field(default_factory=list)  # the tracks to make: (talker setup, session)
    capacity: pd.DataFrame = field(default_factory=pd.DataFrame)  # capacity per device (ticktock.tables.capacity)

    @property
    def failures(self) -> list[str]:
        return [f for t in self.tables for f in t.failures]


def _as_results(results: Results | list[str] | str) -> Results:
    if isinstance(results, Results):
        return results
    return load_results([results] if isinstance(results, (str, Path)) else [str(r) for r in results])


def check_baseline(results: Results, baseline: str) -> None:
    """For a baseline the user named (``--baseline``): no run of it among the results is one line (exit 2)."""
    if not any(c.decoder == baseline for c in results.cells):
        decoders = sorted({c.decoder for c in results.cells})
        raise TablesError(f"no {baseline!r} run among the results (decoders: {', '.join(decoders)}); "
                          "--baseline names the decoder every speedup is measured against")


def missing_baseline(results: Results, baseline: str) -> str | None:
    """The one line the tables that need the baseline (``NEEDS_BASELINE``) carry when no run of it is among the
    results (one live run of a server that reports no TickTock decoder, labelled ``served``, is the usual case):
    what run they need. None when there is one. The other tables are built as ever.

    >>> from types import SimpleNamespace as Run
    >>> missing_baseline(Run(cells=[Run(decoder="served")]), "ar")[:66]
    "no 'ar' run among the results (decoders here: served): speedups an"
    """
    decoders = sorted({c.decoder for c in results.cells})
    if baseline in decoders:
        return None
    return (f"no {baseline!r} run among the results (decoders here: {', '.join(decoders)}): speedups and the "
            f"comparisons with {baseline} need one; run the same sessions with decoder={baseline} (live: a server "
            f"started with decoder={baseline}), or name another decoder with --baseline")


def say_missing_baseline(tables: list[Table], results: Results, baseline: str) -> list[Table]:
    """``tables``, those that need the baseline led by ``missing_baseline``'s line when no run of it is there."""
    note = missing_baseline(results, baseline)
    for table in tables:
        if note and table.key in NEEDS_BASELINE and note not in table.notes:
            table.notes.insert(0, note)
    return tables


def build_tables(results: Results, baseline: str = "ar", case_sessions: tuple[str, ...] = (),
                 case_decoders: tuple[str, ...] | None = None, listen_sessions: tuple[str, ...] = ()) -> Built:
    """Every table, headline tables first, then the analysis, losslessness and quality tables, and the case studies
    (the default onset and tool-call picks, then one per session in ``case_sessions``, showing ``case_decoders``),
    and which sessions the report lets one listen to (``ticktock.tables.listen``: ``listen_sessions``, by default the
    case studies' sessions of each setup with a talker). Every table but Figure 4c and capacity uses the runs of one
    session alone on the device (``Results.single_session``); those two every N. With no run of ``baseline`` among
    the results, the tables that need it have no rows and say what run they need (``missing_baseline``)."""
    from ticktock.tables.listen import listen_choice

    if listen_sessions:  # an unknown session is one line before any work
        listen_choice(results, listen_sessions)
    data4a, data4b = analysis.fig4a_data(results), analysis.fig4b_data(results, baseline)
    data4c = analysis.fig4c_data(results, baseline)
    capacity_data = capacity.capacity_data(results, baseline)
    tables = [table(results, baseline) for table in HEADLINE]
    tables += [compute.composition_table(results), compute.max_lag_table(results, baseline),
               compute.ablation_table(results, baseline),
               analysis.acceptance_table(results), analysis.fig4a_table(results, data4a),
               analysis.fig4b_table(results, baseline, data4b), analysis.fig4c_table(results, baseline, data4c),
               capacity.capacity_table(results, baseline, data=capacity_data),
               quality.losslessness_table(results, baseline), quality.quality_table(results, baseline)]
    cases = pick_cases(results, baseline) + [session_case(results, s, baseline, case_decoders) for s in case_sessions]
    say_missing_baseline(tables, results, baseline)
    return Built(tables, data4a, data4b, data4c, cases, listen_choice(results, listen_sessions, cases, baseline),
                 capacity_data)


def headline_text(tables: list[Table]) -> str:
    """The tables in Markdown, with their common provenance printed once, first."""
    provenance = list(dict.fromkeys(p for t in tables for p in t.provenance))
    head = "Produced by:\n" + "\n".join(f"- {p}" for p in provenance) + "\n\n" if provenance else ""
    return head + "\n\n".join(markdown(t, provenance=False) for t in tables) + "\n"


def print_headline(results: Results | list[str] | str, baseline: str = "ar", file=None) -> list[Table]:
    """Print Table 2, the tool-call table and Table 5 (Markdown) for results or result paths/globs."""
    results = _as_results(results)
    tables = say_missing_baseline([table(results, baseline) for table in HEADLINE], results, baseline)
    print(headline_text(tables), file=file or sys.stdout)
    return tables


def print_failures(failures: list[str], file=None) -> None:
    """Loud failure block (stderr by default)."""
    out = file or sys.stderr
    if not failures:
        return
    bar = "!" * 100
    print(f"\n{bar}\n{len(failures)} FAILURE(S)", file=out)
    for failure in failures:
        print(f"  {failure}", file=out)
    print(bar, file=out)


def write_cases(cases: list[Case], results: Results, out: Path) -> list[Path]:
    """Each case study as ``<key>.png`` (the figure) and ``<key>.csv`` (its chunks, one row per decoder and chunk)."""
    from ticktock.tables.case_figures import case_figure
    from ticktock.tables.cases import case_timelines

    written = []
    for case in cases:
        timelines = case_timelines(results, case)
        written.append(case_figure(case, timelines, out / f"{case.key}.png"))
        frame = pd.concat([t.chunks.assign(decoder=t.decoder, session_id=t.session_id)
                           for t in timelines], ignore_index=True)
        frame.to_csv(out / f"{case.key}.csv", index=False)
        written.append(out / f"{case.key}.csv")
    return written


class OutputFolderError(RunFolderError):
    """The tables' output folder cannot be written (read-only, full, a file in its place): exit code 4."""


def write_outputs(built: Built, results: Results, out: Path, formats: tuple[str, ...],
                  viewer_sessions: int | None = DEFAULT_SESSIONS) -> list[Path]:
    """Table files, PNG figures, the case studies and (with 'html') report.html in ``out``, with the session viewer
    of ``viewer_sessions`` sessions (None: all; the case studies' sessions first). A folder that cannot be written
    is an ``OutputFolderError`` naming the file."""
    try:
        return _write_outputs(built, results, out, formats, viewer_sessions)
    except OSError as err:
        where = err.filename or out
        raise OutputFolderError(f"{where}: cannot write the tables there ({err.strerror or err})") from None


def _write_outputs(built: Built, results: Results, out: Path, formats: tuple[str, ...],
                   viewer_sessions: int | None) -> list[Path]:
    from ticktock.tables.figures import write_figures
    from ticktock.tables.listen import listen_tracks, tracks_markup
    from ticktock.tables.report import html_report
    from ticktock.tables.viewer import viewer_data

    out.mkdir(parents=True, exist_ok=True)
    written = write_tables(built.tables, out, formats)
    figures = write_figures(built.fig4a, built.fig4b, out, built.fig4c)
    drawn = capacity.capacity_figure(built.capacity, out / FIGURE_TABLES["capacity"])  # None without concurrency runs
    figures += [drawn] if drawn is not None else []
    written += figures + write_cases(built.cases, results, out)
    if "html" in formats:
        by_table = {key: out / name for key, name in FIGURE_TABLES.items() if out / name in figures}
        path = out / "report.html"
        first = tuple(dict.fromkeys([c.session_id for c in built.cases] + [s for _, s in built.listen]))
        limit = viewer_sessions if viewer_sessions is None or not built.listen else max(viewer_sessions, len(first))
        viewer = viewer_data(results, limit, first)  # every session listened to is in the viewer
        tracks = tracks_markup(listen_tracks(results, built.listen)) if built.listen else ""
        path.write_text(html_report(built.tables, by_table, results, cases=[(c, out / f"{c.key}.png") for c in built.cases],
                                    viewer=viewer, tracks=tracks))
        written.append(path)
    return written


def build_report(results: Results, out: Path, baseline: str = "ar", formats: tuple[str, ...] = FORMATS) -> Path:
    """Write every table, figure and report.html into ``out``; print failures loudly; return report.html's path
    (as ``ticktock.main_job`` does: ``build_report(load_results([dir]), Path("results/main/report"))``)."""
    built = build_tables(results, baseline)
    write_outputs(built, results, Path(out), formats)
    print_failures(built.failures)
    return Path(out) / "report.html"
