"""The MiniCPM-o family (MiniCPM-o 4.5, Gander, Realtime-Venus, LWS) on miniatures in the real on-disk layout:
loading through the real path, clear errors for broken checkpoints, the per-unit token layouts, stateful silence
hypotheses, and every decoder token-equal to AR (fp32, eager; greedy and sampled)."""

import json
import shutil

import numpy as np
import pytest
import torch

from ticktock.adapters.checkpoint import CheckpointError, MissingWeightsError
from ticktock.adapters.minicpmo import render_gander_tools
from ticktock.clocks.modeled import CostProfile, ModeledClock
from ticktock.decoders.ar import ARDecoder
from ticktock.errors import TickTockError
from ticktock.world.injection import ToolCallInjector
from ticktock.sessions.manifest import load_manifest
from ticktock.world.mock_tools import MockToolExecutor
from ticktock.shipped import resource_path
from ticktock.replay.config import build, check_run_options, compose_run

from helpers import outputs
from helpers import replay as replay_session

#: Chunks of each session the every-decoder checks replay: two idle windows whose drafts the next chunk verifies, and
#: the cross-chunk pool carried from one to the next.
LOSSLESS_CHUNKS = 3
DECODERS = ("pld", "recycling", "lookahead", "speclisten_silence", "speclisten_runnerup", "speclisten", "speclisten_plus")


@pytest.fixture(scope="module")
def folders(miniatures):
    return {name: miniatures[name] for name in ("gander", "minicpmo45", "realtime_venus", "lws")}


def model_cfg(name, folder, *overrides):
    return compose_run("ar", name, None, [f"model.path={folder}", *overrides])


@pytest.fixture(scope="module")
def adapters(folders):
    return {name: build(model_cfg(name, folder).model) for name, folder in folders.items()}


@pytest.fixture(scope="module")
def short_tool_adapters(folders):
    """The miniatures with tool units capped at 32 tokens: a random model that opens a call writes to the cap."""
    return {name: build(model_cfg(name, folder, "model.max_tool_tokens=32").model) for name, folder in folders.items()}


@pytest.fixture(scope="module")
def sessions():
    manifest = resource_path("manifests/ticktock-mini/manifest.jsonl")
    return [load_manifest(manifest, tasks=[task])[0] for task in ("fdb_v3", "alpaca_eval")]


def replay(adapter, session, decoder, max_chunks=4, **sampling):
    clock = ModeledClock(CostProfile.load(resource_path("configs/profiles/a100-8b-derived.yaml")))
    return outputs(replay_session(adapter, session, decoder, clock=clock, injector=ToolCallInjector(MockToolExecutor()),
                                  max_chunks=max_chunks, **sampling))


# ----------------------------------------------------------------------------------------------- loading

def test_each_miniature_loads_with_its_published_ids(adapters):
    for name, adapter in adapters.items():
        p = adapter.protocol
        assert (p.unit_open, p.unit_close, p.listen, p.speak, p.interrupt) == (151683, 151684, 151705, 151706, 151707), name
        assert (p.turn_eos, p.chunk_eos, p.tool_call_open, p.tool_response_open) != (None,) * 4
        assert adapter.silence_depends_on_state and adapter.frontend.embeds_per_second == 10
    assert adapters["minicpmo45"].vocab_size == 151748 and adapters["minicpmo45"].protocol.backchannel is None
    assert adapters["gander"].protocol.backchannel == 151748 and adapters["gander"].vocab_size == 151749
    venus = adapters["realtime_venus"].protocol
    assert (venus.tool_call_open, venus.tool_call_close, venus.tool_response_open) == (151748, 151749, 151750)
    assert adapters["lws"].protocol.write == 151748


def test_gander_takes_the_delta_keys_and_the_base_for_the_rest(adapters):
    gander, base = adapters["gander"], adapters["minicpmo45"]
    assert torch.equal(gander.frontend.apm.conv1.weight, base.frontend.apm.conv1.weight)  # apm.* from the base
    assert not torch.equal(gander.frontend.audio_projection_layer.linear1.weight,
                           base.frontend.audio_projection_layer.linear1.weight)  # the delta's projection
    rows = gander.model.get_input_embeddings().weight
    assert torch.allclose(rows[151748], rows[:151748].mean(0), atol=1e-2)  # <|backchannel|> mean-initialised


def test_bad_token_ids_come_from_the_tokenizer_config(folders, adapters):
    listed = json.loads((folders["gander"] / "tokenizer_config.json").read_text())["bad_token_ids"]
    p = adapters["gander"].protocol
    assert listed and set(listed) <= p.content_forbidden and 151722 in p.content_forbidden  # + <|tts_pad|>


