"""The rows of a run's result tables, built in one place for every kind of run.

``build_chunk_row`` and ``build_session_row`` fill every column of ``ticktock.results.schema.CHUNKS`` and
``SESSIONS`` from the facts a run knows of a chunk (``ChunkFacts``) and of a session (``SessionFacts``), each fact a
field without a default: a kind of run that cannot know one passes None for it, and the columns it leaves null are
declared here (``REPLAY_UNKNOWN``, ``LIVE_UNKNOWN``, ``TURN_BASED_UNKNOWN``; ``tests/results/test_row_builder.py``
holds every kind to its list). The kinds gather their facts and call the builder:

- a replayed run (``ticktock.replay.runner``): ``chunk_rows``, ``session_row`` and ``forward_rows`` below, from the
  engine's ``SessionTrace``;
- a live run (``ticktock.endpoints.run``): ``ticktock.endpoints.measure.chunk_rows`` and ``session_row``, from the
  client's ``LiveRecord``.

Onset: a speak chunk starts a model turn when the chunk before it was not a speak chunk or ended the
turn (``<|turn_eos|>``); its ``response_ms`` is the turn's response onset latency. Tool-call latency is
``response_ms`` of every chunk whose decision is a tool call (a replay; a live run measures it from the call).

Example::

    >>> onset_flags(["listen", "speak", "speak", "listen", "speak"], [False, False, True, False, False])
    [False, True, False, False, True]
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from statistics import mean

from ticktock.results.fingerprint import FIELDS as INPUT_COLUMNS_BY_NAME
from ticktock.results.playback import Piece, place, summarize
from ticktock.results.schema import COUNTER_COLUMNS

SPEECH_COLUMNS = ("talker_text", "audio_s", "audio_sha256", "talker_ms", "speech_ahead", "speech_prepared",
                  "audio_ready_ms", "playback_start_ms", "stall_ms")
SESSION_SPEECH_COLUMNS = ("first_audio_latencies_ms", "mean_first_audio_ms", "num_stalls", "total_stall_ms",
                          "assistant_speech_s", "stalls_per_min")
INPUT_COLUMNS = tuple(INPUT_COLUMNS_BY_NAME)  # sessions: the inputs' digests, stamped by the run that writes the row

# What each kind of run cannot know: these columns are null in every row it builds (table name -> columns).
REPLAY_UNKNOWN = {
    "chunks": ("send_lag_ms",),  # a replay sends no audio: each chunk arrives on the run's clock exactly when due
    "sessions": ("max_send_lag_ms",),
}
LIVE_UNKNOWN = {
    # A live client sees the server's events, not its model: no token ids (so no token count), no forwards, drafts
    # or cache (every ChunkCounters column), no audio encoding time, and no talker (its time, whether it spoke
    # ahead, what it prepared). Its sessions' profile_sha256 is null too (no cost profile), stamped by the run.
    "chunks": ("num_output_tokens", "encode_wall_ms", *COUNTER_COLUMNS, "talker_ms", "speech_ahead",
               "speech_prepared"),
    "sessions": (),
}
TURN_BASED_UNKNOWN = {
    # Besides LIVE_UNKNOWN, a turn-based protocol (no per-unit decisions) never says when it decided a unit it
    # listened through: no lag recursion, so no post-audio latency, carried or accumulated lag, or deadline miss.
    "chunks": ("post_audio_ms", "post_audio_wall_ms", "carried_ms", "lag_before_ms", "lag_ms", "missed_deadline"),
    "sessions": ("max_lag_ms", "mean_lag_ms", "num_missed_deadlines"),
}


def onset_flags(kinds: list[str], ends_turn: list[bool]) -> list[bool]:
    flags = []
    for i, kind in enumerate(kinds):
        previous_open = i > 0 and kinds[i - 1] == "speak" and not ends_turn[i - 1]
        flags.append(kind == "speak" and not previous_open)
    return flags


def mean_or_none(values: list[float]) -> float | None:
    return mean(values) if values else None


# ------------------------------------------------------------------------------------------------ the builder


@dataclass(frozen=True)
class Sharing:
    """Where a session ran on a shared device: ``concurrency`` sessions, its ``slot`` among them, its ``start_ms``
    on the device's time (1, 0 and 0.0 for a session alone)."""

    concurrency: int
    slot: int
    start_ms: float


