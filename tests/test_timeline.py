import pytest

from ticktock.replay.timeline import advance, overrun
from ticktock.results.rows import onset_flags


def replay(latencies, deadline=1000.0):
    lag, out = 0.0, []
    for latency in latencies:
        timing = advance(lag, latency, deadline)
        out.append(timing)
        lag = timing.lag_ms
    return out


def test_long_tool_call_makes_next_two_chunks_late():
    # chunk 1 is a 2600 ms tool call; chunks 2 and 3 are 20 ms listen chunks.
    t = replay([120.0, 2600.0, 20.0, 20.0, 20.0])
    assert [x.lag_ms for x in t] == [0.0, 1600.0, 620.0, 0.0, 0.0]
    assert [x.missed_deadline for x in t] == [False, True, True, False, False]
    assert [x.response_ms for x in t] == [120.0, 2600.0, 1620.0, 640.0, 20.0]
    assert [x.idle_budget_ms for x in t] == [880.0, 0.0, 0.0, 360.0, 980.0]


def test_exactly_on_the_deadline_is_not_a_miss():
    t = advance(0.0, 1000.0, 1000.0)
    assert not t.missed_deadline and t.lag_ms == 0.0 and t.idle_budget_ms == 0.0


def test_lag_recursion_with_a_longer_first_chunk():
    # MiniCPM-o: the first chunk is 1.035 s; the deadline of chunk t is the duration of chunk t+1.
    assert advance(0.0, 1030.0, 1000.0).lag_ms == pytest.approx(30.0)


def test_overrun_only_counts_work_past_the_budget():
    assert overrun(300.0, 250.0) == 50.0
    assert overrun(100.0, 250.0) == 0.0


def test_onset_is_the_first_speak_chunk_of_each_model_turn():
    kinds = ["listen", "speak", "speak", "speak", "speak", "tool", "speak", "listen"]
    ends = [False, False, True, False, False, False, True, False]
    # chunk 3 follows a chunk that ended the turn: a new turn starts there.
    assert onset_flags(kinds, ends) == [False, True, False, True, False, False, True, False]
