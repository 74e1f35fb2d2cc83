"""The result tables of a run, declared once with a version: chunks, sessions and forwards.

Every row carries the run's identity (run_id, model, decoder, clock) so tables never parse file names.
Times are milliseconds on the run's clock (``*_ms``) unless the name says ``wall``.

chunks.parquet, one row per session chunk:
    post_audio_ms       l_t: clock time from the chunk's arrival to its last token, incl. carried_ms
    post_audio_wall_ms  measured wall time of the post-audio work itself (any clock); encode_wall_ms: its audio encoding
    carried_ms          idle-window overrun (drafting for this chunk) carried into l_t
    lag_before_ms       b_{t-1};  lag_ms: b_t;  response_ms: b_{t-1} + l_t
    missed_deadline     b_{t-1} + l_t > D
    num_post_audio_forwards   target forwards after the chunk's audio arrived
    num_draft_tokens    draft tokens offered in those forwards; num_accepted_draft_tokens: accepted
    lookup_hits         post-audio forwards after the first (the audio pass) that accepted >= 1 draft token
    draft_source        source of the draft tokens accepted in the audio pass: silence, runner_up, branch,
                        pool (SL), pld, recycling, lookahead; "none": a draft was offered, nothing accepted;
                        null: no draft was offered
    draft_full_match    the chunk's silence draft was complete and equals the output (SL, oracle probe; else null);
                        with partial-audio hypotheses, the chunk's latest main draft
    first_token_changed the output's first token differs from the silence draft's (SL, oracle probe; else null)
    window_*            the idle window that drafted THIS chunk, before its audio arrived: window_budget_ms
                        (0: none, the previous chunk lagged), window_used_ms charged, window_wall_ms measured,
                        window_forwards (phase "draft") and the window_query_tokens they fed
    context_tokens      positions in the model's cache when the chunk's post-audio work began
    evicted_tokens      positions evicted just before this chunk by the model's context policy (old units)
    concurrency         sessions sharing the device in this run (concurrency.sessions; 1: a session alone)
    session_slot        the session's slot among them (0 .. concurrency - 1)
    device_wait_ms      time the chunk's post-audio work waited for the device while other sessions' work ran
    window_waited_ms    time its idle window let pass with no work, waiting for the chunk's audio to arrive
                        (window_used_ms counts work only)
    prefilled_ms        audio of the chunk fed into the cache early, in its idle window (early_prefill; else 0)
    hypotheses_drafted  drafts made for the chunk in its idle window (SL: main drafts under silence and under
                        partial audio, and first-token branches; else null)
    draft_arrived_fraction  share of real audio (arrived by then) in the hypothesis whose draft the audio pass
                        accepted (0: drafted under silence; null: no draft accepted)
    speech out (runs with a talker; null without one; ``ticktock.results.playback``):
    talker_text         the text the talker spoke for the chunk ("" when it speaks nothing)
    audio_s, audio_sha256   length of its audio, SHA-256 of its float32 samples (byte-equality across decoders)
    talker_ms           clock time of the talker's work after the chunk's text was committed (0: synthesized ahead)
    speech_ahead        its audio was synthesized ahead, in its idle window (speculative synthesis), and used
    speech_prepared     texts synthesized ahead for the chunk in its idle window
    audio_ready_ms      from the chunk's arrival until its audio can play (response_ms + the talker's time to audio)
    playback_start_ms   from the chunk's arrival until its audio starts to play (after the reply's previous piece)
    stall_ms            silence inside the reply just before this piece (ready after the previous piece ended)
    send_lag_ms         live endpoints (``ticktock.endpoints``): how late the unit's latest audio frame left the client
                        after its due time (a loaded client machine); null in replayed runs

sessions.parquet, one row per completed session:
    first_audio_latencies_ms  per reply: from its first chunk's arrival until its first audio plays (talker runs)
    num_stalls, total_stall_ms, stalls_per_min   stalls inside replies longer than 10 ms: count, total, per minute
                        of assistant_speech_s (the audio the talker made); null without a talker
    concurrency, session_slot: as in chunks; start_ms: the session's start on the shared device's time
    max_send_lag_ms     live endpoints: the latest any of the session's audio frames left after its due time
    manifest_sha256     SHA-256 of the session's manifest line (canonical JSON); audio_sha256: of its audio file's
                        bytes; profile_sha256: of the cost profile's costs it was charged by (null: no profile, e.g.
                        the wall clock). A resumed run replays a session whose digests changed
                        (``ticktock.results.fingerprint``); the tables refuse runs that replayed one session id from
                        different inputs, and a run whose sessions were charged by different profiles

forwards.parquet, one row per target forward (phase "post_audio", "draft", or "early_prefill": the chunk's
final audio fed in its idle window; draft and early-prefill rows are attributed to the chunk they are for); batch_size: sessions whose forwards ran in the same device step (charged_ms is
that step's cost); device_wait_ms: time the forward waited for the device while other sessions' work ran;
end_ms: the phase's clock time when the forward finished, from the phase's start (a chunk's post-audio work starts at
arrival_s + lag_before_ms + carried_ms; its idle window opens when the previous chunk's work ends, or at the session's
start for chunk 0), so the forward ran from end_ms - charged_ms to end_ms on the run's clock.
"""

