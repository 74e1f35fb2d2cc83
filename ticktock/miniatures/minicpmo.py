"""Miniature checkpoints of the MiniCPM-o 4.5 family in the real on-disk layout, for tests and CPU smoke runs.

A miniature is what ``hf download`` would give, shrunk: ``config.json`` with the real keys (the LLM's
Qwen3 fields at the top level, ``audio_config`` for the Whisper encoder, ``audio_pool_step``), safetensors
shards listed by ``model.safetensors.index.json`` with the published key names (``llm.*``, ``apm.*``,
``audio_projection_layer.*``, and a few ``vpm.*`` / ``tts.*`` tensors the loader must skip), and tokenizer files
(``vocab.json``, ``merges.txt``, ``tokenizer_config.json`` with ``bad_token_ids``) whose special tokens sit at
their published ids (``<unit>`` 151683, ``<|listen|>`` 151705, ``<|chunk_eos|>`` 151718, ...; vocabulary
151748). Only the widths are small (LLM hidden 64, 2 layers; encoder width 32, 2 layers) and the weights random,
so the real loading path (``ticktock.adapters.minicpmo``) loads a miniature exactly as it loads the real weights.
Every config.json written here is marked (``"ticktock_miniature": {"random_weights": true, "parameters": N,
"written_by": "ticktock.miniatures"}``, ``checkpoint.miniature_marker``), so a run on a miniature says so in
run.json and the tables label it and leave the paper's columns empty for it.

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
    >>> json.loads((folder / "config.json").read_text())["ticktock_miniature"]["random_weights"]
    True
"""

from __future__ import annotations

import json
from pathlib import Path

from ticktock.adapters.checkpoint import MINIATURE_KEY, miniature_marker
from ticktock.adapters.minicpmo_tokens import BASE_VOCAB, EXTRA_TOKENS, MINICPMO_ADDED, tokenizer_files

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
    tensors = random_tensors(config, seed, len(extra_tokens) if fine_tune else 0)
    config[MINIATURE_KEY] = miniature_marker(loaded_parameters(tensors))
    (out / "config.json").write_text(json.dumps(config, indent=1), encoding="utf-8")
    if parts is not None:
        tensors = {key: value for key, value in tensors.items() if key.startswith(parts)}
    write_shards(out, tensors)


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


LOADED_PARTS = ("llm.", "apm.", "audio_projection_layer.")  # what the adapter loads (vpm.*, tts.* are skipped)


def loaded_parameters(tensors: dict) -> int:
    """How many parameters a replay loads from these tensors (the parts in ``LOADED_PARTS``).

    >>> import torch
    >>> loaded_parameters({"llm.a": torch.zeros(2, 3), "apm.b": torch.zeros(4), "tts.c": torch.zeros(9)})
    10
    """
    return sum(value.numel() for key, value in tensors.items() if key.startswith(LOADED_PARTS))


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
