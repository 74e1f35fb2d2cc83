"""The ``openai_realtime`` protocol: the OpenAI Realtime GA turn-based vocabulary, against ``ticktock serve`` without
``duplex=1`` (its turn mode): user turns committed where the manifest's turns end, replies measured from the commit."""

from __future__ import annotations

import json

import pyarrow.parquet as pq

from live_runs import TWO_SESSIONS, live_run, served
from ticktock.endpoints.openai_realtime import OpenAIRealtime


def test_the_protocol_commits_each_turn_and_asks_for_the_answer():
    protocol = OpenAIRealtime()
    assert not protocol.per_unit and protocol.url("ws://h:1/v1/realtime") == "ws://h:1/v1/realtime"
    assert [e["type"] for e in protocol.turn_ended()] == ["input_audio_buffer.commit", "response.create"]
    assert protocol.input_ended() == [] and protocol.played(100.0, "r") == []


def test_a_turn_based_live_run_hears_the_same_replies_measured_per_reply(tmp_path):
    with served("decoder=ar") as url:
        summary = live_run(tmp_path / "turns", f"{url}/v1/realtime", "protocol=openai_realtime", *TWO_SESSIONS,
                           "model.quiet_s=1.5")
        duplex = live_run(tmp_path / "duplex", f"{url}/v1/realtime", *TWO_SESSIONS)
    assert summary.sessions == 2 and summary.failed == 0 and duplex.sessions == 2
    sessions = {name: pq.read_table(tmp_path / name / "sessions.parquet").to_pandas().set_index("session_id")
                for name in ("turns", "duplex")}
    assert dict(sessions["turns"]["speech_text"]) == dict(sessions["duplex"]["speech_text"])
    assert any(text for text in sessions["turns"]["speech_text"])
    turns = pq.read_table(tmp_path / "turns" / "chunks.parquet").to_pandas()
    assert (turns["clock"] == "live:openai_realtime").all() and turns["lag_ms"].isna().all()
    assert turns["missed_deadline"].isna().all()
    onsets = [o for row in sessions["turns"]["onset_latencies_ms"] for o in row]
    assert onsets and all(o > 0 for o in onsets)
    meta = json.loads((tmp_path / "turns" / "run.json").read_text())
    assert meta["clock"]["per_unit"] is False and meta["status"] == "complete"
