"""The MiniCPM-o 4.5 streaming audio front-end: 1 s of 16 kHz audio in, 10 LLM embeddings out.

This re-expresses, on native ``transformers`` modules, the state machine that MiniCPM-o 4.5's duplex
runtime (``MiniCPMODuplex.streaming_prefill`` with ``StreamingMelProcessorExact`` and the KV-cached
Whisper encoder) runs per chunk (the project's adapter reference notes, sections 1 and 3.3). Run on the
same weights, it gives the upstream code's embeddings bit for bit in fp32 (36 chunks, max|diff| 0.0).

Per chunk:

1. **Sample carry.** The chunk is appended to the carried samples. On chunk 0 the samples are left-padded
   with zeros to 1035 ms (16560) and 1030 ms (16480, 1035 ms rounded down to the hop) are consumed;
   afterwards 1 s (16000) is consumed. That leaves an 80-sample carry for the rest of a 1 s-chunk session.
2. **Mel buffer.** The consumed samples are appended to a buffer of at most 30 s (once it reaches 30 s it
   drops its oldest 10 s, keeping at least 1 s). The log10 mel of the *whole* buffer is recomputed
   (Whisper framing: Hann 400, hop 160, 80 slaney bins, last frame dropped), floored at -10 while the
   buffer is shorter than 5 s and at (buffer max - 8) from then on, and scaled (x + 4) / 4. The chunk's
   100 core frames are emitted with 2 redundant frames on each side (none before chunk 0): 102 frames,
   then 104.
3. **Encoder.** conv1/conv2 + GELU, one conv frame trimmed per redundant side (50 left), learned positions
   offset by the encoder KV length, the Whisper layers attending to (cached past frames + these 50), the
   final LayerNorm. The KV is dropped before a chunk that would reach ``max_source_positions`` (every 29
   chunks at 1500 positions).
4. **Projection and pooling.** Linear-ReLU-Linear to the LLM width, then AvgPool1d(5): 10 embeddings. The
   projection's input width is ``encoder_ffn_dim // 4``, as MiniCPM-o sizes it (equal to ``d_model`` in a
   Whisper encoder, whose FFN is 4 x ``d_model``; a config where they differ is refused).

Everything that persists is in the frozen ``MiniCPMAudioState``; ``encode`` returns a new one and never
mutates the old one (tensors only grow by concatenation into new tensors), so a snapshot is a reference.

Example::

    >>> import torch
    >>> _ = torch.manual_seed(0)
    >>> config = dict(d_model=32, encoder_layers=2, encoder_attention_heads=2, encoder_ffn_dim=128,
    ...               num_mel_bins=80, max_source_positions=1500)
    >>> fe = MiniCPMAudioFrontend(config, llm_hidden_size=48, attn_implementation="eager")
    >>> embeds, state = fe.encode(torch.zeros(16000), fe.initial_state())
    >>> tuple(embeds.shape), state.carry.numel(), state.mel_buffer.numel(), state.encoder_length
    ((10, 48), 80, 16480, 50)
    >>> embeds, state = fe.encode(torch.zeros(16000), state)
    >>> state.chunk_index, state.carry.numel(), state.encoder_length
    (2, 80, 100)
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch
from torch import nn

SAMPLE_RATE = 16_000
N_FFT = 400
HOP = 160
FIRST_CHUNK_SAMPLES = 16_560  # 1035 ms: chunk 0 is left-padded with zeros up to this
FIRST_UNIT_SAMPLES = FIRST_CHUNK_SAMPLES // HOP * HOP  # 16480 (1030 ms) consumed on chunk 0
UNIT_SAMPLES = 16_000  # 1 s consumed on every later chunk
UNIT_FRAMES = UNIT_SAMPLES // HOP  # 100 core mel frames per chunk
REDUNDANT_FRAMES = 2  # mel frames emitted on each side of the core (20 ms)
CONV_FRAMES = UNIT_FRAMES // 2  # 50 encoder frames per chunk after the trims
LOG_FLOOR = -10.0  # fixed log10 floor while the mel buffer is shorter than DYNAMIC_FLOOR_SAMPLES
DYNAMIC_RANGE = 8.0  # then the floor is (buffer max - DYNAMIC_RANGE)
DYNAMIC_FLOOR_SAMPLES = 5 * SAMPLE_RATE
SLIDE_TRIGGER_SAMPLES = 30 * SAMPLE_RATE
SLIDE_STRIDE_SAMPLES = 10 * SAMPLE_RATE
SLIDE_KEEP_SAMPLES = 1 * SAMPLE_RATE

LayerKV = tuple[torch.Tensor, torch.Tensor]  # one encoder layer's self-attention (keys, values) [1, heads, T, head_dim]


@dataclass(frozen=True)
class MiniCPMAudioState:
    """Everything the upstream runtime keeps across chunks on the audio path (read-only; never mutated).

    ``carry``: samples received but not consumed yet (the duplex layer's ``audio_buffer``; 80 after chunk 0
    of a 1 s-chunk session). ``chunk_index``: chunks encoded so far (0 selects the first-chunk geometry).
    ``mel_buffer``: the mel processor's sample buffer (at most 30 s). ``mel_base_frame``: the global index
    of the buffer's first mel frame (advances by 1000 per 10 s slide). ``mel_emitted_frames``: the global
    index of the next core frame to emit. ``mel_dropped_samples``: samples slid out of the buffer so far.
    ``dynamic_floor``: whether the last window used the dynamic (max - 8) floor; it is re-derived from the
    buffer length on every chunk, as upstream does. ``encoder_kv``: per-layer Whisper self-attention (K, V)
    since the last reset, or None. Samples live on the CPU (upstream computes the mel there); the KV lives
    with the module's parameters.
    """

    carry: torch.Tensor
    chunk_index: int
    mel_buffer: torch.Tensor
    mel_base_frame: int
    mel_emitted_frames: int
    mel_dropped_samples: int
    dynamic_floor: bool
    encoder_kv: tuple[LayerKV, ...] | None

    @property
    def encoder_length(self) -> int:
        """Encoder frames in the KV cache: also the position offset of the next chunk's frames."""
        return 0 if self.encoder_kv is None else int(self.encoder_kv[0][0].shape[2])


