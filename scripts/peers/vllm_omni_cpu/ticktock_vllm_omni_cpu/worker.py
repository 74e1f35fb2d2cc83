"""CPU workers and model runners for vLLM-Omni's stages.

vLLM-Omni's stage workers (``GPUARWorker``, ``GPUGenerationWorker``) set a CUDA device up and
refuse any other; its model runners (``GPUARModelRunner`` for the Thinker and the Talker,
``GPUGenerationModelRunner`` for Code2Wav) carry the omni behaviour: hidden states and
multimodal payloads per request, connectors between stages, the duplex sampling hooks.
vLLM's CPU build has the other half: ``CPUWorker`` (thread binding, CPU memory, gloo) and
``CPUModelRunner`` (no CUDA streams/events, device buffers aliased to host buffers, no graphs).

Each runner below is the omni runner first and vLLM's CPU runner second in the MRO, so omni
methods run and their ``super()`` calls land in the CPU runner before the common
``GPUModelRunner``; each worker is vLLM's ``CPUWorker`` building one of those runners.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch
from vllm.logger import init_logger
from vllm.v1.worker import cpu_model_runner as _cpu_runner_module
from vllm.v1.worker import cpu_worker as _cpu_worker_module
from vllm.v1.worker.cpu_model_runner import CPUModelRunner
from vllm.v1.worker.cpu_worker import CPUWorker
from vllm_omni.worker.gpu_ar_model_runner import GPUARModelRunner
from vllm_omni.worker.gpu_generation_model_runner import GPUGenerationModelRunner
from vllm_omni.worker.mixins import OmniWorkerMixin

logger = init_logger(__name__)


class _CpuRunnerMixin:
    """What both omni runners need on top of the MRO to run on a CPU."""

    def __init__(self, vllm_config, device: torch.device) -> None:
        # The omni runners' own __init__ code (after GPUModelRunner's) makes CUDA streams and
        # events in places; vLLM's CPU runner swaps those for placeholders only around
        # GPUModelRunner.__init__, so keep the same placeholders around the whole chain.
        with _cpu_runner_module._torch_cuda_wrapper():
            super().__init__(vllm_config, device)
        # The omni runners allocate more host/device buffer pairs after CPUModelRunner aliased
        # its own (e.g. GPUARModelRunner's input_ids, inputs_embeds): alias them too, so a write
        # to either half is seen by the model without a copy.
        self._postprocess_tensors()


class CpuOmniARModelRunner(_CpuRunnerMixin, GPUARModelRunner, CPUModelRunner):
    """Thinker / Talker runner: vLLM-Omni's AR runner over vLLM's CPU runner."""


class CpuOmniGenerationModelRunner(_CpuRunnerMixin, GPUGenerationModelRunner, CPUModelRunner):
    """Code2Wav runner: vLLM-Omni's generation runner over vLLM's CPU runner."""


@contextlib.contextmanager
def _cpu_worker_builds(runner_cls: type) -> Iterator[None]:
    # CPUWorker.init_device does the CPU setup we want (thread binding, gloo, seed) and then
    # constructs `CPUModelRunner` by its module-level name. Point that name at our runner for
    # the duration, so the plain CPU runner (which lacks the omni hooks) is never built.
    saved = _cpu_worker_module.CPUModelRunner
    _cpu_worker_module.CPUModelRunner = runner_cls
    try:
        yield
    finally:
        _cpu_worker_module.CPUModelRunner = saved


class _CpuOmniWorkerBase(OmniWorkerMixin, CPUWorker):
    model_runner_cls: type

    def init_device(self) -> None:
        # vLLM's model runner v2 has no omni hooks (vLLM-Omni's XPU workers force v1 likewise).
        if self.use_v2_model_runner:
            logger.warning("vLLM-Omni on CPU: forcing the v1 model runner (v2 has no omni hooks)")
        self.use_v2_model_runner = False
        with _cpu_worker_builds(self.model_runner_cls):
            super().init_device()


class CpuOmniARWorker(_CpuOmniWorkerBase):
    model_runner_cls = CpuOmniARModelRunner


class CpuOmniGenerationWorker(_CpuOmniWorkerBase):
    model_runner_cls = CpuOmniGenerationModelRunner
