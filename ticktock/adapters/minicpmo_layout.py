"""MiniCPM-o 4.5's checkpoint layout: what a folder holds for both runtimes that load it, TickTock's adapter
(``ticktock.adapters.minicpmo``) and vLLM-Omni's MiniCPM-o 4.5 pipeline (``trust_remote_code``), whatever its sizes.

- ``config.json`` with the real keys (``checkpoint_config``): the LLM's Qwen3 fields at the top level,
  ``"version": "4.5"`` (what routes a ``model_type: minicpmo`` checkpoint to the 4.5 pipeline), ``query_num`` /
  ``image_size`` / ``audio_pool_step`` / ``audio_chunk_length``, the sub-configs ``vision_config``, ``audio_config``,
  ``tts_config``, ``slice_config``, and an ``auto_map`` naming the code files beside it;
- those code files, our own (``minicpmo_remote``: config, tokenizer and processor classes), ``processor_config.json``,
  ``preprocessor_config.json`` and ``auto_map`` entries in ``tokenizer_config.json`` (``write_remote_code``);
- the parts a loader requires that a text benchmark never reads, small and seeded (``vision_tensors``: ``vpm.*``
  SigLIP and ``resampler.*``; ``talker_tensors``: ``tts.*``), and safetensors shards listed by
  ``model.safetensors.index.json`` (``write_shards``).

The miniatures (``ticktock.miniatures``) and the embedded model v9 (``ticktock.embedded.real_layout``) are both
written with it.
"""

from __future__ import annotations

import json
from pathlib import Path

VISION_SHAPES = {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 2,
                 "num_channels": 3, "image_size": 980, "patch_size": 14, "hidden_act": "gelu_pytorch_tanh",
                 "layer_norm_eps": 1e-6, "attention_dropout": 0.0, "model_type": "siglip_vision_model"}
TTS_SHAPES = {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 2,
              "num_key_value_heads": 2, "hidden_act": "silu", "rms_norm_eps": 1e-6, "max_position_embeddings": 4096,
              "num_audio_tokens": 6562, "num_text_tokens": 152064, "num_vq": 1, "audio_bos_token_id": 151687,
              "text_eos_token_id": 151692, "normalize_projected_hidden": True, "attention_type": "full_attention",
              "backbone_model": "llama", "audio_tokenizer_type": "s3tokenizer", "model_type": "minicpmtts"}
SLICE_CONFIG = {"patch_size": 14, "max_slice_nums": 1, "scale_resolution": 448, "model_type": "minicpmv"}
# the published top-level multimodal keys (query_num: resampler queries per image slice)
MULTIMODAL_KEYS = {"version": "4.5", "query_num": 64, "image_size": 448, "patch_size": 14, "drop_vision_last_layer": False,
                   "batch_vision_input": True, "use_image_id": True, "vision_batch_size": 16, "audio_pool_step": 5,
                   "audio_chunk_length": 1.0, "stream_input": True, "init_vision": True, "init_audio": True,
                   "init_tts": True}
TTS_BACKBONE_VOCAB = 32000  # the Talker's Llama backbone keeps LlamaConfig's default vocabulary (its rows unused)
REMOTE_CODE = "minicpmo_remote"  # the package of the code files the checkpoint ships
AUTO_MAP = {"AutoConfig": "configuration_minicpmo.MiniCPMOConfig",
            "AutoProcessor": "processing_minicpmo.MiniCPMOProcessor",
            "AutoTokenizer": ["tokenization_minicpmo.MiniCPMOTokenizer", None]}


def checkpoint_config(vocab_size: int, llm: dict, audio: dict) -> dict:
    """config.json: the LLM's Qwen3 fields at the top level, the published multimodal keys and the four sub-configs.

    >>> config = checkpoint_config(151748, {"hidden_size": 128}, {"encoder_ffn_dim": 256})
    >>> config["version"], config["model_type"], config["audio_config"]["encoder_ffn_dim"] // 4
    ('4.5', 'minicpmo', 64)
    >>> config["tts_config"]["llm_dim"] == config["hidden_size"], config["tts_config"]["hidden_size"] // 2
    (True, 32)
    """
    return {"architectures": ["MiniCPMO"], "model_type": "minicpmo", "auto_map": AUTO_MAP, "vocab_size": vocab_size,
            **llm, **MULTIMODAL_KEYS, "audio_config": audio, "vision_config": VISION_SHAPES,
            "tts_config": {"llm_dim": llm["hidden_size"], **TTS_SHAPES}, "slice_config": SLICE_CONFIG,
            "torch_dtype": "bfloat16"}


def preprocessor(config: dict) -> dict:
    """``preprocessor_config.json``: the image processor's and the audio feature extractor's settings, which vLLM's
    MiniCPM-o processor reads from the folder (MiniCPM-V's image slicing, Whisper's 80-bin log-mel at 16 kHz).

    >>> preprocessor({"slice_config": {"max_slice_nums": 1, "scale_resolution": 448}, "patch_size": 14,
    ...               "use_image_id": True, "query_num": 64})["feature_extractor_type"]
    'WhisperFeatureExtractor'
    """
    return {"image_processor_type": "MiniCPMVImageProcessor", "processor_class": "MiniCPMOProcessor",
            "max_slice_nums": config["slice_config"]["max_slice_nums"],
            "scale_resolution": config["slice_config"]["scale_resolution"], "patch_size": config["patch_size"],
            "use_image_id": config["use_image_id"], "image_feature_size": config["query_num"], "slice_mode": True,
            "norm_mean": [0.5, 0.5, 0.5], "norm_std": [0.5, 0.5, 0.5], "version": 4.5,
            "feature_extractor_type": "WhisperFeatureExtractor", "feature_size": 80, "sampling_rate": 16000,
            "hop_length": 160, "chunk_length": 30, "n_fft": 400, "padding_value": 0.0, "return_attention_mask": True}


