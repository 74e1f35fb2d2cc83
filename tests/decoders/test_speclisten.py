from pathlib import Path

import numpy as np
import pytest
import soundfile
import torch

from ticktock.sessions.audio import load_audio
from ticktock.clocks.modeled import CostProfile, ModeledClock
from ticktock.decoders.ar import ARDecoder
from ticktock.decoders.trees import DraftTree, Verification
from ticktock.decoders.pool import HypothesisPool
from ticktock.decoders.selection import Sampling
from ticktock.decoders.speclisten import Hypotheses, SpeculativeListeningDecoder, realigned_tails
from ticktock.replay.engine import ReplayEngine
from ticktock.sessions.manifest import Session, Turn, load_manifest

from helpers import outputs, replay

CONFIGS = {
    "speclisten_silence": dict(branches=1, pool=False),
    "speclisten_runnerup": dict(branches=2, pool=False),
    "speclisten": dict(branches=2, pool=True),
    "speclisten_plus": dict(branches=3, pool=True, draft_with_pool=True, lookup_context=True, realign=True,
                            lookup_branches=4, lookup_tools=True),
    "realign_only": dict(branches=2, pool=False, realign=True),
}


@pytest.mark.parametrize("config", sorted(CONFIGS))
@pytest.mark.parametrize("forward_ms", [60.0, 0.5])  # budget binding / never binding
def test_every_config_is_lossless(fixture_adapter, small_manifest, config, forward_ms):
    for session in load_manifest(small_manifest)[:2]:
        ar = replay(fixture_adapter, session, ARDecoder(), forward_ms=forward_ms)
        sl = replay(fixture_adapter, session, SpeculativeListeningDecoder(**CONFIGS[config]), forward_ms=forward_ms)
        assert outputs(sl) == outputs(ar)


def test_lossless_under_sampling(fixture_adapter, small_manifest):
    session = load_manifest(small_manifest)[2]
    ar = replay(fixture_adapter, session, ARDecoder(), temperature=0.9, seed=5)
    for config in ("speclisten", "speclisten_plus"):
        sl = replay(fixture_adapter, session, SpeculativeListeningDecoder(**CONFIGS[config]), temperature=0.9, seed=5)
        assert outputs(sl) == outputs(ar)


@pytest.mark.parametrize("selection", ["greedy", "independent", "shared"])
def test_lossless_under_sampling_whatever_the_drafts_sample_with(fixture_adapter, small_manifest, selection):
    session = load_manifest(small_manifest)[2]
    ar = replay(fixture_adapter, session, ARDecoder(), temperature=1.0, seed=5)
    sl = replay(fixture_adapter, session, SpeculativeListeningDecoder(draft_selection=selection), temperature=1.0, seed=5)
    assert outputs(sl) == outputs(ar)


def _first_draft(adapter, session, selection: str, **sampling) -> list[int]:
    """The main draft SL makes for chunk 1 after chunk 0 listened (a budget that never binds)."""
    decoder = SpeculativeListeningDecoder(branches=1, pool=False, draft_selection=selection)
    state = ReplayEngine(adapter, decoder, ModeledClock(CostProfile.constant(0.5)), Sampling(**sampling)).start(session)
    adapter.forward([state.inputs_for(0).head, adapter.encode_audio(load_audio(session.audio_path)[:16_000])])
    state.commit(0, [adapter.protocol.listen], tail=[])
    decoder.idle(state.idle_window(1, 900.0, 16_000))
    return decoder.pending.main


def test_greedy_drafts_ignore_the_noise_the_verification_draws(fixture_adapter, small_manifest):
    session = load_manifest(small_manifest)[0]
    greedy = _first_draft(fixture_adapter, session, "greedy")
    assert _first_draft(fixture_adapter, session, "greedy", temperature=1.0, seed=5) == greedy
    hot = {tuple(_first_draft(fixture_adapter, session, "shared", temperature=1.0, seed=s)) for s in range(4)}
    independent = {tuple(_first_draft(fixture_adapter, session, "independent", temperature=1.0, seed=s)) for s in range(4)}
    assert len(hot) > 1 and len(independent) > 1  # these sample
    assert hot != independent


@pytest.fixture(scope="module")
def silent_session(tmp_path_factory):
    """Digital silence: the silence hypothesis IS the audio, so every complete draft must be accepted."""
    folder = tmp_path_factory.mktemp("silent")
    path = folder / "silent.flac"
    soundfile.write(path, np.zeros(8 * 16_000, dtype=np.float32), 16_000)
    return Session("silent", "fdb_v3", path, 8.0, tools=({"name": "t"},), turns=(Turn("user", "request", "x", 1, 2),))


