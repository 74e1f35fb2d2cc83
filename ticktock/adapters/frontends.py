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

    def frame_features(self, samples: torch.Tensor, state: FramedState) -> tuple[torch.Tensor, FramedState]:
        """Per whole frame of ``samples`` (after the state's leftover): its band energies beside the previous
        frame's, [n, 2 * bands] (n = 0 when no frame is whole yet), and the state after them."""
        frames, leftover = split_frames(samples, state.leftover, self.frame)
        if frames.shape[0] == 0:
            return torch.zeros(0, 2 * self.bands), FramedState(leftover, state.context)
        energies = self.band_energies(frames)
        previous = torch.cat([state.context[None], energies[:-1]])
        return torch.cat([energies, previous], dim=-1), FramedState(leftover, energies[-1])

    def encode(self, samples: torch.Tensor, state: FramedState) -> tuple[torch.Tensor, FramedState]:
        features, new_state = self.frame_features(samples, state)
        return self.project(features), new_state

    def encode_many(self, samples_list: list[torch.Tensor], states: list[FramedState]) -> list[tuple[torch.Tensor, FramedState]]:
        """``encode`` of several sessions, each from its own state, with one projection over all their frames
        (rows stacked, then split back): element i equals ``encode(samples_list[i], states[i])`` (its state exactly,
        its embeddings up to the last bits of a matmul over more rows).

        Example::

            >>> fe = FrameEnergyFrontend(hidden_size=16)
            >>> out = fe.encode_many([torch.zeros(16000), torch.zeros(800)], [fe.initial_state()] * 2)
            >>> [tuple(embeds.shape) for embeds, _ in out], tuple(out[1][1].leftover.shape)
            ([(10, 16), (0, 16)], (800,))
        """
        prepared = [self.frame_features(samples, state) for samples, state in zip(samples_list, states)]
        counts = [int(features.shape[0]) for features, _ in prepared]
        embeds = self.project(torch.cat([features for features, _ in prepared]))
        return [(part, state) for part, (_, state) in zip(torch.split(embeds, counts), prepared)]


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

    def frames_to_embed(self, samples: torch.Tensor, state: LogMelState) -> tuple[torch.Tensor, int, LogMelState]:
        """What ``encode`` embeds next: the mel frames [context_frames + group * count, n_mels] (left context, then
        ``count`` whole frame groups), ``count``, and the state after them (samples not yet framed, the mel frames
        kept as the next call's context and pending frames).

        Example (1 s from the start: 100 new mel frames, 10 groups, 400 ms of context in front)::

            >>> fe = LogMelConvFrontend(hidden_size=64, channels=32)
            >>> mel, count, state = fe.frames_to_embed(torch.zeros(16000), fe.initial_state())
            >>> tuple(mel.shape), count, tuple(state.mel.shape)
            ((140, 64), 10, (40, 64))
        """
        buffer = torch.cat([state.samples, samples.reshape(-1).float()])
        mel, consumed = self.log_mel(buffer)
        mel = torch.cat([state.mel, mel])
        count = (mel.shape[0] - self.context_frames) // self.group
        used = self.context_frames + count * self.group
        return mel[:used], count, LogMelState(buffer[consumed:], mel[count * self.group :])

    def no_embeddings(self) -> torch.Tensor:
        """The empty [0, hidden] result of a call with no whole frame group."""
        return torch.zeros(0, self.project.out_features)

    def encode(self, samples: torch.Tensor, state: LogMelState) -> tuple[torch.Tensor, LogMelState]:
        mel, count, new_state = self.frames_to_embed(samples, state)
        return (self.embed_frames(mel) if count else self.no_embeddings()), new_state

    def encode_many(self, samples_list: list[torch.Tensor], states: list[LogMelState]) -> list[tuple[torch.Tensor, LogMelState]]:
        """``encode`` of several sessions, each from its own state, with ONE ``embed_frames`` call: element i
        equals ``encode(samples_list[i], states[i])`` (up to the last bits of a batched matmul).

        Each session's mel frames (``frames_to_embed``) go into a batch [B, context_frames + group * C, n_mels],
        C the most groups of any session, padded on the right. Why the padding changes nothing kept: the
        per-group projection, ``project`` and the LayerNorm act on each group alone, and each causal ``valid``
        convolution's output j reads its inputs j .. j + kernel - 1 only, so after the layers embedding j reads
        groups j .. j + layers * (kernel - 1) = j + context groups, which are real for every j < count. The
        padding only adds outputs after the session's ``count``, which are dropped.

        Example (1 s and 0.3 s from the start, and 50 ms: no whole group yet)::

            >>> fe = LogMelConvFrontend(hidden_size=64, channels=32)
            >>> pieces = [torch.zeros(16000), torch.zeros(4800), torch.zeros(800)]
            >>> out = fe.encode_many(pieces, [fe.initial_state()] * 3)
            >>> [tuple(embeds.shape) for embeds, _ in out]
            [(10, 64), (3, 64), (0, 64)]
        """
        prepared = [self.frames_to_embed(samples, state) for samples, state in zip(samples_list, states)]
        widest = max((mel.shape[0] for mel, count, _ in prepared if count), default=0)
        if not widest:
            return [(self.no_embeddings(), state) for _, _, state in prepared]
        batch = prepared[0][0].new_zeros(len(prepared), widest, self.n_mels)
        for row, (mel, _, _) in zip(batch, prepared):
            row[: mel.shape[0]] = mel
        embeds = self.embed_frames(batch)
        return [(embeds[i, :count] if count else self.no_embeddings(), state)
                for i, (_, count, state) in enumerate(prepared)]
