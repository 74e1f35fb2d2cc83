import random
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
from ticktock.decoders.lookahead import JacobiWindow, LookaheadDecoder, NgramPool
from ticktock.decoders.selection import Sampling
from ticktock.world.injection import ToolCallInjector
from ticktock.sessions.manifest import load_manifest

from helpers import ConstantToolExecutor, outputs
from helpers import replay as replay_session

# ------------------------------------------------------------------------------------------- pool


def test_pool_keeps_g_ngrams_per_key_least_recently_inserted_first():
    pool = NgramPool(capacity=3)
    for ngram in [(1, 1), (2, 2), (3, 3)]:
        pool.add(7, ngram)
    pool.add(7, (1, 1))  # re-inserted: moves to the back, nothing dropped
    assert pool.candidates(7) == [(2, 2), (3, 3), (1, 1)]
    pool.add(7, (4, 4))  # overflow: the front (oldest) falls out
    assert pool.candidates(7) == [(3, 3), (1, 1), (4, 4)]
    pool.add(8, (5, 5))  # capacity is per key
    assert pool.candidates(8) == [(5, 5)] and len(pool.candidates(7)) == 3
    assert pool.candidates(9) == []


# ----------------------------------------------------------------------------------------- window


def window_stages(level, width):
    """The window before each of its first forwards: warm-up stages, then two steady ones."""
    window = JacobiWindow(level, width, list(range(100, 100 + width + level - 3)))
    stages, fresh = [], 200
    for _ in range(level):
        stages.append([list(lvl) for lvl in window.levels])
        newest = len(window.levels[-1])
        window.advance(list(range(fresh, fresh + newest)))
        fresh += 100
    return stages


@pytest.mark.parametrize("level,width", [(3, 1), (3, 2), (4, 3), (5, 7), (6, 4)])
def test_window_tree_gives_the_lookahead_positions_and_mask(level, width):
    for levels in window_stages(level, width):
        window = JacobiWindow(level, width, [0] * (width + level - 3))
        window.levels = levels
        tree = DraftTree()
        nodes = window.add_to(tree)
        assert not any(tree.verifiable)
        # the verify forward: root (x0) at query 0, node i at query 1 + i
        layout = TreeLayout((-1,) + tuple(p + 1 for p in tree.parents))
        depths, seen = layout.depths(), layout.ancestors()
        b0 = [0] + [1 + n for n in nodes[0]]  # B0 = [x0] + L0, column j <-> position p + j
        for j, query in enumerate(b0):
            assert depths[query] == j and seen[query] == b0[: j + 1]  # causal within B0
        for lvl in range(1, len(levels)):
            assert len(nodes[lvl]) == len(b0)  # every level spans the B0 columns
            for j, node in enumerate(nodes[lvl]):
                query = 1 + node
                assert tree.tokens[node] == levels[lvl][j]
                assert depths[query] == lvl + j  # position p + l + j
                column = [1 + nodes[m][j] for m in range(1, lvl + 1)]
                assert sorted(seen[query]) == sorted(b0[: j + 1] + column)  # B0[0..j] + column j of levels 1..l


def test_window_nodes_of_a_small_steady_window():
    window = JacobiWindow(level=4, width=3, initial=[0] * 4)
    window.levels = [[10, 11], [20, 21, 22], [30, 31, 32]]  # L0, L1, L2
    tree = DraftTree()
    assert window.add_to(tree) == [[0, 1], [2, 3, 4], [5, 6, 7]]
    assert tree.tokens == [10, 11, 20, 21, 22, 30, 31, 32]
    # L0 is a chain from the root; L1 column j hangs off B0 column j (the root for j = 0); L2 off L1
    assert tree.parents == [-1, 0, -1, 0, 1, 2, 3, 4]
    assert [d + 1 for d in TreeLayout(tuple(tree.parents)).depths()] == [1, 2, 1, 2, 3, 2, 3, 4]


