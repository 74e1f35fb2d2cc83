"""The context policy: long sessions stay within the model's positions, exactly and losslessly."""

import numpy as np
import pytest
import soundfile
import torch

from ticktock.adapters.fixture import build_fixture_adapter
from ticktock.adapters.context import ContextFull, EvictOldUnits, StopAtLimit
from ticktock.decoders.ar import ARDecoder
from ticktock.decoders.speclisten import SpeculativeListeningDecoder
from ticktock.sessions.manifest import Session, Turn
from ticktock.replay.session_state import ContextLimitError

from helpers import outputs, replay, speech_like

LIMIT, RESERVE = 420, 120


@pytest.fixture(scope="module")
def small_context_adapter():
    return build_fixture_adapter(seed=0, context_limit=LIMIT, context_reserve=RESERVE)


@pytest.fixture(scope="module")
def long_session(tmp_path_factory):
    """80 s of audio: a user request every 8 s (the fixture model speaks, listens, speaks again)."""
    folder = tmp_path_factory.mktemp("long")
    spans = [(1.0 + 8 * i, 3.5 + 8 * i) for i in range(10)]
    path = folder / "long.flac"
    soundfile.write(path, speech_like(80.0, spans, seed=3), 16_000)
    turns = tuple(Turn("user", "request", "where is it", a, b) for a, b in spans)
    return Session("long", "fdb_v3", path, 80.0, turns=turns)


def test_eviction_keeps_the_prompt_and_repositions_the_rest_exactly():
    """Evicting B from [prompt A B C]: prompt and A untouched, C's keys moved down to where a fresh prefill of
    [prompt A C] puts them (checked on the first layer, whose keys depend on the token and position only;
    deeper layers keep what C computed while B was there, as every KV eviction does)."""
    adapter = build_fixture_adapter(seed=1)
    prompt = adapter.start_session(None, [])
    a, b, c, probe = [5, 6, 7, 8], [9, 10, 11, 12, 13, 14], [15, 16, 17], [18, 19]
    adapter.forward([a]), adapter.forward([b]), adapter.forward([c])
    before = [(layer.keys.clone(), layer.values.clone()) for layer in adapter.cache.layers]
    start = len(prompt) + len(a)
    adapter.evict(start, start + len(b))
    assert adapter.cache_length == len(prompt) + len(a) + len(c)
    for layer, (keys, values) in zip(adapter.cache.layers, before):
        assert torch.equal(layer.keys[..., :start, :], keys[..., :start, :])
        assert torch.equal(layer.values[..., start:, :], values[..., start + len(b):, :])
    evicted_first = adapter.cache.layers[0].keys.clone()
    state = adapter.snapshot()
    evicted = adapter.forward([probe])
    adapter.restore(state)  # rollback after an eviction is exact
    assert torch.equal(adapter.forward([probe]), evicted)
    adapter.start_session(None, [])
    adapter.forward([a + c])
    assert torch.allclose(evicted_first, adapter.cache.layers[0].keys, atol=1e-6)


def test_a_long_session_stays_within_the_limit_and_keeps_the_prompt(small_context_adapter, long_session):
    trace = replay(small_context_adapter, long_session, ARDecoder(), forward_ms=5.0)
    evictions = [c for c in trace.chunks if c.counters.evicted_tokens]
    assert len(evictions) >= 2, "the test needs evictions"
    assert max(r.context_tokens + r.query_tokens for r in trace.forwards) <= LIMIT
    assert max(c.counters.context_tokens for c in trace.chunks) <= LIMIT - RESERVE
    # without a policy the same session would have grown far past the limit
    grown = sum(len(c.output) + 12 for c in trace.chunks)
    assert grown > 2 * LIMIT


@pytest.mark.parametrize("sampling", [{}, {"temperature": 0.9, "seed": 4}])
def test_drafts_stay_lossless_across_evictions(small_context_adapter, long_session, sampling):
    ar = replay(small_context_adapter, long_session, ARDecoder(), forward_ms=5.0, **sampling)
    sl = replay(small_context_adapter, long_session, SpeculativeListeningDecoder(branches=3, draft_with_pool=True,
                                                                                 lookup_context=True, realign=True),
                forward_ms=5.0, **sampling)
    assert outputs(sl) == outputs(ar)
    assert [c.counters.evicted_tokens for c in sl.chunks] == [c.counters.evicted_tokens for c in ar.chunks]
    assert sum(c.counters.window_forwards for c in sl.chunks) > 0


def test_a_model_without_a_policy_stops_with_the_session_and_chunk(long_session):
    adapter = build_fixture_adapter(seed=0, context_limit=LIMIT, context_reserve=RESERVE)
    adapter._rotary = lambda: None  # as a model whose positions cannot be re-rotated
    assert isinstance(adapter.context_policy(), StopAtLimit)
    with pytest.raises(ContextLimitError, match=r"session long, chunk \d+: the next chunk needs up to \d+ positions, "
                                                r"the model takes 420"):
        replay(adapter, long_session, ARDecoder(), forward_ms=5.0)


def test_policies_plan_whole_units():
    starts = [100, 130, 170, 200, 260]
    policy = EvictOldUnits(limit=400, reserve=100, evict_to=0.5)
    assert policy.units_to_evict(290, 0, starts) == 0            # 390 <= 400
    assert policy.units_to_evict(310, 0, starts) == 4            # down to 200: 310 - (260 - 100) = 150
    assert policy.units_to_evict(250, 150, starts) == 3          # a long tail: down to 400 - 100 - 150 = 150
    with pytest.raises(ContextFull):
        policy.units_to_evict(390, 0, [100, 150])                  # the open unit alone is still too long
    assert StopAtLimit(None).units_to_evict(10**9, 0, starts) == 0
