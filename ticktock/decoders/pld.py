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

from dataclasses import dataclass

from ticktock.decoders.contract import Decoder, DecoderSettings, knob
from ticktock.decoders.trees import DraftTree, trim_draft
from ticktock.decoders.ngram import NgramIndex


@dataclass(frozen=True)
class PLDSettings(DecoderSettings):
    max_ngram: int = knob(3, int, minimum=1)
    num_pred: int = knob(10, int, minimum=1)
    allow_short: bool = knob(False, bool)
    dummy_token: int | None = knob(None, int, minimum=0, optional=True)


class PromptLookupDecoder(Decoder):
    name = "pld"
    Settings = PLDSettings

    def __init__(self, name: str | None = None, **settings):
        super().__init__(name, **settings)
        self.index = NgramIndex(self.settings.max_ngram)

    def start_session(self, session) -> None:
        self.index = NgramIndex(self.settings.max_ngram)

    def propose(self, step) -> DraftTree | None:
        self.index.sync(step.context_tokens())
        found = self.index.lookup(self.settings.max_ngram, self.settings.num_pred, self.settings.allow_short)
        draft = trim_draft(found, step.protocol, len(step.output))
        if not draft and self.settings.dummy_token is not None:
            draft = [self.settings.dummy_token]
        if not draft:
            return None
        tree = DraftTree()
        tree.add_chain(draft, source="pld")
        return tree