@pytest.mark.parametrize("level,width", [(3, 1), (4, 3), (5, 7)])
def test_warm_up_takes_n_minus_2_forwards_and_leaves_the_steady_sizes(level, width):
    stages = window_stages(level, width)
    assert [len(s) for s in stages[: level - 1]] == list(range(1, level))  # one level added per forward
    for steady in stages[level - 2 :]:
        assert [len(lvl) for lvl in steady] == [width - 1] + [width] * (level - 2)


def test_steady_state_ngrams_and_shift_follow_the_original():
    a, b, c, d = [10, 11, 12, 13], [20, 21, 22, 23], [30, 31, 32, 33], [40, 41, 42]
    window = JacobiWindow(level=4, width=3, initial=a)
    window.advance(b)  # warm-up 1: level 1 = predictions at every L0 token
    assert window.levels == [a[1:], b] and not window.is_full
    window.advance(c)  # warm-up 2: drop the first of every level, new level = predictions[1:]
    assert window.levels == [a[2:], b[1:], c[1:]] and window.is_full
    assert window.ngrams(root=5, predictions=d) == [(5, (21, 31, 40)), (12, (22, 32, 41)), (13, (23, 33, 42))]
    assert window.ngrams(root=None, predictions=d)[0] == (12, (22, 32, 41))  # audio root: column 0 skipped
    window.advance(d)  # steady: L0 <- L1[1:], L1 <- L2, L2 <- new
    assert window.levels == [b[2:], c[1:], d]


# ------------------------------------------------------------------------------------- candidates


def fake_step(protocol, output=(), tail=(), history=(7, 8, 9)):
    inputs = ChunkInputs(head=[protocol.unit_open], tail=list(tail), audio=torch.zeros(10, 4))
    step = SimpleNamespace(output=list(output), inputs=inputs, protocol=protocol, counters=ChunkCounters(),
                           adapter=SimpleNamespace(vocab_size=120),
                           context_tokens=lambda: list(history) + list(output))
    step.root_token = lambda: ChunkStep.root_token(step)
    return step


def full_decoder(level=5, width=3, **knobs):
    decoder = LookaheadDecoder(level=level, window=width, guess=4, **knobs)
    decoder.window = JacobiWindow(level, width, [100] * (width + level - 3))
    decoder.window.levels = [[100] * (width - 1)] + [[101] * width for _ in range(level - 2)]
    return decoder


def verifiable_chains(tree):
    """Root-to-node token paths of every verifiable node."""
    paths = []
    for i, ok in enumerate(tree.verifiable):
        if ok:
            path, node = [], i
            while node >= 0:
                assert tree.verifiable[node]
                path.insert(0, tree.tokens[node])
                node = tree.parents[node]
            paths.append(path)
    return paths


def test_guesses_for_the_root_are_merged_chains_cut_at_terminators_and_room(fixture_adapter):
    protocol = fixture_adapter.protocol
    decoder = full_decoder()
    for ngram in [(41, 42, 43, 44), (41, 42, 50, 51), (protocol.chunk_eos, 60, 61, 62), (70, 71, 72, 73)]:
        decoder.pool.add(40 if ngram[0] != 70 else 39, ngram)
    step = fake_step(protocol, output=[protocol.speak, 40])
    tree = decoder.propose(step)
    chains = verifiable_chains(tree)
    assert sorted(map(tuple, chains)) == sorted([(41,), (41, 42), (41, 42, 43), (41, 42, 43, 44), (41, 42, 50),
                                                 (41, 42, 50, 51), (protocol.chunk_eos,)])
    assert tree.num_verifiable() == 7  # the shared prefix 41, 42 is fed once
    near_end = [protocol.tool_call_open] + [50] * (protocol.max_tokens_per_chunk - 5) + [40]  # room: 2 drafts
    tree = decoder.propose(fake_step(protocol, output=near_end))
    assert sorted(map(tuple, verifiable_chains(tree))) == sorted([(41,), (41, 42), (protocol.chunk_eos,)])


