"""encode_many: several sessions' audio encodings in one front-end call, each ending as if encoded alone.

The batched convolutions and matmuls of the embedded model's front-end (oneDNN on the CPU) choose other kernels
for other shapes, so batched embeddings equal one-at-a-time ones up to the last float bits, not exactly (measured:
at most about 5e-6 on LayerNorm outputs of order 1); they are compared with ``torch.allclose(atol=1e-5)``. Shapes
and front-end states (samples not yet framed, mel frames kept) are compared exactly.
"""

import copy

import numpy as np
import pytest
import torch

from ticktock.adapters.fixture import build_fixture_adapter

from helpers import speech_like

ATOL = 1e-5
# Samples per session, round by round: a 1.035 s first chunk, 1 s chunks, 0.3 s and 0.1 s pieces, pieces that leave
# samples for the next call, and pieces too short for a whole 100 ms frame group (empty embeddings).
ROUNDS = [
    [16560, 16000, 4800, 1600, 16037, 700, 9999, 16000],
    [16000, 4800, 16000, 16000, 1600, 16000, 300, 8123],
    [1600, 16000, 16000, 4800, 16000, 1600, 16000, 16000],
]
# Which calls are peeks (hypotheses), round by round (session i uses PEEKS[r][i]).
PEEKS = [
    [False, True, False, False, True, False, False, True],
    [True, False, False, True, False, False, True, False],
    [False, False, True, False, False, True, False, False],
]


def session_audio(index: int, seconds: float = 4.0) -> np.ndarray:
    """Different audio per session: speech-like bursts, noise at another level, or digital silence."""
    rng = np.random.default_rng(100 + index)
    if index % 4 == 0:
        return speech_like(seconds, [(0.2, 1.4), (2.0, 3.1)], seed=index)
    if index % 4 == 1:
        return (rng.normal(0, 0.02 * index, int(seconds * 16000))).astype(np.float32)
    if index % 4 == 2:
        return np.zeros(int(seconds * 16000), dtype=np.float32)
    return (0.3 * speech_like(seconds, [(0.0, 2.5)], seed=index) + rng.normal(0, 0.005, int(seconds * 16000))).astype(np.float32)


def pieces(batch: int, round_: int) -> list[np.ndarray]:
    """Each session's samples for one round: the next stretch of that session's own audio."""
    out = []
    for i in range(batch):
        start = sum(ROUNDS[r][i] for r in range(round_))
        out.append(session_audio(i)[start:start + ROUNDS[round_][i]])
    return out


def assert_states_equal(a, b):
    for name in a.__dataclass_fields__:
        left, right = getattr(a, name), getattr(b, name)
        assert left.shape == right.shape and torch.equal(left, right), name


def assert_embeddings_close(batched, single):
    assert [tuple(e.shape) for e in batched] == [tuple(e.shape) for e in single]
    for b, s in zip(batched, single):
        assert b.dtype == s.dtype and torch.allclose(b, s, atol=ATOL)


def stack_calls(frontend):
    """The input shapes of every call of a front-end's first projection (one per ``embed_frames``/encode)."""
    module = frontend.stack if hasattr(frontend, "stack") else frontend.project
    shapes = []
    handle = module.register_forward_pre_hook(lambda m, args: shapes.append(tuple(args[0].shape)))
    return shapes, handle


@pytest.fixture(scope="module")
def fixture_frontend():
    return build_fixture_adapter(seed=0).frontend


@pytest.fixture(params=["embedded", "fixture"])
def frontend(request, embedded_adapter, fixture_frontend):
    return embedded_adapter.frontend if request.param == "embedded" else fixture_frontend


# ----------------------------------------------------------------------------------------- bare front-ends


