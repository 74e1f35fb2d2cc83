"""TickTock's out-of-tree CPU platform for vLLM-Omni 0.30.0.

vLLM-Omni resolves its platform from built-in probes (cuda, rocm, npu, xpu, musa) and from the
functions registered in the entry-point group ``vllm_omni.platform_plugins``. On a machine with no
accelerator none of the built-ins answers, and its fallback placeholder cannot name a worker. This
plugin answers with a CPU platform, and only when asked for one: vLLM itself must be on its CPU
platform (``VLLM_TARGET_DEVICE=cpu``), so installing it next to a GPU build changes nothing there.

This module must stay import-light: vLLM-Omni imports it in every process while it resolves its
platform; the heavy classes live in ``platform`` and ``worker`` and are named by path.
"""

from __future__ import annotations

import os

PLATFORM_CLS = "ticktock_vllm_omni_cpu.platform.CpuOmniPlatform"


def platform_plugin() -> str | None:
    """Return the CPU platform's class path when vLLM runs on its CPU platform, else None."""
    if os.environ.get("TICKTOCK_VLLM_OMNI_CPU", "1") == "0":  # an escape hatch: let the built-ins decide
        return None
    try:
        from vllm.platforms import current_platform
    except Exception:  # vLLM absent or broken: not ours to decide
        return None
    return PLATFORM_CLS if current_platform.is_cpu() else None
