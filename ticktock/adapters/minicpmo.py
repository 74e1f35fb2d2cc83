"""The MiniCPM-o 4.5 family (MiniCPM-o 4.5, Gander, Realtime-Venus, LWS), loaded natively from its checkpoint.

The published remote code pins transformers 4.51 and does not run on transformers 5, so nothing of it is
used (no ``trust_remote_code``). One checkpoint folder holds several parts under key prefixes; the adapter
builds each from the folder's ``config.json`` and loads exactly the parts a text-output benchmark needs:

==============================  ==========================================================================
``llm.*``                       ``Qwen3ForCausalLM`` (Qwen3-8B: 36 layers, hidden 4096, vocab 151748)
``apm.*``                       the Whisper-medium encoder of the streaming front-end (``minicpm_audio``)
``audio_projection_layer.*``    Linear-ReLU-Linear to the LLM's width, then a 5x average pool (10 per s)
``vpm.*``, ``resampler.*``      vision: never read
``tts.*``                       the talker: never read
==============================  ==========================================================================

The tokenizer is transformers' ``Qwen2Tokenizer`` over the folder's ``vocab.json`` + ``merges.txt`` +
``tokenizer_config.json``, whose ``bad_token_ids`` (6965 ids: brackets, non-ASCII byte pieces) are masked in
speak/backchannel/write text (a static mask, so lossless) and allowed in tool units, as upstream.

A **delta** checkpoint (Gander's Thinker: ``llm.*`` with one more vocabulary row for ``<|backchannel|>``, and
``audio_projection_layer.*``) is overlaid on its **base** (``base_repo_id``): every key the delta holds comes
from the delta, every other key from the base, as Gander's ``load_composed_minicpmo_model`` composes them. The
base is ``base_path``, else a ``base/`` folder inside the delta folder, else the local Hugging Face cache.

Per unit the LLM sees ``<unit>`` + 10 audio embeddings (fed as ``inputs_embeds``) [+ tool responses], then the
model's output; the streaming front-end is MiniCPM-o's exact state machine, whose silence embeddings depend on
the past, so Speculative Listening encodes silence hypotheses from the current state
(``silence_depends_on_state``). The system prompt is ``<|im_start|>system\\n{prompt}{tools}<|im_end|>`` with no
newline after ``<|im_end|>`` (the first ``<unit>`` follows directly), tools as Gander lays them out
(``render_gander_tools``).

Decoding deviations from upstream (documented, not emulated; AR here is argmax or the keyed sample under the
unit grammar and the static masks): upstream's repetition penalty (1.05 over the last 512 tokens, even in
greedy mode), its length penalty 1.1 on ``<|turn_eos|>``, and its replacement of ``<|listen|>`` by
``<|tts_bos|>`` while a turn is open depend on history and are left out; ``listen_closes_turn: false`` masks
``<|listen|>`` as the first token while the assistant's turn is open, the lossless part of the last one.

Example (a miniature checkpoint in the real layout, see ``ticktock.miniatures.minicpmo``)::

    >>> import tempfile
    >>> from pathlib import Path
    >>> from ticktock.miniatures.minicpmo import write_miniature
    >>> folder = write_miniature("gander", Path(tempfile.mkdtemp()) / "gander")
    >>> adapter = load_minicpmo_adapter(path=str(folder), repo_id="Gander-Omni/Gander", name="gander",
    ...                                 base_repo_id="openbmb/MiniCPM-o-4_5", tool_layout="gander", max_text_tokens=8)
    >>> adapter.protocol.backchannel, adapter.protocol.max_text_tokens, adapter.vocab_size
    (151748, 8, 151749)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

from ticktock.adapters.base import hermes_call_text
from ticktock.adapters.checkpoint import (MINIATURE_KEY, CheckpointError, CheckpointTensors, load_into, read_json,
                                          resolve_base, resolve_checkpoint, weights_origin)
from ticktock.adapters.hf_unit import HFUnitAdapter, protocol_from_tokenizer, runtime_settings

MINICPMO_REPO = "openbmb/MiniCPM-o-4_5"
PROMPT_TEMPLATE = "<|im_start|>system\n{system}{tools}<|im_end|>"
TOKENIZER_FILES = ("vocab.json", "merges.txt", "tokenizer_config.json")
NOT_LLM_KEYS = ("audio_config", "vision_config", "tts_config", "slice_config", "architectures", "auto_map",
                "model_type", "torch_dtype", "dtype", "transformers_version", MINIATURE_KEY)
# The published shapes (MiniCPM-o 4.5's config.json: a Qwen3-8B LLM, a Whisper-medium encoder), for random_init
PUBLISHED_CONFIG = {"vocab_size": 151748, "hidden_size": 4096, "intermediate_size": 12288, "num_hidden_layers": 36,
                    "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128, "rope_theta": 1000000.0,
                    "max_position_embeddings": 40960, "rms_norm_eps": 1e-6, "tie_word_embeddings": False,
                    "hidden_act": "silu", "attention_bias": False, "audio_pool_step": 5,
                    "audio_config": {"d_model": 1024, "encoder_layers": 24, "encoder_attention_heads": 16,
                                     "encoder_ffn_dim": 4096, "num_mel_bins": 80, "max_source_positions": 1500}}
TYPE_ALIASES = {"dict": "object", "int": "integer", "float": "number", "str": "string", "bool": "boolean",
                "list": "array"}


# ------------------------------------------------------------------------------------------ prompt layout

def normalised_schema(tool: dict) -> dict:
    """A tool schema as Gander puts it in the prompt: ``{name, description, parameters}``, an OpenAI
    ``{"type": "function", "function": ...}`` wrapper unwrapped, Python type names mapped to JSON-schema ones.

    >>> normalised_schema({"type": "function", "function": {"name": "f", "parameters": {"type": "dict",
    ...     "properties": {"n": {"type": "int"}}}}})
    {'name': 'f', 'description': '', 'parameters': {'type': 'object', 'properties': {'n': {'type': 'integer'}}}}
    """
    if tool.get("type") == "function" and isinstance(tool.get("function"), dict):
        tool = tool["function"]
    return {"name": tool.get("name", ""), "description": tool.get("description", ""),
            "parameters": _mapped_types(tool.get("parameters", {"type": "object", "properties": {}}))}


def _mapped_types(node):
    if isinstance(node, dict):
        return {key: (TYPE_ALIASES.get(value, value) if key == "type" and isinstance(value, str) else _mapped_types(value))
                for key, value in node.items()}
    if isinstance(node, list):
        return [_mapped_types(value) for value in node]
    return node


def escaped_json(value) -> str:
    """Compact JSON with every ``<`` written ``\\u003c`` (so no text can open a special token)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).replace("<", "\\u003c")


