"""A live session's record into rows: the replay's recursion on measured response times (per-unit protocols), replies
measured from the turn's commit (turn-based protocols), tool calls, texts and the playback of audio deltas."""

from __future__ import annotations

from ticktock.endpoints.measure import chunk_rows, measure_units, session_row, toy_record
from ticktock.shipped import resource_path
from ticktock.sessions.manifest import load_manifest
from ticktock.wire import ResponseCreated, ResponseDone

from live_events import audio, called, listen, said, speak

ENDS = [(1000.0 * (t + 1), t) for t in range(4)]


def session():
    return load_manifest(resource_path("manifests/ticktock-mini/manifest.jsonl"), tasks=["llama_questions"])[0]


def test_a_late_unit_delays_the_next_response_but_not_its_post_audio_latency():
    record = toy_record(ENDS, [(1050.0, listen(0)), (4500.0, listen(1)), (4520.0, listen(2)), (4560.0, listen(3))])
    units = measure_units(record, per_unit=True)
    assert [u.response_ms for u in units] == [50.0, 2500.0, 1520.0, 560.0]
    assert [u.lag_ms for u in units] == [0.0, 1500.0, 520.0, 0.0]
    assert [u.post_audio_ms for u in units] == [50.0, 2500.0, 20.0, 40.0]
    assert [u.missed for u in units] == [False, True, True, False]


def test_a_function_call_makes_its_unit_a_tool_unit_timed_from_the_call():
    record = toy_record(ENDS, [(1040.0, listen(0)), (2030.0, called("r1", "c1", "track_order", '{"id": 1}')),
                               (2080.0, speak(1, "r1")), (3050.0, listen(2)), (4050.0, listen(3))])
    units = measure_units(record, per_unit=True)
    assert [u.kind for u in units] == ["listen", "tool", "listen", "listen"]
    assert units[1].calls == [{"function": "track_order", "args": {"id": 1}}] and units[1].onset_ms == 30.0
    assert units[1].response_ms == 80.0 and units[1].ends_turn


def test_rows_have_the_units_text_onset_and_the_playback_of_their_audio():
    record = toy_record(ENDS, [
        (1040.0, listen(0)), (2020.0, ResponseCreated("r1")), (2030.0, speak(1, "r1")),
        (2031.0, said("r1", "Hello")), (2100.0, audio("r1", 0.5)),
        (3040.0, speak(2, "r1")), (3041.0, said("r1", " there")), (3300.0, audio("r1", 0.5)),
        (4030.0, ResponseDone("r1", "completed")), (4031.0, listen(3))])
    units = measure_units(record, per_unit=True)
    labels = {"run_id": "r", "model": "m@h:1", "decoder": "ar", "clock": "live:vllm_omni_duplex"}
    rows = chunk_rows(record, units, session(), labels, per_unit=True)
    assert [r["kind"] for r in rows] == ["listen", "speak", "speak", "listen"]
    assert [r["is_onset"] for r in rows] == [False, True, False, False] and rows[2]["ends_turn"]
    assert [r["output_text"] for r in rows[1:3]] == ["Hello", " there"]
    assert rows[1]["audio_ready_ms"] == 100.0 and rows[1]["playback_start_ms"] == 100.0
    assert rows[2]["stall_ms"] == 700.0  # the first piece played 2100-2600 ms, the second arrived at 3300 ms
    row = session_row(record, units, session(), labels, rows, per_unit=True)
    assert row["speech_text"] == "Hello there" and row["onset_latencies_ms"] == [30.0]
    assert row["first_audio_latencies_ms"] == [100.0] and row["num_stalls"] == 1 and row["total_stall_ms"] == 700.0


def test_a_turn_based_session_is_measured_per_reply_from_the_turns_commit():
    record = toy_record(ENDS, [(1500.0, ResponseCreated("r1")), (2400.0, said("r1", "Hi", transcript=True)),
                               (2450.0, audio("r1", 0.4)), (2900.0, ResponseDone("r1", "completed"))])
    record.turn_ends_ms = [1700.0]
    units = measure_units(record, per_unit=False)
    assert [u.kind for u in units] == ["listen", "speak", "listen", "listen"]
    assert units[1].response_ms == 700.0 and units[1].ends_turn  # from the commit at 1700 ms
    assert all(u.lag_ms is None and u.missed is None for u in units)
    labels = {"run_id": "r", "model": "m@h:1", "decoder": "served", "clock": "live:openai_realtime"}
    rows = chunk_rows(record, units, session(), labels, per_unit=False)
    row = session_row(record, units, session(), labels, rows, per_unit=False)
    assert row["onset_latencies_ms"] == [700.0] and row["first_audio_latencies_ms"] == [750.0]
    assert row["num_missed_deadlines"] is None and row["max_lag_ms"] is None


def test_a_jitter_buffer_trades_a_later_first_audio_for_fewer_stalls():
    events = [(1040.0, listen(0)), (2030.0, speak(1, "r1")), (2100.0, audio("r1", 0.3)),
              (2600.0, audio("r1", 0.3)), (3040.0, listen(2)), (4040.0, listen(3))]
    labels = {"run_id": "r", "model": "m@h:1", "decoder": "ar", "clock": "live:vllm_omni_duplex"}
    rows = {}
    for delay_ms in (0.0, 600.0):
        record = toy_record(ENDS, events)
        units = measure_units(record, per_unit=True)
        chunks = chunk_rows(record, units, session(), labels, per_unit=True, playback_delay_ms=delay_ms)
        rows[delay_ms] = session_row(record, units, session(), labels, chunks, per_unit=True,
                                     playback_delay_ms=delay_ms)
    assert rows[0.0]["first_audio_latencies_ms"] == [100.0] and rows[0.0]["total_stall_ms"] == 200.0
    assert rows[600.0]["first_audio_latencies_ms"] == [600.0] and rows[600.0]["num_stalls"] == 0


def test_a_backchannel_the_server_names_is_a_backchannel_unit():
    record = toy_record(ENDS[:2], [(1040.0, speak(0, "r1", "backchannel")), (1041.0, said("r1", " right")),
                                   (2040.0, listen(1))])
    units = measure_units(record, per_unit=True)
    assert [u.kind for u in units] == ["backchannel", "listen"] and units[0].text == " right"
