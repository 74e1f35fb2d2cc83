"""v9, the embedded model in MiniCPM-o 4.5's real layout: its compact form is exact, its folder is the real layout
the minicpmo45 adapter loads, and its training runs, stops and resumes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from ticktock.embedded.real_layout import (COMPACT_FILE, CompactError, Shapes, compact_logits, file_digest,
                                           load_adapter, load_compact, materialize, real_tensors, save_compact,
                                           write_checkpoint)
from ticktock.embedded.train_real_layout import from_v8, main as train_main


@pytest.fixture(scope="module")
def seeded(tmp_path_factory):
    """v9 seeded from the shipped v8, saved compact."""
    folder = tmp_path_factory.mktemp("v9") / "trained"
    model, bpe = from_v8(shapes=Shapes(audio_layers=1))
    save_compact(folder, model, bpe)
    return folder


@pytest.fixture(scope="module")
def real_folder(seeded, tmp_path_factory):
    return materialize(seeded, home=tmp_path_factory.mktemp("models"))


def test_the_compact_output_layer_is_the_full_vocabulary_softmax(seeded):
    model, _ = load_compact(seeded)
    with torch.no_grad():  # a shared row unlike v8's padding, so that it matters
        model.llm.model.embed_tokens.weight[-1].normal_()
    ids = torch.tensor([[model.vocab.compact(i) for i in (151644, 296, 343, 301, 151683)]])
    with torch.no_grad():
        hidden = model.llm.model(input_ids=ids).last_hidden_state
        compact = torch.log_softmax(compact_logits(model.llm, hidden, model.vocab), -1)
        rows = model.llm.model.embed_tokens.weight
        full = torch.log_softmax(hidden @ torch.cat([rows[:-1], rows[-1:].expand(model.vocab.unused_count, -1)]).T, -1)
        table = real_tensors(model)["llm.model.embed_tokens.weight"]
    assert table.shape == (151748, 256)
    used = len(model.vocab.real_ids)
    assert torch.allclose(compact[..., :used], full[..., :used], atol=1e-3)
    # the shared column is the probability of all the unused rows together
    assert torch.allclose(compact[..., -1], torch.logsumexp(full[..., used:], -1), atol=1e-3)


def test_v9_reads_and_writes_the_text_v8_does_with_the_same_ids(real_folder):
    from ticktock.embedded.model import load_embedded_adapter
    from ticktock.sessions.manifest import load_manifest
    from ticktock.shipped import resource_path

    v8 = load_embedded_adapter()
    v9 = load_adapter(path=str(real_folder), name="embedded_v9", max_text_tokens=8, max_tool_tokens=96,
                      tools_in_prompt=False, device="cpu")
    texts = [a["text"] for s in load_manifest(resource_path("manifests/ticktock-mini/manifest.jsonl"))
             for a in s.expected.get("script", []) if a.get("text")]
    assert len(texts) > 100
    assert [v9.encode_text(" " + t) for t in texts] == [v8.encode_text(" " + t) for t in texts]
    assert v9.protocol.listen == 151705 and v9.protocol.unit_open == 151683 and v9.vocab_size == 151748
    assert v9.describe()["miniature"] is False and v9.describe()["architecture"] == "Qwen3ForCausalLM"


def test_the_real_layout_folder_runs_the_compact_model_and_is_written_the_same_every_time(seeded, real_folder,
                                                                                          tmp_path):
    model, _ = load_compact(seeded)
    adapter = load_adapter(path=str(real_folder), name="embedded_v9", device="cpu", tools_in_prompt=False)
    ids = [151644, 296, 343, 301, 151683, 151705]
    compact_ids = torch.tensor([[model.vocab.compact(i) for i in ids]])
    with torch.no_grad():
        for p in model.llm.parameters():  # the folder holds bf16 weights
            p.copy_(p.to(torch.bfloat16).float())
        expected = torch.log_softmax(compact_logits(model.llm, model.llm.model(input_ids=compact_ids).last_hidden_state,
                                                    model.vocab), -1)[..., :-1]
        got = torch.log_softmax(adapter.model(torch.tensor([ids])).logits, -1)[..., model.vocab.real_ids]
    assert torch.allclose(expected, got, atol=1e-3)
    again = write_checkpoint(seeded, tmp_path / "again")
    for shard in sorted(real_folder.glob("*.safetensors")):
        assert file_digest(shard) == file_digest(again / shard.name)
    config = json.loads((real_folder / "config.json").read_text())
    assert config["version"] == "4.5" and config["ticktock_embedded"]["version"] == 9
    assert config["hidden_size"] % 128 == 0  # vLLM-Omni's resampler takes width // 128 heads


def test_a_torn_compact_folder_is_one_clear_error(seeded, tmp_path):
    torn = tmp_path / "torn"
    torn.mkdir()
    (torn / "ticktock.json").write_text((seeded / "ticktock.json").read_text())
    (torn / COMPACT_FILE).write_bytes((seeded / COMPACT_FILE).read_bytes()[:1000])
    with pytest.raises(CompactError, match="not a compact v9 model"):
        load_compact(torn)


def test_training_stages_run_and_a_stopped_stage_resumes(tmp_path):
    """init, distill and tune on 20 generated sessions, two steps each; tune stopped after its first step resumes."""
    from ticktock.corpus.synth import generate
    from ticktock.embedded.train import TRAIN_SEED_BASE

    corpus = tmp_path / "corpus"
    generate(corpus, ["fdb_v3", "llama_questions"], "train", TRAIN_SEED_BASE + 9, 10)
    out = tmp_path / "v9"
    train_main(["init", "--out", str(out)])
    common = ["--out", str(out), "--corpus", str(corpus), "--steps", "2", "--warmup", "1", "--validation", "4",
              "--batch-tokens", "1500", "--log-every", "1", "--val-every", "2"]
    train_main(["distill", *common, "--sessions", "6"])
    record = json.loads((out / "trained" / "ticktock.json").read_text())["training"]
    assert record["distill"]["steps"] == 2 and np.isfinite(record["distill"]["final"]["val_mse"])
    before = file_digest(out / "trained" / COMPACT_FILE)
    train_main(["tune", *common, "--stage-minutes", "0.0001"])  # stops at its first check: a checkpoint
    assert (out / "checkpoint.safetensors").is_file() and file_digest(out / "trained" / COMPACT_FILE) == before
    train_main(["tune", *common])
    record = json.loads((out / "trained" / "ticktock.json").read_text())["training"]
    assert record["tune"]["steps"] == 2 and 0 < record["tune"]["final"]["val_token_acc"] <= 1
    assert not (out / "checkpoint.safetensors").exists()


def test_every_decoder_equals_ar_on_the_shipped_v9_over_a_spoken_reply():
    """The shipped v9 (model=embedded_v9, fp32, eager) replays a llama_questions session that it answers in its
    first six chunks: every lossless decoder commits exactly AR's tokens, chunk by chunk."""
    from helpers import outputs, replay

    from ticktock.clocks.modeled import CostProfile, ModeledClock
    from ticktock.decoders.ar import ARDecoder
    from ticktock.embedded.real_layout import configured_adapter
    from ticktock.replay.config import build, compose_run
    from ticktock.sessions.manifest import load_manifest
    from ticktock.shipped import resource_path
    from ticktock.world.injection import ToolCallInjector
    from ticktock.world.mock_tools import MockToolExecutor

    adapter = configured_adapter()
    session = load_manifest(resource_path("manifests/ticktock-mini/manifest.jsonl"), tasks=["llama_questions"])[0]
    clock = lambda: ModeledClock(CostProfile.load(resource_path("configs/profiles/a100-8b-derived.yaml")))  # noqa: E731

    def run(decoder):
        return outputs(replay(adapter, session, decoder, clock=clock(),
                              injector=ToolCallInjector(MockToolExecutor()), max_chunks=6))

    expected = run(ARDecoder())
    assert adapter.protocol.speak in [chunk[0] for chunk in expected]  # a spoken reply is among the chunks
    for name in ("pld", "recycling", "lookahead", "speclisten_runnerup", "speclisten", "speclisten_plus"):
        assert run(build(compose_run(name, "embedded", None, []).decoder)) == expected, name


def test_model_embedded_v9_needs_no_download_and_the_real_models_config_still_does():
    """``python -m ticktock.run model=embedded_v9`` checks weights before any work (``check_weights``): v9's ship with
    the package (``ships_weights``); the config it inherits, the real 8B's, still names the folder it needs."""
    from ticktock.adapters.checkpoint import MissingWeightsError, check_weights
    from ticktock.replay.config import compose_run

    check_weights(compose_run("ar", "embedded_v9", None, []).model)
    with pytest.raises(MissingWeightsError, match="model.path"):
        check_weights(compose_run("ar", "embedded_v9", None, ["model.ships_weights=false"]).model)
