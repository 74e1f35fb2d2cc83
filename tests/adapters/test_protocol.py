from ticktock.adapters.base import TreeLayout, UnitProtocol

P = UnitProtocol(unit_open=1, unit_close=2, listen=3, speak=4, chunk_eos=5, turn_eos=6, backchannel=7,
                 interrupt=8, tool_call_open=9, tool_call_close=10, tool_response_open=11,
                 tool_response_close=12, max_text_tokens=3, max_tool_tokens=8, max_tool_calls=2)


def test_first_token_is_a_decision_and_tool_calls_need_tools():
    assert P.allowed([]) == ("only", frozenset({3, 4, 7, 8, 9}))
    assert P.allowed([], tools_enabled=False) == ("only", frozenset({3, 4, 7, 8}))


def test_speak_unit_is_closed_after_k_text_tokens():
    mode, ids = P.allowed([4, 20])
    assert mode == "except" and {1, 2, 3, 4, 9, 10, 11, 12} <= ids and 5 not in ids and 6 not in ids
    assert P.allowed([4, 20, 21, 22]) == ("only", frozenset({5, 6}))
    assert P.allowed([4, 20, 6]) == ("only", frozenset({5}))


def test_tool_unit_grammar():
    mode, ids = P.allowed([9, 30])
    assert mode == "except" and 10 not in ids and {5, 6, 3} <= ids
    assert P.allowed([9, 30, 10]) == ("only", frozenset({5, 9}))
    assert P.allowed([9, 30, 10, 9, 31, 10]) == ("only", frozenset({5}))  # max_tool_calls reached
    assert P.allowed([9, 30, 31, 32, 33, 34, 35]) == ("only", frozenset({5}))  # token cap


def test_kinds_and_completion():
    assert [P.kind_of(x) for x in ([3], [4, 5], [7, 5], [8], [9, 10, 5], [], [40])] == \
        ["listen", "speak", "backchannel", "interrupt", "tool", "other", "other"]
    assert P.is_done([3]) and P.is_done([4, 20, 5]) and not P.is_done([4, 20]) and not P.is_done([])


def test_tree_layout():
    layout = TreeLayout((-1, 0, 1, 1, 3))
    assert layout.depths() == [0, 1, 2, 2, 3]
    assert layout.ancestors()[4] == [0, 1, 3, 4]
    assert TreeLayout.chain(3).parents == (-1, 0, 1)


def test_unit_head_is_the_published_layout(embedded_adapter):
    """MiniCPM-o 4.5 / Gander: chunk 0 opens with <unit>; every later chunk closes the previous unit first."""
    p = embedded_adapter.protocol
    assert [embedded_adapter.decode_tokens([t]) for t in p.unit_head(0)] == ["<unit>"]
    assert [embedded_adapter.decode_tokens([t]) for t in p.unit_head(1)] == ["</unit>", "<unit>"]
    assert p.unit_head(7) == p.unit_head(1)


def test_training_layout_and_replay_share_the_unit_head(fixture_adapter, small_manifest):
    """The embedded model's training sequence is the replay's history with audio slots: same unit heads."""
    from types import SimpleNamespace

    from ticktock.decoders.ar import ARDecoder
    from ticktock.embedded.data import AUDIO, layout
    from ticktock.sessions.manifest import load_manifest

    from helpers import replay

    session = load_manifest(small_manifest)[0]
    trace = replay(fixture_adapter, session, ARDecoder(), max_chunks=4)
    prompt = fixture_adapter.start_session(session.system_prompt, session.tools)
    plans = [SimpleNamespace(output=c.output, tail=c.injected.tokens) for c in trace.chunks]
    tokens, _ = layout(list(prompt), plans, fixture_adapter.protocol, embeds_per_chunk=10)
    fed = list(prompt)
    for chunk in trace.chunks:  # what the replay fed, audio as slots
        fed += fixture_adapter.protocol.unit_head(chunk.span.index) + [AUDIO] * 10 + chunk.injected.tokens + chunk.output
    assert tokens == fed