@dataclass(frozen=True)
class ChunkTimes:
    """A chunk's times in ms (``ticktock.results.schema``: post_audio_ms is l_t, lag_ms b_t, response_ms
    b_(t-1) + l_t); None where a kind does not measure one."""

    post_audio_ms: float | None
    post_audio_wall_ms: float | None
    encode_wall_ms: float | None
    carried_ms: float | None
    lag_before_ms: float | None
    lag_ms: float | None
    response_ms: float | None
    missed_deadline: bool | None


@dataclass(frozen=True)
class ChunkSpeech:
    """What the talker said for a chunk: its ``text`` and audio (``audio_s``, ``audio_sha256``), and, where the run
    saw the talker work, its ``talker_ms``, whether it spoke ``ahead`` and the texts it ``prepared`` (else None)."""

    text: str
    audio_s: float
    audio_sha256: str | None
    talker_ms: float | None
    ahead: bool | None
    prepared: int | None


@dataclass(frozen=True)
class ChunkPlayback:
    """When a chunk's audio plays, in ms from its arrival (``ticktock.results.playback``): ready, starts, and the
    stall just before it."""

    ready_ms: float
    start_ms: float
    stall_ms: float


@dataclass(frozen=True)
class ChunkFacts:
    """Everything a run knows of one chunk, for its row. ``span``: the session's ``ChunkSpan`` (index, start_s,
    end_s, user_speaking); ``tokens``: the output's token ids, None where the run sees text only (then the row's
    ``output_token_ids`` is [] and ``num_output_tokens`` null); ``tool_calls``: the calls made in it;
    ``counters``: the decoder's ``ChunkCounters`` (None: no forwards seen); ``speech``: None without speech;
    ``playback``: None when it plays nothing; ``send_lag_ms``: None where no audio was sent."""

    span: object
    kind: str
    tokens: list[int] | None
    text: str
    ends_turn: bool
    is_onset: bool
    injected_text: str
    tool_calls: list
    times: ChunkTimes
    counters: object | None
    speech: ChunkSpeech | None
    playback: ChunkPlayback | None
    send_lag_ms: float | None


def build_chunk_row(identity: dict, session, chunk: ChunkFacts, sharing: Sharing) -> dict:
    """The chunks row (every column of ``schema.CHUNKS``) of one chunk of ``session``.

    >>> from types import SimpleNamespace as Fake
    >>> span, session = Fake(index=0, start_s=0.0, end_s=1.0, user_speaking=True), Fake(task="t", session_id="s")
    >>> times = ChunkTimes(40.0, 40.0, None, 0.0, 0.0, 0.0, 40.0, False)
    >>> facts = ChunkFacts(span, "listen", None, "", False, False, "", [], times, None, None, None, 3.0)
    >>> row = build_chunk_row({"run_id": "r"}, session, facts, Sharing(1, 0, 0.0))
    >>> row["response_ms"], row["output_token_ids"], row["num_output_tokens"], row["lookup_hits"], row["send_lag_ms"]
    (40.0, [], None, None, 3.0)
    """
    span, times, speech, playback = chunk.span, chunk.times, chunk.speech, chunk.playback
    return {
        **identity,
        "task": session.task,
        "session_id": session.session_id,
        "chunk_index": span.index,
        "start_s": span.start_s,
        "arrival_s": span.end_s,
        "user_speaking": span.user_speaking,
        "kind": chunk.kind,
        "num_output_tokens": None if chunk.tokens is None else len(chunk.tokens),
        "output_token_ids": [] if chunk.tokens is None else list(chunk.tokens),
        "output_text": chunk.text,
        "ends_turn": chunk.ends_turn,
        "is_onset": chunk.is_onset,
        "injected_text": chunk.injected_text,
        "tool_calls_json": json.dumps(chunk.tool_calls) if chunk.tool_calls else "",
        "post_audio_ms": times.post_audio_ms,
        "post_audio_wall_ms": times.post_audio_wall_ms,
        "encode_wall_ms": times.encode_wall_ms,
        "carried_ms": times.carried_ms,
        "lag_before_ms": times.lag_before_ms,
        "lag_ms": times.lag_ms,
        "response_ms": times.response_ms,
        "missed_deadline": times.missed_deadline,
        **counter_columns(chunk.counters),
        "concurrency": sharing.concurrency,
        "session_slot": sharing.slot,
        "talker_text": None if speech is None else speech.text,
        "audio_s": None if speech is None else speech.audio_s,
        "audio_sha256": None if speech is None else speech.audio_sha256,
        "talker_ms": None if speech is None else speech.talker_ms,
        "speech_ahead": None if speech is None else speech.ahead,
        "speech_prepared": None if speech is None else speech.prepared,
        "audio_ready_ms": None if playback is None else playback.ready_ms,
        "playback_start_ms": None if playback is None else playback.start_ms,
        "stall_ms": None if playback is None else playback.stall_ms,
        "send_lag_ms": chunk.send_lag_ms,
    }


