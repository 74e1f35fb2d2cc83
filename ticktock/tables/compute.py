"""The latency tables: speak speedup (Table 2), tool-call speedup, max lag (Table 3), the Speculative
Listening ablation (Table 4) and user-perceived latency (Table 5).

Each builder takes the loaded ``Results`` and the baseline decoder's name and returns a ``Table``. Paired
quantities (speedups) compare each decoder with the baseline run of the same setup over exactly the
baseline's chunks of the subset (``metrics.speedup``); a setup without a baseline run gets no paired rows
and a note saying so. Every table here uses the runs of one session alone on the device (``@single_session``);
runs with N concurrent sessions appear in Figure 4c (``analysis.fig4c_table``) only.

Example (AR speak latencies [300, 500] ms, SL [100, 100] ms on the same chunks)::

    >>> table = speak_speedup_table(results, "ar")            # doctest: +SKIP
    >>> table.frame[["decoder", "speedup", "#MAT"]].to_dict("records")   # doctest: +SKIP
    [{'decoder': 'ar', 'speedup': 1.0, '#MAT': 1.0}, {'decoder': 'speclisten', 'speedup': 4.0, '#MAT': 4.0}]
"""

from __future__ import annotations

import json
from pathlib import PurePath

import pandas as pd

from ticktock.tables import metrics
from ticktock.tables.common import (NOT_PER_UNIT, NOT_SEEN, Table, paper_columns_kept, provenance_notes, run_names,
                                    setup_columns, setup_label, single_session, varying)
from ticktock.tables.load import Cell, Results
from ticktock.tables.paper import paper_note, paper_value

ABLATION = {
    "speclisten_silence": "silence draft",
    "speclisten_runnerup": "+ runner-up branch",
    "speclisten": "+ hypothesis pool (full SL)",
    "speclisten_plus": "beyond the paper: top-3 first-token tree, pool while drafting, lookup trees, tool-schema drafts",
    "speclisten_stream": "beyond the paper: speclisten_plus + partial-audio hypotheses + early prefill",
}
LLAMA_TASK = "llama_questions"
PAPER_COLUMNS = ("paper columns: the paper's value for the matching decoder (a range over its four models where it "
                 "reports several), for setups of the paper's kind only (Setup.compares_with_paper): a model the paper "
                 "measured (paper_numbers.yaml models) with real weights (none for a miniature), greedy, replayed in "
                 "process (none for a live run), one session alone on the device, encoding costs as profiled")


def _paper(setup, *args, **kwargs) -> str:
    """The paper's value, for setups of the paper's kind only (``Setup.compares_with_paper``: a model the paper
    measured, real weights, greedy, in process, one session alone, encoding costs as profiled); a column no row fills
    is dropped (``paper_columns_kept``)."""
    return paper_value(*args, **kwargs) if setup.compares_with_paper else ""


def _paired(results: Results, baseline: str, notes: list[str]):
    """(setup, baseline cell, cell) for every cell whose setup has a baseline run."""
    for setup in results.setups():
        base = results.cell(setup, baseline)
        if base is None:
            notes.append(f"no {baseline} run for setup {setup_label(setup)}: its decoders have no speedup rows")
            continue
        for cell in results.in_setup(setup):
            yield setup, base, cell


def _speedup(base: Cell, cell: Cell, mask, subset: str) -> metrics.Speedup:
    return metrics.speedup(base.chunks, cell.chunks, mask, (run_names(base), run_names(cell)), subset)


@single_session
def _speedup_table(results: Results, baseline: str, key: str, title: str, kind: str) -> Table:
    shown, notes, rows = varying(results), [], []
    column = f"{kind} speedup"
    for setup, base, cell in _paired(results, baseline, notes):
        mask = metrics.speak_mask(base.chunks) if kind == "speak" else metrics.tool_mask(base.chunks)
        result = _speedup(base, cell, mask, "speak" if kind == "speak" else "fdb_v3 tool")
        if result.chunks == 0:
            if cell is base:
                notes.append(f"setup {setup_label(setup)}: the {baseline} run has no {kind} chunks"
                             + (" on fdb_v3" if kind == "tool" else ""))
            continue
        rows.append({**setup_columns(setup, shown), "decoder": cell.decoder, "chunks": result.chunks,
                     **_latencies(base, cell, result, baseline),
                     "paper speedup": _paper(setup, 2 if kind == "speak" else None, column, cell.decoder),
                     **({"paper #MAT": _paper(setup, 2, "#MAT", cell.decoder)} if kind == "speak" else {})})
    formats = {f"{baseline} ms": ".1f", "ms": ".1f", "speedup": ".2f", "#MAT": ".2f"}
    paper = paper_note(2) if kind == "speak" else paper_note(None, ["tool speedup"])
    frame, notes = paper_columns_kept(pd.DataFrame(rows), notes, [PAPER_COLUMNS, paper])
    return Table(key, title, frame, formats, notes, [], provenance_notes(results))


