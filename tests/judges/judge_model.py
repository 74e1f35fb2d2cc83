"""A tiny random-weight judge model on disk for the judge tests: a real LlamaForCausalLM (two layers, hidden
size 16) and a real byte-level BPE tokenizer (``ticktock.adapters.bpe_tokenizer``), in which the digits
"1".."5" are single tokens. Its verdicts mean nothing; they are real forwards of a real transformers model."""

from __future__ import annotations

import json
from pathlib import Path

CHAT_TEMPLATE = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
                 "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
TEXTS = ["rate the reply on a scale from 1 to 5", "the capital of france is paris", "what is the capital of france",
         "the assistant reply to the user request", "a correct reference answer is given"]
BASE_SIZE = 300
SPECIAL = {BASE_SIZE: "<|endoftext|>", BASE_SIZE + 1: "<|im_start|>", BASE_SIZE + 2: "<|im_end|>"}


def write_judge_model(folder: Path, chat_template: bool = True, seed: int = 0) -> Path:
    """Save the tiny model and its tokenizer into ``folder`` (with a chat template unless ``chat_template`` is False)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from ticktock.adapters.bpe_tokenizer import write_bpe_tokenizer

    config = {"eos_token": "<|endoftext|>", "pad_token": "<|endoftext|>"}
    if chat_template:
        config["chat_template"] = CHAT_TEMPLATE
    write_bpe_tokenizer(folder, SPECIAL, base_size=BASE_SIZE, texts=TEXTS * 4, merges=40, config=config)
    torch.manual_seed(seed)
    model = LlamaForCausalLM(LlamaConfig(vocab_size=BASE_SIZE + len(SPECIAL), hidden_size=16, intermediate_size=32,
                                         num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=2,
                                         max_position_embeddings=1024, eos_token_id=BASE_SIZE, pad_token_id=BASE_SIZE))
    model.save_pretrained(folder)
    return folder


def without_chat_template(folder: Path) -> Path:
    """Drop the chat template from a saved tokenizer (a base model's folder)."""
    path = folder / "tokenizer_config.json"
    settings = json.loads(path.read_text())
    settings.pop("chat_template", None)
    path.write_text(json.dumps(settings))
    return folder