def test_no_guesses_while_warming_up_or_from_an_audio_root(fixture_adapter):
    protocol = fixture_adapter.protocol
    decoder = LookaheadDecoder(level=5, window=3, guess=4)
    decoder.pool.add(40, (41, 42, 43, 44))
    tree = decoder.propose(fake_step(protocol, output=[protocol.speak, 40]))
    assert not decoder.window.is_full and tree.num_verifiable() == 0
    decoder = full_decoder()
    decoder.pool.add(protocol.unit_open, (41, 42, 43, 44))
    assert decoder.propose(fake_step(protocol)).num_verifiable() == 0  # prefill ending in audio: window only
    decoder.pool.add(protocol.tool_response_close, (5, 6, 7, 8))
    tail = [protocol.tool_response_open, 60, protocol.tool_response_close]
    tree = decoder.propose(fake_step(protocol, tail=tail))
    assert verifiable_chains(tree) == [[5]]  # <|listen|> is a terminator: the guess stops there


def test_observe_feeds_the_pool_and_shifts_the_window(fixture_adapter):
    protocol = fixture_adapter.protocol
    decoder = full_decoder(level=3, width=2)  # L0 = [100], L1 = [101, 101]
    tree = decoder.propose(fake_step(protocol, output=[protocol.speak, 40]))
    logits = torch.zeros(1 + len(tree), 120)
    last_level = [1 + n for n in decoder._window_nodes[-1]]
    logits[last_level[0], 70] = logits[last_level[1], 71] = 1.0
    decoder.observe(None, Verification([9], [], logits, tree))
    assert decoder.pool.candidates(40) == [(101, 70)] and decoder.pool.candidates(100) == [(101, 71)]
    assert decoder.window.levels == [[101], [70, 71]]


def test_window_is_drawn_from_the_context_with_the_seed(fixture_adapter):
    protocol = fixture_adapter.protocol
    history = list(range(30, 60))
    decoder = LookaheadDecoder(seed=3)
    decoder.propose(fake_step(protocol, history=history))
    rng = random.Random(3)
    assert decoder.window.levels[0] == [rng.choice(history) for _ in range(7 + 5 - 3)]
    first = decoder.window.levels[0]
    decoder.start_session(None)  # a new session draws its window again, with the same seed
    assert decoder.window is None
    decoder.propose(fake_step(protocol, history=history))
    assert decoder.window.levels[0] == first


@pytest.mark.parametrize("knobs", [{"level": 2}, {"window": 0}, {"guess": 0}, {"seed": 1.5}, {"level": "5"},
                                   {"lade_commit": 1}])
def test_bad_knobs_are_rejected(knobs):
    with pytest.raises(ValueError, match=r"decoder\.(level|window|guess|seed|lade_commit)"):
        LookaheadDecoder(**knobs)


# ------------------------------------------------------------------------------ replay on the fixture


def replay(adapter, session, decoder, **sampling):
    return replay_session(adapter, session, decoder, injector=ToolCallInjector(ConstantToolExecutor()), **sampling)


SAMPLING = {"greedy": {}, "t0.9": {"temperature": 0.9, "seed": 11}}


@pytest.fixture(scope="module")
def ar_traces(fixture_adapter, small_manifest):
    sessions = load_manifest(small_manifest)
    return {mode: [replay(fixture_adapter, s, ARDecoder(), **kw) for s in sessions] for mode, kw in SAMPLING.items()}


class RecordingLookahead(LookaheadDecoder):
    def __init__(self, **knobs):
        super().__init__(**knobs)
        self.proposals = []

    def propose(self, step):
        tree = super().propose(step)
        self.proposals.append((len(step.output), self.window.is_full, tree))
        return tree


