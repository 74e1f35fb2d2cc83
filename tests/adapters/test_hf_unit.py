import numpy as np
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ticktock.adapters.base import TreeLayout


def noise(seconds=1.0, seed=0):
    return (np.random.default_rng(seed).normal(0, 0.1, int(16000 * seconds))).astype(np.float32)


def reference_logits(adapter, prefix_embeds, tokens):
    """Logits of ``tokens`` appended to ``prefix_embeds``, recomputed from scratch without a cache."""
    embed = adapter.model.get_input_embeddings()
    seq = torch.cat([prefix_embeds, embed(torch.tensor(tokens))]) if tokens else prefix_embeds
    with torch.inference_mode():
        return adapter.model(inputs_embeds=seq[None]).logits[0].float()


def session_prefix(adapter):
    """Start a session, feed one chunk; return the full input embeddings fed so far."""
    prompt = adapter.start_session(None, [])
    audio = adapter.encode_audio(noise())
    head = [adapter.protocol.unit_open]
    adapter.forward([head, audio], logits_from=11)
    embed = adapter.model.get_input_embeddings()
    with torch.inference_mode():
        return torch.cat([embed(torch.tensor(prompt)), embed(torch.tensor(head)), audio])


def test_rollback_restores_logits_exactly(fixture_adapter):
    a = fixture_adapter
    session_prefix(a)
    state = a.snapshot()
    before = a.forward([[5, 6, 7]], logits_from=0)
    first_audio = a.peek_audio(noise(seed=5))
    a.restore(state)
    a.encode_audio(noise(seed=3))  # advances the front-end and the cache
    a.forward([[9, 9], a.encode_audio(noise(seed=4))])
    a.restore(state)
    assert a.cache_length == state.cache_length
    assert torch.equal(a.forward([[5, 6, 7]]), before)
    a.restore(state)
    assert torch.equal(a.encode_audio(noise(seed=5)), first_audio)  # front-end state restored too


def test_peek_does_not_advance_the_front_end(fixture_adapter):
    a = fixture_adapter
    session_prefix(a)
    peeked = a.peek_audio(noise(seed=8))
    assert torch.equal(a.encode_audio(noise(seed=8)), peeked)


def test_cached_forward_matches_recompute_without_cache(fixture_adapter):
    a = fixture_adapter
    prefix = session_prefix(a)
    logits = a.forward([[20, 21, 22]])
    expected = reference_logits(a, prefix, [20, 21, 22])[-3:]
    torch.testing.assert_close(logits, expected, rtol=0, atol=1e-5)


@st.composite
def trees(draw):
    n = draw(st.integers(1, 12))
    parents = [draw(st.integers(-1, i - 1)) for i in range(n)]
    tokens = draw(st.lists(st.integers(16, 100), min_size=n, max_size=n))
    return parents, tokens


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tree=trees())
def test_tree_mask_gives_each_node_the_logits_of_its_path(fixture_adapter, tree):
    a = fixture_adapter
    parents, tokens = tree
    prefix = session_prefix(a)
    root = [30]
    layout = TreeLayout(tuple([-1] + [0 if p < 0 else p + 1 for p in parents]))
    logits = a.forward([root + tokens], layout)
    paths = [[i + 1 for i in path] for path in TreeLayout(tuple(parents)).ancestors()]
    for node, path in enumerate(paths):
        sequence = root + [tokens[i - 1] for i in path]
        expected = reference_logits(a, prefix, sequence)[-1]
        torch.testing.assert_close(logits[node + 1], expected, rtol=0, atol=1e-5)


def test_keep_compacts_the_accepted_path(fixture_adapter):
    a = fixture_adapter
    prefix = session_prefix(a)
    start = a.cache_length
    # root 30 with two branches: [40, 41] and [50, 51]; keep root + second branch.
    a.forward([[30, 40, 41, 50, 51]], TreeLayout((-1, 0, 1, 0, 3)))
    a.keep(start, [0, 3, 4])
    assert a.cache_length == start + 3
    after = a.forward([[60]])
    expected = reference_logits(a, prefix, [30, 50, 51, 60])[-1]
    torch.testing.assert_close(after[0], expected, rtol=0, atol=1e-5)


def test_streaming_front_end_is_chunk_invariant(fixture_adapter):
    fe = fixture_adapter.frontend
    audio = torch.as_tensor(noise(3.035))
    whole, _ = fe.encode(audio, fe.initial_state())
    parts, state = [], fe.initial_state()
    for a, b in [(0, 16560), (16560, 32560), (32560, 48560)]:
        emb, state = fe.encode(audio[a:b], state)
        parts.append(emb)
    assert [p.shape[0] for p in parts] == [10, 10, 10]
    torch.testing.assert_close(torch.cat(parts), whole[:30], rtol=0, atol=1e-5)


def test_tool_call_texts_and_responses(fixture_adapter):
    a = fixture_adapter
    p = a.protocol
    out = [p.tool_call_open, *a.encode_text('{"name": "f", "arguments": {}}'), p.tool_call_close, p.chunk_eos]
    assert a.tool_call_texts(out) == ['{"name": "f", "arguments": {}}']
    tokens = a.tool_response_tokens('{"ok": 1}')
    assert tokens[0] == p.tool_response_open and tokens[-1] == p.tool_response_close
    assert a.decode_tokens(tokens[1:-1]) == '\n{"ok": 1}\n'


def test_weights_fingerprint_follows_the_weights():
    from ticktock.adapters.fixture import build_fixture_adapter

    first, same, other = build_fixture_adapter(seed=0), build_fixture_adapter(seed=0), build_fixture_adapter(seed=1)
    assert first.weights_fingerprint() == same.weights_fingerprint() != other.weights_fingerprint()
    assert first.describe()["weights_fingerprint"] == first.weights_fingerprint()
    with torch.no_grad():
        next(same.model.parameters()).view(-1)[0] += 1e-3
    same._fingerprint = None
    assert same.weights_fingerprint() != first.weights_fingerprint()


def test_the_fixture_s_prompt_prefilled_in_chunks_is_the_one_forward_cache_bit_for_bit(fixture_adapter):
    """The fixture prefills its prompt in forwards of ``PROMPT_CHUNK_TOKENS``: a long prompt (tools' schemas, one
    token per character) leaves the cache, and the next chunk's logits, that one forward over the prompt gives."""
    from ticktock.adapters.fixture import PROMPT_CHUNK_TOKENS

    tools = [{"type": "function", "name": f"tool_{i}", "description": "Looks up an order by its number. " * 4,
              "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}}} for i in range(8)]
    one_forward = fixture_adapter.replica()
    one_forward.prompt_chunk_tokens = None
    results = []
    for adapter in (fixture_adapter, one_forward):
        prompt = adapter.start_session(None, tools)
        cache = [(layer.keys.clone(), layer.values.clone()) for layer in adapter.cache.layers]
        results.append((cache, adapter.forward([[adapter.protocol.unit_open], adapter.encode_audio(noise())])))
    assert len(prompt) > 8 * PROMPT_CHUNK_TOKENS
    (chunked, chunked_logits), (whole, whole_logits) = results
    assert all(torch.equal(a, b) for pair_a, pair_b in zip(chunked, whole) for a, b in zip(pair_a, pair_b))
    assert torch.equal(chunked_logits, whole_logits)
