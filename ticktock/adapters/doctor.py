"""``python -m ticktock.adapters.doctor`` (``ticktock doctor``): what this machine has, and which runs it can start.

One screen, on any machine (a CPU too): the device (the CUDA devices this process sees with their total and free
memory, ``CUDA_VISIBLE_DEVICES``, the torch build and whether it has CUDA); for each real model
(``configs/model/{minicpmo45,gander,realtime_venus,lws,streaming_slm}.yaml``) whether its weights are on this
machine, found as a run finds them (``ticktock.adapters.checkpoint``: ``model.path``, the Hugging Face cache,
offline) or in ``TICKTOCK_WEIGHTS_<MODEL>`` (the variable ``tests/adapters/test_real_weights.py`` reads), Gander's
base included, and the command that fetches what is missing; whether a run of it is possible here (its weights,
and a GPU with the memory it needs in bfloat16) and the one command that starts it; the embedded model's command
(it always runs); the cost profiles shipped in ``configs/profiles/`` and which match this device. ``--json``
prints the same as JSON. It is a report: the exit code is 0 whatever it finds (2 for an option that does not
exist). torch is imported only when the report is made.

Example::

    $ python -m ticktock.adapters.doctor
    ticktock doctor: this machine and what it can run (the GPU path: docs/gpu.md)
    device
      torch 2.13.0+cpu: a CPU-only build; the GPU path needs a CUDA build of torch (docs/gpu.md)
      no CUDA device (CUDA_VISIBLE_DEVICES not set)
    real models (bfloat16 on a GPU; weights from TICKTOCK_WEIGHTS_<MODEL>, model.path or the Hugging Face cache)
      gander          weights not found; fetch: hf download Gander-Omni/Gander && hf download openbmb/MiniCPM-o-4_5
                      needs ~24 GiB of GPU memory; not possible here: no weights, no CUDA device
      ...
    $ python -m ticktock.adapters.doctor --json | python -c "import json, sys; print(json.load(sys.stdin)['device']['gpus'])"
    []
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

from ticktock.adapters.checkpoint import (MINIATURE_KEY, MissingWeightsError, resolve_base, resolve_checkpoint,
                                          weights_origin)
from ticktock.errors import ConfigError, user_errors
from ticktock.shipped import resource_path

REAL_MODELS = ("minicpmo45", "gander", "realtime_venus", "lws", "streaming_slm")
GPU_PAGE = "docs/gpu.md"
CACHE = "the Hugging Face cache"


@dataclass(frozen=True)
class ModelSize:
    """What a real model puts on the GPU: the parameters a replay loads (billions), its KV cache per token (KiB, in
    bfloat16) and its longest context (tokens); ``source`` says where the figures come from."""

    parameters_b: float
    kv_kib_per_token: float
    context_tokens: int
    source: str


WORKING_GIB = 2.0  # the CUDA context, activations, draft trees and cache snapshots: an allowance, not a measurement

MINICPMO_SIZE = ModelSize(
    8.5, 144.0, 40960,
    "the parts a replay loads: Qwen3-8B (8.2B parameters, its model card) from llm.* and the Whisper-medium encoder "
    "(0.3B) from apm.*; KV cache 36 layers x 8 KV heads x 128 dims x 2 (K, V) x 2 bytes; context 40960 "
    "(config.json max_position_embeddings)")
QWEN_OMNI_SIZE = ModelSize(
    8.9, 56.0, 32768,
    "the Qwen2.5-Omni-7B Thinker: Qwen2.5-7B (7.6B parameters, its model card), the audio encoder (0.6B) and the "
    "vision tower (0.7B, loaded, then dropped); KV cache 28 layers x 4 KV heads x 128 dims x 2 x 2 bytes; context "
    "32768")
SIZES = {"minicpmo45": MINICPMO_SIZE, "gander": MINICPMO_SIZE, "realtime_venus": MINICPMO_SIZE,
         "lws": MINICPMO_SIZE, "streaming_slm": QWEN_OMNI_SIZE}

#: model -> (the command that fetches its weights, or None: none is public; what to do after it)
FETCH = {
    "minicpmo45": ("hf download openbmb/MiniCPM-o-4_5", ""),
    "gander": ("hf download Gander-Omni/Gander && hf download openbmb/MiniCPM-o-4_5",
               "the Thinker delta, then its base"),
    "realtime_venus": ("hf download inclusionAI/Realtime-Venus --local-dir ckpt/realtime-venus",
                       "then TICKTOCK_WEIGHTS_REALTIME_VENUS=ckpt/realtime-venus/Realtime-Venus-Audio"),
    "lws": (None, "no public weights: set TICKTOCK_WEIGHTS_LWS=<the release folder>"),
    "streaming_slm": ("hf download Qwen/Qwen2.5-Omni-7B",
                      "the base release, a smoke test: the paper's fine-tune is not public"),
}


class DoctorOptionError(ConfigError):
    """An option ``ticktock doctor`` does not have (exit code 2)."""


# ------------------------------------------------------------------------------ the device


def weights_variable(model: str) -> str:
    """The environment variable that names a model's checkpoint folder (as in tests/adapters/test_real_weights.py).

    >>> weights_variable("realtime_venus")
    'TICKTOCK_WEIGHTS_REALTIME_VENUS'
    """
    return f"TICKTOCK_WEIGHTS_{model.upper()}"


def device_report(environ=os.environ) -> dict:
    """The torch build and the CUDA devices this process sees (name, total and free memory in GiB); imports torch."""
    visible = environ.get("CUDA_VISIBLE_DEVICES")
    try:
        import torch
    except ImportError as err:
        return {"torch": None, "torch_cuda": None, "cuda_visible_devices": visible, "gpus": [],
                "notes": [f"torch cannot be imported ({err}): install the package first (README)"]}
    report = {"torch": torch.__version__, "torch_cuda": torch.version.cuda, "cuda_visible_devices": visible,
              "gpus": [], "notes": []}
    try:
        report["gpus"] = visible_gpus(torch)
    except RuntimeError as err:  # a driver that does not answer: reported, the rest of the report goes on
        report["notes"].append(f"CUDA error: {str(err).strip().splitlines()[0] if str(err).strip() else err}")
    report["notes"] += build_notes(report["torch_cuda"], report["gpus"])
    return report


def visible_gpus(torch) -> list[dict]:
    """Every CUDA device this process sees, with ``torch.cuda.mem_get_info`` (free, total) in GiB."""
    if not torch.cuda.is_available():
        return []
    gpus = []
    for index in range(torch.cuda.device_count()):
        free, total = torch.cuda.mem_get_info(index)
        gpus.append({"index": index, "name": torch.cuda.get_device_name(index),
                     "total_gib": round(total / 2**30, 1), "free_gib": round(free / 2**30, 1)})
    return gpus


def build_notes(torch_cuda: str | None, gpus: list[dict]) -> list[str]:
    """What the torch build and the devices mean for the GPU path.

    >>> build_notes(None, [])
    ['a CPU-only build of torch: the GPU path needs a CUDA build of torch (docs/gpu.md)']
    >>> build_notes("12.8", [])
    ['a CUDA 12.8 build of torch, but no CUDA device is visible: check the driver (nvidia-smi) and CUDA_VISIBLE_DEVICES']
    >>> build_notes("12.8", [{"index": 0}])
    []
    """
    if torch_cuda is None:
        return [f"a CPU-only build of torch: the GPU path needs a CUDA build of torch ({GPU_PAGE})"]
    if not gpus:
        return [f"a CUDA {torch_cuda} build of torch, but no CUDA device is visible: check the driver (nvidia-smi) "
                "and CUDA_VISIBLE_DEVICES"]
    return []


# ------------------------------------------------------------------------------ the real models' weights


def model_config(model: str) -> dict:
    """The keys of a shipped model config that say where its weights are (``path``, ``repo_id``, ``base_path``,
    ``base_repo_id``), unresolved.

    >>> model_config("gander")["base_repo_id"]
    'openbmb/MiniCPM-o-4_5'
    """
    from omegaconf import OmegaConf

    node = OmegaConf.load(resource_path(f"configs/model/{model}.yaml"))
    return {key: node.get(key) for key in ("path", "repo_id", "base_path", "base_repo_id")}


def find_weights(model: str, config: dict, environ=os.environ) -> dict:
    """Where ``model``'s weights are on this machine, looked up as a run looks them up
    (``checkpoint.resolve_checkpoint``, ``checkpoint.resolve_base``: never a download), ``TICKTOCK_WEIGHTS_<MODEL>``
    first. Gander's base may also be ``TICKTOCK_WEIGHTS_MINICPMO45``.

    >>> find_weights("lws", {"path": None, "repo_id": None}, environ={})["found"]
    False
    """
    variable = weights_variable(model)
    path = environ.get(variable) or config.get("path")
    source = variable if environ.get(variable) else ("model.path" if path else CACHE)
    try:
        folder = resolve_checkpoint(path, config.get("repo_id"), model, key=source if path else "model.path",
                                    base_repo_id=config.get("base_repo_id"))
    except MissingWeightsError as err:  # source: where the folder that is not there was named (None: nowhere)
        return {"found": False, "folder": None, "source": source if path else None, "problem": str(err), "base": None}
    found = checkpoint_found(folder, source)
    if config.get("base_repo_id") and found["found"]:
        found["base"] = find_base(model, folder, config, environ)
        found["found"] = found["base"]["found"]
    return found


def checkpoint_found(folder: Path, source: str) -> dict:
    """A folder found for a checkpoint: it holds one (a config.json), and whether that is a miniature (random
    weights: ``checkpoint.weights_origin``) with its parameter count."""
    found = {"found": True, "folder": str(Path(folder).resolve()), "source": source, "problem": None, "base": None}
    config_file = Path(folder) / "config.json"
    try:
        config = json.loads(config_file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        problem = "missing" if isinstance(err, FileNotFoundError) else f"unreadable ({type(err).__name__})"
        return {**found, "found": False, "problem": f"{config_file}: {problem}: not a checkpoint folder"}
    origin = weights_origin(config if isinstance(config, dict) else {})
    marker = config.get(MINIATURE_KEY) if isinstance(config, dict) else None
    parameters = marker.get("parameters") if isinstance(marker, dict) else None
    return {**found, **origin, "parameters": parameters if isinstance(parameters, int) else None}


def find_base(model: str, folder: Path, config: dict, environ) -> dict:
    """A delta's base (``model.base_path``, ``<folder>/base``, the cache, or ``TICKTOCK_WEIGHTS_MINICPMO45``)."""
    from_variable = environ.get(weights_variable("minicpmo45"))
    base_path = config.get("base_path")
    try:
        base = resolve_base(folder, base_path, config["base_repo_id"], model)
        source = "model.base_path" if base_path else ("<folder>/base" if base == folder / "base" else CACHE)
    except MissingWeightsError as err:
        if not from_variable:
            return {"found": False, "folder": None, "source": None, "problem": str(err)}
        base, source = Path(from_variable).expanduser(), weights_variable("minicpmo45")
    found = checkpoint_found(base, source)
    return {key: found[key] for key in ("found", "folder", "source", "problem")}


