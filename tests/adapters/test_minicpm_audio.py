"""MiniCPM-o 4.5 streaming audio front-end: geometry, streaming == one-shot, exact rollback, state dependence.

A tiny random Whisper (d_model 32, 2 layers) in fp32 with eager attention, on a 36.5 s session of seeded
speech-like audio: loud for the first 10 s, then quieter, so the dynamic floor changes when the 30 s mel
buffer slides at chunk 29 (the same chunk where the 29-unit encoder reset happens).
"""

import dataclasses
import math

import pytest
import torch

from ticktock.adapters.minicpm_audio import MiniCPMAudioFrontend, block_causal_mask

TINY_AUDIO_CONFIG = dict(d_model=32, encoder_layers=2, encoder_attention_heads=2, encoder_ffn_dim=128,
                         num_mel_bins=80, max_source_positions=1500)
LLM_HIDDEN = 48
SESSION_SECONDS = 36.5  # 37 chunks of 1 s, the last one short
ONE_SHOT_TOLERANCE = 1e-5  # fp32: streaming vs block-causal one-shot differ only by summation order


def build_frontend(seed: int = 0) -> MiniCPMAudioFrontend:
    torch.manual_seed(seed)
    return MiniCPMAudioFrontend(TINY_AUDIO_CONFIG, LLM_HIDDEN, attn_implementation="eager").eval()


def speech_like(seconds: float, seed: int = 0) -> torch.Tensor:
    """Syllable-like harmonic bursts with noise and pauses: loud (0.3) for 10 s, then 0.05, then 0.01."""
    gen = torch.Generator().manual_seed(seed)
    n = int(seconds * 16000)
    t = torch.arange(n) / 16000
    pitch = 110 + 80 * torch.rand(1, generator=gen)
    voiced = sum(torch.sin(2 * math.pi * k * pitch * t) / k for k in range(1, 6))
    syllables = torch.rand(int(seconds * 4) + 1, generator=gen) > 0.3  # 250 ms on/off pattern
    envelope = syllables.repeat_interleave(4000)[:n].float() * torch.sin(math.pi * (t * 4 % 1)) ** 2
    level = torch.where(t < 10, 0.3, torch.where(t < 20, 0.05, 0.01))
    noise = torch.randn(n, generator=gen)
    return (level * (envelope * voiced + 0.1 * noise) + 1e-4 * noise).float()


def chunks_of(samples: torch.Tensor, size: int = 16000) -> list[torch.Tensor]:
    return list(torch.split(samples, size))


def stream(frontend, chunks, state=None):
    """Encode chunk by chunk; return the embeddings and every state (states[i] is the state before chunk i)."""
    states, embeds = [state or frontend.initial_state()], []
    for chunk in chunks:
        emb, next_state = frontend.encode(chunk, states[-1])
        embeds.append(emb)
        states.append(next_state)
    return embeds, states


def state_copy(state):
    """A deep copy of every tensor the state references, to check later that nothing was mutated."""
    kv = None if state.encoder_kv is None else tuple((k.clone(), v.clone()) for k, v in state.encoder_kv)
    return dataclasses.replace(state, carry=state.carry.clone(), mel_buffer=state.mel_buffer.clone(), encoder_kv=kv)


def assert_same_state(a, b):
    for field in dataclasses.fields(a):
        x, y = getattr(a, field.name), getattr(b, field.name)
        if field.name == "encoder_kv":
            assert (x is None) == (y is None)
            for (kx, vx), (ky, vy) in zip(x or (), y or ()):
                assert torch.equal(kx, ky) and torch.equal(vx, vy)
        elif isinstance(x, torch.Tensor):
            assert torch.equal(x, y), field.name
        else:
            assert x == y, field.name


@pytest.fixture(scope="module")
def frontend():
    return build_frontend()


@pytest.fixture(scope="module")
def session():
    return speech_like(SESSION_SECONDS)


@pytest.fixture(scope="module")
def straight(frontend, session):
    return stream(frontend, chunks_of(session))


def test_first_chunk_geometry(frontend, session):
    state = frontend.initial_state()
    unit, carry = frontend.take_unit(session[:16000], state)
    window, _ = frontend.mel_window(unit, state)
    assert (unit.shape[0], carry.shape[0], tuple(window.shape)) == (16480, 80, (80, 102))
    assert torch.equal(unit[:560], torch.zeros(560)) and torch.equal(unit[560:], session[:15920])

    embeds, states = stream(frontend, chunks_of(session[:6 * 16000]))
    after_first = states[1]
    assert tuple(embeds[0].shape) == (10, LLM_HIDDEN)
    assert after_first.carry.shape[0] == 80 and after_first.mel_buffer.shape[0] == 16480
    assert (after_first.mel_emitted_frames, after_first.encoder_length) == (100, 50)
    unit, _ = frontend.take_unit(session[16000:32000], after_first)
    window, _ = frontend.mel_window(unit, after_first)
    assert tuple(window.shape) == (80, 104)
    assert all(tuple(e.shape) == (10, LLM_HIDDEN) for e in embeds)
    assert [s.carry.shape[0] for s in states[1:]] == [80] * 6
    assert [s.dynamic_floor for s in states[1:]] == [False] * 4 + [True] * 2  # the buffer reaches 5 s at chunk 4


