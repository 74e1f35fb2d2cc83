from ticktock.decoders.ar import ARDecoder
from ticktock.decoders.selection import Sampling
from ticktock.sessions.manifest import load_manifest

from decoders.reference import naive_replay
from helpers import replay


def test_ar_equals_a_naive_recompute_without_cache(fixture_adapter, small_manifest):
    for session in load_manifest(small_manifest)[:2]:
        trace = replay(fixture_adapter, session, ARDecoder())
        expected = naive_replay(fixture_adapter, session)
        assert [c.output for c in trace.chunks] == expected


def test_ar_spends_one_post_audio_forward_per_token(fixture_adapter, small_manifest):
    session = load_manifest(small_manifest)[0]
    trace = replay(fixture_adapter, session, ARDecoder())
    for chunk in trace.chunks:
        records = [r for r in trace.forwards if r.chunk_index == chunk.span.index and r.phase == "post_audio"]
        assert len(records) == len(chunk.output)
        assert all(r.tokens_committed == 1 for r in records)
    assert all(r.phase == "post_audio" for r in trace.forwards)


def test_ar_sampling_equals_naive_sampling_with_the_same_keys(fixture_adapter, small_manifest):
    session = load_manifest(small_manifest)[1]
    trace = replay(fixture_adapter, session, ARDecoder(), temperature=0.8, seed=3)
    expected = naive_replay(fixture_adapter, session, Sampling(temperature=0.8, seed=3))
    assert [c.output for c in trace.chunks] == expected
    greedy = replay(fixture_adapter, session, ARDecoder())
    assert [c.output for c in trace.chunks] != [c.output for c in greedy.chunks]
