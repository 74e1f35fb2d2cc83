"""Build, save and load the embedded model: LlamaForCausalLM + LogMelConvFrontend + BPE tokenizer.

A model folder holds::

    config.json, generation_config.json, model.safetensors   the LLM (transformers save_pretrained)
    frontend.safetensors                    the streaming audio front-end's weights
    tokenizer.json, tokenizer_config.json   loadable with AutoTokenizer
    ticktock.json                           front-end config, unit-protocol limits, system prompt, prompt template
    training_log.csv, loss.png              the training curves (``ticktock.embedded.train``)
    MODEL_CARD.md                           what it is, how it was trained, how well it does

Example::

    >>> adapter = load_embedded_adapter()            # the shipped weights, no network   # doctest: +SKIP
    >>> adapter.describe()["parameters"] > 1e6                                           # doctest: +SKIP
    True
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from ticktock.adapters.frontends import LogMelConvFrontend
from ticktock.adapters.hf_unit import HFUnitAdapter, protocol_from_tokenizer, resolve_device

WEIGHTS_DIR = Path(__file__).resolve().parent / "weights"
SYSTEM_PROMPT = "You are TickTock, a voice assistant. Listen, and answer when the user is done."
PROMPT_TEMPLATE = "<|im_start|>system\n{system}{tools}<|im_end|>\n"
RETRAIN_HINT = "retrain it with `python -m ticktock.embedded.train` (see ticktock/embedded/weights/MODEL_CARD.md)"


class WeightsError(RuntimeError):
    """The embedded model's files are missing or corrupt."""


@dataclass(frozen=True)
class Architecture:
    hidden_size: int = 256
    num_layers: int = 6
    num_heads: int = 4
    num_kv_heads: int = 2
    intermediate_size: int = 768
    frontend_channels: int = 256
    n_mels: int = 64
    max_text_tokens: int = 8
    max_tool_tokens: int = 96
    max_positions: int = 4096


def build_model(tokenizer, arch: Architecture, seed: int):
    """A freshly initialised (seeded) LLM + front-end for ``tokenizer``."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=arch.hidden_size,
        intermediate_size=arch.intermediate_size,
        num_hidden_layers=arch.num_layers,
        num_attention_heads=arch.num_heads,
        num_key_value_heads=arch.num_kv_heads,
        max_position_embeddings=arch.max_positions,
        rope_theta=10000.0,
        tie_word_embeddings=True,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=None,
        eos_token_id=None,
    )
    config._attn_implementation = "eager"
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config)
    frontend = LogMelConvFrontend(arch.hidden_size, channels=arch.frontend_channels, n_mels=arch.n_mels)
    return model, frontend


def make_adapter(model, frontend, tokenizer, arch: Architecture, name: str = "embedded", **context) -> HFUnitAdapter:
    protocol = protocol_from_tokenizer(tokenizer, max_text_tokens=arch.max_text_tokens, max_tool_tokens=arch.max_tool_tokens)
    return HFUnitAdapter(model, tokenizer, frontend, protocol, name=name, system_prompt=SYSTEM_PROMPT,
                         prompt_template=PROMPT_TEMPLATE, tools_in_prompt=False, **context)


def save_model(folder: Path, model, frontend, tokenizer, arch: Architecture, training: dict) -> None:
    from safetensors.torch import save_file

    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder, safe_serialization=True)
    tokenizer.save_pretrained(folder)
    save_file({k: v.contiguous() for k, v in frontend.state_dict().items()}, str(folder / "frontend.safetensors"))
    meta = {"architecture": asdict(arch), "frontend": frontend.config, "system_prompt": SYSTEM_PROMPT,
            "prompt_template": PROMPT_TEMPLATE, "training": training}
    (folder / "ticktock.json").write_text(json.dumps(meta, indent=2) + "\n")


def load_embedded_adapter(path: str | Path | None = None, attn_implementation: str = "eager",
                          name: str = "embedded", context_limit: int | None = None, context_reserve: int = 512,
                          context_evict_to: float = 0.75, device: str | None = None) -> HFUnitAdapter:
    """Load a model folder (default: the shipped weights) as an adapter, fp32, offline; on the CPU unless
    ``device`` names another (``auto``: CUDA when present). The audio front-end always runs on the CPU.

    ``context_limit`` (default: the model's 4,096 positions), ``context_reserve`` and ``context_evict_to``
    set its context policy: old whole units are evicted, the system prompt kept (``ticktock.adapters.context``)."""
    import torch
    from safetensors.torch import load_file
    from transformers import AutoTokenizer, LlamaForCausalLM

    folder = Path(path) if path is not None else WEIGHTS_DIR
    needed = ["config.json", "model.safetensors", "frontend.safetensors", "tokenizer.json", "ticktock.json"]
    missing = [n for n in needed if not (folder / n).is_file()]
    if missing:
        raise WeightsError(f"{folder}: embedded model files missing: {', '.join(missing)}; {RETRAIN_HINT}")
    try:
        meta = json.loads((folder / "ticktock.json").read_text())
        arch = Architecture(**meta["architecture"])
        tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
        model = LlamaForCausalLM.from_pretrained(str(folder), local_files_only=True, attn_implementation=attn_implementation,
                                                 dtype=torch.float32)
        frontend = LogMelConvFrontend(**meta["frontend"])
        frontend.load_state_dict(load_file(str(folder / "frontend.safetensors")))
        model.to(resolve_device(device))
    except WeightsError:
        raise
    except Exception as err:  # corrupt JSON, safetensors header, shapes: all mean the same to the user
        raise WeightsError(f"{folder}: cannot load the embedded model ({type(err).__name__}: {err}); {RETRAIN_HINT}") from None
    adapter = make_adapter(model, frontend, tokenizer, arch, name=name, context_limit=context_limit,
                           context_reserve=context_reserve, context_evict_to=context_evict_to)
    adapter.system_prompt = meta.get("system_prompt", SYSTEM_PROMPT)
    adapter.prompt_template = meta.get("prompt_template", PROMPT_TEMPLATE)
    return adapter