def test_an_exact_hypothesis_needs_one_post_audio_forward_per_chunk(fixture_adapter, silent_session):
    trace = replay(fixture_adapter, silent_session, SpeculativeListeningDecoder(branches=1, pool=False), forward_ms=0.5)
    for chunk in trace.chunks:
        forwards = [r for r in trace.forwards if r.phase == "post_audio" and r.chunk_index == chunk.span.index]
        assert len(forwards) == 1
        assert chunk.counters.draft_full_match is True
        assert chunk.counters.draft_source == "silence"
        assert chunk.counters.first_token_changed is False
        assert chunk.counters.post_audio_forwards == 1 and chunk.counters.lookup_hits == 0


def test_shared_noise_drafts_match_exactly_where_greedy_ones_need_luck(fixture_adapter, silent_session):
    """On digital silence the hypothesis is exact: a draft that samples with the verification's noise is the
    output, a greedy draft only where the samples happen to be the argmax."""
    def matches(selection):
        trace = replay(fixture_adapter, silent_session, SpeculativeListeningDecoder(branches=1, pool=False,
                       draft_selection=selection), forward_ms=0.5, temperature=1.0, seed=1)
        return [c.counters.draft_full_match for c in trace.chunks[1:]]

    assert all(matches("shared"))
    assert not all(matches("greedy"))


def test_idle_drafting_leaves_the_model_exactly_as_before(fixture_adapter, small_manifest):
    session = load_manifest(small_manifest)[0]
    a = fixture_adapter
    decoder = SpeculativeListeningDecoder(branches=3, pool=True, draft_with_pool=True)
    replay_state = ReplayEngine(a, decoder, ModeledClock(CostProfile.constant(1.0))).start(session)
    a.forward([replay_state.inputs_for(0).head, a.encode_audio(load_audio(session.audio_path)[:16_000])])
    replay_state.commit(0, [a.protocol.listen], tail=[])  # chunk 1 opens: [<|listen|> </unit> <unit>]
    state = a.snapshot()
    probe_before = a.forward([[a.protocol.listen, a.protocol.unit_close]])
    audio_before = a.peek_audio(np.ones(16_000, dtype=np.float32) * 0.01)
    a.restore(state)
    decoder.idle(replay_state.idle_window(1, 900.0, 16_000))
    assert replay_state.counters_for(1).window_forwards > 0
    assert a.cache_length == state.cache_length
    assert torch.equal(a.forward([[a.protocol.listen, a.protocol.unit_close]]), probe_before)
    assert torch.equal(a.peek_audio(np.ones(16_000, dtype=np.float32) * 0.01), audio_before)


def test_budget_is_checked_between_draft_forwards_and_overrun_is_carried(fixture_adapter, small_manifest):
    session = load_manifest(small_manifest)[1]
    trace = replay(fixture_adapter, session, SpeculativeListeningDecoder(**CONFIGS["speclisten"]), forward_ms=150.0)
    drafted = {r.chunk_index for r in trace.forwards if r.phase == "draft"}
    previous_budget = 1000.0  # the wait for chunk 0
    for i, chunk in enumerate(trace.chunks):
        if i:
            previous_budget = trace.chunks[i - 1].timing.idle_budget_ms
        assert chunk.counters.window_budget_ms == previous_budget
        if previous_budget <= 0:
            assert i not in drafted  # no drafting while lagging
            assert chunk.carried_ms == 0.0
        used = sum(r.charged_ms for r in trace.forwards if r.phase == "draft" and r.chunk_index == i)
        assert chunk.carried_ms == pytest.approx(max(0.0, used - previous_budget))
        assert chunk.carried_ms < 150.0 + 1e-6  # at most the forward that crossed the budget
        assert chunk.timing.latency_ms == pytest.approx(
            sum(r.charged_ms for r in trace.forwards if r.phase == "post_audio" and r.chunk_index == i) + chunk.carried_ms)