def counter_columns(counters) -> dict:
    """The chunk's counter columns (``schema.COUNTER_COLUMNS``) from its ``ChunkCounters``; all null for None."""
    return {column: None if counters is None else getattr(counters, name) for column, name in COUNTER_COLUMNS.items()}


@dataclass(frozen=True)
class SessionFacts:
    """What a run knows of a session beyond its chunk rows. ``lags_measured``: the chunks carry the lag recursion
    (else the session's lag and deadline columns are null); ``tool_call_latencies_ms``: each tool call's latency;
    ``spoken_texts``: the speak chunks' texts (joined into ``speech_text``); ``tool_calls``: every call made;
    ``wall_s``: how long the session took; ``speech_pieces``: its audio as playback pieces (None: no speech, the
    speech columns null); ``max_send_lag_ms``: None where no audio was sent; ``inputs``: the inputs' digests
    (``ticktock.results.fingerprint``), None where the run stamps them on the row itself."""

    lags_measured: bool
    tool_call_latencies_ms: list[float]
    spoken_texts: list[str]
    tool_calls: list
    wall_s: float
    speech_pieces: list[Piece] | None
    max_send_lag_ms: float | None
    inputs: dict | None


def build_session_row(identity: dict, session, chunks: list[dict], facts: SessionFacts, sharing: Sharing,
                      playback_delay_ms: float = 0.0) -> dict:
    """The sessions row (every column of ``schema.SESSIONS``) of ``session`` from its chunk rows;
    its speech played with a jitter buffer of ``playback_delay_ms`` (``playback.place``).

    >>> from types import SimpleNamespace as Fake
    >>> session = Fake(task="t", session_id="s", duration_s=2.0, expected={}, turns=())
    >>> chunks = [{"lag_ms": 0.0, "missed_deadline": False, "is_onset": True, "response_ms": 40.0}]
    >>> facts = SessionFacts(True, [], ["Hi "], [], 0.5, None, None, None)
    >>> row = build_session_row({"run_id": "r"}, session, chunks, facts, Sharing(1, 0, 0.0))
    >>> row["onset_latencies_ms"], row["speech_text"], row["num_missed_deadlines"], row["num_stalls"]
    ([40.0], 'Hi', 0, None)
    """
    lags = [c["lag_ms"] for c in chunks if c["lag_ms"] is not None]
    onsets = [c["response_ms"] for c in chunks if c["is_onset"] and c["response_ms"] is not None]
    tools = facts.tool_call_latencies_ms
    inputs = facts.inputs or {}
    return {
        **identity,
        "task": session.task,
        "session_id": session.session_id,
        "num_chunks": len(chunks),
        "duration_s": session.duration_s,
        "max_lag_ms": max(lags, default=0.0) if facts.lags_measured else None,
        "mean_lag_ms": (mean(lags) if lags else 0.0) if facts.lags_measured else None,
        "num_missed_deadlines": sum(bool(c["missed_deadline"]) for c in chunks) if facts.lags_measured else None,
        "onset_latencies_ms": onsets,
        "mean_onset_ms": mean_or_none(onsets),
        "tool_call_latencies_ms": tools,
        "mean_tool_call_ms": mean_or_none(tools),
        "speech_text": "".join(facts.spoken_texts).strip(),
        "tool_calls_json": json.dumps(facts.tool_calls),
        "expected_json": json.dumps(session.expected, sort_keys=True),
        "turns_json": json.dumps([turn_summary(t) for t in session.turns]),
        "replay_wall_s": facts.wall_s,
        "concurrency": sharing.concurrency,
        "session_slot": sharing.slot,
        "start_ms": sharing.start_ms,
        **{column: inputs.get(column) for column in INPUT_COLUMNS},
        **speech_summary(facts.speech_pieces, playback_delay_ms),
        "max_send_lag_ms": facts.max_send_lag_ms,
    }


