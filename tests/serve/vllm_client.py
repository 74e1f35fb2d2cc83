"""vLLM-Omni's real ``DuplexClient`` without vLLM, for the serve tests (a helper, not a test file).

The ``vllm_omni`` package's ``__init__`` imports vLLM (and so a GPU stack), but ``vllm_omni.clients`` imports no
server code. ``duplex_module()`` registers an empty ``vllm_omni`` package whose ``__path__`` is the installed
package folder, then imports ``vllm_omni.clients.duplex``; the test that asks is skipped, saying why, when
vllm-omni (``pip install --no-deps vllm-omni==0.30.0``) or its client's own dependencies are not installed.
``loopback(duplex, answer)`` is an in-memory ``WebSocketTransport``: every frame the client sends goes to
``answer``, which returns the server events to send back; ``push`` sends more.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import json
import sys
import types
from typing import Callable

import pytest

INSTALL = "pip install --no-deps vllm-omni==0.30.0 and the serve-test extra (README's test setup)"


def duplex_module() -> types.ModuleType:
    """``vllm_omni.clients.duplex``, imported without vLLM; skips the calling test when it cannot be."""
    loaded = sys.modules.get("vllm_omni.clients.duplex")
    if loaded is not None:
        return loaded
    for dependency in ("pybase64", "websockets"):
        if importlib.util.find_spec(dependency) is None:
            pytest.skip(f"vLLM-Omni's client needs {dependency}, not installed: {INSTALL}")
    if "vllm_omni" not in sys.modules:
        spec = importlib.util.find_spec("vllm_omni")
        if spec is None or not spec.submodule_search_locations:
            pytest.skip(f"vllm-omni is not installed: {INSTALL}")
        package = types.ModuleType("vllm_omni")
        package.__path__ = list(spec.submodule_search_locations)
        sys.modules["vllm_omni"] = package
    return importlib.import_module("vllm_omni.clients.duplex")


Answer = Callable[[str], list[dict]]


def loopback(duplex: types.ModuleType, answer: Answer):
    """An in-memory transport for ``DuplexClient(connect=...)``: what the client sends is kept in ``sent`` and
    answered by ``answer(frame)``; ``push(event)`` delivers a server event as a JSON text frame."""

    class Loopback(duplex.WebSocketTransport):
        def __init__(self) -> None:
            self.sent: list[str] = []
            self.inbox: asyncio.Queue[str] = asyncio.Queue()
            self.closed = False

        async def send(self, data: str) -> None:
            self.sent.append(data)
            for event in answer(data):
                self.push(event)

        def push(self, event: dict) -> None:
            self.inbox.put_nowait(json.dumps(event))

        async def recv(self) -> str:
            return await self.inbox.get()

        async def close(self) -> None:
            self.closed = True

    return Loopback()