@pytest.mark.parametrize("batch", [1, 2, 4, 8])
@torch.inference_mode()
def test_frontend_encode_many_equals_encode_alone_round_after_round(frontend, batch):
    batched_states = [frontend.initial_state() for _ in range(batch)]
    single_states = list(batched_states)
    for round_ in range(len(ROUNDS)):
        audio = [torch.as_tensor(x) for x in pieces(batch, round_)]
        shapes, handle = stack_calls(frontend)
        try:
            results = frontend.encode_many(audio, batched_states)
        finally:
            handle.remove()
        assert len(shapes) == 1  # one projection for every session
        single = [frontend.encode(x, state) for x, state in zip(audio, single_states)]
        assert_embeddings_close([e for e, _ in results], [e for e, _ in single])
        for (_, b), (_, s) in zip(results, single):
            assert_states_equal(b, s)
        batched_states = [state for _, state in results]
        single_states = [state for _, state in single]


@torch.inference_mode()
def test_a_session_without_a_whole_frame_group_gets_empty_embeddings(frontend):
    hidden = frontend.project.out_features
    states = [frontend.initial_state()] * 3
    results = frontend.encode_many([torch.zeros(100), torch.zeros(16000), torch.zeros(300)], states)
    assert [tuple(e.shape) for e, _ in results] == [(0, hidden), (10, hidden), (0, hidden)]
    nothing = frontend.encode_many([torch.zeros(100), torch.zeros(300)], states[:2])
    assert [tuple(e.shape) for e, _ in nothing] == [(0, hidden), (0, hidden)]
    for (_, b), (_, s) in zip(nothing, [frontend.encode(torch.zeros(n), states[0]) for n in (100, 300)]):
        assert_states_equal(b, s)  # the samples are carried all the same


def test_right_padding_changes_no_kept_embedding(embedded_adapter):
    """The padding argument itself: a row's kept embeddings do not read its right padding (causal, valid
    convolutions: padding only adds outputs after the last one): whatever the padding holds, they are bit for bit
    the same, and equal to the unpadded row's up to the kernels' last bits."""
    fe = embedded_adapter.frontend
    mel, count, _ = fe.frames_to_embed(torch.as_tensor(session_audio(0)[:16000]), fe.initial_state())
    with torch.inference_mode():
        plain = fe.embed_frames(mel[None])[0]
        kept = []
        for fill in (0.0, 50.0, -50.0):
            padded = torch.cat([mel, torch.full((3 * fe.group, fe.n_mels), fill)])
            out = fe.embed_frames(padded[None])[0]
            assert out.shape[0] == count + 3
            kept.append(out[:count])
    assert all(torch.equal(k, kept[0]) for k in kept)
    assert torch.allclose(kept[0], plain, atol=ATOL)


# ----------------------------------------------------------------------------------- through the adapter


def started_replicas(adapter, batch):
    replicas = [adapter.replica() for _ in range(batch)]
    for r in replicas:
        r.start_session(None, [])
    return replicas


@pytest.mark.parametrize("batch", [1, 2, 4, 8])
def test_replicas_encode_many_equals_encode_and_peek_alone(embedded_adapter, batch):
    batched, single = started_replicas(embedded_adapter, batch), started_replicas(embedded_adapter, batch)
    for round_ in range(len(ROUNDS)):
        audio, peeks = pieces(batch, round_), PEEKS[round_][:batch]
        before = [r.frontend_state for r in batched]
        shapes, handle = stack_calls(embedded_adapter.frontend)
        try:
            got = embedded_adapter.encode_many([(r, x, peek) for r, x, peek in zip(batched, audio, peeks)])
        finally:
            handle.remove()
        assert len(shapes) == 1 and (batch == 1 or shapes[0][0] == batch)  # one front-end call, B rows
        expected = [r.peek_audio(x) if peek else r.encode_audio(x) for r, x, peek in zip(single, audio, peeks)]
        assert_embeddings_close(got, expected)
        assert all(e.device == embedded_adapter.device and e.dtype == embedded_adapter.dtype for e in got)
        for r, s, old, peek in zip(batched, single, before, peeks):
            assert_states_equal(r.frontend_state, s.frontend_state)
            assert (r.frontend_state is old) == peek  # a peek leaves the state as it was


