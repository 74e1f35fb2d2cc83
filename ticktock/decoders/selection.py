"""Token selection shared by every decoder: the unit grammar, then greedy or keyed sampling.

Greedy picks the argmax of the grammar-masked logits. Sampling (temperature > 0, optional top-k / top-p)
uses the Gumbel-max trick with noise drawn from a generator keyed by (seed, session, chunk, position in
chunk). The sample at a position is therefore a pure function of that position's logits and its key:
a lossless speculative decoder that "samples from the target at each position and keeps going while the
sample equals the draft token" commits exactly the tokens AR sampling commits with the same seed, and
the output distribution is the model's (each position gets fresh, independent noise).

The key is explicit: the selector is made for one session (``Sampling.selector``), and every ``choose``
names the chunk it decides for, so no caller sets hidden state before asking.

Drafts made before the audio arrives (``TokenSelector.for_drafts``) must not see that noise: a draft that
samples with the very noise its verification will draw is accepted wherever the two distributions put the
same token first after the noise, far more often than a real drafter's tokens are. The paper's drafts are
deterministic (``greedy``: accepted with the target's probability of the draft's argmax); ``independent``
samples with noise keyed apart; ``shared`` keeps the coupling, behind a knob (a deployment that keys its
sampler by position could do the same; it is beyond the paper).

Example::

    >>> import torch
    >>> from ticktock.adapters.base import UnitProtocol
    >>> p = UnitProtocol(unit_open=0, unit_close=1, listen=2, speak=3, chunk_eos=4, turn_eos=5)
    >>> sel = Sampling().selector(p, session_id="s1", tools_enabled=False)
    >>> sel.choose(torch.tensor([0., 0., 1., 3., 9., 0.]), prefix=[], chunk_index=0)   # grammar: a decision first
    3
"""

from __future__ import annotations

import copy
import hashlib
import math
from dataclasses import dataclass, replace
from typing import Sequence

import torch

from ticktock.adapters.base import UnitProtocol
from ticktock.decoders.idle import DRAFT_SELECTIONS
from ticktock.errors import ConfigError


class SamplingError(ConfigError, ValueError):
    """A sampling setting is out of range (the message names the key and what is allowed)."""


@dataclass(frozen=True)
class Sampling:
    """The run's sampling settings (config ``sampling.*`` and the run's ``seed``), validated once.

    Example::

        >>> Sampling(temperature=0.7, top_p=0.9, seed=3).greedy
        False
        >>> Sampling(top_p=2.0)
        Traceback (most recent call last):
        ...
        ticktock.decoders.selection.SamplingError: sampling.top_p: must be in (0, 1], got 2.0
    """

    temperature: float = 0.0
    top_k: int = 0
    top_p: float = 1.0
    seed: int = 0

    def __post_init__(self):
        _check_number("sampling.temperature", self.temperature, "0 (greedy) or a number from 0.01 to 100",
                      lambda v: v == 0 or 0.01 <= v <= 100)  # below 0.01 a float32 logit / T overflows to inf
        _check_number("sampling.top_p", self.top_p, "in (0, 1]", lambda v: 0 < v <= 1)
        _check_int("sampling.top_k", self.top_k, "an integer >= 0 (0: off)", lambda v: v >= 0)
        _check_int("seed", self.seed, "an integer", lambda v: True)

    @property
    def greedy(self) -> bool:
        return self.temperature == 0.0

    def selector(self, protocol: UnitProtocol, session_id: str, tools_enabled: bool) -> "TokenSelector":
        """The token selector of one session (its samples are keyed by the seed and ``session_id``)."""
        return TokenSelector(protocol, self, session_id, tools_enabled)


def _check_number(key: str, value, allowed: str, ok) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or not ok(value):
        raise SamplingError(f"{key}: must be {allowed}, got {value!r}")


def _check_int(key: str, value, allowed: str, ok) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not ok(value):
        raise SamplingError(f"{key}: must be {allowed}, got {value!r}")


_DRAFT_KEY = 0x5EED_D4AF_7000  # mixed into the session key for ``independent`` drafts