def test_missing_weights_name_the_repo_and_the_download_command(monkeypatch, tmp_path):
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path))
    for name, repo in (("gander", "Gander-Omni/Gander"), ("minicpmo45", "openbmb/MiniCPM-o-4_5"),
                       ("realtime_venus", "inclusionAI/Realtime-Venus")):
        with pytest.raises(MissingWeightsError, match=f"hf download {repo}"):
            check_run_options(compose_run("ar", name, None, []))


def test_gander_without_its_base_names_the_base(folders, tmp_path, monkeypatch):
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "cache"))
    delta = tmp_path / "delta"
    shutil.copytree(folders["gander"], delta, ignore=shutil.ignore_patterns("base"))
    with pytest.raises(MissingWeightsError, match="hf download openbmb/MiniCPM-o-4_5"):
        check_run_options(model_cfg("gander", delta))


@pytest.mark.parametrize("damage, message", [
    ("drop_key", "missing keys: llm.model.norm.weight"),
    ("drop_tokenizer", "merges.txt: missing"),
    ("vocab_mismatch", "vocab_size"),
    ("short_vocab", "added token <|endoftext|> is listed as id 151643"),
])
def test_a_broken_checkpoint_is_one_clear_error(folders, tmp_path, damage, message):
    from safetensors.torch import load_file, save_file

    folder = tmp_path / "m"
    shutil.copytree(folders["realtime_venus"], folder)
    if damage == "drop_key":
        index = json.loads((folder / "model.safetensors.index.json").read_text())
        shard = folder / index["weight_map"].pop("llm.model.norm.weight")
        tensors = load_file(str(shard))
        del tensors["llm.model.norm.weight"]
        save_file(tensors, str(shard))
        (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    elif damage == "drop_tokenizer":
        (folder / "merges.txt").unlink()
    elif damage == "vocab_mismatch":
        config = json.loads((folder / "config.json").read_text())
        config["vocab_size"] = 151700
        (folder / "config.json").write_text(json.dumps(config))
    else:
        vocab = json.loads((folder / "vocab.json").read_text())
        (folder / "vocab.json").write_text(json.dumps({k: v for k, v in vocab.items() if v < 151000}))
    with pytest.raises(TickTockError, match=message) as raised:
        build(model_cfg("realtime_venus", folder).model)
    assert "\n" not in str(raised.value) and str(folder) in str(raised.value)


# ------------------------------------------------------------------------------------------ token layouts

def test_the_system_prompt_has_gander_tools_and_no_newline_after_im_end(adapters):
    adapter = adapters["gander"]
    tool = {"type": "function", "function": {"name": "track_order", "description": "Track <an> order",
                                             "parameters": {"type": "dict", "properties": {"id": {"type": "str"}}}}}
    prompt = adapter.decode_tokens(adapter.start_session(None, [tool]))
    assert prompt == ("<|im_start|>system\nStreaming Omni Conversation.\n\n<tools>\n"
                      '[{"name":"track_order","description":"Track \\u003can> order","parameters":{"type":"object",'
                      '"properties":{"id":{"type":"string"}}}}]\n</tools><|im_end|>')
    assert render_gander_tools([]) == ""


def test_gander_tool_calls_tool_responses_and_their_grammar(adapters):
    adapter = adapters["gander"]
    p, newline = adapter.protocol, adapter.encode_text("\n")[0]
    call = adapter.tool_call_tokens("f", {"x": 1})
    assert adapter.decode_tokens(call) == '<tool_call>\n{"name": "f", "arguments": {"x": 1}}\n</tool_call>'
    assert adapter.tool_call_texts(call + [newline] + call) == ['{"name": "f", "arguments": {"x": 1}}'] * 2
    assert p.allowed(call) == ("only", frozenset({p.chunk_eos, newline}))  # end, or \n then the next call
    assert p.allowed(call + [newline]) == ("only", frozenset({p.tool_call_open}))
    assert p.allowed((call + [newline]) * 3 + call) == ("only", frozenset({p.chunk_eos}))  # at most 4 calls
    mode, forbidden = p.allowed(call[:3])  # inside a call: bad_token_ids allowed, structure not
    assert mode == "except" and not (p.content_forbidden - {151722}) & forbidden and p.speak in forbidden
    response = adapter.decode_tokens(adapter.tool_response_tokens('{"a": "<b>"}'))
    assert response == '<tool_response>\n{"a": "\\u003cb>"}\n</tool_response>'


def test_speak_backchannel_listen_interrupt_units(adapters):
    p = adapters["gander"].protocol
    assert p.allowed([])[1] == frozenset({p.listen, p.speak, p.backchannel, p.interrupt, p.tool_call_open})
    assert p.allowed([], tools_enabled=False)[1] == frozenset({p.listen, p.speak, p.backchannel, p.interrupt})
    text = [p.speak] + [1000] * 8
    assert p.allowed(text) == ("only", frozenset({p.turn_eos, p.chunk_eos}))  # K = 8
    mode, forbidden = p.allowed([p.backchannel, 1000])
    assert mode == "except" and p.content_forbidden <= forbidden
    assert p.terminators == frozenset({p.listen, p.interrupt, p.chunk_eos})
    assert p.kind_of([p.backchannel, 1000, p.chunk_eos]) == "backchannel"


def test_lws_writes_then_speaks_in_one_unit(adapters):
    p = adapters["lws"].protocol
    assert p.write in p.allowed([])[1]
    mode, forbidden = p.allowed([p.write, 1000])
    assert mode == "except" and p.speak not in forbidden and p.turn_eos in forbidden
    assert p.allowed([p.write] + [1000] * 16) == ("only", frozenset({p.speak, p.chunk_eos}))
    assert p.allowed([p.write, 1000, p.speak] + [1000] * 18) == ("only", frozenset({p.turn_eos, p.chunk_eos}))
    assert p.kind_of([p.write, 1000, p.chunk_eos]) == "write" and p.kind_of([p.write, p.speak, 1000]) == "speak"


def test_listen_can_be_masked_while_the_turn_is_open(folders, sessions):
    adapter = build(model_cfg("gander", folders["gander"], "model.listen_closes_turn=false").model)
    p = adapter.protocol
    assert p.listen not in p.allowed([], turn_open=True)[1] and p.listen in p.allowed([], turn_open=False)[1]
    chunks = replay(adapter, sessions[1], ARDecoder(), max_chunks=10)
    turn_open = False
    for tokens in chunks:
        assert not (turn_open and tokens[0] == p.listen)
        turn_open = p.turn_open_after(turn_open, tokens)
    assert chunks == replay(adapter, sessions[1], build(compose_run("speclisten_plus", "embedded", None, []).decoder),
                            max_chunks=10)


# ------------------------------------------------------------------------------------------------ silence

def test_silence_hypotheses_are_encoded_from_the_current_state(adapters, sessions, monkeypatch):
    adapter = adapters["minicpmo45"]
    adapter.start_session(None, [])
    for _ in range(3):
        adapter.encode_audio(np.random.default_rng(0).normal(0, 0.3, 16000).astype(np.float32))
    in_context = adapter.peek_audio(np.zeros(16000, dtype=np.float32))
    assert not torch.allclose(in_context, adapter.silence_audio(16000))  # silence after speech != after silence

    def cached_silence(_):
        raise AssertionError("a stateful front-end's silence must not come from the cache")

    monkeypatch.setattr(adapter, "silence_audio", cached_silence)
    expected = replay(adapter, sessions[0], ARDecoder())
    assert replay(adapter, sessions[0], build(compose_run("speclisten", "embedded", None, []).decoder)) == expected


# ----------------------------------------------------------------------------------------------- lossless

def shipped(name):
    return build(compose_run(name, "embedded", None, []).decoder)


@pytest.mark.parametrize("model", ["minicpmo45", "gander", "realtime_venus", "lws"])
def test_every_decoder_equals_ar_greedy(short_tool_adapters, sessions, model):
    adapter = short_tool_adapters[model]
    for session in sessions if model == "gander" else sessions[:1]:
        expected = replay(adapter, session, ARDecoder(), max_chunks=LOSSLESS_CHUNKS)
        for name in DECODERS:
            assert replay(adapter, session, shipped(name), max_chunks=LOSSLESS_CHUNKS) == expected, \
                (model, name, session.session_id)


@pytest.mark.parametrize("model", ["minicpmo45", "gander", "realtime_venus", "lws"])
def test_every_decoder_equals_ar_sampled(short_tool_adapters, sessions, model):
    adapter, session = short_tool_adapters[model], sessions[0]
    sampling = dict(temperature=0.7, top_p=0.8, top_k=20, seed=3, max_chunks=LOSSLESS_CHUNKS)
    expected = replay(adapter, session, ARDecoder(), **sampling)
    for name in DECODERS:
        assert replay(adapter, session, shipped(name), **sampling) == expected, (model, name)