def _latencies(base: Cell, cell: Cell, result: metrics.Speedup, baseline: str) -> dict:
    """A speedup row's measured columns: the mean latencies, the speedup and #MAT; a live cell's #MAT is not seen
    by the client (``NOT_SEEN``), and a turn-based live cell measured no post-audio latency (``NOT_PER_UNIT``)."""
    columns = {f"{baseline} ms": result.baseline_ms, "ms": result.method_ms, "speedup": result.speedup,
               "#MAT": NOT_SEEN if cell.live else result.mat}
    if not (base.per_unit and cell.per_unit):
        columns.update({f"{baseline} ms": NOT_PER_UNIT if not base.per_unit else result.baseline_ms,
                        "ms": NOT_PER_UNIT if not cell.per_unit else result.method_ms, "speedup": NOT_PER_UNIT})
    return columns


def speak_speedup_table(results: Results, baseline: str = "ar") -> Table:
    """Table 2: speak-chunk speedup over the baseline (mean post-audio latency ratio) and #MAT."""
    title = (f"Table 2: speak-chunk speedup over {baseline} (mean post-audio latency over the {baseline} run's speak "
             "chunks) and #MAT (tokens committed per post-audio forward)")
    return _speedup_table(results, baseline, "table2_speak_speedup", title, "speak")


def tool_speedup_table(results: Results, baseline: str = "ar") -> Table:
    """Tool-call speedup over the baseline on FDB v3 tool chunks, and #MAT on them."""
    title = f"Tool-call speedup over {baseline} on FDB v3 tool chunks, and #MAT"
    return _speedup_table(results, baseline, "tool_speedup", title, "tool")


@single_session
def max_lag_table(results: Results, baseline: str = "ar") -> Table:
    """Table 3: per-session max lag on FDB v3 sessions: mean, max and share of sessions above 1 s."""
    shown, rows, notes = varying(results), [], []
    for cell in results.cells:
        lag = metrics.max_lag(cell.sessions)
        if lag["sessions"] == 0:
            continue
        if not cell.per_unit:
            rows.append({**setup_columns(cell.setup, shown), "decoder": cell.decoder, "sessions": lag["sessions"],
                         **dict.fromkeys(("mean max lag ms", "max max lag ms", "sessions > 1 s", f"mean vs {baseline}"),
                                         NOT_PER_UNIT)})
            continue
        base = results.cell(cell.setup, baseline)
        base_mean = metrics.max_lag(base.sessions)["mean_ms"] if base is not None else float("nan")
        change = lag["mean_ms"] / base_mean - 1 if base_mean and base_mean == base_mean else float("nan")
        rows.append({**setup_columns(cell.setup, shown), "decoder": cell.decoder, "sessions": lag["sessions"],
                     "mean max lag ms": lag["mean_ms"], "max max lag ms": lag["max_ms"],
                     "sessions > 1 s": lag["lagging"], f"mean vs {baseline}": change,
                     "paper mean ms": _paper(cell.setup, 3, "mean max lag ms", cell.decoder, digits=0),
                     "paper max ms": _paper(cell.setup, 3, "max max lag ms", cell.decoder, digits=0),
                     "paper > 1 s": _paper(cell.setup, 3, "lagging share", cell.decoder, percent=True)})
    if not rows:
        notes.append("no fdb_v3 sessions in the results")
    formats = {"mean max lag ms": ".1f", "max max lag ms": ".1f", "sessions > 1 s": ".1%", f"mean vs {baseline}": "+.1%"}
    title = "Table 3: per-session maximum lag behind the incoming audio on FDB v3 (lag recursion of appendix A)"
    frame, notes = paper_columns_kept(pd.DataFrame(rows), notes, [PAPER_COLUMNS, paper_note(3)])
    return Table("table3_max_lag", title, frame, formats, notes, [], provenance_notes(results))


def _speak_tasks(base: Cell) -> tuple[list[str] | None, str]:
    """The paper's ablation measures speak chunks on Llama Questions; all tasks when that task is absent."""
    if (base.chunks["task"] == LLAMA_TASK).any():
        return [LLAMA_TASK], LLAMA_TASK
    return None, "all tasks"


