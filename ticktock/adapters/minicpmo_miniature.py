"""Miniature checkpoints of the MiniCPM-o 4.5 family in the real on-disk layout, for tests and CPU smoke runs.

A miniature is what ``hf download`` would give, shrunk: ``config.json`` with the real keys (the LLM's
Qwen3 fields at the top level, ``audio_config`` for the Whisper encoder, ``audio_pool_step``), safetensors
shards listed by ``model.safetensors.index.json`` with the published key names (``llm.*``, ``apm.*``,
``audio_projection_layer.*``, and a few ``vpm.*`` / ``tts.*`` tensors the loader must skip), and tokenizer files
(``vocab.json``, ``merges.txt``, ``tokenizer_config.json`` with ``bad_token_ids``) whose special tokens sit at
their published ids (``<unit>`` 151683, ``<|listen|>`` 151705, ``<|chunk_eos|>`` 151718, ...; vocabulary
151748). Only the widths are small (LLM hidden 64, 2 layers; encoder width 32, 2 layers) and the weights random,
so the real loading path (``ticktock.adapters.minicpmo``) loads a miniature exactly as it loads the real weights.

=================  ================================================================================
``minicpmo45``     the base checkpoint
``gander``         Gander's Thinker delta (``llm.*`` with ``<|backchannel|>`` at 151748, vocabulary
                   151749, new row the mean of the others; ``audio_projection_layer.*``), with the base
                   it overlays in ``base/``
``realtime_venus`` a full checkpoint with ``<delegate>`` ``</delegate>`` ``<backend>`` ``</backend>`` added
                   at 151748-151751 (their real names and ids are not verified)
``lws``            a full checkpoint with ``<|write|>`` added at 151748 (name not verified)
=================  ================================================================================

Example::

    >>> import tempfile
    >>> from pathlib import Path
    >>> folder = write_miniature("minicpmo45", Path(tempfile.mkdtemp()) / "m")
    >>> sorted(p.name for p in folder.iterdir())[:3]
    ['config.json', 'merges.txt', 'model-00001-of-00002.safetensors']
"""

from __future__ import annotations

import json
from pathlib import Path

from ticktock.adapters.miniature_tokenizer import write_bpe_tokenizer

BASE_VOCAB = 151643  # byte-level BPE entries of the Qwen2 vocabulary (ids 0..151642)
UNK_ID = 128244  # MiniCPM-o's <unk> is an ordinary vocabulary entry
TIMBRES = [f"<|timbre_{i}|>" for i in range(7, 32)]
# MiniCPM-o 4.5's added tokens, in id order from 151643 (its added_tokens.json)
MINICPMO_ADDED = [
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>", "<|box_start|>",
    "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>", "<|vision_end|>", "<|vision_pad|>",
    "<|image_pad|>", "<|video_pad|>", "<tool_call>", "</tool_call>", "<|fim_prefix|>", "<|fim_middle|>",
    "<|fim_suffix|>", "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>", "<tool_response>", "</tool_response>",
    "<think>", "</think>", "<image>", "</image>", "<ref>", "</ref>", "<box>", "</box>", "<quad>", "</quad>", "<point>",
    "</point>", "<slice>", "</slice>", "<image_id>", "</image_id>", "<unit>", "</unit>", "<answer>", "</answer>",
    "<focus>", "</focus>", "<line>", "</line>", "<perception>", "</perception>", "<source_image>", "</source_image>",
    "<image_save_to>", "</image_save_to>", "<|audio_start|>", "<|audio|>", "<|audio_end|>", "<|spk_bos|>", "<|spk|>",
    "<|spk_eos|>", "<|tts_bos|>", "<|tts_eos|>", "<|listen|>", "<|speak|>", "<|interrupt|>", "<|vad_start|>",
    "<|vad_end|>", "<|emotion_start|>", "<|emotion_end|>", "<|speed_start|>", "<|speed_end|>", "<|pitch_start|>",
    "<|pitch_end|>", "<|turn_bos|>", "<|turn_eos|>", "<|chunk_eos|>", "<|chunk_bos|>", "<|chunk_tts_bos|>",
    "<|chunk_tts_eos|>", "<|tts_pad|>", *TIMBRES,
]
EXTRA_TOKENS = {"minicpmo45": [], "gander": ["<|backchannel|>"],
                "realtime_venus": ["<delegate>", "</delegate>", "<backend>", "</backend>"], "lws": ["<|write|>"]}
LLM_SHAPES = {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
              "num_key_value_heads": 2, "head_dim": 16, "max_position_embeddings": 40960, "rope_theta": 1000000.0,
              "rms_norm_eps": 1e-6, "tie_word_embeddings": False, "hidden_act": "silu", "attention_bias": False}
AUDIO_SHAPES = {"d_model": 32, "encoder_layers": 2, "encoder_attention_heads": 2, "encoder_ffn_dim": 64,
                "decoder_layers": 1, "decoder_attention_heads": 2, "decoder_ffn_dim": 64, "num_mel_bins": 80,
                "max_source_positions": 1500, "model_type": "whisper"}


