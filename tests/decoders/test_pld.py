from hypothesis import given, settings
from hypothesis import strategies as st

from ticktock.decoders.ar import ARDecoder
from ticktock.decoders.ngram import NgramIndex, prompt_lookup
from ticktock.decoders.pld import PromptLookupDecoder
from ticktock.sessions.manifest import load_manifest

from helpers import replay


def test_longest_ngram_wins_over_an_earlier_shorter_match():
    # [3] alone matches at index 1 (continuation 9), but the 2-gram [2, 3] matches at index 4.
    tokens = [1, 3, 9, 9, 2, 3, 7, 8, 2, 3]
    assert prompt_lookup(tokens, max_ngram=3, num_pred=2) == [7, 8]


def test_leftmost_occurrence_wins():
    tokens = [5, 6, 1, 1, 5, 6, 2, 2, 0, 5, 6]
    assert prompt_lookup(tokens, max_ngram=2, num_pred=2) == [1, 1]


def test_no_match_and_match_at_the_end():
    assert prompt_lookup([1, 2, 3], max_ngram=3, num_pred=2) == []
    # the only earlier occurrence is too close to the end for a full continuation
    assert prompt_lookup([4, 1, 2, 4], max_ngram=1, num_pred=3) == [1, 2, 4]
    assert prompt_lookup([4, 1, 2, 4], max_ngram=1, num_pred=4) == []
    assert prompt_lookup([4, 1, 2, 4], max_ngram=1, num_pred=4, allow_short=True) == [1, 2, 4]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 4), max_size=40), st.integers(1, 3), st.integers(1, 5), st.booleans())
def test_index_agrees_with_the_reference(tokens, max_ngram, num_pred, allow_short):
    index = NgramIndex(3)
    index.extend(tokens)
    assert index.lookup(max_ngram, num_pred, allow_short) == prompt_lookup(tokens, max_ngram, num_pred, allow_short)


def test_pld_is_lossless_and_saves_forwards_on_the_fixture(fixture_adapter, small_manifest):
    saved = 0
    for session in load_manifest(small_manifest):
        ar = replay(fixture_adapter, session, ARDecoder())
        pld = replay(fixture_adapter, session, PromptLookupDecoder())
        assert [c.output for c in pld.chunks] == [c.output for c in ar.chunks]
        saved += len(ar.forwards) - len(pld.forwards)
    assert saved > 0


def test_pld_is_exact_under_sampling(fixture_adapter, small_manifest):
    session = load_manifest(small_manifest)[2]
    ar = replay(fixture_adapter, session, ARDecoder(), temperature=0.9, seed=11)
    pld = replay(fixture_adapter, session, PromptLookupDecoder(dummy_token=40), temperature=0.9, seed=11)
    assert [c.output for c in pld.chunks] == [c.output for c in ar.chunks]


def test_find_all_gives_distinct_continuations_longest_match_first():
    index = NgramIndex(2)
    index.extend([5, 6, 7, 5, 6, 8, 1, 6, 9, 6, 7])
    # "6" last occurs before 7 ([7] is a prefix of [7, 5]: skipped), then before 9
    assert index.find_all([5, 6], max_ngram=2, num_pred=2, limit=4) == [(2, [8, 1]), (2, [7, 5]), (1, [9, 6])]
    assert index.find_all([5, 6], 2, 2, limit=1) == [(2, [8, 1])]
    assert index.find_all([5, 6], 2, 1, limit=4, latest=False) == [(2, [7]), (2, [8]), (1, [9])]
    assert index.find_all([4], 2, 2, limit=4) == []
