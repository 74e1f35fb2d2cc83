"""Miniature checkpoints of the MiniCPM-o 4.5 family in the real on-disk layout, for tests and CPU smoke runs.

A miniature is what ``hf download`` would give, shrunk, and two runtimes load the same folder: TickTock's adapter
(``ticktock.adapters.minicpmo``, natively) and vLLM-Omni's MiniCPM-o 4.5 pipeline (Thinker, Talker and Code2Wav
stages, with ``trust_remote_code``). It holds:

- ``config.json`` with the real keys: the LLM's Qwen3 fields at the top level, ``"version": "4.5"`` (what routes
  a ``model_type: minicpmo`` checkpoint to the 4.5 pipeline), ``query_num`` / ``image_size`` / ``audio_pool_step``
  / ``audio_chunk_length``, the sub-configs ``vision_config``, ``audio_config``, ``tts_config``, ``slice_config``,
  and an ``auto_map`` naming the code files beside it;
- those code files, our own, from ``ticktock/adapters/minicpmo_remote`` (config, tokenizer and processor
  classes that transformers loads with ``trust_remote_code``), ``processor_config.json``, ``preprocessor_config.json`` (image processor and audio features), and ``auto_map``
  entries in ``tokenizer_config.json``;
- safetensors shards listed by ``model.safetensors.index.json`` with every key a real loader requires, at the
  shapes the config gives (see the table);
- tokenizer files (``vocab.json``, ``merges.txt``, ``tokenizer_config.json`` with ``bad_token_ids``) whose special
  tokens sit at their published ids (``<unit>`` 151683, ``<|listen|>`` 151705, ``<|chunk_eos|>`` 151718, ...;
  vocabulary 151748).

=============================  ======================================================================
``llm.*``                      Qwen3: hidden 128, 2 layers, 4 heads / 2 KV heads of 32; output layer tied
                               to the embedding (the real one is untied: tying halves the file)
``apm.*``                      Whisper encoder: width 64, 2 layers, 2 heads, FFN 256 (4 x width)
``audio_projection_layer.*``   Linear(``encoder_ffn_dim // 4`` -> 128) - ReLU - Linear(128 -> 128)
``vpm.*``                      SigLIP: width 64, 2 layers, 2 heads, patch 14, 980-pixel position grid
``resampler.*``                64 queries of width 128 (one head per 128), keys / values from width 64
``tts.*``                      Talker: Llama backbone (width 64, 2 layers, 2 heads of 32, its unused
                               32000-row embedding), ``emb_text`` (152064 rows), ``projector_semantic``,
                               ``emb_code.0`` and the weight-normed ``head_code.0`` (6562 codec ids)
=============================  ======================================================================

Head sizes are 32 where vLLM's CPU attention runs them (the LLM, the Talker). Only the widths are small and the
weights random (about 72 MB, most of it the two vocabulary-sized tables). Code2Wav's vocoder assets
(``assets/token2wav/*``, ``assets/HT_ref_audio.wav``) are not written: vLLM-Omni's Code2Wav stage reads them
when it loads its weights, so a server of a miniature loads that stage with ``load_format: dummy`` (the assets
are then read at the first spoken reply). Every config.json written here is marked (``"ticktock_miniature":
{"random_weights": true, "parameters": N, "written_by": "ticktock.miniatures"}``, ``checkpoint.miniature_marker``;
N counts what a replay loads: ``llm.*``, ``apm.*``, ``audio_projection_layer.*``), so a run on a miniature says
so in run.json and the tables label it and leave the paper's columns empty for it.

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
    >>> sorted(p.name for p in folder.iterdir())[:4]
    ['config.json', 'configuration_minicpmo.py', 'merges.txt', 'model-00001-of-00002.safetensors']
    >>> config = json.loads((folder / "config.json").read_text())
    >>> config["ticktock_miniature"]["random_weights"], config["version"], config["auto_map"]["AutoConfig"]
    (True, '4.5', 'configuration_minicpmo.MiniCPMOConfig')
"""

from __future__ import annotations

import json
from pathlib import Path

from ticktock.adapters.checkpoint import MINIATURE_KEY, miniature_marker
from ticktock.adapters.minicpmo_layout import (checkpoint_config, talker_tensors, vision_tensors, write_remote_code,
                                               write_shards)
from ticktock.adapters.minicpmo_tokens import BASE_VOCAB, EXTRA_TOKENS, MINICPMO_ADDED, tokenizer_files

LLM_SHAPES = {"hidden_size": 128, "intermediate_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4,
              "num_key_value_heads": 2, "head_dim": 32, "max_position_embeddings": 40960, "rope_theta": 1000000.0,
              "rms_norm_eps": 1e-6, "tie_word_embeddings": True, "hidden_act": "silu", "attention_bias": False}
AUDIO_SHAPES = {"d_model": 64, "encoder_layers": 2, "encoder_attention_heads": 2, "encoder_ffn_dim": 256,
                "decoder_layers": 1, "decoder_attention_heads": 2, "decoder_ffn_dim": 256, "num_mel_bins": 80,
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
    """One checkpoint folder: tokenizer files, config.json, the code files ``auto_map`` names and the safetensors
    shards of ``parts`` (all when None).

    ``fine_tune``: the vocabulary rows of ``extra_tokens`` are the mean of the others, as Gander initialises
    ``<|backchannel|>`` (the weights are random either way).
    """
    added = {BASE_VOCAB + i: token for i, token in enumerate(MINICPMO_ADDED + extra_tokens)}
    vocab_size = BASE_VOCAB + len(added)
    tokenizer_files(out, added)
    config = checkpoint_config(vocab_size, LLM_SHAPES, AUDIO_SHAPES)
    tensors = random_tensors(config, seed, len(extra_tokens) if fine_tune else 0)
    config[MINIATURE_KEY] = miniature_marker(loaded_parameters(tensors))
    (out / "config.json").write_text(json.dumps(config, indent=1), encoding="utf-8")
    write_remote_code(out, config)
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
        tensors = {**{f"llm.{k}": v for k, v in llm.state_dict().items()}, **frontend.state_dict(),
                   **vision_tensors(config), **talker_tensors(config["tts_config"])}
    finally:
        torch.random.set_rng_state(saved)
    if config["tie_word_embeddings"]:
        del tensors["llm.lm_head.weight"]  # the tied output layer is the embedding (the loaders tie it back)
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
        if key not in tensors:  # a tied output layer
            continue
        rows = tensors[key].detach().clone()
        rows[-count:] = rows[:-count].mean(0, keepdim=True)
        tensors[key] = rows


