import json

import pytest

from ticktock.audio import load_audio
from ticktock.clocks.modeled import CostProfile, ModeledClock
from ticktock.decoders.ar import ARDecoder
from ticktock.decoders.selection import TokenSelector
from ticktock.engine import ReplayEngine
from ticktock.injection import ToolCallInjector, parse_tool_call
from ticktock.manifest import load_manifest


class IdleWorker(ARDecoder):
    """AR plus a fixed number of throw-away forwards in every idle window (restored afterwards)."""

    def __init__(self, forwards_per_window: int):
        super().__init__("idle_worker")
        self.forwards_per_window = forwards_per_window
        self.windows = []

    def idle(self, window):
        self.windows.append((window.chunk_index, window.budget_ms))
        state = window.adapter.snapshot()
        for _ in range(self.forwards_per_window):
            window.forward(window.next_inputs.segments(window.silence()))
        window.adapter.restore(state)


def run(adapter, session, decoder, forward_ms=100.0, encode_ms=0.0):
    clock = ModeledClock(CostProfile.constant(forward_ms, encode_ms))
    engine = ReplayEngine(adapter, decoder, clock, TokenSelector(adapter.protocol))
    return engine.replay(session, load_audio(session.audio_path))


def test_idle_overrun_is_carried_into_the_next_chunk(fixture_adapter, small_manifest):
    session = load_manifest(small_manifest)[0]
    plain = run(fixture_adapter, session, ARDecoder())
    worker = IdleWorker(forwards_per_window=12)  # 12 x 100 ms > any budget below 1000 ms
    busy = run(fixture_adapter, session, worker)
    assert [c.output for c in busy.chunks] == [c.output for c in plain.chunks]  # idle work is rolled back
    for before, chunk in zip(busy.chunks, busy.chunks[1:]):
        if before.idle_budget_ms > 0:
            assert before.idle_used_ms == pytest.approx(1200.0 + 0.0)
            assert chunk.carried_ms == pytest.approx(1200.0 - before.idle_budget_ms)
            assert chunk.timing.latency_ms == pytest.approx(100.0 * len(chunk.output) + chunk.carried_ms)
        else:
            assert chunk.carried_ms == 0.0
    first = busy.chunks[0]  # the wait for the first chunk's audio is an idle window of its duration
    assert worker.windows[0] == (0, 1000.0)
    assert first.carried_ms == pytest.approx(200.0)
    drafts = [r for r in busy.forwards if r.phase == "draft"]
    assert {i for i, _ in worker.windows} == {r.chunk_index for r in drafts}


def test_no_idle_work_while_lagging(fixture_adapter, small_manifest):
    session = load_manifest(small_manifest)[0]
    worker = IdleWorker(forwards_per_window=1)
    trace = run(fixture_adapter, session, worker, forward_ms=400.0)  # most chunks miss the deadline
    lagging = [c.span.index + 1 for c in trace.chunks if c.timing.lag_ms > 0]
    assert lagging, "the test needs lagging chunks"
    drafted = {i for i, _ in worker.windows}
    assert not drafted & set(lagging)
    assert all(budget > 0 for _, budget in worker.windows)


class Echo:
    def __init__(self):
        self.calls = []

    def respond(self, call):
        self.calls.append(call)
        return json.dumps({"echo": call["function"]})


def test_tool_calls_are_answered_in_the_next_chunk(fixture_adapter):
    a = fixture_adapter
    p = a.protocol
    output = [p.tool_call_open, *a.encode_text('{"name": "track_order", "arguments": {"order_id": "7"}}'),
              p.tool_call_close, p.tool_call_open, *a.encode_text("{broken"), p.tool_call_close, p.chunk_eos]
    executor = Echo()
    injection = ToolCallInjector(executor).after_chunk(a, output)
    assert executor.calls == [{"function": "track_order", "args": {"order_id": "7"}}]
    assert injection.calls[1] is None
    text = a.decode_tokens(injection.tokens)
    assert text.count("<tool_response>") == 2 and '{"echo": "track_order"}' in text and "invalid tool call" in text
    assert ToolCallInjector(None).after_chunk(a, output).tokens == []


def test_parse_tool_call_forms():
    assert parse_tool_call('{"function": "f", "args": {"a": 1}}') == {"function": "f", "args": {"a": 1}}
    assert parse_tool_call('{"name": "f"}') == {"function": "f", "args": {}}
    assert parse_tool_call('[1, 2]') is None and parse_tool_call('{"name": 3}') is None
