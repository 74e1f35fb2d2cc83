"""The six properties ``ticktock certify`` checks of a decoder, each from observed replays (``replays.Replay``).

Each function takes the replays it needs and the setting's label and returns one ``Check``, naming the first
counter-example (session, chunk, token, forward or cache position) when the property does not hold:

- ``tokens_equal_ar``: every chunk's tokens are AR's (same sessions, options and seed);
- ``forwards_logged``: every forward the model ran is a row of forwards.parquet (in order, with the query and
  context it had), charged to the clock (``charged_ms`` > 0, within the phase's time);
- ``counters_agree``: chunks.parquet's and sessions.parquet's counters are what forwards.parquet adds up to;
- ``no_early_audio``: with the audio after a cut replaced (silence, noise, another session's audio, the session's own
  audio shifted: one replay each), everything before the cut is unchanged;
- ``cache_equals_ar``: the KV cache after each chunk's post-audio work is AR's (length, keys and values);
- ``deterministic``: the same config twice gives the same tables (wall-clock columns aside).

Example::

    >>> tokens_mismatch("s1", 3, [4, 10, 5], [4, 11, 5])
    'session s1, chunk 3, token 1'
"""

from __future__ import annotations

from ticktock.conformance.checks import Check
from ticktock.conformance.observe import IDLE_WORK, POST_AUDIO_WORK
from ticktock.conformance.replays import Replay, Timeline, comparable, first_difference
from ticktock.decoders.counters import POST_AUDIO

TOKENS = "tokens equal AR"
LOGGED = "forwards charged and logged"
COUNTERS = "counters agree with the log"
NO_PEEKING = "no audio read before it arrives"
CACHE = "KV cache equals AR"
DETERMINISTIC = "same config, same results"
PROPERTIES = (TOKENS, LOGGED, COUNTERS, NO_PEEKING, CACHE, DETERMINISTIC)

CACHE_ATOL = 1e-5  # fp32: a tree verification's keys equal the chain's up to float rounding
CACHE_RTOL = 1e-5
TIME_EPS_MS = 1e-6


def tokens_mismatch(session_id: str, chunk_index: int, tokens: list[int], expected: list[int]) -> str | None:
    """Where ``tokens`` first differ from ``expected`` (None when equal)."""
    for k, (a, b) in enumerate(zip(tokens, expected)):
        if a != b:
            return f"session {session_id}, chunk {chunk_index}, token {k}"
    if len(tokens) != len(expected):
        return f"session {session_id}, chunk {chunk_index}, token {min(len(tokens), len(expected))}"
    return None


def tokens_equal_ar(subject: Replay, reference: Replay, setting: str) -> Check:
    for session_id in reference.session_ids():
        ours, theirs = subject.chunks_of(session_id), reference.chunks_of(session_id)
        for mine, ar in zip(ours, theirs):
            tokens, expected = list(mine["output_token_ids"]), list(ar["output_token_ids"])
            where = tokens_mismatch(session_id, ar["chunk_index"], tokens, expected)
            if where:
                return Check(TOKENS, setting, False, where, f"{mine['output_text']!r}, AR's {ar['output_text']!r}")
        if len(ours) != len(theirs):
            return Check(TOKENS, setting, False, f"session {session_id}", f"{len(ours)} chunks, AR's {len(theirs)}")
    return Check(TOKENS, setting, True)


# ------------------------------------------------------------------------------------------ the forward log


def _work_of(phase: str) -> str:
    return POST_AUDIO_WORK if phase == POST_AUDIO else IDLE_WORK


def forwards_logged(subject: Replay, setting: str) -> Check:
    stray = [call for call in subject.recorder.calls if call.work is None]
    if stray:
        return Check(LOGGED, setting, False, "outside decode_chunk and idle",
                     f"the model ran {len(stray)} forward(s) while no chunk was being decoded or drafted")
    for session_id in subject.session_ids():
        problem = _log_problem(subject, session_id) or _charge_problem(subject, session_id)
        if problem:
            return Check(LOGGED, setting, False, *problem)
    return Check(LOGGED, setting, True)


