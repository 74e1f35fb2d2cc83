"""Live sessions at once (``concurrency.sessions=2``) against ``ticktock serve``, on FDB v3 sessions whose model calls a
tool: the client's tool world answers the server's function calls, and the units decide as the replay's do."""

from __future__ import annotations

import json

import pyarrow.parquet as pq

from live_runs import live_run, served

FDB_V3 = ("task.tasks=[fdb_v3]", "limit.sessions=2", "limit.chunks=10")


def test_two_live_sessions_at_once_call_tools_answered_by_the_tool_world(tmp_path):
    from ticktock.replay.config import compose_run
    from ticktock.replay.runner import run

    with served("decoder=ar") as url:
        summary = live_run(tmp_path / "live", f"{url}/v1/realtime", *FDB_V3, "concurrency.sessions=2")
    assert summary.sessions == 2 and summary.failed == 0
    run(compose_run("ar", "embedded", None, list(FDB_V3)), tmp_path / "replayed")
    live, replayed = (pq.read_table(tmp_path / name / "chunks.parquet").to_pandas()
                      .sort_values(["session_id", "chunk_index"]).reset_index(drop=True)
                      for name in ("live", "replayed"))
    assert list(live["kind"]) == list(replayed["kind"]) and "tool" in set(live["kind"])
    assert set(live["concurrency"]) == {2} and set(live["session_slot"]) == {0, 1}
    tools = live[live["kind"] == "tool"]
    assert all(json.loads(calls) for calls in tools["tool_calls_json"])
    assert all(text.startswith("{") for text in tools["injected_text"])  # the tool world's JSON answers
    sessions = pq.read_table(tmp_path / "live" / "sessions.parquet").to_pandas()
    assert all(len(latencies) >= 1 and min(latencies) > 0 for latencies in sessions["tool_call_latencies_ms"])
    assert sorted(sessions["start_ms"])[1] > 0  # the second session started after its stagger offset