# ------------------------------------------------------------------------------ what can run


def gpu_memory_needed(size: ModelSize, parameters: int | None = None) -> float:
    """GiB of GPU memory a model needs in bfloat16: its weights (2 bytes a parameter), the KV cache of its longest
    context and ``WORKING_GIB``, rounded up; ``parameters`` (a miniature's count) replaces the table's figures.

    >>> gpu_memory_needed(MINICPMO_SIZE), gpu_memory_needed(QWEN_OMNI_SIZE), gpu_memory_needed(MINICPMO_SIZE, 19_600_000)
    (24.0, 21.0, 3.0)
    """
    if parameters is not None:
        return float(math.ceil(parameters * 2 / 2**30 + WORKING_GIB))
    weights = size.parameters_b * 1e9 * 2 / 2**30
    cache = size.kv_kib_per_token * size.context_tokens / 2**20
    return float(math.ceil(weights + cache + WORKING_GIB))


def roomy_gpu(gpus: list[dict], needed_gib: float) -> dict | None:
    """The first GPU with at least ``needed_gib`` free, or None.

    >>> roomy_gpu([{"index": 0, "free_gib": 10.0}, {"index": 1, "free_gib": 70.5}], 24.0)["index"]
    1
    """
    return next((gpu for gpu in gpus if gpu["free_gib"] >= needed_gib), None)