def _log_problem(subject: Replay, session_id: str) -> tuple[str, str] | None:
    """The first chunk and kind of work (its idle window, then its post-audio work) whose forwards the model ran
    differ from those forwards.parquet logs: in number, or in the query and context of one of them."""
    calls = subject.recorder.calls_of(session_id)
    ran = _by_work((c.chunk_index, c.work, c.query_tokens, c.context_tokens) for c in calls)
    logged = _by_work((r["chunk_index"], _work_of(r["phase"]), r["query_tokens"], r["context_tokens"])
                      for r in subject.forwards_of(session_id))
    for chunk_index, work in sorted(ran.keys() | logged.keys(), key=lambda key: (key[0], key[1] != IDLE_WORK)):
        mine, theirs = ran.get((chunk_index, work), []), logged.get((chunk_index, work), [])
        if mine == theirs:
            continue
        where = f"session {session_id}, chunk {chunk_index}, {_WORK_NAMES[work]}"
        if len(mine) != len(theirs):
            return where, f"the model ran {len(mine)} forward(s), forwards.parquet logs {len(theirs)}"
        i = next(i for i, (a, b) in enumerate(zip(mine, theirs)) if a != b)
        return where, (f"forward {i}: the model was fed {mine[i][0]} positions at context {mine[i][1]}, "
                       f"forwards.parquet logs {theirs[i][0]} at context {theirs[i][1]}")
    return None


_WORK_NAMES = {POST_AUDIO_WORK: "post-audio work", IDLE_WORK: "idle window"}


def _by_work(forwards) -> dict[tuple[int, str], list[tuple[int, int]]]:
    """(query, context) of each forward, in order, by (chunk, kind of work)."""
    grouped: dict[tuple[int, str], list[tuple[int, int]]] = {}
    for chunk_index, work, query, context in forwards:
        grouped.setdefault((chunk_index, work), []).append((query, context))
    return grouped


def _charge_problem(subject: Replay, session_id: str) -> tuple[str, str] | None:
    """A logged forward charged nothing, or a phase charged less time than its forwards took."""
    chunks = {row["chunk_index"]: row for row in subject.chunks_of(session_id)}
    spent: dict[tuple[int, str], float] = {}
    for i, row in enumerate(subject.forwards_of(session_id)):
        if not row["charged_ms"] > 0:
            return (f"session {session_id}, chunk {row['chunk_index']}, forward {i}",
                    f"charged_ms {row['charged_ms']!r} (every forward must cost time on the clock)")
        key = (row["chunk_index"], _work_of(row["phase"]))
        spent[key] = spent.get(key, 0.0) + row["charged_ms"]
    for (chunk_index, work), charged in spent.items():
        row = chunks.get(chunk_index)
        if row is None:
            return f"session {session_id}, chunk {chunk_index}", "forwards logged for a chunk that has no row"
        took = row["post_audio_ms"] - row["carried_ms"] if work == POST_AUDIO_WORK else row["window_used_ms"]
        if charged > took + TIME_EPS_MS * max(1.0, took):
            return (f"session {session_id}, chunk {chunk_index}, {_WORK_NAMES[work]}",
                    f"took {took:.3f} ms on the clock, its forwards were charged {charged:.3f} ms")
    return None


def counters_agree(subject: Replay, setting: str) -> Check:
    for session_id in subject.session_ids():
        rows = subject.forwards_of(session_id)
        chunks = subject.chunks_of(session_id)
        for chunk in chunks:
            problem = _counter_problem(chunk, [r for r in rows if r["chunk_index"] == chunk["chunk_index"]])
            if problem:
                return Check(COUNTERS, setting, False, f"session {session_id}, chunk {chunk['chunk_index']}", problem)
        session = subject.session_row(session_id)
        for column, value in (("num_chunks", len(chunks)),
                              ("num_missed_deadlines", sum(c["missed_deadline"] for c in chunks))):
            if session[column] != value:
                return Check(COUNTERS, setting, False, f"session {session_id}",
                             f"sessions.parquet {column} {session[column]}, its chunks add up to {value}")
    return Check(COUNTERS, setting, True)


