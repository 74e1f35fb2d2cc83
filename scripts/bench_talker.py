"""Speech out: what a talker adds to AR and to Speculative Listening, and what speculative synthesis takes back.

Replays the corpus (embedded model, modeled clock with the derived 8B/A100 profile and its calibrated eSpeak entry
by default) with four runs:

    ar                  no talker (the paper's setting)
    speclisten_stream   no talker
    ar + talker         the talker speaks every reply after its text
    speclisten_speak    + talker, with speculative synthesis of the leading draft in the idle window

then prints, for the talker pair: onset to first audio (mean over tasks, as Table 5), the text onset, stalls (count,
total ms, per minute of speech), the talker's device time per speak chunk, the share of speak chunks whose audio was
synthesized ahead, text token equality and audio byte equality with AR; and the cost of the talker on Speculative
Listening itself: its speak and tool-call speedups over AR without a talker and with one. Runs resume (rerun to
continue); the figures come from the result files (``ticktock.tables.metrics``).

Run (about 45 minutes on 2 CPU cores for the whole mini corpus)::

    python scripts/bench_talker.py --out results/bench-talker
    python scripts/bench_talker.py --per-task 2 clock=wall           # a quick look, measured time on this machine
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from ticktock.replay.config import compose_run

from ticktock.replay.runner import run
from ticktock.tables import metrics
from ticktock.tables.load import load_results

RUNS = {  # name -> (decoder config, talker)
    "ar": ("ar", "none"),
    "speclisten_stream": ("speclisten_stream", "none"),
    "ar+talker": ("ar", "espeak"),
    "speclisten_speak+talker": ("speclisten_speak", "espeak"),
}


def replay(name: str, args) -> Path:
    decoder, talker = RUNS[name]
    cfg = compose_run(decoder, args.model, args.per_task or None, [f"talker={args.talker if talker != 'none' else 'none'}",
                                                                    *args.overrides])
    folder = Path(args.out) / name
    print(run(cfg, folder).line(), flush=True)
    return folder


def audio_equal(base, method) -> float:
    """Share of the method's speaking chunks whose audio hashes equal AR's for the same chunk."""
    keys = ["session_id", "chunk_index"]
    paired = base[keys + ["audio_sha256"]].merge(method[keys + ["audio_sha256"]], on=keys, suffixes=("_ar", "_m"))
    speaking = paired[paired["audio_sha256_ar"].notna() | paired["audio_sha256_m"].notna()]
    return float((speaking["audio_sha256_ar"] == speaking["audio_sha256_m"]).mean()) if len(speaking) else math.nan


def talker_figures(ar, method) -> dict:
    speaking = method.chunks[method.chunks["talker_text"].fillna("") != ""]
    return {
        "first_audio_ms": metrics.first_audio_latency(method.sessions)["first_audio_ms"],
        "onset_ms": metrics.onset_latency(method.chunks)["onset_ms"],
        **metrics.stalls(method.sessions),
        "talker_ms": float(speaking["talker_ms"].mean()),
        "ahead": float(speaking["speech_ahead"].astype(bool).mean()),
        "same_tokens": metrics.losslessness(ar.chunks, method.chunks)["share"],
        "same_audio": audio_equal(ar.chunks, method.chunks),
    }


def speedups(ar, method) -> tuple[float, float]:
    return (metrics.speedup(ar.chunks, method.chunks, metrics.speak_mask(ar.chunks)).speedup,
            metrics.speedup(ar.chunks, method.chunks, metrics.tool_mask(ar.chunks)).speedup)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="results/bench-talker")
    parser.add_argument("--model", default="embedded")
    parser.add_argument("--talker", default="espeak")
    parser.add_argument("--per-task", type=int, default=0, help="sessions per task type (0: the whole corpus)")
    parser.add_argument("overrides", nargs="*", help="run overrides, e.g. clock=wall")
    args = parser.parse_args(argv)
    folders = {name: replay(name, args) for name in RUNS}
    cells = {name: next(iter(load_results([folder]).cells)) for name, folder in folders.items()}
    clock = cells["ar"].setup.clock
    ar, sl = talker_figures(cells["ar+talker"], cells["ar+talker"]), talker_figures(cells["ar+talker"], cells["speclisten_speak+talker"])
    print(f"\n{clock} clock, model {args.model}, talker {args.talker}: AR vs speclisten_speak, both with the talker")
    print(f"{'':24} {'first audio ms':>14} {'text onset ms':>13} {'stalls':>6} {'stall ms':>9} {'per min':>7} "
          f"{'talker ms':>9} {'ahead':>6} {'same tokens':>11} {'same audio':>10}")
    for name, f in (("ar", ar), ("speclisten_speak", sl)):
        print(f"{name:24} {f['first_audio_ms']:14.1f} {f['onset_ms']:13.1f} {f['stalls']:6d} {f['stall_ms']:9.1f} "
              f"{f['per_min']:7.2f} {f['talker_ms']:9.1f} {f['ahead']:6.1%} {f['same_tokens']:11.1%} {f['same_audio']:10.1%}")
    print(f"first-audio onset: {ar['first_audio_ms'] / sl['first_audio_ms']:.2f}x lower; total stall time "
          f"{100 * (1 - sl['stall_ms'] / ar['stall_ms']) if ar['stall_ms'] else math.nan:.1f}% lower")
    plain, talking = speedups(cells["ar"], cells["speclisten_stream"]), speedups(cells["ar+talker"], cells["speclisten_speak+talker"])
    print(f"the talker's cost on Speculative Listening: speak {plain[0]:.2f}x -> {talking[0]:.2f}x, "
          f"tool call {plain[1]:.2f}x -> {talking[1]:.2f}x (without -> with the talker)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
