import math

import torch

from ticktock.adapters.base import UnitProtocol
from ticktock.decoders.selection import TokenSelector

P = UnitProtocol(unit_open=0, unit_close=1, listen=2, speak=3, chunk_eos=4, turn_eos=5)


def test_greedy_respects_the_grammar():
    sel = TokenSelector(P)
    logits = torch.tensor([9.0, 0, 1, 2, 0, 0, 8, 0])
    assert sel.choose(logits, []) == 3  # a decision first, even though token 0 scores highest
    assert sel.choose(logits, [3]) == 6  # content: structural tokens excluded
    assert sel.ranked(logits, [], 3) == [3, 2]  # only two decisions exist


def test_keyed_sampling_is_deterministic_and_follows_softmax():
    logits = torch.tensor([0.0, 0, 0, 0, -50, -50, 1.0, 2.0, 0.5])
    sel = TokenSelector(P, temperature=1.0, seed=0)
    prefix = [3]
    counts = torch.zeros(9)
    for session in range(3000):
        sel.start_session(f"s{session}", True)
        sel.start_chunk(0)
        token = sel.choose(logits, prefix)
        assert token == sel.choose(logits, prefix)  # same key, same sample
        counts[token] += 1
    allowed = torch.tensor([6, 7, 8])
    probs = torch.softmax(logits[[6, 7, 8]], 0)
    freq = counts[allowed] / counts.sum()
    assert counts[:6].sum() == 0
    assert torch.allclose(freq, probs, atol=3 * math.sqrt(0.25 / 3000))


def test_top_k_and_top_p_restrict_the_support():
    logits = torch.tensor([0.0, 0, 0, 0, -50, -50, 3.0, 2.9, 0.1, -5.0])
    for kwargs, support in [({"top_k": 2}, {6, 7}), ({"top_p": 0.5}, {6, 7})]:
        sel = TokenSelector(P, temperature=1.0, **kwargs)
        seen = set()
        for s in range(300):
            sel.start_session(str(s), True)
            seen.add(sel.choose(logits, [3]))
        assert seen <= support and len(seen) >= 1
