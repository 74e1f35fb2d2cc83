"""The interactive session viewer of the HTML report: every session of every run, as a timeline and a chunk table.

The viewer is one ``<section>`` of report.html: its data (``viewer_data``: the ``ticktock.tables.cases``
timeline of each chosen session in every single-session run; ``DEFAULT_SESSIONS`` sessions unless told otherwise,
so that the page stays small on a large benchmark) is embedded as JSON in the page, and a small script draws it as
SVG. No server, no network, no library: the report opens from a results folder anywhere.

Pick a run and a session: the timeline shows the audio lane (chunks, blue while the user speaks), the idle
windows with their draft forwards, and the post-audio work with one mark per forward, the lag past missed
deadlines, the onsets and tool calls; under it, one table row per chunk (text, kind, forwards, draft source,
acceptance, response, lag). Hovering a chunk (in either) shows its details. The address keeps the choice:
``report.html#viewer?run=<run id>&session=<session id>&chunk=<index>`` opens there (add ``&alone=1`` for the viewer
alone on the page).

With a talker run (``ticktock.tables.listen``), a session listened to ("· listen" in the session list) shows its
track under the summary: the user's audio and the assistant's speech as placed by the run; a cursor on the timeline
follows the playing time, and clicking the timeline seeks the track there.

Example::

    >>> data = {"format": FORMAT, "chunk_columns": ["chunk_index"], "forward_columns": [], "runs": [], "sessions": 0,
    ...         "total": 0}
    >>> read_viewer_data(viewer_section(data)) == data
    True
"""

from __future__ import annotations

import html
import json
import re

from ticktock.tables.cases import run_timelines
from ticktock.tables.common import setup_label
from ticktock.tables.load import Results

FORMAT = "ticktock-viewer/1"
CHUNK_COLUMNS = ["chunk_index", "start_ms", "arrival_ms", "deadline_ms", "user_speaking", "kind", "text", "tokens",
                 "work_start_ms", "work_end_ms", "lag_before_ms", "carried_ms", "lag_ms", "response_ms",
                 "missed_deadline", "is_onset", "tool_call", "post_audio_forwards", "draft_source", "draft_tokens",
                 "accepted_tokens", "window_open_ms", "window_work_end_ms", "window_budget_ms", "window_forwards"]
FORWARD_COLUMNS = ["chunk_index", "phase", "start_ms", "end_ms", "tokens_committed", "draft_tokens", "query_tokens",
                   "tree"]
DATA_ID = "ticktock-viewer-data"
DIGITS = 1  # milliseconds are kept to 0.1 ms
DEFAULT_SESSIONS = 120  # sessions embedded by default (of each run: the same ones); --viewer-sessions changes it


def _column(values) -> list:
    """One column as JSON-ready values: NaN and None as null, floats rounded to ``DIGITS``."""
    out = values.tolist() if hasattr(values, "tolist") else list(values)
    if values.dtype.kind == "f":
        return [None if v != v else round(v, DIGITS) for v in out]
    return [None if v is None or (isinstance(v, float) and v != v) else v for v in out]


def _rows(frame, columns: list[str]) -> list[list]:
    """JSON-ready rows of ``columns`` (column by column: no per-cell pandas access)."""
    return [list(row) for row in zip(*(_column(frame[c].to_numpy()) for c in columns))] if len(frame) else []


def chosen_sessions(results: Results, limit: int | None, first: tuple[str, ...] = ()) -> list[str]:
    """The sessions the viewer embeds: ``first`` (e.g. the case studies' sessions), then the others taking the tasks
    in turn, in session-id order within a task; at most ``limit`` (None: all), the same set for every run.

    >>> import pandas as pd
    >>> cell = type("C", (), {"sessions": pd.DataFrame({"session_id": ["a1", "a2", "b1"], "task": ["a", "a", "b"]})})
    >>> chosen_sessions(type("R", (), {"cells": [cell]})(), 2), chosen_sessions(type("R", (), {"cells": [cell]})(), 2, ("a2",))
    (['a1', 'b1'], ['a2', 'a1'])
    """
    by_task: dict[str, list[str]] = {}
    for cell in results.cells:
        for session_id, task in cell.sessions[["session_id", "task"]].itertuples(index=False, name=None):
            by_task.setdefault(task, [])
            if session_id not in by_task[task]:
                by_task[task].append(session_id)
    queues = [sorted(ids) for _, ids in sorted(by_task.items())]
    ordered = list(dict.fromkeys(first))
    for row in range(max(map(len, queues), default=0)):
        ordered += [q[row] for q in queues if row < len(q) and q[row] not in ordered]
    return ordered if limit is None else ordered[:limit]