@pytest.mark.parametrize("mode", list(SAMPLING))
def test_lookahead_is_lossless_on_every_chunk(fixture_adapter, small_manifest, ar_traces, mode):
    decoder = RecordingLookahead()  # one instance for the run, as the harness uses it
    for session, ar in zip(load_manifest(small_manifest), ar_traces[mode]):
        trace = replay(fixture_adapter, session, decoder, **SAMPLING[mode])
        assert outputs(trace) == outputs(ar)
        assert len(trace.forwards) <= len(ar.forwards)
    # the window warms up once per session (N-2 forwards), not once per chunk
    assert sum(not full for _, full, _ in decoder.proposals) == 3 * (5 - 2)


class FixedPoolLookahead(RecordingLookahead):
    """Verifies a given pool at every forward and never learns (adversarial guesses throughout)."""

    def __init__(self, entries, **knobs):
        self.entries = entries
        super().__init__(**knobs)

    def start_session(self, session):
        super().start_session(session)
        self.pool = FixedPool(self.settings.guess, self.entries)


class FixedPool(NgramPool):
    def __init__(self, capacity, entries):
        super().__init__(capacity)
        self.entries = entries

    def add(self, key, ngram):
        pass


def true_ngrams(traces, n):
    """key -> the (n-1)-grams that followed it in the AR outputs (a tool response's last token included)."""
    entries = {}
    for trace in traces:
        for chunk in trace.chunks:
            tokens = chunk.injected.tokens[-1:] + chunk.output
            for i, key in enumerate(tokens[:-1]):
                entries.setdefault(key, []).append(tuple(tokens[i + 1 : i + n]))
    return {key: ngrams[-7:] for key, ngrams in entries.items()}


def adversarial_pool(kind, seed, vocab, protocol, traces, n=5, g=7):
    rng = random.Random(seed)
    if kind == "true":
        return true_ngrams(traces, n)
    if kind == "random":
        ids = list(range(vocab))
    elif kind == "terminators":
        ids = sorted(protocol.terminators)
    else:  # structural tokens, terminators and the decisions only
        ids = sorted(protocol.structural() | protocol.terminators)
    return {key: [tuple(rng.choice(ids) for _ in range(n - 1)) for _ in range(g)] for key in range(vocab)}


@settings(max_examples=16, deadline=None)
@given(kind=st.sampled_from(["random", "terminators", "structural", "true"]), seed=st.integers(0, 2**16),
       mode=st.sampled_from(list(SAMPLING)), fixed=st.booleans(), session_index=st.integers(0, 2),
       lade=st.booleans())
def test_any_pool_or_window_leaves_the_output_unchanged(fixture_adapter, small_manifest, ar_traces, kind, seed,
                                                        mode, fixed, session_index, lade):
    ar = ar_traces[mode][session_index]
    if fixed:
        entries = adversarial_pool(kind, seed, fixture_adapter.vocab_size, fixture_adapter.protocol, ar_traces[mode])
        decoder = FixedPoolLookahead(entries, seed=seed, lade_commit=lade)
    else:
        decoder = RecordingLookahead(seed=seed, level=3 + seed % 3, window=1 + seed % 7, lade_commit=lade)
    trace = replay(fixture_adapter, load_manifest(small_manifest)[session_index], decoder, **SAMPLING[mode])
    assert outputs(trace) == outputs(ar)


def test_true_ngrams_cut_the_forwards(fixture_adapter, small_manifest, ar_traces):
    ar = ar_traces["t0.9"][0]
    decoder = FixedPoolLookahead(true_ngrams([ar], 5))
    trace = replay(fixture_adapter, load_manifest(small_manifest)[0], decoder, **SAMPLING["t0.9"])
    assert outputs(trace) == outputs(ar)
    assert len(trace.forwards) < 0.6 * len(ar.forwards)
    assert sum(c.counters.lookup_hits for c in trace.chunks) > 0
    assert sum(c.counters.accepted_draft_tokens for c in trace.chunks) > 0


