from types import SimpleNamespace

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from ticktock.adapters.base import TreeLayout
from ticktock.decoders.ar import ARDecoder
from ticktock.decoders.step import ChunkStep, ChunkInputs
from ticktock.decoders.counters import ChunkCounters
from ticktock.decoders.trees import DraftTree, Verification
from ticktock.decoders.recycling import (
    ADJACENCY_SCOPE,
    TokenRecyclingDecoder,
    TreeTemplate,
    build_draft,
    gather_draft_tokens,
    prune_to_chunk,
)
from ticktock.world.injection import ToolCallInjector
from ticktock.sessions.manifest import load_manifest

from helpers import ConstantToolExecutor, outputs
from helpers import replay as replay_session

# The "2.2.2" template exactly as the official tree_template_.py lists it (rank paths, BFS order).
OFFICIAL_2_2_2 = [
    [0], [1], [2], [3], [4], [5], [6], [7],
    [0, 0], [0, 1], [0, 2], [0, 3], [0, 4], [0, 5], [0, 6], [0, 7], [1, 0], [1, 1], [1, 2], [1, 3], [2, 0], [2, 1],
    [2, 2], [3, 0], [3, 1], [4, 0], [5, 0], [6, 0], [7, 0],
    [0, 0, 0], [0, 0, 1], [0, 0, 2], [0, 0, 3], [0, 0, 4], [0, 0, 5], [0, 0, 6], [0, 0, 7], [0, 1, 0], [0, 1, 1],
    [0, 1, 2], [0, 2, 0], [0, 2, 1], [0, 3, 0], [0, 4, 0], [0, 5, 0], [0, 6, 0], [0, 7, 0], [1, 0, 0], [1, 0, 1],
    [1, 1, 0], [2, 0, 0], [3, 0, 0], [4, 0, 0], [5, 0, 0],
    [0, 0, 0, 0], [0, 0, 0, 1], [0, 0, 0, 2], [0, 0, 0, 3], [0, 0, 0, 4], [0, 0, 1, 0], [0, 0, 1, 1], [0, 0, 2, 0],
    [0, 0, 3, 0], [0, 0, 4, 0], [0, 1, 0, 0], [0, 2, 0, 0], [1, 0, 0, 0], [2, 0, 0, 0], [3, 0, 0, 0],
    [0, 0, 0, 0, 0], [0, 0, 0, 0, 1], [0, 0, 0, 0, 2], [0, 0, 0, 1, 0], [0, 0, 0, 2, 0], [0, 0, 1, 0, 0],
    [0, 1, 0, 0, 0], [1, 0, 0, 0, 0],
    [0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 1], [0, 0, 0, 1, 0, 0],
]


# ------------------------------------------------------------------------------------------ template


def test_template_2_2_2_has_the_published_shape():
    t = TreeTemplate.named("2.2.2")
    assert [list(p) for p in t.paths] == OFFICIAL_2_2_2
    assert len(t) == 80 and t.nodes_per_depth() == [8, 21, 25, 15, 8, 3] and len(t.leaves()) == 40
    assert t.width == 8 and max(t.depths) == 6
    children = {}
    for path in t.paths:
        children[path[:-1]] = children.get(path[:-1], 0) + 1
    # the official template's counts: parent -> number of children
    assert children[()] == 8
    assert [children.get((r,), 0) for r in range(8)] == [8, 4, 3, 2, 1, 1, 1, 1]
    assert [children.get((0, r), 0) for r in range(8)] == [8, 3, 2, 1, 1, 1, 1, 1]
    assert [children.get(p, 0) for p in [(1, 0), (1, 1), (2, 0), (3, 0), (4, 0), (5, 0)]] == [2, 1, 1, 1, 1, 1]
    assert [children.get((0, 0, r), 0) for r in range(5)] == [5, 2, 1, 1, 1]
    assert [children.get(p, 0) for p in [(0, 1, 0), (0, 2, 0), (1, 0, 0), (2, 0, 0), (3, 0, 0)]] == [1] * 5
    assert [children.get((0, 0, 0, r), 0) for r in range(3)] == [3, 1, 1]
    assert [children.get(p, 0) for p in [(0, 0, 1, 0), (0, 1, 0, 0), (1, 0, 0, 0)]] == [1, 1, 1]
    assert children[(0, 0, 0, 0, 0)] == 2 and children[(0, 0, 0, 1, 0)] == 1
    assert sum(children.values()) == 80


