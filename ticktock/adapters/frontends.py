"""Streaming audio front-ends: 16 kHz samples in, audio embeddings for the LLM out.

A front-end is causal: the embeddings of chunk t depend only on audio up to the end of chunk t. It is
functional about its streaming state: ``encode(samples, state) -> (embeddings [n, hidden], new_state)``,
so an adapter snapshots and restores it by keeping a reference to the state object.

Samples that do not fill a whole frame are carried in the state to the next call, so a 1.035 s first
chunk followed by 1 s chunks still yields 10 embeddings per chunk at 10 embeddings per second.

Example::

    >>> import torch
    >>> fe = FrameEnergyFrontend(hidden_size=16)
    >>> emb, state = fe.encode(torch.zeros(16000), fe.initial_state())
    >>> tuple(emb.shape)
    (10, 16)
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn


@dataclass(frozen=True)
class FramedState:
    """Samples carried over (fewer than one frame) and the front-end's own context."""

    leftover: torch.Tensor
    context: torch.Tensor


def split_frames(samples: torch.Tensor, leftover: torch.Tensor, frame: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Prepend ``leftover``, cut whole frames [n, frame], return (frames, new leftover)."""
    joined = torch.cat([leftover, samples.reshape(-1).to(leftover.dtype)])
    count = joined.shape[0] // frame
    return joined[: count * frame].reshape(count, frame), joined[count * frame :]


class FrameEnergyFrontend(nn.Module):
    """A deliberately simple front-end for the test fixture model.

    Per 100 ms frame: log energies in ``bands`` FFT bands, concatenated with the previous frame's
    (the streaming context), then one linear layer to the LLM's hidden size.
    """

    def __init__(self, hidden_size: int, embeds_per_second: int = 10, sample_rate: int = 16_000, bands: int = 8):
        super().__init__()
        self.frame = sample_rate // embeds_per_second
        self.bands = bands
        self.embeds_per_second = embeds_per_second
        self.project = nn.Linear(2 * bands, hidden_size)

    def initial_state(self) -> FramedState:
        return FramedState(torch.zeros(0), torch.full((self.bands,), -10.0))

    def band_energies(self, frames: torch.Tensor) -> torch.Tensor:
        spectrum = torch.fft.rfft(frames, dim=-1).abs().pow(2)
        bands = torch.tensor_split(spectrum, self.bands, dim=-1)
        return torch.stack([b.mean(dim=-1) for b in bands], dim=-1).clamp_min(1e-10).log10()

    def encode(self, samples: torch.Tensor, state: FramedState) -> tuple[torch.Tensor, FramedState]:
        frames, leftover = split_frames(samples, state.leftover, self.frame)
        if frames.shape[0] == 0:
            return torch.zeros(0, self.project.out_features), FramedState(leftover, state.context)
        energies = self.band_energies(frames)
        previous = torch.cat([state.context[None], energies[:-1]])
        embeds = self.project(torch.cat([energies, previous], dim=-1))
        return embeds, FramedState(leftover, energies[-1])