@single_session
def ablation_table(results: Results, baseline: str = "ar") -> Table:
    """Table 4: speedup over the baseline as the components of Speculative Listening are added."""
    shown, rows, notes = varying(results), [], []
    for setup, base, cell in _paired(results, baseline, notes):
        if cell.decoder not in ABLATION and cell is not base:
            continue
        if not any(results.cell(setup, d) for d in ABLATION):
            continue
        tasks, label = _speak_tasks(base)
        speak = _speedup(base, cell, metrics.speak_mask(base.chunks, tasks), "speak")
        tool = _speedup(base, cell, metrics.tool_mask(base.chunks), "fdb_v3 tool")
        rows.append({**setup_columns(setup, shown), "decoder": cell.decoder,
                     "components": ABLATION.get(cell.decoder, "baseline"), "speak tasks": label,
                     "speak chunks": speak.chunks, "speak speedup": speak.speedup,
                     "tool chunks": tool.chunks, "tool speedup": tool.speedup})
    if not rows:
        notes.append("no Speculative Listening ablation runs (speclisten_silence, speclisten_runnerup, speclisten)")
    notes.append("speak: Llama Questions speak chunks when the runs have them (as the paper), else all tasks; "
                 "tool: FDB v3 tool chunks. speclisten_plus is beyond the paper.")
    title = f"Table 4: Speculative Listening ablation, speedup over {baseline}"
    return Table("table4_ablation", title, pd.DataFrame(rows), {"speak speedup": ".2f", "tool speedup": ".2f"},
                 notes, [], provenance_notes(results))


@single_session
def latency_table(results: Results, baseline: str = "ar") -> Table:
    """Table 5: response onset latency (mean over tasks) and tool-call latency (FDB v3), with the paper's; for a
    setup with a talker also the onset to first audio and the stalls of the assistant's voice (``SPEECH_FORMATS``'s
    columns: present only when some setup has a talker, empty in the rows of the others), after the playback delay
    they were played with when some setup has one (``PLAYBACK_DELAY_NOTE``: the trade of first audio against stalls)."""
    shown, rows = varying(results), []
    buffered = any(cell.setup.playback_delay_ms for cell in results.cells)
    for cell in results.cells:
        onset, tool = metrics.onset_latency(cell.chunks), metrics.tool_latency(cell.chunks)
        rows.append({**setup_columns(cell.setup, shown), "decoder": cell.decoder, "onset ms": onset["onset_ms"],
                     "tasks": onset["tasks"], "onsets": onset["onsets"],
                     "paper onset ms": _paper(cell.setup, 5, "onset ms", cell.decoder, digits=0),
                     "tool-call ms": tool["tool_ms"], "tool chunks": tool["tool_chunks"],
                     "paper tool-call ms": _paper(cell.setup, 5, "tool-call ms", cell.decoder, digits=0),
                     **(_speech_columns(cell, buffered) if speaks(cell) else {})})
    frame, notes = paper_columns_kept(pd.DataFrame(rows), [
        "onset: response_ms (b_{t-1} + l_t) of the first speak chunk of each model turn, averaged per task, then over "
        "tasks; tool-call: mean response_ms of FDB v3 tool chunks"], [PAPER_COLUMNS, paper_note(5)])
    formats = {"onset ms": ".1f", "tool-call ms": ".1f"}
    if any(cell.live and speaks(cell) for cell in results.cells):
        notes.append(LIVE_SPEECH_NOTE)
    if any(speaks(cell) for cell in results.cells):
        notes.append(SPEECH_NOTE)
        formats.update(SPEECH_FORMATS)
        if buffered:
            notes.append(PLAYBACK_DELAY_NOTE)
    title = "Table 5: user-perceived latency (ms): response onset and tool-call latency"
    return Table("table5_latency", title, frame, formats, notes, [], provenance_notes(results))


SPEECH_FORMATS = {"onset to first audio ms": ".1f", "replies with audio": ".0f", "stalls": ".0f",
                  "total stall ms": ".1f", "stalls per min of speech": ".2f", "speech s": ".1f", "playback delay ms": "g"}
SPEECH_NOTE = ("runs with a talker (talker column or setup): onset to first audio: from the arrival of a reply's first "
               "chunk until its first audio plays (the text onset plus the talker's time to its first audio; "
               "sessions' first_audio_latencies_ms), averaged per task, then over tasks; stalls: silences inside a "
               "reply longer than 10 ms, where a piece of speech was ready only after the previous one had finished "
               "playing, all sessions together: their count, total ms, and count per minute of the assistant's "
               "speech (speech s: the audio the talker made); runs without a talker leave these empty")


LIVE_SPEECH_NOTE = ("live runs: the speech is the server's own audio, each piece ready when it reached the client, "
                    "played by the same playback model; first audio from the end of the reply's first unit (per-turn "
                    "protocol: from the commit of the user's turn)")


