"""Text injected into a chunk after its audio: tool responses to the model's tool calls.

When a chunk's output contains ``<tool_call>{json}</tool_call>`` spans, each call is parsed into the
canonical Full-Duplex-Bench v3 form ``{"function": name, "args": {...}}``, run through the task's tool
executor, and the responses arrive in the *next* chunk as ``<tool_response>\\n{json}\\n</tool_response>``
after its audio (Gander's layout).

Example::

    >>> parse_tool_call('{"name": "track_order", "arguments": {"order_id": "A12"}}')
    {'function': 'track_order', 'args': {'order_id': 'A12'}}
    >>> parse_tool_call('{"name": "track_order", "argu') is None
    True
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Protocol, Sequence


class ToolExecutor(Protocol):
    def respond(self, call: dict) -> str:
        """The JSON text answering one canonical call {"function": ..., "args": {...}}."""


def parse_tool_call(text: str) -> dict | None:
    """Canonical form of a model's tool call (Hermes {"name","arguments"} or FDB {"function","args"})."""
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, TypeError):
        return None
    if not isinstance(data, dict):
        return None
    name = data.get("name", data.get("function"))
    args = data.get("arguments", data.get("args", {}))
    if not isinstance(name, str) or not isinstance(args, dict):
        return None
    return {"function": name, "args": args}


@dataclass
class Injection:
    tokens: list[int] = field(default_factory=list)
    text: str = ""
    calls: list[dict | None] = field(default_factory=list)


INVALID_CALL_RESPONSE = json.dumps({"error": "invalid tool call: not a JSON object with name and arguments"})


class ToolCallInjector:
    """Answers the tool calls of a chunk; ``executor`` None leaves calls unanswered."""

    def __init__(self, executor: ToolExecutor | None = None):
        self.executor = executor

    def after_chunk(self, adapter, output: Sequence[int]) -> Injection:
        texts = adapter.tool_call_texts(output)
        if not texts:
            return Injection()
        calls = [parse_tool_call(text) for text in texts]
        if self.executor is None:
            return Injection(calls=calls)
        responses = [self.executor.respond(c) if c is not None else INVALID_CALL_RESPONSE for c in calls]
        tokens: list[int] = []
        for response in responses:
            tokens += adapter.tool_response_tokens(response)
        return Injection(tokens, "\n".join(responses), calls)