def test_template_parents_depths_and_tree_mask():
    t = TreeTemplate.named("2.2.2")
    for i, path in enumerate(t.paths):
        parent = t.parents[i]
        assert t.depths[i] == len(path) and t.ranks[i] == path[-1]
        assert (parent == -1) if len(path) == 1 else t.paths[parent] == path[:-1]
    # as the verify forward lays it out: root + 80 nodes, each sees its ancestors and itself
    layout = TreeLayout((-1,) + tuple(p + 1 for p in t.parents))
    assert layout.depths() == [0] + list(t.depths)
    for i, seen in enumerate(layout.ancestors()[1:]):
        assert [t.paths[j - 1] for j in seen[1:]] == [t.paths[i][:d] for d in range(1, t.depths[i] + 1)]


def _subtree_shape(template, node):
    """Rank paths below ``node``, relative to it."""
    base = template.paths[node]
    return {p[len(base):] for p in template.paths if p[: len(base)] == base}


def test_earlier_siblings_cover_later_siblings_so_first_child_walk_equals_best_leaf_path():
    t = TreeTemplate.named("2.2.2")
    for parent in {-1, *t.parents}:
        siblings = [i for i, p in enumerate(t.parents) if p == parent]
        for earlier, later in zip(siblings, siblings[1:]):
            assert _subtree_shape(t, later) <= _subtree_shape(t, earlier)


def test_unknown_template_and_bad_topk_are_rejected():
    with pytest.raises(ValueError, match=r"decoder\.tree: must be one of"):
        TokenRecyclingDecoder(tree="9.9.9")
    with pytest.raises(ValueError, match=r"decoder\.topk: must be >= 8"):
        TokenRecyclingDecoder(topk=4)
    assert TokenRecyclingDecoder(topk=10).describe() == {"name": "recycling", "early_prefill": False,
                                                         "prefill_every_ms": 200.0, "topk": 10, "tree": "2.2.2",
                                                         "tree_nodes": 80,
                                                         "adjacency_matrix_scope": ADJACENCY_SCOPE}


# -------------------------------------------------------------------------------------- BFS gather


def test_bfs_gather_follows_the_adjacency_matrix_rank_by_rank():
    t = TreeTemplate.named("2.2.2")
    vocab = 97
    adjacency = ((torch.arange(vocab)[:, None] * 13 + torch.arange(8)[None, :] * 7 + 1) % vocab).int()
    tokens = gather_draft_tokens(adjacency, 5, t)
    for i, path in enumerate(t.paths):
        expected = 5
        for rank in path:
            expected = int(adjacency[expected, rank])
        assert tokens[i] == expected
    # a zero matrix drafts token 0 everywhere (the original's cold start)
    assert set(gather_draft_tokens(torch.zeros(vocab, 8, dtype=torch.int32), 5, t)) == {0}


def test_pruning_respects_the_chunk_room_and_terminators():
    t = TreeTemplate.named("2.2.2")
    terminators = {3}
    tokens = [3 if i in (0, 9) else 50 + i for i in range(len(t))]  # node 0 = rank path (0,), node 9 = (0, 1)
    kept = prune_to_chunk(t, tokens, room=6, terminators=terminators)
    assert all(t.parents[i] not in (0, 9) for i in kept) and 0 in kept and 9 not in kept  # 9 sits below 0
    assert len(prune_to_chunk(t, [1] * 80, room=2, terminators=terminators)) == 8 + 21
    assert prune_to_chunk(t, [1] * 80, room=0, terminators=terminators) == []
    tree = build_draft(t, tokens, kept)
    assert len(tree) == len(kept) and all(tree.tokens[p] not in terminators for p in tree.parents if p >= 0)


# ----------------------------------------------------------------------------------- matrix update


def fake_step(protocol, output=(), tail=(), vocab=120):
    inputs = ChunkInputs(head=[protocol.unit_open], tail=list(tail), audio=torch.zeros(10, 4))
    step = SimpleNamespace(output=list(output), inputs=inputs, protocol=protocol, counters=ChunkCounters(),
                           adapter=SimpleNamespace(vocab_size=vocab))
    step.root_token = lambda: ChunkStep.root_token(step)
    return step


