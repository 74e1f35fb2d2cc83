"""MiniCPM-o 4.5's token layout as published, and a stand-in tokenizer in that layout.

``MINICPMO_ADDED`` lists the family's added tokens in id order from ``BASE_VOCAB`` (its ``added_tokens.json``);
``EXTRA_TOKENS`` the tokens each fine-tune adds after them. ``tokenizer_files`` writes tokenizer files whose special
tokens sit at exactly those ids over a small BPE (``ticktock.adapters.bpe_tokenizer``): the tokenizer of a
random-init cost run (``model.random_init``) and of the miniature checkpoints (``ticktock.miniatures``).

Example::

    >>> MINICPMO_ADDED.index("<unit>") + BASE_VOCAB, MINICPMO_ADDED.index("<|listen|>") + BASE_VOCAB
    (151683, 151705)
"""

from __future__ import annotations

import json
from pathlib import Path


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


def tokenizer_files(out: Path, added: dict[int, str], bpe: tuple[dict[str, int], list] | None = None) -> None:
    """MiniCPM-o 4.5's tokenizer files in ``out``: a byte-level BPE (``bpe``: its vocabulary and merges, e.g. the
    embedded model's; default: 1,500 merges trained on the mini corpus's manifest), ``<unk>`` at its published id,
    ``added`` at theirs, and ``bad_token_ids`` as MiniCPM-o lists them."""
    from ticktock.adapters.bpe_tokenizer import train_byte_level_bpe, write_qwen2_tokenizer
    from ticktock.shipped import resource_path

    if bpe is None:
        texts = resource_path("manifests/ticktock-mini/manifest.jsonl").read_text(encoding="utf-8").splitlines()
        bpe = train_byte_level_bpe(texts, merges=1500)
    write_qwen2_tokenizer(out, *bpe, added, BASE_VOCAB,
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
    from ticktock.adapters.bpe_tokenizer import byte_symbols

    symbols = byte_symbols()
    byte_level = set(symbols)  # a piece with another character (an added token's) is no byte sequence
    marking = {c for c, b in symbols.items() if b >= 0x80 or b in b"()"}
    return sorted(i for token, i in vocab.items() if byte_level.issuperset(token) and not marking.isdisjoint(token))
