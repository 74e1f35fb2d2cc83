"""Derive the shipped cost profiles for an 8B backbone on an A100 (no GPU was available to measure one).

Writes two profiles that differ only in their audio encoder, so the tables can show both readings side by side (a
profile sweep: ``-m clock.profile=<one>,<other>``):

- ``configs/profiles/a100-8b-derived.yaml``: the encoder cost fitted to the paper (85 ms per 1 s chunk);
- ``configs/profiles/a100-8b-published-encoder.yaml``: MiniCPM-o 4.5's published encoder figures in its place
  (29.8 ms on a session's first 1 s unit, 10.0 ms on later ones: vllm-omni PR 6117, CUDA events, GPU not stated).

Every number names its source in the profile's ``sources`` block (``ticktock.clocks.sources``): measured, published,
derived (the derivation below) or assumed (and why). The model of one bf16 forward at batch 1:

    ms(q, ctx) = host_and_launch + max(weight_read, gemm(q)) + elementwise * q + kv_read * ctx

- weight_read: 16.4 GB of Qwen3-8B weights (bf16) at an achieved 1.6 TB/s of the A100-80GB's 2.0 TB/s
  HBM bandwidth = 10.3 ms; gemm(q) = q * 16.4 GFLOP at an achieved 200 of 312 bf16 TFLOP/s = 0.082 ms/token,
  so forwards of up to ~125 query tokens stay memory-bound ("a forward of a short sequence costs about the
  same as a forward of one token", paper section 1);
- kv_read: 36 layers x 8 KV heads x 128 dims x 2 (K, V) x 2 bytes = 147 KB per cached token at 1.6 TB/s;
- elementwise: norms, RoPE, activations, sampling: 0.03 ms per query token;
- host_and_launch = 16.5 ms: the eager per-layer kernel launches of a Hugging Face runtime, chosen so that
  one decode step costs 27 ms, which the paper's AR latencies imply: onset 417 ms for Gander (a speak
  chunk of ~11 tokens at K = 8 after a ~110 ms chunk prefill) and a tool-call latency of 1827-2623 ms.

Batched forwards (``concurrency.batching=true``) follow the same bandwidth model: a step of B forwards reads the
weights once and each session's KV cache padded to the longest, which is exactly ``ms(sum q_i, B x max ctx)``, so
``batch_factor`` is 1.0 for B = 1, 2, 4, 8. The context grid runs to 65536 so that eight sessions' padded contexts
(8 x 8192) stay on the grid.

The audio encoder (MiniCPM-o 4.5's streaming Whisper-medium encoder, 307 M parameters, and its 21 M projection):

- derived profile: encode_ms = 85 ms per chunk (encoder + projection + per-unit runtime work), fitted so that a listen
  chunk keeps the GPU busy ~11% of the chunk (the paper: idle 70-89%); encode_fixed_ms = 16.5 ms (assumed: equal to a
  forward's host_and_launch, the encoder's eager kernel launches) is the part of encoding a piece of a chunk that does
  not scale with its audio, so a piece of fraction f costs 16.5 + 68.5 f (only early prefill encodes pieces).
- published-encoder profile: encode_ms = 10.0 ms, encode_first_ms = 29.8 ms (published); encode_fixed_ms = 10.0 ms
  (assumed: at 10 ms the encoder is launch-bound, see below, so a piece costs what a whole chunk costs).

A batch of B sessions' encodings (``concurrency.batch_encodings=true``). An eager encoder at batch 1 is launch-bound:
one 1 s unit is 50 new encoder positions, 2 x 328 M x 50 = 32.8 GFLOP of matmuls plus about 7.4 GFLOP of attention over
an encoder cache of up to 1500 positions (24 layers x 2 x 2 x 50 x 1500 x 1024), 0.20 ms at 200 TFLOP/s; the weights
(656 MB, read once per step whatever B) take 0.41 ms at 1.6 TB/s; the session's encoder KV cache (24 layers x 2 x 1500
x 1024 x 2 bytes = 147 MB) 0.09 ms. So 10 ms (published) or 85 ms (fitted) per unit is almost all kernel launches and
host work, paid once per step. Each further session in the step adds its own device work, 0.20 + 0.09 = 0.29 ms, and
its host-side work that a batch does not share (its log-mel features and input copy: 1.0 ms, assumed), 1.3 ms in all
(``ENCODE_EXTRA_MS``, rounded up):

    factor(B) = (encode_ms + (B - 1) x 1.3) / encode_ms

85 ms: 1.015, 1.046, 1.107 at B = 2, 4, 8; 10 ms: 1.13, 1.39, 1.91. SGLang's report of the same effect (sglang issue
22361: one Whisper encoder call about 7 ms on a B200; five requests served one by one block the scheduler 35-90 ms) is
the serving-side reading: five encodings one by one cost about five times one call, batched about one call.

The talker entries (``talkers:``) are measured on a CPU by ``ticktock calibrate talker=...``: the script keeps those the
derived profile already has and gives both profiles the same.

Run: python scripts/derive_a100_profile.py
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ticktock.clocks.modeled import CostProfile

HOST_MS, WEIGHTS_MS, GEMM_MS_PER_TOKEN = 16.5, 10.3, 0.082
ELEMENTWISE_MS_PER_TOKEN, KV_MS_PER_TOKEN = 0.03, 147e3 / 1.6e12 * 1e3
QUERY = [1, 2, 4, 8, 16, 32, 64, 96, 128, 192, 256]
CONTEXT = [0, 1024, 2048, 4096, 8192, 16384, 32768, 65536]
BATCH_SIZES = [1, 2, 4, 8]
FITTED_ENCODE_MS, FITTED_ENCODE_FIXED_MS = 85.0, HOST_MS
PUBLISHED_ENCODE_MS, PUBLISHED_ENCODE_FIRST_MS = 10.0, 29.8
ENCODE_EXTRA_MS = 1.3  # per further session in a batch of encodings: 0.29 ms on the device + 1.0 ms host (assumed)
PROFILES = Path(__file__).resolve().parent.parent / "ticktock" / "configs" / "profiles"
HERE = "scripts/derive_a100_profile.py"
PR_6117 = ("vllm-omni PR 6117: MiniCPM-o 4.5's audio encoder, 29.8 ms on the first 1 s unit and 10.0 ms on later ones "
           "(CUDA events; GPU not stated)")

MEASURED_TALKER = ("python -m ticktock.calibrate model=embedded talker={} talker_into=ticktock/configs/profiles/"
                   "a100-8b-derived.yaml (on a 2-core CPU, 2026-12-03: the talker runs on the CPU)")
TALKER_SOURCES = {  # the sources of the talker entries shipped before profiles named them (later ones carry their own)
    "espeak": {"measured": MEASURED_TALKER.format("espeak")},
    "piper": {"measured": MEASURED_TALKER.format("piper")},
    "cosyvoice2-l20": {"published": "FunAudioLLM/CosyVoice runtime/triton_trtllm/README.Cosyvoice2.Unet.md: CosyVoice 2 "
                                    "on one L20 (Triton + TensorRT-LLM, concurrency 1): first chunk P50 218 ms, real-time "
                                    "factor 0.124"},
}
FORWARD_SOURCES = {
    "forward_ms": {"derived": f"bandwidth/compute model of a bf16 Qwen3-8B forward on an A100-80GB (1.6 TB/s, 200 TFLOP/s "
                              f"achieved) plus 16.5 ms of eager host and launch time, anchored on the paper's AR "
                              f"latencies (onset 417 ms, tool calls 1827-2623 ms); {HERE}"},
    "batch_factor": {"derived": "the same bandwidth model: a step of B forwards reads the weights once and each "
                                f"session's KV padded to the longest, exactly forward_ms(sum q, B x max context); {HERE}"},
}


def forward_ms(q: int, ctx: int) -> float:
    return HOST_MS + max(WEIGHTS_MS, GEMM_MS_PER_TOKEN * q) + ELEMENTWISE_MS_PER_TOKEN * q + KV_MS_PER_TOKEN * ctx


def encode_batch_factor(encode_ms: float) -> list[float]:
    """factor(B) for ``BATCH_SIZES``: one encoding's cost plus ``ENCODE_EXTRA_MS`` per further session, over one."""
    return [round((encode_ms + (b - 1) * ENCODE_EXTRA_MS) / encode_ms, 4) for b in BATCH_SIZES]