class TokenSelector:
    """Chooses the committed token of one session's positions: grammar, then greedy or keyed sampling."""

    def __init__(self, protocol: UnitProtocol, sampling: Sampling = Sampling(), session_id: str = "",
                 tools_enabled: bool = True):
        self.protocol = protocol
        self.sampling = sampling
        self.tools_enabled = tools_enabled
        digest = hashlib.sha256(f"{sampling.seed}:{session_id}".encode()).digest()
        self.session_key = int.from_bytes(digest[:6], "little")
        self._masks: dict[tuple[str, frozenset[int], int], torch.Tensor] = {}
        self._turn_open: dict[int, bool] = {}

    def set_turn_open(self, chunk_index: int, turn_open: bool) -> None:
        """Whether the assistant's turn is open when chunk ``chunk_index`` starts (set by the session state when
        the chunk before it is committed); it masks the first token for protocols with ``listen_closes_turn``
        False. Every caller deciding for that chunk (its idle-window drafts, its post-audio step) sees the
        same value."""
        self._turn_open[chunk_index] = turn_open

    @property
    def greedy(self) -> bool:
        return self.sampling.greedy

    def for_drafts(self, selection: str) -> "TokenSelector":
        """The selector a hypothesis decodes with before its audio arrives (``selection``: one of
        ``DRAFT_SELECTIONS``; see the module docstring). It shares this selector's grammar and turn state, so a
        later ``set_turn_open`` holds for both; only the choice differs. Under greedy decoding all are this one.

        Example (at T = 1 the draft takes the argmax; the committed token is a sample)::

            >>> import torch
            >>> from ticktock.adapters.base import UnitProtocol
            >>> p = UnitProtocol(unit_open=0, unit_close=1, listen=2, speak=3, chunk_eos=4, turn_eos=5)
            >>> sel = Sampling(temperature=1.0).selector(p, session_id="s1", tools_enabled=False)
            >>> sel.for_drafts("greedy").choose(torch.tensor([0., 0., 1., 1.2, 0., 0.]), prefix=[], chunk_index=0)
            3
            >>> sel.for_drafts("shared") is sel
            True
        """
        if selection not in DRAFT_SELECTIONS:
            raise SamplingError(f"draft selection: must be one of {', '.join(DRAFT_SELECTIONS)}, got {selection!r}")
        if selection == "shared" or self.greedy:
            return self
        twin = copy.copy(self)  # shallow: the grammar masks and the turn state stay shared
        if selection == "greedy":
            twin.sampling = replace(self.sampling, temperature=0.0)
        else:
            twin.session_key = self.session_key ^ _DRAFT_KEY
        return twin

    def _mask(self, prefix: Sequence[int], vocab: int, device, chunk_index: int | None) -> torch.Tensor:
        mode, ids = self.protocol.allowed(prefix, self.tools_enabled, self._turn_open.get(chunk_index, False))
        key = (mode, ids, vocab)
        mask = self._masks.get(key)
        if mask is None:
            index = torch.as_tensor(sorted(i for i in ids if i < vocab), dtype=torch.long)
            mask = torch.zeros(vocab, dtype=torch.bool) if mode == "only" else torch.ones(vocab, dtype=torch.bool)
            mask[index] = mode == "only"
            self._masks[key] = mask = mask.to(device)
        return mask

    def masked(self, logits: torch.Tensor, prefix: Sequence[int], chunk_index: int | None = None) -> torch.Tensor:
        """Logits with the grammar applied (disallowed tokens at -inf)."""
        return logits.masked_fill(~self._mask(prefix, logits.shape[-1], logits.device, chunk_index), float("-inf"))

    def choose(self, logits: torch.Tensor, prefix: Sequence[int], chunk_index: int) -> int:
        """The token committed in chunk ``chunk_index`` after ``prefix`` (the chunk's tokens so far), given
        this row of logits. Under sampling the noise is keyed by (seed, session, chunk_index, len(prefix))."""
        scores = self.masked(logits, prefix, chunk_index)
        if self.greedy:
            return int(scores.argmax())
        noise = self._gumbel(chunk_index, len(prefix), scores)
        return int((self._filtered(scores / self.sampling.temperature) + noise).argmax())

    def ranked(self, logits: torch.Tensor, prefix: Sequence[int], k: int, chunk_index: int | None = None) -> list[int]:
        """The k best tokens under the grammar (greedy ranking), best first."""
        scores = self.masked(logits, prefix, chunk_index)
        k = min(k, int(torch.isfinite(scores).sum()))
        return [int(i) for i in scores.topk(k).indices]

    def _filtered(self, scores: torch.Tensor) -> torch.Tensor:
        top_k, top_p = self.sampling.top_k, self.sampling.top_p
        if 0 < top_k < scores.shape[-1]:
            threshold = scores.topk(top_k).values[-1]
            scores = scores.masked_fill(scores < threshold, float("-inf"))
        if top_p < 1.0:
            ordered, order = scores.sort(descending=True)
            cumulative = ordered.softmax(-1).cumsum(-1)
            drop = cumulative - ordered.softmax(-1) >= top_p  # keep the smallest set reaching top_p
            scores = scores.clone()
            scores[order[drop]] = float("-inf")
        return scores

    def _gumbel(self, chunk_index: int, position: int, like: torch.Tensor) -> torch.Tensor:
        generator = torch.Generator(device="cpu")
        generator.manual_seed(hash((self.session_key, chunk_index, position)) & 0x7FFF_FFFF_FFFF_FFFF)
        uniform = torch.rand(like.shape[-1], generator=generator, dtype=torch.float64).clamp_(1e-12, 1 - 1e-12)
        return (-(-uniform.log()).log()).to(device=like.device, dtype=like.dtype)
