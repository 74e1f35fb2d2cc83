"""Speculative Listening on the audio that has already arrived: each knob's contribution, side by side.

Replays the corpus (embedded model, modeled clock with the derived 8B/A100 profile by default) with:

    ar                          the baseline
    ar_prefill                  AR with early prefill (the same tokens; the fair baseline for early prefill)
    speclisten_plus             silence hypotheses only (what SL drafts today)
    speclisten_stream_partial   + partial-audio hypotheses (re-drafted as the chunk's audio arrives)
    speclisten_stream_prefill   + early prefill only
    speclisten_stream           + both

at each temperature, then prints per variant: speak and tool-call speedup against AR and against AR with early
prefill, post-audio forwards per chunk in every output-length bucket from 2 to 128 tokens (and the worst), the
mean response onset, the FDB v3 mean per-session max lag and its reduction against AR, draft acceptance on chunks
where the user speaks and where the user is silent (Table 7's measure), and token equality with AR. Runs resume
(rerun to continue); the figures come from the result files (``ticktock.tables.metrics``).

Run (about 25 minutes on 2 CPU cores for the whole mini corpus at two temperatures)::

    python scripts/bench_stream.py --out results/bench-stream
    python scripts/bench_stream.py --per-task 2 --temperatures 0.0 clock=wall    # a quick look, measured time
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from ticktock.replay.config import compose_run

from ticktock.replay.runner import run
from ticktock.tables import metrics
from ticktock.tables.load import load_results

VARIANTS = {  # name -> (decoder config, overrides)
    "ar": ("ar", []),
    "ar_prefill": ("ar_prefill", []),
    "speclisten_plus": ("speclisten_plus", []),
    "speclisten_stream_partial": ("speclisten_stream", ["decoder.early_prefill=false",
                                                        "decoder.name=speclisten_stream_partial"]),
    "speclisten_stream_prefill": ("speclisten_stream", ["decoder.hypothesis=silence",
                                                        "decoder.name=speclisten_stream_prefill"]),
    "speclisten_stream": ("speclisten_stream", []),
}
FORWARD_BUCKETS = ["2-4", "5-8", "9-16", "17-32", "33-64", "65-128"]


def replay(name: str, temperature: float, args) -> Path:
    decoder, extra = VARIANTS[name]
    cfg = compose_run(decoder, args.model, args.per_task or None,
                      [f"sampling.temperature={temperature}", *extra, *args.overrides])
    folder = Path(args.out) / f"T{temperature}" / name
    print(run(cfg, folder).line(), flush=True)
    return folder


def figures(cells: dict, name: str) -> dict:
    chunks, sessions = cells[name].chunks, cells[name].sessions
    ar, ar_prefill = cells["ar"].chunks, cells["ar_prefill"].chunks
    out = {}
    for base_name, base in (("ar", ar), ("ar_prefill", ar_prefill)):
        out[f"speak_vs_{base_name}"] = metrics.speedup(base, chunks, metrics.speak_mask(base)).speedup
        out[f"tool_vs_{base_name}"] = metrics.speedup(base, chunks, metrics.tool_mask(base)).speedup
    buckets = metrics.forwards_by_bucket(chunks)["forwards"].to_dict()
    out["forwards"] = {b: buckets.get(b, math.nan) for b in FORWARD_BUCKETS}
    out["onset_ms"] = metrics.onset_latency(chunks)["onset_ms"]
    lag, ar_lag = metrics.max_lag(sessions)["mean_ms"], metrics.max_lag(cells["ar"].sessions)["mean_ms"]
    out["max_lag_ms"], out["lag_reduction"] = lag, (1 - lag / ar_lag) if ar_lag else math.nan
    shares = metrics.acceptance(chunks) if chunks["draft_full_match"].notna().any() else {}
    out["accept_speaking"] = shares.get("user speaking", (math.nan, 0))[0]
    out["accept_silent"] = shares.get("user silent", (math.nan, 0))[0]
    out["identical"] = metrics.losslessness(ar, chunks)["share"]
    out["arrived"] = chunks["draft_arrived_fraction"].mean()
    return out


def print_figures(temperature: float, rows: dict, clock: str) -> None:
    print(f"\nT = {temperature} ({clock} clock; speedups: mean post-audio latency of the baseline / the variant's)")
    head = (f"{'variant':27} {'speak/AR':>8} {'speak/ARp':>9} {'tool/AR':>8} {'tool/ARp':>8} {'onset ms':>8} "
            f"{'lag ms':>7} {'lag -%':>6} {'acc spk':>7} {'acc sil':>7} {'arrived':>7} {'same':>6} {'worst fwd':>9}")
    print(head)
    for name, f in rows.items():
        worst = max((v for v in f["forwards"].values() if not math.isnan(v)), default=math.nan)
        print(f"{name:27} {f['speak_vs_ar']:8.2f} {f['speak_vs_ar_prefill']:9.2f} {f['tool_vs_ar']:8.2f} "
              f"{f['tool_vs_ar_prefill']:8.2f} {f['onset_ms']:8.1f} {f['max_lag_ms']:7.1f} {100 * f['lag_reduction']:6.1f} "
              f"{f['accept_speaking']:7.1%} {f['accept_silent']:7.1%} {f['arrived']:7.2f} {f['identical']:6.1%} {worst:9.2f}")
    print("post-audio forwards per chunk by output length:", " ".join(f"{b:>7}" for b in FORWARD_BUCKETS))
    for name, f in rows.items():
        print(f"  {name:45}", " ".join(f"{f['forwards'][b]:7.2f}" for b in FORWARD_BUCKETS))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="results/bench-stream")
    parser.add_argument("--model", default="embedded")
    parser.add_argument("--per-task", type=int, default=0, help="sessions per task type (0: the whole corpus)")
    parser.add_argument("--temperatures", default="0.0,1.0")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("overrides", nargs="*", help="run overrides, e.g. clock=wall")
    args = parser.parse_args(argv)
    names = args.variants.split(",")
    for needed in ("ar", "ar_prefill"):
        if needed not in names:
            names.insert(0, needed)
    for temperature in (float(t) for t in args.temperatures.split(",")):
        folders = [replay(name, temperature, args) for name in names]
        results = load_results(folders)
        cells = {c.decoder: c for c in results.cells}
        clock = results.cells[0].setup.clock
        print_figures(temperature, {name: figures(cells, name) for name in names if name in cells}, clock)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
