"""Every decoder commits exactly AR's tokens, chunk by chunk, on the embedded model and real corpus chunks
(fp32, eager attention), greedy and sampled."""

import pytest

from ticktock.clocks.modeled import CostProfile, ModeledClock
from ticktock.decoders.ar import ARDecoder
from ticktock.replay.injection import ToolCallInjector

from ticktock.sessions.manifest import load_manifest
from ticktock.world.mock_tools import MockToolExecutor
from ticktock.replay.resources import resource_path
from ticktock.replay.runner import build, compose_run

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


@pytest.mark.parametrize("name", sorted(DECODERS))
def test_greedy_outputs_equal_ar(embedded_adapter, sessions, name):
    for session in sessions:
        expected = replay(embedded_adapter, session, ARDecoder(), 16)
        assert replay(embedded_adapter, session, DECODERS[name](), 16) == expected, session.session_id


@pytest.mark.parametrize("name", ["pld", "recycling", "lookahead", "speclisten", "speclisten_plus", "ar_prefill",
                                  "speclisten_stream"])
def test_sampled_outputs_equal_ar_with_the_same_seed(embedded_adapter, sessions, name):
    session = sessions[0]
    expected = replay(embedded_adapter, session, ARDecoder(), 16, temperature=0.7, seed=2)
    assert replay(embedded_adapter, session, DECODERS[name](), 16, temperature=0.7, seed=2) == expected


@pytest.mark.parametrize("policy", ["speech", "first_token"])
def test_partial_hypotheses_under_every_redraft_policy_equal_ar(embedded_adapter, sessions, policy):
    decoder = build(compose_run("speclisten_stream", "embedded", None, [f"decoder.redraft_policy={policy}"]).decoder)
    session = sessions[0]
    assert replay(embedded_adapter, session, decoder, 16) == replay(embedded_adapter, session, ARDecoder(), 16)