def write_remote_code(out: Path, config: dict) -> None:
    """The code files of ``REMOTE_CODE`` beside the weights, ``processor_config.json`` (the processor's settings),
    and ``auto_map`` entries in ``tokenizer_config.json``, so ``trust_remote_code`` loaders find every class."""
    from importlib.resources import files

    for source in files(__package__).joinpath(REMOTE_CODE).iterdir():
        if source.name.endswith(".py") and source.name != "__init__.py":
            (out / source.name).write_text(source.read_text(encoding="utf-8"), encoding="utf-8")
    processor = {"processor_class": "MiniCPMOProcessor", "auto_map": {"AutoProcessor": AUTO_MAP["AutoProcessor"]},
                 "query_num": config["query_num"], "scale_resolution": config["slice_config"]["scale_resolution"],
                 "patch_size": config["patch_size"], "pool_step": config["audio_pool_step"],
                 "use_image_id": config["use_image_id"], "feature_dtype": config["torch_dtype"]}
    (out / "processor_config.json").write_text(json.dumps(processor, indent=1), encoding="utf-8")
    (out / "preprocessor_config.json").write_text(json.dumps(preprocessor(config), indent=1), encoding="utf-8")
    settings = json.loads((out / "tokenizer_config.json").read_text(encoding="utf-8"))
    settings.update(auto_map={"AutoTokenizer": AUTO_MAP["AutoTokenizer"], "AutoProcessor": AUTO_MAP["AutoProcessor"]},
                    processor_class="MiniCPMOProcessor")
    (out / "tokenizer_config.json").write_text(json.dumps(settings, ensure_ascii=False, indent=1), encoding="utf-8")


def vision_tensors(config: dict) -> dict:
    """``vpm.*`` (a SigLIP vision tower without a pooling head) and ``resampler.*`` (``query_num`` queries of the
    LLM's width cross-attending, one head per 128 dimensions, to the vision tower's outputs)."""
    import torch
    from transformers import SiglipVisionConfig, SiglipVisionModel

    vision = {key: value for key, value in config["vision_config"].items() if key != "model_type"}
    vpm = SiglipVisionModel(SiglipVisionConfig(**vision, vision_use_head=False))
    width, queries, kv_width = config["hidden_size"], config["query_num"], vision["hidden_size"]
    attention = torch.nn.MultiheadAttention(width, max(1, width // 128))
    resampler = {"query": torch.randn(queries, width) * 0.02, "kv_proj.weight": torch.randn(width, kv_width) * 0.02,
                 "proj": torch.randn(width, width) * width ** -0.5,
                 **{f"attn.{k}": v for k, v in attention.state_dict().items()},
                 **{f"{norm}.{k}": v for norm in ("ln_q", "ln_kv", "ln_post")
                    for k, v in torch.nn.LayerNorm(width).state_dict().items()}}
    return {**{f"vpm.{k}": v for k, v in vpm.state_dict().items()},
            **{f"resampler.{k}": v for k, v in resampler.items()}}


def talker_tensors(tts: dict) -> dict:
    """``tts.*``: the Llama backbone (``tts.model.*``), ``emb_text``, ``projector_semantic`` (Linear-ReLU-Linear
    from the LLM's width), ``emb_code.0`` and the weight-normed ``head_code.0`` (its g and v)."""
    import torch
    from transformers import LlamaConfig, LlamaModel

    hidden, codes = tts["hidden_size"], tts["num_audio_tokens"]
    backbone = LlamaModel(LlamaConfig(vocab_size=TTS_BACKBONE_VOCAB, hidden_size=hidden,
                                      intermediate_size=tts["intermediate_size"],
                                      num_hidden_layers=tts["num_hidden_layers"],
                                      num_attention_heads=tts["num_attention_heads"],
                                      num_key_value_heads=tts["num_key_value_heads"],
                                      max_position_embeddings=tts["max_position_embeddings"]))
    projector = {"linear1": torch.nn.Linear(tts["llm_dim"], hidden), "linear2": torch.nn.Linear(hidden, hidden)}
    head = torch.randn(codes, hidden) * 0.02
    return {**{f"tts.model.{k}": v for k, v in backbone.state_dict().items()},
            "tts.emb_text.weight": torch.randn(tts["num_text_tokens"], hidden) * 0.02,
            **{f"tts.projector_semantic.{name}.{k}": v for name, layer in projector.items()
               for k, v in layer.state_dict().items()},
            "tts.emb_code.0.weight": torch.randn(codes, hidden) * 0.02,
            "tts.head_code.0.parametrizations.weight.original0": head.norm(dim=1, keepdim=True),
            "tts.head_code.0.parametrizations.weight.original1": head}


def write_shards(out: Path, tensors: dict, shards: int = 2) -> None:
    """The tensors in ``shards`` safetensors files plus ``model.safetensors.index.json``, as the real checkpoints."""
    from safetensors.torch import save_file

    keys = sorted(tensors)
    size = -(-len(keys) // shards)
    weight_map = {}
    for index in range(shards):
        name = f"model-{index + 1:05d}-of-{shards:05d}.safetensors"
        part = keys[index * size:(index + 1) * size]
        save_file({key: tensors[key] for key in part}, str(out / name), metadata={"format": "pt"})
        weight_map.update({key: name for key in part})
    (out / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}, indent=1),
                                                      encoding="utf-8")