def test_the_silence_draft_is_encoded_with_the_chunks_audio_where_the_clock_batches_encodings(fixture_adapter,
                                                                                              small_manifest):
    """The embedded front-end's silence depends on its state, so a silence draft costs an encoding. Where the clock
    can charge a step of two encodings, the engine encodes the next chunk's silence in the chunk's own encoding step:
    that step costs 1.5 encodings (the profile's factor for two), the idle window none (but the first, which
    follows no encoding step), and the drafts are those made
    with the silence encoded in the window (the same embeddings: the same counters, chunk by chunk)."""
    session = load_manifest(small_manifest)[0]

    def run(**batching):
        clock = ModeledClock(CostProfile.constant(0.5, encode_ms=40.0, **batching))
        return replay(fixture_adapter, session, SpeculativeListeningDecoder(**CONFIGS["speclisten"]), clock=clock)

    apart, together, ar = run(), run(encode_batch_factor=1.5), replay(fixture_adapter, session, ARDecoder())
    assert outputs(together) == outputs(apart) == outputs(ar)
    last = len(together.chunks) - 1
    for i, (alone, fused) in enumerate(zip(apart.chunks, together.chunks)):
        forwards = sum(r.charged_ms for r in together.forwards if r.phase == "post_audio" and r.chunk_index == i)
        assert fused.timing.latency_ms == pytest.approx(forwards + (40.0 if i == last else 60.0))
        drafting = sum(r.charged_ms for r in together.forwards if r.phase == "draft" and r.chunk_index == i)
        first = 40.0 if i == 0 else 0.0  # the window before chunk 0 follows no encoding step
        assert fused.counters.window_used_ms == pytest.approx(drafting + first)
        assert alone.counters.window_used_ms == pytest.approx(drafting + 40.0)
        same = ("draft_tokens", "accepted_draft_tokens", "window_forwards", "draft_full_match", "draft_source")
        assert [getattr(fused.counters, k) for k in same] == [getattr(alone.counters, k) for k in same]


def test_early_prefill_drafts_encode_their_silence_in_the_window_as_before(fixture_adapter, small_manifest):
    """A decoder that feeds the arrived audio before its silence draft (early prefill) drafts the rest of the chunk
    as silence: not the whole chunk the engine could encode ahead, so no step encodes silence ahead for it."""
    session = load_manifest(small_manifest)[0]
    decoder = SpeculativeListeningDecoder(**CONFIGS["speclisten"], early_prefill=True)
    assert not decoder.silence_first and SpeculativeListeningDecoder().silence_first
    clock = ModeledClock(CostProfile.constant(0.5, encode_ms=40.0, encode_batch_factor=1.5))
    trace = replay(fixture_adapter, session, decoder, clock=clock)
    assert all(c.timing.latency_ms < 60.0 for c in trace.chunks)  # 40 ms or less of encoding, a few forwards


def test_pool_lookup_longest_match_recency_and_alignment():
    pool = HypothesisPool(max_n=3)
    pool.add([1, 2, 3, 4, 9])
    pool.add([7, 2, 3, 5])
    assert pool.continuation([0, 2, 3], 5, position=3) == [5]  # newest of the equally long matches
    assert pool.continuation([1, 2, 3], 5, position=3) == [4, 9]  # the longer 3-gram wins
    assert pool.continuation([8], 5) == []
    pool.add([1, 2, 3, 4, 9])  # re-adding makes it the newest
    assert pool.continuation([0, 2, 3], 5, position=3) == [4, 9]
    pool.add([6, 6, 1, 6, 2])
    assert pool.continuation([6], 5, position=4) == [2]  # the occurrence aligned with position 4 - 1 = 3 wins
    assert pool.continuation([6], 5, position=1) == [6, 1, 6, 2]  # aligned with 0


def test_pool_continuations_are_distinct_and_ranked():
    pool = HypothesisPool(max_n=2)
    pool.add([1, 2, 3, 4])
    pool.add([5, 2, 3])
    pool.add([1, 2, 3, 4, 8])  # newest; its continuation after "2" extends the first draft's
    # the 2-gram "1 2", newest draft first; [3, 4] (the first draft) and [3] (the second) are prefixes of it
    assert pool.continuations([1, 2], 3, limit=4) == [(2, [3, 4, 8])]
    assert pool.continuations([1, 2], 1, limit=4) == [(2, [3])]
    assert pool.continuations([9, 2], 3, limit=4) == [(1, [3, 4, 8])]  # [3] of [5, 2, 3] is its prefix
    assert pool.continuations([7], 3, limit=4) == []


