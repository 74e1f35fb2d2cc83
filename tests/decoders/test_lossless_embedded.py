"""Every decoder commits exactly AR's tokens, chunk by chunk, on the embedded model and real corpus chunks
(fp32, eager attention), greedy and sampled."""

import pytest

from ticktock.clocks.modeled import CostProfile, ModeledClock
from ticktock.decoders.ar import ARDecoder
from ticktock.world.injection import ToolCallInjector

from ticktock.sessions.manifest import load_manifest
from ticktock.world.mock_tools import MockToolExecutor
from ticktock.shipped import resource_path
from ticktock.replay.config import build, compose_run

from helpers import outputs
from helpers import replay as replay_session

def shipped(name):
    """The decoder exactly as its shipped config file builds it."""
    return lambda: build(compose_run(name, "embedded", None, []).decoder)


DECODERS = {name: shipped(name) for name in ("pld", "recycling", "lookahead", "speclisten_silence", "speclisten_runnerup",
                                             "speclisten", "speclisten_plus", "ar_prefill", "speclisten_stream")}


@pytest.fixture(scope="module")
def sessions():
    manifest = resource_path("manifests/ticktock-mini/manifest.jsonl")
    return [load_manifest(manifest, tasks=[task])[0] for task in ("fdb_v3", "alpaca_eval", "fdb_v1_5")]


def replay(adapter, session, decoder, max_chunks, **sampling):
    clock = ModeledClock(CostProfile.load(resource_path("configs/profiles/a100-8b-derived.yaml")))
    return outputs(replay_session(adapter, session, decoder, clock=clock, injector=ToolCallInjector(MockToolExecutor()),
                                  max_chunks=max_chunks, **sampling))


@pytest.fixture(scope="module")
def ar(embedded_adapter):
    """AR's outputs on a session, replayed once per session, chunk count and sampling for every decoder compared."""
    replayed = {}

    def outputs_of(session, max_chunks, **sampling):
        key = (session.session_id, max_chunks, tuple(sorted(sampling.items())))
        if key not in replayed:
            replayed[key] = replay(embedded_adapter, session, ARDecoder(), max_chunks, **sampling)
        return replayed[key]

    return outputs_of


@pytest.mark.parametrize("name", sorted(DECODERS))
def test_greedy_outputs_equal_ar(embedded_adapter, sessions, ar, name):
    for session in sessions:
        expected = ar(session, 16)
        assert replay(embedded_adapter, session, DECODERS[name](), 16) == expected, session.session_id


@pytest.mark.parametrize("name", ["pld", "recycling", "lookahead", "speclisten", "speclisten_plus", "ar_prefill",
                                  "speclisten_stream"])
def test_sampled_outputs_equal_ar_with_the_same_seed(embedded_adapter, sessions, ar, name):
    session = sessions[0]
    expected = ar(session, 16, temperature=0.7, seed=2)
    assert replay(embedded_adapter, session, DECODERS[name](), 16, temperature=0.7, seed=2) == expected


@pytest.mark.parametrize("policy", ["speech", "first_token"])
def test_partial_hypotheses_under_every_redraft_policy_equal_ar(embedded_adapter, sessions, ar, policy):
    decoder = build(compose_run("speclisten_stream", "embedded", None, [f"decoder.redraft_policy={policy}"]).decoder)
    session = sessions[0]
    assert replay(embedded_adapter, session, decoder, 16) == ar(session, 16)


@pytest.mark.parametrize("name,batching", [("ar_prefill", False), ("speclisten_stream", False),
                                           ("speclisten_stream", True)])
def test_on_a_shared_device_outputs_equal_ar(embedded_adapter, sessions, ar, name, batching):
    """Three sessions at once on one device: waiting lanes (early prefill, partial-audio re-drafts) and, with batching,
    drafts batched across sessions leave every session's tokens those of AR alone."""
    from ticktock.decoders.selection import Sampling
    from ticktock.replay.concurrency import ConcurrencySettings, ConcurrentReplay
    from ticktock.replay.device import SharedDevice
    from ticktock.replay.engine import ReplayEngine
    from ticktock.scheduling.expected_savings import ExpectedSavings
    from ticktock.sessions.audio import load_audio

    expected = {s.session_id: ar(s, 8) for s in sessions}
    clock = ModeledClock(CostProfile.load(resource_path("configs/profiles/a100-8b-derived.yaml")))
    engines = [ReplayEngine(embedded_adapter.replica(), DECODERS[name](), clock, Sampling(),
                            ToolCallInjector(MockToolExecutor()), max_chunks=8) for _ in sessions]
    device, got = SharedDevice(clock, ExpectedSavings(), batching=batching), {}
    ConcurrentReplay(engines, device, ConcurrencySettings(sessions=3, batching=batching, stagger=0.0)).replay(
        sessions, lambda s: load_audio(s.audio_path), lambda trace: got.setdefault(trace.session.session_id, outputs(trace)))
    assert got == expected
    assert device.stats.sleeps > 0  # the lanes waited for audio inside their windows
    if batching:
        assert device.stats.batched_draft_steps + device.stats.carried_drafts > 0  # drafts did run batched


@pytest.mark.parametrize("name", ["speclisten_plus", "speclisten_stream"])
def test_trees_cut_to_their_cost_cap_equal_ar(embedded_adapter, sessions, ar, name):
    """``verify_cost_cap`` cuts trees on the wall clock (the line it measures as it goes: every cut differs from run to
    run) and on a steep cost line (a forward costs 1 ms a token: the cap binds on every wide tree); the output is AR's
    either way."""
    from ticktock.clocks.wall import WallClock

    session = sessions[0]
    expected = ar(session, 12)
    steep = CostProfile("steep", [1, 201], [0], [[1.0], [201.0]], encode_ms=0.0, provenance="tests")
    for clock in (WallClock(embedded_adapter.synchronize), ModeledClock(steep)):
        decoder = build(compose_run(name, "embedded", None, ["decoder.verify_cost_cap=1.5"]).decoder)
        trace = replay_session(embedded_adapter, session, decoder, clock=clock,
                               injector=ToolCallInjector(MockToolExecutor()), max_chunks=12)
        assert outputs(trace) == expected, type(clock).__name__
    assert all(f.query_tokens <= 1.5 * (f.query_tokens - f.draft_tokens + 1) + 1e-9
               for f in trace.forwards if f.draft_tokens > 1)  # the steep run: every tree within its cap
