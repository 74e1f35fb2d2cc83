"""``python -m ticktock.calibrate model=<m>``: measure forward cost on this device, write a cost profile.

For every context length on the grid the cache is filled with that many tokens, then a forward of each
query length is timed (device-synchronised, median of ``repeats`` after ``warmup``) and rolled back.
The audio encoding of one 1 s chunk is timed the same way, and for a front-end causal below a chunk one
causal step of audio, giving ``encode_fixed_ms`` (what early prefill pays per piece). For every batch size B of ``batch_sizes``,
B replicas of the adapter (caches filled to the middle context of the grid) time one batched step of B
one-token forwards (``forward_many``), giving the profile's ``batch_factor``: measured / ``forward_ms(B,
B x context)``, 1.0 at B = 1 (see ``ticktock.clocks.modeled``). The result is a YAML profile for
``clock=modeled`` (``clock.profile=<path>``), labelled with the device, model and date.

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
"""

from __future__ import annotations

import os
import sys
import statistics
import time
from dataclasses import replace
from datetime import date
from pathlib import Path

import hydra
import numpy as np
from omegaconf import DictConfig

from ticktock.adapters.base import AdapterState
from ticktock.clocks.modeled import CostProfile
from ticktock.errors import ConfigError, RunFolderError
from ticktock.replay.resources import register_resolver, resource_path
from ticktock.replay.runner import build, environment
from ticktock.results.atomic import atomic_write

register_resolver()


def timed(adapter, work, warmup: int, repeats: int) -> float:
    """Median wall milliseconds of ``work()``, rolling the adapter (or each adapter of a list) back after each call."""
    adapters = list(adapter) if isinstance(adapter, (list, tuple)) else [adapter]
    samples = []
    for i in range(warmup + repeats):
        states = [a.snapshot() for a in adapters]
        adapters[0].synchronize()
        start = time.perf_counter()
        work()
        adapters[0].synchronize()
        elapsed = (time.perf_counter() - start) * 1000.0
        for a, state in zip(adapters, states):
            a.restore(state)
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


def measure_encode_fixed(adapter, encode_ms: float, warmup: int, repeats: int) -> float | None:
    """The part of an audio encoding that does not scale with its audio (``encode_fixed_ms``), from the time of
    encoding one causal step (e.g. 100 ms) against a whole chunk: fixed + (whole - fixed) f = step time; None for a
    front-end that encodes whole chunks only (``causal_granularity_ms`` None: early prefill never encodes pieces)."""
    step = adapter.causal_granularity_ms
    if not step or step >= 1000:
        return None
    fraction = step / 1000.0
    piece = np.random.default_rng(2).normal(0, 0.1, 16 * step).astype(np.float32)
    piece_ms = timed(adapter, lambda: adapter.encode_audio(piece), warmup, repeats)
    return min(encode_ms, max(0.0, (piece_ms - fraction * encode_ms) / (1.0 - fraction)))


def measure_batches(adapter, sizes, context: int, warmup: int, repeats: int) -> list[float]:
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
        costs.append(timed(group, lambda: adapter.forward_many(calls), warmup, repeats))
    return costs


def batch_factors(profile: CostProfile, sizes, context: int, costs) -> list[float]:
    """factor(B) = measured(B) / the profile's batch model for B one-token forwards at ``context``
    (``CostProfile.batch_forward_ms``: forward_ms(B, B x context), at least one forward's cost); 1.0 at B = 1."""
    return [1.0 if size == 1 else cost / max(profile.forward_ms(size, size * context), profile.forward_ms(1, context), 1e-6)
            for size, cost in zip(sizes, costs)]


@hydra.main(version_base=None, config_path=str(resource_path("configs")), config_name="calibrate")
def main(cfg: DictConfig) -> None:
    from ticktock.errors import user_errors

    with user_errors():  # a bad option: one line and its exit code, not Hydra's report
        calibrate(cfg)