def test_context_match_beats_a_shorter_pool_match_and_branches_form_one_tree(fixture_adapter):
    p = fixture_adapter.protocol
    session = Session("s", "fdb_v3", Path("x.wav"), 1.0)
    decoder = SpeculativeListeningDecoder(pool=True, lookup_context=True, lookup_branches=2, pool_ngram=3)
    state = ReplayEngine(fixture_adapter, decoder, ModeledClock(CostProfile.constant(1.0))).start(session)
    decoder.pool.add([p.speak, 41, 42])                     # the pool knows "41 -> 42" (a 1-gram match below)
    state.commit(0, [30, 40, 41, 50, 51, 30, 40, 41, 60], tail=[])  # the context: "30 40 41 -> 60" (a 3-gram match)
    step = state.chunk_step(1)
    step.output = [p.speak, 30, 40, 41]
    tree = decoder._lookup_tree(step, room=8)
    assert tree.tokens[0] == 60 and tree.sources[0] == "context"  # the longer match comes first
    assert tree.parents.count(-1) == 2  # the second-best continuation rides as a second branch
    alone = SpeculativeListeningDecoder(pool=True, lookup_context=True, lookup_branches=1, pool_ngram=3)
    alone.start_session(session)
    alone.pool = decoder.pool
    assert alone._lookup_tree(step, room=8).parents.count(-1) == 1


def test_hypotheses_tree_and_trimming(fixture_adapter):
    p = fixture_adapter.protocol
    hyp = Hypotheses(main=[p.speak, 40, 41, p.chunk_eos, 99], branches=[[p.listen, 50]])
    tree = hyp.tree()
    assert tree.parents == [-1, 0, 1, 2, 3, -1, 5]
    assert tree.sources[:5] == ["silence"] * 5 and tree.sources[5:] == ["runner_up"] * 2

    class Step:
        protocol = p

    trimmed = SpeculativeListeningDecoder._trimmed(tree, Step())
    assert trimmed.tokens == [p.speak, 40, 41, p.chunk_eos, p.listen]  # nothing after a terminator


def test_bad_knobs_are_rejected():
    with pytest.raises(ValueError, match="branches"):
        SpeculativeListeningDecoder(branches=0)
    with pytest.raises(ValueError, match="draft_with_pool"):
        SpeculativeListeningDecoder(pool=False, draft_with_pool=True)
    with pytest.raises(ValueError, match="lookup_branches"):
        SpeculativeListeningDecoder(lookup_branches=0)
    with pytest.raises(ValueError, match="draft_selection"):
        SpeculativeListeningDecoder(draft_selection="coupled")
    with pytest.raises(ValueError, match="verify_cost_cap"):
        SpeculativeListeningDecoder(verify_cost_cap=0.5)  # a cap below 1 would cut even a forward with one draft token


def test_realigned_tails_after_a_substitution_an_insertion_or_a_dropped_token():
    tree = DraftTree()
    tree.add_chain([7, 8, 9, 10, 11])
    tree.add_chain([6, 1])  # a branch: never the chain that is realigned
    # accepted 7, then the target said 5 instead of 8: substituted (9 10 11) or inserted (8 9 10 11)
    assert realigned_tails(Verification([7, 5], [0], None, tree), limit=8) == [[9, 10, 11], [8, 9, 10, 11]]
    # the target said 9: the draft's 8 was one token too many
    assert realigned_tails(Verification([7, 9], [0], None, tree), limit=8) == [[10, 11]]
    # rejected at the root: the main chain (first added) is realigned, not the branch
    assert realigned_tails(Verification([3], [], None, tree), limit=2) == [[8, 9], [7, 8]]
    # the whole chain accepted, nothing rejected; no draft; no room
    assert realigned_tails(Verification([7, 8, 9, 10, 11, 2], [0, 1, 2, 3, 4], None, tree), limit=8) == []
    assert realigned_tails(Verification([4], [], None, DraftTree()), limit=8) == []
    assert realigned_tails(Verification([7, 5], [0], None, tree), limit=0) == []


def test_partial_hypotheses_leave_the_model_exactly_as_before(fixture_adapter, small_manifest):
    from ticktock.decoders.idle import ArrivingAudio

    session = load_manifest(small_manifest)[0]
    a = fixture_adapter
    audio = load_audio(session.audio_path)
    decoder = SpeculativeListeningDecoder(branches=2, pool=True, hypothesis="partial", redraft_every_ms=150.0)
    replay_state = ReplayEngine(a, decoder, ModeledClock(CostProfile.constant(20.0, 10.0))).start(session)
    a.forward([replay_state.inputs_for(0).head, a.encode_audio(audio[:16_000])])
    replay_state.commit(0, [a.protocol.listen], tail=[])
    state = a.snapshot()
    probe_before = a.forward([[a.protocol.listen, a.protocol.unit_close]])
    audio_before = a.peek_audio(np.ones(16_000, dtype=np.float32) * 0.01)
    a.restore(state)
    window = replay_state.idle_window(1, 900.0, 16_000, ArrivingAudio(audio[16_000:32_000], 900.0))
    decoder.idle(window)
    assert decoder.pending.earlier and decoder.pending.source == "partial"  # re-drafted as the audio arrived
    assert decoder.pending.drafted == 1 + len(decoder.pending.earlier) + len(decoder.pending.branches)
    assert a.cache_length == state.cache_length and a.frontend_state is state.frontend_state
    assert torch.equal(a.forward([[a.protocol.listen, a.protocol.unit_close]]), probe_before)
    assert torch.equal(a.peek_audio(np.ones(16_000, dtype=np.float32) * 0.01), audio_before)


