"""Turn a replayed session (``engine.SessionTrace``) into rows of the three result tables.

Onset: a speak chunk starts a model turn when the chunk before it was not a speak chunk or ended the
turn (``<|turn_eos|>``); its ``response_ms`` is the turn's response onset latency. Tool-call latency is
``response_ms`` of every chunk whose decision is a tool call.

Example::

    >>> onset_flags(["listen", "speak", "speak", "listen", "speak"], [False, False, True, False, False])
    [False, True, False, False, True]
"""

from __future__ import annotations

import json
from dataclasses import asdict
from statistics import mean

from ticktock.results.schema import COUNTER_COLUMNS


def onset_flags(kinds: list[str], ends_turn: list[bool]) -> list[bool]:
    flags = []
    for i, kind in enumerate(kinds):
        previous_open = i > 0 and kinds[i - 1] == "speak" and not ends_turn[i - 1]
        flags.append(kind == "speak" and not previous_open)
    return flags


def _mean(values: list[float]) -> float | None:
    return mean(values) if values else None


def chunk_rows(trace, identity: dict, adapter, playback_delay_ms: float = 0.0) -> list[dict]:
    """The chunk rows of a replayed session; its speech placed with a jitter buffer of ``playback_delay_ms``
    (``ticktock.results.playback``; 0: each reply plays as soon as its first piece is ready)."""
    session = trace.session
    protocol = adapter.protocol
    kinds = [c.kind for c in trace.chunks]
    ends = [protocol.turn_eos in c.output for c in trace.chunks]
    onsets = onset_flags(kinds, ends)
    rows = []
    for chunk, onset, ends_turn in zip(trace.chunks, onsets, ends):
        index = chunk.span.index
        rows.append(
            {
                **identity,
                "task": session.task,
                "session_id": session.session_id,
                "chunk_index": index,
                "start_s": chunk.span.start_s,
                "arrival_s": chunk.span.end_s,
                "user_speaking": chunk.span.user_speaking,
                "kind": chunk.kind,
                "num_output_tokens": len(chunk.output),
                "output_token_ids": list(chunk.output),
                "output_text": adapter.decode_tokens(chunk.output),
                "ends_turn": ends_turn,
                "is_onset": onset,
                "injected_text": chunk.injected.text,
                "tool_calls_json": json.dumps(chunk.calls) if chunk.calls else "",
                "post_audio_ms": chunk.timing.latency_ms,
                "post_audio_wall_ms": chunk.post_audio_wall_ms,
                "encode_wall_ms": chunk.encode_wall_ms,
                "carried_ms": chunk.carried_ms,
                "lag_before_ms": chunk.timing.lag_before_ms,
                "lag_ms": chunk.timing.lag_ms,
                "response_ms": chunk.timing.response_ms,
                "missed_deadline": chunk.timing.missed_deadline,
                "concurrency": trace.concurrency,
                "session_slot": trace.slot,
                **{column: getattr(chunk.counters, name) for column, name in COUNTER_COLUMNS.items()},
                **_speech_columns(chunk.speech),
            }
        )
    _place_speech(rows, [chunk.speech for chunk in trace.chunks], playback_delay_ms)
    return rows


SPEECH_COLUMNS = ("talker_text", "audio_s", "audio_sha256", "talker_ms", "speech_ahead", "speech_prepared",
                  "audio_ready_ms", "playback_start_ms", "stall_ms")


def _speech_columns(piece) -> dict:
    if piece is None:
        return dict.fromkeys(SPEECH_COLUMNS)
    return {"talker_text": piece.text, "audio_s": piece.audio_s, "audio_sha256": piece.audio_sha256,
            "talker_ms": piece.talker_ms, "speech_ahead": piece.ahead, "speech_prepared": piece.prepared,
            "audio_ready_ms": None, "playback_start_ms": None, "stall_ms": None}