def speaks(cell: Cell) -> bool:
    """Whether a cell has speech out to show: a talker setup, or a live run whose server sent audio (a live run's
    speech is the server's own: its sessions' ``first_audio_latencies_ms``)."""
    if cell.setup.speaks:
        return True
    return cell.live and bool(cell.sessions["first_audio_latencies_ms"].map(
        lambda v: v is not None and len(v) > 0).any())


PLAYBACK_DELAY_NOTE = ("playback delay ms: the jitter buffer the assistant's speech was played with "
                       "(config.playback_delay_ms; ticktock.results.playback): a reply starts to play once that much of "
                       "its audio is ready, or all of it, 0: as soon as its first piece is ready; a longer delay trades "
                       "a later first audio for fewer and shorter stalls; runs with different delays are different setups")


def _speech_columns(cell: Cell, buffered: bool = False) -> dict:
    """Table 5's columns of a cell with a talker: first-audio onset and stalls (``metrics.first_audio_latency``,
    ``metrics.stalls``), after the playback delay they were played with when ``buffered`` (some setup has one)."""
    audio, stalled = metrics.first_audio_latency(cell.sessions), metrics.stalls(cell.sessions)
    delay = {"playback delay ms": cell.setup.playback_delay_ms} if buffered else {}
    return {**delay, "onset to first audio ms": audio["first_audio_ms"], "replies with audio": audio["replies"],
            "stalls": stalled["stalls"], "total stall ms": stalled["stall_ms"],
            "stalls per min of speech": stalled["per_min"], "speech s": stalled["speech_s"]}


PAPER_COMPOSITION = {"tasks": 8, "sessions": 760, "chunks": 15883}  # the paper's totals (its Table 1, as reported)


@single_session
def composition_table(results: Results) -> Table:
    """Table 1: the composition of the replayed benchmark, per task: sessions, chunks, the share of chunks with user
    speech, the median session duration, the expected tool calls, and the source (task config and manifest from
    run.json); every session counted once, however many runs replayed it. The paper's totals are the last row."""
    sessions, chunks, sources = [], [], {}
    for run in (run for cell in results.cells for run in cell.runs):
        task = (run.meta.get("config") or {}).get("task") or {}
        source = f"{task.get('name', '?')} ({PurePath(str(task.get('manifest', '?'))).parent.name or '?'})"
        for name in run.sessions["task"].unique():
            sources.setdefault(str(name), set()).add(source)
        sessions.append(run.sessions[["task", "session_id", "duration_s", "expected_json"]])
        chunks.append(run.chunks[["task", "session_id", "chunk_index", "user_speaking"]])
    sessions = pd.concat(sessions).drop_duplicates("session_id")
    chunks = pd.concat(chunks).drop_duplicates(["session_id", "chunk_index"])
    calls = sessions["expected_json"].map(lambda text: len(json.loads(text or "{}").get("tool_calls") or []))
    rows = []
    for task, group in sessions.assign(calls=calls).groupby("task", sort=True):
        task_chunks = chunks[chunks["task"] == task]
        rows.append({"task": task, "sessions": len(group), "chunks": len(task_chunks),
                     "user speech": float(task_chunks["user_speaking"].astype(bool).mean()) if len(task_chunks) else None,
                     "median duration s": float(group["duration_s"].median()), "expected tool calls": int(group["calls"].sum()),
                     "source": ", ".join(sorted(sources.get(str(task), ())))})
    rows.append({"task": f"all ({len(rows)} tasks)", "sessions": len(sessions), "chunks": len(chunks),
                 "user speech": float(chunks["user_speaking"].astype(bool).mean()) if len(chunks) else None,
                 "median duration s": float(sessions["duration_s"].median()), "expected tool calls": int(calls.sum()),
                 "source": ""})
    rows.append({"task": f"paper: TickTock-Bench ({PAPER_COMPOSITION['tasks']} tasks)",
                 "sessions": PAPER_COMPOSITION["sessions"], "chunks": PAPER_COMPOSITION["chunks"], "user speech": None,
                 "median duration s": None, "expected tool calls": None, "source": "the paper (totals only)"})
    notes = ["every session once, however many runs replayed it; chunks: the chunks replayed (limit.chunks applies); "
             "user speech: share of chunks during which the user speaks; expected tool calls: from each session's "
             "expectations",
             "the paper reports its totals (8 tasks, 760 sessions, 15,883 one-second chunks); its per-task counts "
             "are not available here"]
    return Table("table1_composition", "Table 1: composition of the replayed benchmark", pd.DataFrame(rows),
                 {"user speech": ".1%", "median duration s": ".1f", "expected tool calls": ".0f"}, notes, [],
                 provenance_notes(results))