def calibrate(cfg: DictConfig) -> None:
    """Measure the model (and a talker), write the profile (see the module docstring). Where it writes is checked
    first, before the model is built: ``out`` must not exist unless ``overwrite=true``; ``talker_into`` must be a
    valid profile."""
    check_destination(cfg)
    adapter = build(cfg.model)
    talker = measured_talker(cfg, adapter)
    if cfg.get("talker_into"):
        add_talker(Path(cfg.talker_into), *talker)
        return
    queries, contexts = list(cfg.query_tokens), list(cfg.context_tokens)
    sizes = list(cfg.get("batch_sizes") or [])
    if sizes:  # checked before measuring: increasing, from 1
        CostProfile("batch_sizes", [1], [0], [[1.0]], batch_sizes=sizes, batch_factor=[1.0] * len(sizes))
    table, encode = measure(adapter, queries, contexts, cfg.warmup, cfg.repeats)
    batch_context = contexts[len(contexts) // 2]
    batch_costs = measure_batches(adapter, sizes, batch_context, cfg.warmup, cfg.repeats) if sizes else []
    env = environment(adapter)
    device = env["cuda_device"] or f"CPU: {env['cpu']} ({env['torch_threads']} threads)"
    profile = CostProfile(
        name=f"{cfg.model.name}-measured",
        query_tokens=queries,
        context_tokens=contexts,
        forward_table=table,
        encode_ms=encode,
        model=f"{cfg.model.name} ({adapter.describe().get('parameters', '?')} parameters, {adapter.describe().get('dtype', '?')}"
        + (", random weights of the real shapes" if cfg.model.get("random_init") else "") + ")",
        device=device,
        provenance=f"MEASURED by `ticktock calibrate` on {date.today().isoformat()}, median of {cfg.repeats} "
        f"after {cfg.warmup} warm-up runs, torch {env['versions']['torch']}"
        + (f"; batch factors from {sizes[-1]} replicas at context {batch_context} (forward_many of one-token "
           "forwards)" if sizes else ""),
    )
    if sizes:
        profile = replace(profile, batch_sizes=sizes, batch_factor=batch_factors(profile, sizes, batch_context, batch_costs))
    profile = replace(profile, encode_fixed_ms=measure_encode_fixed(adapter, encode, cfg.warmup, cfg.repeats))
    if talker is not None:
        profile = replace(profile, talkers={talker[0]: talker[1]})
    out = Path(cfg.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with atomic_write(out) as tmp:
        tmp.write_text(profile.to_yaml(), encoding="utf-8")
    print(f"wrote {out}: 1-token forward {table[0][0]:.2f} ms at context {contexts[0]}, "
          f"{queries[-1]}-token forward {table[-1][0]:.2f} ms, audio encode {encode:.2f} ms ({device})")
    if talker is not None:
        print(talker_line(*talker))
    if sizes:
        print("batch steps at context {}: {}".format(batch_context, ", ".join(
            f"B={b}: {ms:.2f} ms (factor {f:.3f})" for b, ms, f in zip(sizes, batch_costs, profile.batch_factor))))


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


def add_talker(path: Path, name: str, cost) -> None:
    """Write ``cost`` as talker ``name``'s entry of the profile at ``path``: only its ``talkers:`` block is rewritten
    (``with_talker``), every other line (fields, comments, the exact numbers) stays as it was; the file is checked to
    load as the same profile with the new entry, then replaced atomically."""
    before = CostProfile.load(path)
    text = with_talker(path.read_text(encoding="utf-8"), name, cost.to_json())
    with atomic_write(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
        after = CostProfile.load(tmp)
        expected = replace(before, name=after.name, talkers={**(before.talkers or {}), name: after.talker_cost(name)})
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


if __name__ == "__main__":
    from ticktock.errors import user_errors
    from ticktock.plugins import register_selected

    with user_errors():  # plug-ins selected by name (ticktock.plugins) are registered before Hydra composes
        register_selected(sys.argv[1:])
    main()
