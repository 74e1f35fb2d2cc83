"""Golden values for Table 2, the tool table, Table 3, Table 4 and Table 5 on hand-made runs."""

import math

import pytest
from table_runs import chunk, write_run

from ticktock.tables import ChunkSetMismatch, TablesError, load_results
from ticktock.tables.compute import (ablation_table, latency_table, max_lag_table, speak_speedup_table,
                                     tool_speedup_table)


def speak(s, i, ms, tokens, forwards, **kw):
    return chunk(s, i, kind="speak", post_audio_ms=ms, num_output_tokens=tokens, num_post_audio_forwards=forwards, **kw)


def tool(s, i, ms, tokens, forwards, task="fdb_v3", **kw):
    return chunk(s, i, kind="tool", task=task, post_audio_ms=ms, num_output_tokens=tokens,
                 num_post_audio_forwards=forwards, **kw)


PAPER_MODEL = "gander"  # a model the paper measured: the paper's columns stand beside it (paper_numbers.yaml models)


@pytest.fixture
def pair(tmp_path):
    """AR: speak [300, 500] ms, 3 and 5 tokens at one per forward; SL: [100, 100] ms, one forward each."""
    write_run(tmp_path / "ar", "ar", [speak("s1", 0, 300.0, 3, 3), speak("s1", 1, 500.0, 5, 5),
                                      chunk("s1", 2, kind="listen", post_audio_ms=50.0),
                                      tool("t1", 0, 2000.0, 40, 40), tool("t1", 1, 1000.0, 20, 20),
                                      tool("q1", 0, 800.0, 8, 8, task="llama_questions")], model=PAPER_MODEL)
    write_run(tmp_path / "sl", "speclisten", [speak("s1", 0, 100.0, 3, 1), speak("s1", 1, 100.0, 5, 1, ),
                                              chunk("s1", 2, kind="listen", post_audio_ms=999.0),
                                              tool("t1", 0, 100.0, 40, 2), tool("t1", 1, 200.0, 20, 3),
                                              tool("q1", 0, 1.0, 8, 1, task="llama_questions")], model=PAPER_MODEL)
    return tmp_path


def records(table, columns):
    return table.frame[columns].to_dict("records")


def test_table2_speak_speedup_and_mat(pair):
    table = speak_speedup_table(load_results([str(pair)]))
    assert records(table, ["decoder", "chunks", "ar ms", "ms", "speedup", "#MAT"]) == [
        {"decoder": "ar", "chunks": 2, "ar ms": 400.0, "ms": 400.0, "speedup": 1.0, "#MAT": 1.0},
        {"decoder": "speclisten", "chunks": 2, "ar ms": 400.0, "ms": 100.0, "speedup": 4.0, "#MAT": 4.0},
    ]
    assert table.formatted()["speedup"].tolist() == ["1.00", "4.00"]
    assert table.frame["paper speedup"].tolist() == ["1.00", "2.60-2.76"]
    assert any("modeled:test-profile" in p and "DERIVED for tests" in p and "Test GPU" in p for p in table.provenance)


def test_the_speak_subset_is_the_baselines_chunks(tmp_path):
    write_run(tmp_path / "ar", "ar", [speak("s", 0, 300.0, 3, 3), chunk("s", 1, kind="listen", post_audio_ms=10.0)])
    # the method's chunk 0 is not a speak chunk and its chunk 1 is: the baseline's kinds decide
    write_run(tmp_path / "sl", "speclisten", [chunk("s", 0, kind="listen", post_audio_ms=150.0, num_output_tokens=3),
                                              speak("s", 1, 1.0, 1, 1)])
    table = speak_speedup_table(load_results([str(tmp_path)]))
    assert records(table, ["decoder", "chunks", "speedup", "#MAT"])[1] == {"decoder": "speclisten", "chunks": 1,
                                                                           "speedup": 2.0, "#MAT": 3.0}


def test_tool_table_uses_fdb_v3_tool_chunks_only(pair):
    table = tool_speedup_table(load_results([str(pair)]))
    assert records(table, ["decoder", "chunks", "ar ms", "ms", "speedup", "#MAT"]) == [
        {"decoder": "ar", "chunks": 2, "ar ms": 1500.0, "ms": 1500.0, "speedup": 1.0, "#MAT": 1.0},
        {"decoder": "speclisten", "chunks": 2, "ar ms": 1500.0, "ms": 150.0, "speedup": 10.0, "#MAT": 12.0},
    ]


def test_a_missing_chunk_is_an_error_naming_runs_and_chunks(pair):
    write_run(pair / "sl", "speclisten", [speak("s1", 0, 100.0, 3, 1), tool("t1", 0, 1.0, 1, 1)], model=PAPER_MODEL)
    with pytest.raises(ChunkSetMismatch) as err:
        speak_speedup_table(load_results([str(pair)]))
    message = str(err.value)
    assert "speclisten run(s) " + str(pair / "sl") in message and "ar run(s) " + str(pair / "ar") in message
    assert "lacks 1 of the 2 speak chunks" in message and "session s1 chunk 1" in message
    assert isinstance(err.value, TablesError)


