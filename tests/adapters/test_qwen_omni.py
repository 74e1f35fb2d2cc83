"""The streaming SLM adapter (Qwen2.5-Omni Thinker, ``model=streaming_slm``) on a miniature checkpoint in the released
on-disk layout: the real loading path and its errors, the Thinker's own forward, cache exactness, the per-chunk
audio front-end, and every shipped decoder token-equal to AR (fp32, eager attention)."""

import json
import os

import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file

from ticktock.adapters import qwen_omni
from ticktock.adapters.base import TreeLayout
from ticktock.adapters.checkpoint import CheckpointError, MissingWeightsError
from ticktock.adapters.qwen_omni import load_streaming_slm_adapter
from ticktock.miniatures.qwen_omni import write_streaming_slm_miniature

from helpers import outputs
from helpers import replay as replay_session

SHARD = "model-00001-of-00002.safetensors"


@pytest.fixture(scope="module")
def miniature(miniatures):
    return miniatures["streaming_slm"]


@pytest.fixture(scope="module")
def adapter(miniature):
    return load_streaming_slm_adapter(str(miniature), max_tool_tokens=24)  # shorter tool units of noise: faster


def variant(miniature, tmp_path, replaced=()):
    """A copy of the miniature (links) whose ``replaced`` files the test writes itself."""
    folder = tmp_path / "variant"
    folder.mkdir()
    for file in miniature.iterdir():
        if file.name not in replaced:
            os.symlink(file, folder / file.name)
    return folder


def noise(seconds=1.0, seed=0):
    return np.random.default_rng(seed).normal(0, 0.1, int(16000 * seconds)).astype(np.float32)


# ------------------------------------------------------------------------------------------------ loading


def test_the_miniature_loads_through_the_real_path(adapter, miniature):
    config = json.loads((miniature / "config.json").read_text())
    assert config["model_type"] == "qwen2_5_omni" and config["thinker_config"]["model_type"] == "qwen2_5_omni_thinker"
    index = json.loads((miniature / "model.safetensors.index.json").read_text())["weight_map"]
    assert {key.split(".")[0] for key in index} == {"thinker", "talker", "token2wav"}
    stored = load_file(str(miniature / SHARD))
    assert torch.equal(adapter.model.lm_head.weight, stored["thinker.lm_head.weight"].float())
    assert torch.equal(adapter.model.get_input_embeddings().weight, stored["thinker.model.embed_tokens.weight"].float())
    assert torch.equal(adapter.frontend.audio_tower.conv1.weight, stored["thinker.audio_tower.conv1.weight"].float())
    vocab = adapter.tokenizer.get_vocab()
    assert [vocab[t] for t in ("<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|AUDIO|>", "<|audio_bos|>",
                               "<|audio_eos|>", "<tool_call>", "</tool_call>")] == [151643, 151644, 151645, 151646,
                                                                                    151647, 151648, 151657, 151658]
    p = adapter.protocol
    assert (p.unit_open, p.listen, p.speak, p.tool_call_open, p.backchannel) == (151665, 151667, 151668, 151657, None)
    assert {151644, 151646, 152063} <= set(p.extra_forbidden) and p.listen not in p.extra_forbidden
    described = adapter.describe()
    assert (described["vocab_size"], described["audio_embeds_per_second"], described["dtype"],
            described["attn_implementation"]) == (152064, 25, "float32", "eager")
    assert not any("visual" in name for name, _ in adapter.model.named_parameters())


def test_missing_weights_name_the_repo_and_the_download_command(monkeypatch, tmp_path):
    monkeypatch.setattr("ticktock.adapters.checkpoint.cached_snapshot", lambda repo_id: None)
    monkeypatch.setattr(qwen_omni, "load_thinker", lambda *a: pytest.fail("loaded before checking the weights"))
    with pytest.raises(MissingWeightsError) as err:
        load_streaming_slm_adapter()
    assert "Qwen/Qwen2.5-Omni-7B" in str(err.value) and "`hf download Qwen/Qwen2.5-Omni-7B`" in str(err.value)
    with pytest.raises(MissingWeightsError, match="hf download Qwen/Qwen2.5-Omni-7B --local-dir"):
        load_streaming_slm_adapter(str(tmp_path / "absent"))


def test_a_missing_tokenizer_file_is_one_clear_error(miniature, tmp_path):
    with pytest.raises(CheckpointError, match=r"tokenizer files missing: vocab.json \+ merges.txt"):
        load_streaming_slm_adapter(str(variant(miniature, tmp_path, replaced={"vocab.json"})))