@pytest.mark.parametrize("chunk", [0, 6, 31], ids=["fixed-floor", "dynamic-floor", "after-slide"])
def test_mel_window_matches_the_whisper_feature_extractor(frontend, straight, session, chunk):
    """The emitted frames are the Whisper log-mel of the whole buffer, floored at -10 under 5 s, max - 8 after.

    Chunk 0 starts with 560 zeros of left pad, so its first frames sit at the fixed floor (-1.5 once scaled),
    below the max - 8 floor that the (always dynamic) Whisper feature extractor applies.
    """
    from transformers import WhisperFeatureExtractor

    _, states = straight
    unit, _ = frontend.take_unit(session[16000 * chunk:16000 * (chunk + 1)], states[chunk])
    window, after = frontend.mel_window(unit, states[chunk])
    start = max(0, states[chunk].mel_emitted_frames - 2 - after.mel_base_frame)
    whole = WhisperFeatureExtractor()(after.mel_buffer.numpy(), sampling_rate=16000, padding=False,
                                      return_tensors="pt").input_features[0]
    assert whole.shape[-1] == after.mel_buffer.shape[0] // 160
    expected = whole[:, start:start + window.shape[-1]]
    if after.dynamic_floor:
        torch.testing.assert_close(window, expected, rtol=0, atol=1e-6)
        return
    at_dynamic_floor = expected <= expected.min() + 1e-6
    torch.testing.assert_close(window[~at_dynamic_floor], expected[~at_dynamic_floor], rtol=0, atol=1e-6)
    assert window.min() == -1.5 and (window[at_dynamic_floor] < expected[at_dynamic_floor]).all()


def test_streaming_equals_block_causal_one_shot(frontend, session, straight):
    embeds, states = straight
    assert len(embeds) == 37
    assert states[29].encoder_length == 1450 and states[30].encoder_length == 50  # the 29-unit reset
    assert states[36].encoder_length == 350
    assert (states[29].mel_base_frame, states[30].mel_base_frame) == (0, 1000)  # the 30 s slide
    assert states[30].mel_dropped_samples == 160000 and states[37].mel_buffer.shape[0] < 30 * 16000
    assert states[37].carry.shape[0] == 0  # the short last chunk was zero-padded and fully consumed
    assert frontend.encoder_groups([104] * 37) == [list(range(29)), list(range(29, 37))]

    one_shot = frontend.encode_offline(session)
    streamed = torch.cat(embeds)
    assert one_shot.shape == streamed.shape == (370, LLM_HIDDEN)
    torch.testing.assert_close(streamed, one_shot, rtol=ONE_SHOT_TOLERANCE, atol=ONE_SHOT_TOLERANCE)


def test_the_training_form_is_the_one_shot_with_gradients(frontend, session):
    windows = frontend.session_mel_windows(session, 16000, None)[:31]  # the 29-chunk reset inside
    trained = frontend.embed_windows(windows)
    assert trained.requires_grad
    trained.square().mean().backward()
    assert frontend.apm.layers[0].self_attn.k_proj.weight.grad.abs().sum() > 0
    assert frontend.audio_projection_layer.linear1.weight.grad.abs().sum() > 0
    frontend.zero_grad(set_to_none=True)
    torch.testing.assert_close(trained.detach(), frontend.encode_offline(session[:31 * 16000]), rtol=0, atol=0)


def test_one_shot_without_the_reset_would_differ(frontend, session, straight):
    """The reset matters: one block-causal group over chunks 0-29 (1500 positions) misses chunk 29's reset."""
    embeds, _ = straight
    windows = frontend.session_mel_windows(session, 16000, None)[:30]
    cores = torch.cat([frontend.conv_frames(w, first=i == 0) for i, w in enumerate(windows)], dim=1)
    with torch.inference_mode():
        hidden, _ = frontend.run_layers(cores, block_causal_mask(30, 50, torch.float32, "cpu"), None)
        ungrouped = frontend.project_and_pool(hidden)
    tolerance = dict(rtol=ONE_SHOT_TOLERANCE, atol=ONE_SHOT_TOLERANCE)
    torch.testing.assert_close(ungrouped[:290], torch.cat(embeds[:29]), **tolerance)
    assert not torch.allclose(ungrouped[290:], embeds[29], atol=1e-3)


