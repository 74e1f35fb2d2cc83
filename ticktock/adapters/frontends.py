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
        self.causal_granularity_ms = 1000 // embeds_per_second  # one frame per embedding, its previous as context
        # The previous frame's energies are the next frame's context: a silent chunk after speech is not encoded as
        # one after silence, so a silence hypothesis is encoded from the current state (``ticktock certify`` checks it)
        self.silence_depends_on_state = True

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


def mel_filterbank(sample_rate: int, n_fft: int, n_mels: int, low_hz: float = 60.0, high_hz: float | None = None) -> torch.Tensor:
    """Triangular mel filters (HTK mel scale, peak 1) as a [n_fft // 2 + 1, n_mels] matrix."""
    high_hz = high_hz or sample_rate / 2

    def to_mel(hz):
        return 2595.0 * torch.log10(1.0 + hz / 700.0)

    def to_hz(mel):
        return 700.0 * (10.0 ** (mel / 2595.0) - 1.0)

    edges = to_hz(torch.linspace(float(to_mel(torch.tensor(low_hz))), float(to_mel(torch.tensor(high_hz))), n_mels + 2))
    bins = torch.linspace(0, sample_rate / 2, n_fft // 2 + 1)
    lower, centre, upper = edges[:-2, None], edges[1:-1, None], edges[2:, None]
    rising = (bins[None] - lower) / (centre - lower)
    falling = (upper - bins[None]) / (upper - centre)
    return torch.clamp(torch.minimum(rising, falling), min=0.0).T.contiguous()


@dataclass(frozen=True)
class LogMelState:
    """Streaming state: samples not yet framed, and the mel frames kept as left context + pending."""

    samples: torch.Tensor
    mel: torch.Tensor


class LogMelConvFrontend(nn.Module):
    """Log-mel (25 ms window, 10 ms hop) -> 100 ms frame groups -> causal convolutions -> hidden size.

    Every 10 mel frames (100 ms) are stacked into one vector and projected; two causal convolutions over
    the groups add 400 ms of left context; a last projection and LayerNorm give the LLM's embedding. It is
    exactly streamable: the state carries the mel frames of the receptive field (and samples that do not
    fill a window yet) across chunks, so encoding a session chunk by chunk equals encoding it at once. The
    log floor (``floor``) makes room tone below about -60 dBFS indistinguishable from digital silence.

    Example::

        >>> fe = LogMelConvFrontend(hidden_size=64, channels=32)
        >>> emb, state = fe.encode(torch.zeros(16000), fe.initial_state())
        >>> tuple(emb.shape)
        (10, 64)
    """

    def __init__(self, hidden_size: int, channels: int = 256, n_mels: int = 64, embeds_per_second: int = 10,
                 sample_rate: int = 16_000, floor: float = 1e-3, kernel: int = 3, layers: int = 2):
        super().__init__()
        self.sample_rate = sample_rate
        self.n_fft, self.hop = sample_rate // 40, sample_rate // 100  # 25 ms window, 10 ms hop
        self.group = 100 // embeds_per_second  # mel frames per embedding
        self.embeds_per_second = embeds_per_second
        self.causal_granularity_ms = 1000 // embeds_per_second  # causal convolutions over whole frame groups
        # 400 ms of left context: the first embeddings of a silent chunk after speech differ from those after silence,
        # so a silence hypothesis is encoded from the current state (``ticktock certify`` checks it)
        self.silence_depends_on_state = True
        self.n_mels = n_mels
        self.floor = floor
        self.config = {"hidden_size": hidden_size, "channels": channels, "n_mels": n_mels,
                       "embeds_per_second": embeds_per_second, "sample_rate": sample_rate, "floor": floor,
                       "kernel": kernel, "layers": layers}
        self.register_buffer("window", torch.hann_window(self.n_fft, periodic=True), persistent=False)
        self.register_buffer("filters", mel_filterbank(sample_rate, self.n_fft, n_mels), persistent=False)
        self.stack = nn.Linear(n_mels * self.group, channels)
        self.convs = nn.ModuleList(nn.Conv1d(channels, channels, kernel) for _ in range(layers))
        self.context_frames = layers * (kernel - 1) * self.group
        self.project = nn.Linear(channels, hidden_size)
        self.norm = nn.LayerNorm(hidden_size)

    def silence_level(self) -> float:
        return float(torch.log(torch.tensor(self.floor)))

    def initial_state(self) -> LogMelState:
        samples = torch.zeros(self.n_fft - self.hop)  # so that 1 s of audio gives exactly 100 frames
        mel = torch.full((self.context_frames, self.n_mels), self.silence_level())
        return LogMelState(samples, mel)

    def log_mel(self, samples: torch.Tensor) -> tuple[torch.Tensor, int]:
        """Log-mel frames [n, n_mels] of every whole window in ``samples``, and the samples consumed."""
        if samples.shape[0] < self.n_fft:
            return torch.zeros(0, self.n_mels), 0
        frames = samples.unfold(0, self.n_fft, self.hop)
        power = torch.fft.rfft(frames * self.window, dim=-1).abs().pow(2)
        return torch.log(power @ self.filters + self.floor), frames.shape[0] * self.hop

    def embed_frames(self, mel: torch.Tensor) -> torch.Tensor:
        """Embeddings of mel frames [..., context_frames + group * n, n_mels] -> [..., n, hidden]."""
        groups = mel.reshape(*mel.shape[:-2], mel.shape[-2] // self.group, self.group * mel.shape[-1])
        x = torch.nn.functional.gelu(self.stack(groups)).transpose(-1, -2)
        for conv in self.convs:
            x = torch.nn.functional.gelu(conv(x))
        return self.norm(self.project(x.transpose(-1, -2)))

    def encode(self, samples: torch.Tensor, state: LogMelState) -> tuple[torch.Tensor, LogMelState]:
        buffer = torch.cat([state.samples, samples.reshape(-1).float()])
        mel, consumed = self.log_mel(buffer)
        mel = torch.cat([state.mel, mel])
        count = (mel.shape[0] - self.context_frames) // self.group
        used = self.context_frames + count * self.group
        embeds = self.embed_frames(mel[:used]) if count else torch.zeros(0, self.project.out_features)
        return embeds, LogMelState(buffer[consumed:], mel[count * self.group :])
