from ticktock.clocks.modeled import CostProfile, ModeledClock
from ticktock.decoders.ar import ARDecoder
from ticktock.decoders.selection import TokenSelector
from ticktock.engine import ReplayEngine
from ticktock.audio import load_audio
from ticktock.manifest import load_manifest

from decoders.reference import naive_replay


def replay(adapter, session, decoder, **sampling):
    engine = ReplayEngine(adapter, decoder, ModeledClock(CostProfile.constant(10.0)), TokenSelector(adapter.protocol, **sampling))
    return engine.replay(session, load_audio(session.audio_path))


def test_ar_equals_a_naive_recompute_without_cache(fixture_adapter, small_manifest):
    for session in load_manifest(small_manifest)[:2]:
        trace = replay(fixture_adapter, session, ARDecoder())
        expected = naive_replay(fixture_adapter, session, TokenSelector(fixture_adapter.protocol))
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
    expected = naive_replay(fixture_adapter, session, TokenSelector(fixture_adapter.protocol, temperature=0.8, seed=3))
    assert [c.output for c in trace.chunks] == expected
    greedy = replay(fixture_adapter, session, ARDecoder())
    assert [c.output for c in trace.chunks] != [c.output for c in greedy.chunks]
