"""MiniCPM-o 4.5's configuration, as a miniature checkpoint ships it (``auto_map`` ``AutoConfig``).

``MiniCPMOConfig`` is a ``Qwen3Config`` (the Thinker LLM's fields sit at the top level of config.json) with
``"version": "4.5"`` (what tells MiniCPM-o 4.5 from the older MiniCPM-o generations, which share
``model_type: minicpmo``) and four sub-configs, each a config object once loaded:

==================  ==============================================================================
``vision_config``   the SigLIP vision tower ``vpm.*`` (``SiglipVisionConfig``)
``audio_config``    the Whisper encoder ``apm.*`` (``WhisperConfig``; ``encoder_ffn_dim`` = 4 x ``d_model``)
``tts_config``      the Talker ``tts.*``: a Llama backbone with text / codec embeddings (``MiniCPMTTSConfig``)
``slice_config``    how images are cut into slices (``MiniCPMVSliceConfig``)
==================  ==============================================================================

The top-level ``query_num`` (resampler queries per image slice), ``image_size`` (the slice resolution),
``audio_pool_step`` and ``audio_chunk_length`` complete what a runtime reads. Written for TickTock's miniatures
(transformers 5 dataclass configs); it stands alone.
"""

from transformers import PretrainedConfig, Qwen3Config, SiglipVisionConfig, WhisperConfig


class MiniCPMVSliceConfig(PretrainedConfig):
    """Image slicing: at most ``max_slice_nums`` slices of ``scale_resolution`` pixels, ``patch_size`` patches."""

    model_type = "minicpmv"

    patch_size: int = 14
    max_slice_nums: int = 9
    scale_resolution: int = 448


class MiniCPMTTSConfig(PretrainedConfig):
    """The Talker: a Llama backbone (``tts.model.*``) over ``emb_text`` (the Thinker's token ids) plus the projected
    Thinker hidden states (``projector_semantic``, from ``llm_dim``), emitting ``num_audio_tokens`` codec ids
    (the last one is the codec EOS) through a weight-normed ``head_code``."""

    model_type = "minicpmtts"

    llm_dim: int = 4096
    hidden_size: int = 768
    intermediate_size: int = 3072
    num_attention_heads: int = 12
    num_key_value_heads: int = 12
    num_hidden_layers: int = 20
    hidden_act: str = "silu"
    rms_norm_eps: float = 1e-6
    max_position_embeddings: int = 4096
    num_audio_tokens: int = 6562
    num_text_tokens: int = 152064
    num_vq: int = 1
    audio_bos_token_id: int = 151687
    text_eos_token_id: int = 151692
    normalize_projected_hidden: bool = True
    attention_type: str = "full_attention"
    backbone_model: str = "llama"
    audio_tokenizer_type: str = "s3tokenizer"


def as_config(value, config_class):
    """A sub-config as an object of ``config_class`` (from a dict of config.json, or a default one)."""
    if isinstance(value, PretrainedConfig):
        return value
    fields = {key: item for key, item in (value or {}).items() if key != "model_type"}
    return config_class(**fields)


class MiniCPMOConfig(Qwen3Config):
    """MiniCPM-o 4.5: a Qwen3 LLM (``llm.*``) with vision, audio and Talker parts (see the module docstring)."""

    model_type = "minicpmo"
    sub_configs = {"vision_config": SiglipVisionConfig, "audio_config": WhisperConfig,
                   "tts_config": MiniCPMTTSConfig, "slice_config": MiniCPMVSliceConfig}

    version: str = "4.5"
    query_num: int = 64
    image_size: int = 448
    patch_size: int = 14
    drop_vision_last_layer: bool = False
    batch_vision_input: bool = True
    use_image_id: bool = True
    vision_batch_size: int = 16
    audio_pool_step: int = 5
    audio_chunk_length: float = 1.0
    stream_input: bool = True
    init_vision: bool = True
    init_audio: bool = True
    init_tts: bool = True
    vision_config: dict | PretrainedConfig | None = None
    audio_config: dict | PretrainedConfig | None = None
    tts_config: dict | PretrainedConfig | None = None
    slice_config: dict | PretrainedConfig | None = None

    def __post_init__(self, **kwargs):
        for key, config_class in self.sub_configs.items():
            setattr(self, key, as_config(getattr(self, key), config_class))
        super().__post_init__(**kwargs)
