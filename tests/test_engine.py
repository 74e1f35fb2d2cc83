import json

import pytest

from ticktock.decoders.ar import ARDecoder
from ticktock.decoders.speclisten import SpeculativeListeningDecoder
from ticktock.world.injection import ToolCallInjector, parse_tool_call
from ticktock.sessions.manifest import load_manifest

from helpers import ConstantToolExecutor, outputs, replay


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
    return replay(adapter, session, decoder, forward_ms=forward_ms, encode_ms=encode_ms)


def test_idle_overrun_is_carried_into_the_next_chunk(fixture_adapter, small_manifest):
    session = load_manifest(small_manifest)[0]
    plain = run(fixture_adapter, session, ARDecoder())
    worker = IdleWorker(forwards_per_window=12)  # 12 x 100 ms > any budget below 1000 ms
    busy = run(fixture_adapter, session, worker)
    assert outputs(busy) == outputs(plain)  # idle work is rolled back
    for before, chunk in zip(busy.chunks, busy.chunks[1:]):
        window = chunk.counters  # the window that drafted this chunk followed the chunk before it
        assert window.window_budget_ms == before.timing.idle_budget_ms
        if before.timing.idle_budget_ms > 0:
            assert window.window_used_ms == pytest.approx(1200.0 + 0.0)
            assert window.window_forwards == 12
            assert chunk.carried_ms == pytest.approx(1200.0 - before.timing.idle_budget_ms)
            assert chunk.timing.latency_ms == pytest.approx(100.0 * len(chunk.output) + chunk.carried_ms)
        else:
            assert chunk.carried_ms == 0.0 and window.window_forwards == 0
    first = busy.chunks[0]  # the wait for the first chunk's audio is an idle window of its duration
    assert worker.windows[0] == (0, 1000.0)
    assert first.counters.window_budget_ms == 1000.0 and first.counters.window_forwards == 12
    assert first.carried_ms == pytest.approx(200.0)
    drafts = [r for r in busy.forwards if r.phase == "draft"]
    assert {i for i, _ in worker.windows} == {r.chunk_index for r in drafts}
    for chunk in busy.chunks:
        mine = [r for r in drafts if r.chunk_index == chunk.span.index]
        assert chunk.counters.window_forwards == len(mine)
        assert chunk.counters.window_query_tokens == sum(r.query_tokens for r in mine)
        post = [r for r in busy.forwards if r.phase == "post_audio" and r.chunk_index == chunk.span.index]
        assert chunk.counters.post_audio_forwards == len(post)


def test_no_idle_work_while_lagging(fixture_adapter, small_manifest):
    session = load_manifest(small_manifest)[0]
    worker = IdleWorker(forwards_per_window=1)
    trace = run(fixture_adapter, session, worker, forward_ms=400.0)  # most chunks miss the deadline
    lagging = [c.span.index + 1 for c in trace.chunks if c.timing.lag_ms > 0]
    assert lagging, "the test needs lagging chunks"
    drafted = {i for i, _ in worker.windows}
    assert not drafted & set(lagging)
    assert all(budget > 0 for _, budget in worker.windows)


class HistoryRecorder(SpeculativeListeningDecoder):
    """Speculative Listening that records, per chunk, what its drafts and its post-audio step were given."""

    def __init__(self, **settings):
        super().__init__(**settings)
        self.seen = {"draft": {}, "post_audio": {}}

    def idle(self, window):
        self.seen["draft"][window.chunk_index] = (window.history, window.next_inputs)
        super().idle(window)

    def decode_chunk(self, step):
        self.seen["post_audio"][step.chunk_index] = (step.history, step.inputs)
        super().decode_chunk(step)