from __future__ import annotations

import pyarrow as pa

SCHEMA_VERSION = 8  # 2: one channel for chunk counters (window_*, lookup_hits); 3: concurrency columns;
                    # 4: arriving audio (window_waited_ms, prefilled_ms, hypotheses_drafted, draft_arrived_fraction);
                    # 5: forwards' end_ms (when each finished within its phase: the case-study timelines);
                    # 6: sessions' profile_sha256 (the cost profile each session was charged by)
                    # 7: speech out (talker_*, audio_*, playback_start_ms, stall_ms; sessions' first audio and stalls)
                    # 8: live endpoints (chunks' send_lag_ms, sessions' max_send_lag_ms; null in replayed runs)

IDENTITY = [
    pa.field("run_id", pa.string()),
    pa.field("model", pa.string()),
    pa.field("decoder", pa.string()),
    pa.field("clock", pa.string()),
]

CHUNKS = pa.schema(
    IDENTITY
    + [
        pa.field("task", pa.string()),
        pa.field("session_id", pa.string()),
        pa.field("chunk_index", pa.int32()),
        pa.field("start_s", pa.float64()),
        pa.field("arrival_s", pa.float64()),
        pa.field("user_speaking", pa.bool_()),
        pa.field("kind", pa.string()),
        pa.field("num_output_tokens", pa.int32()),
        pa.field("output_token_ids", pa.list_(pa.int32())),
        pa.field("output_text", pa.string()),
        pa.field("ends_turn", pa.bool_()),
        pa.field("is_onset", pa.bool_()),
        pa.field("injected_text", pa.string()),
        pa.field("tool_calls_json", pa.string()),
        pa.field("num_post_audio_forwards", pa.int32()),
        pa.field("post_audio_ms", pa.float64()),
        pa.field("post_audio_wall_ms", pa.float64()),
        pa.field("encode_wall_ms", pa.float64()),
        pa.field("carried_ms", pa.float64()),
        pa.field("lag_before_ms", pa.float64()),
        pa.field("lag_ms", pa.float64()),
        pa.field("response_ms", pa.float64()),
        pa.field("missed_deadline", pa.bool_()),
        pa.field("num_draft_tokens", pa.int32()),
        pa.field("num_accepted_draft_tokens", pa.int32()),
        pa.field("lookup_hits", pa.int32()),
        pa.field("draft_source", pa.string()),
        pa.field("draft_full_match", pa.bool_()),
        pa.field("first_token_changed", pa.bool_()),
        pa.field("window_budget_ms", pa.float64()),
        pa.field("window_used_ms", pa.float64()),
        pa.field("window_wall_ms", pa.float64()),
        pa.field("window_forwards", pa.int32()),
        pa.field("window_query_tokens", pa.int32()),
        pa.field("context_tokens", pa.int32()),
        pa.field("evicted_tokens", pa.int32()),
        pa.field("concurrency", pa.int32()),
        pa.field("session_slot", pa.int32()),
        pa.field("device_wait_ms", pa.float64()),
        pa.field("window_waited_ms", pa.float64()),
        pa.field("prefilled_ms", pa.float64()),
        pa.field("hypotheses_drafted", pa.int32()),
        pa.field("draft_arrived_fraction", pa.float64()),
        pa.field("talker_text", pa.string()),
        pa.field("audio_s", pa.float64()),
        pa.field("audio_sha256", pa.string()),
        pa.field("talker_ms", pa.float64()),
        pa.field("speech_ahead", pa.bool_()),
        pa.field("speech_prepared", pa.int32()),
        pa.field("audio_ready_ms", pa.float64()),
        pa.field("playback_start_ms", pa.float64()),
        pa.field("stall_ms", pa.float64()),
        pa.field("send_lag_ms", pa.float64()),
    ]
)