def viewer_data(results: Results, limit: int | None = DEFAULT_SESSIONS, first: tuple[str, ...] = ()) -> dict:
    """The sessions ``chosen_sessions`` picks, in every single-session run that holds them, as viewer rows
    (``CHUNK_COLUMNS``, ``FORWARD_COLUMNS``); ``total``: how many sessions the runs hold."""
    results = results.single_session()
    chosen = chosen_sessions(results, limit, first)
    runs = []
    for cell in results.cells:
        for run in cell.runs:
            held = set(run.sessions["session_id"])
            timelines = run_timelines(run, [s for s in chosen if s in held])
            sessions = [{"session_id": session_id, "task": timelines[session_id].task,
                         "chunks": _rows(timelines[session_id].chunks, CHUNK_COLUMNS),
                         "forwards": _rows(timelines[session_id].forwards, FORWARD_COLUMNS)}
                        for session_id in chosen if session_id in timelines]
            runs.append({"run_id": run.run_id, "decoder": run.decoder, "setup": setup_label(cell.setup),
                         "clock": cell.setup.clock, "sessions": sessions})
    return {"format": FORMAT, "chunk_columns": CHUNK_COLUMNS, "forward_columns": FORWARD_COLUMNS, "runs": runs,
            "sessions": len(chosen), "total": len(chosen_sessions(results, None))}


HTML_SAFE = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"})


def embedded_json(data) -> str:
    """``data`` as JSON that is inert inside any HTML element, a <script> above all: ``<``, ``>`` and ``&`` are
    written as JSON escapes (``\\u003c``...), so no text can close the element (``</script>``), open a comment or a
    nested script (``<!--<script>``, after which a browser reads past the element's end) or start a character
    reference; U+2028 and U+2029 too (line terminators to older JavaScript). ``json.loads`` (and ``JSON.parse``)
    read back the exact data. Every JSON embedded in a page goes through here.

    >>> print(embedded_json({"text": "a <!--<script> & </script>"}))
    {"text":"a \\u003c!--\\u003cscript\\u003e \\u0026 \\u003c/script\\u003e"}
    >>> json.loads(embedded_json(["<!--<script>", "\u2028"])) == ["<!--<script>", "\u2028"]
    True
    """
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False).translate(HTML_SAFE)


def read_viewer_data(page: str) -> dict:
    """The viewer data embedded in a report page (or a viewer section)."""
    match = re.search(rf'<script type="application/json" id="{DATA_ID}">(.*?)</script>', page, re.S)
    if match is None:
        raise ValueError("no TickTock viewer data in this page")
    return json.loads(match.group(1))


def viewer_section(data: dict, tracks: str = "") -> str:
    """The viewer's HTML: controls, the timeline, the details box and the chunk table, with ``data`` embedded;
    ``tracks``: the audio elements of the sessions to listen to (``ticktock.tables.listen.tracks_markup``), shown
    with their run and session, the timeline's cursor following the one shown."""
    shown, total = data.get("sessions", 0), data.get("total", 0)
    which = (f"all {total} sessions" if shown == total else
             f"{shown} of {total} sessions (the case studies' first, then the tasks in turn; "
             "python -m ticktock.tables ... --viewer-sessions all embeds every one)")
    intro = (f"{len(data['runs'])} runs, {which}. Pick a run and a session; hover a chunk (in the timeline or the "
             "table) for its details. Times are ms on the run's clock, from the session's start.")
    return f"""<section id="viewer"><h2>Session viewer</h2>
<p class="meta">{html.escape(intro)}</p>
<div class="tt-controls"><label>run <select id="tt-run"></select></label>
<label>session <select id="tt-session"></select></label></div>
<div id="tt-summary" class="meta"></div>
{tracks}<div class="tt-scroll"><svg id="tt-timeline" xmlns="http://www.w3.org/2000/svg"></svg></div>
<div id="tt-details" class="tt-details">hover a chunk</div>
<table id="tt-chunks"><thead></thead><tbody></tbody></table>
<script type="application/json" id="{DATA_ID}">{embedded_json(data)}</script>
<script>{SCRIPT}</script>
</section>"""