def render_gander_tools(tools: Sequence[dict]) -> str:
    """``\\n\\n<tools>\\n[normalised compact JSON]\\n</tools>`` (empty without tools).

    >>> render_gander_tools([{"name": "f", "description": "a<b", "parameters": {"type": "object"}}])
    '\\n\\n<tools>\\n[{"name":"f","description":"a\\\\u003cb","parameters":{"type":"object"}}]\\n</tools>'
    """
    if not tools:
        return ""
    return "\n\n<tools>\n" + escaped_json([normalised_schema(t) for t in tools]) + "\n</tools>"


class MiniCPMOAdapter(HFUnitAdapter):
    """``HFUnitAdapter`` with the MiniCPM-o family's prompt, tool-call and tool-response layouts.

    ``tool_layout``: ``hermes`` writes ``<tool_call>{json}</tool_call>`` back to back; ``gander`` writes
    ``<tool_call>\\n{json}\\n</tool_call>``, several calls joined by ``\\n`` (the protocol's
    ``tool_call_joiner``), as Gander's ``format_tool_calls`` does.
    """

    #: MiniCPM-o 4.5's released duplex runtime (its StreamDecoder, and vLLM-Omni's port of it) ends a speak unit once
    #: its text reaches this many characters; the embedded model's training plans units under it
    speak_chars_per_unit = 28

    def __init__(self, *args, tool_layout: str = "hermes", **kwargs):
        super().__init__(*args, **kwargs)
        self.tool_layout = tool_layout

    def prompt_text(self, system_prompt: str | None, tools: Sequence[dict]) -> str:
        tools_text = render_gander_tools(tools) if self.tools_in_prompt else ""
        return self.prompt_template.format(system=system_prompt or self.system_prompt, tools=tools_text)

    def tool_call_tokens(self, name: str, arguments: dict) -> list[int]:
        if self.tool_layout != "gander":
            return super().tool_call_tokens(name, arguments)
        p = self.protocol
        return [p.tool_call_open, *self.encode_text("\n" + hermes_call_text(name, arguments) + "\n"), p.tool_call_close]

    def tool_response_tokens(self, text: str) -> list[int]:
        return super().tool_response_tokens(text.replace("<", "\\u003c"))


# ------------------------------------------------------------------------------------------------ loading

