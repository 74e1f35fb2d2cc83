"""MiniCPM-o 4.5's processor, as a miniature checkpoint ships it (``auto_map`` ``AutoProcessor``).

``MiniCPMOProcessor`` holds the tokenizer and turns images and audio into the inputs of the vision tower and
the Whisper encoder, in the formats a MiniCPM-o runtime consumes:

- **a turn** (``processor(text=..., images=..., audios=...)``): ``pixel_values`` (per prompt, per image: the
  slices as [3, patch, n_patches * patch]), ``image_sizes``, ``tgt_sizes`` (patch rows, columns per slice);
  ``audio_features`` (one [80, frames] log-mel per 1 s chunk of each audio) and ``audio_feature_lens``.
  ``get_audio_placeholder`` / ``image_processor.get_slice_image_placeholder`` give the ``<unk>`` runs that stand
  for their embeddings in the prompt.
- **a duplex session** (``set_streaming_mode``, ``reset_streaming``, ``get_streaming_chunk_size``,
  ``process_audio_streaming``): the streaming mel state machine, one unit per call: chunk 0 consumes 1030 ms
  (of 1035 ms, left-padded by the runtime), later chunks 1 s; the log-mel of the whole buffer (at most 30 s,
  sliding by 10 s) floored at -10 under 5 s of audio and at (max - 8) from then on, scaled (x + 4) / 4; the
  unit's 100 core frames with 2 redundant frames each side (none before chunk 0): 102 frames, then 104. The
  state lives in ``_streaming_mel_processor`` (a session deep-copies it).

Images are not sliced here (``get_sliced_grid`` gives None): each image is one slice, resized to about
``scale_resolution``\\ :sup:`2` pixels, patch-aligned, so it stands for ``query_num`` embeddings. Written for
TickTock's miniatures; it stands alone.
"""

import math

import numpy as np
import torch
from transformers import BatchFeature, ProcessorMixin

SAMPLE_RATE = 16000
N_FFT = 400
HOP = 160
N_MELS = 80
UNIT_MS = 1000
FIRST_UNIT_MS = 1035  # the runtime left-pads chunk 0 to this
REDUNDANT_FRAMES = 2
SLIDE_TRIGGER_S, SLIDE_STRIDE_S, SLIDE_KEEP_S = 30, 10, 1
DYNAMIC_FLOOR_S = 5


def mel_filters() -> torch.Tensor:
    """Whisper's 80 slaney mel filters [201, 80]."""
    from transformers.audio_utils import mel_filter_bank

    return torch.from_numpy(mel_filter_bank(num_frequency_bins=1 + N_FFT // 2, num_mel_filters=N_MELS,
                                            min_frequency=0.0, max_frequency=SAMPLE_RATE / 2,
                                            sampling_rate=SAMPLE_RATE, norm="slaney", mel_scale="slaney")).float()


def log10_mel(samples: torch.Tensor, filters: torch.Tensor) -> torch.Tensor:
    """Unfloored log10 mel power [80, len // HOP]: centred STFT of a Hann window, the last frame dropped."""
    stft = torch.stft(samples, N_FFT, hop_length=HOP, window=torch.hann_window(N_FFT), return_complex=True)
    return torch.clamp(filters.T @ (stft[..., :-1].abs() ** 2), min=1e-10).log10()


def scaled(log_mel: torch.Tensor, floor) -> torch.Tensor:
    return (torch.maximum(log_mel, torch.as_tensor(floor, dtype=log_mel.dtype)) + 4.0) / 4.0


def whisper_features(audio, filters: torch.Tensor) -> torch.Tensor:
    """A whole clip's log-mel [80, ceil(len / HOP)], floored at its max - 8 and scaled, as Whisper's extractor."""
    samples = torch.as_tensor(np.asarray(audio, dtype=np.float32)).reshape(-1)
    frames = max(1, math.ceil(samples.numel() / HOP))
    samples = torch.nn.functional.pad(samples, (0, frames * HOP - samples.numel()))
    log_mel = log10_mel(samples, filters)
    return scaled(log_mel, log_mel.max() - 8.0)