@pytest.mark.parametrize("kind", ["terminators", "true"])
def test_guesses_never_cross_the_chunk(fixture_adapter, small_manifest, ar_traces, kind):
    protocol = fixture_adapter.protocol
    entries = adversarial_pool(kind, 1, fixture_adapter.vocab_size, protocol, ar_traces["t0.9"])
    decoder = FixedPoolLookahead(entries)
    replay(fixture_adapter, load_manifest(small_manifest)[0], decoder, **SAMPLING["t0.9"])
    guessed = 0
    for committed, _, tree in decoder.proposals:
        room = protocol.max_tokens_per_chunk - committed - 1
        for chain in verifiable_chains(tree):
            guessed += 1
            assert len(chain) <= room
            assert not any(t in protocol.terminators for t in chain[:-1])
    assert guessed > 0


# ----------------------------------------------------------------------- LADE's commit rule (lade_commit)


def lade_hits(guesses, target):
    """The tokens LADE's greedy verification commits (hao-ai-lab/LookaheadDecoding,
    ``jacobi_greedy_search_multilevel``, re-described): per guess, the match length stops at the first mismatch
    or else at the last position; the longest wins. ``target(path)`` = the target's argmax after root + path."""
    hits, best = [target(())], 0
    for guess in guesses:  # pool order, oldest first; the first candidate wins ties
        correct = [target(())] + [target(tuple(guess[: t + 1])) for t in range(len(guess))]
        matched = next((t for t in range(len(guess)) if guess[t] != correct[t]), len(guess) - 1)  # at most N-2
        if matched > best:
            best, hits = matched, correct[: matched + 1]
    return hits


def standard_hits(guesses, target):
    """Our rule: the longest matching prefix over the guesses, plus the target's token after it."""
    best = []
    for guess in guesses:
        matched = []
        for token in guess:
            if token != target(tuple(matched)):
                break
            matched.append(token)
        best = max(best, matched, key=len)
    return best + [target(tuple(best))]


def walk(protocol, decoder, guesses, truth, vocab=120):
    """Propose for root 40 with ``guesses`` in the pool, give every tree node the logits of a target whose
    greedy continuation after the root is ``truth`` (anything else: token 99 next), run the real verify walk.
    Returns (committed tokens, accepted nodes, target, tree)."""
    def target(path):
        return truth[len(path)] if list(path) == list(truth[: len(path)]) else 99

    for guess in guesses:
        decoder.pool.add(40, tuple(guess))
    step = fake_step(protocol, output=[protocol.speak, 40])
    tree = decoder.propose(step)
    logits = torch.zeros(1 + len(tree), vocab)
    logits[0, target(())] = 1.0
    for node in range(len(tree)):
        path, up = [], node
        while up >= 0:
            path.insert(0, tree.tokens[up])
            up = tree.parents[up]
        logits[1 + node, target(path)] = 1.0
    step.selector = Sampling().selector(protocol, "s", tools_enabled=False)
    step.chunk_index = 0
    committed, accepted = ChunkStep._walk(step, logits, tree)
    return committed, accepted, target, tree