def test_partial_hypotheses_lead_the_tree_and_keep_earlier_drafts_as_branches():
    hypotheses = Hypotheses(main=[5, 6, 7], main_complete=True, branches=[[9]], duration_ms=1000.0)
    hypotheses.replace_main([5, 8], complete=True, arrived_ms=600.0)
    tree = hypotheses.tree()
    assert tree.tokens == [5, 8, 9, 6, 7] and tree.sources == ["partial", "partial", "runner_up", "silence", "silence"]
    assert hypotheses.drafted == 3
    assert hypotheses.arrived_fraction([5, 8]) == 0.6 and hypotheses.arrived_fraction([5, 6]) == 0.0
    assert hypotheses.arrived_fraction([9]) == 0.0 and hypotheses.arrived_fraction([]) is None


def test_partial_hypotheses_are_lossless_and_report_what_they_drafted(fixture_adapter, small_manifest):
    for session in load_manifest(small_manifest)[:2]:
        ar = replay(fixture_adapter, session, ARDecoder(), forward_ms=20.0, encode_ms=30.0)
        stream = SpeculativeListeningDecoder(branches=2, pool=True, hypothesis="partial", early_prefill=True)
        sl = replay(fixture_adapter, session, stream, forward_ms=20.0, encode_ms=30.0)
        assert outputs(sl) == outputs(ar)
        drafted = [c.counters.hypotheses_drafted for c in sl.chunks]
        assert all(n is not None and n >= 1 for n in drafted) and max(drafted) > 3
        assert any(c.counters.prefilled_ms > 0 for c in sl.chunks)


def test_bad_streaming_knobs_are_rejected():
    from ticktock.decoders.contract import DecoderConfigError

    with pytest.raises(DecoderConfigError, match="decoder.hypothesis: must be one of 'silence', 'partial', got 'audio'"):
        SpeculativeListeningDecoder(hypothesis="audio")
    with pytest.raises(DecoderConfigError, match="decoder.redraft_every_ms: must be a number from 1.0 to 60000.0, got 0"):
        SpeculativeListeningDecoder(redraft_every_ms=0)
    with pytest.raises(DecoderConfigError, match="decoder.redraft_speech_dbfs: must be a number from -200.0 to 0.0, got nan"):
        SpeculativeListeningDecoder(redraft_speech_dbfs=float("nan"))
    with pytest.raises(DecoderConfigError, match="decoder.early_prefill: must be true or false, got 'yes'"):
        ARDecoder(early_prefill="yes")


def test_a_cost_cap_cuts_every_verification_tree_to_what_it_affords_and_stays_lossless(fixture_adapter, small_manifest):
    """Where every query token costs time (a a steep CPU-like line: 1 ms a token), ``verify_cost_cap`` keeps each
    forward at most that many times a forward of its prefix and one draft token; uncapped, speclisten_plus's trees
    cost more than that. The output is AR's either way."""
    steep = CostProfile("steep", [1, 201], [0], [[1.0], [201.0]], encode_ms=0.0, provenance="tests")
    session = load_manifest(small_manifest)[0]
    ar = replay(fixture_adapter, session, ARDecoder(), clock=ModeledClock(steep))

    def dearest(trace) -> float:
        """The largest ratio of a tree forward's cost to a forward of its prefix and one token."""
        return max(steep.forward_ms(f.query_tokens, f.context_tokens)
                   / steep.forward_ms(f.query_tokens - f.draft_tokens + 1, f.context_tokens)
                   for f in trace.forwards if f.draft_tokens > 1)

    uncapped = replay(fixture_adapter, session, SpeculativeListeningDecoder(**CONFIGS["speclisten_plus"]),
                      clock=ModeledClock(steep))
    capped = replay(fixture_adapter, session, SpeculativeListeningDecoder(**CONFIGS["speclisten_plus"],
                                                                          verify_cost_cap=1.5), clock=ModeledClock(steep))
    assert outputs(uncapped) == outputs(ar) and outputs(capped) == outputs(ar)
    assert dearest(uncapped) > 1.5
    assert dearest(capped) <= 1.5 + 1e-9