def one_hot_rows(tokens_per_row, vocab=120):
    """Logits whose top-8 of row r are tokens_per_row[r] + 0..7 (in that order)."""
    logits = torch.zeros(len(tokens_per_row), vocab)
    for r, first in enumerate(tokens_per_row):
        logits[r, first : first + 8] = torch.arange(8, 0, -1, dtype=torch.float)
    return logits


def test_rows_refresh_root_and_every_node_with_the_accepted_path_last(fixture_adapter):
    protocol = fixture_adapter.protocol
    decoder = TokenRecyclingDecoder()
    step = fake_step(protocol, output=[protocol.speak, 40])
    draft = decoder.propose(step)  # cold matrix: every node drafts token 0
    assert draft.tokens == [0] * 80
    tree = DraftTree()
    tree.add_chain([50, 60]), tree.add_chain([60, 70])  # 60 sits at node 1 (below 50) and node 2 (below root)
    logits = one_hot_rows([10, 20, 30, 40, 50])
    decoder.observe(step, Verification([50, 60, 77], [0, 1], logits, tree))
    a = decoder.adjacency
    assert a[40].tolist() == list(range(10, 18))  # the root's row
    assert a[50].tolist() == list(range(20, 28))
    assert a[60].tolist() == list(range(30, 38))  # node 1 (accepted) wins over node 2 (rejected, later in BFS)
    assert a[70].tolist() == list(range(50, 58))  # rejected nodes are recycled too
    decoder.observe(step, Verification([60, 9], [2], logits, tree))
    assert a[60].tolist() == list(range(40, 48))  # now node 2 is the accepted one


def test_prefill_is_plain_unless_it_ends_with_tool_response_text(fixture_adapter):
    protocol = fixture_adapter.protocol
    decoder = TokenRecyclingDecoder()
    assert decoder.propose(fake_step(protocol)) is None
    decoder.observe(None, Verification([5], [], torch.zeros(1, 120), DraftTree()))
    assert decoder.adjacency is None  # nothing learned from an audio row
    tail = [protocol.tool_response_open, 60, protocol.tool_response_close]
    draft = decoder.propose(fake_step(protocol, tail=tail))
    assert len(draft) == 80
    decoder.observe(None, Verification([6], [], one_hot_rows([30] + [0] * 80), draft))
    assert decoder.adjacency[protocol.tool_response_close].tolist() == list(range(30, 38))


# ------------------------------------------------------------------------------ replay on the fixture


def replay(adapter, session, decoder, **sampling):
    return replay_session(adapter, session, decoder, injector=ToolCallInjector(ConstantToolExecutor()), **sampling)


SAMPLING = {"greedy": {}, "t0.9": {"temperature": 0.9, "seed": 11}}


@pytest.fixture(scope="module")
def ar_traces(fixture_adapter, small_manifest):
    sessions = load_manifest(small_manifest)
    return {mode: [replay(fixture_adapter, s, ARDecoder(), **kw) for s in sessions] for mode, kw in SAMPLING.items()}


@pytest.mark.parametrize("mode", list(SAMPLING))
def test_recycling_is_lossless_on_every_chunk(fixture_adapter, small_manifest, ar_traces, mode):
    decoder = TokenRecyclingDecoder()  # one instance for the run: the matrix carries across sessions
    saved = 0
    for session, ar in zip(load_manifest(small_manifest), ar_traces[mode]):
        trace = replay(fixture_adapter, session, decoder, **SAMPLING[mode])
        assert outputs(trace) == outputs(ar)
        assert len(trace.forwards) <= len(ar.forwards)
        saved += len(ar.forwards) - len(trace.forwards)
    assert saved > 0
    assert int((decoder.adjacency != 0).any(dim=1).sum()) > 10


def test_the_matrix_survives_session_starts(fixture_adapter, small_manifest):
    decoder = TokenRecyclingDecoder()
    first, second = load_manifest(small_manifest)[:2]
    replay(fixture_adapter, first, decoder)
    learned = decoder.adjacency.clone()
    decoder.start_session(second)
    assert decoder.adjacency is not None and torch.equal(decoder.adjacency, learned)


class FrozenRecycling(TokenRecyclingDecoder):
    """Keeps a given matrix for the whole replay (no row updates): adversarial drafts at every forward."""

    def __init__(self, adjacency):
        super().__init__()
        self.adjacency = adjacency

    def observe(self, step, result):
        pass


