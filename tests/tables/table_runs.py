"""Hand-made run directories for the table tests: real schema and version metadata, tiny made-up rows.

``write_run(folder, decoder, chunks, sessions, forwards=...)`` fills every schema column the test does not give.
Chunk dicts need at least session_id and chunk_index; session dicts at least session_id; forward dicts session_id,
chunk_index, end_ms and charged_ms. ``concurrency`` and
``draft_policy`` go into run.json's config as the runner writes them (default: one session alone on the device,
under the default draft policy, which then does not apply); rows get the run's N in their ``concurrency`` column.
The run id is ``<model>-<decoder>-<temperature>``, then ``-<folder name>`` unless the folder is named after the
decoder (one run id per folder, as the tables require), or ``run_id``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from ticktock.results.schema import SCHEMA_VERSION, TABLES

CHUNK_DEFAULTS = {
    "task": "llama_questions", "start_s": 0.0, "arrival_s": 1.0, "user_speaking": False, "kind": "listen",
    "num_output_tokens": 1, "output_token_ids": [7], "output_text": "", "ends_turn": False, "is_onset": False,
    "injected_text": "", "tool_calls_json": "", "num_post_audio_forwards": 1, "post_audio_ms": 100.0,
    "post_audio_wall_ms": 1.0, "carried_ms": 0.0, "lag_before_ms": 0.0, "lag_ms": 0.0, "response_ms": 100.0,
    "missed_deadline": False, "num_draft_tokens": 0, "num_accepted_draft_tokens": 0, "lookup_hits": 0,
    "draft_source": None, "draft_full_match": None, "first_token_changed": None, "window_budget_ms": 900.0,
    "window_used_ms": 0.0, "window_wall_ms": 0.0, "window_forwards": 0, "window_query_tokens": 0,
    "context_tokens": 0, "evicted_tokens": 0, "session_slot": 0, "device_wait_ms": 0.0, "window_waited_ms": 0.0,
    "prefilled_ms": 0.0,
}
FORWARD_DEFAULTS = {"phase": "post_audio", "forward_index": 0, "query_tokens": 1, "context_tokens": 0,
                    "tokens_committed": 1, "draft_tokens": 0, "tree": False, "wall_ms": 1.0, "batch_size": 1,
                    "device_wait_ms": 0.0}
SESSION_DEFAULTS = {
    "task": "llama_questions", "num_chunks": 1, "duration_s": 1.0, "max_lag_ms": 0.0, "mean_lag_ms": 0.0,
    "num_missed_deadlines": 0, "onset_latencies_ms": [], "mean_onset_ms": None, "tool_call_latencies_ms": [],
    "mean_tool_call_ms": None, "speech_text": "", "tool_calls_json": "[]", "expected_json": "{}", "turns_json": "[]",
    "replay_wall_s": 0.1, "manifest_sha256": "0" * 64, "audio_sha256": "1" * 64, "session_slot": 0, "start_ms": 0.0,
}
MODELED = {"name": "modeled", "profile": "test-profile", "profile_device": "Test GPU (derived)",
           "profile_model": "test", "profile_provenance": "DERIVED for tests"}
ALONE = {"sessions": 1, "batching": False, "max_batch": None, "stagger": "random"}
POLICIES = {"expected_savings": {"name": "expected_savings", "_target_": "ticktock.scheduling.expected_savings.ExpectedSavings",
                                 "speech_dbfs": -45.0},
            "round_robin": {"name": "round_robin", "_target_": "ticktock.scheduling.round_robin.RoundRobin"}}


def concurrency(sessions: int, batching: bool = False, max_batch: int | None = None, stagger="random",
                batch_encodings: bool | None = None) -> dict:
    """run.json's ``config.concurrency`` for N sessions sharing the device (``batch_encodings`` written only when
    given: a run written before it existed has no such key)."""
    shared = {"sessions": sessions, "batching": batching, "max_batch": max_batch, "stagger": stagger}
    return shared if batch_encodings is None else {**shared, "batch_encodings": batch_encodings}


def chunk(session_id: str, index: int, **values) -> dict:
    return {"session_id": session_id, "chunk_index": index, **values}


def write_run(folder: Path, decoder: str, chunks: list[dict], sessions: list[dict] | None = None, *,
              model: str = "m", temperature: float = 0.0, seed: int = 0, clock: dict | None = None,
              version: int = SCHEMA_VERSION, status: str = "complete", sharing: dict | None = None,
              draft_policy: str | dict = "expected_savings", forwards: list[dict] | None = None,
              run_id: str | None = None) -> Path:
    """A complete run directory with run.json and the three parquet tables (``sharing``: config.concurrency)."""
    folder.mkdir(parents=True, exist_ok=True)
    clock = clock or MODELED
    sharing = sharing or ALONE
    policy = POLICIES[draft_policy] if isinstance(draft_policy, str) else draft_policy
    shared = {"concurrency": sharing["sessions"]}
    run_id = run_id or f"{model}-{decoder}-{temperature}" + ("" if folder.name == decoder else f"-{folder.name}")
    identity = {"run_id": run_id, "model": model, "decoder": decoder, "clock": clock["name"]}
    if sessions is None:
        sessions = [{"session_id": s, "task": next(c.get("task", "llama_questions") for c in chunks if c["session_id"] == s)}
                    for s in dict.fromkeys(c["session_id"] for c in chunks)]
    rows = {
        "chunks": [{**identity, **CHUNK_DEFAULTS, **shared, **c} for c in chunks],
        "sessions": [{**identity, **SESSION_DEFAULTS, "profile_sha256": clock.get("profile_sha256"), **shared, **s}
                     for s in sessions],
        "forwards": [{"run_id": identity["run_id"], **FORWARD_DEFAULTS, **f} for f in forwards or []],
    }
    for name, schema in TABLES.items():
        versioned = schema.with_metadata({b"ticktock_schema_version": str(version).encode()})
        table = pa.Table.from_pylist([{k: r.get(k) for k in schema.names} for r in rows[name]], schema=versioned)
        pq.write_table(table, folder / f"{name}.parquet")
    meta = {
        "run_id": identity["run_id"], "schema_version": version, "status": status, "clock": clock,
        "config": {"model": {"name": model}, "decoder": {"name": decoder}, "clock": {"name": clock["name"]},
                   "sampling": {"temperature": temperature, "top_k": 0, "top_p": 1.0}, "seed": seed,
                   "task": {"name": "test"}, "concurrency": sharing, "draft_policy": policy},
        "environment": {"cpu": "Test CPU", "cuda_device": None, "model": {"name": model, "architecture": "Tiny"}},
        "decoder": {"name": decoder},
    }
    (folder / "run.json").write_text(json.dumps(meta))
    return folder
