"""The embedded model's tokenizer: a small byte-level BPE with the unit-protocol special tokens.

Trained on the text the model reads and writes (replies, tool calls, tool responses, the system prompt),
saved as ``tokenizer.json`` and loadable with ``AutoTokenizer.from_pretrained(folder)``.

Example::

    >>> tok = train_tokenizer(["The capital of France is Paris."] * 20, vocab_size=300)
    >>> tok.decode(tok.encode(" The capital", add_special_tokens=False))
    ' The capital'
"""

from __future__ import annotations

from typing import Iterable

from ticktock.adapters.hf_unit import PROTOCOL_TOKENS

SPECIAL_TOKENS = ["<|pad|>", "<|im_start|>", "<|im_end|>", *PROTOCOL_TOKENS.values()]


def train_tokenizer(texts: Iterable[str], vocab_size: int):
    """Byte-level BPE (any text encodes; no unknown tokens) with the special tokens at ids 0..14.

    Digits are always single tokens (as in Llama and Qwen tokenizers): a number spoken digit by digit
    maps to one token per digit, which a small model learns far more easily than arbitrary merges.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    core = Tokenizer(models.BPE())
    core.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Digits(individual_digits=True), pre_tokenizers.ByteLevel(add_prefix_space=False)]
    )
    core.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    core.train_from_iterator(texts, trainer=trainer)
    return PreTrainedTokenizerFast(tokenizer_object=core, pad_token="<|pad|>", additional_special_tokens=SPECIAL_TOKENS[1:])
