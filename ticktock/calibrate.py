"""``python -m ticktock.calibrate model=<m>``: measure forward cost on this device, write a cost profile.

For every context length on the grid the cache is filled with that many tokens, then a forward of each
query length is timed (device-synchronised, median of ``repeats`` after ``warmup``) and rolled back.
The audio encoding of one 1 s chunk is timed the same way, and for a front-end causal below a chunk one
causal step of audio, giving ``encode_fixed_ms`` (what early prefill pays per piece). For every batch size B of ``batch_sizes``,
B replicas of the adapter (caches filled to the middle context of the grid) time one batched step of B
one-token forwards (``forward_many``), giving the profile's ``batch_factor``: measured / ``forward_ms(B,
B x context)``, 1.0 at B = 1 (see ``ticktock.clocks.modeled``). For every batch size B of ``encode_batch_sizes``,
B replicas each given a 1 s chunk of its own audio time one batched encoding step (``encode_many``), giving the
profile's ``encode_batch_factor``: measured(B) / measured(1) (``encode_batch_factors``). The result is a YAML profile
for ``clock=modeled`` (``clock.profile=<path>``), labelled with the device, model and date, whose ``sources`` block
names, for every number it measured, the command as typed and what was timed (``measured_sources``).

Example::

    python -m ticktock.calibrate model=embedded out=configs/profiles/cpu-embedded.yaml
    python -m ticktock.calibrate model=minicpmo45 model.random_init=true out=my-gpu.yaml   # 8B shapes, no download

With ``talker=espeak`` (or ``piper``) the talker's cost is measured too (``ticktock.talkers.calibration``) and written
under the profile's ``talkers:``; ``talker_into=<profile>`` instead adds that entry to an existing profile (the model is
still built, so the process is as large as a replay's, but not measured)::

    python -m ticktock.calibrate model=embedded talker=espeak talker_into=ticktock/configs/profiles/a100-8b-derived.yaml

``out`` is never replaced silently: an existing file is refused before anything is built or measured (exit 4)
unless ``overwrite=true``. ``talker_into`` is an edit the user asks for: the profile is checked first, and only its
``talkers:`` block is rewritten (the other lines, comments and numbers stay as they were); both files are written
atomically.

A real model's cost does not depend on its weights, so ``model.random_init=true`` (the MiniCPM-o family)
measures the full-size shapes with random weights: no download is needed to make a profile of a device.

``--gpu`` is that measurement of a GPU, as a preset (``scripts/calibrate_gpu.sh`` calls it)::

    python -m ticktock.calibrate --gpu                    # MiniCPM-o 4.5's shapes, random weights, bf16, sdpa, cuda
    python -m ticktock.calibrate --gpu model=gander out=my-gpu.yaml overwrite=true

Before anything else it checks that this process sees a CUDA device (one line, exit 2, if not: ``check_gpu``).
The preset (``GPU_PRESET``; any of it can be overridden) is ``device=cuda``, ``model.random_init=true``,
``model.dtype=bfloat16``, ``model.attn_implementation=sdpa`` (the ``model.*`` keys only where the model has them),
``warmup=3 repeats=9``, the grid of ``configs/calibrate.yaml``. The profile is named from the full device name and
the model (``profile_name``): ``configs/profiles/nvidia-h100-80gb-hbm3-minicpmo45.yaml`` unless ``out=`` says where.

Every profile records where it was measured (``measured_on``: device, NVIDIA driver, torch, CUDA and cuDNN versions,
date, the command; see ``ticktock.clocks.modeled``), and the command prints the run to start with it next.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import statistics
import time
import unicodedata
from dataclasses import dataclass, replace
from datetime import date
from pathlib import Path

import hydra
import numpy as np
from omegaconf import DictConfig, OmegaConf

from ticktock.adapters.base import AdapterState
from ticktock.clocks.modeled import MAX_BATCH_FACTOR, CostProfile
from ticktock.errors import ConfigError, RunFolderError, shown
from ticktock.replay.resources import register_resolver
from ticktock.shipped import resource_path
from ticktock.replay.config import build, check_device, device_settings
from ticktock.replay.machine import environment
from ticktock.results.atomic import atomic_write

register_resolver()


def timed(adapter, work, warmup: int, repeats: int, timer=time.perf_counter) -> float:
    """Median milliseconds of ``work()`` on ``timer`` (seconds; the wall clock unless a test gives a fixed one),
    rolling the adapter (or each adapter of a list) back after each call."""
    adapters = list(adapter) if isinstance(adapter, (list, tuple)) else [adapter]
    samples = []
    for i in range(warmup + repeats):
        states = [a.snapshot() for a in adapters]
        adapters[0].synchronize()
        start = timer()
        work()
        adapters[0].synchronize()
        elapsed = (timer() - start) * 1000.0
        for a, state in zip(adapters, states):
            a.restore(state)
        if i >= warmup:
            samples.append(elapsed)
    return statistics.median(samples)


def fill_cache(adapter, length: int, rng: np.random.Generator) -> None:
    while adapter.cache_length < length:
        n = min(256, length - adapter.cache_length)
        adapter.forward([rng.integers(0, adapter.vocab_size, n).tolist()], logits_from=n)


def measure(adapter, queries, contexts, warmup: int, repeats: int,
            timer=time.perf_counter) -> tuple[list[list[float]], float]:
    """Forward milliseconds [query][context] and the audio encoding milliseconds of one chunk."""
    rng = np.random.default_rng(0)
    adapter.start_session(None, [])
    adapter.restore(AdapterState(0, adapter.snapshot().frontend_state))
    table = [[0.0] * len(contexts) for _ in queries]
    for j, context in enumerate(contexts):
        fill_cache(adapter, context, rng)
        for i, q in enumerate(queries):
            ids = rng.integers(0, adapter.vocab_size, q).tolist()
            table[i][j] = timed(adapter, lambda: adapter.forward([ids]), warmup, repeats, timer)
    audio = rng.normal(0, 0.1, 16_000).astype(np.float32)
    encode = timed(adapter, lambda: adapter.encode_audio(audio), warmup, repeats, timer)
    return table, encode


def measure_encode_fixed(adapter, encode_ms: float, warmup: int, repeats: int,
                         timer=time.perf_counter) -> float | None:
    """The part of an audio encoding that does not scale with its audio (``encode_fixed_ms``), from the time of
    encoding one causal step (e.g. 100 ms) against a whole chunk: fixed + (whole - fixed) f = step time; None for a
    front-end that encodes whole chunks only (``causal_granularity_ms`` None: early prefill never encodes pieces)."""
    step = adapter.causal_granularity_ms
    if not step or step >= 1000:
        return None
    fraction = step / 1000.0
    piece = np.random.default_rng(2).normal(0, 0.1, 16 * step).astype(np.float32)
    piece_ms = timed(adapter, lambda: adapter.encode_audio(piece), warmup, repeats, timer)
    return min(encode_ms, max(0.0, (piece_ms - fraction * encode_ms) / (1.0 - fraction)))


def measure_batches(adapter, sizes, context: int, warmup: int, repeats: int, timer=time.perf_counter) -> list[float]:
    """Milliseconds of one batched step (``forward_many``) of B one-token forwards, for each B in ``sizes``:
    B replicas of ``adapter``, each with its cache filled to ``context`` tokens, rolled back after each step."""
    rng = np.random.default_rng(1)
    replicas = []
    for _ in range(max(sizes)):
        replica = adapter.replica()
        replica.start_session(None, [])
        replica.restore(AdapterState(0, replica.snapshot().frontend_state))
        fill_cache(replica, context, rng)
        replicas.append(replica)
    costs = []
    for size in sizes:
        group = replicas[:size]
        calls = [(r, [[int(t)]], None, 0) for r, t in zip(group, rng.integers(0, adapter.vocab_size, size))]
        costs.append(timed(group, lambda: adapter.forward_many(calls), warmup, repeats, timer))
    return costs


def measure_encode_batches(adapter, sizes, warmup: int, repeats: int, timer=time.perf_counter) -> list[float]:
    """Milliseconds of one batched audio encoding step (``encode_many``) of B sessions, for each B in ``sizes``:
    B replicas of ``adapter`` (started sessions), each given a 1 s chunk of its own audio (noise at a level of its
    own), timed as ``timed`` times a forward (device-synchronised, the median of ``repeats`` after ``warmup``, every
    replica's front-end rolled back after each step).

    Example (the embedded model on one CPU thread: its front-end batches, so 8 encodings cost less than 8 x one)::

        measure_encode_batches(adapter, [1, 2, 4, 8], warmup=1, repeats=3)   # e.g. [1.00, 1.30, 2.01, 3.52]
    """
    rng = np.random.default_rng(3)
    replicas, chunks = [], []
    for k in range(max(sizes)):
        replica = adapter.replica()
        replica.start_session(None, [])
        replicas.append(replica)
        chunks.append(rng.normal(0, 0.02 * (k + 1), 16_000).astype(np.float32))
    costs = []
    for size in sizes:
        calls = [(replica, chunk, False) for replica, chunk in zip(replicas[:size], chunks)]
        costs.append(timed(replicas[:size], lambda: adapter.encode_many(calls), warmup, repeats, timer))
    return costs


def encode_batch_factors(sizes, costs) -> tuple[list[float], list[str | None]]:
    """factor(B) = measured(B) / measured(1), and for each B a note where the measured factor was not written: one
    below 1 (below one encoding) or below a smaller batch's is measurement noise at this resolution, and the running
    maximum (at least 1) is written instead (a profile's factors are non-decreasing, from 1.0); one above
    ``MAX_BATCH_FACTOR`` was timed while other work slowed the machine (``busy_note``), and the limit is written.

    >>> encode_batch_factors([1, 2, 4, 8], [4.0, 4.4, 4.2, 6.0])
    ([1.0, 1.1, 1.1, 1.5], [None, None, "measured 1.050, below B=2's 1.100: noise at this resolution, the running maximum written", None])
    >>> encode_batch_factors([1, 2], [4.0, 3.9])[1]
    [None, 'measured 0.975, below one encoding: noise at this resolution, 1.0 written']
    >>> encode_batch_factors([1, 2, 4, 8], [1.0, 1.2, 1.5, 160.7])[0]
    [1.0, 1.2, 1.5, 100.0]
    """
    factors, notes, top, highest = [], [], 1.0, 0  # the running maximum, and the batch size it was measured at
    for i, cost in enumerate(costs):
        raw = 1.0 if i == 0 else cost / max(costs[0], 1e-9)
        if raw > MAX_BATCH_FACTOR:
            notes.append(busy_note(raw))
        elif raw >= top:
            notes.append(None)
        elif highest == 0:
            notes.append(f"measured {raw:.3f}, below one encoding: noise at this resolution, 1.0 written")
        else:
            notes.append(f"measured {raw:.3f}, below B={sizes[highest]}'s {top:.3f}: noise at this resolution, the "
                         "running maximum written")
        if raw >= top:
            top, highest = raw, i
        factors.append(round(min(top, MAX_BATCH_FACTOR), 6))
    return factors, notes


def busy_note(raw: float) -> str:
    """The note of a batch factor measured above ``MAX_BATCH_FACTOR`` (a batch of a few costing over 100 of its
    smallest is no model's cost: other work slowed that step), which is written at the limit instead.

    >>> busy_note(160.7)
    'measured 160.700, above 100, the largest factor a profile takes: the machine was too busy to time this batch, 100 written; rerun calibrate on an idle machine'
    """
    return (f"measured {raw:.3f}, above {MAX_BATCH_FACTOR:g}, the largest factor a profile takes: the machine was too "
            f"busy to time this batch, {MAX_BATCH_FACTOR:g} written; rerun calibrate on an idle machine")


def encode_batch_line(sizes, costs, factors, notes) -> str:
    """The printed line of the encoder batch measurement: each B's raw milliseconds and its written factor.

    >>> encode_batch_line([1, 2, 4], [4.1, 4.6, 4.5], [1.0, 1.122, 1.122], [None, None, "measured 1.098, ..."])
    'encode batches: B=1: 4.10 ms, B=2: 4.60 ms (factor 1.122), B=4: 4.50 ms (factor 1.122; measured 1.098, ...)'
    """
    parts = [f"B={b}: {ms:.2f} ms" + ("" if i == 0 else f" (factor {f:.3f}" + (f"; {note})" if note else ")"))
             for i, (b, ms, f, note) in enumerate(zip(sizes, costs, factors, notes))]
    return "encode batches: " + ", ".join(parts)


def batch_factors(profile: CostProfile, sizes, context: int, costs) -> tuple[list[float], list[str | None]]:
    """factor(B) = measured(B) / the profile's batch model for B one-token forwards at ``context``
    (``CostProfile.batch_forward_ms``: forward_ms(B, B x context), at least one forward's cost); 1.0 at B = 1; and
    for each B a note where the measured factor was not written: one above ``MAX_BATCH_FACTOR`` is written at the
    limit (``busy_note``).

    >>> p = CostProfile("p", [1, 8], [0, 64], [[2.0, 2.0], [4.0, 4.0]])
    >>> batch_factors(p, [1, 2, 8], 64, [2.0, 3.0, 500.0])
    ([1.0, 1.3125, 100.0], [None, None, 'measured 125.000, above 100, the largest factor a profile takes: the machine was too busy to time this batch, 100 written; rerun calibrate on an idle machine'])
    """
    raw = [1.0 if size == 1 else cost / max(profile.forward_ms(size, size * context), profile.forward_ms(1, context), 1e-6)
           for size, cost in zip(sizes, costs)]
    return [min(f, MAX_BATCH_FACTOR) for f in raw], [busy_note(f) if f > MAX_BATCH_FACTOR else None for f in raw]


@hydra.main(version_base=None, config_path=str(resource_path("configs")), config_name="calibrate")
def main(cfg: DictConfig) -> None:
    from ticktock.errors import user_errors

    with user_errors():  # a bad option: one line and its exit code, not Hydra's report
        calibrate(cfg)


def calibrate(cfg: DictConfig, timer=time.perf_counter) -> None:
    """Measure the model (and a talker), write the profile (see the module docstring). Where it writes is checked
    first, before the model is built: the device (``device`` and a ``model.device`` set apart from it, checked as a
    run checks them), ``batch_sizes`` and ``encode_batch_sizes`` (``batch_sizes_problem``), then ``out``: it must not
    exist unless ``overwrite=true``; ``talker_into`` must be a valid profile. ``timer`` (seconds) times every
    measurement: the wall clock, or a fixed one in a test."""
    for key, device in device_settings(cfg):
        check_device(device, key=key)
    sizes, encode_sizes = checked_sizes(cfg, "batch_sizes"), checked_sizes(cfg, "encode_batch_sizes")
    check_destination(cfg)
    adapter = build(cfg.model)
    talker = measured_talker(cfg, adapter)
    if cfg.get("talker_into"):
        add_talker(Path(cfg.talker_into), *talker, source=talker_source(cfg, typed_command()))
        return
    measured = measure_all(cfg, adapter, sizes, encode_sizes, timer)
    profile, batch_notes, encode_notes = measured_profile(cfg, measured, Measuring.of(adapter), talker, typed_command())
    out = Path(cfg.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with atomic_write(out) as tmp:
        tmp.write_text(profile.to_yaml(), encoding="utf-8")
    table, queries, contexts = measured.table, profile.query_tokens, profile.context_tokens
    print(f"wrote {out}: 1-token forward {table[0][0]:.2f} ms at context {contexts[0]}, "
          f"{queries[-1]}-token forward {table[-1][0]:.2f} ms, audio encode {measured.encode:.2f} ms ({profile.device})")
    if talker is not None:
        print(talker_line(*talker))
    if profile.batch_sizes:
        print(batch_line(measured.batch_context, profile.batch_sizes, measured.batch_costs, profile.batch_factor,
                         batch_notes))
    if profile.encode_batch_sizes:
        print(encode_batch_line(profile.encode_batch_sizes, measured.encode_costs, profile.encode_batch_factor,
                                encode_notes))
    print(next_steps(cfg, out))


@dataclass
class Measured:
    """What calibrate timed, in milliseconds: ``table`` [query][context] forwards, ``encode`` one 1 s chunk's
    encoding, ``encode_fixed`` its fixed part (None: whole chunks only), ``batch_costs`` one batched step per
    ``batch_sizes`` value at ``batch_context``, ``encode_costs`` one batched encoding per ``encode_batch_sizes``
    value; ``sizes`` and ``encode_sizes`` those sizes ([]: not measured)."""

    table: list[list[float]]
    encode: float
    encode_fixed: float | None
    batch_context: int
    sizes: list[int]
    batch_costs: list[float]
    encode_sizes: list[int]
    encode_costs: list[float]


def measure_all(cfg: DictConfig, adapter, sizes: list[int], encode_sizes: list[int], timer=time.perf_counter) -> Measured:
    """Every measurement of the profile, on ``timer`` (``timed``)."""
    queries, contexts, warmup, repeats = list(cfg.query_tokens), list(cfg.context_tokens), cfg.warmup, cfg.repeats
    table, encode = measure(adapter, queries, contexts, warmup, repeats, timer)
    batch_context = contexts[len(contexts) // 2]
    batch_costs = measure_batches(adapter, sizes, batch_context, warmup, repeats, timer) if sizes else []
    encode_costs = measure_encode_batches(adapter, encode_sizes, warmup, repeats, timer) if encode_sizes else []
    encode_fixed = measure_encode_fixed(adapter, encode, warmup, repeats, timer)
    return Measured(table, encode, encode_fixed, batch_context, list(sizes), batch_costs, list(encode_sizes),
                    encode_costs)


@dataclass
class Measuring:
    """What a profile says about the model and machine it was measured on: the adapter's ``describe()``, the run's
    ``environment``, and the front-end's causal step (ms, or None)."""

    described: dict
    env: dict
    step_ms: int | None

    @staticmethod
    def of(adapter) -> "Measuring":
        return Measuring(adapter.describe(), environment(adapter), adapter.causal_granularity_ms)


def measured_profile(cfg: DictConfig, measured: Measured, measuring: Measuring, talker, command: str):
    """The profile of ``measured`` (its factors from ``batch_factors`` and ``encode_batch_factors``: a factor that load
    pushed above the profile's limit is written at the limit, with a note), and the notes of both batch dimensions.

    Example (fixed measurements: a busy machine slowed the batch of 8 encodings to 160.7 x one)::

        >>> cfg = OmegaConf.create({"model": {"name": "m"}, "warmup": 1, "repeats": 2, "out": "p.yaml",
        ...                         "query_tokens": [1, 8], "context_tokens": [0, 64]})
        >>> measured = Measured([[2.0, 2.5], [3.0, 3.5]], 1.0, None, 64, [1, 2], [2.5, 3.0], [1, 8], [1.0, 160.7])
        >>> env = {"cuda_device": None, "cpu": "cpu", "torch_threads": 1, "versions": {"torch": "2"}}
        >>> profile, _, notes = measured_profile(cfg, measured, Measuring({}, env, None), None, "calibrate")
        >>> profile.encode_batch_factor, notes[1][:26]
        ([1.0, 100.0], 'measured 160.700, above 10')
    """
    sizes, encode_sizes, batch_context, env = measured.sizes, measured.encode_sizes, measured.batch_context, measuring.env
    encode_factors, encode_notes = encode_batch_factors(encode_sizes, measured.encode_costs)
    device = env["cuda_device"] or f"CPU: {env['cpu']} ({env['torch_threads']} threads)"
    described = measuring.described
    profile = CostProfile(
        name=Path(cfg.out).stem if cfg.get("gpu") else f"{cfg.model.name}-measured",
        query_tokens=list(cfg.query_tokens),
        context_tokens=list(cfg.context_tokens),
        forward_table=measured.table,
        encode_ms=measured.encode,
        model=f"{cfg.model.name} ({described.get('parameters', '?')} parameters, {described.get('dtype', '?')}"
        + (", random weights of the real shapes" if cfg.model.get("random_init") else "") + ")",
        device=device,
        provenance=f"MEASURED by `ticktock calibrate` on {date.today().isoformat()}, median of {cfg.repeats} "
        f"after {cfg.warmup} warm-up runs, torch {env['versions']['torch']}"
        + (f"; batch factors from {sizes[-1]} replicas at context {batch_context} (forward_many of one-token "
           "forwards)" if sizes else "")
        + (f"; encoder batch factors from {encode_sizes[-1]} replicas (encode_many of 1 s chunks)" if encode_sizes else ""),
    )
    batch_notes = []
    if sizes:
        factors, batch_notes = batch_factors(profile, sizes, batch_context, measured.batch_costs)
        profile = replace(profile, batch_sizes=sizes, batch_factor=factors)
    if encode_sizes:
        profile = replace(profile, encode_batch_sizes=encode_sizes, encode_batch_factor=encode_factors)
    profile = replace(profile, encode_fixed_ms=measured.encode_fixed, measured_on=measurement_record(env, command))
    if talker is not None:
        profile = replace(profile, talkers={talker[0]: talker[1]})
    profile = replace(profile, sources=measured_sources(
        cfg, command, profile, measuring.step_ms, batch_context,
        encode_batch_timing(encode_sizes, measured.encode_costs, encode_notes, timing_text(cfg)), batch_notes))
    return profile, batch_notes, encode_notes


def batch_line(context: int, sizes, costs, factors, notes) -> str:
    """The printed line of the forward batch measurement: each B's milliseconds and its written factor.

    >>> batch_line(64, [1, 2], [2.0, 3.1], [1.0, 1.2], [None, None])
    'batch steps at context 64: B=1: 2.00 ms (factor 1.000), B=2: 3.10 ms (factor 1.200)'
    """
    return "batch steps at context {}: {}".format(context, ", ".join(
        f"B={b}: {ms:.2f} ms (factor {f:.3f}" + (f"; {note})" if note else ")")
        for b, ms, f, note in zip(sizes, costs, factors, notes)))


MAX_BATCH = 256  # the largest batch calibrate measures (as many replicas as sessions a device may share)


def batch_sizes_problem(sizes) -> str | None:
    """What is wrong with a ``batch_sizes`` or ``encode_batch_sizes`` option (None: nothing): batch sizes are whole
    numbers from 1 to ``MAX_BATCH``, increasing, from 1 (every factor is relative to B = 1); [] skips the measurement.

    >>> batch_sizes_problem([1, 2, 4, 8]) is None, batch_sizes_problem([]) is None
    (True, True)
    >>> batch_sizes_problem([2, 4]), batch_sizes_problem([1, 4, 2]), batch_sizes_problem([1, 0])
    ('must start at 1, got 2', 'must be increasing: 2 follows 4', '[1]: must be a whole number from 1 to 256, got 0')
    >>> batch_sizes_problem(8)
    'must be a list of batch sizes increasing from 1, e.g. [1, 2, 4, 8] ([] to skip), got 8'
    """
    if not isinstance(sizes, (list, tuple)):
        return f"must be a list of batch sizes increasing from 1, e.g. [1, 2, 4, 8] ([] to skip), got {shown(sizes)}"
    for i, size in enumerate(sizes):
        if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= MAX_BATCH:
            return f"[{i}]: must be a whole number from 1 to {MAX_BATCH}, got {shown(size)}"
        if i and size <= sizes[i - 1]:
            return f"must be increasing: {size} follows {sizes[i - 1]}"
    if sizes and sizes[0] != 1:
        return f"must start at 1, got {sizes[0]}"
    return None


def checked_sizes(cfg: DictConfig, key: str) -> list[int]:
    """The batch sizes option ``key`` as a list (absent or null: [], nothing measured), else a ``ConfigError`` naming
    it (``batch_sizes_problem``), before anything is built."""
    value = cfg.get(key)
    sizes = [] if value is None else OmegaConf.to_object(value) if OmegaConf.is_config(value) else value
    problem = batch_sizes_problem(sizes)
    if problem:
        raise ConfigError(f"{key}{'' if problem.startswith('[') else ': '}{problem}")
    return list(sizes)


# ------------------------------------------------------------------ sources: where each measured number comes from

def measured_sources(cfg: DictConfig, command: str, profile: CostProfile, step_ms: int | None, batch_context: int,
                     encode_batches: str | None, batch_notes=()) -> dict:
    """The profile's ``sources`` block (``ticktock.clocks.sources``): for every field measured here, ``{"measured":
    "<the command as typed> (<what was timed>)"}``.

    >>> p = CostProfile("p", [1, 8], [0, 64], [[3.0, 3.1], [4.0, 4.2]], encode_ms=1.2)
    >>> cfg = OmegaConf.create({"warmup": 1, "repeats": 2})
    >>> measured_sources(cfg, "python -m ticktock.calibrate model=embedded", p, None, 64, None)["encode_ms"]
    {'measured': 'python -m ticktock.calibrate model=embedded (the encoding of one 1 s chunk of noise from a fresh front-end, median of 2 after 1 warm-up, each rolled back)'}
    """
    timing = timing_text(cfg)
    texts = {
        "forward_ms": f"forwards of {profile.query_tokens} query tokens at contexts {profile.context_tokens}, one "
                      f"timed at a time, device-synchronised: {timing}",
        "encode_ms": f"the encoding of one 1 s chunk of noise from a fresh front-end, {timing}",
        "encode_fixed_ms": f"the encoding of one {step_ms} ms causal step against a whole 1 s chunk's: fixed + "
                           f"(whole - fixed) x {step_ms / 1000 if step_ms else 0:g} = step, {timing}",
        "batch_factor": f"one forward_many step of B one-token forwards on B replicas at context {batch_context}, "
                        f"B = {', '.join(map(str, profile.batch_sizes or []))}, {timing}; factor = step / "
                        f"forward_ms(B, B x {batch_context})"
                        + "".join(f"; B={b}: {note}" for b, note in zip(profile.batch_sizes or [], batch_notes) if note),
        "encode_batch_factor": encode_batches,
    }
    present = {"forward_ms": True, "encode_ms": True, "encode_fixed_ms": profile.encode_fixed_ms is not None,
               "batch_factor": profile.batches, "encode_batch_factor": profile.encode_batches}
    sources = {field: {"measured": capped(f"{command} ({texts[field]})")} for field, measured in present.items()
               if measured}
    for name in profile.talkers or {}:
        sources[f"talkers.{name}"] = talker_source(cfg, command)
    return sources


def encode_batch_timing(sizes, costs, notes, timing: str) -> str | None:
    """What the encoder batch measurement timed, with its raw milliseconds and where a factor was raised to the
    running maximum (``encode_batch_factors``); None when it was skipped.

    >>> encode_batch_timing([1, 2, 4], [4.1, 4.6, 4.5], [None, None, "measured 1.098, below B=2's 1.122: noise"],
    ...                     "median of 9 after 3 warm-up")
    "one encode_many step of B replicas' 1 s chunks (each its own audio), B = 1, 2, 4: 4.10, 4.60, 4.50 ms, median of 9 after 3 warm-up; factor = B's / B=1's; B=4: measured 1.098, below B=2's 1.122: noise"
    """
    if not sizes:
        return None
    noted = "".join(f"; B={b}: {note}" for b, note in zip(sizes, notes) if note)
    return (f"one encode_many step of B replicas' 1 s chunks (each its own audio), B = {', '.join(map(str, sizes))}: "
            f"{', '.join(f'{ms:.2f}' for ms in costs)} ms, {timing}; factor = B's / B=1's{noted}")


def timing_text(cfg: DictConfig) -> str:
    """How each measured number was timed, for its source.

    >>> timing_text(OmegaConf.create({"warmup": 3, "repeats": 9}))
    'median of 9 after 3 warm-up, each rolled back'
    """
    return f"median of {cfg.repeats} after {cfg.warmup} warm-up, each rolled back"


def talker_source(cfg: DictConfig, command: str) -> dict:
    """The ``talkers.<name>`` source of a talker measured here (``ticktock.talkers.calibration``)."""
    from ticktock.talkers.calibration import PIECES

    return {"measured": capped(f"{command} (each of {len(PIECES)} pieces of text synthesized {cfg.warmup} times, then timed "
                        f"{cfg.get('talker_repeats', 5)} times; a least-squares line through the medians)")}


def capped(text: str) -> str:
    """A source's text within ``ticktock.clocks.sources.MAX_TEXT`` characters (a very long command is cut short
    rather than refused after the measurement).

    >>> len(capped("x" * 5000)), capped("python -m ticktock.calibrate")
    (2000, 'python -m ticktock.calibrate')
    """
    from ticktock.clocks.sources import MAX_TEXT

    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 3] + "..."


def check_destination(cfg: DictConfig) -> None:
    """Before anything is built or measured: ``talker_into`` needs a talker and a profile that loads (a
    ``ProfileError`` names its file and field, exit 2); else ``out`` must be writable (``check_out``)."""
    if cfg.get("talker_into"):
        talker_node = cfg.get("talker")
        if talker_node is None or talker_node.get("_target_") is None:
            raise ConfigError("talker_into: needs a talker to measure (talker=espeak or talker=piper)")
        CostProfile.load(cfg.talker_into)
    else:
        check_out(Path(cfg.out), bool(cfg.get("overwrite")))


class ProfileOutError(RunFolderError):
    """``out`` names a file calibrate must not write (it exists, and ``overwrite`` is not set; or it is a folder)."""


def check_out(out: Path, overwrite: bool) -> None:
    """``out`` may be written: a new file, or an existing file with ``overwrite``; else a ``ProfileOutError``
    (exit 4, as a run refuses a folder holding another run)."""
    if out.is_dir():
        raise ProfileOutError(f"out={out}: is a folder, not a profile file; choose another out=")
    if out.exists() and not overwrite:
        raise ProfileOutError(f"out={out}: already exists; choose another out=, or pass overwrite=true to replace it")


def measured_talker(cfg: DictConfig, adapter):
    """(name, ``TalkerCost``) of the selected talker measured here, or None for ``talker=none``."""
    from ticktock.talkers.calibration import measure_talker

    node = cfg.get("talker")
    if node is None or node.get("_target_") is None:
        return None
    env = environment(adapter)
    talker = build(node)
    device = f"CPU: {env['cpu']}, {os.cpu_count()} cores (the talker runs on the CPU)"
    return talker.name, measure_talker(talker, device, warmup=cfg.warmup, repeats=cfg.get("talker_repeats", 5))


def add_talker(path: Path, name: str, cost, source: dict | None = None) -> None:
    """Write ``cost`` as talker ``name``'s entry of the profile at ``path``: only its ``talkers:`` block is rewritten
    (``with_talker``), and where the profile has a ``sources:`` block, its ``talkers.<name>`` entry is set to
    ``source`` (``with_source``: that one line); every other line (fields, comments, the exact numbers) stays as it
    was. The file is checked to load as the same profile with the new entries, then replaced atomically."""
    before = CostProfile.load(path)
    text = with_talker(path.read_text(encoding="utf-8"), name, cost.to_json())
    sourced = with_source(text, f"talkers.{name}", source) if source is not None else text
    with atomic_write(path) as tmp:
        tmp.write_text(sourced, encoding="utf-8")
        after = CostProfile.load(tmp)
        expected = replace(before, name=after.name, talkers={**(before.talkers or {}), name: after.talker_cost(name)})
        if sourced != text:  # the profile has a sources: block
            expected = replace(expected, sources={**(before.sources or {}), f"talkers.{name}": source})
        if after != expected:  # a bug here, not the user's: the profile is left as it was
            raise RuntimeError(f"{path}: adding talker {name!r} would change the profile's other fields; not written")
    print(f"wrote {path}: {talker_line(name, cost)}")


def with_talker(text: str, name: str, entry: dict) -> str:
    """The profile's YAML text with ``talkers.<name>`` set to ``entry``: the ``talkers:`` block (its other entries as
    parsed) is written again in place, or appended when there is none; the rest of the text is unchanged."""
    import yaml

    root = yaml.compose(text, Loader=yaml.SafeLoader)
    found = [(key, value) for key, value in root.value if key.value == "talkers"]
    talkers = yaml.safe_load(text).get("talkers") or {}
    block = yaml.safe_dump({"talkers": {**talkers, name: entry}}, sort_keys=False, width=120, default_flow_style=None)
    if not found:
        return text + ("" if not text or text.endswith("\n") else "\n") + block
    key, value = found[0]
    rest = text[content_end(value):]
    return text[: key.start_mark.index] + block + (rest[1:] if rest.startswith("\n") else rest)


def with_source(text: str, field: str, entry: dict) -> str:
    """The profile's YAML text with ``sources.<field>`` set to ``entry``, one line: an existing entry of that field is
    replaced where it stands, a new one goes on the line after the block's last entry (at its indentation); a
    ``sources`` written as one flow mapping is written again as one. The rest of the text is unchanged; a text
    without a ``sources`` mapping is returned as it is.

    >>> text = "sources:\\n  forward_ms: {derived: model}   # why\\n  encode_ms: {assumed: x}\\nencode_ms: 3\\n"
    >>> with_source(text, "talkers.espeak", {"measured": "calibrate talker=espeak"}).splitlines()
    ['sources:', '  forward_ms: {derived: model}   # why', '  encode_ms: {assumed: x}',
     '  talkers.espeak: {measured: calibrate talker=espeak}', 'encode_ms: 3']
    >>> with_source(text, "forward_ms", {"measured": "calibrate"}).splitlines()[1]
    '  forward_ms: {measured: calibrate}   # why'
    >>> with_source("sources: {}\\nencode_ms: 3\\n", "encode_ms", {"measured": "calibrate"})
    'sources: {encode_ms: {measured: calibrate}}\\nencode_ms: 3\\n'
    """
    import yaml

    root = yaml.compose(text, Loader=yaml.SafeLoader)
    block = next((value for key, value in root.value if key.value == "sources"), None)
    if not isinstance(block, yaml.MappingNode):
        return text
    if block.flow_style or not block.value:
        sources = {**(yaml.safe_load(text).get("sources") or {}), field: entry}
        line = yaml.safe_dump(sources, default_flow_style=True, width=float("inf")).strip()
        return text[: block.start_mark.index] + line + text[block.end_mark.index:]
    line = yaml.safe_dump({field: entry}, default_flow_style=None, sort_keys=False, width=float("inf")).strip()
    for key, value in block.value:
        if key.value == field:
            return text[: key.start_mark.index] + line + text[content_end(value):]
    end = content_end(block.value[-1][1])
    line_end = text.find("\n", end)
    indent = " " * block.value[0][0].start_mark.column
    if line_end < 0:
        return text + "\n" + indent + line + "\n"
    return text[: line_end + 1] + indent + line + "\n" + text[line_end + 1:]


def content_end(node) -> int:
    """Where a YAML node's own text ends: for a block mapping or sequence, the end of its last item (PyYAML's end
    mark of a block runs on over the comment lines after it, up to the next key)."""
    import yaml

    items = node.value if isinstance(node, (yaml.MappingNode, yaml.SequenceNode)) and not node.flow_style else None
    if items:
        last = items[-1]
        return content_end(last[1] if isinstance(node, yaml.MappingNode) else last)
    return node.end_mark.index


def talker_line(name: str, cost) -> str:
    return (f"talker {name}: first packet {cost.first_packet_ms:.2f} ms + {cost.ms_per_audio_s:.2f} ms per second of "
            f"audio ({cost.device})")


# ------------------------------------------------------------------ where a profile was measured, what to run next

TYPED_ARGS: list[str] | None = None  # the arguments as typed (before --gpu is expanded), set by ``__main__``


def typed_command() -> str:
    """The calibration command as the user typed it, for the profile's ``measured_on.command``."""
    args = sys.argv[1:] if TYPED_ARGS is None else TYPED_ARGS
    return shlex.join(["python", "-m", "ticktock.calibrate", *args])


def measurement_record(env: dict, command: str) -> dict:
    """The profile's ``measured_on`` block (``ticktock.clocks.modeled.MEASURED_ON``) from the run's ``environment``:
    the GPU's full name (else the CPU's), the NVIDIA driver (``nvidia_driver``; None on a CPU), the torch, CUDA and
    cuDNN versions of this torch build (None where it has none), today's date and ``command``."""
    import torch

    cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    return {"device": env["cuda_device"] or env["cpu"], "driver": nvidia_driver() if env["cuda_device"] else None,
            "torch": str(torch.__version__), "cuda": torch.version.cuda, "cudnn": None if cudnn is None else str(cudnn),
            "date": date.today().isoformat(), "command": command}


def nvidia_driver() -> str | None:
    """The NVIDIA driver's version as ``nvidia-smi`` reports it, or None (no ``nvidia-smi``, or it fails)."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    try:
        done = subprocess.run([smi, "--query-gpu=driver_version", "--format=csv,noheader"], capture_output=True,
                              text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    lines = [line.strip() for line in done.stdout.splitlines() if line.strip()]
    return lines[0] if done.returncode == 0 and lines else None


def next_run_command(model: str, model_node, device, out) -> str:
    """The replay to start with a new profile: the same model (``model.path=<weights>`` for a real model, one with
    a ``random_init`` option, measured on random weights or with none given; its folder where one was given; nothing
    for a model with shipped weights, such as ``embedded``), the same device, the modeled clock charged by the profile
    at ``out``.

    >>> next_run_command("gander", {"path": None, "random_init": True}, "cuda",
    ...                  "configs/profiles/nvidia-h100-80gb-hbm3-gander.yaml")
    'python -m ticktock.run model=gander model.path=<weights> device=cuda clock=modeled clock.profile=configs/profiles/nvidia-h100-80gb-hbm3-gander.yaml'
    >>> next_run_command("fixture", {"name": "fixture"}, None, "my profile.yaml")
    "python -m ticktock.run model=fixture clock=modeled 'clock.profile=my profile.yaml'"
    >>> next_run_command("embedded", {"path": None}, None, "cpu.yaml")   # its shipped weights
    'python -m ticktock.run model=embedded clock=modeled clock.profile=cpu.yaml'
    """
    words = ["python", "-m", "ticktock.run", f"model={model}"]
    weights = model_node.get("path") if "path" in model_node else None
    if "random_init" in model_node and (model_node.get("random_init") or not weights):
        words.append("model.path=<weights>")  # a real model: measured on random weights, or its weights not named
    elif weights:
        words.append(f"model.path={weights}")  # (a model with shipped weights, e.g. embedded, needs none named)
    if device is not None:
        words.append(f"device={device}")
    command = shlex.join([*words, "clock=modeled", f"clock.profile={out}"])
    return command.replace("'model.path=<weights>'", "model.path=<weights>")


def next_steps(cfg: DictConfig, out: Path) -> str:
    """What to do with the profile just written: the run to start with it, and (a GPU's profile) to commit it."""
    lines = [f"next: {next_run_command(cfg.model.name, cfg.model, cfg.get('device'), out)}"]
    if cfg.get("gpu"):
        lines.append(f"then commit the profile (git add {shlex.quote(str(out))}), so that every run of this model on this "
                     "GPU can name it: a profile is the one file that ties a run's times to its device")
    return "\n".join(lines)


# ------------------------------------------------------------------ --gpu: the preset of a GPU's profile

GPU_PRESET = {  # the settings of a GPU's profile (any of them can be overridden); model.* only where the model has it
    "model": "minicpmo45", "device": "cuda", "model.random_init": "true", "model.dtype": "bfloat16",
    "model.attn_implementation": "sdpa", "query_tokens": "[1,2,4,8,16,32,64,96,128]",
    "context_tokens": "[0,512,1024,2048,4096]", "warmup": "3", "repeats": "9", "batch_sizes": "[1,2,4,8]",
    "gpu": "true",
}
PROFILES = "configs/profiles"  # where a GPU's profile is written (from the checkout: configs/ is the shipped folder)


class GpuError(ConfigError):
    """``--gpu`` in a process that sees no CUDA device, or with a device that is not a GPU (exit 2)."""


def gpu_flag(args: list[str]) -> tuple[bool, list[str]]:
    """Whether the arguments ask for ``--gpu`` (or ``gpu=true``), and the other arguments.

    >>> gpu_flag(["--gpu", "model=gander"]), gpu_flag(["model=gander"])
    ((True, ['model=gander']), (False, ['model=gander']))
    """
    rest = [arg for arg in args if arg not in ("--gpu", "gpu=true")]
    return len(rest) < len(args), rest


def override_key(arg: str) -> str:
    """The key a Hydra override sets (``++model.dtype=x`` -> ``model.dtype``); a flag is its own key.

    >>> override_key("++model.dtype=float16"), override_key("model=gander"), override_key("--cfg")
    ('model.dtype', 'model', '--cfg')
    """
    return arg.split("=", 1)[0].lstrip("+~") if "=" in arg else arg


def slug(text: str) -> str:
    """``text`` as a file-name word: ASCII lower case, every run of other characters one ``-``.

    >>> slug("NVIDIA A100-SXM4-40GB  MIG 3g.20gb"), slug("Gerät (Ünïcode)/x")
    ('nvidia-a100-sxm4-40gb-mig-3g-20gb', 'gerat-unicode-x')
    """
    ascii_text = unicodedata.normalize("NFKD", str(text)).encode("ascii", "ignore").decode("ascii")
    return re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")[:100].strip("-")


def profile_name(device_name: str, model: str) -> str:
    """The file name of a GPU's profile: the device's FULL name and the model, as file-name words.

    >>> profile_name("NVIDIA H100 80GB HBM3", "minicpmo45")
    'nvidia-h100-80gb-hbm3-minicpmo45.yaml'
    >>> profile_name("NVIDIA A100 80GB PCIe", "gander")
    'nvidia-a100-80gb-pcie-gander.yaml'
    >>> profile_name("NVIDIA GeForce RTX 4090", "minicpmo45")
    'nvidia-geforce-rtx-4090-minicpmo45.yaml'
    >>> profile_name(" Tesla V100-SXM2-32GB (MIG 1g.5gb) ", "my_model/v2"), profile_name("", "")
    ('tesla-v100-sxm2-32gb-mig-1g-5gb-my-model-v2.yaml', 'unknown-device-model.yaml')
    """
    return f"{slug(device_name) or 'unknown-device'}-{slug(model) or 'model'}.yaml"


def gpu_problem(device: str, visible: int, torch_version: str, cuda_version: str | None,
                visible_env: str | None) -> str | None:
    """What stops ``--gpu`` from measuring ``device`` (None: nothing), given the CUDA devices this process sees,
    the torch build (``torch.version.cuda`` None: a CPU build) and ``CUDA_VISIBLE_DEVICES`` (None: not set).

    >>> gpu_problem("cuda", 1, "2.13.0+cu128", "12.8", None) is None
    True
    >>> gpu_problem("cuda", 0, "2.13.0+cpu", None, None)
    'this process sees no CUDA device (CUDA_VISIBLE_DEVICES not set; torch 2.13.0+cpu is a CPU build: install a CUDA build of torch, see docs/gpu.md)'
    >>> gpu_problem("cuda", 0, "2.13.0+cu128", "12.8", "")
    "this process sees no CUDA device (CUDA_VISIBLE_DEVICES=''; torch 2.13.0+cu128 is a CUDA 12.8 build: check that nvidia-smi lists a GPU and that CUDA_VISIBLE_DEVICES names it)"
    >>> gpu_problem("cuda:2", 2, "2.13.0+cu128", "12.8", "0,1")
    "device=cuda:2 asked for, but this process sees 2 CUDA device(s) (cuda:0 .. cuda:1; CUDA_VISIBLE_DEVICES='0,1')"
    >>> gpu_problem("cpu", 1, "2.13.0+cu128", "12.8", None)
    'measures a CUDA device, and device=cpu is not one (leave device= out, or give cuda or cuda:K)'
    """
    kind, _, index = str(device).partition(":")
    if kind != "cuda" or (index and not index.isdigit()):
        return f"measures a CUDA device, and device={device} is not one (leave device= out, or give cuda or cuda:K)"
    seen = "CUDA_VISIBLE_DEVICES not set" if visible_env is None else f"CUDA_VISIBLE_DEVICES={visible_env!r}"
    if visible == 0:
        build = (f"torch {torch_version} is a CPU build: install a CUDA build of torch, see docs/gpu.md"
                 if cuda_version is None else f"torch {torch_version} is a CUDA {cuda_version} build: check that "
                 "nvidia-smi lists a GPU and that CUDA_VISIBLE_DEVICES names it")
        return f"this process sees no CUDA device ({seen}; {build})"
    if index and int(index) >= visible:
        return (f"device={device} asked for, but this process sees {visible} CUDA device(s) (cuda:0 .. cuda:{visible - 1}; "
                f"{seen})")
    return None


def check_gpu(device: str) -> str:
    """The full name of the GPU ``device`` names, else a ``GpuError`` saying what is missing (``gpu_problem``)."""
    import torch

    visible = torch.cuda.device_count() if torch.cuda.is_available() else 0
    problem = gpu_problem(device, visible, torch.__version__, torch.version.cuda, os.environ.get("CUDA_VISIBLE_DEVICES"))
    if problem:
        raise GpuError(f"--gpu: {problem}")
    return torch.cuda.get_device_name(torch.device(device))


def gpu_overrides(args: list[str], model_keys, device_name: str) -> list[str]:
    """The Hydra overrides of ``--gpu``: ``GPU_PRESET`` where the arguments do not set the key (a ``model.*`` key
    only where the model's config has it), ``out`` named by ``profile_name`` unless given, then the arguments.

    >>> gpu_overrides(["model=gander", "repeats=3"], {"path", "random_init"}, "NVIDIA H100 80GB HBM3")
    ['device=cuda', 'model.random_init=true', 'query_tokens=[1,2,4,8,16,32,64,96,128]',
     'context_tokens=[0,512,1024,2048,4096]', 'warmup=3', 'batch_sizes=[1,2,4,8]', 'gpu=true',
     'out=configs/profiles/nvidia-h100-80gb-hbm3-gander.yaml', 'model=gander', 'repeats=3']
    """
    given = {override_key(arg) for arg in args}
    model = next((arg.split("=", 1)[1] for arg in reversed(args) if override_key(arg) == "model"), GPU_PRESET["model"])
    preset = [f"{key}={value}" for key, value in GPU_PRESET.items()
              if key not in given and (not key.startswith("model.") or key.split(".", 1)[1] in model_keys)]
    if "out" not in given:
        preset.append(f"out={PROFILES}/{profile_name(device_name, model)}")
    return preset + list(args)


def gpu_arguments(args: list[str]) -> list[str]:
    """``--gpu``'s overrides for ``args``: the GPU is checked first (``check_gpu``: one line if there is none), then
    the preset is filled in for the chosen model (``gpu_overrides``)."""
    device = next((arg.split("=", 1)[1] for arg in reversed(args) if override_key(arg) == "device"), "cuda")
    device_name = check_gpu(device)
    model = next((arg.split("=", 1)[1] for arg in reversed(args) if override_key(arg) == "model"), GPU_PRESET["model"])
    return gpu_overrides(args, model_config_keys(model), device_name)


def model_config_keys(model: str) -> set[str]:
    """The keys of the shipped config of ``model`` (``configs/model/<model>.yaml``); empty for a plug-in's model."""
    import yaml

    path = resource_path("configs") / "model" / f"{model}.yaml"
    if not re.fullmatch(r"[\w.-]+", model) or not path.is_file():
        return set()
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    return set(data) if isinstance(data, dict) else set()


if __name__ == "__main__":
    from ticktock.errors import user_errors
    from ticktock.plugins import register_selected

    with user_errors():  # plug-ins selected by name (ticktock.plugins) are registered before Hydra composes
        TYPED_ARGS = sys.argv[1:]
        gpu, arguments = gpu_flag(TYPED_ARGS)
        if gpu:  # the GPU is checked before anything else: no GPU, one line, nothing composed or written
            arguments = gpu_arguments(arguments)
        register_selected(arguments)
        sys.argv = [sys.argv[0], *arguments]
    main()