def _place_speech(rows: list[dict], spoken: list, delay_ms: float = 0.0) -> None:
    """Fill in the playback columns of the chunks that speak (``ticktock.results.playback``); ``spoken``: each chunk's
    ``SpokenPiece`` (None without a talker); ``delay_ms``: the jitter buffer (``playback.place``)."""
    from ticktock.results.playback import Piece, place

    speaking = [(row, piece) for row, piece in zip(rows, spoken)
                if piece is not None and row["kind"] in ("speak", "backchannel")]
    pieces = [Piece(1000.0 * row["arrival_s"], row["response_ms"] + piece.ready_ms, piece.audio_s,
                    row["is_onset"] or row["kind"] != "speak") for row, piece in speaking]
    for (row, _), piece, placed in zip(speaking, pieces, place(pieces, delay_ms)):
        row["audio_ready_ms"], row["playback_start_ms"], row["stall_ms"] = piece.ready_ms, placed.start_ms, placed.stall_ms


SESSION_SPEECH_COLUMNS = ("first_audio_latencies_ms", "mean_first_audio_ms", "num_stalls", "total_stall_ms",
                          "assistant_speech_s", "stalls_per_min")


def playback_summary(chunks: list[dict], delay_ms: float = 0.0) -> dict:
    """The session's speech-out columns from its chunk rows (all null without a talker), its replies played with a
    jitter buffer of ``delay_ms`` (``playback.place``: the same as the chunk rows were placed with)."""
    from ticktock.results.playback import Piece, place, summarize

    if not any(c["talker_text"] is not None for c in chunks):
        return dict.fromkeys(SESSION_SPEECH_COLUMNS)
    pieces = [Piece(1000.0 * c["arrival_s"], c["audio_ready_ms"], c["audio_s"], c["is_onset"] or c["kind"] != "speak")
              for c in chunks if c["audio_ready_ms"] is not None]
    summary = summarize(pieces, place(pieces, delay_ms))
    return dict(zip(SESSION_SPEECH_COLUMNS, (summary.first_audio_ms, _mean(summary.first_audio_ms), summary.num_stalls,
                                             summary.stall_ms, summary.speech_s, summary.stalls_per_minute)))


def session_row(trace, identity: dict, chunks: list[dict], adapter, playback_delay_ms: float = 0.0) -> dict:
    """The session row of a replayed session from its chunk rows; ``playback_delay_ms``: the jitter buffer its speech
    is played with (as for ``chunk_rows``)."""
    session = trace.session
    lags = [c["lag_ms"] for c in chunks]
    onsets = [c["response_ms"] for c in chunks if c["is_onset"]]
    tools = [c["response_ms"] for c in chunks if c["kind"] == "tool"]
    speech = [adapter.decode_tokens(_lexical(c["output_token_ids"], adapter.protocol)) for c in chunks if c["kind"] == "speak"]
    calls = [call for c in trace.chunks for call in c.calls]
    return {
        **identity,
        "task": session.task,
        "session_id": session.session_id,
        "num_chunks": len(chunks),
        "duration_s": session.duration_s,
        "max_lag_ms": max(lags, default=0.0),
        "mean_lag_ms": _mean(lags) or 0.0,
        "num_missed_deadlines": sum(c["missed_deadline"] for c in chunks),
        "onset_latencies_ms": onsets,
        "mean_onset_ms": _mean(onsets),
        "tool_call_latencies_ms": tools,
        "mean_tool_call_ms": _mean(tools),
        "speech_text": "".join(speech).strip(),
        "tool_calls_json": json.dumps(calls),
        "expected_json": json.dumps(session.expected, sort_keys=True),
        "turns_json": json.dumps([_turn_summary(t) for t in session.turns]),
        "replay_wall_s": trace.wall_s,
        "concurrency": trace.concurrency,
        "session_slot": trace.slot,
        "start_ms": trace.start_ms,
        **playback_summary(chunks, playback_delay_ms),
    }


def _lexical(tokens: list[int], protocol) -> list[int]:
    skip = protocol.structural() | {protocol.chunk_eos, protocol.turn_eos}
    return [t for t in tokens if t not in skip]


def _turn_summary(turn) -> dict:
    data = asdict(turn)
    data.pop("words")
    return data


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
