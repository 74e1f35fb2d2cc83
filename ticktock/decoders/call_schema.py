"""Tool-call drafts from the session's tool schemas (a Speculative Listening extension, beyond the paper).

A tool call is mostly structure the schemas fix: the tool's name, its argument names, quotes and
braces, enum values. Only free values (a city, a number) are unknown. ``call_patterns`` renders every
tool's call with the adapter (``ModelAdapter.tool_call_tokens``, so the model's own call format) twice,
with two different placeholder values per free argument; the tokens that differ between the two
renderings are *free spans*, the rest are literals. ``CallDrafter`` matches the committed tokens of the
call being written against every pattern (a free span swallows any tokens) and drafts each pattern's
literal continuation up to its next free span (and, inside a value, the literal that would close it).

Example (token ids stand for text: 1 = ``<tool_call>``, 2 = ``{"name": "``, 3 = ``f``, 4 = ``", "x": ``,
8 and 9 the placeholder values, 6 = ``}}``, 7 = ``</tool_call>``)::

    >>> pattern = free_spans([1, 2, 3, 4, 8, 6, 7], [1, 2, 3, 4, 9, 6, 7])
    >>> pattern
    [1, 2, 3, 4, None, 6, 7]
    >>> drafter = CallDrafter([pattern], call_open=1)
    >>> drafter.drafts([1, 2], limit=8)          # the name and the argument key are known
    [[3, 4]]
    >>> drafter.drafts([1, 2, 3, 4, 40, 41], limit=8)   # inside the free value: its closing literal
    [[6, 7]]
"""

from __future__ import annotations

import difflib
import itertools
from typing import Sequence

from ticktock.decoders.ngram import is_prefix_of_any

FREE = None  # a free span in a pattern

#: placeholder values of the two renderings, by JSON-schema type (a free argument takes both); a boolean is
#: an enum of its two values
PLACEHOLDERS = {"string": ("a", "b"), "integer": (1, 2), "number": (1, 2), "array": (["a"], ["b"]),
                "object": ({"a": 1}, {"b": 2})}


def free_spans(first: Sequence[int], second: Sequence[int]) -> list[int | None]:
    """Merge two renderings of one call: tokens they share are literals, differing runs one ``FREE`` each."""
    pattern: list[int | None] = []
    matcher = difflib.SequenceMatcher(a=list(first), b=list(second), autojunk=False)
    for op, a0, a1, _, _ in matcher.get_opcodes():
        if op == "equal":
            pattern.extend(int(t) for t in first[a0:a1])
        elif not pattern or pattern[-1] is not FREE:
            pattern.append(FREE)
    return pattern


def argument_variants(tool: dict, limit: int = 8) -> list[tuple[dict, dict]]:
    """Pairs of argument dicts to render one tool with: enum (and boolean) arguments take each of their
    values (cycled together, at most ``limit`` variants), free arguments two placeholders.

    Example::

        >>> tool = {"name": "f", "parameters": {"properties": {"mode": {"type": "string", "enum": ["car", "bus"]},
        ...                                                    "n": {"type": "integer"}}}}
        >>> argument_variants(tool)
        [({'mode': 'car', 'n': 1}, {'mode': 'car', 'n': 2}), ({'mode': 'bus', 'n': 1}, {'mode': 'bus', 'n': 2})]
    """
    properties = _properties(tool)
    enums = {name: _enum(spec) for name, spec in properties.items()}
    variants = []
    for i in range(min(max([len(values) for values in enums.values()] + [1]), limit)):
        first, second = {}, {}
        for name, spec in properties.items():
            if enums[name]:
                first[name] = second[name] = enums[name][i % len(enums[name])]
            else:
                first[name], second[name] = PLACEHOLDERS.get(_json_type(spec), PLACEHOLDERS["string"])
        variants.append((first, second))
    return variants


def _properties(tool: dict) -> dict[str, dict]:
    """The tool's argument specs by name; a schema shape we do not read gives no arguments (drafts are only
    hints, so an unusual schema costs drafts, never correctness)."""
    parameters = tool.get("parameters")
    properties = parameters.get("properties") if isinstance(parameters, dict) else None
    if not isinstance(properties, dict):
        return {}
    return {name: spec if isinstance(spec, dict) else {} for name, spec in properties.items()}


def _json_type(spec: dict) -> str | None:
    """The argument's JSON-schema type (the first non-null one of a type list)."""
    kind = spec.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    return kind


def _enum(spec: dict) -> list:
    """The values an argument can take when they are few and known: its enum, or a boolean's two values."""
    if isinstance(spec.get("enum"), list) and spec["enum"]:
        return list(spec["enum"])
    return [True, False] if _json_type(spec) == "boolean" else []


def call_patterns(adapter, tools: Sequence[dict]) -> list[list[int | None]]:
    """Every tool's call patterns, rendered in the adapter's call format (empty without tool-call tokens)."""
    if adapter.protocol.tool_call_open is None:
        return []
    patterns = []
    for tool in tools:
        for first, second in argument_variants(tool):
            patterns.append(free_spans(adapter.tool_call_tokens(tool["name"], first),
                                       adapter.tool_call_tokens(tool["name"], second)))
    return patterns


class CallDrafter:
    """Drafts for the call being written, from patterns (see the module docstring)."""

    def __init__(self, patterns: Sequence[Sequence[int | None]], call_open: int):
        self.patterns = [list(p) for p in patterns]
        self.call_open = call_open

    def drafts(self, output: Sequence[int], limit: int) -> list[list[int]]:
        """Distinct literal continuations of the call that ``output`` (the chunk's committed tokens) is
        writing; none outside a call. Patterns whose literals matched more tokens come first."""
        if self.call_open not in output:
            return []
        start = len(output) - 1 - list(reversed(output)).index(self.call_open)
        call = list(output[start:])
        found: dict[tuple[int, ...], int] = {}
        for pattern in self.patterns:
            for position, matched in _live_states(pattern, call):
                draft = tuple(itertools.islice(_literal_run(pattern, position), limit))
                if draft:
                    found[draft] = max(found.get(draft, 0), matched)
        ranked = sorted(found.items(), key=lambda item: item[1], reverse=True)
        kept: list[list[int]] = []
        for draft, _ in ranked:
            if not is_prefix_of_any(draft, kept):
                kept.append(list(draft))
        return kept


def _closure(pattern: list, states: dict[int, int]) -> dict[int, int]:
    """Add the states reached by letting a free span end empty."""
    out = dict(states)
    for position, matched in states.items():
        while position < len(pattern) and pattern[position] is FREE:
            position += 1
            out[position] = max(out.get(position, -1), matched)
    return out


def _live_states(pattern: list, call: list[int]) -> list[tuple[int, int]]:
    """Pattern positions reachable after ``call`` (a free span may swallow any tokens), with the number
    of literal tokens matched on the way."""
    states = _closure(pattern, {0: 0})
    for token in call:
        following: dict[int, int] = {}
        for position, matched in states.items():
            if position >= len(pattern):
                continue
            if pattern[position] is FREE:
                following[position] = max(following.get(position, -1), matched)
            elif pattern[position] == token:
                following[position + 1] = max(following.get(position + 1, -1), matched + 1)
        states = _closure(pattern, following)
        if not states:
            return []
    return list(states.items())


def _literal_run(pattern: list, position: int):
    """The literal tokens from ``position`` to the next free span (from inside a free span: the literal
    that closes it onwards)."""
    if position < len(pattern) and pattern[position] is FREE:
        position += 1
    for token in pattern[position:]:
        if token is FREE:
            return
        yield token
