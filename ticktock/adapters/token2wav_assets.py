"""Code2Wav assets of MiniCPM-o 4.5, small and random: the real files' formats, for a checkpoint written here (a miniature, the embedded model v9).

vLLM-Omni's Code2Wav stage (MiniCPM-o 4.5's third stage, codec tokens -> 24 kHz audio) reads six files from the
checkpoint folder, outside the safetensors shards. :func:`write_token2wav_assets` writes all six under
``folder/assets/``, deterministically for a seed, and vLLM-Omni's own loader (``StepAudio2Token2WavCore``) reads
them unchanged:

===========================================  =========================================================================
``HT_ref_audio.wav``                         The default voice prompt. Real: a 6.016 s recording. Here: 1 s of a
                                             synthetic voiced signal (harmonics of a 120 Hz pitch with vibrato under
                                             three formant peaks), 16 kHz mono 16-bit PCM WAV. Any rate loads: the
                                             loader resamples it to 16 kHz (speech tokenizer, speaker model) and to
                                             24 kHz (the flow's prompt mel); the stage first folds it onto 24 kHz and
                                             6.0 s (zero-padded).
``token2wav/flow.yaml``                      HyperPyYAML: ``flow: !new:...CausalMaskedDiffWithXvec`` holding an
                                             ``UpsampleConformerEncoderV2`` encoder and a ``CausalConditionalCFM``
                                             decoder around a ``DiT`` estimator, the real keys. Small: width 32
                                             (real 512), 1 + 1 conformer blocks (real 6 + 4), 2 heads (real 8), FFN
                                             64 (real 2048); DiT width 32, depth 2, 2 heads of 16 (real 512, 16,
                                             8 of 64). Kept real: 80 mel bins, 192-d speaker vector, 6561 codec ids,
                                             lookahead 3, upsampling x2, DiT input 320 (= 4 x 80), CFG rate 0.7.
``token2wav/flow.pt``                        ``torch.save`` of the flow's float32 state dict (117 tensors, 343,120
                                             values; at the real sizes 155.8 M), random.
``token2wav/hift.pt``                        ``torch.save`` of the HiFT vocoder's float32 state dict: every one of
                                             its 328 keys at its real shape (20.8 M values: vLLM-Omni builds HiFT
                                             with fixed sizes, so it cannot shrink). To keep the file small each
                                             tensor is a window (``torch.as_strided``) over a short random vector:
                                             rows repeat shifted values. ``torch.load`` gives ordinary tensors of the
                                             real shapes; loading copies them into HiFT's parameters.
``token2wav/campplus.onnx``                  ONNX speaker model (run with onnxruntime): input ``input`` float32
                                             ``[batch, frames, 80]`` (fbank), output ``output`` float32
                                             ``[batch, 192]``. Real: the CAM++ network (about 7 M weights). Here: a
                                             mean over frames and a two-layer MLP (17 K weights).
``token2wav/speech_tokenizer_v2_25hz.onnx``  ONNX S3 speech tokenizer v2, which vLLM-Omni never runs: the
                                             ``s3tokenizer`` package reads its initializers by node name into a
                                             PyTorch ``S3TokenizerV2`` whose sizes are fixed (128 mels, width 1280,
                                             6 blocks of 20 heads, FFN 5120: 124 M weights). So the graph has the
                                             real node names (``/blocks.0/attn/query/MatMul``, ...) and the real
                                             initializer names where the reader matches names (``onnx::Conv_2216``,
                                             ``onnx::MatMul_2536``, ``quantizer.project_in.bias``), and every block
                                             reads the same initializers (one per role and shape: ONNX has no views),
                                             float32 as in the real file: about 81 MB, the smallest these fixed sizes
                                             allow. It runs in onnxruntime (inputs ``feats`` float32 ``[batch, 128,
                                             frames]``, ``feats_length`` int32 ``[batch]``; output ``indices`` int64
                                             ``[batch, frames / 4]``, ids 0..6560), without the real model's rotary
                                             positions and padding masks.
===========================================  =========================================================================

The ``!new:`` tags of ``flow.yaml`` name the classes of the ``stepaudio2-minicpmo`` package
(``stepaudio2.cosyvoice2.flow.flow.CausalMaskedDiffWithXvec``, ...), which vLLM-Omni's loader imports as they
are written. The published file spells them ``cosyvoice2.flow.flow...``, a top-level module no package on the
registry installs: ``stepaudio2``'s own ``Token2wav`` aliases it before loading, vLLM-Omni 0.30.0 does not.
``flow_module_prefix="cosyvoice2"`` writes the published spelling.

Example::

    >>> import tempfile
    >>> from pathlib import Path
    >>> folder = Path(tempfile.mkdtemp())
    >>> write_token2wav_assets(folder, seed=0)  # doctest: +SKIP
    >>> sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())  # doctest: +SKIP
    ['assets/HT_ref_audio.wav', 'assets/token2wav/campplus.onnx', 'assets/token2wav/flow.pt', \
'assets/token2wav/flow.yaml', 'assets/token2wav/hift.pt', 'assets/token2wav/speech_tokenizer_v2_25hz.onnx']
    >>> [name for name, _ in flow_parameter_shapes()][:3]
    ['input_embedding.weight', 'spk_embed_affine_layer.weight', 'spk_embed_affine_layer.bias']
    >>> len(hift_parameter_shapes()), sum(math.prod(shape) for _, shape in hift_parameter_shapes())
    (328, 20821295)
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

#: The six files, relative to the checkpoint folder.
ASSET_FILES = ("assets/HT_ref_audio.wav", "assets/token2wav/flow.yaml", "assets/token2wav/flow.pt",
               "assets/token2wav/hift.pt", "assets/token2wav/campplus.onnx",
               "assets/token2wav/speech_tokenizer_v2_25hz.onnx")

#: Where the flow classes live in the ``stepaudio2-minicpmo`` package (see the module docstring).
FLOW_MODULE_PREFIX = "stepaudio2.cosyvoice2"

MEL_BINS = 80  # HiFT's input and the prompt mel: fixed by the vocoder
SPEAKER_DIM = 192  # the speaker model's output, the flow's spk_embed_dim
CODEC_IDS = 3**8  # 6561: the S3 tokenizer's FSQ codes; Code2Wav embeds ids 0..6560 (the Talker's 6562nd id is its EOS)
REF_RATE = 16000
REF_SECONDS = 1.0

#: The flow's sizes: (name in flow.yaml, value). Width-like sizes are small, the interfaces are the real ones.
FLOW = {
    "width": 32,  # flow input_size = encoder input_size = encoder output_size (the encoder needs them equal)
    "conformer_blocks": 1, "conformer_up_blocks": 1, "conformer_heads": 2, "conformer_ffn": 64,
    "pre_lookahead": 3, "up_stride": 2,
    "dit_width": 32, "dit_depth": 2, "dit_heads": 2, "dit_head_dim": 16, "dit_mlp_ratio": 4.0,
}

# HiFT as vLLM-Omni builds it (fixed in code): 80 mels in, 512 channels, upsampling 8 x 5 x 3, ISTFT n_fft 16.
_HIFT_BASE = 512
_HIFT_UPS = ((8, 16), (5, 11), (3, 7))  # (rate, kernel)
_HIFT_RES_KERNELS = (3, 7, 11)
_HIFT_SOURCE_KERNELS = (7, 7, 11)
_HIFT_HARMONICS = 8
_HIFT_NFFT = 16

# S3 tokenizer v2 as s3tokenizer builds it (fixed in code).
_S3_MELS, _S3_WIDTH, _S3_HEADS, _S3_BLOCKS, _S3_FSMN_KERNEL = 128, 1280, 20, 6, 31

_WINDOW_STEP = 13  # hift.pt: consecutive rows of a tensor start this many values apart in its short random vector


def write_token2wav_assets(folder: Path, seed: int = 0, *, flow_module_prefix: str = FLOW_MODULE_PREFIX) -> None:
    """Write Code2Wav's six asset files (``ASSET_FILES``) under ``folder/assets/``; the same seed gives the same
    bytes. About 85 MB, nearly all of it the speech tokenizer (see the module docstring)."""
    folder = Path(folder)
    token2wav = folder / "assets" / "token2wav"
    token2wav.mkdir(parents=True, exist_ok=True)
    # one independent stream per file: a change to one writer does not move the others' values
    audio, flow, hift, campplus, tokenizer = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(5))
    _write_reference_audio(folder / "assets" / "HT_ref_audio.wav", audio)
    (token2wav / "flow.yaml").write_text(flow_yaml(flow_module_prefix))
    _save_state_dict(token2wav / "flow.pt", _flow_state_dict(flow))
    _save_state_dict(token2wav / "hift.pt", _hift_state_dict(hift))
    _save_onnx(token2wav / "campplus.onnx", _campplus_graph(campplus))
    _save_onnx(token2wav / "speech_tokenizer_v2_25hz.onnx", _speech_tokenizer_graph(tokenizer))


# --------------------------------------------------------------------------------------------------------------
# HT_ref_audio.wav
# --------------------------------------------------------------------------------------------------------------

def reference_waveform(rng: np.random.Generator, seconds: float = REF_SECONDS, rate: int = REF_RATE) -> np.ndarray:
    """A voiced, speech-like float32 waveform: harmonics of a 120 Hz pitch (5 Hz vibrato) shaped by formant
    peaks at 700, 1200 and 2600 Hz, 20 ms fades, peak 0.5."""
    t = np.arange(int(seconds * rate)) / rate
    pitch = 120.0 * (1.0 + 0.03 * np.sin(2 * np.pi * 5.0 * t))
    phase = 2 * np.pi * np.cumsum(pitch) / rate
    signal = np.zeros_like(t)
    for k in range(1, int(rate / 2 / 130)):
        freq = 120.0 * k
        gain = sum(np.exp(-0.5 * ((freq - f) / 150.0) ** 2) * a for f, a in ((700, 1.0), (1200, 0.6), (2600, 0.3)))
        signal += (0.05 + gain) / k * np.sin(k * phase + rng.uniform(0, 2 * np.pi))
    signal += 0.003 * rng.standard_normal(t.size)
    fade = np.minimum(1.0, np.minimum(t, t[-1] - t) / 0.02)
    signal *= fade
    return (0.5 * signal / np.abs(signal).max()).astype(np.float32)


def _write_reference_audio(path: Path, rng: np.random.Generator) -> None:
    import soundfile as sf

    sf.write(path, reference_waveform(rng), REF_RATE, subtype="PCM_16", format="WAV")


# --------------------------------------------------------------------------------------------------------------
# flow.yaml / flow.pt
# --------------------------------------------------------------------------------------------------------------

def flow_yaml(prefix: str = FLOW_MODULE_PREFIX) -> str:
    """flow.yaml's text: the real structure and keys at the sizes of ``FLOW``."""
    f = FLOW
    return f"""# ticktock miniature: the real structure at small sizes; weights random (flow.pt)
flow: !new:{prefix}.flow.flow.CausalMaskedDiffWithXvec
    input_size: {f['width']}
    output_size: {MEL_BINS}
    spk_embed_dim: {SPEAKER_DIM}
    output_type: 'mel'
    vocab_size: {CODEC_IDS}
    encoder: !new:{prefix}.transformer.upsample_encoder_v2.UpsampleConformerEncoderV2
        input_size: {f['width']}
        output_size: {f['width']}
        input_layer: 'linear'
        pre_lookahead_len: {f['pre_lookahead']}
        num_blocks: {f['conformer_blocks']}
        num_up_blocks: {f['conformer_up_blocks']}
        up_stride: {f['up_stride']}
        up_scale_factor: {f['up_stride']}
        attention_heads: {f['conformer_heads']}
        pos_enc_layer_type: 'rel_pos_espnet'
        selfattention_layer_type: 'rel_selfattn'
        key_bias: true
        linear_units: {f['conformer_ffn']}
        dropout_rate: 0.1
        positional_dropout_rate: 0.1
        attention_dropout_rate: 0.1
        normalize_before: true
    decoder: !new:{prefix}.flow.flow_matching.CausalConditionalCFM
        inference_cfg_rate: 0.7
        estimator: !new:{prefix}.flow.decoder_dit.DiT
            in_channels: {4 * MEL_BINS}
            out_channels: {MEL_BINS}
            mlp_ratio: {f['dit_mlp_ratio']}
            depth: {f['dit_depth']}
            num_heads: {f['dit_heads']}
            head_dim: {f['dit_head_dim']}
            hidden_size: {f['dit_width']}
"""