def _counter_problem(chunk: dict, rows: list[dict]) -> str | None:
    """The first of the chunk row's counters that its forward log rows do not add up to."""
    post = [r for r in rows if r["phase"] == POST_AUDIO]
    window = [r for r in rows if r["phase"] != POST_AUDIO]
    committed = sum(r["tokens_committed"] for r in post)
    expected = {
        "num_post_audio_forwards": len(post),
        "num_draft_tokens": sum(r["draft_tokens"] for r in post),
        "num_output_tokens": committed,
        "window_forwards": len(window),
        "window_query_tokens": sum(r["query_tokens"] for r in window),
    }
    for column, value in expected.items():
        if chunk[column] != value:
            return f"chunks.parquet {column} {chunk[column]}, forwards.parquet adds up to {value}"
    if chunk["num_output_tokens"] != len(chunk["output_token_ids"]):
        return (f"num_output_tokens {chunk['num_output_tokens']}, output_token_ids holds "
                f"{len(chunk['output_token_ids'])}")
    accepted = chunk["num_accepted_draft_tokens"]
    if not committed - len(post) <= accepted <= min(committed, chunk["num_draft_tokens"]):
        return (f"num_accepted_draft_tokens {accepted}: {committed} tokens committed in {len(post)} forwards offering "
                f"{chunk['num_draft_tokens']} draft tokens allow {max(0, committed - len(post))} to "
                f"{min(committed, chunk['num_draft_tokens'])}")
    if chunk["lookup_hits"] > max(0, len(post) - 1):
        return f"lookup_hits {chunk['lookup_hits']} with {len(post)} post-audio forwards"
    return None


# ------------------------------------------------------------------------------------------ no peeking


def before_cut(result: Replay, cut_ms: dict[str, float]) -> dict[str, list]:
    """Per session, what happened before its cut (``cut_ms``, on the run's clock: see ``replays.Timeline``): the
    chunk rows done by then, and the forwards started by then with the digest of their inputs (wall-clock columns
    aside)."""
    seen = {}
    for session_id in result.session_ids():
        timeline, cut = Timeline(result, session_id), cut_ms.get(session_id, float("inf"))
        calls = result.recorder.calls_of(session_id)
        events = [("chunk", row["chunk_index"], comparable(row)) for row in result.chunks_of(session_id)
                  if timeline.chunk_done_ms(row["chunk_index"]) <= cut]
        for i, row in enumerate(result.forwards_of(session_id)):
            if timeline.forward_start_ms(row) < cut:
                inputs = calls[i].inputs if i < len(calls) else None
                events.append(("forward", row["chunk_index"], {**comparable(row), "inputs": inputs}))
        seen[session_id] = events
    return seen


def early_read(subject: Replay, setting: str) -> Check | None:
    """A failed check naming the first read of the session's audio, while the decoder worked, past what had arrived
    (``ticktock.conformance.observe.EarlyRead``: whatever the decoder did with it, even only spending time); None
    when there was none.

    >>> from ticktock.conformance.observe import EarlyRead, Recorder
    >>> recorder = Recorder(capture_caches=False)
    >>> recorder.early_reads.append(EarlyRead("s1", 3, "idle", 4.0, 3.25))
    >>> early_read(Replay(None, [], [], [], recorder), "fixture, greedy").counterexample()
    'session s1, chunk 3: its idle window read the audio up to 4.000 s when 3.250 s had arrived (0.750 s ahead)'
    """
    if not subject.recorder.early_reads:
        return None
    read = subject.recorder.early_reads[0]
    more = len(subject.recorder.early_reads) - 1
    return Check(NO_PEEKING, setting, False, f"session {read.session_id}, chunk {read.chunk_index}",
                 f"its {_WORK_NAMES.get(read.work, read.work)} read the audio up to {read.read_end_s:.3f} s when "
                 f"{read.arrived_s:.3f} s had arrived ({read.ahead_s:.3f} s ahead)"
                 + (f"; {more} more early reads" if more else ""))


def no_early_audio(subject: Replay, cuts: list[tuple[dict[str, float], str, str, Replay]], setting: str) -> Check:
    """``cuts``: (each session's cut on the run's clock in ms, the cut in words, what replaced the audio after it, the
    replay with that audio); ``subject`` is the replay with the real audio. The first event before a cut that differs
    (a chunk row, or a forward's row or inputs), or that one replay has and the other lacks, fails the check: its
    session, chunk and forward, what differed and which replacement changed it."""
    if not cuts:
        return Check(NO_PEEKING, setting, None, detail="no replay with cut audio was asked for (cuts 0)")
    for cut_ms, described, replaced_by, cut in cuts:
        problem = _first_change(before_cut(subject, cut_ms), before_cut(cut, cut_ms))
        if problem:
            where, what = problem
            return Check(NO_PEEKING, setting, False, where, f"{what} when {described} was replaced by {replaced_by}")
    return Check(NO_PEEKING, setting, True)


