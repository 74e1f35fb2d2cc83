"""Checks on the real checkpoints, for whoever has them: skipped unless the folder is named in the environment
(CI has no weights and no GPU). Run, e.g.::

    TICKTOCK_WEIGHTS_GANDER=~/ckpt/gander TICKTOCK_WEIGHTS_MINICPMO45=~/ckpt/gander/base python -m pytest tests/adapters/test_real_weights.py

Each loads the real weights through the real path (bf16/sdpa on CUDA when there is a GPU, fp32/eager otherwise),
checks the published protocol ids, and replays the first chunks of a shipped session with AR and Speculative
Listening. On CPU in fp32 the outputs must be equal; on a GPU in bf16 a divergence can be legitimate, so there
the test reports the agreement instead of failing on it.
"""

import os

import pytest

from ticktock.clocks.modeled import CostProfile, ModeledClock
from ticktock.decoders.ar import ARDecoder
from ticktock.world.injection import ToolCallInjector
from ticktock.sessions.manifest import load_manifest
from ticktock.world.mock_tools import MockToolExecutor
from ticktock.shipped import resource_path
from ticktock.replay.config import build, compose_run

from helpers import outputs, replay

MODELS = {"minicpmo45": "TICKTOCK_WEIGHTS_MINICPMO45", "gander": "TICKTOCK_WEIGHTS_GANDER",
          "realtime_venus": "TICKTOCK_WEIGHTS_REALTIME_VENUS", "lws": "TICKTOCK_WEIGHTS_LWS",
          "streaming_slm": "TICKTOCK_WEIGHTS_STREAMING_SLM"}


@pytest.mark.parametrize("model", sorted(MODELS))
def test_real_weights_load_and_replay(model):
    folder = os.environ.get(MODELS[model])
    if not folder:
        pytest.skip(f"needs the real {model} weights: set {MODELS[model]}=<checkpoint folder>")
    adapter = build(compose_run("ar", model, None, [f"model.path={folder}"]).model)
    p = adapter.protocol
    if model != "streaming_slm":
        assert (p.unit_open, p.unit_close, p.listen, p.speak, p.chunk_eos) == (151683, 151684, 151705, 151706, 151718)
    session = load_manifest(resource_path("manifests/ticktock-mini/manifest.jsonl"), tasks=["fdb_v3"])[0]
    clock = ModeledClock(CostProfile.load(resource_path("configs/profiles/a100-8b-derived.yaml")))

    def chunks(decoder):
        return outputs(replay(adapter, session, decoder, clock=clock, injector=ToolCallInjector(MockToolExecutor()),
                              max_chunks=8))

    expected, drafted = chunks(ARDecoder()), chunks(build(compose_run("speclisten", model, None, []).decoder))
    if str(adapter.dtype) == "torch.float32":
        assert drafted == expected
    else:
        same = sum(a == b for a, b in zip(expected, drafted))
        print(f"{model} {adapter.dtype}: {same} of {len(expected)} chunks identical to AR")