def pooled_tokens(frames: int, pool_step: int) -> int:
    """Embeddings the encoder gives for ``frames`` mel frames: conv stride 2, then the average pool."""
    return max(0, ((frames - 1) // 2 + 1 - pool_step) // pool_step + 1)


class StreamingMel:
    """The per-session streaming mel state (see the module docstring); ``process`` returns one unit's window."""

    sample_rate = SAMPLE_RATE

    def __init__(self, chunk_ms: int = UNIT_MS, first_chunk_ms: int = FIRST_UNIT_MS):
        self.chunk_ms, self.first_chunk_ms = chunk_ms, first_chunk_ms
        self.filters = mel_filters()
        self.reset()

    def reset(self) -> None:
        self.buffer = torch.zeros(0)
        self.base_frame = 0  # global index of the buffer's first frame
        self.emitted = 0  # global index of the next core frame
        self.chunk_idx = 0

    def get_config(self) -> dict:
        first = self.first_chunk_ms * SAMPLE_RATE // 1000 // HOP * HOP
        return {"sample_rate": SAMPLE_RATE, "chunk_ms": self.chunk_ms, "first_chunk_ms": self.first_chunk_ms,
                "effective_first_chunk_ms": first * 1000 // SAMPLE_RATE, "redundant_frames": REDUNDANT_FRAMES}

    def chunk_samples(self) -> int:
        """Samples the next call takes: the padded first chunk, then one unit."""
        return (self.first_chunk_ms if self.chunk_idx == 0 else self.chunk_ms) * SAMPLE_RATE // 1000

    def consumed_samples(self) -> int:
        if self.chunk_idx == 0:
            return self.get_config()["effective_first_chunk_ms"] * SAMPLE_RATE // 1000
        return self.chunk_ms * SAMPLE_RATE // 1000

    def process(self, samples) -> torch.Tensor:
        """Consume one unit of ``samples`` (zero-padded on the right when short): its mel window [80, 102 / 104]."""
        need = self.consumed_samples()
        unit = torch.as_tensor(np.asarray(samples, dtype=np.float32)).reshape(-1)[:need]
        unit = torch.nn.functional.pad(unit, (0, need - unit.numel()))
        self.buffer = torch.cat([self.buffer, unit])
        if self.buffer.numel() >= SLIDE_TRIGGER_S * SAMPLE_RATE:
            keep = min(SLIDE_KEEP_S * SAMPLE_RATE, self.buffer.numel() - SLIDE_STRIDE_S * SAMPLE_RATE)
            drop = min(SLIDE_STRIDE_S * SAMPLE_RATE, self.buffer.numel() - keep) // HOP * HOP
            self.buffer, self.base_frame = self.buffer[drop:], self.base_frame + drop // HOP
        log_mel = log10_mel(self.buffer, self.filters)
        core_frames = self.chunk_ms * SAMPLE_RATE // 1000 // HOP
        start = max(0, self.emitted - REDUNDANT_FRAMES - self.base_frame)
        end = self.emitted + core_frames + REDUNDANT_FRAMES - self.base_frame
        dynamic = self.buffer.numel() >= DYNAMIC_FLOOR_S * SAMPLE_RATE
        window = scaled(log_mel[:, start:end], log_mel.max() - 8.0 if dynamic else -10.0)
        self.emitted += core_frames
        self.chunk_idx += 1
        return window


class MiniCPMVImageProcessor:
    """One slice per image: resized to about ``scale_resolution``\\ :sup:`2` pixels in whole patches, normalised
    to [-1, 1] and laid out patch by patch ([3, patch, n_patches * patch], the vision tower's input)."""

    def __init__(self, scale_resolution: int = 448, patch_size: int = 14, image_feature_size: int = 64,
                 use_image_id: bool = True, max_slice_nums: int = 1):
        self.scale_resolution, self.patch_size = scale_resolution, patch_size
        self.image_feature_size, self.use_image_id, self.max_slice_nums = image_feature_size, use_image_id, max_slice_nums
        self.mean, self.std = [0.5, 0.5, 0.5], [0.5, 0.5, 0.5]

    def best_size(self, width: int, height: int) -> tuple[int, int]:
        """(width, height) of the slice: the aspect kept, the area at most ``scale_resolution``\\ :sup:`2`, whole
        patches on each side."""
        scale = min(1.0, self.scale_resolution / math.sqrt(width * height))
        p = self.patch_size
        return (max(p, round(width * scale / p) * p), max(p, round(height * scale / p) * p))

    def get_sliced_grid(self, image_size, max_slice_nums=None, never_split=False):
        return None

    def get_slice_image_placeholder(self, image_size, image_idx: int = 0, max_slice_nums=None, use_image_id=None) -> str:
        use_id = self.use_image_id if use_image_id is None else use_image_id
        prefix = f"<image_id>{image_idx}</image_id>" if use_id else ""
        return prefix + "<image>" + "<unk>" * self.image_feature_size + "</image>"

    def patches(self, image) -> tuple[torch.Tensor, list[int]]:
        """One image -> ([3, patch, n * patch] pixels, [patch rows, patch columns])."""
        width, height = self.best_size(*image.size)
        array = np.asarray(image.convert("RGB").resize((width, height)), dtype=np.float32) / 255.0
        pixels = (torch.from_numpy(array).permute(2, 0, 1) - 0.5) / 0.5
        p, rows, cols = self.patch_size, height // self.patch_size, width // self.patch_size
        laid = pixels.reshape(3, rows, p, cols, p).permute(0, 2, 1, 3, 4).reshape(3, p, rows * cols * p)
        return laid, [rows, cols]

    def __call__(self, images, **kwargs) -> BatchFeature:
        """``images``: per prompt, a list of PIL images."""
        pixel_values, image_sizes, tgt_sizes = [], [], []
        for group in images:
            laid = [self.patches(image) for image in group]
            pixel_values.append([pixels for pixels, _ in laid])
            image_sizes.append([image.size for image in group])
            tgt_sizes.append(torch.tensor([size for _, size in laid], dtype=torch.int32).reshape(-1, 2))
        return BatchFeature({"pixel_values": pixel_values, "image_sizes": image_sizes, "tgt_sizes": tgt_sizes})


class MiniCPMOProcessor(ProcessorMixin):
    """The tokenizer plus MiniCPM-o's image and audio preprocessing (see the module docstring)."""

    def __init__(self, tokenizer=None, query_num: int = 64, scale_resolution: int = 448, patch_size: int = 14,
                 pool_step: int = 5, use_image_id: bool = True, feature_dtype: str = "bfloat16", chat_template=None):
        self.query_num, self.scale_resolution, self.patch_size = query_num, scale_resolution, patch_size
        self.pool_step, self.use_image_id, self.feature_dtype = pool_step, use_image_id, feature_dtype
        self.image_processor = MiniCPMVImageProcessor(scale_resolution, patch_size, query_num, use_image_id)
        self.filters = mel_filters()
        self._streaming_mel_processor = StreamingMel()
        super().__init__(tokenizer, chat_template=chat_template)

    @property
    def dtype(self) -> torch.dtype:
        """The dtype of the features (``feature_dtype``: the checkpoint's; the encoder's input is not cast)."""
        return getattr(torch, self.feature_dtype)

    # ------------------------------------------------------------------------------------------ a turn

    def get_audio_placeholder(self, audio_lens: int, chunk_input: bool = True, chunk_length: int = 1) -> str:
        """The ``<unk>`` run for an audio of ``audio_lens`` samples (one group per ``chunk_length`` s if chunked)."""
        frames = math.ceil(audio_lens / HOP)
        total = pooled_tokens(frames, self.pool_step)
        per_chunk = pooled_tokens(int(chunk_length * SAMPLE_RATE) // HOP, self.pool_step) if chunk_input else total
        groups = [min(per_chunk, total - start) for start in range(0, total, max(per_chunk, 1))] or [0]
        return "".join("<|audio_start|>" + "<unk>" * count + "<|audio_end|>" for count in groups)

    def audio_chunks(self, audio, chunk_length: float = 1.0) -> list[torch.Tensor]:
        """One clip's log-mel cut into ``chunk_length`` s chunks of [80, <= 100] frames."""
        features = whisper_features(audio, self.filters)
        step = int(chunk_length * SAMPLE_RATE) // HOP
        return list(torch.split(features, step, dim=1))

    def process_audio(self, audios, chunk_input: bool = False, chunk_length: float = 1.0) -> BatchFeature:
        """``audios``: clips of 16 kHz samples -> ``audio_features`` [clips or chunks, 80, frames] (zero-padded)
        and ``audio_feature_lens`` (per clip, a tensor of its chunks' frames)."""
        features, lens = [], []
        for audio in audios:
            chunks = self.audio_chunks(audio, chunk_length) if chunk_input else [whisper_features(audio, self.filters)]
            features.extend(chunks)
            lens.append(torch.tensor([chunk.shape[1] for chunk in chunks]))
        width = max(chunk.shape[1] for chunk in features)
        padded = torch.stack([torch.nn.functional.pad(chunk, (0, width - chunk.shape[1])) for chunk in features])
        return BatchFeature({"audio_features": padded.to(self.dtype), "audio_feature_lens": lens})

    def process_image(self, images, max_slice_nums=None, **kwargs) -> BatchFeature:
        return self.image_processor([list(images)])

    def __call__(self, text=None, images=None, audios=None, chunk_input: bool = True, chunk_length: float = 1.0,
                 return_tensors=None, **kwargs) -> BatchFeature:
        """``text``: a prompt or a list; ``images`` / ``audios``: per prompt, a list of images / clips."""
        data = {}
        if text is not None:
            prompts = [text] if isinstance(text, str) else list(text)
            data["input_ids"] = [self.tokenizer.encode(prompt, add_special_tokens=False) for prompt in prompts]
        if images is not None:
            data.update(self.image_processor(images))
        if audios is not None:
            clips = [clip for group in audios for clip in group]
            audio = self.process_audio(clips, chunk_input=chunk_input, chunk_length=chunk_length)
            per_prompt = [len(group) for group in audios]
            starts = np.cumsum([0, *per_prompt])
            data["audio_features"] = audio["audio_features"]
            data["audio_feature_lens"] = [torch.cat(audio["audio_feature_lens"][a:b]) if b > a else torch.zeros(0)
                                          for a, b in zip(starts[:-1], starts[1:])]
        return BatchFeature(data)

    # ---------------------------------------------------------------------------------- a duplex session

    def set_streaming_mode(self, mode: str = "exact", chunk_ms: int = UNIT_MS, first_chunk_ms: int = FIRST_UNIT_MS,
                           **kwargs) -> None:
        self._streaming_mel_processor = StreamingMel(chunk_ms, first_chunk_ms)

    def configure_streaming(self, chunk_ms: int = UNIT_MS, **kwargs) -> None:
        self.set_streaming_mode(chunk_ms=chunk_ms)

    def reset_streaming(self) -> None:
        self._streaming_mel_processor.reset()

    def get_streaming_chunk_size(self) -> int:
        return self._streaming_mel_processor.chunk_samples()

    def process_audio_streaming(self, audio_chunk, reset: bool = False, return_batch_feature: bool = True,
                                **kwargs) -> BatchFeature:
        """One unit of a session: ``audio_features`` [1, 80, 102 / 104] and ``audio_feature_lens``; the unit's
        index is the result's ``chunk_idx``."""
        mel = self._streaming_mel_processor
        if reset:
            mel.reset()
        chunk_idx = mel.chunk_idx
        window = mel.process(audio_chunk)
        result = BatchFeature({"audio_features": window[None].to(self.dtype),
                               "audio_feature_lens": [torch.tensor([window.shape[1]])]})
        result.chunk_idx = chunk_idx
        return result
