"""Evaluation / training splits: which seeds and which item instances belong to which split.

The shipped evaluation corpus and the training data for the embedded model come from the same generator.
They never share a seed or an item instance:

* **Seeds.** Evaluation seeds are ``0 <= seed < EVAL_SEED_LIMIT``; training seeds are ``>= EVAL_SEED_LIMIT``.
  :func:`check_seed` raises on a mix-up.
* **Question-style items** (a surface form of a fact or instruction: "(template, fact)" for knowledge
  questions, "(phrasing, instruction)" for AlpacaEval-style instructions). For every fact, the phrasings
  that may ask about it are ranked by a stable hash; the first ``max(1, n // 4)`` are held out for
  evaluation and the rest are training. So every fact still appears in training through other phrasings
  (the model must learn the facts), but no evaluation question text is ever a training question.
  See :func:`held_out_forms`.
* **Procedural items** (reasoning puzzles, story scripts, tool requests): an item is identified by a
  canonical id string of its parameters; ids whose stable hash falls in the lowest ``EVAL_SHARE`` are
  evaluation items. See :func:`split_of`.

The assignment depends only on item ids, never on seeds or on the number of sessions.

Example::

    >>> check_seed("eval", 0), check_seed("train", 1_000_000)
    (0, 1000000)
    >>> split_of("bbh/navigate/F3-B3")
    'train'
    >>> held_out_forms("capital:france", ["t1", "t2", "t3", "t4", "t5", "t6", "t7", "t8"])
    ['t7', 't1']
"""

from __future__ import annotations

import hashlib
from typing import Sequence

SPLITS = ("eval", "train")
EVAL_SEED_LIMIT = 1_000_000
EVAL_SHARE = 0.25


class SplitError(ValueError):
    """A seed or split that would mix evaluation and training data."""


def check_seed(split: str, seed: int) -> int:
    """Return ``seed`` if it belongs to ``split``; raise SplitError naming the allowed range otherwise."""
    if split not in SPLITS:
        raise SplitError(f"--split must be one of {SPLITS}, got {split!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise SplitError(f"--seed must be a non-negative integer, got {seed!r}")
    if split == "eval" and seed >= EVAL_SEED_LIMIT:
        raise SplitError(f"--seed {seed} is a training seed: eval seeds are 0..{EVAL_SEED_LIMIT - 1}")
    if split == "train" and seed < EVAL_SEED_LIMIT:
        raise SplitError(f"--seed {seed} is reserved for evaluation: train seeds are >= {EVAL_SEED_LIMIT}")
    return seed


def unit_hash(key: str) -> float:
    """A number in [0, 1) from ``key``, identical in every process and on every machine."""
    digest = hashlib.sha256(key.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def split_of(item_id: str) -> str:
    """Split of a procedural item: "eval" for the lowest EVAL_SHARE of hashes, else "train"."""
    return "eval" if unit_hash(f"split:{item_id}") < EVAL_SHARE else "train"


def held_out_forms(content_id: str, form_ids: Sequence[str]) -> list[str]:
    """The surface forms of ``content_id`` reserved for evaluation: ``max(1, n // 4)`` of its ``n`` forms when
    n >= 2, none when n == 1 (training always keeps at least one form of every content)."""
    if not form_ids:
        return []
    ranked = sorted(form_ids, key=lambda form: unit_hash(f"form:{form}:{content_id}"))
    count = max(1, len(ranked) // 4) if len(ranked) > 1 else 0
    return ranked[:count]


def form_split(content_id: str, form_id: str, form_ids: Sequence[str]) -> str:
    """Split of one (form, content) pair, given all the forms that can express that content."""
    return "eval" if form_id in held_out_forms(content_id, form_ids) else "train"
