"""Token Recycling (TR; Luo et al. 2024, arXiv 2408.08696, as the official code and Spec-Bench run it).

An adjacency matrix ``A[V, k]`` (k = 8) holds, for every token, the top-k successors the target model
predicted the last time that token was in a forward. Before each forward the static tree template "2.2.2"
(80 nodes, depth 6) is filled breadth first from the root token: node i gets ``A[token(parent(i)), rank(i)]``.
The whole tree is verified in ONE forward (``step.verify``: 4D tree mask, positions = depth, accept-walk,
KV compaction to the accepted path). After the forward, the row of EVERY token in the tree (accepted or
not: rejected candidates are "recycled") is overwritten with the top-k of its logits.

``A`` is zero-initialised once and kept for the decoder's life: across chunks AND sessions of a run, as the
original keeps it across prompts (paper Fig. 2: "initialized by inheriting from the previous query").
Unfilled rows draft token 0 everywhere; those drafts are simply rejected.

Scope of ``A``: one per decoder instance, i.e. per concurrency slot and per shard. A run with
``concurrency.sessions=N`` replays with N decoders (one per slot), and each shard of a sharded run
(``shard.count=K``) is its own process with its own decoder; every one of them starts with ``A`` cold and warms it
only on the sessions it replays. So Token Recycling's figures (accepted tokens, speedup) depend on N and on K, not
only on the sessions: the same sessions replayed with N = 4, or split over 4 shards, start cold four times and see
each matrix warmed on a quarter of them. run.json records it (``decoder.adjacency_matrix_scope``, with N in
``config.concurrency.sessions`` and the shard in ``shard``), and ``python -m ticktock.tables`` says so under
"Produced by" when recycling runs of different N or shard counts are in one comparison.

Our setting:

- Audio prefill (a chunk's first forward): its last input is normally an audio embedding, which has no
  token id, so there is no root token and the forward is a plain prefill (nothing drafted, no row updated;
  the original's prefill does not draft or update either). When the prefill ends with tool-response text,
  its last token (``</tool_response>``) is the root: we draft from it in the prefill forward and refresh its row.
- Drafts never run past the chunk: nodes deeper than the chunk's remaining room
  (``max_tokens_per_chunk - committed - 1``, the bonus token takes the last slot) and the subtrees below a
  terminator token are pruned before the forward.

Deviations from the original, and why:

- Duplicate tokens in one tree: the original's batched scatter ``A[tok] = topk`` has no defined winner.
  We write rows in a fixed order, the later write winning: the root, the tree nodes in BFS order, then the
  accepted path (root first). Accepted-path rows come from the real context, so they are written last.
  Drafts are then reproducible run to run.
- The original skips the row update on the step that emits EOS (it stops decoding); sessions go on after
  a chunk terminator, so we refresh rows after every forward.
- Duplicate siblings (only from an unfilled all-zero row) are all sent, as in the original; our walk follows
  the first child carrying the committed token, the original the best leaf path (first on ties). In
  "2.2.2" every earlier sibling's subtree contains the shape of every later sibling's, and duplicate
  siblings carry identical subtrees, so both rules accept the same tokens (checked in the tests).
- Temperature sampling: the original loop is greedy only. Here the walk accepts a node when it equals the
  keyed sample at its parent (``selection.py``), which is exact; drafts still come from the raw top-k.
- ``A`` is int32 (the original int64): ids fit, memory halves (152k x 8 x 4 B = 4.9 MB).
- Rows are the top-k of the raw logits (no unit grammar applied), as in the original.

Example::

    >>> decoder = TokenRecyclingDecoder()
    >>> len(decoder.template), decoder.template.nodes_per_depth()
    (80, [8, 21, 25, 15, 8, 3])
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Mapping

import torch

from ticktock.decoders.contract import Decoder, DecoderConfigError, DecoderSettings, knob
from ticktock.decoders.trees import DraftTree, Verification

ADJACENCY_SCOPE = ("per decoder instance: one per concurrency slot (config.concurrency.sessions) and per shard "
                   "(shard.count), each starting cold; kept across the chunks and sessions that instance replays")

# Static tree templates as data: rank path of a parent -> number of children (ranks 0..n-1 below it).
# "2.2.2" is the TR default (the official Token Recycling code's tree_template_.py lists the same counts).
TREE_TEMPLATES: dict[str, dict[tuple[int, ...], int]] = {
    "2.2.2": {
        (): 8,
        (0,): 8, (1,): 4, (2,): 3, (3,): 2, (4,): 1, (5,): 1, (6,): 1, (7,): 1,
        (0, 0): 8, (0, 1): 3, (0, 2): 2, (0, 3): 1, (0, 4): 1, (0, 5): 1, (0, 6): 1, (0, 7): 1,
        (1, 0): 2, (1, 1): 1, (2, 0): 1, (3, 0): 1, (4, 0): 1, (5, 0): 1,
        (0, 0, 0): 5, (0, 0, 1): 2, (0, 0, 2): 1, (0, 0, 3): 1, (0, 0, 4): 1,
        (0, 1, 0): 1, (0, 2, 0): 1, (1, 0, 0): 1, (2, 0, 0): 1, (3, 0, 0): 1,
        (0, 0, 0, 0): 3, (0, 0, 0, 1): 1, (0, 0, 0, 2): 1, (0, 0, 1, 0): 1, (0, 1, 0, 0): 1, (1, 0, 0, 0): 1,
        (0, 0, 0, 0, 0): 2, (0, 0, 0, 1, 0): 1,
    },
}


@dataclass(frozen=True)
class TreeTemplate:
    """A static draft tree whose nodes are paths of child *ranks* below the root, in BFS order.

    Node ``(0, 2)`` is the rank-2 successor of the root's rank-0 successor. BFS order keeps every depth
    contiguous, which the depth-by-depth gather relies on.

    Example::

        >>> t = TreeTemplate.from_children({(): 2, (0,): 1})
        >>> t.paths, t.parents, t.ranks, t.depths
        (((0,), (1,), (0, 0)), (-1, -1, 0), (0, 1, 0), (1, 1, 2))
    """

    paths: tuple[tuple[int, ...], ...]

    @classmethod
    def from_children(cls, children: Mapping[tuple[int, ...], int]) -> "TreeTemplate":
        paths: list[tuple[int, ...]] = []
        frontier: list[tuple[int, ...]] = [()]
        while frontier:
            below = [parent + (rank,) for parent in frontier for rank in range(children.get(parent, 0))]
            paths += below
            frontier = below
        return cls(tuple(paths))

    @classmethod
    def named(cls, name: str) -> "TreeTemplate":
        if name not in TREE_TEMPLATES:
            raise ValueError(f"recycling: unknown tree template {name!r}; known: {sorted(TREE_TEMPLATES)}")
        return cls.from_children(TREE_TEMPLATES[name])

    def __len__(self) -> int:
        return len(self.paths)

    @cached_property
    def parents(self) -> tuple[int, ...]:
        index = {path: i for i, path in enumerate(self.paths)}
        return tuple(index[path[:-1]] if len(path) > 1 else -1 for path in self.paths)

    @cached_property
    def ranks(self) -> tuple[int, ...]:
        return tuple(path[-1] for path in self.paths)

    @cached_property
    def depths(self) -> tuple[int, ...]:
        return tuple(len(path) for path in self.paths)

    @property
    def width(self) -> int:
        """Successors per token the template needs (highest rank + 1)."""
        return max(self.ranks, default=-1) + 1

    def nodes_per_depth(self) -> list[int]:
        return [self.depths.count(d) for d in range(1, max(self.depths, default=0) + 1)]

    def leaves(self) -> list[int]:
        has_child = set(self.parents)
        return [i for i in range(len(self)) if i not in has_child]

    @cached_property
    def depth_spans(self) -> tuple[tuple[int, int], ...]:
        """[start, end) node ranges, one per depth (contiguous in BFS order)."""
        spans = []
        for depth in range(1, max(self.depths, default=0) + 1):
            nodes = [i for i, d in enumerate(self.depths) if d == depth]
            if nodes != list(range(nodes[0], nodes[-1] + 1)):
                raise ValueError("tree template is not in BFS order")
            spans.append((nodes[0], nodes[-1] + 1))
        return tuple(spans)


def gather_draft_tokens(adjacency: torch.Tensor, root: int, template: TreeTemplate) -> list[int]:
    """Fill the template from ``root``: token(i) = A[token(parent(i)), rank(i)], one gather per depth.

    Example::

        >>> A = torch.tensor([[0, 0], [2, 3], [4, 5], [6, 7], [0, 0], [0, 0], [0, 0], [0, 0]])
        >>> gather_draft_tokens(A, 1, TreeTemplate.from_children({(): 2, (0,): 2, (1,): 1}))
        [2, 3, 4, 5, 6]
    """
    slots = torch.empty(len(template) + 1, dtype=torch.long)  # slot 0 = root, slot i + 1 = node i
    slots[0] = root
    parent_slots = torch.as_tensor(template.parents, dtype=torch.long) + 1
    ranks = torch.as_tensor(template.ranks, dtype=torch.long)
    for start, end in template.depth_spans:
        slots[1 + start : 1 + end] = adjacency[slots[parent_slots[start:end]], ranks[start:end]].long()
    return slots[1:].tolist()


def prune_to_chunk(template: TreeTemplate, tokens: list[int], room: int, terminators) -> list[int]:
    """Template nodes kept so that no draft runs past the chunk: depth <= ``room``, and nothing below a
    terminator token (or below a pruned node)."""
    kept: list[int] = []
    alive: set[int] = set()
    for node, (parent, depth) in enumerate(zip(template.parents, template.depths)):
        if depth > room:
            break  # BFS order: every later node is at least as deep
        if parent >= 0 and (parent not in alive or tokens[parent] in terminators):
            continue
        alive.add(node)
        kept.append(node)
    return kept


def build_draft(template: TreeTemplate, tokens: list[int], kept: list[int]) -> DraftTree:
    """The DraftTree of the kept template nodes (template shape kept: duplicate siblings stay)."""
    tree = DraftTree()
    slot: dict[int, int] = {}
    for node in kept:
        parent = template.parents[node]
        slot[node] = tree.add_node(tokens[node], slot[parent] if parent >= 0 else -1, True, "recycling")
    return tree


def rows_to_refresh(root: int, draft: DraftTree, accepted_nodes: list[int]) -> dict[int, int]:
    """token -> index of the logits row whose top-k becomes the token's adjacency row.

    Write order (the later write wins): root, draft nodes in BFS order, then the accepted path.

    Example::

        >>> tree = DraftTree(); tree.add_chain([7, 8]); tree.add_chain([9, 7])
        [0, 1]
        [2, 3]
        >>> rows_to_refresh(5, tree, accepted_nodes=[0])  # 7 sits at nodes 0 and 3: the accepted node 0 wins
        {5: 0, 7: 1, 8: 2, 9: 3}
    """
    order = [(root, 0)] + [(token, 1 + i) for i, token in enumerate(draft.tokens)]
    order += [(root, 0)] + [(draft.tokens[i], 1 + i) for i in accepted_nodes]
    return dict(order)


@dataclass(frozen=True)
class RecyclingSettings(DecoderSettings):
    topk: int = knob(8, int, minimum=1)
    tree: str = knob("2.2.2", str, choices=tuple(TREE_TEMPLATES))

    def check(self) -> None:
        width = TreeTemplate.named(self.tree).width
        if self.topk < width:
            raise DecoderConfigError(f"decoder.topk: must be >= {width} (tree {self.tree!r} uses successor ranks up to "
                                     f"{width - 1}), got {self.topk}")


class TokenRecyclingDecoder(Decoder):
    """Token Recycling: drafts from an adjacency matrix of recycled top-k candidates, on a static tree.

    Example (the adjacency matrix is shared by every session of a run)::

        decoder = TokenRecyclingDecoder(topk=8, tree="2.2.2")
        engine = ReplayEngine(adapter, decoder, clock)
        engine.replay(session_a, audio_a); engine.replay(session_b, audio_b)   # b starts with a's matrix
    """

    name = "recycling"
    Settings = RecyclingSettings

    def __init__(self, name: str | None = None, **settings):
        super().__init__(name, **settings)
        self.template = TreeTemplate.named(self.settings.tree)
        self.adjacency: torch.Tensor | None = None  # [V, topk] int32, allocated at the first forward
        self._root: int | None = None

    def start_session(self, session) -> None:
        """Nothing to reset: the adjacency matrix carries over from earlier sessions of the run."""

    def propose(self, step) -> DraftTree | None:
        self._root = step.root_token()
        if self._root is None:
            return None
        adjacency = self._adjacency(step.adapter.vocab_size)
        tokens = gather_draft_tokens(adjacency, self._root, self.template)
        room = max(step.protocol.max_tokens_per_chunk - len(step.output) - 1, 0)
        kept = prune_to_chunk(self.template, tokens, room, step.protocol.terminators)
        return build_draft(self.template, tokens, kept)

    def observe(self, step, result: Verification) -> None:
        if self._root is None:
            return  # a plain prefill: its last row belongs to an audio embedding
        rows = rows_to_refresh(self._root, result.draft, result.accepted_nodes)
        tokens = torch.as_tensor(list(rows.keys()), dtype=torch.long)
        index = torch.as_tensor(list(rows.values()), dtype=torch.long, device=result.logits.device)
        top = result.logits[index].topk(self.settings.topk, dim=-1).indices
        self.adjacency[tokens] = top.to(device="cpu", dtype=torch.int32)

    def _adjacency(self, vocab_size: int) -> torch.Tensor:
        if self.adjacency is None or self.adjacency.shape[0] != vocab_size:
            if vocab_size < self.settings.topk:
                raise ValueError(f"recycling: topk={self.settings.topk} exceeds the vocabulary size {vocab_size}")
            self.adjacency = torch.zeros(vocab_size, self.settings.topk, dtype=torch.int32)
        return self.adjacency

    def describe(self) -> dict:
        return {**super().describe(), "tree_nodes": len(self.template), "adjacency_matrix_scope": ADJACENCY_SCOPE}