def load_minicpmo_adapter(path: str | None = None, repo_id: str = MINICPMO_REPO, base_path: str | None = None,
                          base_repo_id: str | None = None, name: str = "minicpmo45",
                          protocol_tokens: dict | None = None, max_text_tokens: int = 18, max_tool_tokens: int = 256,
                          max_tool_calls: int = 4, max_write_tokens: int = 0, tool_layout: str = "hermes",
                          listen_closes_turn: bool = True, system_prompt: str = "Streaming Omni Conversation.",
                          tools_in_prompt: bool = True, dtype: str = "auto", device: str = "auto",
                          attn_implementation: str = "auto", context_limit: int | None = None,
                          context_reserve: int = 512, context_evict_to: float = 0.75,
                          random_init: bool = False) -> MiniCPMOAdapter:
    """Build the adapter from a local checkpoint (``path``, or the Hugging Face cache of ``repo_id``).

    ``base_repo_id`` (with ``base_path``): the checkpoint is a delta over that base. ``protocol_tokens``:
    UnitProtocol field -> token text, over the MiniCPM-o names (a null value drops an optional token); ids
    are always read from the checkpoint's own tokenizer files. ``dtype`` / ``device`` /
    ``attn_implementation`` ``auto``: bf16, sdpa on CUDA; fp32, eager on CPU. ``random_init``: no weights at
    all; the published full-size shapes (``PUBLISHED_CONFIG``, or the shapes of ``path``'s config.json) with
    random weights and a miniature tokenizer, for measuring cost (``ticktock.calibrate``), never for outputs.
    ``describe()`` says which weights ran (``checkpoint.weights_origin``): ``random_weights`` for ``random_init``
    and for a miniature (whose config.json carries ``checkpoint.MINIATURE_KEY``), ``miniature`` for the latter.
    """
    device, dtype, attn = runtime_settings(device, dtype, attn_implementation)
    if random_init:  # shapes: the config.json of model.path when given, else the published ones
        config = read_json(resolve_checkpoint(path, repo_id, name), "config.json") if path else PUBLISHED_CONFIG
        folder, tensors = random_checkpoint(), None
    else:
        folder = resolve_checkpoint(path, repo_id, name)
        base = resolve_base(folder, base_path, base_repo_id, name) if base_repo_id else None
        config = read_json(folder, "config.json")
        if base is not None:
            config = {**read_json(base, "config.json"), **config}
        tensors = CheckpointTensors(folder) if base is None else CheckpointTensors.overlay(folder, base)
    tokenizer = load_tokenizer(folder)
    llm = build_llm(config, folder, attn, dtype, device)
    protocol = family_protocol(tokenizer, folder, llm.config.vocab_size, protocol_tokens,
                               max_text_tokens=max_text_tokens, max_tool_tokens=max_tool_tokens,
                               max_tool_calls=max_tool_calls, max_write_tokens=max_write_tokens,
                               tool_layout=tool_layout, listen_closes_turn=listen_closes_turn)
    frontend = build_frontend(config, folder, dtype, device, attn)
    if tensors is None:
        randomise(llm, frontend)
    else:
        load_into(llm, tensors, "llm.", ignore=("lm_head.weight",) if llm.config.tie_word_embeddings else ())
        load_into(frontend.apm, tensors, "apm.")
        load_into(frontend.audio_projection_layer, tensors, "audio_projection_layer.")
    if llm.config.tie_word_embeddings:
        llm.tie_weights()
    return MiniCPMOAdapter(llm, tokenizer, frontend, protocol, name=name, system_prompt=system_prompt,
                           prompt_template=PROMPT_TEMPLATE, tools_in_prompt=tools_in_prompt,
                           context_limit=context_limit, context_reserve=context_reserve,
                           context_evict_to=context_evict_to, tool_layout=tool_layout,
                           weights_origin=weights_origin(config, random_init))


def random_checkpoint() -> Path:
    """A folder with the miniature's tokenizer files (and nothing else), written once per process."""
    import tempfile

    from ticktock.adapters.minicpmo_tokens import BASE_VOCAB, MINICPMO_ADDED, tokenizer_files

    folder = Path(tempfile.mkdtemp(prefix="ticktock-random-minicpmo-"))
    tokenizer_files(folder, {BASE_VOCAB + i: token for i, token in enumerate(MINICPMO_ADDED)})
    return folder


def randomise(*modules) -> None:
    """Normal(0, 0.02) weights, unit norms, zero biases: a model of the real cost, with meaningless outputs."""
    import torch

    with torch.no_grad():
        for module in modules:
            for name, tensor in module.named_parameters():
                if tensor.dim() >= 2:
                    tensor.normal_(0.0, 0.02)
                else:
                    tensor.fill_(1.0 if "norm" in name else 0.0)


def load_tokenizer(folder: Path):
    """``Qwen2Tokenizer`` from the checkpoint's files (a missing file is one clear error)."""
    from transformers import Qwen2Tokenizer

    for file in TOKENIZER_FILES:
        if not (folder / file).is_file():
            raise CheckpointError(f"{folder / file}: missing (the tokenizer needs {', '.join(TOKENIZER_FILES)})")
    return Qwen2Tokenizer.from_pretrained(str(folder), local_files_only=True)


