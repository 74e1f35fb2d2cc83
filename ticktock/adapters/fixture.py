"""A tiny randomly initialised full-duplex model built in code, for tests (never the product default).

Two Llama layers of width 32 over a character-level tokenizer with the unit-protocol special tokens, and
the trivial ``FrameEnergyFrontend``. Everything is seeded, fp32 and eager attention, so decoders can be
checked token for token against autoregressive decoding.

Example::

    >>> adapter = build_fixture_adapter(seed=0)
    >>> adapter.protocol.max_text_tokens
    8
"""

from __future__ import annotations

import string

import torch

from ticktock.adapters.frontends import FrameEnergyFrontend
from ticktock.adapters.hf_unit import PROTOCOL_TOKENS, HFUnitAdapter, protocol_from_tokenizer, resolve_device

SPECIAL_TOKENS = ["<|pad|>", "<|im_start|>", "<|im_end|>", *PROTOCOL_TOKENS.values()]
CHARACTERS = string.ascii_letters + string.digits + string.punctuation + " \n"
PROMPT_CHUNK_TOKENS = 128  # the prompt's prefill in forwards of this many tokens (``HFUnitAdapter``)


def build_char_tokenizer():
    """A character-level fast tokenizer with the protocol's special tokens (ids 0..len(SPECIAL)-1)."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {token: i for i, token in enumerate(SPECIAL_TOKENS + ["<unk>"] + list(CHARACTERS))}
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Split(Regex("(?m)."), behavior="isolated")
    core.decoder = decoders.Fuse()
    core.add_special_tokens(SPECIAL_TOKENS)
    return PreTrainedTokenizerFast(tokenizer_object=core, unk_token="<unk>", pad_token="<|pad|>")


def build_fixture_adapter(
    seed: int = 0,
    hidden_size: int = 32,
    num_layers: int = 2,
    max_text_tokens: int = 8,
    max_tool_tokens: int = 24,
    attn_implementation: str = "eager",
    context_limit: int | None = None,
    context_reserve: int = 512,
    device: str | None = None,
) -> HFUnitAdapter:
    from transformers import LlamaConfig, LlamaForCausalLM

    tokenizer = build_char_tokenizer()
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        intermediate_size=2 * hidden_size,
        num_hidden_layers=num_layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=8192,
        tie_word_embeddings=False,
    )
    config._attn_implementation = attn_implementation
    generator_state = torch.random.get_rng_state()
    torch.manual_seed(seed)
    try:
        model = LlamaForCausalLM(config).float().to(resolve_device(device))
        frontend = FrameEnergyFrontend(hidden_size)
    finally:
        torch.random.set_rng_state(generator_state)
    protocol = protocol_from_tokenizer(tokenizer, max_text_tokens=max_text_tokens, max_tool_tokens=max_tool_tokens)
    # Its character-level tokens make fdb_v3's prompt (the tools' schemas) 4,206 tokens: one forward of eager attention
    # takes 1.6 s on a CPU core, forwards of 128 tokens 0.3 s, and give the same cache bit for bit.
    return HFUnitAdapter(model, tokenizer, frontend, protocol, name="fixture", system_prompt="test",
                         context_limit=context_limit, context_reserve=context_reserve,
                         prompt_chunk_tokens=PROMPT_CHUNK_TOKENS)