def test_a_setup_without_baseline_gets_a_note_not_a_crash(tmp_path):
    write_run(tmp_path / "ar", "ar", [speak("s", 0, 300.0, 3, 3)])
    write_run(tmp_path / "sl_t1", "speclisten", [speak("s", 0, 100.0, 3, 1)], temperature=1.0)
    table = speak_speedup_table(load_results([str(tmp_path)]))
    assert table.frame["decoder"].tolist() == ["ar"] and table.frame["T"].tolist() == [0.0]
    assert any("no ar run for setup m / modeled:test-profile" in n and "T=1" in n for n in table.notes)


def test_table3_max_lag_on_fdb_v3_sessions(tmp_path):
    lags = {"ar": [0.0, 500.0, 1500.0, 2500.0], "speclisten": [0.0, 0.0, 0.0, 100.0]}
    for decoder, values in lags.items():
        sessions = [{"session_id": f"f{i}", "task": "fdb_v3", "max_lag_ms": v} for i, v in enumerate(values)]
        sessions.append({"session_id": "q", "task": "llama_questions", "max_lag_ms": 9999.0})
        write_run(tmp_path / decoder, decoder, [chunk(s["session_id"], 0) for s in sessions], sessions, model=PAPER_MODEL)
    table = max_lag_table(load_results([str(tmp_path)]))
    rows = records(table, ["decoder", "sessions", "mean max lag ms", "max max lag ms", "sessions > 1 s", "mean vs ar"])
    assert rows[0] == {"decoder": "ar", "sessions": 4, "mean max lag ms": 1125.0, "max max lag ms": 2500.0,
                       "sessions > 1 s": 0.5, "mean vs ar": 0.0}
    assert rows[1]["mean max lag ms"] == 25.0 and rows[1]["sessions > 1 s"] == 0.0
    assert rows[1]["mean vs ar"] == pytest.approx(25 / 1125 - 1)
    assert table.frame["paper mean ms"].tolist() == ["430-568", "0-55"]


def test_table4_ablation_speak_on_llama_questions_and_tool_on_fdb_v3(tmp_path):
    def chunks(speak_ms, tool_ms):
        return [speak("q", 0, speak_ms, 4, 4), speak("w", 0, 1.0, 1, 1, task="web_questions"),
                tool("t", 0, tool_ms, 10, 10)]
    write_run(tmp_path / "ar", "ar", chunks(400.0, 1000.0))
    write_run(tmp_path / "sil", "speclisten_silence", chunks(200.0, 500.0))
    write_run(tmp_path / "sl", "speclisten", chunks(100.0, 100.0))
    write_run(tmp_path / "pld", "pld", chunks(300.0, 900.0))
    table = ablation_table(load_results([str(tmp_path)]))
    assert records(table, ["decoder", "speak tasks", "speak chunks", "speak speedup", "tool speedup"]) == [
        {"decoder": "ar", "speak tasks": "llama_questions", "speak chunks": 1, "speak speedup": 1.0, "tool speedup": 1.0},
        {"decoder": "speclisten_silence", "speak tasks": "llama_questions", "speak chunks": 1, "speak speedup": 2.0,
         "tool speedup": 2.0},
        {"decoder": "speclisten", "speak tasks": "llama_questions", "speak chunks": 1, "speak speedup": 4.0,
         "tool speedup": 10.0},
    ]


def test_table5_onset_is_a_mean_over_task_means_and_tool_latency_on_fdb_v3(tmp_path):
    rows = [chunk("a1", 0, task="a", is_onset=True, response_ms=100.0),
            chunk("a1", 1, task="a", is_onset=False, response_ms=5000.0),
            chunk("a2", 0, task="a", is_onset=True, response_ms=300.0),
            chunk("b1", 0, task="b", is_onset=True, response_ms=50.0),
            chunk("f1", 0, task="fdb_v3", kind="tool", response_ms=1000.0),
            chunk("f1", 1, task="fdb_v3", kind="tool", response_ms=3000.0),
            chunk("b1", 1, task="b", kind="tool", response_ms=9000.0)]
    write_run(tmp_path / "ar", "ar", rows, model=PAPER_MODEL)
    table = latency_table(load_results([str(tmp_path)]))
    assert records(table, ["onset ms", "tasks", "onsets", "tool-call ms", "tool chunks"]) == [
        {"onset ms": 125.0, "tasks": 2, "onsets": 3, "tool-call ms": 2000.0, "tool chunks": 2}]
    assert table.frame["paper onset ms"].tolist() == ["417-1089"]
    assert table.frame["paper tool-call ms"].tolist() == ["1827-2623"]


def test_no_tool_chunks_leave_a_note(tmp_path):
    write_run(tmp_path / "ar", "ar", [speak("s", 0, 300.0, 3, 3)])
    table = tool_speedup_table(load_results([str(tmp_path)]))
    assert table.frame.empty and any("has no tool chunks on fdb_v3" in n for n in table.notes)
    assert math.isnan(latency_table(load_results([str(tmp_path)])).frame["tool-call ms"][0])