def llm_config(config: dict, attn_implementation: str):
    """The ``Qwen3Config`` of the checkpoint's LLM: every top-level entry of config.json but the other parts'."""
    from transformers import Qwen3Config

    llm = Qwen3Config(**{key: value for key, value in config.items() if key not in NOT_LLM_KEYS})
    llm._attn_implementation = attn_implementation
    return llm


def build_llm(config: dict, folder: Path, attn_implementation: str, dtype, device):
    """An uninitialised ``Qwen3ForCausalLM`` of the checkpoint's shapes, on ``device`` in ``dtype``."""
    import torch
    from transformers import Qwen3ForCausalLM
    from transformers.initialization import no_init_weights

    for key in ("hidden_size", "num_hidden_layers", "vocab_size"):
        if key not in config:
            raise CheckpointError(f"{folder / 'config.json'}: has no {key} (not a MiniCPM-o checkpoint config)")
    with _default_dtype(dtype), torch.device(device), no_init_weights():
        model = Qwen3ForCausalLM(llm_config(config, attn_implementation))
    return model.eval()


def build_frontend(config: dict, folder: Path, dtype, device, attn_implementation: str):
    """The streaming audio front-end of the checkpoint's ``audio_config`` (Whisper encoder + projection)."""
    import torch

    from ticktock.adapters.minicpm_audio import MiniCPMAudioFrontend

    audio = config.get("audio_config")
    if not isinstance(audio, dict):
        raise CheckpointError(f"{folder / 'config.json'}: has no audio_config (the Whisper encoder's shapes)")
    with _default_dtype(dtype), torch.device(device):
        frontend = MiniCPMAudioFrontend(audio, config["hidden_size"], int(config.get("audio_pool_step", 5)),
                                        attn_implementation=attn_implementation)
    return frontend.eval()


class _default_dtype:
    """Build modules directly in ``dtype`` (no full-precision copy of an 8B model first)."""

    def __init__(self, dtype):
        self.dtype = dtype

    def __enter__(self):
        import torch

        self.saved = torch.get_default_dtype()
        torch.set_default_dtype(self.dtype)

    def __exit__(self, *exc):
        import torch

        torch.set_default_dtype(self.saved)


# ----------------------------------------------------------------------------------------------- protocol

def family_protocol(tokenizer, folder: Path, vocab_size: int, names: dict | None, *, tool_layout: str,
                    **limits):
    """The unit protocol from the checkpoint's tokenizer: ids of the (possibly renamed) protocol tokens, the
    ``bad_token_ids`` content mask, ``<|tts_pad|>`` never in text, and Gander's ``\\n`` between tool calls."""
    settings = read_json(folder, "tokenizer_config.json")
    check_added_ids(tokenizer, settings, folder)
    vocab = tokenizer.get_vocab()
    if len(tokenizer) > vocab_size:
        raise CheckpointError(f"{folder}: the tokenizer has {len(tokenizer)} tokens but config.json's vocab_size "
                              f"is {vocab_size} (tokenizer and weights of different checkpoints?)")
    bad = settings.get("bad_token_ids", [])
    if not isinstance(bad, list) or not all(isinstance(i, int) for i in bad):
        raise CheckpointError(f"{folder / 'tokenizer_config.json'}: bad_token_ids must be a list of token ids")
    content_forbidden = frozenset(bad) | frozenset(vocab[t] for t in ("<|tts_pad|>",) if t in vocab)
    joiner = None
    if tool_layout == "gander":
        newline = tokenizer.encode("\n", add_special_tokens=False)
        if len(newline) != 1:
            raise CheckpointError(f"{folder}: the tokenizer writes a newline as {newline}, not one token")
        joiner = newline[0]
    elif tool_layout != "hermes":
        raise CheckpointError(f"model.tool_layout: must be hermes or gander, got {tool_layout!r}")
    try:
        return protocol_from_tokenizer(tokenizer, names=names, content_forbidden=content_forbidden,
                                       tool_call_joiner=joiner, **limits)
    except ValueError as err:
        raise CheckpointError(f"{folder / 'tokenizer_config.json'}: {err}") from None


def check_added_ids(tokenizer, settings: dict, folder: Path) -> None:
    """Every added token listed in ``tokenizer_config.json`` resolves to the id listed there (the Qwen2 layout
    gives an added token its id by position, so a vocab.json of another length would shift them all)."""
    vocab = tokenizer.get_vocab()
    for listed, entry in (settings.get("added_tokens_decoder") or {}).items():
        content = entry.get("content") if isinstance(entry, dict) else None
        if content is not None and vocab.get(content) != int(listed):
            raise CheckpointError(f"{folder / 'tokenizer_config.json'}: added token {content} is listed as id {listed} "
                                  f"but the tokenizer gives it {vocab.get(content)} (vocab.json has {len(vocab)} "
                                  "entries in all; is it the checkpoint's own?)")