def encode_batch_source(encode_ms: float) -> dict:
    return {"derived": f"an eager encoder at batch 1 is launch-bound: each further session adds {ENCODE_EXTRA_MS} ms to "
                       f"the {encode_ms:g} ms step (0.29 ms of its own encoder FLOPs and encoder-KV reads on an A100, "
                       f"1.0 ms of its host-side features, assumed); {HERE}"}


def derived_profile(talkers: dict | None, talker_sources: dict) -> CostProfile:
    return CostProfile(
        name="a100-8b-derived",
        query_tokens=QUERY,
        context_tokens=CONTEXT,
        forward_table=[[forward_ms(q, c) for c in CONTEXT] for q in QUERY],
        encode_ms=FITTED_ENCODE_MS,
        encode_fixed_ms=FITTED_ENCODE_FIXED_MS,
        batch_sizes=BATCH_SIZES,
        batch_factor=[1.0] * len(BATCH_SIZES),
        encode_batch_sizes=BATCH_SIZES,
        encode_batch_factor=encode_batch_factor(FITTED_ENCODE_MS),
        talkers=talkers,
        model="8B dense decoder (Qwen3-8B backbone, as in MiniCPM-o 4.5 / Gander), bf16, batch 1",
        device="NVIDIA A100-80GB (derived, not measured)",
        provenance=(
            "DERIVED, not measured: bandwidth/compute model anchored on the paper's AR latencies "
            "(onset 417-1089 ms, tool-call 1827-2623 ms, listen chunks idle 70-89%); the audio encoder's 85 ms per chunk "
            "fitted to that idle share. Every number names its source (sources:); see scripts/derive_a100_profile.py. "
            "Replace with `ticktock calibrate` output from a real GPU."
        ),
        sources={
            **FORWARD_SOURCES,
            "encode_ms": {"derived": "fitted so that a listen chunk keeps the GPU busy ~11% of its 1 s (the paper: "
                                     f"GPU idle 70-89% on listen chunks); {HERE}"},
            "encode_fixed_ms": {"assumed": "equal to a forward's host and launch time (16.5 ms): the encoder's eager "
                                           "kernel launches, the part of encoding a piece of a chunk that does not scale "
                                           "with its audio (early prefill only)"},
            "encode_batch_factor": encode_batch_source(FITTED_ENCODE_MS),
            **talker_sources,
        },
    )