def test_drafts_and_the_post_audio_step_of_a_chunk_see_the_same_history_and_inputs(fixture_adapter, small_manifest):
    session = load_manifest(small_manifest)[0]
    decoder = HistoryRecorder(branches=2, lookup_context=True)
    trace = replay(fixture_adapter, session, decoder, forward_ms=5.0, injector=ToolCallInjector(ConstantToolExecutor()))
    drafted = decoder.seen["draft"]
    assert len(drafted) >= len(trace.chunks) - 1, "the test needs idle windows"
    p = fixture_adapter.protocol
    for index, (history, inputs) in drafted.items():
        post_history, post_inputs = decoder.seen["post_audio"][index]
        assert history == post_history
        assert inputs is post_inputs  # built once, handed to both
        assert history[-len(p.unit_head(index)) - len(inputs.tail):] == tuple(p.unit_head(index) + inputs.tail)
    # the history is the session's text in order: prompt, then per chunk unit head, tail and output
    prompt = fixture_adapter.start_session(session.system_prompt, session.tools)
    expected = list(prompt)
    for chunk in trace.chunks:
        expected += p.unit_head(chunk.span.index) + list(chunk.injected.tokens)
        assert decoder.seen["post_audio"][chunk.span.index][0] == tuple(expected)
        expected += chunk.output


def test_nothing_outside_the_session_state_can_change_its_history(fixture_adapter, small_manifest):
    session = load_manifest(small_manifest)[0]
    decoder = HistoryRecorder()
    replay(fixture_adapter, session, decoder, forward_ms=5.0, max_chunks=3)
    history, _ = decoder.seen["post_audio"][2]
    with pytest.raises((TypeError, AttributeError)):
        history.append(1)  # a tuple: read-only


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


class IdleSleeper(ARDecoder):
    """AR, but its idle window before chunk 2 sleeps (at most 30 s: longer means the watchdog failed)."""

    def idle(self, window):
        if window.chunk_index == 2:
            import time

            time.sleep(30.0)


def test_the_watchdog_stops_a_chunk_past_its_limit_naming_session_chunk_and_phase(fixture_adapter, small_manifest):
    from ticktock.clocks.modeled import CostProfile, ModeledClock
    from ticktock.replay.engine import ReplayEngine
    from ticktock.replay.watchdog import ChunkTimeout, Watchdog
    from ticktock.sessions.audio import load_audio

    session = load_manifest(small_manifest)[0]
    watchdog = Watchdog(0.5)
    engine = ReplayEngine(fixture_adapter, IdleSleeper(), ModeledClock(CostProfile.constant(10.0)), max_chunks=4,
                          watchdog=watchdog)
    with watchdog.running(), pytest.raises(ChunkTimeout) as caught:
        engine.replay(session, load_audio(session.audio_path))
    assert str(caught.value) == (f"session {session.session_id}: chunk 2 (idle window) still running after 0.5 s of "
                                 "wall time (watchdog.chunk_s=0.5)")
    assert engine.where is None and watchdog._deadline is None  # disarmed: nothing fires after the session


class TranscriptReader(ARDecoder):
    """AR that looks for the session's annotations wherever a decoder can reach them: the session it is handed,
    and the replay state behind every step and idle window."""

    def __init__(self):
        super().__init__("transcript_reader")
        self.seen = []

    def start_session(self, session):
        super().start_session(session)
        self.seen.append(("start_session", session.turns, session.expected, session.provenance))

    def idle(self, window):
        told = window.state.session
        self.seen.append(("idle", told.turns, told.expected, told.provenance))

    def decode_chunk(self, step):
        told = step.state.session
        self.seen.append(("step", told.turns, told.expected, told.provenance))
        super().decode_chunk(step)


def test_a_decoder_is_told_no_transcript_and_no_expected_reply(fixture_adapter, small_manifest):
    session = load_manifest(small_manifest)[0]
    assert session.turns  # the manifest has a transcript: the decoder must not see it
    reader = TranscriptReader()
    trace = run(fixture_adapter, session, reader)
    assert outputs(trace) == outputs(run(fixture_adapter, session, ARDecoder()))
    assert {kind for kind, *_ in reader.seen} == {"start_session", "idle", "step"}
    assert all(turns == () and expected == {} and provenance == {} for _, turns, expected, provenance in reader.seen)
    assert [c.span for c in trace.chunks] == session.chunk_spans()  # the engine still replays the annotated spans
