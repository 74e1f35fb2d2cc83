"""The oracle policy (training targets) and the training-sequence layout, on hand-made sessions."""

from pathlib import Path

import pytest

from ticktock.adapters.fixture import build_fixture_adapter
from ticktock.embedded.data import AUDIO, IGNORE, layout
from ticktock.embedded.targets import ChunkPlan, call_groups, plan_session, speak_units, tool_call_text
from ticktock.manifest import Session, Turn
from ticktock.mock_tools import MockToolExecutor


@pytest.fixture(scope="module")
def adapter():
    return build_fixture_adapter(seed=0, max_text_tokens=8, max_tool_tokens=200)


def session(turns, script, duration=12.0):
    return Session("s", "t", Path("x.flac"), duration, turns=tuple(turns), expected={"script": script})


def labels_of(plans):
    return [p.label for p in plans]


def test_reply_starts_after_half_a_second_of_silence_and_is_split_into_k_token_units(adapter):
    p = adapter.protocol
    turns = [Turn("user", "request", "q", 1.0, 2.7, (), True)]
    plans = plan_session(session(turns, [{"turn": 0, "action": "speak", "text": "abcdefghijklm"}]), adapter, MockToolExecutor())
    # 2.7 + 0.5 = 3.2 -> the first chunk ending at or after 3.2 is chunk 3 ([3, 4)).
    assert labels_of(plans)[:6] == ["listen", "listen", "listen", "speak", "speak", "listen"]
    units = speak_units(adapter, "abcdefghijklm")  # " abcdefghijklm" = 14 characters = 8 + 6
    assert plans[3].output == units[0] == [p.speak, *adapter.encode_text(" abcdefg"), p.chunk_eos]
    assert plans[4].output == [p.speak, *adapter.encode_text("hijklm"), p.turn_eos, p.chunk_eos]


def test_barge_in_interrupts_then_the_new_question_is_answered(adapter):
    turns = [Turn("user", "request", "q", 1.0, 2.0, (), True), Turn("user", "interruption", "q2", 4.5, 6.0, (), True)]
    script = [{"turn": 0, "action": "speak", "text": "x" * 60}, {"turn": 1, "action": "stop"},
              {"turn": 1, "action": "speak", "text": "ok"}]
    plans = plan_session(session(turns, script), adapter, MockToolExecutor())
    # reply from chunk 2 (2.0 + 0.5 <= 3.0); barge-in heard by 4.8 -> interrupt in chunk 4; answer from chunk 6.
    assert labels_of(plans)[:8] == ["listen", "listen", "speak", "speak", "interrupt", "listen", "speak", "listen"]


def test_user_backchannel_does_not_stop_the_reply(adapter):
    turns = [Turn("user", "request", "q", 1.0, 2.0, (), True), Turn("user", "backchannel", "uh-huh", 3.2, 3.5)]
    script = [{"turn": 0, "action": "speak", "text": "y" * 30}, {"turn": 1, "action": "keep_speaking"}]
    plans = plan_session(session(turns, script), adapter, MockToolExecutor())
    assert labels_of(plans)[2:7] == ["speak", "speak", "speak", "speak", "listen"]


def test_model_backchannel_in_a_pause(adapter):
    p = adapter.protocol
    turns = [Turn("user", "statement", "story", 1.0, 6.0)]
    script = [{"turn": 0, "action": "backchannel", "text": "mm-hmm", "at_s": 3.3}]
    plans = plan_session(session(turns, script), adapter, MockToolExecutor())
    assert plans[3].label == "backchannel"  # 3.3 + 0.4 = 3.7 <= 4.0
    assert plans[3].output == [p.backchannel, *adapter.encode_text(" mm-hmm"), p.chunk_eos]


def test_tool_calls_are_grouped_and_answered_in_the_next_chunk(adapter):
    p = adapter.protocol
    executor = MockToolExecutor()
    search = {"function": "search_products", "args": {"query": "desk lamp", "max_price": 30}}
    order = {"function": "track_order", "args": {"order_id": "12345"}}
    found = executor.respond(search)
    product = found.split('"product_id": "')[1].split('"')[0]
    add = {"function": "add_to_cart", "args": {"product_id": product, "quantity": 1}}
    request = "find me a desk lamp under 30 and track order 1 2 3 4 5, then add one"
    assert call_groups([order, search, add], request, executor) == [[order, search], [add]]
    turns = [Turn("user", "request", request, 1.0, 2.2, (), True)]
    script = [{"turn": 0, "action": "tool_call", "call": c} for c in (order, search, add)]
    script.append({"turn": 0, "action": "speak_after_tools", "text": "done"})
    plans = plan_session(session(turns, script), adapter, executor)
    assert labels_of(plans)[:6] == ["listen", "listen", "tool", "tool", "speak", "listen"]
    assert plans[2].output == [p.tool_call_open, *adapter.encode_text(tool_call_text(order)), p.tool_call_close,
                               p.tool_call_open, *adapter.encode_text(tool_call_text(search)), p.tool_call_close, p.chunk_eos]
    assert plans[3].tail == adapter.tool_response_tokens(executor.respond(order)) + adapter.tool_response_tokens(found)
    assert plans[4].tail == adapter.tool_response_tokens(executor.respond(add))


def test_layout_matches_what_the_engine_feeds(adapter):
    p = adapter.protocol
    plans = [ChunkPlan(output=[p.listen]), ChunkPlan(tail=[77], output=[p.speak, 50, p.chunk_eos])]
    tokens, labels = layout([9, 9], plans, p, embeds_per_chunk=2)
    assert tokens == [9, 9, p.unit_open, AUDIO, AUDIO, p.listen, p.unit_close, p.unit_open, AUDIO, AUDIO, 77,
                      p.speak, 50, p.chunk_eos]
    assert labels == [IGNORE, IGNORE, IGNORE, IGNORE, p.listen, IGNORE, IGNORE, IGNORE, IGNORE, IGNORE, p.speak,
                      50, p.chunk_eos, IGNORE]