class RecordingRecycling(TokenRecyclingDecoder):
    def __init__(self, adjacency=None):
        super().__init__()
        self.adjacency = adjacency
        self.proposals = []

    def propose(self, step):
        tree = super().propose(step)
        self.proposals.append((len(step.output), bool(step.inputs.tail), tree))
        return tree


def true_successors(traces, vocab):
    """A matrix whose rank-0 successor of each token is what followed it in the AR outputs (last wins)."""
    adjacency = torch.randint(0, vocab, (vocab, 8), generator=torch.Generator().manual_seed(0)).int()
    for trace in traces:
        for chunk in trace.chunks:
            tokens = chunk.injected.tokens[-1:] + chunk.output
            for a, b in zip(tokens, tokens[1:]):
                adjacency[a, 1:] = adjacency[a, :-1].clone()
                adjacency[a, 0] = b
    return adjacency


def adversarial_matrix(kind, seed, vocab, protocol, traces):
    g = torch.Generator().manual_seed(seed)
    if kind == "random":
        return torch.randint(0, vocab, (vocab, 8), generator=g).int()
    if kind == "terminators":
        ids = torch.tensor(sorted(protocol.terminators))
        return ids[torch.randint(0, len(ids), (vocab, 8), generator=g)].int()
    if kind == "structural":
        ids = torch.tensor(sorted(protocol.structural() | protocol.terminators))
        return ids[torch.randint(0, len(ids), (vocab, 8), generator=g)].int()
    if kind == "constant":
        return torch.full((vocab, 8), seed % vocab, dtype=torch.int32)
    return true_successors(traces, vocab)


@settings(max_examples=16, deadline=None)
@given(kind=st.sampled_from(["random", "terminators", "structural", "constant", "true"]),
       seed=st.integers(0, 2**16), mode=st.sampled_from(list(SAMPLING)), frozen=st.booleans(),
       session_index=st.integers(0, 2))
def test_any_adjacency_matrix_leaves_the_output_unchanged(fixture_adapter, small_manifest, ar_traces, kind, seed,
                                                          mode, frozen, session_index):
    vocab = fixture_adapter.vocab_size
    ar = ar_traces[mode][session_index]
    adjacency = adversarial_matrix(kind, seed, vocab, fixture_adapter.protocol, ar_traces[mode])
    decoder = FrozenRecycling(adjacency) if frozen else RecordingRecycling(adjacency)
    trace = replay(fixture_adapter, load_manifest(small_manifest)[session_index], decoder, **SAMPLING[mode])
    assert outputs(trace) == outputs(ar)


def test_true_successors_cut_the_forwards(fixture_adapter, small_manifest, ar_traces):
    ar = ar_traces["t0.9"][0]
    decoder = FrozenRecycling(true_successors([ar], fixture_adapter.vocab_size))
    trace = replay(fixture_adapter, load_manifest(small_manifest)[0], decoder, **SAMPLING["t0.9"])
    assert outputs(trace) == outputs(ar)
    assert len(trace.forwards) < 0.6 * len(ar.forwards)


@pytest.mark.parametrize("kind", ["terminators", "true"])
def test_drafts_never_cross_the_chunk(fixture_adapter, small_manifest, ar_traces, kind):
    protocol = fixture_adapter.protocol
    session = load_manifest(small_manifest)[0]
    adjacency = adversarial_matrix(kind, 1, fixture_adapter.vocab_size, protocol, ar_traces["t0.9"])
    decoder = RecordingRecycling(adjacency)
    replay(fixture_adapter, session, decoder, **SAMPLING["t0.9"])
    drafted_prefills = 0
    for committed, has_tail, tree in decoder.proposals:
        if tree is None:
            assert committed == 0 and not has_tail  # only a prefill ending in audio is plain
            continue
        drafted_prefills += committed == 0
        room = protocol.max_tokens_per_chunk - committed - 1
        depths = TreeLayout(tuple(tree.parents)).depths()
        assert all(d + 1 <= room for d in depths)
        assert all(p < 0 or tree.tokens[p] not in protocol.terminators for p in tree.parents)
    assert drafted_prefills > 0  # prefills ending in a tool response drafted from its last token