SESSIONS = pa.schema(
    IDENTITY
    + [
        pa.field("task", pa.string()),
        pa.field("session_id", pa.string()),
        pa.field("num_chunks", pa.int32()),
        pa.field("duration_s", pa.float64()),
        pa.field("max_lag_ms", pa.float64()),
        pa.field("mean_lag_ms", pa.float64()),
        pa.field("num_missed_deadlines", pa.int32()),
        pa.field("onset_latencies_ms", pa.list_(pa.float64())),
        pa.field("mean_onset_ms", pa.float64()),
        pa.field("tool_call_latencies_ms", pa.list_(pa.float64())),
        pa.field("mean_tool_call_ms", pa.float64()),
        pa.field("speech_text", pa.string()),
        pa.field("tool_calls_json", pa.string()),
        pa.field("expected_json", pa.string()),
        pa.field("turns_json", pa.string()),
        pa.field("replay_wall_s", pa.float64()),
        pa.field("concurrency", pa.int32()),
        pa.field("session_slot", pa.int32()),
        pa.field("start_ms", pa.float64()),
        pa.field("manifest_sha256", pa.string()),
        pa.field("audio_sha256", pa.string()),
        pa.field("profile_sha256", pa.string()),
        pa.field("first_audio_latencies_ms", pa.list_(pa.float64())),
        pa.field("mean_first_audio_ms", pa.float64()),
        pa.field("num_stalls", pa.int32()),
        pa.field("total_stall_ms", pa.float64()),
        pa.field("assistant_speech_s", pa.float64()),
        pa.field("stalls_per_min", pa.float64()),
        pa.field("max_send_lag_ms", pa.float64()),
    ]
)

FORWARDS = pa.schema(
    [
        pa.field("run_id", pa.string()),
        pa.field("session_id", pa.string()),
        pa.field("chunk_index", pa.int32()),
        pa.field("phase", pa.string()),
        pa.field("forward_index", pa.int32()),
        pa.field("query_tokens", pa.int32()),
        pa.field("context_tokens", pa.int32()),
        pa.field("tokens_committed", pa.int32()),
        pa.field("draft_tokens", pa.int32()),
        pa.field("tree", pa.bool_()),
        pa.field("wall_ms", pa.float64()),
        pa.field("charged_ms", pa.float64()),
        pa.field("batch_size", pa.int32()),
        pa.field("device_wait_ms", pa.float64()),
        pa.field("end_ms", pa.float64()),
    ]
)

TABLES = {"chunks": CHUNKS, "sessions": SESSIONS, "forwards": FORWARDS}
# chunks.parquet column <- ChunkCounters field: the counters' one way into the rows
COUNTER_COLUMNS = {
    "num_post_audio_forwards": "post_audio_forwards",
    "num_draft_tokens": "draft_tokens",
    "num_accepted_draft_tokens": "accepted_draft_tokens",
    "lookup_hits": "lookup_hits",
    "draft_source": "draft_source",
    "draft_full_match": "draft_full_match",
    "first_token_changed": "first_token_changed",
    "window_budget_ms": "window_budget_ms",
    "window_used_ms": "window_used_ms",
    "window_wall_ms": "window_wall_ms",
    "window_forwards": "window_forwards",
    "window_query_tokens": "window_query_tokens",
    "context_tokens": "context_tokens",
    "evicted_tokens": "evicted_tokens",
    "device_wait_ms": "device_wait_ms",
    "window_waited_ms": "window_waited_ms",
    "prefilled_ms": "prefilled_ms",
    "hypotheses_drafted": "hypotheses_drafted",
    "draft_arrived_fraction": "draft_arrived_fraction",
}


def with_version(schema: pa.Schema) -> pa.Schema:
    return schema.with_metadata({b"ticktock_schema_version": str(SCHEMA_VERSION).encode()})
