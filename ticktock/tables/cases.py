"""Case studies (the paper's Figures 5-6): one session of a run, chunk by chunk, on the run's clock.

``session_timeline(run, session_id)`` places every piece of a session's work in time, in milliseconds from the
session's start on the run's clock (modeled or wall), from the result files alone:

- **audio**: each chunk's span [start_ms, arrival_ms] (its audio is complete at ``arrival_ms``), and whether the
  user speaks in it; its deadline is the next chunk's arrival.
- **post-audio work**: from ``arrival + lag_before + carried`` (the lag earlier chunks left, plus the overrun of
  its own idle window) to ``arrival + response``; one mark per target forward: forward i of a phase ran from
  ``end_ms - charged_ms`` to ``end_ms`` after the phase's start (forwards.parquet), committing ``tokens_committed``.
- **idle window**: the window that drafted the chunk opened ``window_budget_ms`` before its arrival (when the
  previous chunk's work ended; at the session's start for chunk 0) and worked until ``open + window_used_ms +
  window_waited_ms``; its draft and early-prefill forwards are placed from the window's opening.
- **events**: the onset of each reply and each tool call (``arrival + response``, with the latency), and each
  deadline miss (at the deadline, with the lag carried into the next chunk).

``pick_cases`` chooses the report's two default cases in the main greedy setup (``main_setup``): the onset session
and the tool-call session where the baseline's latency exceeds the comparison decoder's (Speculative Listening
when present) the most, a baseline deadline miss first; ``session_case`` makes the case of a named session
(``python -m ticktock.tables ... --case SESSION_ID``).

Example: a chunk arriving at 2000 ms whose window had 700 ms and worked 120 ms of them, done 300 ms after arrival::

    >>> row = {"chunk_index": 1, "start_s": 1.0, "arrival_s": 2.0, "user_speaking": False, "kind": "speak",
    ...        "output_text": "<|speak|>Hi", "num_output_tokens": 2, "lag_before_ms": 0.0, "carried_ms": 0.0,
    ...        "lag_ms": 0.0, "response_ms": 300.0, "missed_deadline": False, "is_onset": True,
    ...        "num_post_audio_forwards": 1, "draft_source": "silence", "num_draft_tokens": 4,
    ...        "num_accepted_draft_tokens": 2, "window_budget_ms": 700.0, "window_used_ms": 120.0,
    ...        "window_waited_ms": 0.0, "window_forwards": 3}
    >>> frame = chunk_frame(pd.DataFrame([row]))
    >>> frame[["window_open_ms", "window_work_end_ms", "work_end_ms", "text"]].values.tolist()
    [[1300.0, 1420.0, 2300.0, 'Hi']]
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import pandas as pd

from ticktock.results.names import MAX_NAME_LENGTH
from ticktock.world.scoring import SPECIAL
from ticktock.tables.common import setup_label
from ticktock.tables.load import Results, Run, Setup, TablesError

COMPARISON = "speclisten"  # the decoder a default case shows beside the baseline, when the results have it
CONTEXT_BEFORE, CONTEXT_AFTER, MAX_RECOVERY = 2, 3, 6  # chunks shown around a case's event
WINDOW_PHASES = ("draft", "early_prefill")
DEFAULT_CASES = (("fig5_onset", "Figure 5", "is_onset", "reply onset"), ("fig6_tool_call", "Figure 6", "tool_call", "tool call"))


@dataclass(frozen=True)
class Case:
    """One case study: a session of one setup, shown for several decoders, chunks ``first`` .. ``last``."""

    key: str  # file stem: "fig5_onset", "fig6_tool_call", "case_<session id>"
    title: str
    session_id: str
    setup: Setup
    decoders: tuple[str, ...]
    first: int
    last: int
    why: str  # how it was chosen


@dataclass
class SessionTimeline:
    """One session of one run in time (see the module docstring); ``chunks``, ``forwards`` and ``events`` are
    frames in ms from the session's start."""

    run_id: str
    decoder: str
    session_id: str
    task: str
    clock: str  # the run's clock: "wall", "modeled:<profile>"
    chunks: pd.DataFrame
    forwards: pd.DataFrame
    events: pd.DataFrame

    def between(self, first: int, last: int) -> "SessionTimeline":
        """Only chunks ``first`` .. ``last`` (inclusive), with their forwards and events."""
        keep = lambda frame: frame[frame["chunk_index"].between(first, last)].reset_index(drop=True)  # noqa: E731
        return replace(self, chunks=keep(self.chunks), forwards=keep(self.forwards), events=keep(self.events))


