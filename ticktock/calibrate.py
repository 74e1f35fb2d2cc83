"""``python -m ticktock.calibrate model=<m>``: measure forward cost on this device, write a cost profile.

For every context length on the grid the cache is filled with that many tokens, then a forward of each
query length is timed (device-synchronised, median of ``repeats`` after ``warmup``) and rolled back.
The audio encoding of one 1 s chunk is timed the same way. The result is a YAML profile for
``clock=modeled`` (``clock.profile=<path>``), labelled with the device, model and date.

Example::

    python -m ticktock.calibrate model=embedded out=configs/profiles/cpu-embedded.yaml
"""

from __future__ import annotations

import statistics
import time
from datetime import date
from pathlib import Path

import hydra
import numpy as np
from omegaconf import DictConfig

from ticktock.adapters.base import AdapterState
from ticktock.clocks.modeled import CostProfile
from ticktock.resources import register_resolver, resource_path
from ticktock.runner import build, environment

register_resolver()


def timed(adapter, work, warmup: int, repeats: int) -> float:
    """Median wall milliseconds of ``work()``, rolling the adapter back after each call."""
    samples = []
    for i in range(warmup + repeats):
        state = adapter.snapshot()
        adapter.synchronize()
        start = time.perf_counter()
        work()
        adapter.synchronize()
        elapsed = (time.perf_counter() - start) * 1000.0
        adapter.restore(state)
        if i >= warmup:
            samples.append(elapsed)
    return statistics.median(samples)


def fill_cache(adapter, length: int, rng: np.random.Generator) -> None:
    while adapter.cache_length < length:
        n = min(256, length - adapter.cache_length)
        adapter.forward([rng.integers(0, adapter.vocab_size, n).tolist()], logits_from=n)


def measure(adapter, queries, contexts, warmup: int, repeats: int) -> tuple[list[list[float]], float]:
    """Forward milliseconds [query][context] and the audio encoding milliseconds of one chunk."""
    rng = np.random.default_rng(0)
    adapter.start_session(None, [])
    adapter.restore(AdapterState(0, adapter.snapshot().frontend_state))
    table = [[0.0] * len(contexts) for _ in queries]
    for j, context in enumerate(contexts):
        fill_cache(adapter, context, rng)
        for i, q in enumerate(queries):
            ids = rng.integers(0, adapter.vocab_size, q).tolist()
            table[i][j] = timed(adapter, lambda: adapter.forward([ids]), warmup, repeats)
    audio = rng.normal(0, 0.1, 16_000).astype(np.float32)
    encode = timed(adapter, lambda: adapter.encode_audio(audio), warmup, repeats)
    return table, encode


@hydra.main(version_base=None, config_path=str(resource_path("configs")), config_name="calibrate")
def main(cfg: DictConfig) -> None:
    adapter = build(cfg.model)
    queries, contexts = list(cfg.query_tokens), list(cfg.context_tokens)
    table, encode = measure(adapter, queries, contexts, cfg.warmup, cfg.repeats)
    env = environment(adapter)
    device = env["cuda_device"] or f"CPU: {env['cpu']} ({env['torch_threads']} threads)"
    profile = CostProfile(
        name=f"{cfg.model.name}-measured",
        query_tokens=queries,
        context_tokens=contexts,
        forward_table=table,
        encode_ms=encode,
        model=f"{cfg.model.name} ({adapter.describe().get('parameters', '?')} parameters, {adapter.describe().get('dtype', '?')})",
        device=device,
        provenance=f"MEASURED by `ticktock calibrate` on {date.today().isoformat()}, median of {cfg.repeats} "
        f"after {cfg.warmup} warm-up runs, torch {env['versions']['torch']}",
    )
    out = Path(cfg.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(profile.to_yaml())
    print(f"wrote {out}: 1-token forward {table[0][0]:.2f} ms at context {contexts[0]}, "
          f"{queries[-1]}-token forward {table[-1][0]:.2f} ms, audio encode {encode:.2f} ms ({device})")


if __name__ == "__main__":
    main()