def start_command(model: str, weights: dict, device: str) -> str:
    """The command that starts a run of ``model`` with the weights found (absolute paths: no ``~`` for Hydra).

    >>> start_command("gander", {"folder": "/ckpt/gander", "source": "TICKTOCK_WEIGHTS_GANDER",
    ...                          "base": {"folder": "/ckpt/gander/base", "source": "<folder>/base"}}, "cuda")
    'python -m ticktock.run model=gander model.path=/ckpt/gander device=cuda clock=wall decoder=speclisten'
    >>> start_command("minicpmo45", {"folder": "/hf/snap", "source": "the Hugging Face cache"}, "cpu")
    'python -m ticktock.run model=minicpmo45 device=cpu decoder=speclisten limit.sessions=1'
    """
    words = ["python", "-m", "ticktock.run", f"model={model}"]
    if weights["source"] != CACHE:
        words.append(f"model.path={weights['folder']}")
    base = weights.get("base") or {}
    if base.get("source") == weights_variable("minicpmo45"):
        words.append(f"model.base_path={base['folder']}")
    words += [f"device={device}", "clock=wall", "decoder=speclisten"] if device != "cpu" else \
        ["device=cpu", "decoder=speclisten", "limit.sessions=1"]
    return " ".join(shlex.quote(word) for word in words)