def test_a_renamed_safetensors_key_is_one_clear_error(miniature, tmp_path):
    folder = variant(miniature, tmp_path, replaced={SHARD, "model.safetensors.index.json"})
    tensors = load_file(str(miniature / SHARD))
    tensors["thinker.model.layers.1.mlp.up_projection.weight"] = tensors.pop("thinker.model.layers.1.mlp.up_proj.weight")
    save_file(tensors, str(folder / SHARD), metadata={"format": "pt"})
    index = json.loads((miniature / "model.safetensors.index.json").read_text())
    index["weight_map"] = {k.replace("up_proj.", "up_projection.") if "layers.1.mlp" in k else k: v
                           for k, v in index["weight_map"].items()}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    with pytest.raises(CheckpointError, match=r"1 Thinker weights missing .*: thinker\.model\.layers\.1\.mlp\.up_proj\.weight$"):
        load_streaming_slm_adapter(str(folder))


def test_a_vocabulary_size_mismatch_is_one_clear_error(miniature, tmp_path):
    folder = variant(miniature, tmp_path, replaced={"config.json"})
    config = json.loads((miniature / "config.json").read_text())
    config["thinker_config"]["text_config"]["vocab_size"] = 151000
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(CheckpointError, match=r"thinker\.(lm_head|model\.embed_tokens)\.weight has shape \(152064, 64\) "
                                             r"but config.json gives \(151000, 64\)"):
        load_streaming_slm_adapter(str(folder))
    small = write_streaming_slm_miniature(tmp_path / "small_rows", vocab_rows=151670)  # fewer rows than tokens
    with pytest.raises(CheckpointError, match="tokenizer has ids up to 151673 but the Thinker's embedding has 151670 rows"):
        load_streaming_slm_adapter(str(small))


def test_a_missing_protocol_token_names_the_token_and_the_tokenizer_file(miniature):
    with pytest.raises(CheckpointError, match=r"tokenizer_config.json: no token '<\|silence\|>' \(listen\)"):
        load_streaming_slm_adapter(str(miniature), protocol_tokens={"listen": "<|silence|>"})


# ------------------------------------------------------------------------------------------------ the LLM


def session_with_one_chunk(adapter):
    adapter.start_session(None, [])
    adapter.forward([[adapter.protocol.unit_open], adapter.encode_audio(noise())])


def test_the_adapter_equals_the_thinkers_own_forward_on_audio_and_text(adapter, miniature):
    """Our per-chunk path (explicit positions, audio straight into inputs_embeds) gives the logits of the released
    Thinker forward on the same tokens with <|AUDIO|> placeholders, the processor's features and its own positions."""
    from transformers import Qwen2_5OmniThinkerForConditionalGeneration, WhisperFeatureExtractor

    thinker = Qwen2_5OmniThinkerForConditionalGeneration.from_pretrained(
        str(miniature), local_files_only=True, dtype=torch.float32, attn_implementation="eager").eval()
    audio = noise(seed=3)
    features = WhisperFeatureExtractor.from_pretrained(str(miniature))(
        audio, sampling_rate=16000, padding="max_length", return_attention_mask=True, return_tensors="pt")
    vocab = adapter.tokenizer.get_vocab()
    head = adapter.encode_text("<|im_start|>user\n<|audio_bos|>")
    tail = [vocab["<|audio_eos|>"], *adapter.encode_text("hello there")]
    ids = torch.tensor([head + [vocab["<|AUDIO|>"]] * 25 + tail])
    with torch.inference_mode():
        expected = thinker(input_ids=ids, input_features=features["input_features"],
                           feature_attention_mask=features["attention_mask"]).logits[0]
    adapter.start_session(None, [])
    start = adapter.cache_length
    adapter._truncate(0)  # compare from an empty cache: the Thinker sees the same sequence from position 0
    assert start > 0 and adapter.cache_length == 0
    logits = adapter.forward([head, adapter.encode_audio(audio), tail])
    torch.testing.assert_close(logits, expected, rtol=0, atol=2e-5)


def test_chunked_prefill_equals_one_shot(adapter):
    session_with_one_chunk(adapter)
    state = adapter.snapshot()
    audio = adapter.encode_audio(noise(seed=1))
    parts = [[adapter.protocol.unit_close, adapter.protocol.unit_open], audio, adapter.encode_text("where is it?")]
    one_shot = adapter.forward(parts, logits_from=0)
    adapter.restore(state)
    chunked = torch.cat([adapter.forward([part], logits_from=0) for part in parts])
    torch.testing.assert_close(chunked, one_shot, rtol=0, atol=1e-5)


def test_crop_restores_the_cache_exactly(adapter):
    session_with_one_chunk(adapter)
    state = adapter.snapshot()
    before = adapter.forward([[adapter.protocol.speak, 300, 301]])
    adapter.restore(state)
    adapter.forward([[adapter.protocol.listen], adapter.encode_audio(noise(seed=2)), [5, 6, 7]])
    adapter.restore(state)
    assert adapter.cache_length == state.cache_length
    assert torch.equal(adapter.forward([[adapter.protocol.speak, 300, 301]]), before)