def turn_summary(turn) -> dict:
    """A manifest turn as the sessions row stores it (``turns_json``): every field but its words."""
    data = asdict(turn)
    data.pop("words")
    return data


def speech_summary(pieces: list[Piece] | None, delay_ms: float = 0.0) -> dict:
    """The session's speech-out columns (``SESSION_SPEECH_COLUMNS``) from its playback pieces, played with a jitter
    buffer of ``delay_ms``; all null for None (no speech).

    >>> speech_summary([Piece(1000.0, 300.0, 0.8, True)])["first_audio_latencies_ms"]
    [300.0]
    """
    if pieces is None:
        return dict.fromkeys(SESSION_SPEECH_COLUMNS)
    summary = summarize(pieces, place(pieces, delay_ms))
    return dict(zip(SESSION_SPEECH_COLUMNS, (summary.first_audio_ms, mean_or_none(summary.first_audio_ms),
                                             summary.num_stalls, summary.stall_ms, summary.speech_s,
                                             summary.stalls_per_minute)))


# ------------------------------------------------------------------------------------------------ a replayed run


def chunk_rows(trace, identity: dict, adapter, playback_delay_ms: float = 0.0) -> list[dict]:
    """The chunk rows of a replayed session; its speech placed with a jitter buffer of ``playback_delay_ms``
    (``ticktock.results.playback``; 0: each reply plays as soon as its first piece is ready)."""
    chunks = trace.chunks
    ends = [adapter.protocol.turn_eos in c.output for c in chunks]
    onsets = onset_flags([c.kind for c in chunks], ends)
    playback = replay_playback(chunks, onsets, playback_delay_ms)
    sharing = Sharing(trace.concurrency, trace.slot, trace.start_ms)
    return [build_chunk_row(identity, trace.session, replayed_chunk(chunk, adapter, ends_turn, onset, placed), sharing)
            for chunk, ends_turn, onset, placed in zip(chunks, ends, onsets, playback)]


def replayed_chunk(chunk, adapter, ends_turn: bool, is_onset: bool, playback: ChunkPlayback | None) -> ChunkFacts:
    """A replayed chunk's facts (an engine ``ChunkTrace``); a replay sends no audio (``send_lag_ms`` None)."""
    timing, piece = chunk.timing, chunk.speech
    times = ChunkTimes(timing.latency_ms, chunk.post_audio_wall_ms, chunk.encode_wall_ms, chunk.carried_ms,
                       timing.lag_before_ms, timing.lag_ms, timing.response_ms, timing.missed_deadline)
    speech = None if piece is None else ChunkSpeech(piece.text, piece.audio_s, piece.audio_sha256, piece.talker_ms,
                                                    piece.ahead, piece.prepared)
    return ChunkFacts(chunk.span, chunk.kind, chunk.output, adapter.decode_tokens(chunk.output), ends_turn, is_onset,
                      chunk.injected.text, chunk.calls, times, chunk.counters, speech, playback, send_lag_ms=None)


