"""A CPU OmniPlatform: vLLM's CPU platform plus the surface vLLM-Omni asks of a platform.

vLLM's ``CpuPlatform`` already answers everything vLLM itself asks (device type ``cpu``, gloo,
CPU attention backends, KV cache size from ``VLLM_CPU_KVCACHE_SPACE``, eager-only settings).
``OmniPlatform`` adds the questions vLLM-Omni asks; each override below answers one of them for a
CPU, and says why. ``OmniPlatform`` comes first in the bases so its additions are found, and
``CpuPlatform`` second so vLLM's own CPU answers win over the generic ``Platform`` defaults.
"""

from __future__ import annotations

import psutil
import torch
from vllm.platforms.cpu import CpuPlatform
from vllm_omni.platforms.interface import OmniPlatform, OmniPlatformEnum

_WORKERS = "ticktock_vllm_omni_cpu.worker"


class CpuOmniPlatform(OmniPlatform, CpuPlatform):
    # Out of tree: vLLM-Omni's is_cuda()/is_npu()/... all answer False, so none of its
    # device-specific branches (CUDA graphs, NPU kernels) is taken.
    _omni_enum = OmniPlatformEnum.OOT

    # --- which workers run the stages -------------------------------------------------------
    # The base raises NotImplementedError: the stage launcher asks for a worker class per
    # stage kind (autoregressive Thinker/Talker, non-autoregressive Code2Wav).
    @classmethod
    def get_omni_ar_worker_cls(cls) -> str:
        return f"{_WORKERS}.CpuOmniARWorker"

    @classmethod
    def get_omni_generation_worker_cls(cls) -> str:
        return f"{_WORKERS}.CpuOmniGenerationWorker"

    # The shipped deploy files are device-neutral; ours is always passed with --deploy-config.
    @classmethod
    def get_default_stage_config_path(cls) -> str:
        return "vllm_omni/deploy"

    # --- the device -------------------------------------------------------------------------
    # The stage launcher counts devices to place stages ("devices: 0" in the deploy file);
    # the host is one device. (The base raises NotImplementedError for all of these.)
    @classmethod
    def get_torch_device(cls, local_rank: int | None = None) -> torch.device:
        return torch.device("cpu")

    @classmethod
    def get_device_count(cls) -> int:
        return 1

    @classmethod
    def get_device_version(cls) -> str | None:
        return None

    # CPU kernels finish before they return: nothing to wait for.
    @classmethod
    def synchronize(cls) -> None:
        return None

    # Memory questions are asked of the "device"; on a CPU that is the host's RAM.
    @classmethod
    def get_free_memory(cls, device: torch.device | None = None) -> int:
        return int(psutil.virtual_memory().available)

    @classmethod
    def get_device_memory(cls, device: torch.device | None = None) -> tuple[int, int]:
        vm = psutil.virtual_memory()
        return int(vm.available), int(vm.total)

    # --- features a CPU does not have -------------------------------------------------------
    # No torch inductor: every stage runs eager on this platform (compiling on two cores would
    # take minutes per shape and buys nothing for a functional peer).
    @classmethod
    def supports_torch_inductor(cls) -> bool:
        return False

    # The Talker's MTP graph capture is a CUDA-graph feature.
    @classmethod
    def supports_talker_mtp_graph_capture(cls) -> bool:
        return False

    # flash-attn is a CUDA package; MiniCPM-o's code treats it as optional.
    @classmethod
    def has_flash_attn_package(cls) -> bool:
        return False

    @classmethod
    def supports_diffusion_dense_flash_attention(cls) -> bool:
        return False

    # Diffusion stages (not used by MiniCPM-o) would get PyTorch's SDPA, the one portable backend.
    @classmethod
    def get_diffusion_attn_backend_cls(
        cls, selected_backend: str | None, head_size: int, allow_trtllm_default: bool = False
    ) -> str:
        from vllm_omni.diffusion.attention.backends.registry import DiffusionAttentionBackendEnum

        if selected_backend is not None and selected_backend.upper() != "TORCH_SDPA":
            raise ValueError(f"{selected_backend} attention is not available on the CPU platform; use TORCH_SDPA")
        return DiffusionAttentionBackendEnum.TORCH_SDPA.get_path()

