"""The machine a run was measured on, for run.json's ``environment``: Python, platform, CPU, GPU, the checkout's git
commit and the package versions. A live run records its client machine the same way (no torch: it loads no model).

Example::

    machine(("ticktock", "numpy"))["cpu"]   # e.g. 'AMD EPYC 7B13'
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from pathlib import Path

from ticktock.shipped import resource_path


def machine(packages: tuple[str, ...]) -> dict:
    """What every run records about the machine: Python, platform, CPU, git commit and ``packages``' versions."""
    from importlib.metadata import PackageNotFoundError, version

    versions = {}
    for package in packages:
        try:
            versions[package] = version(package)
        except PackageNotFoundError:
            versions[package] = None
    return {"python": sys.version.split()[0], "platform": platform.platform(), "cpu": cpu_name(),
            "git_sha": git_sha(), "versions": versions}


def environment(adapter) -> dict:
    """run.json's ``environment`` of a replayed run: the machine (``machine``), torch's threads, the GPU the model
    runs on and the model adapter's own description."""
    import torch

    packages = ("ticktock", "torch", "transformers", "numpy", "pyarrow", "hydra-core", "tokenizers")
    return {**machine(packages), "torch_threads": torch.get_num_threads(),
            "cuda_device": cuda_name(getattr(adapter, "device", None)),
            "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"), "model": adapter.describe()}


def cuda_name(device) -> str | None:
    """The name of the GPU the model runs on (None for a model on the CPU)."""
    import torch

    if device is None or torch.device(device).type != "cuda":
        return None
    return torch.cuda.get_device_name(torch.device(device))


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def git_sha() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=resource_path("configs").parent,
                             capture_output=True, text=True, timeout=5)
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None