def test_full_match_commits_n_tokens_by_default_and_n_minus_1_under_lade_commit(fixture_adapter):
    protocol, truth = fixture_adapter.protocol, [41, 42, 43, 44, 45]
    committed, accepted, _, tree = walk(protocol, full_decoder(level=5), [(41, 42, 43, 44)], truth)
    assert committed == [41, 42, 43, 44, 45] and len(accepted) == 4  # N = 5: 4 drafts + the target's token
    lade = full_decoder(level=5, lade_commit=True)
    committed, accepted, _, lade_tree = walk(protocol, lade, [(41, 42, 43, 44)], truth)
    assert committed == [41, 42, 43, 44] and len(accepted) == 3  # N - 1 = 4, as LADE: 44 is the target's token
    # ChunkStep.verify keeps the root and the 3 accepted drafts in the cache (LADE: kvcache_len + max_hit) and
    # the last committed token, 44, is fed next (LADE: hits[max_hit])
    assert len(committed) == len(accepted) + 1
    # the last guess token still rides in the forward: the same query tokens, one fewer that can be accepted
    assert len(lade_tree) == len(tree) and lade_tree.num_verifiable() == tree.num_verifiable() - 1
    assert [lade_tree.tokens[n] for n, ok in enumerate(lade_tree.verifiable) if not ok][-1] == 44
    # LADE's match loop ends at the last token whether it matches or not: a guess right up to it commits N-1 too
    committed, _, target, _ = walk(protocol, full_decoder(level=5, lade_commit=True), [(41, 42, 43, 70)], truth)
    assert committed == [41, 42, 43, 44] == lade_hits([(41, 42, 43, 70)], target)


@settings(max_examples=60, deadline=None)
@given(level=st.integers(3, 6), truth=st.lists(st.integers(41, 43), min_size=6, max_size=6),
       guesses=st.lists(st.lists(st.integers(41, 43), min_size=5, max_size=5), min_size=1, max_size=4))
def test_the_walk_commits_what_each_rule_commits(fixture_adapter, level, truth, guesses):
    protocol = fixture_adapter.protocol
    guesses = list(dict.fromkeys(tuple(g[: level - 1]) for g in guesses))  # N-1 tokens each, distinct (as the pool)
    for lade, reference in ((False, standard_hits), (True, lade_hits)):
        committed, accepted, target, _ = walk(protocol, full_decoder(level=level, lade_commit=lade), guesses, truth)
        assert committed == reference(guesses, target)
        assert len(committed) <= (level - 1 if lade else level)


def test_lade_commit_is_lossless_and_commits_at_most_n_minus_1_per_forward(fixture_adapter, small_manifest, ar_traces):
    """True n-grams in the pool: full matches happen (in the sampled outputs; the fixture's greedy chunks are at
    most 3 tokens long); each rule's per-forward maximum is what it allows."""
    most = {}
    for lade in (False, True):
        for mode in SAMPLING:
            ar = ar_traces[mode]
            decoder = FixedPoolLookahead(true_ngrams(ar, 5), lade_commit=lade)
            traces = [replay(fixture_adapter, s, decoder, **SAMPLING[mode]) for s in load_manifest(small_manifest)]
            assert [outputs(t) for t in traces] == [outputs(t) for t in ar]
            most[lade, mode] = max(f.tokens_committed for t in traces for f in t.forwards)
    assert most[False, "t0.9"] == 5 and most[True, "t0.9"] == 4 and most[True, "greedy"] <= 4


def test_lade_commit_is_lossless_on_the_embedded_model(embedded_adapter):
    """The shipped config with ``decoder.lade_commit=true`` (as a Hydra override), fp32, real corpus chunks."""
    from ticktock.shipped import resource_path
    from ticktock.replay.config import build, compose_run
    from ticktock.world.mock_tools import MockToolExecutor

    decoder = build(compose_run("lookahead", "embedded", None, ["decoder.lade_commit=true"]).decoder)
    assert decoder.settings.lade_commit
    session = load_manifest(resource_path("manifests/ticktock-mini/manifest.jsonl"), tasks=["fdb_v1_5"])[0]
    injector = ToolCallInjector(MockToolExecutor())
    lade = replay_session(embedded_adapter, session, decoder, injector=injector, max_chunks=16)
    ar = replay_session(embedded_adapter, session, ARDecoder(), injector=injector, max_chunks=16)
    assert outputs(lade) == outputs(ar)
    assert sum(c.counters.accepted_draft_tokens for c in lade.chunks) > 0
    assert max(f.tokens_committed for f in lade.forwards) <= 5 - 1