def display_text(text: str) -> str:
    """A chunk's committed text for a reader: structural tokens dropped (a tool call keeps its JSON).

    >>> display_text("<|speak|>Par is<|chunk_eos|>")
    'Par is'
    """
    return SPECIAL.sub("", text or "").strip()


def last_deadlines(rows: pd.DataFrame, arrival: pd.Series, start: pd.Series) -> pd.Series:
    """Each chunk's deadline: the next chunk's arrival; for a session's last chunk, its arrival plus the longest
    chunk after the first (as the replay's chunk duration)."""
    sessions = rows["session_id"] if "session_id" in rows else pd.Series("", index=rows.index)
    duration = (arrival - start).where(rows.groupby(sessions).cumcount() > 0)
    longest = duration.groupby(sessions).transform("max").fillna((arrival - start).groupby(sessions).transform("max"))
    return arrival.groupby(sessions).shift(-1).fillna(arrival + longest)


def counts(values: pd.Series) -> pd.Series:
    """A count column as integers, a null (what a live run cannot see: the server's tokens, forwards and drafts)
    kept as None, never 0.

    >>> counts(pd.Series([2.0, None])).tolist(), counts(pd.Series([1, 3])).dtype.kind
    ([2, None], 'i')
    """
    if values.notna().all():
        return values.astype(int)
    return pd.Series([None if pd.isna(v) else int(v) for v in values], index=values.index, dtype=object)


def flags(values: pd.Series) -> pd.Series:
    """A flag column as booleans, a null (a deadline a turn-based live run cannot judge) kept as None.

    >>> flags(pd.Series([True, None])).tolist(), flags(pd.Series([False])).dtype.kind
    ([True, None], 'b')
    """
    if values.notna().all():
        return values.astype(bool)
    return pd.Series([None if v is None or v != v else bool(v) for v in values], index=values.index, dtype=object)


def chunk_frame(rows: pd.DataFrame) -> pd.DataFrame:
    """Per chunk (of one session, or of several with their ``session_id``): its audio span, deadline, post-audio
    work span, idle window, lag and text (ms). What a live run's rows leave null (token, forward and draft counts;
    a turn-based protocol's lag and deadline) stays None (``counts``, ``flags``)."""
    keys = ["session_id", "chunk_index"] if "session_id" in rows else ["chunk_index"]
    rows = rows.sort_values(keys).reset_index(drop=True)
    arrival, start = 1000.0 * rows["arrival_s"], 1000.0 * rows["start_s"]
    deadline = last_deadlines(rows, arrival, start)
    opened = (arrival - rows["window_budget_ms"]).where(rows["window_budget_ms"] > 0)  # NaN: no window
    frame = pd.DataFrame({
        "chunk_index": rows["chunk_index"].astype(int),
        "start_ms": start, "arrival_ms": arrival, "deadline_ms": deadline,
        "user_speaking": rows["user_speaking"].astype(bool),
        "kind": rows["kind"], "text": [display_text(t) for t in rows["output_text"]],
        "tokens": counts(rows["num_output_tokens"]),
        "work_start_ms": arrival + rows["lag_before_ms"] + rows["carried_ms"],
        "work_end_ms": arrival + rows["response_ms"],
        "lag_before_ms": rows["lag_before_ms"], "carried_ms": rows["carried_ms"], "lag_ms": rows["lag_ms"],
        "response_ms": rows["response_ms"], "missed_deadline": flags(rows["missed_deadline"]),
        "is_onset": rows["is_onset"].astype(bool), "tool_call": rows["kind"] == "tool",
        "post_audio_forwards": counts(rows["num_post_audio_forwards"]),
        "draft_source": rows["draft_source"].astype(object).where(rows["draft_source"].notna(), None),
        "draft_tokens": counts(rows["num_draft_tokens"]),
        "accepted_tokens": counts(rows["num_accepted_draft_tokens"]),
        "window_open_ms": opened, "window_work_end_ms": opened + rows["window_used_ms"] + rows["window_waited_ms"],
        "window_budget_ms": rows["window_budget_ms"], "window_forwards": counts(rows["window_forwards"]),
    })
    return frame.assign(session_id=rows["session_id"]) if "session_id" in rows else frame