def _first_change(ours: dict[str, list], theirs: dict[str, list]) -> tuple[str, str] | None:
    """Where and how the events before the cut of a perturbed replay (``theirs``) first differ from the real one's."""
    for session_id, events in ours.items():
        other = theirs.get(session_id, [])
        for i, (kind, chunk_index, row) in enumerate(events):
            twin = other[i][2] if i < len(other) and other[i][:2] == (kind, chunk_index) else None
            if twin != row:
                where = f"session {session_id}, chunk {chunk_index}" + \
                    (f", forward {row['forward_index']} ({row['phase']})" if kind == "forward" else "")
                return where, _change(row, twin)
        if len(other) > len(events):
            extra_kind, chunk_index, row = other[len(events)]
            where = f"session {session_id}, chunk {chunk_index}" + \
                (f", forward {row['forward_index']} ({row['phase']})" if extra_kind == "forward" else "")
            return where, f"it happened only in the perturbed replay ({len(other) - len(events)} more events)"
    return None


def _change(row: dict, twin: dict | None) -> str:
    """How an event of the real replay (``row``) differs in the perturbed one (``twin``; None: absent there)."""
    if twin is None:
        return "it did not happen"
    if twin.get("inputs") != row.get("inputs"):
        return "its inputs changed"
    return f"it changed ({first_difference(row, twin)})"


# ------------------------------------------------------------------------------------------ the KV cache


def cache_equals_ar(subject: Replay, reference: Replay, setting: str) -> Check:
    import torch

    for session_id in reference.session_ids():
        ar_images = reference.recorder.caches.images(session_id)
        for (chunk_index, ours), (ar_chunk, theirs) in zip(subject.recorder.caches.images(session_id), ar_images):
            if ours is None or theirs is None:
                return Check(CACHE, setting, None, detail="the model keeps no transformers cache in adapter.cache")
            where = f"session {session_id}, chunk {chunk_index}"
            if chunk_index != ar_chunk:
                return Check(CACHE, setting, False, where, f"captured after chunk {chunk_index}, AR's after {ar_chunk}")
            length, ar_length = ours[0][0].shape[1], theirs[0][0].shape[1]
            if length != ar_length:
                return Check(CACHE, setting, False, where, f"cache length {length}, AR's {ar_length}")
            for layer, ((k, v), (ak, av)) in enumerate(zip(ours, theirs)):
                for name, mine, ar in (("keys", k, ak), ("values", v, av)):
                    if not torch.allclose(mine, ar, rtol=CACHE_RTOL, atol=CACHE_ATOL):
                        gap = (mine - ar).abs()
                        position = int(gap.amax(dim=(0, 2)).argmax())
                        return Check(CACHE, setting, False, where,
                                     f"layer {layer} {name} at position {position} differ by {float(gap.max()):.2e} "
                                     f"(tolerance {CACHE_ATOL:g})")
    return Check(CACHE, setting, True)


# ------------------------------------------------------------------------------------------ determinism


TABLE_KEYS = {
    "chunks": ("session_id", "chunk_index"),
    "sessions": ("session_id",),
    "forwards": ("session_id", "chunk_index", "phase", "forward_index"),
}


def deterministic(first: Replay, second: Replay, setting: str) -> Check:
    for table, keys in TABLE_KEYS.items():
        ours = sorted(getattr(first, table), key=lambda r: tuple(r[k] for k in keys))
        theirs = sorted(getattr(second, table), key=lambda r: tuple(r[k] for k in keys))
        for a, b in zip(ours, theirs):
            difference = first_difference(comparable(a), comparable(b))
            if difference:
                where = f"{table}.parquet " + ", ".join(f"{k} {a[k]}" for k in keys)
                return Check(DETERMINISTIC, setting, False, where, difference)
        if len(ours) != len(theirs):
            return Check(DETERMINISTIC, setting, False, f"{table}.parquet", f"{len(ours)} rows, then {len(theirs)}")
    return Check(DETERMINISTIC, setting, True)