@pytest.mark.parametrize("at", [20, 29], ids=["mid-group", "reset-and-slide"])
def test_hypothesis_then_rollback_is_exact(frontend, session, straight, at):
    embeds, states = straight
    chunks = chunks_of(session)
    kept = states[at]  # the snapshot: a reference
    before = state_copy(kept)
    hypothesis, after_hypothesis = frontend.encode(torch.zeros(16000), kept)
    assert not torch.allclose(hypothesis, embeds[at], atol=1e-3)
    if at == 29:
        assert after_hypothesis.encoder_length == 50 and after_hypothesis.mel_base_frame == 1000
    assert_same_state(kept, before)

    replay, _ = stream(frontend, chunks[at:at + 3], state=kept)
    for offset, emb in enumerate(replay):
        assert torch.equal(emb, embeds[at + offset])


def test_silence_embeddings_depend_on_the_past(frontend, session):
    zeros = torch.zeros(16000)
    _, after_speech = stream(frontend, chunks_of(session[:8 * 16000]))
    _, after_silence = stream(frontend, [zeros] * 8)
    silence_after_speech, _ = frontend.encode(zeros, after_speech[-1])
    silence_after_silence, _ = frontend.encode(zeros, after_silence[-1])
    silence_from_start, _ = frontend.encode(zeros, frontend.initial_state())
    assert (silence_after_speech - silence_after_silence).abs().max() > 1e-3
    assert (silence_after_silence - silence_from_start).abs().max() > 1e-3  # prefix frames and encoder KV


def test_encode_never_mutates_its_state(frontend, straight, session):
    _, states = straight
    for index in (0, 1, 4, 29):
        before = state_copy(states[index])
        frontend.encode(session[16000 * index:16000 * (index + 1)], states[index])
        assert_same_state(states[index], before)


def test_short_last_chunk_is_zero_padded(frontend, straight, session):
    _, states = straight
    short = session[5 * 16000:5 * 16000 + 4000]
    padded = torch.cat([short, torch.zeros(16000 - 80 - 4000)])  # carry 80 + 4000 + zeros = one unit
    emb_short, state_short = frontend.encode(short, states[5])
    emb_padded, state_padded = frontend.encode(padded, states[5])
    assert torch.equal(emb_short, emb_padded)
    assert state_short.carry.shape[0] == 0
    assert_same_state(state_short, state_padded)
    first, first_state = frontend.encode(session[:4000], frontend.initial_state())
    assert tuple(first.shape) == (10, LLM_HIDDEN) and first_state.carry.shape[0] == 80


def test_longer_chunk_leaves_the_excess_in_the_carry(frontend, straight, session):
    _, states = straight
    emb, state = frontend.encode(session[16000:36000], states[1])
    assert tuple(emb.shape) == (10, LLM_HIDDEN) and state.carry.shape[0] == 80 + 4000


def test_state_dict_keys_are_the_checkpoint_keys(frontend):
    keys = set(frontend.state_dict())
    expected = {"apm.conv1.weight", "apm.conv1.bias", "apm.conv2.weight", "apm.conv2.bias",
                "apm.embed_positions.weight", "apm.layer_norm.weight", "apm.layer_norm.bias",
                "audio_projection_layer.linear1.weight", "audio_projection_layer.linear1.bias",
                "audio_projection_layer.linear2.weight", "audio_projection_layer.linear2.bias"}
    layer = {f"self_attn.{p}.{w}" for p in ("q_proj", "v_proj", "out_proj") for w in ("weight", "bias")}
    layer |= {"self_attn.k_proj.weight"}
    norms_and_mlp = ("self_attn_layer_norm", "fc1", "fc2", "final_layer_norm")
    layer |= {f"{m}.{w}" for m in norms_and_mlp for w in ("weight", "bias")}
    expected |= {f"apm.layers.{i}.{name}" for i in range(2) for name in layer}
    assert keys == expected
    assert tuple(frontend.audio_projection_layer.linear1.weight.shape) == (LLM_HIDDEN, 32)
    assert tuple(frontend.audio_projection_layer.linear2.weight.shape) == (LLM_HIDDEN, LLM_HIDDEN)


def test_bf16_module_returns_bf16(session):
    frontend = build_frontend().to(torch.bfloat16)
    embeds, states = stream(frontend, chunks_of(session[:3 * 16000]))
    assert all(e.dtype == torch.bfloat16 and tuple(e.shape) == (10, LLM_HIDDEN) for e in embeds)
    assert all(torch.isfinite(e.float()).all() for e in embeds)
    assert states[-1].encoder_kv[0][0].dtype == torch.bfloat16 and states[-1].mel_buffer.dtype == torch.float32


def test_sdpa_matches_eager_in_fp32(session):
    """The upstream attention setting (sdpa, all-zero additive mask) gives the eager embeddings in fp32."""
    eager = build_frontend()
    torch.manual_seed(0)
    sdpa = MiniCPMAudioFrontend(TINY_AUDIO_CONFIG, LLM_HIDDEN, attn_implementation="sdpa").eval()
    sdpa.load_state_dict(eager.state_dict())
    chunks = chunks_of(session[:3 * 16000])
    for a, b in zip(stream(eager, chunks)[0], stream(sdpa, chunks)[0]):
        torch.testing.assert_close(a, b, rtol=ONE_SHOT_TOLERANCE, atol=ONE_SHOT_TOLERANCE)
