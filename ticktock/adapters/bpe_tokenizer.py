"""Tokenizer files in the Qwen2 on-disk layout (``vocab.json`` + ``merges.txt`` + ``tokenizer_config.json``) for
miniature checkpoints: a small byte-level BPE trained here, with the special tokens at their published ids.

The real MiniCPM-o 4.5 / Qwen2.5-Omni tokenizers hold 151,643 byte-level BPE entries (ids 0..151642) and
add their special tokens from id 151643 on, listed in ``tokenizer_config.json`` under
``added_tokens_decoder``. transformers' ``Qwen2Tokenizer`` builds the BPE from ``vocab.json`` and
``merges.txt`` and appends the added tokens in order, so an added token gets its published id only when the
vocabulary is exactly ``base_size`` long and the added ids are contiguous from there. The miniature keeps that
layout: a BPE of a few hundred merges trained on the given texts, then unreachable filler entries up to
``base_size``, then the added tokens. The real loading path (``Qwen2Tokenizer.from_pretrained``) loads it as
it loads the real files.

Example::

    >>> import tempfile
    >>> from pathlib import Path
    >>> folder = Path(tempfile.mkdtemp())
    >>> write_bpe_tokenizer(folder, {1000: "<|endoftext|>", 1001: "<unit>"}, base_size=1000,
    ...                     texts=["hello world"] * 4, merges=50, config={"eos_token": "<|endoftext|>"})
    >>> from transformers import Qwen2Tokenizer
    >>> tokenizer = Qwen2Tokenizer.from_pretrained(folder)
    >>> tokenizer.get_vocab()["<unit>"], tokenizer.decode(tokenizer.encode("hello<unit>"))
    (1001, 'hello<unit>')
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable

FILLER = "<|miniature_unused_{}|>"


def byte_symbols() -> dict[str, int]:
    """The byte-level BPE alphabet: the printable character that stands for each byte -> the byte (GPT-2's map:
    printable Latin-1 bytes stand for themselves, the other 68 bytes for the characters from U+0100 on)."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("\xa1"), ord("\xac") + 1), *range(ord("\xae"), ord("\xff") + 1)]
    others = [b for b in range(256) if b not in printable]
    return {**{chr(b): b for b in printable}, **{chr(256 + i): b for i, b in enumerate(others)}}


def train_byte_level_bpe(texts: Iterable[str], merges: int) -> tuple[dict[str, int], list[tuple[str, str]]]:
    """A byte-level BPE (256 byte symbols + up to ``merges`` merges) trained on ``texts``."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    trainer = trainers.BpeTrainer(vocab_size=len(alphabet) + merges, initial_alphabet=alphabet,
                                  show_progress=False, special_tokens=[])
    tokenizer.train_from_iterator(list(texts), trainer)
    model = json.loads(tokenizer.to_str())["model"]
    pairs = [tuple(m.split(" ", 1)) if isinstance(m, str) else tuple(m) for m in model["merges"]]
    return dict(model["vocab"]), pairs


def write_bpe_tokenizer(out: Path, added: dict[int, str], base_size: int, texts: Iterable[str], merges: int = 800,
                        config: dict | None = None) -> None:
    """Write ``vocab.json``, ``merges.txt`` and ``tokenizer_config.json`` into ``out``: a BPE of ``merges`` merges
    trained on ``texts`` (``write_qwen2_tokenizer`` lays it out).

    ``added``: id -> content of every added (special) token; the ids must be ``base_size, base_size + 1, ...``.
    ``config``: further ``tokenizer_config.json`` entries (``eos_token``, ``bad_token_ids``, ...).
    """
    vocab, pairs = train_byte_level_bpe(texts, merges)
    write_qwen2_tokenizer(out, vocab, pairs, added, base_size, config)


def write_qwen2_tokenizer(out: Path, vocab: dict[str, int], pairs: list[tuple[str, str]], added: dict[int, str],
                          base_size: int, config: dict | None = None) -> None:
    """A byte-level BPE (``vocab``: piece -> id, ``pairs``: its merges in rank order) in the Qwen2 layout: the pieces
    in id order, filler entries up to ``base_size``, then ``added`` (id -> content, ids contiguous from
    ``base_size``). A piece keeps its id when the ids below it are all taken (a BPE trained here; or another BPE's
    vocabulary with its special tokens taken out, whose places become fillers)."""
    ids = sorted(added)
    if ids != list(range(base_size, base_size + len(ids))):
        raise ValueError(f"added token ids must run contiguously from {base_size}, got {ids[:3]}...")
    if vocab and max(vocab.values()) >= base_size:
        raise ValueError(f"the BPE has ids up to {max(vocab.values())}, not below base_size {base_size}")
    full = dict(vocab)
    taken = set(vocab.values())
    full.update({FILLER.format(i): i for i in range(base_size) if i not in taken})
    full = dict(sorted(full.items(), key=lambda item: item[1]))
    out.mkdir(parents=True, exist_ok=True)
    (out / "vocab.json").write_text(json.dumps(full, ensure_ascii=False), encoding="utf-8")
    (out / "merges.txt").write_text("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in pairs), encoding="utf-8")
    decoder = {str(i): {"content": added[i], "lstrip": False, "normalized": False, "rstrip": False,
                        "single_word": False, "special": True} for i in ids}
    settings = {"tokenizer_class": "Qwen2Tokenizer", "add_prefix_space": False, "errors": "replace",
                "added_tokens_decoder": decoder, **(config or {})}
    (out / "tokenizer_config.json").write_text(json.dumps(settings, ensure_ascii=False, indent=1), encoding="utf-8")