def plan_run(model: str, weights: dict, gpus: list[dict]) -> dict:
    """Whether a run of ``model`` is possible here: ``run`` is ``gpu`` (weights found, a GPU with the memory),
    ``cpu_only`` (weights found, no GPU that fits: float32 on the CPU, slow but it runs), or ``not_possible``
    (no weights); ``command`` starts it.

    >>> plan_run("lws", {"found": False}, [])["run"]
    'not_possible'
    >>> plan_run("gander", {"found": True, "folder": "/g", "source": "model.path", "parameters": None},
    ...          [{"index": 1, "name": "NVIDIA H100 80GB HBM3", "free_gib": 78.0}])["command"]
    'python -m ticktock.run model=gander model.path=/g device=cuda:1 clock=wall decoder=speclisten'
    """
    size = SIZES[model]
    needed = gpu_memory_needed(size, weights.get("parameters"))
    plan = {"needs_gpu_gib": needed, "memory_source": size.source if weights.get("parameters") is None else
            "the miniature's parameter count (config.json) in bfloat16, plus the working allowance"}
    if not weights["found"]:
        missing = ["no weights"] + ([] if gpus else ["no CUDA device"])
        return {**plan, "run": "not_possible", "why": ", ".join(missing), "command": None}
    gpu = roomy_gpu(gpus, needed)
    if gpu is not None:
        device = "cuda" if gpu["index"] == 0 else f"cuda:{gpu['index']}"
        return {**plan, "run": "gpu", "why": f"on cuda:{gpu['index']} ({gpu['name']}, {gpu['free_gib']} GiB free)",
                "command": start_command(model, weights, device)}
    why = "no CUDA device" if not gpus else \
        f"no GPU has {needed:g} GiB free (the most: {max(g['free_gib'] for g in gpus)} GiB)"
    return {**plan, "run": "cpu_only", "why": f"{why}: float32 on the CPU only (slow; fine for a miniature)",
            "command": start_command(model, weights, "cpu")}