def test_a_tree_forward_equals_the_chain_forward_of_each_path(adapter):
    session_with_one_chunk(adapter)
    state = adapter.snapshot()
    s = adapter.protocol.speak
    # root <|speak|> with two branches: [300, 301] and [400, 401]
    tree = adapter.forward([[s, 300, 301, 400, 401]], TreeLayout((-1, 0, 1, 0, 3)), logits_from=0)
    for nodes, path in (((0, 1, 2), [s, 300, 301]), ((0, 3, 4), [s, 400, 401])):
        adapter.restore(state)
        chain = adapter.forward([path], logits_from=0)
        torch.testing.assert_close(tree[list(nodes)], chain, rtol=0, atol=1e-5)
    adapter.restore(state)


# ---------------------------------------------------------------------------------------------- the audio


def test_one_second_gives_25_embeddings_and_silence_is_stateless(adapter):
    fe = adapter.frontend
    assert fe.embeds_per_second == 25 and fe.silence_depends_on_state is False and not adapter.silence_depends_on_state
    assert [fe.encode(torch.as_tensor(noise(s)), fe.initial_state())[0].shape[0] for s in (1.0, 2.0, 0.5)] == [25, 50, 12]
    session_with_one_chunk(adapter)
    adapter.encode_audio(noise(seed=4))  # speech before: it must not matter
    assert torch.equal(adapter.peek_audio(np.zeros(16000, dtype=np.float32)), adapter.silence_audio(16000))
    assert torch.equal(adapter.peek_audio(noise(seed=5)), fe.encode(torch.as_tensor(noise(seed=5)), fe.initial_state())[0])


def test_short_padding_gives_the_processors_mel_frames(adapter, miniature):
    """The chunk is padded by n_fft zeros, the Qwen processor pads to chunk_length (300 s): same valid frames."""
    from transformers import WhisperFeatureExtractor

    audio = noise(seed=6)
    full = WhisperFeatureExtractor.from_pretrained(str(miniature))(
        audio, sampling_rate=16000, padding="max_length", return_attention_mask=True, return_tensors="pt")
    valid = int(full["attention_mask"].sum())
    assert valid == 100
    torch.testing.assert_close(adapter.frontend.log_mel(audio), full["input_features"][0, :, :valid], rtol=0, atol=1e-6)


# --------------------------------------------------------------------------------------- decoders vs AR


def shipped(name):
    from ticktock.replay.config import build, compose_run

    return build(compose_run(name, "streaming_slm", None, []).decoder)


DECODERS = ("pld", "recycling", "lookahead", "speclisten_silence", "speclisten_runnerup", "speclisten", "speclisten_plus")


@pytest.fixture(scope="module")
def sessions():
    from ticktock.sessions.manifest import load_manifest
    from ticktock.shipped import resource_path

    manifest = resource_path("manifests/ticktock-mini/manifest.jsonl")
    return [load_manifest(manifest, tasks=[task])[0] for task in ("fdb_v3", "alpaca_eval")]


GREEDY_CHUNKS, SAMPLED_CHUNKS = 4, 4  # per session: the whole file stays under a minute on one core


def replay(adapter, session, decoder, max_chunks, **sampling):
    from ticktock.clocks.modeled import CostProfile, ModeledClock
    from ticktock.world.injection import ToolCallInjector
    from ticktock.world.mock_tools import MockToolExecutor
    from ticktock.shipped import resource_path

    clock = ModeledClock(CostProfile.load(resource_path("configs/profiles/a100-8b-derived.yaml")))
    return outputs(replay_session(adapter, session, decoder, clock=clock, injector=ToolCallInjector(MockToolExecutor()),
                                  max_chunks=max_chunks, **sampling))


@pytest.fixture(scope="module")
def ar_outputs(adapter, sessions):
    from ticktock.decoders.ar import ARDecoder

    greedy = [replay(adapter, session, ARDecoder(), GREEDY_CHUNKS) for session in sessions]
    sampled = replay(adapter, sessions[0], ARDecoder(), SAMPLED_CHUNKS, temperature=0.7, seed=2)
    return greedy, sampled


def test_the_miniature_replays_speak_units_greedily_and_every_kind_sampled(adapter, ar_outputs):
    p = adapter.protocol
    greedy = [chunk for session in ar_outputs[0] for chunk in session]
    assert {p.kind_of(chunk) for chunk in greedy} == {"speak"} and all(len(chunk) >= 3 for chunk in greedy)
    assert {p.kind_of(chunk) for chunk in ar_outputs[1]} >= {"speak", "listen", "tool"}


@pytest.mark.parametrize("name", DECODERS)
def test_greedy_outputs_equal_ar(adapter, sessions, ar_outputs, name):
    for session, expected in zip(sessions, ar_outputs[0]):
        assert replay(adapter, session, shipped(name), GREEDY_CHUNKS) == expected, session.session_id


@pytest.mark.parametrize("name", ["pld", "recycling", "lookahead", "speclisten", "speclisten_plus"])
def test_sampled_outputs_equal_ar_with_the_same_seed(adapter, sessions, ar_outputs, name):
    assert replay(adapter, sessions[0], shipped(name), SAMPLED_CHUNKS, temperature=0.7, seed=2) == ar_outputs[1]