class AppendingKV:
    """The one-layer cache ``WhisperAttention`` calls ``update`` on: returns past + new, keeps both intact.

    ``WhisperAttention`` only needs ``update(keys, values, layer_idx, ...)``; the concatenation makes new
    tensors, so the past (K, V) held by an older state is never touched.
    """

    def __init__(self, past: LayerKV | None):
        self.past = past
        self.present: LayerKV | None = None

    def update(self, keys: torch.Tensor, values: torch.Tensor, *args, **kwargs) -> LayerKV:
        if self.past is not None:
            keys = torch.cat([self.past[0], keys], dim=2)
            values = torch.cat([self.past[1], values], dim=2)
        self.present = (keys, values)
        return self.present


class AudioProjection(nn.Module):
    """Linear - ReLU - Linear from the encoder width to the LLM width (``audio_projection_layer.*``)."""

    def __init__(self, in_dim: int, out_dim: int):
        super().__init__()
        self.linear1 = nn.Linear(in_dim, out_dim)
        self.relu = nn.ReLU()
        self.linear2 = nn.Linear(out_dim, out_dim)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.linear2(self.relu(self.linear1(hidden)))


def whisper_mel_filters(n_mels: int) -> torch.Tensor:
    """The Whisper feature extractor's slaney mel filters [201, n_mels], in float32."""
    from transformers.audio_utils import mel_filter_bank

    filters = mel_filter_bank(num_frequency_bins=1 + N_FFT // 2, num_mel_filters=n_mels, min_frequency=0.0,
                              max_frequency=SAMPLE_RATE / 2, sampling_rate=SAMPLE_RATE, norm="slaney",
                              mel_scale="slaney")
    return torch.from_numpy(filters).float()


def log10_mel(samples: torch.Tensor, filters: torch.Tensor) -> torch.Tensor:
    """Unfloored log10 mel power [1, n_mels, len // HOP] of a whole buffer, with Whisper's framing.

    Centred (reflect-padded) STFT of a periodic Hann window; the last frame is dropped; power is clamped at
    1e-10 before log10. The op order follows the upstream feature extractor so that fp32 results match.
    """
    window = torch.hann_window(N_FFT)
    stft = torch.stft(samples[None], N_FFT, hop_length=HOP, window=window, return_complex=True)
    power = stft[..., :-1].abs() ** 2
    return torch.clamp(filters.T @ power, min=1e-10).log10()


