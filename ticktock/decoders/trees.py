"""Draft trees: the tokens a decoder offers for verification, and the outcome of one verify forward.

A draft is a tree hanging off the last query position of the prefix; a chain is a tree whose nodes each
follow the one before. ``tree_layout`` turns a tree into the adapter's ``TreeLayout`` (the parent of every
query position), and ``trim_draft`` cuts a chain so it never runs past the chunk.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from ticktock.adapters.base import TreeLayout


@dataclass
class DraftTree:
    """Draft tokens hanging off the root (the last query position of the prefix).

    ``parents[i] == -1``: node i follows the root. ``verifiable[i]`` False marks helper nodes that ride in
    the forward but are never accepted (Lookahead's Jacobi window). ``add_chain`` inserts like a trie, so a
    token never appears twice under the same parent.

    Example::

        >>> t = DraftTree(); t.add_chain([5, 6, 7]); t.add_chain([5, 9])
        [0, 1, 2]
        [0, 3]
        >>> t.parents
        [-1, 0, 1, 0]
    """

    tokens: list[int] = field(default_factory=list)
    parents: list[int] = field(default_factory=list)
    verifiable: list[bool] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.tokens)

    def add_node(self, token: int, parent: int = -1, verifiable: bool = True, source: str = "") -> int:
        self.tokens.append(int(token))
        self.parents.append(parent)
        self.verifiable.append(verifiable)
        self.sources.append(source)
        return len(self.tokens) - 1

    def add_chain(self, tokens: Sequence[int], parent: int = -1, source: str = "") -> list[int]:
        nodes = []
        for token in tokens:
            existing = self.child(parent, token)
            parent = existing if existing is not None else self.add_node(token, parent, True, source)
            nodes.append(parent)
        return nodes

    def child(self, parent: int, token: int) -> int | None:
        for i, (p, t, ok) in enumerate(zip(self.parents, self.tokens, self.verifiable)):
            if p == parent and t == token and ok:
                return i
        return None

    def first(self, count: int) -> "DraftTree":
        """The tree of its first ``count`` nodes: a node's parent always comes before it, so the result is a tree (the
        chains added first, whole, and the start of the next).

        >>> t = DraftTree(); _ = t.add_chain([5, 6, 7]); _ = t.add_chain([5, 9])
        >>> t.first(2).tokens, t.first(2).parents
        ([5, 6], [-1, 0])
        """
        return DraftTree(self.tokens[:count], self.parents[:count], self.verifiable[:count], self.sources[:count])

    def children(self) -> dict[int, dict[int, int]]:
        """parent -> {token: first verifiable child with that token}."""
        index: dict[int, dict[int, int]] = {}
        for i, (p, t, ok) in enumerate(zip(self.parents, self.tokens, self.verifiable)):
            if ok:
                index.setdefault(p, {}).setdefault(t, i)
        return index

    def is_chain(self) -> bool:
        return all(p == i - 1 for i, p in enumerate(self.parents))

    def num_verifiable(self) -> int:
        return sum(self.verifiable)


@dataclass
class Verification:
    """Outcome of one verify forward. ``logits[0]`` is the root row, ``logits[1 + i]`` node i's row."""

    committed: list[int]
    accepted_nodes: list[int]
    logits: Any
    draft: DraftTree



def trim_draft(tokens: Sequence[int], protocol, committed: int) -> list[int]:
    """Cut a draft so it never runs past the chunk: after its first terminator, and at the token cap."""
    room = max(protocol.max_tokens_per_chunk - committed - 1, 0)
    out: list[int] = []
    for token in tokens[:room]:
        out.append(int(token))
        if token in protocol.terminators:
            break
    return out


def tree_layout(prefix_length: int, draft: DraftTree) -> TreeLayout:
    parents = list(range(-1, prefix_length - 1))
    parents += [prefix_length - 1 if p < 0 else prefix_length + p for p in draft.parents]
    return TreeLayout(tuple(parents))
