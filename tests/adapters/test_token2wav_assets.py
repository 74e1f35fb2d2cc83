"""ticktock.adapters.token2wav_assets: Code2Wav's six asset files exist, are deterministic per seed, and load with this
venv's own readers (soundfile, a YAML loader that records the ``!new:`` tags, ``torch.load(weights_only=True)``,
``onnx.checker``, onnxruntime). vLLM-Omni's own loading of them runs in the peer venv, not here."""

from __future__ import annotations

import hashlib
import math
import re
from pathlib import Path

import numpy as np
import pytest
import yaml

import onnx  # noqa: E402

from ticktock.adapters import token2wav_assets as t2w  # noqa: E402


@pytest.fixture(scope="module")
def assets(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("t2w-seed0")
    t2w.write_token2wav_assets(folder, seed=0)
    return folder


def digests(folder: Path) -> dict[str, str]:
    return {name: hashlib.sha256((folder / name).read_bytes()).hexdigest() for name in t2w.ASSET_FILES}


def test_writes_the_six_files_small_but_the_fixed_size_tokenizer(assets):
    sizes = {name: (assets / name).stat().st_size for name in t2w.ASSET_FILES}
    assert all(sizes.values())
    tokenizer = sizes.pop("assets/token2wav/speech_tokenizer_v2_25hz.onnx")
    assert max(sizes.values()) < 2_000_000, sizes
    assert 75_000_000 < tokenizer < 85_000_000  # 20.2 M shared float32 values: the floor of its fixed sizes


def test_same_seed_same_bytes_other_seed_other_weights(assets, tmp_path):
    t2w.write_token2wav_assets(tmp_path / "again", seed=0)
    t2w.write_token2wav_assets(tmp_path / "other", seed=1)
    first, again, other = digests(assets), digests(tmp_path / "again"), digests(tmp_path / "other")
    assert again == first
    assert {name for name in first if other[name] == first[name]} == {"assets/token2wav/flow.yaml"}


def test_reference_audio_is_a_voiced_16khz_wav(assets):
    import soundfile as sf

    info = sf.info(assets / "assets/HT_ref_audio.wav")
    assert (info.format, info.subtype, info.samplerate, info.channels) == ("WAV", "PCM_16", 16000, 1)
    assert info.frames == 16000  # 1 s
    wave, _ = sf.read(assets / "assets/HT_ref_audio.wav", dtype="float32")
    spectrum = np.abs(np.fft.rfft(wave))
    assert 0.4 < np.abs(wave).max() <= 0.5
    assert 100 <= np.argmax(spectrum[:2000]) * 16000 / wave.size <= 1500  # energy sits in the voiced harmonics


class _TagLoader(yaml.SafeLoader):
    """Reads HyperPyYAML's ``!new:module.Class`` mappings as plain dicts with a ``__class__`` entry."""


_TagLoader.add_multi_constructor("!new:", lambda loader, suffix, node: {"__class__": suffix,
                                                                        **loader.construct_mapping(node, deep=True)})


def test_flow_yaml_names_the_stepaudio2_classes_and_flow_pt_matches_it(assets):
    import torch

    text = (assets / "assets/token2wav/flow.yaml").read_text()
    flow = yaml.load(text, Loader=_TagLoader)["flow"]
    prefix = t2w.FLOW_MODULE_PREFIX
    assert flow["__class__"] == f"{prefix}.flow.flow.CausalMaskedDiffWithXvec"
    assert flow["encoder"]["__class__"] == f"{prefix}.transformer.upsample_encoder_v2.UpsampleConformerEncoderV2"
    assert flow["decoder"]["__class__"] == f"{prefix}.flow.flow_matching.CausalConditionalCFM"
    assert flow["decoder"]["estimator"]["__class__"] == f"{prefix}.flow.decoder_dit.DiT"
    # the interfaces the vocoder, the speaker model and the tokenizer fix
    assert (flow["output_size"], flow["spk_embed_dim"], flow["vocab_size"]) == (80, 192, 6561)
    assert flow["input_size"] == flow["encoder"]["input_size"] == flow["encoder"]["output_size"]
    assert (flow["encoder"]["pre_lookahead_len"], flow["encoder"]["up_stride"]) == (3, 2)
    assert flow["decoder"]["estimator"]["in_channels"] == 4 * flow["output_size"]

    state = torch.load(assets / "assets/token2wav/flow.pt", map_location="cpu", weights_only=True)
    assert [(k, tuple(v.shape)) for k, v in state.items()] == t2w.flow_parameter_shapes()
    assert all(v.dtype == torch.float32 and torch.isfinite(v).all() for v in state.values())
    assert state["input_embedding.weight"].shape == (flow["vocab_size"], flow["input_size"])
    assert state["decoder.estimator.in_proj.weight"].shape[1] == flow["decoder"]["estimator"]["in_channels"]

    published = t2w.flow_yaml("cosyvoice2")
    assert re.findall(r"!new:(\S+)", published)[0] == "cosyvoice2.flow.flow.CausalMaskedDiffWithXvec"


def test_hift_pt_holds_every_key_at_its_real_shape(assets):
    import torch

    state = torch.load(assets / "assets/token2wav/hift.pt", map_location="cpu", weights_only=True)
    assert [(k, tuple(v.shape)) for k, v in state.items()] == t2w.hift_parameter_shapes()
    assert len(state) == 328 and sum(v.numel() for v in state.values()) == 20_821_295
    assert all(v.dtype == torch.float32 and torch.isfinite(v).all() for v in state.values())
    v = state["ups.0.parametrizations.weight.original1"].contiguous()  # a window over a short vector, copied whole
    assert v.shape == (512, 256, 16) and v.std() > 0.5


def _session(path: Path):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def test_campplus_onnx_maps_fbank_frames_to_a_192_d_embedding(assets):
    path = assets / "assets/token2wav/campplus.onnx"
    onnx.checker.check_model(str(path), full_check=True)
    session = _session(path)
    assert [(i.name, i.type) for i in session.get_inputs()] == [("input", "tensor(float)")]
    fbank = np.random.default_rng(0).standard_normal((1, 73, 80)).astype(np.float32)
    (embedding,) = session.run(None, {"input": fbank})
    assert embedding.shape == (1, 192) and np.isfinite(embedding).all()


def test_speech_tokenizer_onnx_runs_and_gives_fsq_ids(assets):
    path = assets / "assets/token2wav/speech_tokenizer_v2_25hz.onnx"
    onnx.checker.check_model(str(path), full_check=True)
    feats = np.random.default_rng(0).standard_normal((1, 128, 100)).astype(np.float32)
    (ids,) = _session(path).run(None, {"feats": feats, "feats_length": np.array([100], dtype=np.int32)})
    assert ids.shape == (1, 25) and ids.dtype == np.int64  # 100 Hz mels -> 25 Hz tokens
    assert 0 <= ids.min() and ids.max() <= 6560 and len(set(ids.ravel().tolist())) > 5


def _s3tokenizer_key(node, initializer: str) -> str | None:
    """The state-dict key the ``s3tokenizer`` package's ONNX reader gives an initializer that ``node`` reads (its
    naming rules, restated: a few initializer names are matched, everything else by node name)."""
    by_name = {"onnx::Conv_2216": "encoder.conv1.weight", "onnx::Conv_2217": "encoder.conv1.bias",
               "onnx::Conv_2218": "encoder.conv2.weight", "onnx::Conv_2219": "encoder.conv2.bias",
               "onnx::MatMul_2536": "quantizer._codebook.project_down.weight",
               "quantizer.project_in.bias": "quantizer._codebook.project_down.bias"}
    if initializer in by_name:
        return by_name[initializer]
    if node.op_type == "LayerNormalization":
        suffix = "weight" if initializer == node.input[1] else "bias"
        return "encoder." + node.name.replace("/LayerNormalization", "")[1:].replace("/", ".") + "." + suffix
    assert "blocks" in node.name, f"{node.name} reads initializer {initializer}: the reader would reject it"
    key = node.name[1:].replace("/", ".").replace("MatMul", "weight").replace("Add_1", "bias")
    key = key.replace("Mul", "weight").replace("Add", "bias")
    return "encoder." + key.replace("mlp.mlp", "mlp").replace("fsmn_block.Conv", "fsmn_block.weight")


def test_speech_tokenizer_initializers_name_every_s3tokenizer_v2_weight(assets):
    model = onnx.load(str(assets / "assets/token2wav/speech_tokenizer_v2_25hz.onnx"))
    shapes = {i.name: tuple(i.dims) for i in model.graph.initializer}
    found = {}
    for node in model.graph.node:
        for name in node.input:
            if name in shapes:
                key = _s3tokenizer_key(node, name)
                shape = shapes[name]
                found[key] = shape[::-1] if len(shape) == 2 else shape  # the reader transposes MatMul weights
    d = 1280
    expected = {"encoder.conv1.weight": (d, 128, 3), "encoder.conv1.bias": (d,), "encoder.conv2.weight": (d, d, 3),
                "encoder.conv2.bias": (d,), "quantizer._codebook.project_down.weight": (8, d),
                "quantizer._codebook.project_down.bias": (8,)}
    for i in range(6):
        b = f"encoder.blocks.{i}"
        expected.update({f"{b}.attn.query.weight": (d, d), f"{b}.attn.query.bias": (d,), f"{b}.attn.key.weight": (d, d),
                         f"{b}.attn.value.weight": (d, d), f"{b}.attn.value.bias": (d,), f"{b}.attn.out.weight": (d, d),
                         f"{b}.attn.out.bias": (d,), f"{b}.attn.fsmn_block.weight": (d, 1, 31),
                         f"{b}.attn_ln.weight": (d,), f"{b}.attn_ln.bias": (d,), f"{b}.mlp.0.weight": (4 * d, d),
                         f"{b}.mlp.0.bias": (4 * d,), f"{b}.mlp.2.weight": (d, 4 * d), f"{b}.mlp.2.bias": (d,),
                         f"{b}.mlp_ln.weight": (d,), f"{b}.mlp_ln.bias": (d,)})
    assert found == expected
    assert sum(math.prod(s) for s in expected.values()) == 123_714_568  # what S3TokenizerV2 holds
    assert all(i.data_type == onnx.TensorProto.FLOAT for i in model.graph.initializer)