def forward_frame(forwards: pd.DataFrame, chunks: pd.DataFrame) -> pd.DataFrame:
    """Every target forward placed in time: post-audio forwards from their chunk's work start, draft and
    early-prefill forwards from the opening of the chunk's idle window (``chunks``: ``chunk_frame``'s rows of the
    same sessions)."""
    columns = ["chunk_index", "phase", "forward_index", "start_ms", "end_ms", "tokens_committed", "draft_tokens",
               "query_tokens", "tree"]
    keys = ["session_id", "chunk_index"] if "session_id" in chunks else ["chunk_index"]
    if forwards.empty:
        return pd.DataFrame(columns=columns)
    placed = forwards.merge(chunks[keys + ["work_start_ms", "window_open_ms"]], on=keys, how="left")
    base = placed["work_start_ms"].where(~placed["phase"].isin(WINDOW_PHASES), placed["window_open_ms"])
    placed["end_ms"], placed["start_ms"] = base + placed["end_ms"], base + placed["end_ms"] - placed["charged_ms"]
    placed = placed.sort_values(keys[:-1] + ["start_ms", "chunk_index", "forward_index"], kind="stable")
    return placed[keys[:-1] + columns].reset_index(drop=True)


def event_frame(chunks: pd.DataFrame) -> pd.DataFrame:
    """Onsets and tool calls (done at ``work_end_ms``, latency = response) and deadline misses (at the deadline,
    with the lag they carried into the next chunk), in chunk order."""
    kinds = (("onset", "is_onset", "work_end_ms", "response_ms"), ("tool call", "tool_call", "work_end_ms", "response_ms"),
             ("deadline miss", "missed_deadline", "deadline_ms", "lag_ms"))
    keys = ["session_id"] if "session_id" in chunks else []
    parts = [chunks.loc[chunks[flag].eq(True), keys + ["chunk_index", at, value]].set_axis(keys + ["chunk_index", "at_ms", "ms"],
                                                                                axis=1).assign(event=name, rank=rank)
             for rank, (name, flag, at, value) in enumerate(kinds)]
    events = pd.concat(parts, ignore_index=True).sort_values(keys + ["chunk_index", "rank"], kind="stable")
    events = events[keys + ["event", "chunk_index", "at_ms", "ms"]].reset_index(drop=True)
    return events.astype({"chunk_index": int, "at_ms": float, "ms": float})


def run_timelines(run: Run, sessions: list[str] | None = None) -> dict[str, SessionTimeline]:
    """The timelines of ``sessions`` of ``run`` (default: all), computed together (one pass over the run's rows)."""
    rows = run.chunks if sessions is None else run.chunks[run.chunks["session_id"].isin(sessions)]
    forwards = run.forwards()
    chunks = chunk_frame(rows)
    placed = forward_frame(forwards[forwards["session_id"].isin(set(rows["session_id"]))], chunks)
    events, clock = event_frame(chunks), run.setup().clock
    tasks = dict(zip(rows["session_id"], rows["task"]))
    split = lambda frame: {sid: part.drop(columns="session_id").reset_index(drop=True)  # noqa: E731
                           for sid, part in frame.groupby("session_id", sort=False)} if "session_id" in frame else {}
    by_chunks, by_forwards, by_events = split(chunks), split(placed), split(events)
    empty_forwards, empty_events = forward_frame(forwards.iloc[:0], chunks), event_frame(chunks.iloc[:0])
    return {sid: SessionTimeline(run.run_id, run.decoder, sid, str(tasks[sid]), clock, frame,
                                 by_forwards.get(sid, empty_forwards), by_events.get(sid, empty_events.drop(columns="session_id")))
            for sid, frame in by_chunks.items()}