def stable_frames(num_samples: int) -> int:
    """Mel frames whose window lies inside the buffer (centre + N_FFT / 2 <= length)."""
    if num_samples < N_FFT // 2:
        return 0
    return (num_samples - N_FFT // 2) // HOP + 1


def slide_mel_buffer(buffer: torch.Tensor, base_frame: int, dropped: int) -> tuple[torch.Tensor, int, int]:
    """Drop the oldest 10 s once the buffer holds 30 s, keeping at least 1 s; hop-aligned.

    Returns (buffer, base_frame, dropped samples so far).
    """
    length = buffer.shape[0]
    if length < SLIDE_TRIGGER_SAMPLES:
        return buffer, base_frame, dropped
    keep = min(SLIDE_KEEP_SAMPLES, length - SLIDE_STRIDE_SAMPLES)
    drop = min(SLIDE_STRIDE_SAMPLES, max(0, length - keep)) // HOP * HOP
    if drop <= 0:
        return buffer, base_frame, dropped
    return buffer[drop:], base_frame + drop // HOP, dropped + drop


def block_causal_mask(units: int, frames: int, dtype: torch.dtype, device) -> torch.Tensor:
    """Additive mask [1, 1, units*frames, units*frames]: a frame sees its own block and every earlier one."""
    block = torch.arange(units * frames, device=device) // frames
    hidden = block[None, :] > block[:, None]
    mask = torch.zeros(hidden.shape, dtype=dtype, device=device).masked_fill(hidden, torch.finfo(dtype).min)
    return mask[None, None]


class MiniCPMAudioFrontend(nn.Module):
    """MiniCPM-o 4.5's streaming audio front-end as a functional state machine (see the module docstring).

    ``audio_config`` is the checkpoint's ``config.json`` ``"audio_config"`` (WhisperConfig kwargs). The
    submodules are named so that ``state_dict()`` keys are exactly the checkpoint's: ``apm.*`` (a native
    ``WhisperEncoder``) and ``audio_projection_layer.linear{1,2}.*``; the pooler has no tensors.
    ``attn_implementation`` is the encoder attention: "sdpa" is the upstream setting, "eager" is what the
    CPU tests use.
    """

    embeds_per_second = 10
    silence_depends_on_state = True  # the dynamic floor, the prefix frames and the encoder KV all carry the past

    def __init__(self, audio_config: dict, llm_hidden_size: int, pool_step: int = 5, attn_implementation: str = "sdpa"):
        super().__init__()
        from transformers import WhisperConfig
        from transformers.models.whisper.modeling_whisper import WhisperEncoder

        config = WhisperConfig(**audio_config)
        config._attn_implementation = attn_implementation
        if CONV_FRAMES % pool_step:
            raise ValueError(f"pool_step {pool_step} must divide the {CONV_FRAMES} encoder frames of a chunk")
        if config.max_source_positions < CONV_FRAMES:
            raise ValueError(f"max_source_positions {config.max_source_positions} < {CONV_FRAMES} frames of one chunk")
        if config.encoder_ffn_dim // 4 != config.d_model:
            raise ValueError(f"encoder_ffn_dim // 4 = {config.encoder_ffn_dim // 4} must equal d_model {config.d_model}: "
                             "MiniCPM-o sizes the audio projection's input as encoder_ffn_dim // 4")
        self.apm = WhisperEncoder(config)
        self.audio_projection_layer = AudioProjection(config.encoder_ffn_dim // 4, llm_hidden_size)
        self.audio_avg_pooler = nn.AvgPool1d(pool_step, stride=pool_step)
        self.max_positions = config.max_source_positions
        self.mel_filters = whisper_mel_filters(config.num_mel_bins)  # plain fp32 CPU tensor: never cast to bf16

    # ------------------------------------------------------------------------------------------ state

    def initial_state(self) -> MiniCPMAudioState:
        empty = torch.zeros(0)
        return MiniCPMAudioState(carry=empty, chunk_index=0, mel_buffer=empty, mel_base_frame=0, mel_emitted_frames=0,
                                 mel_dropped_samples=0, dynamic_floor=False, encoder_kv=None)

    @property
    def device(self) -> torch.device:
        return self.apm.conv1.weight.device

    @property
    def dtype(self) -> torch.dtype:
        return self.apm.conv1.weight.dtype

    # -------------------------------------------------------------------------- samples -> mel window

    @staticmethod
    def take_unit(samples: torch.Tensor, state: MiniCPMAudioState) -> tuple[torch.Tensor, torch.Tensor]:
        """The samples this chunk consumes and the new carry (the duplex layer's buffer arithmetic).

        Chunk 0 is left-padded with zeros to 16560 samples and consumes 16480; later chunks consume 16000.
        Deviation from upstream (which encodes nothing until enough samples arrived): a buffer shorter than
        what the chunk consumes (a session's last, short chunk) is right-padded with zeros, so every call
        returns 10 embeddings. A longer buffer leaves the excess in the carry, as upstream does.
        """
        joined = torch.cat([state.carry, samples.detach().reshape(-1).to("cpu", torch.float32)])
        if state.chunk_index == 0 and joined.shape[0] < FIRST_CHUNK_SAMPLES:
            joined = torch.cat([joined.new_zeros(FIRST_CHUNK_SAMPLES - joined.shape[0]), joined])
        need = FIRST_UNIT_SAMPLES if state.chunk_index == 0 else UNIT_SAMPLES
        if joined.shape[0] < need:
            joined = torch.cat([joined, joined.new_zeros(need - joined.shape[0])])
        return joined[:need], joined[need:]

    def mel_window(self, unit: torch.Tensor, state: MiniCPMAudioState) -> tuple[torch.Tensor, MiniCPMAudioState]:
        """The chunk's normalised mel frames [n_mels, 102 or 104] and the state with the new mel bookkeeping.

        The returned state has the new mel buffer, base, emitted pointer and floor mode; its carry, chunk
        index and encoder KV are the input's (``encode`` sets those).
        """
        buffer = torch.cat([state.mel_buffer, unit])
        buffer, base, dropped = slide_mel_buffer(buffer, state.mel_base_frame, state.mel_dropped_samples)
        log_mel = log10_mel(buffer, self.mel_filters)
        total = log_mel.shape[-1]
        core_start, core_end = state.mel_emitted_frames, state.mel_emitted_frames + UNIT_FRAMES
        if base + min(total, stable_frames(buffer.shape[0])) < core_end + REDUNDANT_FRAMES:
            raise AssertionError("a consumed unit always makes its core and suffix frames stable")
        start = min(max(0, core_start - REDUNDANT_FRAMES - base), total)
        end = max(start, min(core_end + REDUNDANT_FRAMES - base, total))
        dynamic = buffer.shape[0] >= DYNAMIC_FLOOR_SAMPLES
        window = self.normalise(log_mel, log_mel[..., start:end], dynamic)[0]
        return window, dataclasses.replace(state, mel_buffer=buffer, mel_base_frame=base, mel_emitted_frames=core_end,
                                           mel_dropped_samples=dropped, dynamic_floor=dynamic)

    @staticmethod
    def normalise(log_mel: torch.Tensor, frames: torch.Tensor, dynamic: bool) -> torch.Tensor:
        """Floor ``frames`` (a slice of ``log_mel``) at the buffer's max - 8 or at -10, then (x + 4) / 4."""
        if dynamic:
            floor = log_mel.max(dim=2, keepdim=True)[0].max(dim=1, keepdim=True)[0] - DYNAMIC_RANGE
        else:
            floor = torch.tensor(LOG_FLOOR, dtype=frames.dtype)
        return (torch.maximum(frames, floor) + 4.0) / 4.0

    # ---------------------------------------------------------------------------- mel -> embeddings

    def conv_frames(self, window: torch.Tensor, first: bool) -> torch.Tensor:
        """conv1/conv2 + GELU over one mel window, one conv frame trimmed per redundant side: [1, 50, d_model]."""
        x = window[None].to(device=self.device, dtype=self.dtype)
        x = nn.functional.gelu(self.apm.conv2(nn.functional.gelu(self.apm.conv1(x))))
        prefix = 0 if first else (REDUNDANT_FRAMES + 1) // 2
        suffix = (REDUNDANT_FRAMES + 1) // 2
        end = x.shape[2] - suffix if 0 < suffix < x.shape[2] - prefix else x.shape[2]
        return x[:, :, prefix:end].permute(0, 2, 1)

    def resets_encoder(self, cached: int, window_frames: int) -> bool:
        """Upstream drops the encoder KV when cache + untrimmed conv length would reach max_source_positions."""
        return cached > 0 and cached + (window_frames - 1) // 2 + 1 >= self.max_positions

    def run_layers(self, hidden: torch.Tensor, mask: torch.Tensor,
                   kv: tuple[LayerKV, ...] | None) -> tuple[torch.Tensor, tuple[LayerKV, ...]]:
        """Positions offset by the cached length, every Whisper layer with its (K, V), the final LayerNorm."""
        past = 0 if kv is None else kv[0][0].shape[2]
        hidden = hidden + self.apm.embed_positions.weight[past : past + hidden.shape[1]]
        present = []
        for index, layer in enumerate(self.apm.layers):
            cache = AppendingKV(None if kv is None else kv[index])
            hidden = layer(hidden, mask, cache=cache)
            present.append(cache.present)
        return self.apm.layer_norm(hidden), tuple(present)

    def project_and_pool(self, hidden: torch.Tensor) -> torch.Tensor:
        """[1, 50n, d_model] encoder states -> [10n, llm_hidden] embeddings."""
        embeds = self.audio_projection_layer(hidden)
        return self.audio_avg_pooler(embeds.transpose(1, 2)).transpose(1, 2)[0]

    # ------------------------------------------------------------------------------------- contract

    @torch.inference_mode()
    def encode(self, samples: torch.Tensor, state: MiniCPMAudioState) -> tuple[torch.Tensor, MiniCPMAudioState]:
        """One chunk of 16 kHz float mono samples -> ([10, llm_hidden] embeddings, new state).

        Never mutates ``state`` or anything it references. The mel is computed in fp32 on the CPU, as
        upstream does; the embeddings have the module's parameter dtype and device. A chunk shorter than
        what it consumes (the last chunk of a session) is zero-padded on the right (see ``take_unit``).
        """
        unit, carry = self.take_unit(torch.as_tensor(samples), state)
        window, mel_state = self.mel_window(unit, state)
        kv = None if self.resets_encoder(state.encoder_length, window.shape[-1]) else state.encoder_kv
        hidden = self.conv_frames(window, first=state.chunk_index == 0)
        past = 0 if kv is None else kv[0][0].shape[2]
        mask = torch.zeros(1, 1, hidden.shape[1], past + hidden.shape[1], dtype=self.dtype, device=self.device)
        hidden, kv = self.run_layers(hidden, mask, kv)
        new_state = dataclasses.replace(mel_state, carry=carry, chunk_index=state.chunk_index + 1, encoder_kv=kv)
        return self.project_and_pool(hidden), new_state

    @torch.inference_mode()
    def encode_offline(self, samples: torch.Tensor, chunk_samples: int = UNIT_SAMPLES,
                       first_chunk_samples: int | None = None) -> torch.Tensor:
        """A whole session in one shot, Gander's training form: [10 * chunks, llm_hidden].

        The session is cut into chunks (``first_chunk_samples``, then ``chunk_samples``; the last may be
        short) and run through the same sample carry and mel state machine as ``encode``. The encoder then
        sees each group of chunks between two KV resets (29 at 1500 positions) in a single forward: the
        50-frame conv cores concatenated, positions from 0, a 50-frame block-causal mask. Mathematically
        equal to chunk-by-chunk ``encode``; in fp32 it agrees to float rounding.
        """
        windows = self.session_mel_windows(torch.as_tensor(samples).reshape(-1), chunk_samples, first_chunk_samples)
        return self.embed_windows(windows)

    def embed_windows(self, windows: list[torch.Tensor]) -> torch.Tensor:
        """The embeddings [10 * chunks, llm_hidden] of a session's mel windows (``session_mel_windows``), as
        ``encode_offline`` computes them; called outside inference mode it keeps the autograd graph, which is how a
        model is trained on this front-end: the windows computed once per session (no gradient flows into the mel),
        the encoder, projection and pooling trained through the same block-causal groups streaming replays."""
        cores = [self.conv_frames(window, first=index == 0) for index, window in enumerate(windows)]
        embeds = []
        for group in self.encoder_groups([window.shape[-1] for window in windows]):
            hidden = torch.cat([cores[index] for index in group], dim=1)
            mask = block_causal_mask(len(group), CONV_FRAMES, self.dtype, self.device)
            embeds.append(self.project_and_pool(self.run_layers(hidden, mask, None)[0]))
        return torch.cat(embeds)

    def session_mel_windows(self, samples: torch.Tensor, chunk_samples: int,
                            first_chunk_samples: int | None) -> list[torch.Tensor]:
        """The mel window of every chunk of a session, via the streaming sample carry and mel buffer."""
        first = chunk_samples if first_chunk_samples is None else first_chunk_samples
        chunks = [samples[:first], *torch.split(samples[first:], chunk_samples)]
        chunks = [chunk for chunk in chunks if chunk.numel()] or [samples]
        state, windows = self.initial_state(), []
        for chunk in chunks:
            unit, carry = self.take_unit(chunk, state)
            window, state = self.mel_window(unit, state)
            state = dataclasses.replace(state, carry=carry, chunk_index=state.chunk_index + 1)
            windows.append(window)
        return windows

    def encoder_groups(self, window_frames: list[int]) -> list[list[int]]:
        """Chunk indices grouped between encoder KV resets (the streaming reset rule, replayed)."""
        groups: list[list[int]] = []
        cached = 0
        for index, frames in enumerate(window_frames):
            if not groups or self.resets_encoder(cached, frames):
                groups.append([])
                cached = 0
            groups[-1].append(index)
            cached += CONV_FRAMES
        return groups
