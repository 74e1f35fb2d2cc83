"""Prompt Lookup Decoding (PLD; Saxena 2023, as Spec-Bench runs it): drafts copied from the context.

Before every target forward the last ``max_ngram`` (3) committed tokens are looked up in the session's
committed token context (system prompt, unit tokens, tool responses and every output so far; audio
positions excluded, as they have no token ids); the continuation after the *leftmost* occurrence of the
*longest* matching n-gram, ``num_pred`` (10) tokens long, is verified in that forward (``ngram.py``).
Drafts are cut after a chunk terminator and at the chunk's token cap, and PLD drafts on the audio
prefill forward too (its pattern is then the unit-opening tokens).

No match: the original appends a dummy one-token draft (token id 100) so every step is a 2-token
forward; we take a plain AR step by default (``dummy_token: null``), which is never slower; set
``dummy_token`` to an id to reproduce the original.
"""

from __future__ import annotations

from ticktock.decoders.base import Decoder, DraftTree, trim_draft
from ticktock.decoders.ngram import NgramIndex


class PromptLookupDecoder(Decoder):
    def __init__(self, max_ngram: int = 3, num_pred: int = 10, allow_short: bool = False,
                 dummy_token: int | None = None, name: str = "pld"):
        if max_ngram < 1 or num_pred < 1:
            raise ValueError(f"pld: max_ngram and num_pred must be >= 1, got {max_ngram}, {num_pred}")
        self.name = name
        self.max_ngram = max_ngram
        self.num_pred = num_pred
        self.allow_short = allow_short
        self.dummy_token = dummy_token
        self.index = NgramIndex(max_ngram)

    def start_session(self, session) -> None:
        self.index = NgramIndex(self.max_ngram)

    def propose(self, step) -> DraftTree | None:
        self.index.sync(step.context_tokens())
        found = self.index.lookup(self.max_ngram, self.num_pred, self.allow_short)
        draft = trim_draft(found, step.protocol, len(step.output))
        if not draft and self.dummy_token is not None:
            draft = [self.dummy_token]
        if not draft:
            return None
        tree = DraftTree()
        tree.add_chain(draft, source="pld")
        return tree

    def describe(self) -> dict:
        return {"name": self.name, "max_ngram": self.max_ngram, "num_pred": self.num_pred,
                "allow_short": self.allow_short, "dummy_token": self.dummy_token}
