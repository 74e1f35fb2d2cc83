"""Table 1: the composition of the replayed benchmark, from hand-made runs."""

import json

from table_runs import chunk, write_run

from ticktock.tables import load_results
from ticktock.tables.compute import composition_table


def test_table1_counts_every_session_once_from_hand_made_runs(tmp_path):
    calls = json.dumps({"tool_calls": [{"name": "a"}, {"name": "b"}]})
    chunks = [chunk("t1", 0, task="fdb_v3", user_speaking=True), chunk("t1", 1, task="fdb_v3"),
              chunk("t2", 0, task="fdb_v3", user_speaking=True), chunk("q1", 0, user_speaking=False)]
    sessions = [{"session_id": "t1", "task": "fdb_v3", "duration_s": 2.0, "expected_json": calls},
                {"session_id": "t2", "task": "fdb_v3", "duration_s": 1.0, "expected_json": "{}"},
                {"session_id": "q1", "task": "llama_questions", "duration_s": 4.0}]
    write_run(tmp_path / "ar", "ar", chunks, sessions)
    write_run(tmp_path / "sl", "speclisten", chunks, sessions)  # the same sessions again: counted once
    table = composition_table(load_results([str(tmp_path)]))
    rows = table.frame.to_dict("records")
    assert [{k: r[k] for k in ("task", "sessions", "chunks", "user speech", "median duration s", "expected tool calls")}
            for r in rows[:3]] == [
        {"task": "fdb_v3", "sessions": 2, "chunks": 3, "user speech": 2 / 3, "median duration s": 1.5,
         "expected tool calls": 2},
        {"task": "llama_questions", "sessions": 1, "chunks": 1, "user speech": 0.0, "median duration s": 4.0,
         "expected tool calls": 0},
        {"task": "all (2 tasks)", "sessions": 3, "chunks": 4, "user speech": 0.5, "median duration s": 2.0,
         "expected tool calls": 2},
    ]
    assert rows[3]["sessions"] == 760 and rows[3]["chunks"] == 15883 and rows[0]["source"].startswith("test (")