def session_timeline(run: Run, session_id: str) -> SessionTimeline:
    """The timeline of one session of ``run``."""
    timelines = run_timelines(run, [session_id])
    if session_id not in timelines:
        raise TablesError(f"session {session_id!r} is not in run {run.path}")
    return timelines[session_id]


def run_with(results: Results, setup: Setup, decoder: str, session_id: str) -> Run | None:
    """The run of ``decoder`` in ``setup`` holding ``session_id`` (a cell may hold one run per task or shard)."""
    cell = results.cell(setup, decoder)
    return next((r for r in (cell.runs if cell else []) if (r.sessions["session_id"] == session_id).any()), None)


def case_timelines(results: Results, case: Case) -> list[SessionTimeline]:
    """The case's session in each of its decoders' runs, cut to its chunks."""
    timelines = []
    for decoder in case.decoders:
        run = run_with(results, case.setup, decoder, case.session_id)
        if run is None:
            raise TablesError(f"case {case.key}: no {decoder} run of setup {setup_label(case.setup)} holds session "
                              f"{case.session_id}")
        timelines.append(session_timeline(run, case.session_id).between(case.first, case.last))
    return timelines


def main_setup(results: Results, baseline: str) -> Setup | None:
    """The setup the default cases come from: single-session, greedy when there is one, with the baseline and the
    most decoders (ties: the tables' setup order)."""
    results = results.single_session()
    candidates = [s for s in results.setups() if results.cell(s, baseline)]
    greedy = [s for s in candidates if s.temperature == 0] or candidates
    return max(greedy, key=lambda s: len(results.in_setup(s)), default=None)  # max keeps the first of equals


def comparison_decoder(results: Results, setup: Setup, baseline: str) -> str | None:
    """``COMPARISON`` when the setup has it, else its first other decoder in report order."""
    others = [c.decoder for c in results.in_setup(setup) if c.decoder != baseline]
    return COMPARISON if COMPARISON in others else (others[0] if others else None)


def _first_event(chunks: pd.DataFrame, column: str) -> pd.Series | None:
    hits = chunks[chunks[column].eq(True)]
    return hits.iloc[0] if len(hits) else None


def _shown_chunks(baseline: pd.DataFrame, others: list[pd.DataFrame], event: int) -> tuple[int, int]:
    """Chunks around ``event``: a few before; after it, until every decoder's lag is gone (at most a few more)."""
    first = max(int(baseline["chunk_index"].min()), event - CONTEXT_BEFORE)
    last_chunk, last = int(baseline["chunk_index"].max()), event + CONTEXT_AFTER
    lagging = pd.concat([f[f["lag_ms"] > 0]["chunk_index"] for f in [baseline, *others]])
    lagging = lagging[(lagging >= event) & (lagging <= event + MAX_RECOVERY)]
    if len(lagging):
        last = max(last, int(lagging.max()) + 1)
    return first, min(last, last_chunk)


def _best_session(results: Results, setup: Setup, decoders: tuple[str, str], column: str) -> tuple | None:
    """The session where the baseline's first ``column`` event (is_onset / tool_call) is latest after the other
    decoder's (a baseline deadline miss there first; ties: session id). None when no session has one in both."""
    base_cell, other_cell = results.cell(setup, decoders[0]), results.cell(setup, decoders[1])
    best = None
    frames = lambda cell: dict(tuple(chunk_frame(cell.chunks).groupby("session_id")))  # noqa: E731 (one pass a cell)
    others = frames(other_cell)
    for session_id, base in sorted(frames(base_cell).items()):
        base_event = _first_event(base, column)
        other_event = _first_event(others[session_id], column) if session_id in others else None
        if base_event is None or other_event is None:
            continue
        key = (bool(base_event["missed_deadline"]), float(base_event["response_ms"] - other_event["response_ms"]))
        if best is None or key > best[0]:
            best = (key, session_id, int(base_event["chunk_index"]), base, others[session_id])
    return best


