"""A model adapter that writes a scripted output per chunk, for tests whose timelines are computed by hand.

``ScriptedAdapter({0: [3], 1: [4, 10, 11, 5]})`` answers chunk 0 with ``<|listen|>`` and chunk 1 with
``<|speak|> a b <|chunk_eos|>``: the token it predicts after a query position is the script's token at
that position of the current unit (the unit count and the position in the unit are part of the model
state, so snapshot/restore roll them back). Chunks without a script listen. Audio is 10 embeddings per
chunk (a tuple, not token ids).
"""

from __future__ import annotations

import torch

from ticktock.adapters.base import AdapterState, ModelAdapter, UnitProtocol

PROTOCOL = UnitProtocol(unit_open=1, unit_close=2, listen=3, speak=4, chunk_eos=5, turn_eos=6, max_text_tokens=8)
VOCAB = 20


class ScriptedAdapter(ModelAdapter):
    name = "scripted"
    protocol = PROTOCOL

    def __init__(self, script: dict[int, list[int]] | None = None):
        self.script = dict(script or {})
        self.length, self.unit, self.position = 0, -1, 0

    def replica(self) -> "ScriptedAdapter":
        return ScriptedAdapter(self.script)

    def start_session(self, system_prompt, tools) -> list[int]:
        self.length, self.unit, self.position = 0, -1, 0
        return []

    def encode_audio(self, samples):
        return tuple([0.0] * 10)

    def peek_audio(self, samples):
        return tuple([0.0] * 10)

    def silence_audio(self, num_samples: int):
        return tuple([0.0] * 10)

    def _next_token(self) -> int:
        output = self.script.get(self.unit, [PROTOCOL.listen])
        return output[self.position] if self.position < len(output) else PROTOCOL.chunk_eos

    def forward(self, segments, tree=None, logits_from: int = 0):
        rows = []
        for segment in segments:
            for item in segment:
                if isinstance(segment, list) and item == PROTOCOL.unit_open:
                    self.unit, self.position = self.unit + 1, 0
                elif isinstance(segment, list) and self.unit >= 0 and item != PROTOCOL.unit_close:
                    self.position += 1
                logits = torch.full((VOCAB,), -10.0)
                logits[self._next_token()] = 10.0
                rows.append(logits)
                self.length += 1
        return torch.stack(rows[logits_from:]) if logits_from < len(rows) else torch.zeros((0, VOCAB))

    @property
    def cache_length(self) -> int:
        return self.length

    def snapshot(self) -> AdapterState:
        return AdapterState(self.length, None, {"unit": self.unit, "position": self.position})

    def restore(self, state: AdapterState) -> None:
        self.length, self.unit, self.position = state.cache_length, state.extra["unit"], state.extra["position"]

    def keep(self, start: int, indices) -> None:
        self.length = start + len(list(indices))

    def encode_text(self, text: str) -> list[int]:
        return [10 + (ord(c) % 10) for c in text]

    def decode_tokens(self, ids) -> str:
        return " ".join(str(i) for i in ids)

    @property
    def vocab_size(self) -> int:
        return VOCAB
