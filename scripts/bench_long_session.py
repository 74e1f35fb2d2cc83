"""A 10-minute session on the embedded model: context stays bounded, time per chunk does not grow.

The session is real corpus audio: mini-corpus sessions (no tools) laid end to end into one recording
with all their user turns, about ``--minutes`` long. It is replayed with AR twice, side by side in one
process: with the model's context policy (old whole units evicted, the system prompt kept) and with the
policy lifted (``context_limit`` far above the session, as before the policy existed). Printed per
variant: the largest context, the evictions, and the median measured post-audio wall time per chunk in
the first and in the last minute (wall clock of this machine; the modeled clock charges from the
shipped A100 profile and is printed too).

Run: python scripts/bench_long_session.py [--minutes 10] [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np
import soundfile
import torch

from ticktock.sessions.audio import SAMPLE_RATE, load_audio
from ticktock.clocks.modeled import CostProfile, ModeledClock
from ticktock.decoders.ar import ARDecoder
from ticktock.embedded.model import load_embedded_adapter
from ticktock.replay.engine import ReplayEngine
from ticktock.sessions.manifest import Session, load_manifest
from ticktock.shipped import resource_path

TASKS = ["llama_questions", "web_questions", "trivia_qa", "alpaca_eval", "big_bench_audio"]


def long_session(folder: Path, minutes: float) -> Session:
    """Corpus sessions without tools, end to end, until ``minutes`` of audio."""
    manifest = resource_path("manifests/ticktock-mini/manifest.jsonl")
    pieces, turns, offset = [], [], 0.0
    sources = [s for s in load_manifest(manifest, tasks=TASKS) if not s.tools]
    while offset < 60 * minutes:
        for source in sources:
            audio = load_audio(source.audio_path)[: int(source.duration_s * SAMPLE_RATE)]
            pieces.append(audio)
            turns += [replace(t, start_s=t.start_s + offset, end_s=t.end_s + offset, words=()) for t in source.turns]
            offset += audio.shape[0] / SAMPLE_RATE
            if offset >= 60 * minutes:
                break
    path = folder / "long.flac"
    soundfile.write(path, np.concatenate(pieces), SAMPLE_RATE)
    return Session("long", "llama_questions", path, round(offset, 3), turns=tuple(turns))


def replay(adapter, session, audio):
    clock = ModeledClock(CostProfile.load(resource_path("configs/profiles/a100-8b-derived.yaml")))
    return ReplayEngine(adapter, ARDecoder(), clock).replay(session, audio)


def per_minute(chunks, value) -> list[float]:
    """The median of ``value`` over each minute's chunks."""
    minutes = [chunks[i : i + 60] for i in range(0, len(chunks) - 59, 60)]
    return [statistics.median(value(c) for c in minute) for minute in minutes]


def summary(trace) -> dict:
    chunks = trace.chunks
    return {
        "chunks": len(chunks),
        "max_context": max(c.counters.context_tokens for c in chunks),
        "evictions": sum(1 for c in chunks if c.counters.evicted_tokens),
        "wall": per_minute(chunks, lambda c: c.post_audio_wall_ms),
        "context": per_minute(chunks, lambda c: c.counters.context_tokens),
        "modeled": per_minute(chunks, lambda c: c.timing.latency_ms),
        "outputs": [c.output for c in chunks],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(1)
    variants = {"policy (evict old units)": load_embedded_adapter(),
                "no policy (limit lifted)": load_embedded_adapter(context_limit=1 << 16)}
    with tempfile.TemporaryDirectory() as tmp:
        session = long_session(Path(tmp), args.minutes)
        audio = load_audio(session.audio_path)
        runs = {name: [] for name in variants}
        for _ in range(args.repeats):  # interleaved, so both variants see the same machine load
            for name, adapter in variants.items():
                runs[name].append(summary(replay(adapter, session, audio)))
    print(f"embedded model (fp32, eager, CPU, 1 thread), AR, a {session.duration_s / 60:.1f}-minute session of "
          f"real corpus audio, {args.repeats} interleaved runs; wall = this machine, modeled = a100-8b-derived profile")
    for name, results in runs.items():
        r = results[0]
        wall = [statistics.median(x["wall"][m] for x in results) for m in range(len(r["wall"]))]
        print(f"  {name}: {r['chunks']} chunks, max context {r['max_context']} positions, {r['evictions']} evictions")
        print(f"    per minute, median context positions: {' '.join(f'{v:.0f}' for v in r['context'])}")
        print(f"    per minute, median post-audio wall ms/chunk (median of runs): {' '.join(f'{v:.1f}' for v in wall)}")
        print(f"    per minute, median modeled ms/chunk: {' '.join(f'{v:.1f}' for v in r['modeled'])}")
    same = [a == b for a, b in zip(*(results[0]["outputs"] for results in runs.values()))]
    print(f"  chunks with identical outputs in both variants: {sum(same)}/{len(same)} "
          f"(first difference at chunk {same.index(False) if False in same else '-'})")


if __name__ == "__main__":
    main()
