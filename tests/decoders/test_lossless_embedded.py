"""Every decoder commits exactly AR's tokens, chunk by chunk, on the embedded model and real corpus chunks
(fp32, eager attention), greedy and sampled."""

import pytest

from ticktock.audio import load_audio
from ticktock.clocks.modeled import CostProfile, ModeledClock
from ticktock.decoders.ar import ARDecoder
from ticktock.decoders.selection import TokenSelector
from ticktock.engine import ReplayEngine
from ticktock.injection import ToolCallInjector
from ticktock.main_job import compose_run
from ticktock.manifest import load_manifest
from ticktock.mock_tools import MockToolExecutor
from ticktock.resources import resource_path
from ticktock.run import build

def shipped(name):
    """The decoder exactly as its shipped config file builds it."""
    return lambda: build(compose_run(name, "embedded", None, []).decoder)


DECODERS = {name: shipped(name) for name in ("pld", "recycling", "lookahead", "speclisten_silence", "speclisten_runnerup",
                                             "speclisten", "speclisten_plus")}


@pytest.fixture(scope="module")
def sessions():
    manifest = resource_path("manifests/ticktock-mini/manifest.jsonl")
    return [load_manifest(manifest, tasks=[task])[0] for task in ("fdb_v3", "alpaca_eval", "fdb_v1_5")]


def replay(adapter, session, decoder, max_chunks, **sampling):
    engine = ReplayEngine(adapter, decoder, ModeledClock(CostProfile.load(resource_path("configs/profiles/a100-8b-derived.yaml"))),
                          TokenSelector(adapter.protocol, **sampling), ToolCallInjector(MockToolExecutor()), max_chunks)
    return [c.output for c in engine.replay(session, load_audio(session.audio_path)).chunks]


@pytest.mark.parametrize("name", sorted(DECODERS))
def test_greedy_outputs_equal_ar(embedded_adapter, sessions, name):
    for session in sessions:
        expected = replay(embedded_adapter, session, ARDecoder(), 16)
        assert replay(embedded_adapter, session, DECODERS[name](), 16) == expected, session.session_id


@pytest.mark.parametrize("name", ["pld", "recycling", "lookahead", "speclisten", "speclisten_plus"])
def test_sampled_outputs_equal_ar_with_the_same_seed(embedded_adapter, sessions, name):
    session = sessions[0]
    expected = replay(embedded_adapter, session, ARDecoder(), 16, temperature=0.7, seed=2)
    assert replay(embedded_adapter, session, DECODERS[name](), 16, temperature=0.7, seed=2) == expected