def write_miniature(model: str, out: Path, seed: int = 0) -> Path:
    """Write the miniature checkpoint of ``model`` (a key of ``EXTRA_TOKENS``) into ``out``; returns ``out``."""
    if model not in EXTRA_TOKENS:
        raise ValueError(f"no miniature for {model!r}; choose one of {', '.join(EXTRA_TOKENS)}")
    out = Path(out)
    if model == "gander":
        write_checkpoint(out / "base", [], seed)
        write_checkpoint(out, EXTRA_TOKENS["gander"], seed + 1, parts=("llm.", "audio_projection_layer."),
                         fine_tune=True)
    else:
        write_checkpoint(out, EXTRA_TOKENS[model], seed)
    return out


def write_minicpmo45(out: Path, seed: int = 0) -> Path:
    return write_miniature("minicpmo45", out, seed)


def write_gander(out: Path, seed: int = 0) -> Path:
    return write_miniature("gander", out, seed)


def write_realtime_venus(out: Path, seed: int = 0) -> Path:
    return write_miniature("realtime_venus", out, seed)


def write_lws(out: Path, seed: int = 0) -> Path:
    return write_miniature("lws", out, seed)


def write_checkpoint(out: Path, extra_tokens: list[str], seed: int, parts: tuple[str, ...] | None = None,
                     fine_tune: bool = False) -> None:
    """One checkpoint folder: tokenizer files, config.json and the safetensors shards of ``parts`` (all when None).

    ``fine_tune``: the vocabulary rows of ``extra_tokens`` are the mean of the others, as Gander initialises
    ``<|backchannel|>`` (the weights are random either way).
    """
    added = {BASE_VOCAB + i: token for i, token in enumerate(MINICPMO_ADDED + extra_tokens)}
    vocab_size = BASE_VOCAB + len(added)
    tokenizer_files(out, added)
    config = {"architectures": ["MiniCPMO"], "model_type": "minicpmo", "vocab_size": vocab_size, **LLM_SHAPES,
              "audio_config": AUDIO_SHAPES, "audio_pool_step": 5, "torch_dtype": "bfloat16"}
    (out / "config.json").write_text(json.dumps(config, indent=1), encoding="utf-8")
    tensors = random_tensors(config, seed, len(extra_tokens) if fine_tune else 0)
    if parts is not None:
        tensors = {key: value for key, value in tensors.items() if key.startswith(parts)}
    write_shards(out, tensors)


def tokenizer_files(out: Path, added: dict[int, str]) -> None:
    from ticktock.resources import resource_path

    texts = resource_path("manifests/ticktock-mini/manifest.jsonl").read_text(encoding="utf-8").splitlines()
    write_bpe_tokenizer(out, added, BASE_VOCAB, texts, merges=1500,
                        config={"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>", "unk_token": "<unk>",
                                "bos_token": "<|im_start|>"})
    vocab = json.loads((out / "vocab.json").read_text(encoding="utf-8"))
    by_id = {i: token for token, i in vocab.items()}
    del vocab[by_id[UNK_ID]]
    vocab["<unk>"] = UNK_ID
    (out / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    settings = json.loads((out / "tokenizer_config.json").read_text(encoding="utf-8"))
    settings["bad_token_ids"] = bad_token_ids(vocab)
    (out / "tokenizer_config.json").write_text(json.dumps(settings, ensure_ascii=False, indent=1), encoding="utf-8")


def bad_token_ids(vocab: dict[str, int]) -> list[int]:
    """Like MiniCPM-o's list: pieces holding a bracket or a byte outside ASCII."""
    from ticktock.adapters.miniature_tokenizer import byte_symbols

    symbols = byte_symbols()
    bad = []
    for token, i in vocab.items():
        data = [symbols.get(c) for c in token]
        if None not in data and (any(b >= 0x80 for b in data) or b"(" in bytes(data) or b")" in bytes(data)):
            bad.append(i)
    return sorted(bad)


def random_tensors(config: dict, seed: int, new_rows: int = 0) -> dict:
    """Every tensor of the checkpoint under its published key, in bf16 (the real checkpoints' dtype)."""
    import torch
    from transformers import Qwen3ForCausalLM

    from ticktock.adapters.minicpm_audio import MiniCPMAudioFrontend
    from ticktock.adapters.minicpmo import llm_config

    saved = torch.random.get_rng_state()
    torch.manual_seed(seed)
    try:
        llm = Qwen3ForCausalLM(llm_config(config, "eager"))
        frontend = MiniCPMAudioFrontend(config["audio_config"], config["hidden_size"], config["audio_pool_step"])
        skipped = {"vpm.embeddings.patch_embedding.weight": torch.randn(8, 3, 2, 2), "tts.emb_text.weight": torch.randn(4, 8)}
    finally:
        torch.random.set_rng_state(saved)
    tensors = {**{f"llm.{k}": v for k, v in llm.state_dict().items()},
               **{k: v for k, v in frontend.state_dict().items()}, **skipped}
    if new_rows:
        mean_init_rows(tensors, new_rows)
    return {key: value.detach().to(torch.bfloat16).contiguous() for key, value in tensors.items()}


def mean_init_rows(tensors: dict, count: int) -> None:
    """The last ``count`` rows of the embedding and the output layer set to the mean of the others (Gander's
    ``_mean_init_new_rows`` for tokens added by a fine-tune)."""
    for key in ("llm.model.embed_tokens.weight", "llm.lm_head.weight"):
        rows = tensors[key].detach().clone()
        rows[-count:] = rows[:-count].mean(0, keepdim=True)
        tensors[key] = rows


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
