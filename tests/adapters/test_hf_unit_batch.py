"""HFUnitAdapter.forward_many: one batched model call that leaves every session as if it had run alone."""

import numpy as np
import pytest
import torch

from ticktock.adapters.base import TreeLayout
from ticktock.adapters.fixture import build_fixture_adapter


def noise(seed):
    return np.random.default_rng(seed).normal(0, 0.1, 16000).astype(np.float32)


@pytest.fixture(scope="module")
def adapter():
    return build_fixture_adapter(seed=0)


def replica_after(adapter, chunks, text=()):
    """A replica with its own session: ``chunks`` chunks of audio, then one forward of ``text`` tokens."""
    r = adapter.replica()
    r.start_session(None, [])
    p = r.protocol
    for t in range(chunks):
        head = p.unit_head(t) if t == 0 else [p.chunk_eos, *p.unit_head(t)]
        r.forward([head, r.encode_audio(noise(10 * chunks + t))], logits_from=10**6)
    if text:
        r.forward([list(text)])
    return r


def cache_tensors(r):
    return [(layer.keys.clone(), layer.values.clone()) for layer in r.cache.layers]


def model_calls(model):
    """The batch shapes of every call of ``model`` (inputs_embeds), recorded by a pre-hook."""
    shapes = []
    handle = model.register_forward_pre_hook(lambda m, args, kwargs: shapes.append(tuple(kwargs["inputs_embeds"].shape)),
                                             with_kwargs=True)
    return shapes, handle


def test_forward_many_matches_single_forwards(adapter):
    p = adapter.protocol
    replicas = [replica_after(adapter, 1), replica_after(adapter, 2, text=[40, 41, 42]), replica_after(adapter, 3),
                replica_after(adapter, 1, text=[50])]
    lengths = [r.cache_length for r in replicas]
    assert len(set(lengths)) == len(lengths)  # different caches: the past is padded
    audio = replicas[0].encode_audio(noise(99))
    calls = [
        (replicas[0], [[p.chunk_eos, *p.unit_head(1)], audio], None, 0),  # a chunk prefill, every row
        (replicas[1], [[p.speak]], None, 0),  # one token
        (replicas[2], [[30, 40, 41, 50, 51]], TreeLayout((-1, 0, 1, 0, 3)), 1),  # a draft tree
        (replicas[3], [[60, 61]], None, 2),  # no logits wanted
    ]
    states = [r.snapshot() for r in replicas]

    shapes, handle = model_calls(adapter.model)
    try:
        batched = adapter.forward_many(calls)
    finally:
        handle.remove()
    assert shapes == [(4, 13, adapter.model.config.hidden_size)]  # one model call over all sessions
    batched_lengths = [r.cache_length for r in replicas]
    batched_caches = [cache_tensors(r) for r in replicas]
    batched_next = [r.forward([[70, 71]]) for r in replicas]

    for r, state in zip(replicas, states):
        r.restore(state)
    single = [r.forward(segments, tree, logits_from) for r, segments, tree, logits_from in calls]
    single_lengths = [r.cache_length for r in replicas]
    single_caches = [cache_tensors(r) for r in replicas]
    single_next = [r.forward([[70, 71]]) for r in replicas]

    assert [tuple(x.shape) for x in batched] == [tuple(x.shape) for x in single] == [
        (13, adapter.vocab_size), (1, adapter.vocab_size), (4, adapter.vocab_size), (0, adapter.vocab_size)]
    assert all(x.dtype == torch.float32 for x in batched)
    for b, s in zip(batched, single):
        assert torch.allclose(b, s, atol=1e-4)
    assert batched_lengths == single_lengths == [n + q for n, q in zip(lengths, [13, 1, 5, 2])]
    for b_layers, s_layers in zip(batched_caches, single_caches):
        for (bk, bv), (sk, sv) in zip(b_layers, s_layers):
            assert bk.shape == sk.shape and torch.allclose(bk, sk, atol=1e-4) and torch.allclose(bv, sv, atol=1e-4)
    for b, s in zip(batched_next, single_next):
        assert torch.allclose(b, s, atol=1e-4)


def test_forward_many_tree_rows_differ_from_a_chain(adapter):
    """The tree mask matters: the same tokens as a chain give other logits for the second branch."""
    first, second = replica_after(adapter, 1), replica_after(adapter, 2)
    tokens = [30, 40, 41, 50, 51]
    state = first.snapshot()
    as_tree = adapter.forward_many([(first, [tokens], TreeLayout((-1, 0, 1, 0, 3)), 0), (second, [[5]], None, 0)])[0]
    first.restore(state)
    as_chain = adapter.forward_many([(first, [tokens], None, 0), (second, [[5]], None, 0)])[0]
    assert torch.allclose(as_tree[:3], as_chain[:3], atol=1e-4)
    assert not torch.allclose(as_tree[3:], as_chain[3:], atol=1e-4)


def test_forward_many_of_one_call_is_a_plain_forward(adapter):
    r = replica_after(adapter, 1)
    state = r.snapshot()
    shapes, handle = model_calls(adapter.model)
    try:
        (logits,) = adapter.forward_many([(r, [[20, 21]], None, 0)])
    finally:
        handle.remove()
    assert shapes == [(1, 2, adapter.model.config.hidden_size)]
    r.restore(state)
    assert torch.equal(logits, r.forward([[20, 21]]))


def test_forward_many_checks_the_tree_size(adapter):
    first, second = replica_after(adapter, 1), replica_after(adapter, 1)
    with pytest.raises(ValueError, match="tree has 2 nodes"):
        adapter.forward_many([(first, [[1, 2, 3]], TreeLayout((-1, 0)), 0), (second, [[4]], None, 0)])