def replay_playback(chunks: list, onsets: list[bool], delay_ms: float = 0.0) -> list[ChunkPlayback | None]:
    """Where each replayed chunk's speech plays: one piece per chunk that speaks (a ``SpokenPiece``, kind speak or
    backchannel), ready ``response_ms`` + the talker's ``ready_ms`` after its arrival; None for the others."""
    speaking = [i for i, c in enumerate(chunks) if c.speech is not None and c.kind in ("speak", "backchannel")]
    pieces = [Piece(1000.0 * chunks[i].span.end_s, chunks[i].timing.response_ms + chunks[i].speech.ready_ms,
                    chunks[i].speech.audio_s, onsets[i] or chunks[i].kind != "speak") for i in speaking]
    playback: list[ChunkPlayback | None] = [None] * len(chunks)
    for i, piece, placed in zip(speaking, pieces, place(pieces, delay_ms)):
        playback[i] = ChunkPlayback(piece.ready_ms, placed.start_ms, placed.stall_ms)
    return playback


def playback_summary(chunks: list[dict], delay_ms: float = 0.0) -> dict:
    """The session's speech-out columns from its chunk rows (all null without a talker), its replies played with a
    jitter buffer of ``delay_ms`` (``playback.place``: the same as the chunk rows were placed with)."""
    return speech_summary(row_pieces(chunks), delay_ms)


def row_pieces(chunks: list[dict]) -> list[Piece] | None:
    """The playback pieces of a replayed session's chunk rows (those with audio ready); None without a talker."""
    if not any(c["talker_text"] is not None for c in chunks):
        return None
    return [Piece(1000.0 * c["arrival_s"], c["audio_ready_ms"], c["audio_s"], c["is_onset"] or c["kind"] != "speak")
            for c in chunks if c["audio_ready_ms"] is not None]


def session_row(trace, identity: dict, chunks: list[dict], adapter, playback_delay_ms: float = 0.0) -> dict:
    """The session row of a replayed session from its chunk rows; ``playback_delay_ms``: the jitter buffer its speech
    is played with (as for ``chunk_rows``). Its inputs' digests are null here: the runner stamps them."""
    facts = SessionFacts(
        lags_measured=True,
        tool_call_latencies_ms=[c["response_ms"] for c in chunks if c["kind"] == "tool"],
        spoken_texts=[adapter.decode_tokens(lexical(c["output_token_ids"], adapter.protocol))
                      for c in chunks if c["kind"] == "speak"],
        tool_calls=[call for c in trace.chunks for call in c.calls],
        wall_s=trace.wall_s,
        speech_pieces=row_pieces(chunks),
        max_send_lag_ms=None,
        inputs=None,
    )
    sharing = Sharing(trace.concurrency, trace.slot, trace.start_ms)
    return build_session_row(identity, trace.session, chunks, facts, sharing, playback_delay_ms)


def lexical(tokens: list[int], protocol) -> list[int]:
    """The tokens that are words: no structural, chunk-end or turn-end token."""
    skip = protocol.structural() | {protocol.chunk_eos, protocol.turn_eos}
    return [t for t in tokens if t not in skip]


def forward_rows(trace, run_id: str) -> list[dict]:
    rows, counters = [], {}
    for record in trace.forwards:
        key = (record.chunk_index, record.phase)
        counters[key] = counters.get(key, -1) + 1
        rows.append(
            {
                "run_id": run_id,
                "session_id": trace.session.session_id,
                "chunk_index": record.chunk_index,
                "phase": record.phase,
                "forward_index": counters[key],
                "query_tokens": record.query_tokens,
                "context_tokens": record.context_tokens,
                "tokens_committed": record.tokens_committed,
                "draft_tokens": record.draft_tokens,
                "tree": record.tree,
                "wall_ms": record.wall_ms,
                "charged_ms": record.charged_ms,
                "batch_size": record.batch_size,
                "device_wait_ms": record.device_wait_ms,
                "end_ms": record.end_ms,
            }
        )
    return rows