def flow_parameter_shapes() -> list[tuple[str, tuple[int, ...]]]:
    """Every key of the flow's state dict with its shape, at the sizes of ``FLOW``."""
    f = FLOW
    d, ffn, heads = f["width"], f["conformer_ffn"], f["conformer_heads"]
    shapes = [("input_embedding.weight", (CODEC_IDS, d)),
              ("spk_embed_affine_layer.weight", (MEL_BINS, SPEAKER_DIM)), ("spk_embed_affine_layer.bias", (MEL_BINS,))]

    def linear(name: str, n_out: int, n_in: int, bias: bool = True) -> list:
        return [(f"{name}.weight", (n_out, n_in))] + ([(f"{name}.bias", (n_out,))] if bias else [])

    def norm(name: str, n: int) -> list:
        return [(f"{name}.weight", (n,)), (f"{name}.bias", (n,))]

    def conformer(name: str) -> list:
        out = [(f"{name}.self_attn.pos_bias_{uv}", (heads, d // heads)) for uv in "uv"]
        for proj in ("linear_q", "linear_k", "linear_v", "linear_out"):
            out += linear(f"{name}.self_attn.{proj}", d, d)
        out += linear(f"{name}.self_attn.linear_pos", d, d, bias=False)
        out += linear(f"{name}.feed_forward.w_1", ffn, d) + linear(f"{name}.feed_forward.w_2", d, ffn)
        return out + norm(f"{name}.norm_ff", d) + norm(f"{name}.norm_mha", d)

    enc = "encoder"
    shapes += linear(f"{enc}.embed.out.0", d, d) + norm(f"{enc}.embed.out.1", d) + norm(f"{enc}.after_norm", d)
    shapes += [(f"{enc}.pre_lookahead_layer.conv1.weight", (d, d, f["pre_lookahead"] + 1)),
               (f"{enc}.pre_lookahead_layer.conv1.bias", (d,)),
               (f"{enc}.pre_lookahead_layer.conv2.weight", (d, d, 3)), (f"{enc}.pre_lookahead_layer.conv2.bias", (d,))]
    for i in range(f["conformer_blocks"]):
        shapes += conformer(f"{enc}.encoders.{i}")
    shapes += [(f"{enc}.up_layer.conv.weight", (d, d, 2 * f["up_stride"] + 1)), (f"{enc}.up_layer.conv.bias", (d,))]
    shapes += linear(f"{enc}.up_embed.out.0", d, d) + norm(f"{enc}.up_embed.out.1", d)
    for i in range(f["conformer_up_blocks"]):
        shapes += conformer(f"{enc}.up_encoders.{i}")
    shapes += linear("encoder_proj", MEL_BINS, d)

    w, inner, hidden = f["dit_width"], f["dit_heads"] * f["dit_head_dim"], int(f["dit_width"] * f["dit_mlp_ratio"])
    est = "decoder.estimator"
    shapes += linear(f"{est}.t_embedder.mlp.0", w, 256) + linear(f"{est}.t_embedder.mlp.2", w, w)
    shapes += linear(f"{est}.in_proj", w, 4 * MEL_BINS)
    for j in range(f["dit_depth"]):
        block = f"{est}.blocks.{j}"
        for proj in ("to_q", "to_k", "to_v"):
            shapes += linear(f"{block}.attn.{proj}", inner, w)
        shapes += norm(f"{block}.attn.q_norm", f["dit_head_dim"]) + norm(f"{block}.attn.k_norm", f["dit_head_dim"])
        shapes += linear(f"{block}.attn.proj", w, inner)
        shapes += linear(f"{block}.mlp.fc1", hidden, w) + linear(f"{block}.mlp.fc2", w, hidden)
        shapes += [(f"{block}.conv.block.1.weight", (w, w, 3)), (f"{block}.conv.block.1.bias", (w,))]
        shapes += norm(f"{block}.conv.block.3", w)
        shapes += [(f"{block}.conv.block.6.weight", (w, w, 3)), (f"{block}.conv.block.6.bias", (w,))]
        shapes += linear(f"{block}.adaLN_modulation.1", 9 * w, w)
    shapes += linear(f"{est}.final_layer.adaLN_modulation.1", 2 * w, w)
    shapes += linear(f"{est}.final_layer.linear", MEL_BINS, w)
    return shapes


def _flow_state_dict(rng: np.random.Generator) -> dict:
    import torch

    state = {}
    for name, shape in flow_parameter_shapes():
        if name.endswith("bias") or name.endswith("pos_bias_u") or name.endswith("pos_bias_v"):
            values = 0.02 * rng.standard_normal(shape)
        elif len(shape) == 1:  # LayerNorm gains
            values = 1.0 + 0.05 * rng.standard_normal(shape)
        elif name == "input_embedding.weight":
            values = rng.standard_normal(shape)
        else:  # linear (out, in) and conv (out, in, k): scaled by fan-in
            values = rng.standard_normal(shape) / math.sqrt(math.prod(shape[1:]))
        state[name] = torch.from_numpy(np.ascontiguousarray(values, dtype=np.float32))
    return state


# --------------------------------------------------------------------------------------------------------------
# hift.pt
# --------------------------------------------------------------------------------------------------------------

def hift_parameter_shapes() -> list[tuple[str, tuple[int, ...]]]:
    """Every key of the HiFT vocoder's state dict with its shape, as vLLM-Omni builds HiFT (fixed sizes). Weight-
    normed convolutions hold ``parametrizations.weight.original0`` (the gain g) and ``original1`` (the direction v)."""
    shapes: list[tuple[str, tuple[int, ...]]] = []

    def normed_conv(name: str, weight: tuple[int, ...], bias: int) -> None:
        shapes.extend([(f"{name}.bias", (bias,)), (f"{name}.parametrizations.weight.original0", (weight[0], 1, 1)),
                       (f"{name}.parametrizations.weight.original1", weight)])

    def resblock(name: str, channels: int, kernel: int) -> None:
        for group in ("convs1", "convs2"):
            for j in range(3):  # dilations 1, 3, 5
                normed_conv(f"{name}.{group}.{j}", (channels, channels, kernel), channels)
        for group in ("activations1", "activations2"):
            shapes.extend((f"{name}.{group}.{j}.alpha", (channels,)) for j in range(3))  # Snake

    shapes += [("m_source.l_linear.weight", (1, _HIFT_HARMONICS + 1)), ("m_source.l_linear.bias", (1,))]
    normed_conv("conv_pre", (_HIFT_BASE, MEL_BINS, 7), _HIFT_BASE)
    for i, (_, kernel) in enumerate(_HIFT_UPS):  # ConvTranspose1d weights are (in, out, k)
        normed_conv(f"ups.{i}", (_HIFT_BASE >> i, _HIFT_BASE >> (i + 1), kernel), _HIFT_BASE >> (i + 1))
    rates = [rate for rate, _ in _HIFT_UPS]
    down = list(np.cumprod([1] + rates[::-1][:-1]))[::-1]  # source downsampling per stage: 15, 3, 1
    for i, (rate, kernel) in enumerate(zip(down, _HIFT_SOURCE_KERNELS)):
        channels = _HIFT_BASE >> (i + 1)
        width = 1 if rate == 1 else 2 * int(rate)
        shapes += [(f"source_downs.{i}.weight", (channels, _HIFT_NFFT + 2, width)),
                   (f"source_downs.{i}.bias", (channels,))]
        resblock(f"source_resblocks.{i}", channels, kernel)
    for i in range(len(_HIFT_UPS)):
        for r, kernel in enumerate(_HIFT_RES_KERNELS):
            resblock(f"resblocks.{len(_HIFT_RES_KERNELS) * i + r}", _HIFT_BASE >> (i + 1), kernel)
    normed_conv("conv_post", (_HIFT_NFFT + 2, _HIFT_BASE >> len(_HIFT_UPS), 7), _HIFT_NFFT + 2)
    for i in range(5):
        normed_conv(f"f0_predictor.condnet.{2 * i}", (512, MEL_BINS if i == 0 else 512, 3), 512)
    shapes += [("f0_predictor.classifier.weight", (1, 512)), ("f0_predictor.classifier.bias", (1,))]
    return shapes


def _windowed(rng: np.random.Generator, shape: tuple[int, ...], scale: float):
    """A float32 tensor of ``shape`` whose rows are windows, ``_WINDOW_STEP`` values apart, over one short random
    vector (``torch.as_strided``: the saved storage is that vector, not the full tensor)."""
    import torch

    inner = math.prod(shape[1:])
    length = _WINDOW_STEP * (shape[0] - 1) + inner
    if len(shape) < 2 or length >= math.prod(shape):
        return torch.from_numpy((scale * rng.standard_normal(shape)).astype(np.float32))
    base = torch.from_numpy((scale * rng.standard_normal(length)).astype(np.float32))
    strides = [_WINDOW_STEP] + [math.prod(shape[k + 1:]) for k in range(1, len(shape))]
    return base.as_strided(shape, strides)


def _hift_state_dict(rng: np.random.Generator) -> dict:
    import torch

    state = {}
    for name, shape in hift_parameter_shapes():
        if name.endswith("original0"):  # weight-norm gain: the norm of each row of the effective weight
            values = torch.from_numpy(rng.uniform(0.4, 0.8, shape).astype(np.float32))
        elif name.endswith("original1"):  # weight-norm direction: its scale does not matter
            values = _windowed(rng, shape, 1.0)
        elif name.endswith("alpha"):  # Snake frequency, kept away from 0
            values = torch.from_numpy((1.0 + 0.1 * rng.standard_normal(shape)).astype(np.float32))
        elif name == "f0_predictor.classifier.bias":  # f0 in Hz around 180: the sine source stays voiced
            values = torch.tensor([180.0], dtype=torch.float32)
        elif name.endswith("bias"):
            values = torch.from_numpy((0.01 * rng.standard_normal(shape)).astype(np.float32))
        else:  # plain weights: source_downs, l_linear, the f0 classifier
            values = _windowed(rng, shape, 1.0 / math.sqrt(math.prod(shape[1:])))
        state[name] = values
    return state


def _save_state_dict(path: Path, state: dict) -> None:
    import torch

    torch.save(state, path)


# --------------------------------------------------------------------------------------------------------------
# campplus.onnx / speech_tokenizer_v2_25hz.onnx
# --------------------------------------------------------------------------------------------------------------

_OPSET = 17  # LayerNormalization needs 17
_IR_VERSION = 8  # the IR of opset 17


class _Graph:
    """Collects ONNX nodes, initializers and constants; every node gets a unique name."""

    def __init__(self):
        self.nodes, self.initializers, self._names, self._constants = [], [], set(), {}

    def weight(self, name: str, values: np.ndarray) -> str:
        from onnx import numpy_helper

        self.initializers.append(numpy_helper.from_array(np.ascontiguousarray(values, dtype=np.float32), name))
        return name

    def constant(self, values, dtype=np.float32) -> str:
        """A Constant node's output (not an initializer: the s3tokenizer reader maps initializers to weights)."""
        from onnx import helper, numpy_helper

        array = np.asarray(values, dtype=dtype)
        key = (array.dtype.str, array.shape, array.tobytes())
        if key not in self._constants:
            name = f"/Constant_{len(self._constants)}_output_0"
            self.nodes.append(helper.make_node("Constant", [], [name], name=f"/Constant_{len(self._constants)}",
                                               value=numpy_helper.from_array(array)))
            self._constants[key] = name
        return self._constants[key]

    def op(self, op_type: str, inputs: list[str], name: str, **attributes) -> str:
        from onnx import helper

        base, n = name, 0
        while name in self._names:
            n += 1
            name = f"{base}_{n}"
        self._names.add(name)
        output = f"{name}_output_0"
        self.nodes.append(helper.make_node(op_type, inputs, [output], name=name, **attributes))
        return output

    def gelu(self, x: str, scope: str) -> str:
        erf = self.op("Erf", [self.op("Div", [x, self.constant(math.sqrt(2.0))], f"{scope}/Div")], f"{scope}/Erf")
        half = self.op("Mul", [x, self.op("Add", [erf, self.constant(1.0)], f"{scope}/Add")], f"{scope}/Mul")
        return self.op("Mul", [half, self.constant(0.5)], f"{scope}/Mul_1")

    def model(self, name: str, inputs: list, outputs: list):
        from onnx import helper

        graph = helper.make_graph(self.nodes, name, inputs, outputs, self.initializers)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", _OPSET)], producer_name="ticktock")
        model.ir_version = _IR_VERSION
        return model


def _campplus_graph(rng: np.random.Generator):
    from onnx import TensorProto, helper

    g, hidden = _Graph(), 64
    pooled = g.op("ReduceMean", ["input"], "/pool/ReduceMean", axes=[1], keepdims=0)
    w0 = g.weight("head.0.weight", rng.standard_normal((MEL_BINS, hidden)) / math.sqrt(MEL_BINS))
    h = g.op("MatMul", [pooled, w0], "/head/head.0/MatMul")
    h = g.op("Relu", [g.op("Add", [h, g.weight("head.0.bias", 0.1 * rng.standard_normal(hidden))], "/head/head.0/Add")],
             "/head/head.1/Relu")
    h = g.op("MatMul", [h, g.weight("head.2.weight", rng.standard_normal((hidden, SPEAKER_DIM)) / math.sqrt(hidden))],
             "/head/head.2/MatMul")
    g.nodes.append(helper.make_node("Add", [h, g.weight("head.2.bias", 0.1 * rng.standard_normal(SPEAKER_DIM))],
                                    ["output"], name="/head/head.2/Add"))
    return g.model("campplus",
                   [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", "frames", MEL_BINS])],
                   [helper.make_tensor_value_info("output", TensorProto.FLOAT, ["batch", SPEAKER_DIM])])


def _speech_tokenizer_graph(rng: np.random.Generator):
    from onnx import TensorProto, helper

    g, d, heads = _Graph(), _S3_WIDTH, _S3_HEADS
    normal = lambda *shape: rng.standard_normal(shape, dtype=np.float32)  # noqa: E731
    # shared weights, one per role and shape; MatMul weights are (in, out) (the reader transposes them)
    w_conv1 = g.weight("onnx::Conv_2216", normal(d, _S3_MELS, 3) / math.sqrt(3 * _S3_MELS))
    b_conv1 = g.weight("onnx::Conv_2217", 0.02 * normal(d))
    w_conv2 = g.weight("onnx::Conv_2218", normal(d, d, 3) / math.sqrt(3 * d))
    b_conv2 = g.weight("onnx::Conv_2219", 0.02 * normal(d))
    w_square = g.weight("blocks.attn.linear.weight", normal(d, d) / math.sqrt(d))
    b_width = g.weight("blocks.linear.bias", 0.02 * normal(d))
    w_fsmn = g.weight("blocks.attn.fsmn_block.weight", normal(d, 1, _S3_FSMN_KERNEL) / math.sqrt(_S3_FSMN_KERNEL))
    ln_gain = g.weight("blocks.ln.weight", 1.0 + 0.05 * normal(d))
    ln_bias = g.weight("blocks.ln.bias", 0.02 * normal(d))
    w_up = g.weight("blocks.mlp.0.weight", normal(d, 4 * d) / math.sqrt(d))
    b_up = g.weight("blocks.mlp.0.bias", 0.02 * normal(4 * d))
    w_down = g.weight("blocks.mlp.2.weight", normal(4 * d, d) / math.sqrt(4 * d))
    w_project = g.weight("onnx::MatMul_2536", normal(d, 8) / math.sqrt(d))
    b_project = g.weight("quantizer.project_in.bias", 0.1 * normal(8))

    x = g.gelu(g.op("Conv", ["feats", w_conv1, b_conv1], "/conv1/Conv", kernel_shape=[3], strides=[2], pads=[1, 1]),
               "/conv1_act")
    x = g.gelu(g.op("Conv", [x, w_conv2, b_conv2], "/conv2/Conv", kernel_shape=[3], strides=[2], pads=[1, 1]),
               "/conv2_act")
    x = g.op("Transpose", [x], "/Transpose", perm=[0, 2, 1])  # (batch, frames / 4, width)
    split_heads = g.constant([0, 0, heads, d // heads], np.int64)
    merge_heads = g.constant([0, 0, d], np.int64)

    def split(t: str, perm: list[int], scope: str) -> str:  # (batch, frames, width) -> heads, permuted
        t = g.op("Reshape", [t, split_heads], f"{scope}/Reshape")
        return g.op("Transpose", [t], f"{scope}/Transpose", perm=perm)

    for i in range(_S3_BLOCKS):
        s = f"/blocks.{i}"
        h = g.op("LayerNormalization", [x, ln_gain, ln_bias], f"{s}/attn_ln/LayerNormalization", axis=-1, epsilon=1e-5)
        q = g.op("Add", [g.op("MatMul", [h, w_square], f"{s}/attn/query/MatMul"), b_width], f"{s}/attn/query/Add")
        k = g.op("MatMul", [h, w_square], f"{s}/attn/key/MatMul")
        v = g.op("Add", [g.op("MatMul", [h, w_square], f"{s}/attn/value/MatMul"), b_width], f"{s}/attn/value/Add")
        q, k, vh = (split(q, [0, 2, 1, 3], f"{s}/attn"), split(k, [0, 2, 3, 1], f"{s}/attn"),
                    split(v, [0, 2, 1, 3], f"{s}/attn"))
        scores = g.op("Mul", [g.op("MatMul", [q, k], f"{s}/attn/MatMul"), g.constant(1.0 / math.sqrt(d // heads))],
                      f"{s}/attn/Mul")
        a = g.op("MatMul", [g.op("Softmax", [scores], f"{s}/attn/Softmax", axis=-1), vh], f"{s}/attn/MatMul")
        a = g.op("Transpose", [a], f"{s}/attn/Transpose", perm=[0, 2, 1, 3])
        a = g.op("Reshape", [a, merge_heads], f"{s}/attn/Reshape")
        memory = g.op("Conv", [g.op("Transpose", [v], f"{s}/attn/Transpose", perm=[0, 2, 1]), w_fsmn],
                      f"{s}/attn/fsmn_block/Conv", kernel_shape=[_S3_FSMN_KERNEL], group=d,
                      pads=[(_S3_FSMN_KERNEL - 1) // 2, _S3_FSMN_KERNEL // 2])
        memory = g.op("Add", [g.op("Transpose", [memory], f"{s}/attn/Transpose", perm=[0, 2, 1]), v], f"{s}/attn/Add")
        out = g.op("Add", [g.op("MatMul", [a, w_square], f"{s}/attn/out/MatMul"), b_width], f"{s}/attn/out/Add")
        x = g.op("Add", [x, g.op("Add", [out, memory], f"{s}/attn/Add")], f"{s}/Add")
        h = g.op("LayerNormalization", [x, ln_gain, ln_bias], f"{s}/mlp_ln/LayerNormalization", axis=-1, epsilon=1e-5)
        h = g.op("Add", [g.op("MatMul", [h, w_up], f"{s}/mlp/mlp.0/MatMul"), b_up], f"{s}/mlp/mlp.0/Add")
        h = g.gelu(h, f"{s}/mlp/mlp.1")
        h = g.op("Add", [g.op("MatMul", [h, w_down], f"{s}/mlp/mlp.2/MatMul"), b_width], f"{s}/mlp/mlp.2/Add")
        x = g.op("Add", [x, h], f"{s}/Add")
    # FSQ: 8 values in {-1, 0, 1} -> one base-3 number in 0..6560
    h = g.op("MatMul", [x, w_project], "/quantizer/project_in/MatMul")
    h = g.op("Add", [h, b_project], "/quantizer/project_in/Add")
    h = g.op("Round", [g.op("Mul", [g.op("Tanh", [h], "/quantizer/Tanh"), g.constant(0.999)], "/quantizer/Mul")],
             "/quantizer/Round")
    code = g.op("MatMul", [g.op("Add", [h, g.constant(1.0)], "/quantizer/Add"), g.constant(3.0 ** np.arange(8))],
                "/quantizer/MatMul")
    g.nodes.append(helper.make_node("Cast", [code], ["indices"], name="/quantizer/Cast", to=TensorProto.INT64))
    return g.model("speech_tokenizer_v2_25hz",
                   [helper.make_tensor_value_info("feats", TensorProto.FLOAT, ["batch", _S3_MELS, "frames"]),
                    helper.make_tensor_value_info("feats_length", TensorProto.INT32, ["batch"])],
                   [helper.make_tensor_value_info("indices", TensorProto.INT64, ["batch", "tokens"])])


def _save_onnx(path: Path, model) -> None:
    import onnx

    onnx.save_model(model, str(path))