def model_report(model: str, gpus: list[dict], environ=os.environ) -> dict:
    """One real model: its weights (and base), the fetch command when they are missing, and the run plan."""
    weights = find_weights(model, model_config(model), environ)
    fetch, note = FETCH[model]
    return {"model": model, "weights_variable": weights_variable(model), "weights": weights,
            "fetch": None if weights["found"] else fetch, "fetch_note": None if weights["found"] else note,
            **plan_run(model, weights, gpus)}


# ------------------------------------------------------------------------------ cost profiles


def slug(text: str) -> str:
    """A device name as a file name (as ``calibrate --gpu`` names its profile).

    >>> slug("NVIDIA H100 80GB HBM3")
    'nvidia-h100-80gb-hbm3'
    """
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def gpu_model(name: str) -> str | None:
    """The GPU's model, the first word of its name holding a digit.

    >>> gpu_model("NVIDIA A100-SXM4-80GB"), gpu_model("NVIDIA GeForce RTX 4090"), gpu_model("cpu")
    ('a100', '4090', None)
    """
    return next((word for word in slug(name).split("-") if any(ch.isdigit() for ch in word)), None)


def profile_match(file_stem: str, device: str, gpu_names: list[str]) -> str | None:
    """How a cost profile (its file name and ``device`` field) matches this machine's GPUs: ``this device`` (the
    full name), ``same GPU model (X)`` or None.

    >>> profile_match("nvidia-h100-80gb-hbm3-gander", "NVIDIA H100 80GB HBM3", ["NVIDIA H100 80GB HBM3"])
    'this device'
    >>> profile_match("a100-8b-derived", "NVIDIA A100-80GB (derived, not measured)", ["NVIDIA A100-SXM4-80GB"])
    'same GPU model (a100)'
    >>> profile_match("a100-8b-derived", "NVIDIA A100-80GB (derived, not measured)", ["NVIDIA A10"]) is None
    True
    """
    described = f"-{slug(file_stem)}-{slug(device)}-"  # whole words only: an A10 is not an A100
    for name in gpu_names:
        if f"-{slug(name)}-" in described:
            return "this device"
    for name in gpu_names:
        model = gpu_model(name)
        if model and f"-{model}-" in described:
            return f"same GPU model ({model})"
    return None


def profiles_report(gpu_names: list[str]) -> list[dict]:
    """Every shipped cost profile (``configs/profiles/*.yaml``): its name, device, provenance and match."""
    import yaml

    rows = []
    for file in sorted(resource_path("configs/profiles").glob("*.yaml")):
        try:
            data = yaml.safe_load(file.read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError) as err:
            rows.append({"file": file.name, "name": file.stem, "device": f"unreadable ({type(err).__name__})",
                         "kind": None, "matches": None})
            continue
        data = data if isinstance(data, dict) else {}
        device, provenance = str(data.get("device", "")), str(data.get("provenance", ""))
        kind = next((word.lower() for word in ("MEASURED", "DERIVED") if word in provenance), None)
        rows.append({"file": file.name, "name": str(data.get("name", file.stem)), "device": device, "kind": kind,
                     "matches": profile_match(file.stem, device, gpu_names)})
    return rows


# ------------------------------------------------------------------------------ the report


def doctor_report(environ=os.environ) -> dict:
    """The whole report (what ``--json`` prints)."""
    device = device_report(environ)
    gpus = device["gpus"]
    models = [model_report(model, gpus, environ) for model in REAL_MODELS]
    profiles = profiles_report([gpu["name"] for gpu in gpus])
    return {"device": device, "models": models,
            "embedded": {"runs": True, "command": "python -m ticktock.run decoder=speclisten"},
            "profiles": profiles, "calibrate": calibrate_hint(gpus, models, profiles)}


def calibrate_hint(gpus: list[dict], models: list[dict], profiles: list[dict]) -> str | None:
    """The calibration command when this machine has a GPU and no shipped profile was measured on it.

    >>> calibrate_hint([{"name": "NVIDIA L40S"}], [{"model": "gander", "run": "gpu"}], [{"matches": None}])
    'python -m ticktock.calibrate --gpu model=gander'
    """
    if not gpus or any(p["matches"] == "this device" for p in profiles):
        return None
    model = next((m["model"] for m in models if m["run"] == "gpu"), "<model>")
    return f"python -m ticktock.calibrate --gpu model={model}"


