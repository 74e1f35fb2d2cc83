import math

import pytest
import torch

from ticktock.adapters.base import UnitProtocol
from ticktock.decoders.selection import Sampling, SamplingError

P = UnitProtocol(unit_open=0, unit_close=1, listen=2, speak=3, chunk_eos=4, turn_eos=5)


def selector(session_id="s", **sampling):
    return Sampling(**sampling).selector(P, session_id, tools_enabled=True)


def test_greedy_respects_the_grammar():
    sel = selector()
    logits = torch.tensor([9.0, 0, 1, 2, 0, 0, 8, 0])
    assert sel.choose(logits, [], 0) == 3  # a decision first, even though token 0 scores highest
    assert sel.choose(logits, [3], 0) == 6  # content: structural tokens excluded
    assert sel.ranked(logits, [], 3) == [3, 2]  # only two decisions exist


def test_keyed_sampling_is_deterministic_and_follows_softmax():
    logits = torch.tensor([0.0, 0, 0, 0, -50, -50, 1.0, 2.0, 0.5])
    prefix = [3]
    counts = torch.zeros(9)
    for session in range(3000):
        sel = selector(f"s{session}", temperature=1.0, seed=0)
        token = sel.choose(logits, prefix, 0)
        assert token == sel.choose(logits, prefix, 0)  # same key, same sample
        counts[token] += 1
    allowed = torch.tensor([6, 7, 8])
    probs = torch.softmax(logits[[6, 7, 8]], 0)
    freq = counts[allowed] / counts.sum()
    assert counts[:6].sum() == 0
    assert torch.allclose(freq, probs, atol=3 * math.sqrt(0.25 / 3000))


def test_the_key_is_the_chunk_the_caller_names_and_nothing_else():
    logits = torch.tensor([0.0, 0, 0, 0, -50, -50, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0])
    sel = selector(temperature=1.0, seed=4)
    by_chunk = [[sel.choose(logits, [3] * (1 + p), chunk) for p in range(6)] for chunk in range(8)]
    assert len({tuple(row) for row in by_chunk}) > 1  # the chunk index is part of the key
    # asking in another order, or from a fresh selector of the same session, gives the same samples
    again = selector(temperature=1.0, seed=4)
    assert [[again.choose(logits, [3] * (1 + p), chunk) for p in range(6)] for chunk in reversed(range(8))] == by_chunk[::-1]
    other_seed = selector(temperature=1.0, seed=5)
    assert [[other_seed.choose(logits, [3] * (1 + p), c) for p in range(6)] for c in range(8)] != by_chunk


def test_top_k_and_top_p_restrict_the_support():
    logits = torch.tensor([0.0, 0, 0, 0, -50, -50, 3.0, 2.9, 0.1, -5.0])
    for kwargs, support in [({"top_k": 2}, {6, 7}), ({"top_p": 0.5}, {6, 7})]:
        seen = set()
        for s in range(300):
            seen.add(selector(str(s), temperature=1.0, **kwargs).choose(logits, [3], 0))
        assert seen <= support and len(seen) >= 1


@pytest.mark.parametrize("settings, key", [
    ({"temperature": -1.0}, "sampling.temperature"), ({"temperature": float("nan")}, "sampling.temperature"),
    ({"top_p": 2.0}, "sampling.top_p"), ({"top_p": 0.0}, "sampling.top_p"), ({"top_k": -5}, "sampling.top_k"),
    ({"top_k": 1.5}, "sampling.top_k"), ({"seed": "abc"}, "seed"), ({"temperature": "hot"}, "sampling.temperature"),
])
def test_bad_sampling_settings_name_the_key(settings, key):
    with pytest.raises(SamplingError, match=rf"^{key}: must be"):
        Sampling(**settings)


def test_draft_selectors_share_the_grammar_and_turn_state_and_choose_their_own_way():
    logits = torch.tensor([0.0, 0, 0, 0, -50, -50, 1.0, 1.1, 1.0, 1.0, 1.0, 1.0])
    sel = selector("s", temperature=1.0, seed=2)
    greedy, independent = sel.for_drafts("greedy"), sel.for_drafts("independent")
    assert sel.for_drafts("shared") is sel
    committed = [sel.choose(logits, [3] * (1 + p), 0) for p in range(6)]
    assert {greedy.choose(logits, [3] * (1 + p), 0) for p in range(6)} == {7}  # the argmax, every time
    drawn = [independent.choose(logits, [3] * (1 + p), 0) for p in range(6)]
    assert drawn == [sel.for_drafts("independent").choose(logits, [3] * (1 + p), 0) for p in range(6)]
    assert drawn != committed and len(set(drawn)) > 1  # its own noise, still a sample
    turn = UnitProtocol(unit_open=0, unit_close=1, listen=2, speak=3, chunk_eos=4, turn_eos=5, listen_closes_turn=False)
    base = Sampling(temperature=1.0).selector(turn, "s", tools_enabled=True)
    twin = base.for_drafts("greedy")
    base.set_turn_open(3, True)  # set after the twin was made: the twin sees it
    assert torch.equal(twin.masked(logits, [], 3), base.masked(logits, [], 3))


def test_greedy_runs_draft_with_their_own_selector_and_bad_names_are_rejected():
    sel = selector("s")
    assert sel.for_drafts("greedy") is sel and sel.for_drafts("independent") is sel
    with pytest.raises(SamplingError, match="draft selection"):
        sel.for_drafts("coupled")
