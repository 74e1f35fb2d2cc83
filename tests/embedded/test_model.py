"""The shipped embedded model: loads offline, decodes like a naive recompute, fails clearly when broken."""

import shutil

import numpy as np
import pytest
import soundfile
from transformers import AutoTokenizer

from ticktock.sessions.audio import load_audio
from ticktock.clocks.modeled import CostProfile, ModeledClock
from ticktock.decoders.ar import ARDecoder
from ticktock.embedded.model import WEIGHTS_DIR, WeightsError, load_embedded_adapter
from ticktock.replay.engine import ReplayEngine
from ticktock.world.injection import ToolCallInjector
from ticktock.sessions.manifest import Session, Turn, load_manifest
from ticktock.world.mock_tools import MockToolExecutor
from ticktock.shipped import resource_path

from decoders.reference import naive_replay


def test_the_tokenizer_loads_with_auto_tokenizer_and_has_the_protocol_tokens(embedded_adapter):
    tokenizer = AutoTokenizer.from_pretrained(str(WEIGHTS_DIR), local_files_only=True)
    p = embedded_adapter.protocol
    assert tokenizer.convert_tokens_to_ids(["<unit>", "<|speak|>", "<tool_call>"]) == [p.unit_open, p.speak, p.tool_call_open]
    assert len(tokenizer) == embedded_adapter.vocab_size


def test_weights_are_small_and_described(embedded_adapter):
    size = sum(f.stat().st_size for f in WEIGHTS_DIR.iterdir() if f.suffix == ".safetensors")
    assert size <= 30 * 2**20
    info = embedded_adapter.describe()
    assert info["dtype"] == "float32" and info["attn_implementation"] == "eager" and info["audio_embeds_per_second"] == 10
    assert (WEIGHTS_DIR / "MODEL_CARD.md").is_file()


def test_ar_equals_a_naive_recompute_on_a_corpus_session(embedded_adapter):
    session = load_manifest(resource_path("manifests/ticktock-mini/manifest.jsonl"), tasks=["llama_questions"])[0]
    engine = ReplayEngine(embedded_adapter, ARDecoder(), ModeledClock(CostProfile.constant(1.0)), max_chunks=8)
    trace = engine.replay(session, load_audio(session.audio_path))
    expected = naive_replay(embedded_adapter, session, max_chunks=8)
    assert [c.output for c in trace.chunks] == expected


def test_audio_of_any_length_works(embedded_adapter, tmp_path):
    for seconds in (0.3, 2.55):
        path = tmp_path / f"a{seconds}.flac"
        soundfile.write(path, np.random.default_rng(0).normal(0, 0.01, int(seconds * 16000)).astype(np.float32), 16000)
        session = Session(f"s{seconds}", "fdb_v1", path, seconds, turns=(Turn("user", "request", "x", 0.0, seconds),))
        engine = ReplayEngine(embedded_adapter, ARDecoder(), ModeledClock(CostProfile.constant(1.0)),
                              injector=ToolCallInjector(MockToolExecutor()))
        trace = engine.replay(session, load_audio(path))
        assert len(trace.chunks) == int(np.ceil(seconds))  # the final partial chunk is zero-padded


@pytest.mark.parametrize("damage", ["missing", "corrupt"])
def test_broken_weights_name_the_file_and_how_to_retrain(tmp_path, damage):
    folder = tmp_path / "weights"
    shutil.copytree(WEIGHTS_DIR, folder)
    if damage == "missing":
        (folder / "model.safetensors").unlink()
    else:
        (folder / "model.safetensors").write_bytes(b"not a safetensors file")
    with pytest.raises(WeightsError, match=r"(model.safetensors|cannot load).*ticktock.embedded.train"):
        load_embedded_adapter(folder)