def render(report: dict) -> str:
    """The report as one screen of text."""
    lines = [f"ticktock doctor: this machine and what it can run (the GPU path: {GPU_PAGE})", "device"]
    lines += device_lines(report["device"])
    lines.append("real models (bfloat16 on a GPU; weights from TICKTOCK_WEIGHTS_<MODEL>, model.path or the "
                 "Hugging Face cache)")
    for model in report["models"]:
        lines += model_lines(model)
    lines.append(f"embedded model: always runs: {report['embedded']['command']}")
    lines.append("cost profiles (configs/profiles)")
    width = max((len(profile["name"]) for profile in report["profiles"]), default=0) + 2
    for profile in report["profiles"]:
        kind = f" [{profile['kind']}]" if profile["kind"] else ""
        match = f"  <- {profile['matches']}" if profile["matches"] else ""
        lines.append(f"  {profile['name']:<{width}}{profile['device']}{kind}{match}")
    if report["calibrate"]:
        lines.append(f"  none measured on this device: {report['calibrate']}")
    return "\n".join(lines)


def device_lines(device: dict) -> list[str]:
    visible = device["cuda_visible_devices"]
    seen = f"CUDA_VISIBLE_DEVICES={visible!r}" if visible is not None else "CUDA_VISIBLE_DEVICES not set"
    lines = [f"  torch {device['torch']}" + (f", CUDA {device['torch_cuda']}" if device["torch_cuda"] else "")]
    lines += [f"  cuda:{g['index']} {g['name']}: {g['total_gib']} GiB total, {g['free_gib']} GiB free ({seen})"
              for g in device["gpus"]] or [f"  no CUDA device ({seen})"]
    return lines + [f"  {note}" for note in device["notes"]]


def model_lines(model: dict) -> list[str]:
    """Two to four lines for one real model: its weights (and base), what is wrong with them, and what can run."""
    weights, name = model["weights"], f"  {model['model']:<16}"
    pad = " " * len(name)
    if weights["folder"]:
        kind = "a miniature (random weights)" if weights.get("miniature") else "weights"
        base = weights.get("base") or {}
        lines = [f"{name}{kind}: {weights['folder']} ({weights['source']})" +
                 (f"; base: {base['folder']} ({base['source']})" if base.get("found") else "")]
        problem = weights["problem"] or (base.get("problem") if not base.get("found", True) else None)
        lines += [f"{pad}{problem}"] if problem else []
    else:
        note = f" ({model['fetch_note']})" if model["fetch_note"] else ""
        lines = [f"{name}weights not found; fetch: {model['fetch']}{note}" if model["fetch"] else
                 f"{name}weights not found; {model['fetch_note']}"]
        lines += [f"{pad}{weights['problem']}"] if weights["source"] else []  # a folder named that is not there
    verdict = {"gpu": "runs on the GPU", "cpu_only": "GPU run not possible", "not_possible": "not possible here"}
    lines.append(f"{pad}needs ~{model['needs_gpu_gib']:g} GiB of GPU memory; {verdict[model['run']]}: {model['why']}")
    return lines + ([f"{pad}{model['command']}"] if model["command"] else [])


class OptionParser(argparse.ArgumentParser):
    """argparse whose mistakes are one ``ticktock: error:`` line (exit 2), not a usage block."""

    def error(self, message: str):
        raise DoctorOptionError(f"doctor: {message} (its only option: --json)")


def main(argv: list[str] | None = None) -> int:
    parser = OptionParser(prog="python -m ticktock.adapters.doctor", description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args(argv)
    report = doctor_report()
    print(json.dumps(report, indent=2) if args.json else render(report))
    return 0


if __name__ == "__main__":
    with user_errors():
        sys.exit(main())
