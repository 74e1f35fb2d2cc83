"""Harness overhead per chunk: the replay engine driving a constant-cost fake adapter.

The fake adapter does no model work: ``forward`` returns a fixed logits row that steers the output
(every 4th chunk a speak unit of K text tokens, otherwise listen). Everything else is the real engine,
AR decoder, token selector, clock and result-row building. The figure is the wall time per chunk spent
outside forwards and audio encoding, i.e. what the harness adds to a real model's time.

Run: python scripts/bench_engine.py [--sessions 20] [--chunks 30] [--repeats 5]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np
import torch

from ticktock.adapters.base import AdapterState, ModelAdapter, UnitProtocol
from ticktock.clocks.modeled import CostProfile, ModeledClock
from ticktock.decoders.ar import ARDecoder
from ticktock.replay.engine import ReplayEngine
from ticktock.sessions.manifest import Session, Turn
from ticktock.results.rows import chunk_rows, forward_rows, session_row

VOCAB = 32
PROTOCOL = UnitProtocol(unit_open=0, unit_close=1, listen=2, speak=3, chunk_eos=4, turn_eos=5, max_text_tokens=8)


class ConstantCostAdapter(ModelAdapter):
    """Answers instantly; speaks 8 tokens in every 4th chunk, listens otherwise."""

    name = "constant"
    protocol = PROTOCOL
    vocab_size = VOCAB

    def __init__(self):
        self.length = 0
        self.chunks = 0
        self.in_unit = 0
        self.rows = {t: self._row(t) for t in range(VOCAB)}

    @staticmethod
    def _row(token: int) -> torch.Tensor:
        row = torch.zeros(VOCAB)
        row[token] = 10.0
        return row

    def start_session(self, system_prompt, tools):
        self.length, self.chunks = 0, 0
        return []

    def encode_audio(self, samples):
        self.chunks += 1
        return np.zeros(10)

    def peek_audio(self, samples):
        return np.zeros(10)

    def silence_audio(self, num_samples):
        return np.zeros(10)

    def forward(self, segments, tree=None, logits_from=0):
        n = sum(len(s) for s in segments)
        self.length += n
        last = segments[-1]
        if not isinstance(last, list):  # a prefill ends with audio: decide
            self.in_unit = 0
            return self.rows[3 if self.chunks % 4 == 0 else 2][None].expand(n - logits_from, VOCAB)
        self.in_unit += 1
        nxt = 4 if self.in_unit > 8 else 10 + self.in_unit
        return self.rows[nxt][None].expand(n - logits_from, VOCAB)

    @property
    def cache_length(self):
        return self.length

    def snapshot(self):
        return AdapterState(self.length)

    def restore(self, state):
        self.length = state.cache_length

    def keep(self, start, indices):
        self.length = start + len(indices)

    def encode_text(self, text):
        return []

    def decode_tokens(self, ids):
        return " ".join(map(str, ids))


def bench(sessions: int, chunks: int) -> tuple[float, int]:
    adapter = ConstantCostAdapter()
    engine = ReplayEngine(adapter, ARDecoder(), ModeledClock(CostProfile.constant(20.0)))
    audio = np.zeros(chunks * 16_000, dtype=np.float32)
    total_chunks = 0
    start = time.perf_counter()
    for i in range(sessions):
        session = Session(f"s{i}", "bench", Path("none"), float(chunks), turns=(Turn("user", "request", "x", 0.5, 2.0),))
        trace = engine.replay(session, audio)
        labels = {"run_id": "bench", "model": "constant", "decoder": "ar", "clock": "modeled"}
        rows = chunk_rows(trace, labels, adapter)
        session_row(trace, labels, rows, adapter)
        forward_rows(trace, "bench")
        total_chunks += len(trace.chunks)
    return (time.perf_counter() - start) * 1000.0 / total_chunks, total_chunks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--chunks", type=int, default=30)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(1)
    bench(2, 5)  # warm-up
    per_chunk = [bench(args.sessions, args.chunks)[0] for _ in range(args.repeats)]
    print(f"harness overhead per chunk (AR, 1 in 4 chunks speaks 8 tokens, result rows included), wall clock, "
          f"{args.sessions} sessions x {args.chunks} chunks, {args.repeats} runs:")
    print(f"  median {statistics.median(per_chunk):.3f} ms/chunk  (runs: {', '.join(f'{v:.3f}' for v in per_chunk)})")


if __name__ == "__main__":
    main()
