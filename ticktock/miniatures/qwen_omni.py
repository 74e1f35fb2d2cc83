"""A miniature Qwen2.5-Omni checkpoint in the released on-disk layout, for tests and CPU smoke runs.

Hidden 64, 2 layers, the real 152,064 vocabulary rows and special-token ids, the protocol tokens appended after
them: the real loading path (``ticktock.adapters.qwen_omni``) loads it as it loads the 7B weights. Its config.json
is marked as a miniature (``"ticktock_miniature"``, ``ticktock.adapters.checkpoint.miniature_marker``: random
weights, the parameters a replay loads), so runs on it say so in run.json and in the tables.

Example::

    >>> import tempfile
    >>> from pathlib import Path
    >>> folder = write_streaming_slm_miniature(Path(tempfile.mkdtemp()) / "mini")
    >>> sorted(p.name for p in folder.iterdir())[:2]
    ['config.json', 'merges.txt']
    >>> json.loads((folder / "config.json").read_text())["ticktock_miniature"]["written_by"]
    'ticktock.miniatures'
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from ticktock.adapters.bpe_tokenizer import write_bpe_tokenizer
from ticktock.adapters.checkpoint import MINIATURE_KEY, miniature_marker
from ticktock.adapters.qwen_omni import (BASE_VOCAB, QWEN_OMNI_SPECIAL_TOKENS, VOCAB_ROWS, checkpoint_key, quiet_transformers)

NOT_LOADED = ("thinker.visual.",)  # Thinker weights the adapter drops after loading (not counted in the marker)

# The stand-in for the unknown fine-tune: the MiniCPM-o protocol tokens that Qwen lacks, appended from id 151665.
MINIATURE_PROTOCOL_TOKENS = ("<unit>", "</unit>", "<|listen|>", "<|speak|>", "<|chunk_eos|>", "<|turn_eos|>",
                             "<|interrupt|>", "<tool_response>", "</tool_response>")

MINIATURE_TEXTS = (
    "Hello! How can I help you today? Sure, I can do that. The weather in Paris is sunny and warm.",
    "Let me check your order status. Your package has shipped and will arrive tomorrow morning.",
    '{"name": "track_order", "arguments": {"order_id": "A1234"}} {"status": "shipped"}',
    "Yes. No. Okay, thank you. One moment please. Is there anything else I can help you with?",
)


def miniature_config(vocab_rows: int = VOCAB_ROWS) -> dict:
    """config.json of a full Qwen2.5-Omni checkpoint whose Thinker is tiny (hidden 64, 2 layers, audio d_model 32)."""
    from transformers import Qwen2_5OmniConfig

    thinker = dict(
        audio_config=dict(num_mel_bins=128, encoder_layers=2, encoder_attention_heads=2, encoder_ffn_dim=64,
                          d_model=32, output_dim=64, n_window=100),
        vision_config=dict(depth=1, hidden_size=32, intermediate_size=64, num_heads=2, out_hidden_size=64,
                           fullatt_block_indexes=[0]),
        text_config=dict(vocab_size=vocab_rows, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, tie_word_embeddings=False,
                         max_position_embeddings=32768,
                         rope_parameters={"rope_type": "default", "rope_theta": 1e6, "mrope_section": [2, 3, 3]}),
        vision_start_token_id=151652, vision_end_token_id=151653, pad_token_id=151643,
        architectures=["Qwen2_5OmniThinkerForConditionalGeneration"])
    config = Qwen2_5OmniConfig(thinker_config=thinker, enable_audio_output=True).to_dict()
    config["architectures"] = ["Qwen2_5OmniModel"]
    return config


PREPROCESSOR = {  # the audio fields of the released preprocessor_config.json (plus its processor class)
    "feature_extractor_type": "WhisperFeatureExtractor", "processor_class": "Qwen2_5OmniProcessor",
    "feature_size": 128, "sampling_rate": 16000, "hop_length": 160, "n_fft": 400, "chunk_length": 300,
    "n_samples": 4800000, "nb_max_frames": 30000, "padding_side": "right", "padding_value": 0.0, "dither": 0.0,
    "return_attention_mask": True,
}


def write_streaming_slm_miniature(out: Path, seed: int = 0, vocab_rows: int = VOCAB_ROWS) -> Path:
    """Write a tiny random Qwen2.5-Omni checkpoint in the released on-disk layout into ``out``; return ``out``.

    ``config.json`` (a full ``qwen2_5_omni`` config), ``model-0000{1,2}-of-00002.safetensors`` +
    ``model.safetensors.index.json`` (bf16; shard 1 the Thinker under ``thinker.*``, shard 2 a token
    ``talker.*``/``token2wav.*`` part that loading must skip), the Qwen2 tokenizer files with the released special
    ids and the protocol tokens from 151665 on, ``preprocessor_config.json``. Behaviour for a replay: the
    ``<|speak|>`` row of ``lm_head`` is minus the ``<|listen|>`` row and the ``<|interrupt|>`` and ``<tool_call>``
    rows are zero, so greedy decoding decides listen or speak (never a tool unit of noise; with seed 0 it
    speaks, K text tokens and a terminator per chunk) and sampling mixes every kind of unit.
    """
    from safetensors.torch import save_file
    from transformers import Qwen2_5OmniThinkerConfig, Qwen2_5OmniThinkerForConditionalGeneration

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    with quiet_transformers():  # the default talker config's ids lie outside its tiny vocabulary: harmless here
        config = miniature_config(vocab_rows)
    added = {BASE_VOCAB + i: t for i, t in enumerate(QWEN_OMNI_SPECIAL_TOKENS + MINIATURE_PROTOCOL_TOKENS)}
    write_bpe_tokenizer(out, added, base_size=BASE_VOCAB, texts=MINIATURE_TEXTS * 4, merges=300,
                        config={"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>", "bos_token": None,
                                "model_max_length": 32768, "clean_up_tokenization_spaces": False,
                                "split_special_tokens": False})
    state = torch.random.get_rng_state()
    torch.manual_seed(seed)
    try:
        with quiet_transformers():
            thinker = Qwen2_5OmniThinkerForConditionalGeneration(Qwen2_5OmniThinkerConfig(**config["thinker_config"]))
    finally:
        torch.random.set_rng_state(state)
    with torch.no_grad():  # decisions: speak = -listen, so one of them always beats interrupt/tool (rows of 0)
        head = thinker.lm_head.weight
        ids = {t: i for i, t in added.items() if i < vocab_rows}  # (a deliberately too small embedding, in tests)
        head[ids["<|speak|>"]] = -head[ids["<|listen|>"]]
        for token in ("<|interrupt|>", "<tool_call>"):
            head[ids.get(token, slice(0))] = 0.0
    tensors = {checkpoint_key(k): v.to(torch.bfloat16).contiguous() for k, v in thinker.state_dict().items()}
    extra = {"talker.model.embed_tokens.weight": torch.zeros(8, 4, dtype=torch.bfloat16),
             "token2wav.code2wav_dit_model.proj.weight": torch.zeros(4, 4, dtype=torch.bfloat16)}
    shards = {"model-00001-of-00002.safetensors": tensors, "model-00002-of-00002.safetensors": extra}
    for file, part in shards.items():
        save_file(part, str(out / file), metadata={"format": "pt"})
    index = {"metadata": {"total_size": sum(t.numel() * t.element_size() for p in shards.values() for t in p.values())},
             "weight_map": {key: file for file, part in shards.items() for key in part}}
    (out / "model.safetensors.index.json").write_text(json.dumps(index, indent=1), encoding="utf-8")
    config[MINIATURE_KEY] = miniature_marker(sum(v.numel() for k, v in tensors.items() if not k.startswith(NOT_LOADED)))
    (out / "config.json").write_text(json.dumps(config, indent=1), encoding="utf-8")
    (out / "preprocessor_config.json").write_text(json.dumps(PREPROCESSOR, indent=1), encoding="utf-8")
    return out
