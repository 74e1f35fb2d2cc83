"""The embedded model in MiniCPM-o 4.5's real checkpoint layout (v9): what it is made of, how it is trained compactly,
and how the checkpoint folder both runtimes load is written from it.

v9 is a MiniCPM-o 4.5 checkpoint in miniature: a Qwen3 LLM (``llm.*``), a Whisper encoder and projection (``apm.*``,
``audio_projection_layer.*``) run by MiniCPM-o's exact streaming front-end, and the vision tower, resampler and Talker
the layout requires (``vpm.*``, ``resampler.*``, ``tts.*``: small and untrained; a benchmark never reads them). Its
tokenizer is the embedded model's byte-level BPE (v8's 497 pieces, at v8's ids) in the Qwen2 layout, with every
MiniCPM-o 4.5 special token at its published id: the vocabulary is 151,748 entries, as the real one.

**Compact form.** Of those 151,748 rows the model only ever reads or writes ``USED``: the BPE's pieces and the
special tokens. Every other row holds one shared vector ``u``, so the model trains and ships compactly: an
embedding of the used rows plus ``u`` (``CompactVocab``), whose output layer is exact over the whole vocabulary (the
151,146 equal rows are one column whose logit is ``h . u + log 151146``: the full-vocabulary cross-entropy, not an
approximation). ``write_checkpoint`` expands it to the real layout (bf16, sharded, ``config.json`` with the published
keys, the tokenizer files and the code files ``trust_remote_code`` loaders need), deterministically: the same compact
file always gives the same folder, and ``materialize`` keeps it in TickTock's home under the compact file's digest.

Example::

    >>> vocab = CompactVocab.of_bpe(range(15, 20))
    >>> vocab.size, vocab.real_ids[:3], vocab.compact(vocab.real_ids[5]) == 5
    (111, [15, 16, 17], True)
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ticktock.adapters.minicpmo_tokens import BASE_VOCAB, MINICPMO_ADDED, UNK_ID

VOCAB_SIZE = BASE_VOCAB + len(MINICPMO_ADDED)  # 151748, MiniCPM-o 4.5's
SHIPPED = Path(__file__).resolve().parent / "weights_v9"
COMPACT_FILE = "compact.safetensors"
META_FILE = "ticktock.json"
FORMAT = "ticktock-embedded-real-layout-1"
#: v8's special tokens -> the MiniCPM-o 4.5 token whose row takes their weights (v8's padding becomes <|endoftext|>)
V8_SPECIALS = {"<|pad|>": "<|endoftext|>"}


@dataclass(frozen=True)
class Shapes:
    """v9's sizes: the LLM as v8's (so v8's weights seed it), a Whisper encoder of the same width."""

    hidden_size: int = 256
    intermediate_size: int = 768
    num_hidden_layers: int = 6
    num_attention_heads: int = 4
    num_key_value_heads: int = 2
    head_dim: int = 64
    max_position_embeddings: int = 4096
    rope_theta: float = 10000.0
    audio_width: int = 256
    audio_layers: int = 4
    audio_heads: int = 4

    def llm(self) -> dict:
        """The Qwen3 fields of config.json."""
        return {"hidden_size": self.hidden_size, "intermediate_size": self.intermediate_size,
                "num_hidden_layers": self.num_hidden_layers, "num_attention_heads": self.num_attention_heads,
                "num_key_value_heads": self.num_key_value_heads, "head_dim": self.head_dim,
                "max_position_embeddings": self.max_position_embeddings, "rope_theta": self.rope_theta,
                "rms_norm_eps": 1e-6, "tie_word_embeddings": True, "hidden_act": "silu", "attention_bias": False}

    def audio(self) -> dict:
        """``audio_config``: a Whisper encoder (its FFN 4 x width, as MiniCPM-o's projection requires)."""
        return {"d_model": self.audio_width, "encoder_layers": self.audio_layers,
                "encoder_attention_heads": self.audio_heads, "encoder_ffn_dim": 4 * self.audio_width,
                "decoder_layers": 1, "decoder_attention_heads": self.audio_heads,
                "decoder_ffn_dim": 4 * self.audio_width, "num_mel_bins": 80, "max_source_positions": 1500,
                "model_type": "whisper"}


@dataclass(frozen=True)
class CompactVocab:
    """The rows of the 151,748 the model uses (``real_ids``, in order), and the one shared row of the rest.

    Compact id ``i < len(real_ids)`` is real id ``real_ids[i]``; compact id ``len(real_ids)`` stands for every unused
    row (``unused_count`` of them).
    """

    real_ids: list[int]
    vocab_size: int = VOCAB_SIZE

    @classmethod
    def of_bpe(cls, piece_ids) -> "CompactVocab":
        """The BPE's piece ids, then every MiniCPM-o 4.5 special token."""
        return cls(sorted(set(piece_ids)) + list(range(BASE_VOCAB, VOCAB_SIZE)))

    @property
    def size(self) -> int:
        """Compact rows: the used ones and the shared one."""
        return len(self.real_ids) + 1

    @property
    def unused_count(self) -> int:
        return self.vocab_size - len(self.real_ids)

    @property
    def unused_log_count(self) -> float:
        """log(rows sharing the unused vector): added to its logit, it makes the compact softmax the full one."""
        return math.log(self.unused_count)

    def compact(self, real_id: int) -> int:
        return int(self.lookup()[real_id])

    def lookup(self):
        """A NumPy array real id -> compact id (the shared row for unused ids)."""
        import numpy as np

        table = np.full(self.vocab_size, len(self.real_ids), dtype=np.int64)
        table[np.asarray(self.real_ids, dtype=np.int64)] = np.arange(len(self.real_ids))
        return table


# ---------------------------------------------------------------------------------------------------- tokenizer

def v8_bpe(tokenizer_json: Path) -> tuple[dict[str, int], list[tuple[str, str]]]:
    """The embedded model's BPE pieces (ids kept) and merges, its special tokens taken out."""
    model = json.loads(Path(tokenizer_json).read_text(encoding="utf-8"))
    specials = {entry["content"] for entry in model["added_tokens"]}
    vocab = {piece: i for piece, i in model["model"]["vocab"].items() if piece not in specials}
    merges = [tuple(m.split(" ", 1)) if isinstance(m, str) else tuple(m) for m in model["model"]["merges"]]
    return vocab, merges


def write_tokenizer(out: Path, bpe: tuple[dict[str, int], list]) -> None:
    """MiniCPM-o 4.5's tokenizer files over ``bpe`` (its special tokens at their published ids, ``bad_token_ids``)."""
    from ticktock.adapters.minicpmo_tokens import tokenizer_files

    if any(i == UNK_ID for i in bpe[0].values()):
        raise ValueError(f"a BPE piece sits at {UNK_ID}, MiniCPM-o's <unk>")
    tokenizer_files(out, {BASE_VOCAB + i: token for i, token in enumerate(MINICPMO_ADDED)}, bpe=bpe)


# ---------------------------------------------------------------------------------------------------- the model

def checkpoint_config(shapes: Shapes) -> dict:
    """config.json of v9: the published keys and sub-configs at v9's sizes, marked as the embedded model."""
    from ticktock.adapters.minicpmo_layout import checkpoint_config as layout_config

    config = layout_config(VOCAB_SIZE, llm=shapes.llm(), audio=shapes.audio())
    config["ticktock_embedded"] = {"version": 9, "written_by": "ticktock.embedded.real_layout"}
    return config


def compact_llm(shapes: Shapes, vocab: CompactVocab, seed: int):
    """A seeded ``Qwen3ForCausalLM`` of v9's shapes over the compact vocabulary (training form)."""
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    config = Qwen3Config(vocab_size=vocab.size, **shapes.llm(), pad_token_id=None, bos_token_id=None,
                         eos_token_id=None)
    config._attn_implementation = "eager"
    torch.manual_seed(seed)
    return Qwen3ForCausalLM(config)


def audio_frontend(shapes: Shapes, seed: int):
    """A seeded ``MiniCPMAudioFrontend`` of v9's shapes (eager attention: the training and the CPU replay's)."""
    import torch

    from ticktock.adapters.minicpm_audio import MiniCPMAudioFrontend

    torch.manual_seed(seed)
    return MiniCPMAudioFrontend(shapes.audio(), shapes.hidden_size, 5, attn_implementation="eager")


def compact_logits(llm, hidden, vocab: CompactVocab):
    """The output layer of the compact model: the tied rows' logits, the shared row's raised by log(its count)."""
    logits = llm.lm_head(hidden)
    shared = logits.new_zeros(vocab.size)
    shared[-1] = vocab.unused_log_count
    return logits + shared


@dataclass
class CompactModel:
    """v9 in training form: the compact LLM, the audio front-end and the vocabulary that maps them to the real one."""

    llm: object
    frontend: object
    vocab: CompactVocab
    shapes: Shapes = field(default_factory=Shapes)
    record: dict = field(default_factory=dict)

    def state(self) -> dict:
        """Every tensor, under the real checkpoint's key prefixes (``llm.`` with the compact vocabulary)."""
        tensors = {f"llm.{k}": v for k, v in self.llm.state_dict().items() if k != "lm_head.weight"}
        return {**tensors, **self.frontend.state_dict()}


def save_compact(folder: Path, model: CompactModel, tokenizer_bpe: tuple[dict[str, int], list],
                 dtype: str = "float32") -> Path:
    """``compact.safetensors`` (``dtype``: float32 while training; bfloat16 ships, the real layout's own dtype, so
    the folder it gives is the same) and ``ticktock.json`` (shapes, vocabulary, tokenizer, training record) in
    ``folder``; returns the safetensors file."""
    import torch
    from safetensors.torch import save_file

    folder.mkdir(parents=True, exist_ok=True)
    path = folder / COMPACT_FILE
    partial = path.with_name(path.name + ".partial")
    save_file({k: v.detach().to(getattr(torch, dtype)).contiguous() for k, v in model.state().items()}, str(partial),
              metadata={"format": FORMAT})
    partial.replace(path)
    vocab, merges = tokenizer_bpe
    meta = {"format": FORMAT, "shapes": asdict(model.shapes), "real_ids": model.vocab.real_ids,
            "bpe": {"vocab": vocab, "merges": [" ".join(pair) for pair in merges]}, "training": model.record}
    (folder / META_FILE).write_text(json.dumps(meta, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    return path


class CompactError(RuntimeError):
    """A compact v9 folder that cannot be read (missing, torn, another format)."""


def load_compact(folder: Path) -> tuple[CompactModel, tuple[dict[str, int], list]]:
    """The compact model (fp32) and its BPE from a folder ``save_compact`` wrote."""
    from safetensors.torch import load_file

    folder = Path(folder)
    try:
        meta = json.loads((folder / META_FILE).read_text(encoding="utf-8"))
        if meta.get("format") != FORMAT:
            raise CompactError(f"{folder / META_FILE}: format {meta.get('format')!r:.40}, not {FORMAT!r}")
        tensors = load_file(str(folder / COMPACT_FILE))
    except CompactError:
        raise
    except Exception as err:  # a torn or foreign file: safetensors raises its own error, OSError or ValueError
        raise CompactError(f"{folder}: not a compact v9 model ({type(err).__name__}: {err})") from None
    shapes, vocab = Shapes(**meta["shapes"]), CompactVocab(list(meta["real_ids"]))
    llm, frontend = compact_llm(shapes, vocab, 0), audio_frontend(shapes, 0)
    tensors = {k: v.float() for k, v in tensors.items()}
    llm.load_state_dict({k[4:]: v for k, v in tensors.items() if k.startswith("llm.")}, strict=False)
    llm.tie_weights()
    frontend.load_state_dict({k: v for k, v in tensors.items() if not k.startswith("llm.")})
    bpe = (meta["bpe"]["vocab"], [tuple(m.split(" ", 1)) for m in meta["bpe"]["merges"]])
    return CompactModel(llm, frontend, vocab, shapes, meta.get("training", {})), bpe


# ------------------------------------------------------------------------------------------- the real layout

def real_tensors(model: CompactModel) -> dict:
    """The LLM and audio tensors under their published keys, the embedding expanded to 151,748 rows (bf16)."""
    import torch

    tensors = model.state()
    compact = tensors["llm.model.embed_tokens.weight"].detach().float()
    full = compact[-1:].expand(model.vocab.vocab_size, -1).clone()
    full[torch.as_tensor(model.vocab.real_ids)] = compact[:-1]
    tensors["llm.model.embed_tokens.weight"] = full
    return {k: v.detach().to(torch.bfloat16).contiguous() for k, v in tensors.items()}


def write_checkpoint(compact_folder: Path, out: Path, seed: int = 0, code2wav: bool = False) -> Path:
    """The real-layout folder of a compact v9 model: tokenizer, config.json, code files and the shards (the unused
    parts' weights seeded from ``seed``); with ``code2wav``, Code2Wav's assets too, small and random
    (``ticktock.adapters.token2wav_assets``, about 84 MB): what vLLM-Omni needs to send a reply's words, which reach
    its client only with the reply's audio."""
    from ticktock.adapters.minicpmo_layout import talker_tensors, vision_tensors, write_remote_code, write_shards

    import torch

    model, bpe = load_compact(compact_folder)
    out.mkdir(parents=True, exist_ok=True)
    write_tokenizer(out, bpe)
    config = checkpoint_config(model.shapes)
    (out / "config.json").write_text(json.dumps(config, indent=1), encoding="utf-8")
    write_remote_code(out, config)
    saved = torch.random.get_rng_state()
    torch.manual_seed(seed)
    try:
        unused = {**vision_tensors(config), **talker_tensors(config["tts_config"])}
    finally:
        torch.random.set_rng_state(saved)
    tensors = {**real_tensors(model), **{k: v.detach().to(torch.bfloat16).contiguous() for k, v in unused.items()}}
    write_shards(out, tensors)
    if code2wav:
        from ticktock.adapters.token2wav_assets import write_token2wav_assets

        write_token2wav_assets(out, seed)
    return out


def file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def models_home() -> Path:
    """Where materialized checkpoints live: ``$TICKTOCK_MODELS_HOME``, else ``~/.cache/ticktock/models``."""
    env = os.environ.get("TICKTOCK_MODELS_HOME")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "ticktock" / "models"


def materialize(compact_folder: Path | None = None, home: Path | None = None) -> Path:
    """The real-layout folder of a compact model (default: the shipped v9), written once under TickTock's home
    (``models_home()/embedded-v9-<digest>``) and reused; a half-written folder is never used (written aside, then renamed)."""
    import shutil
    import tempfile

    compact_folder = Path(compact_folder) if compact_folder is not None else SHIPPED
    key = file_digest(compact_folder / COMPACT_FILE)[:16]
    root = Path(home) if home is not None else models_home()
    final = root / f"embedded-v9-{key}"
    if (final / "config.json").is_file():
        return final
    root.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(prefix=f".embedded-v9-{key}-", dir=root))
    try:
        write_checkpoint(compact_folder, partial)
        os.replace(partial, final)
    except OSError:
        if not (final / "config.json").is_file():
            raise
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return final


def load_adapter(compact: str | None = None, path: str | None = None, ships_weights: bool = True, **settings):
    """``model=embedded_v9``: the ``minicpmo45`` adapter (``load_minicpmo_adapter``, the loader of the real 8B
    checkpoint) over v9's real-layout folder: ``path`` when given, else the materialized ``compact`` model (default:
    the shipped one). ``settings``: ``load_minicpmo_adapter``'s own (``ships_weights`` is the config's word to
    ``check_weights`` that nothing needs downloading)."""
    from ticktock.adapters.minicpmo import load_minicpmo_adapter

    folder = path if path is not None else str(materialize(Path(compact) if compact else None))
    return load_minicpmo_adapter(path=folder, **settings)


def configured_adapter(compact: Path | None = None, device: str = "cpu"):
    """The adapter ``model=embedded_v9`` builds (its config file's settings, ``configs/model/embedded_v9.yaml``) over
    the compact model in ``compact`` (default: the shipped one), on ``device``: what training lays its examples out
    with and what the evaluation replays."""
    from ticktock.replay.config import build, compose_run

    overrides = [f"device={device}"] + ([f"model.compact={Path(compact).resolve()}"] if compact else [])
    return build(compose_run("ar", "embedded_v9", None, overrides).model)


def main(argv=None) -> None:
    """``python -m ticktock.embedded.real_layout [--compact DIR] [--out DIR [--code2wav]]``: write v9's real-layout
    folder (default: the shipped v9, materialized once under ``models_home()``) and print its path, e.g. for a server
    to load."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m ticktock.embedded.real_layout", description=main.__doc__.split(":")[0])
    parser.add_argument("--compact", default=None, help="a compact v9 folder (default: the shipped weights)")
    parser.add_argument("--out", default=None, help="write the folder here instead of under the models home")
    parser.add_argument("--code2wav", action="store_true",
                        help="with --out: also write Code2Wav's assets (small, random), for vLLM-Omni's server")
    args = parser.parse_args(argv)
    compact = Path(args.compact) if args.compact else SHIPPED
    if not (compact / COMPACT_FILE).is_file():
        raise CompactError(f"{compact / COMPACT_FILE}: missing (a compact v9 folder holds {COMPACT_FILE} and {META_FILE})")
    if args.code2wav and not args.out:
        parser.error("--code2wav writes into a folder of its own: give --out")
    print(write_checkpoint(compact, Path(args.out), code2wav=args.code2wav) if args.out else materialize(compact))


if __name__ == "__main__":
    from ticktock.errors import user_errors

    with user_errors():
        main()