def pick_cases(results: Results, baseline: str = "ar") -> list[Case]:
    """The report's default cases: an onset (Figure 5) and a tool call (Figure 6), baseline vs the comparison
    decoder, in the main setup; fewer when the results have no such session (nothing is made up)."""
    results = results.single_session()
    setup = main_setup(results, baseline)
    other = comparison_decoder(results, setup, baseline) if setup else None
    if other is None:
        return []
    cases = []
    for key, figure, column, what in DEFAULT_CASES:
        best = _best_session(results, setup, (baseline, other), column)
        if best is None:
            continue
        (missed, gain), session_id, event, base, other_frame = best
        first, last = _shown_chunks(base, [other_frame], event)
        why = (f"the {what} where {baseline} is latest after {other} ({gain:+.0f} ms at chunk {event}"
               f"{'; ' + baseline + ' missed its deadline there' if missed else ''})")
        cases.append(Case(key, f"{figure}: {what}, session {session_id}", session_id, setup, (baseline, other), first, last, why))
    return cases


def session_case(results: Results, session_id: str, baseline: str = "ar",
                 decoders: tuple[str, ...] | None = None) -> Case:
    """The case of a named session: the main setup when it holds the session (else the first setup that does),
    ``decoders`` (default: the baseline and the comparison decoder), around its first tool call or onset (its
    first chunks when it has neither)."""
    results = results.single_session()
    main = main_setup(results, baseline)
    setups = ([main] if main else []) + [s for s in results.setups() if s != main]
    setup = next((s for s in setups if any(run_with(results, s, c.decoder, session_id) for c in results.in_setup(s))),
                 None)
    if setup is None:
        known = sorted({sid for c in results.cells for sid in c.sessions["session_id"]})
        raise TablesError(f"--case {session_id}: no run holds this session (sessions: {', '.join(known[:8])}"
                          f"{', ...' if len(known) > 8 else ''})")
    present = [c.decoder for c in results.in_setup(setup) if run_with(results, setup, c.decoder, session_id)]
    chosen = decoders or tuple(dict.fromkeys(d for d in (baseline, comparison_decoder(results, setup, baseline))
                                             if d in present)) or tuple(present[:2])
    missing = [d for d in chosen if d not in present]
    if missing:
        raise TablesError(f"--case {session_id}: no {', '.join(missing)} run holds it in setup {setup_label(setup)} "
                          f"(decoders there: {', '.join(present)})")
    frames = [session_timeline(run_with(results, setup, d, session_id), session_id).chunks for d in chosen]
    first, last, why = _session_span(frames)
    title = f"Case study: session {session_id}"
    return Case(f"case_{safe_stem(session_id)}", title, session_id, setup, tuple(chosen), first, last, why)


def _session_span(frames: list[pd.DataFrame]) -> tuple[int, int, str]:
    base = frames[0]
    for column, what in (("tool_call", "tool call"), ("is_onset", "reply onset")):
        event = _first_event(base, column)
        if event is not None:
            first, last = _shown_chunks(base, frames[1:], int(event["chunk_index"]))
            return first, last, f"named with --case; around its first {what} (chunk {int(event['chunk_index'])})"
    first = int(base["chunk_index"].min())
    return first, min(first + CONTEXT_BEFORE + CONTEXT_AFTER, int(base["chunk_index"].max())), \
        "named with --case; no onset or tool call: its first chunks"


def safe_stem(text: str) -> str:
    """A file-name-safe form of a session id (a case's key, ``case_<stem>``, names its figure and CSV): ASCII
    letters, digits, ``.`` and ``_`` kept, anything else ``-``, cut to ``MAX_NAME_LENGTH`` characters. So
    ``case_<stem>`` is always a name of ``ticktock.results.names`` (a run's ids were checked as names when read; an
    older run's were not).

    >>> safe_stem("fdb_v3/0007 a"), safe_stem("../\u00e9t\u00e9")
    ('fdb_v3-0007-a', '..--t-')
    """
    return "".join(ch if (ch.isascii() and ch.isalnum()) or ch in "._" else "-" for ch in text)[:MAX_NAME_LENGTH - 5]