def test_replicas_of_another_frontend_object_fall_back_to_one_after_another(embedded_adapter):
    other = embedded_adapter.replica()
    other.frontend = copy.deepcopy(embedded_adapter.frontend)  # equal weights, another object
    batched = started_replicas(embedded_adapter, 2) + started_replicas(other, 1)
    single = started_replicas(embedded_adapter, 2) + started_replicas(other, 1)
    audio, peeks = pieces(3, 0), [False, True, False]
    shapes, handle = stack_calls(embedded_adapter.frontend)
    try:
        got = embedded_adapter.encode_many([(r, x, peek) for r, x, peek in zip(batched, audio, peeks)])
    finally:
        handle.remove()
    assert len(shapes) == 2 and all(len(shape) == 2 for shape in shapes)  # each of its own sessions alone
    expected = [r.peek_audio(x) if peek else r.encode_audio(x) for r, x, peek in zip(single, audio, peeks)]
    assert all(torch.equal(g, e) for g, e in zip(got, expected))
    for r, s in zip(batched, single):
        assert_states_equal(r.frontend_state, s.frontend_state)


def test_a_call_after_its_own_sessions_advance_sees_the_advanced_state(embedded_adapter):
    """(a, x, advance) then (a, y, ...): y is encoded after x, as one after another would; no batch reads a stale
    state."""
    [a], [reference] = started_replicas(embedded_adapter, 1), started_replicas(embedded_adapter, 1)
    [b], [reference_b] = started_replicas(embedded_adapter, 1), started_replicas(embedded_adapter, 1)
    x, y = session_audio(0)[:16560], session_audio(0)[16560:32560]
    got = embedded_adapter.encode_many([(a, x, False), (b, x, True), (a, y, True), (a, y, False)])
    expected = [reference.encode_audio(x), reference_b.peek_audio(x), reference.peek_audio(y), reference.encode_audio(y)]
    assert all(torch.equal(g, e) for g, e in zip(got, expected))
    assert_states_equal(a.frontend_state, reference.frontend_state)


def miniature_adapter(kind, miniatures):
    """A real model's adapter on its miniature checkpoint (fp32, CPU)."""
    if kind == "minicpmo45":
        from ticktock.adapters.minicpmo import load_minicpmo_adapter

        return load_minicpmo_adapter(path=str(miniatures["minicpmo45"]), device="cpu")
    from ticktock.adapters.qwen_omni import load_streaming_slm_adapter

    return load_streaming_slm_adapter(str(miniatures["streaming_slm"]))


@pytest.mark.parametrize("kind", ["minicpmo45", "qwen_omni"])
def test_the_default_is_one_after_another_for_front_ends_that_cannot_batch(kind, miniatures):
    """MiniCPM-o's streaming encoder and Qwen-Omni's chunk encoder have no ``encode_many``: their replicas take the
    default, equal to encode_audio / peek_audio alone (exactly: the same calls), front-end states included."""
    adapter = miniature_adapter(kind, miniatures)
    assert not hasattr(adapter.frontend, "encode_many")
    batched, single = started_replicas(adapter, 3), started_replicas(adapter, 3)
    for round_ in range(2):
        audio, peeks = pieces(3, round_), PEEKS[round_][:3]
        before = [r.frontend_state for r in batched]
        got = adapter.encode_many([(r, x, peek) for r, x, peek in zip(batched, audio, peeks)])
        expected = [r.peek_audio(x) if peek else r.encode_audio(x) for r, x, peek in zip(single, audio, peeks)]
        assert [tuple(g.shape) for g in got] == [tuple(e.shape) for e in expected]
        assert all(torch.equal(g, e) for g, e in zip(got, expected))
        assert all(r.frontend_state is old for r, old, peek in zip(batched, before, peeks) if peek)
