"""The "streaming SLM" of the paper on the Qwen2.5-Omni-7B Thinker (``model=streaming_slm``), loaded natively.

No public full-duplex fine-tune of the Qwen2.5-Omni Thinker with 1 s chunks has been identified (Qwen2.5-Omni
itself is turn-based), so what such a fine-tune would add is configuration here:
its unit-protocol tokens (``protocol_tokens``, default the MiniCPM-o names), its system prompt and its limits.
Everything else is the released architecture, loaded with ``transformers`` only (no remote code, offline):

* **Weights.** ``Qwen2_5OmniThinkerForConditionalGeneration.from_pretrained(folder, local_files_only=True)``
  from a full Qwen2.5-Omni checkpoint (``config.json`` of a ``qwen2_5_omni`` model, safetensors keys
  ``thinker.model.*``, ``thinker.audio_tower.*``, ``thinker.visual.*``, ``thinker.lm_head.*``, ``talker.*``,
  ``token2wav.*``) or a Thinker-only one. transformers' conversion mapping (``conversion_mapping.py``,
  ``Qwen2_5OmniThinkerForConditionalGeneration``) strips ``thinker.`` and moves ``model.*`` to
  ``model.language_model.*``; ``talker.*`` / ``token2wav.*`` are never instantiated and the vision tower is
  dropped after loading. A missing weight, an unknown key or a shape that differs from ``config.json`` stops
  with one ``CheckpointError`` naming the checkpoint key.
* **LLM.** ``ThinkerCausalLM`` drives ``thinker.model.language_model`` with explicit 1-D positions (cache
  length + tree depth, broadcast to the three mRoPE axes; for audio + text the Thinker's own positions are
  exactly these, so ``rope_deltas`` is never used) and applies ``thinker.lm_head`` to the kept rows only (the
  Thinker's own forward has no ``logits_to_keep``). It plugs into ``HFUnitAdapter`` unchanged: one
  ``DynamicCache``, rollback by crop, tree drafts through a 4-D additive mask.
* **Audio.** ``QwenOmniChunkFrontend``: every chunk is its own audio window (our causal choice; see the class).
  1 s of 16 kHz audio -> Whisper log-mel, 128 bins -> ``audio_tower`` -> 25 embeddings.
* **Tokenizer.** ``Qwen2Tokenizer`` from the folder's files; protocol tokens resolved by ``get_vocab()``.
  Never generated: the Qwen special tokens that are not protocol tokens and the embedding rows past the
  tokenizer (152,064 rows, 151,665 base tokens + the fine-tune's).

``ticktock.miniatures.qwen_omni.write_streaming_slm_miniature`` writes a tiny random checkpoint in the same on-disk layout (hidden 64,
2 layers, the real 152,064 vocabulary rows and special-token ids, the protocol tokens appended after them), so
the real loading path is tested without the 7B weights.

Example (the miniature, offline, in a few seconds)::

    >>> import tempfile, numpy as np
    >>> from ticktock.miniatures.qwen_omni import write_streaming_slm_miniature
    >>> scratch = tempfile.TemporaryDirectory()
    >>> folder = write_streaming_slm_miniature(Path(scratch.name) / "mini")
    >>> adapter = load_streaming_slm_adapter(folder)
    >>> adapter.protocol.listen == adapter.tokenizer.get_vocab()["<|listen|>"]
    True
    >>> prompt = adapter.start_session(None, [])
    >>> audio = adapter.encode_audio(np.zeros(16000, dtype=np.float32))
    >>> tuple(audio.shape)                                 # 25 embeddings per second, LLM width 64
    (25, 64)
    >>> adapter.forward([[adapter.protocol.unit_open], audio]).shape[1]   # logits over every embedding row
    152064
    >>> scratch.cleanup()

With the real weights (``hf download Qwen/Qwen2.5-Omni-7B``; the duplex fine-tune's tokens in
``protocol_tokens``)::

    >>> adapter = load_streaming_slm_adapter(repo_id="Qwen/Qwen2.5-Omni-7B")        # doctest: +SKIP
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import torch
from torch import nn

from ticktock.adapters.checkpoint import CheckpointError, read_json, resolve_checkpoint, weights_origin
from ticktock.adapters.base import UnitProtocol
from ticktock.adapters.hf_unit import PROTOCOL_TOKENS, REQUIRED_TOKENS, HFUnitAdapter, runtime_settings
from ticktock.errors import ConfigError

REPO_ID = "Qwen/Qwen2.5-Omni-7B"
SYSTEM_PROMPT = ("You are Qwen, a virtual human developed by the Qwen Team, Alibaba Group, capable of perceiving "
                 "auditory and visual inputs, as well as generating text and speech.")
PROMPT_TEMPLATE = "<|im_start|>system\n{system}{tools}<|im_end|>\n"
BASE_VOCAB = 151_643  # byte-level BPE entries; the added tokens start here
VOCAB_ROWS = 152_064  # embedding / lm_head rows of the released Thinker
# The released tokenizer's added tokens, in id order from 151643 (the Qwen2.5 set with Omni's audio/vision names;
# the audio/vision ids match Qwen2_5OmniThinkerConfig's defaults).
QWEN_OMNI_SPECIAL_TOKENS = (
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|AUDIO|>", "<|audio_bos|>", "<|audio_eos|>", "<|box_end|>",
    "<|quad_start|>", "<|quad_end|>", "<|vision_bos|>", "<|vision_eos|>", "<|vision_pad|>", "<|IMAGE|>",
    "<|VIDEO|>", "<tool_call>", "</tool_call>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>",
    "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>",
)
TOKENIZER_FILES = ("tokenizer_config.json",)
ALLOWED_UNEXPECTED = ("talker.", "token2wav.")  # parts of a full checkpoint a text-output benchmark never builds
DROPPED_MODULES = ("model.visual.",)


# ----------------------------------------------------------------------------------------------- the LLM


class ThinkerCausalLM(nn.Module):
    """The Thinker's language model + ``lm_head`` as the causal LM ``HFUnitAdapter`` drives.

    ``forward(inputs_embeds [1, L, H], cache, position_ids [1, L], attention_mask, use_cache, logits_to_keep=k)``
    returns ``.logits`` [1, k, V] of the last k rows. Positions are always given (2-D, broadcast by the text
    model to the three mRoPE axes), so the Thinker's ``rope_deltas`` state is never consulted.
    """

    def __init__(self, language_model: nn.Module, lm_head: nn.Module):
        super().__init__()
        self.language_model = language_model
        self.lm_head = lm_head
        self.config = language_model.config

    def get_input_embeddings(self) -> nn.Module:
        return self.language_model.embed_tokens

    def forward(self, inputs_embeds, cache=None, position_ids=None, attention_mask=None, use_cache=True,
                logits_to_keep: int = 1):
        if position_ids is None:
            raise ValueError("ThinkerCausalLM needs explicit position_ids (it never derives mRoPE positions itself)")
        out = self.language_model(inputs_embeds=inputs_embeds, cache=cache, position_ids=position_ids,
                                  attention_mask=attention_mask, use_cache=use_cache)
        return SimpleNamespace(logits=self.lm_head(out.last_hidden_state[:, -max(logits_to_keep, 1):]), cache=cache)


# ------------------------------------------------------------------------------------------- the audio


class QwenOmniChunkFrontend(nn.Module):
    """Qwen2.5-Omni's audio encoder applied to each chunk as an independent window: stateless and causal.

    Per chunk: Whisper log-mel with the checkpoint's ``preprocessor_config.json`` (transformers'
    ``WhisperFeatureExtractor``: 128 bins, 25 ms Hann window, 10 ms hop, log10 floored at the clip's max - 8,
    then (x + 4) / 4), only the chunk's valid frames (``feature_attention_mask``), then ``audio_tower`` as
    ``get_audio_features`` calls it. 1 s = 100 mel frames -> conv stride 2 -> 50 -> average pool 2 -> **25**
    embeddings of the LLM width.

    The Qwen processor pads a clip to ``chunk_length`` seconds; the chunk here is padded by ``n_fft`` zeros only,
    which gives the same valid frames (the frames beyond hold only zeros: the log floor, never the max).

    Why one window per chunk: the released encoder attends within 2 s windows (``n_window`` = 100 -> 200 mel
    frames). Feeding 2 s windows would re-encode a second that was already fed to the LLM, so a causal
    stream must either re-write the past or cut windows at chunk edges; we cut them at every chunk (1 s).
    The embeddings of a chunk then depend on that chunk only, so silence after anything equals silence
    after silence (``silence_depends_on_state = False``) and the state is ``None``. Chunk-wise encoding is
    not offline encoding: the mel normalisation and the attention window both see one chunk only. Which
    policy the paper's fine-tune used is unknown.
    """

    silence_depends_on_state = False

    def __init__(self, audio_tower: nn.Module, preprocessor: dict):
        from transformers import WhisperFeatureExtractor

        super().__init__()
        self.audio_tower = audio_tower
        keys = ("feature_size", "sampling_rate", "hop_length", "chunk_length", "n_fft", "padding_value", "dither")
        self.features = WhisperFeatureExtractor(**{k: preprocessor[k] for k in keys if k in preprocessor})
        self.sample_rate = self.features.sampling_rate
        self.embeds_per_second = self.sample_rate // self.features.hop_length // 4  # conv stride 2, pool 2

    def initial_state(self):
        return None

    def log_mel(self, samples: np.ndarray, padding_to: int | None = None) -> torch.Tensor:
        """Valid log-mel frames [n_mels, n] of ``samples``, padded with zeros to ``padding_to`` samples
        (default: ``n_fft`` beyond the chunk) before framing, as the Qwen processor pads to ``chunk_length``."""
        padding_to = padding_to or len(samples) + self.features.n_fft
        out = self.features(samples, sampling_rate=self.sample_rate, padding="max_length", max_length=padding_to,
                            return_attention_mask=True, return_tensors="pt")
        valid = int(out["attention_mask"][0].sum())
        return out["input_features"][0, :, :valid]

    def encode(self, samples, state=None):
        samples = np.asarray(samples, dtype=np.float32).reshape(-1)
        width = self.audio_tower.config.output_dim
        param = self.audio_tower.conv1.weight
        mel = self.log_mel(samples) if len(samples) else torch.zeros(self.features.feature_size, 0)
        frames = mel.shape[1]
        _, count = self.audio_tower._get_feat_extract_output_lengths(torch.tensor([frames]))
        if frames == 0 or int(count) <= 0:
            return torch.zeros(0, width, dtype=param.dtype, device=param.device), None
        lengths = torch.tensor([frames], device=param.device)
        with torch.inference_mode():
            out = self.audio_tower(mel.to(device=param.device, dtype=param.dtype), feature_lens=lengths,
                                   aftercnn_lens=(lengths - 1) // 2 + 1)
        return out.last_hidden_state, None


# ----------------------------------------------------------------------------------------------- loading


def load_streaming_slm_adapter(path: str | None = None, repo_id: str = REPO_ID, dtype: str = "auto",
                               device: str = "auto", attn_implementation: str = "auto",
                               protocol_tokens: dict | None = None, max_text_tokens: int = 8,
                               max_tool_tokens: int = 96, max_tool_calls: int = 4,
                               system_prompt: str = SYSTEM_PROMPT, prompt_template: str = PROMPT_TEMPLATE,
                               tools_in_prompt: bool = True, context_limit: int | None = None,
                               context_reserve: int = 512, name: str = "streaming_slm") -> HFUnitAdapter:
    """The streaming SLM adapter from a local Qwen2.5-Omni checkpoint (``path``, else ``repo_id`` in the local
    Hugging Face cache); never downloads.

    ``dtype``/``device``/``attn_implementation`` "auto": bf16 + sdpa on CUDA, fp32 + eager on CPU.
    ``protocol_tokens``: UnitProtocol field -> token string, over ``hf_unit.PROTOCOL_TOKENS`` (null disables an
    optional one); the six required tokens must be in the tokenizer. ``context_limit``: default the model's
    ``max_position_embeddings`` (32,768); a session that would pass it stops (no eviction: mRoPE keys are
    not re-positioned). A miniature (config.json's ``checkpoint.MINIATURE_KEY``) is reported as one with random
    weights by ``describe()`` (``checkpoint.weights_origin``).
    """
    folder = resolve_checkpoint(path, repo_id, name)
    device, torch_dtype, attn = runtime_settings(device, dtype, attn_implementation)
    check_folder(folder)
    tokenizer = load_tokenizer(folder)
    thinker = load_thinker(folder, torch_dtype, device, attn)
    text = thinker.model.language_model
    rows = int(text.embed_tokens.weight.shape[0])
    check_vocabulary(folder, tokenizer, rows)
    protocol = resolve_protocol(tokenizer, folder, protocol_tokens, rows, max_text_tokens=max_text_tokens,
                                max_tool_tokens=max_tool_tokens, max_tool_calls=max_tool_calls)
    frontend = QwenOmniChunkFrontend(thinker.model.audio_tower, read_json(folder, "preprocessor_config.json"))
    check_frontend(folder, frontend)
    model = ThinkerCausalLM(text, thinker.lm_head)
    return HFUnitAdapter(model, tokenizer, frontend, protocol, name=name, system_prompt=system_prompt,
                         prompt_template=prompt_template, tools_in_prompt=tools_in_prompt,
                         context_limit=context_limit, context_reserve=context_reserve,
                         weights_origin=weights_origin(read_json(folder, "config.json")))


def check_folder(folder: Path) -> None:
    """The checkpoint's config is a Qwen2.5-Omni (full or Thinker) and its tokenizer files are there."""
    config = read_json(folder, "config.json")
    if config.get("model_type") not in ("qwen2_5_omni", "qwen2_5_omni_thinker"):
        raise CheckpointError(f"{folder / 'config.json'}: model_type {config.get('model_type')!r} is not a Qwen2.5-Omni "
                              "checkpoint (expected qwen2_5_omni or qwen2_5_omni_thinker)")
    has_bpe = (folder / "vocab.json").is_file() and (folder / "merges.txt").is_file()
    missing = [n for n in TOKENIZER_FILES if not (folder / n).is_file()]
    if not has_bpe and not (folder / "tokenizer.json").is_file():
        missing.append("vocab.json + merges.txt (or tokenizer.json)")
    if missing:
        raise CheckpointError(f"{folder}: tokenizer files missing: {', '.join(missing)}")
    read_json(folder, "preprocessor_config.json")


def load_tokenizer(folder: Path):
    from transformers import Qwen2Tokenizer

    try:
        return Qwen2Tokenizer.from_pretrained(str(folder), local_files_only=True)
    except Exception as err:  # a malformed vocab/merges file: one line naming the folder
        raise CheckpointError(f"{folder}: cannot load the tokenizer ({type(err).__name__}: {err})") from None


def checkpoint_key(key: str) -> str:
    """The name of a Thinker parameter in a full checkpoint (the inverse of transformers' conversion mapping)."""
    for model_prefix, stored in (("model.language_model.", "thinker.model."), ("model.audio_tower.", "thinker.audio_tower."),
                                 ("model.visual.", "thinker.visual."), ("lm_head.", "thinker.lm_head.")):
        if key.startswith(model_prefix):
            return stored + key[len(model_prefix):]
    return key


@contextmanager
def quiet_transformers():
    """transformers' warnings and progress bars off (the loading report is checked and reported in one line)."""
    from transformers.utils import logging as hf_logging

    verbosity, bars = hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        hf_logging.set_verbosity(verbosity)
        if bars:
            hf_logging.enable_progress_bar()


def load_thinker(folder: Path, dtype: torch.dtype, device: torch.device, attn: str):
    """The Thinker from ``folder``, strictly checked, on ``device``, with the vision tower dropped."""
    from transformers import Qwen2_5OmniThinkerForConditionalGeneration

    try:
        with quiet_transformers():
            thinker, info = Qwen2_5OmniThinkerForConditionalGeneration.from_pretrained(
                str(folder), local_files_only=True, dtype=dtype, attn_implementation=attn, output_loading_info=True,
                ignore_mismatched_sizes=True,  # reported below as one CheckpointError naming the key and shapes
                device_map={"": str(device)} if device.type == "cuda" else None)
    except (OSError, RuntimeError, ValueError, KeyError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else ""
        raise CheckpointError(f"{folder}: cannot load the Qwen2.5-Omni Thinker ({type(err).__name__}: {first})") from None
    check_loading(folder, info)
    thinker.model.visual = None  # never fed: frees its memory once the Thinker object goes
    return thinker.to(device).eval()


def check_loading(folder: Path, info: dict) -> None:
    missing = [k for k in info.get("missing_keys", ()) if not k.startswith(DROPPED_MODULES)]
    unexpected = [k for k in info.get("unexpected_keys", ()) if not k.startswith(ALLOWED_UNEXPECTED)]
    mismatched = list(info.get("mismatched_keys", ()))
    if missing:
        raise CheckpointError(f"{folder}: {len(missing)} Thinker weights missing from the safetensors: {_some(missing)}")
    if unexpected:
        raise CheckpointError(f"{folder}: {len(unexpected)} safetensors keys the Thinker does not have: {_some(unexpected)}")
    if mismatched:
        key, stored, expected = (list(mismatched[0]) + [None, None])[:3]
        more = f" (and {len(mismatched) - 1} more)" if len(mismatched) > 1 else ""
        raise CheckpointError(f"{folder}: {checkpoint_key(key)} has shape {tuple(stored or ())} but config.json gives "
                              f"{tuple(expected or ())}{more}")


def _some(keys, shown: int = 3) -> str:
    keys = sorted(keys)
    more = f" (and {len(keys) - shown} more)" if len(keys) > shown else ""
    return ", ".join(checkpoint_key(k) for k in keys[:shown]) + more


def check_vocabulary(folder: Path, tokenizer, rows: int) -> None:
    top = max(tokenizer.get_vocab().values())
    if top >= rows:
        raise CheckpointError(f"{folder}: the tokenizer has ids up to {top} but the Thinker's embedding has {rows} rows "
                              "(config.json text_config.vocab_size): tokenizer and weights are of different models")


def check_frontend(folder: Path, frontend: QwenOmniChunkFrontend) -> None:
    mels = frontend.audio_tower.config.num_mel_bins
    if frontend.features.feature_size != mels or frontend.sample_rate != 16_000:
        raise CheckpointError(f"{folder / 'preprocessor_config.json'}: feature_size {frontend.features.feature_size} at "
                              f"{frontend.sample_rate} Hz, but the audio tower takes {mels} mel bins of 16 kHz audio")


def resolve_protocol(tokenizer, folder: Path, tokens: dict | None, rows: int, **limits) -> UnitProtocol:
    """The unit protocol from ``tokens`` (field -> token string, over the MiniCPM-o defaults) and the vocabulary."""
    names = {**PROTOCOL_TOKENS, **dict(tokens or {})}
    unknown = sorted(set(names) - set(PROTOCOL_TOKENS))
    if unknown:
        raise ConfigError(f"model.protocol_tokens: unknown fields {unknown}; the fields are {sorted(PROTOCOL_TOKENS)}")
    vocab = tokenizer.get_vocab()
    ids = {field: (vocab.get(token) if token else None) for field, token in names.items()}
    missing = [f"{names[f]!r} ({f})" for f in REQUIRED_TOKENS if ids[f] is None]
    if missing:
        source = folder / ("tokenizer.json" if (folder / "tokenizer.json").is_file() else "tokenizer_config.json")
        raise CheckpointError(f"{source}: no token {', '.join(missing)} of the unit protocol; set "
                              "model.protocol_tokens to the fine-tune's token names")
    used = {i for i in ids.values() if i is not None}
    specials = {vocab[t] for t in QWEN_OMNI_SPECIAL_TOKENS if t in vocab} - used
    unused_rows = range(max(vocab.values()) + 1, rows)  # embedding rows no token maps to
    return UnitProtocol(**ids, extra_forbidden=tuple(sorted(specials)) + tuple(unused_rows), **limits)
