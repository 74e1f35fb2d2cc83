"""Token selection shared by every decoder: the unit grammar, then greedy or keyed sampling.

Greedy picks the argmax of the grammar-masked logits. Sampling (temperature > 0, optional top-k / top-p)
uses the Gumbel-max trick with noise drawn from a generator keyed by (seed, session, chunk, position in
chunk). The sample at a position is therefore a pure function of that position's logits and its key:
a lossless speculative decoder that "samples from the target at each position and keeps going while the
sample equals the draft token" commits exactly the tokens AR sampling commits with the same seed, and
the output distribution is the model's (each position gets fresh, independent noise).

Example::

    >>> import torch
    >>> from ticktock.adapters.base import UnitProtocol
    >>> p = UnitProtocol(unit_open=0, unit_close=1, listen=2, speak=3, chunk_eos=4, turn_eos=5)
    >>> sel = TokenSelector(p)
    >>> sel.choose(torch.tensor([0., 0., 1., 3., 9., 0.]), prefix=[])   # grammar: a decision first
    3
"""

from __future__ import annotations

import hashlib
from typing import Sequence

import torch

from ticktock.adapters.base import UnitProtocol


class TokenSelector:
    def __init__(
        self,
        protocol: UnitProtocol,
        temperature: float = 0.0,
        top_k: int = 0,
        top_p: float = 1.0,
        seed: int = 0,
    ):
        if temperature < 0:
            raise ValueError(f"sampling.temperature must be >= 0, got {temperature}")
        if not 0 < top_p <= 1:
            raise ValueError(f"sampling.top_p must be in (0, 1], got {top_p}")
        self.protocol = protocol
        self.temperature = float(temperature)
        self.top_k = int(top_k or 0)
        self.top_p = float(top_p)
        self.seed = int(seed)
        self.tools_enabled = True
        self.session_key = 0
        self.chunk_index = 0
        self._masks: dict[tuple[str, frozenset[int], int], torch.Tensor] = {}

    @property
    def greedy(self) -> bool:
        return self.temperature == 0.0

    def start_session(self, session_id: str, tools_enabled: bool) -> None:
        digest = hashlib.sha256(f"{self.seed}:{session_id}".encode()).digest()
        self.session_key = int.from_bytes(digest[:6], "little")
        self.tools_enabled = tools_enabled

    def start_chunk(self, chunk_index: int) -> None:
        self.chunk_index = chunk_index

    def _mask(self, prefix: Sequence[int], vocab: int, device) -> torch.Tensor:
        mode, ids = self.protocol.allowed(prefix, self.tools_enabled)
        key = (mode, ids, vocab)
        mask = self._masks.get(key)
        if mask is None:
            index = torch.as_tensor(sorted(i for i in ids if i < vocab), dtype=torch.long)
            mask = torch.zeros(vocab, dtype=torch.bool) if mode == "only" else torch.ones(vocab, dtype=torch.bool)
            mask[index] = mode == "only"
            self._masks[key] = mask = mask.to(device)
        return mask

    def masked(self, logits: torch.Tensor, prefix: Sequence[int]) -> torch.Tensor:
        """Logits with the grammar applied (disallowed tokens at -inf)."""
        return logits.masked_fill(~self._mask(prefix, logits.shape[-1], logits.device), float("-inf"))

    def choose(self, logits: torch.Tensor, prefix: Sequence[int]) -> int:
        """The token committed after ``prefix`` (the chunk's tokens so far) given this row of logits."""
        scores = self.masked(logits, prefix)
        if self.greedy:
            return int(scores.argmax())
        return int((self._filtered(scores / self.temperature) + self._gumbel(len(prefix), scores)).argmax())

    def ranked(self, logits: torch.Tensor, prefix: Sequence[int], k: int) -> list[int]:
        """The k best tokens under the grammar (greedy ranking), best first."""
        scores = self.masked(logits, prefix)
        k = min(k, int(torch.isfinite(scores).sum()))
        return [int(i) for i in scores.topk(k).indices]

    def _filtered(self, scores: torch.Tensor) -> torch.Tensor:
        if self.top_k > 0 and self.top_k < scores.shape[-1]:
            threshold = scores.topk(self.top_k).values[-1]
            scores = scores.masked_fill(scores < threshold, float("-inf"))
        if self.top_p < 1.0:
            ordered, order = scores.sort(descending=True)
            cumulative = ordered.softmax(-1).cumsum(-1)
            drop = cumulative - ordered.softmax(-1) >= self.top_p  # keep the smallest set reaching top_p
            scores = scores.clone()
            scores[order[drop]] = float("-inf")
        return scores

    def _gumbel(self, position: int, like: torch.Tensor) -> torch.Tensor:
        generator = torch.Generator(device="cpu")
        generator.manual_seed(hash((self.session_key, self.chunk_index, position)) & 0x7FFF_FFFF_FFFF_FFFF)
        uniform = torch.rand(like.shape[-1], generator=generator, dtype=torch.float64).clamp_(1e-12, 1 - 1e-12)
        return (-(-uniform.log()).log()).to(device=like.device, dtype=like.dtype)