VIEWER_STYLE = """
body.tt-alone > *:not(#viewer) { display: none; }
.tt-controls label { margin-right: 1rem; font-size: .85rem; }
.tt-controls select { max-width: 36rem; }
.tt-scroll { overflow-x: auto; border: 1px solid #ddd; margin: .5rem 0; }
#tt-timeline text { font-size: 10px; font-family: system-ui, sans-serif; }
#tt-timeline .tt-chunk:hover, #tt-timeline .tt-chunk.tt-on { stroke: #000; stroke-width: 1.5; }
.tt-details { font-size: .8rem; background: #f7f7f9; border: 1px solid #ddd; padding: .4rem .6rem; min-height: 2.4rem;
              white-space: pre-wrap; font-family: ui-monospace, monospace; }
#tt-chunks tr.tt-on { background: #fff4d6; }
#tt-chunks td.tt-text { font-family: ui-monospace, monospace; max-width: 28rem; }
.tt-track { margin: .4rem 0; } .tt-track audio { width: 100%; max-width: 48rem; }
.tt-track figcaption { font-size: .8rem; color: #555; } #tt-timeline.tt-seek { cursor: pointer; }
"""

SCRIPT = r"""
(function () {
  "use strict";
  const data = JSON.parse(document.getElementById("ticktock-viewer-data").textContent);
  const NS = "http://www.w3.org/2000/svg", PX = 160, LANE = {audio: 22, window: 56, post: 90}, H = 20;
  const COL = {speaking: "#7aa6d6", silent: "#d9d9d9", window: "#e3f4e1", work: "#8fd18a", draft: "#1e6b24",
               forward: "#f08c2a", tree: "#8a4fc9", lag: "rgba(229,57,53,.35)"};
  const runSelect = document.getElementById("tt-run"), sessionSelect = document.getElementById("tt-session");
  const svg = document.getElementById("tt-timeline"), details = document.getElementById("tt-details");
  const table = document.getElementById("tt-chunks"), summary = document.getElementById("tt-summary");
  const tracks = Array.from(document.querySelectorAll("#tt-listen .tt-track"));  // audio of some sessions
  let audio = null, timelineStart = 0;  // the track of the session shown; the timeline's first ms
  const records = (rows, columns) => rows.map(row => Object.fromEntries(columns.map((c, i) => [c, row[i]])));
  const ms = v => v === null ? "–" : v.toFixed(1);
  function el(name, attrs, parent) {
    const node = document.createElementNS(NS, name);
    for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
    parent.appendChild(node);
    return node;
  }
  function option(select, value, label) {
    const node = document.createElement("option");
    node.value = value; node.textContent = label; select.appendChild(node);
  }
  function hashState() {
    const match = location.hash.match(/^#viewer\?(.*)$/);
    return match ? Object.fromEntries(new URLSearchParams(match[1])) : {};
  }
  function seen(v) { return v === null ? "n/a" : v; }  // a live run's counts: the server's own, not seen by the client
  function describe(c) {
    const lines = [`chunk ${c.chunk_index}: audio ${ms(c.start_ms)}-${ms(c.arrival_ms)} ms` +
                   (c.user_speaking ? " (user speaking)" : " (silence)") + `, deadline ${ms(c.deadline_ms)}`,
                   `${c.kind}: “${c.text}” (${seen(c.tokens)} tokens)`,
                   `post-audio work ${ms(c.work_start_ms)}-${ms(c.work_end_ms)}: ${seen(c.post_audio_forwards)} forwards, ` +
                   `response ${ms(c.response_ms)} ms (lag before ${ms(c.lag_before_ms)}, carried ${ms(c.carried_ms)})`,
                   `draft: ${c.draft_source === null ? "none offered" : c.draft_source}, ${seen(c.accepted_tokens)}/` +
                   `${seen(c.draft_tokens)} draft tokens accepted`];
    if (c.window_open_ms !== null)
      lines.push(`idle window ${ms(c.window_open_ms)}-${ms(c.arrival_ms)} (${ms(c.window_budget_ms)} ms): ` +
                 `worked until ${ms(c.window_work_end_ms)}, ${c.window_forwards} draft forwards`);
    lines.push(c.missed_deadline === null ? "deadline not measured (per-turn protocol)" : c.missed_deadline ?
               `DEADLINE MISSED: ${ms(c.lag_ms)} ms lag carried into the next chunk` : "deadline met");
    if (c.is_onset) lines.push(`reply onset: ${ms(c.response_ms)} ms after the audio arrived`);
    if (c.tool_call) lines.push(`tool call: ready ${ms(c.response_ms)} ms after the audio arrived`);
    return lines.join("\n");
  }
  function highlight(index) {
    for (const node of document.querySelectorAll(".tt-on")) node.classList.remove("tt-on");
    for (const node of document.querySelectorAll(`[data-chunk="${index}"]`)) node.classList.add("tt-on");
  }
  function hover(node, chunk) {
    node.dataset.chunk = chunk.chunk_index;
    node.addEventListener("mouseenter", () => { details.textContent = describe(chunk); highlight(chunk.chunk_index); });
  }
  function drawTimeline(chunks, forwards) {
    svg.replaceChildren();
    const t0 = Math.min(...chunks.map(c => c.start_ms));
    const t1 = Math.max(...chunks.map(c => Math.max(c.deadline_ms, c.work_end_ms)));
    const x = t => 70 + (t - t0) / 1000 * PX;
    timelineStart = t0;
    svg.setAttribute("width", x(t1) + 40); svg.setAttribute("height", 150);
    for (const [name, y] of [["audio", LANE.audio], ["idle window", LANE.window], ["post-audio", LANE.post]])
      el("text", {x: 4, y: y + 4}, svg).textContent = name;
    for (let s = Math.ceil(t0 / 1000); s <= t1 / 1000; s++) {
      el("line", {x1: x(s * 1000), x2: x(s * 1000), y1: 8, y2: 112, stroke: "#bbb", "stroke-dasharray": "2,3"}, svg);
      el("text", {x: x(s * 1000) - 3, y: 140}, svg).textContent = `${s} s`;
    }
    const box = (t, u, y, h, attrs) => el("rect", {x: x(t), y: y - h / 2, width: Math.max(x(u) - x(t), 0.5), height: h,
                                                   ...attrs}, svg);
    for (const c of chunks) {
      const rect = box(c.start_ms, c.arrival_ms, LANE.audio, H, {fill: c.user_speaking ? COL.speaking : COL.silent,
                                                                   stroke: "#fff", class: "tt-chunk"});
      hover(rect, c);
      el("text", {x: (x(c.start_ms) + x(c.arrival_ms)) / 2 - 4, y: LANE.audio + 4}, svg).textContent = c.chunk_index;
      if (c.window_open_ms !== null) {
        box(c.window_open_ms, c.arrival_ms, LANE.window, H, {fill: COL.window});
        box(c.window_open_ms, c.window_work_end_ms, LANE.window, H / 2, {fill: COL.work});
      }
      hover(box(c.work_start_ms, c.work_end_ms, LANE.post, H, {fill: "none", stroke: "#555", class: "tt-work"}), c);
      if (c.tokens) el("text", {x: x(c.work_start_ms), y: LANE.post - H / 2 - 2}, svg).textContent = `${c.tokens} tok`;
      if (c.missed_deadline) box(c.deadline_ms, c.work_end_ms, LANE.post, H, {fill: COL.lag, class: "tt-lag"});
      for (const [flag, label, shape] of [[c.is_onset, "onset", "▲"], [c.tool_call, "tool call", "◆"]])
        if (flag) el("text", {x: x(c.work_end_ms) - 4, y: LANE.post + H + 2}, svg).textContent =
          `${shape} ${label} ${ms(c.response_ms)} ms`;
    }
    for (const f of forwards) {
      const lane = f.phase === "post_audio" ? LANE.post : LANE.window;
      const fill = f.phase === "post_audio" ? (f.tree ? COL.tree : COL.forward) : COL.draft;
      const rect = box(f.start_ms, f.end_ms, lane, H * 0.8, {fill, class: f.phase === "post_audio" ? "tt-forward" : "tt-draft"});
      el("title", {}, rect).textContent = `chunk ${f.chunk_index} ${f.phase} forward: ${ms(f.start_ms)}-${ms(f.end_ms)} ms, ` +
        `${f.query_tokens} query tokens, ${f.draft_tokens} draft tokens, ${f.tokens_committed} committed`;
    }
    if (tracks.length) el("line", {id: "tt-cursor", x1: x(t0), x2: x(t0), y1: 4, y2: 116, stroke: "#d81b60",
                                   "stroke-width": 2, visibility: "hidden"}, svg);
  }
  function moveCursor() {  // the cursor at the shown track's playing time (ms from the session's start)
    const cursor = document.getElementById("tt-cursor");
    if (!cursor || !audio) return;
    const at = 70 + (audio.currentTime * 1000 - timelineStart) / 1000 * PX, scroll = svg.parentElement;
    cursor.setAttribute("x1", at); cursor.setAttribute("x2", at);
    if (!audio.paused && (at < scroll.scrollLeft || at > scroll.scrollLeft + scroll.clientWidth - 40))
      scroll.scrollLeft = Math.max(0, at - 100);
  }
  function showTrack(runId, sessionId) {  // the track of this run and session, if any; the others paused
    audio = null;
    for (const figure of tracks) {
      const on = figure.dataset.run === runId && figure.dataset.session === sessionId;
      const element = figure.querySelector("audio");
      figure.hidden = !on;
      if (on) audio = element; else element.pause();
    }
    const cursor = document.getElementById("tt-cursor");
    if (cursor) cursor.setAttribute("visibility", audio ? "visible" : "hidden");
    svg.classList.toggle("tt-seek", audio !== null);
    moveCursor();
  }
  for (const figure of tracks) {
    const element = figure.querySelector("audio");
    for (const event of ["timeupdate", "seeked"])
      element.addEventListener(event, () => { if (element === audio) moveCursor(); });
    element.addEventListener("loadedmetadata", () => {  // said on the element: what the browser decoded
      element.dataset.duration = element.duration.toFixed(3); element.dataset.ready = element.readyState; });
  }
  svg.addEventListener("click", event => {  // clicking the timeline seeks the track to that time
    if (!audio) return;
    const t = timelineStart + (event.clientX - svg.getBoundingClientRect().left - 70) / PX * 1000;
    audio.currentTime = Math.min(Math.max(t / 1000, 0), Number.isFinite(audio.duration) ? audio.duration : Infinity);
    moveCursor();
  });
  const hasTrack = (runId, sessionId) => tracks.some(f => f.dataset.run === runId && f.dataset.session === sessionId);
  const HEAD = ["chunk", "audio (s)", "user", "kind", "text", "forwards", "draft source", "accepted", "response (ms)",
                "lag (ms)", "missed"];
  function drawTable(chunks) {
    table.tHead.innerHTML = "<tr>" + HEAD.map(h => `<th>${h}</th>`).join("") + "</tr>";
    const body = table.tBodies[0];
    body.replaceChildren();
    for (const c of chunks) {
      const row = body.insertRow();
      row.className = "tt-row" + (c.missed_deadline ? " tt-missed" : "");
      const cells = [c.chunk_index, `${(c.start_ms / 1000).toFixed(2)}-${(c.arrival_ms / 1000).toFixed(2)}`, c.user_speaking ? "speaking" : "",
                     c.kind, c.text, seen(c.post_audio_forwards), c.draft_source ?? "–",
                     `${seen(c.accepted_tokens)}/${seen(c.draft_tokens)}`,
                     ms(c.response_ms), ms(c.lag_ms), c.missed_deadline ? "MISSED" : ""];
      cells.forEach((value, i) => { const cell = row.insertCell(); cell.textContent = value;
                                    if (i === 4) cell.className = "tt-text"; });
      hover(row, c);
    }
  }
  function show(runIndex, sessionIndex, chunkIndex) {
    const run = data.runs[runIndex], session = run.sessions[sessionIndex];
    const chunks = records(session.chunks, data.chunk_columns), forwards = records(session.forwards, data.forward_columns);
    const misses = chunks.filter(c => c.missed_deadline).length;
    summary.textContent = `${run.decoder} · ${run.setup} · ${session.task} · ${chunks.length} chunks, ` +
                          `${forwards.filter(f => f.phase === "post_audio").length} post-audio forwards, ${misses} deadline misses`;
    drawTimeline(chunks, forwards);
    drawTable(chunks);
    if (tracks.length) showTrack(run.run_id, session.session_id);
    const chosen = chunks.find(c => String(c.chunk_index) === String(chunkIndex));
    if (chosen) {
      details.textContent = describe(chosen); highlight(chosen.chunk_index);
      svg.parentElement.scrollLeft = Math.max(0, (chosen.start_ms - chunks[0].start_ms) / 1000 * PX - 200);
    }
    else details.textContent = "hover a chunk";
    const params = new URLSearchParams({run: run.run_id, session: session.session_id});
    if (chosen) params.set("chunk", chosen.chunk_index);
    if (document.body.classList.contains("tt-alone")) params.set("alone", "1");
    if (location.hash.startsWith("#viewer")) history.replaceState(null, "", "#viewer?" + params.toString());
  }
  function fillSessions(runIndex, wanted) {
    sessionSelect.replaceChildren();
    const runId = data.runs[runIndex].run_id;
    data.runs[runIndex].sessions.forEach((s, i) => option(sessionSelect, i, `${s.session_id} (${s.task})` +
                                                          (hasTrack(runId, s.session_id) ? " · listen" : "")));
    const found = data.runs[runIndex].sessions.findIndex(s => s.session_id === wanted);
    sessionSelect.value = found >= 0 ? found : 0;
  }
  if (!data.runs.length) { summary.textContent = "no single-session runs to show"; return; }
  data.runs.forEach((r, i) => option(runSelect, i, `${r.decoder} · ${r.run_id} · ${r.setup}`));
  const state = hashState();
  if (tracks.length && !state.run && !state.session)  // open on a session to listen to
    Object.assign(state, {run: tracks[0].dataset.run, session: tracks[0].dataset.session});
  const start = Math.max(0, data.runs.findIndex(r => r.run_id === state.run));
  runSelect.value = start;
  fillSessions(start, state.session);
  let shownRun = start;
  runSelect.addEventListener("change", () => {  // keep the session when the new run has it
    const name = data.runs[shownRun].sessions[Number(sessionSelect.value)].session_id;
    shownRun = Number(runSelect.value);
    fillSessions(shownRun, name);
    show(shownRun, Number(sessionSelect.value));
  });
  sessionSelect.addEventListener("change", () => show(Number(runSelect.value), Number(sessionSelect.value)));
  for (const link of document.querySelectorAll(".tt-listen-link")) link.addEventListener("click", event => {
    event.preventDefault();  // open the track's run and session
    const runIndex = data.runs.findIndex(r => r.run_id === link.dataset.run);
    if (runIndex < 0) return;
    runSelect.value = shownRun = runIndex;
    fillSessions(runIndex, link.dataset.session);
    show(runIndex, Number(sessionSelect.value));
  });
  show(start, Number(sessionSelect.value), state.chunk);
  if (state.alone === "1") document.body.classList.add("tt-alone");
  else if (state.run || state.session) document.getElementById("viewer").scrollIntoView();
})();
"""