def published_encoder_profile(derived: CostProfile) -> CostProfile:
    """The derived profile with MiniCPM-o 4.5's published encoder figures in place of the fitted 85 ms."""
    return replace(
        derived,
        name="a100-8b-published-encoder",
        encode_ms=PUBLISHED_ENCODE_MS,
        encode_first_ms=PUBLISHED_ENCODE_FIRST_MS,
        encode_fixed_ms=PUBLISHED_ENCODE_MS,
        encode_batch_factor=encode_batch_factor(PUBLISHED_ENCODE_MS),
        provenance=(
            "DERIVED forwards (as a100-8b-derived), PUBLISHED audio encoder: MiniCPM-o 4.5's encoder measured in "
            "vllm-omni PR 6117 (29.8 ms on the first 1 s unit, 10.0 ms on later ones; the GPU is not stated) in place "
            "of the fitted 85 ms. Every number names its source (sources:); see scripts/derive_a100_profile.py."
        ),
        sources={
            **derived.sources,
            "encode_ms": {"published": PR_6117},
            "encode_first_ms": {"published": PR_6117},
            "encode_fixed_ms": {"assumed": "equal to encode_ms: at 10 ms a unit the encoder is launch-bound (0.7 ms of "
                                           "device work), so a piece of a chunk costs what a whole chunk costs"},
            "encode_batch_factor": encode_batch_source(PUBLISHED_ENCODE_MS),
        },
    )


def shipped_talkers() -> tuple[dict | None, dict]:
    """The talker costs of the shipped derived profile (measured with ``ticktock calibrate talker=...``) and their
    sources, so that regenerating keeps them."""
    path = PROFILES / "a100-8b-derived.yaml"
    if not path.is_file():
        return None, {}
    shipped = CostProfile.load(path)
    sources = {f"talkers.{name}": (shipped.sources or {}).get(f"talkers.{name}") or TALKER_SOURCES[name]
               for name in shipped.talkers or {}}
    return shipped.talkers, sources


def main() -> list[Path]:
    derived = derived_profile(*shipped_talkers())
    written = []
    for profile in (derived, published_encoder_profile(derived)):
        path = PROFILES / f"{profile.name}.yaml"
        path.write_text(profile.to_yaml())
        written.append(path)
    return written


if __name__ == "__main__":
    for path in main():
        print(path)
