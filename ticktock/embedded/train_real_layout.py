"""``python -m ticktock.embedded.train_real_layout``: train v9, the embedded model in MiniCPM-o 4.5's real layout.

v9 starts from v8 (``real_layout`` says what it is made of), in three steps, each a command that resumes where it
stopped (``--stage-minutes``; a checkpoint every ``--checkpoint-every`` steps):

1. ``init``: the compact model seeded from v8. The LLM takes v8's weights (v8 is a Llama of the same sizes; Qwen3's
   per-head q/k norms, which v8 lacks, start at the RMS of v8's queries and keys, measured on v8's own inputs), the
   embedding takes v8's rows (its pieces keep their ids; its special tokens move to MiniCPM-o's), and the audio
   encoder is new (seeded).
2. ``distill``: the Whisper encoder and projection learn to give, through MiniCPM-o's streaming front-end, the
   embeddings v8's front-end gives for the same audio (mean squared error, normalised by the targets' power): only
   the audio part trains, the LLM is not run.
3. ``tune``: everything trains on the task, as v8 did (the oracle plans of ``targets``, drawn phrasings, the
   cross-entropy of every output token), the examples laid out by the real ``minicpmo45`` adapter over the
   materialized checkpoint: its prompt, its unit tokens and MiniCPM-o's front-end, computed as streaming computes it
   (``MiniCPMAudioFrontend.embed_windows``). Speak units keep their text under the runtime's 28-character cut.

Example (the commands of the shipped v9 are in ``weights_v9/MODEL_CARD.md``)::

    python -m ticktock.embedded.train_real_layout init --out work_data/v9
    python -m ticktock.embedded.train_real_layout distill --out work_data/v9 --corpus work_data/train-v9-espeak \\
        --steps 400 --stage-minutes 20
    python -m ticktock.embedded.train_real_layout tune --out work_data/v9 --corpus work_data/train-v9-espeak \\
        --extra-corpus work_data/train-v9-tools --steps 900 --stage-minutes 60
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch

from ticktock.corpus.arguments import real_number, whole_number
from ticktock.embedded.data import AUDIO, IGNORE, Example, phrasing_examples, planned_tokens
from ticktock.embedded.real_layout import (CompactModel, CompactVocab, Shapes, V8_SPECIALS, audio_frontend,
                                           compact_llm, compact_logits, file_digest, load_compact,
                                           save_compact, v8_bpe)
from ticktock.embedded.targets import ReplyVariety

CHECKPOINT = "checkpoint.safetensors"
TRAINED = "trained"  # the compact model a stage leaves, beside its checkpoint


# ------------------------------------------------------------------------------------------------- init from v8

def from_v8(v8_folder: Path | None = None, shapes: Shapes = Shapes(), seed: int = 0) -> tuple[CompactModel, tuple]:
    """The compact v9 seeded from v8 (see the module docstring) and its BPE."""
    from ticktock.adapters.minicpmo_tokens import BASE_VOCAB, MINICPMO_ADDED
    from ticktock.embedded.model import WEIGHTS_DIR, load_embedded_adapter

    folder = Path(v8_folder) if v8_folder is not None else WEIGHTS_DIR
    v8 = load_embedded_adapter(folder)
    bpe = v8_bpe(folder / "tokenizer.json")
    vocab = CompactVocab.of_bpe(bpe[0].values())
    llm = compact_llm(shapes, vocab, seed)
    weights = v8.model.state_dict()
    body = {k: v for k, v in weights.items() if not k.endswith(("embed_tokens.weight", "lm_head.weight"))}
    missing, unexpected = llm.load_state_dict(body, strict=False)
    if unexpected or any("norm" not in key for key in missing if "embed_tokens" not in key and "lm_head" not in key):
        raise ValueError(f"{folder}: v8's LLM does not fit v9's shapes (unexpected {unexpected[:3]}, missing {missing[:3]})")
    table, v8_ids = weights["model.embed_tokens.weight"], v8.tokenizer.get_vocab()
    v8_names = {new: old for old, new in V8_SPECIALS.items()}
    rows = table.mean(0, keepdim=True).repeat(vocab.size, 1)
    for index, real in enumerate(vocab.real_ids):
        name = MINICPMO_ADDED[real - BASE_VOCAB] if real >= BASE_VOCAB else None
        v8_name = v8_names.get(name, name)
        if name is None:
            rows[index] = table[real]
        elif v8_name in v8_ids:
            rows[index] = table[v8_ids[v8_name]]
    rows[-1] = table[v8_ids["<|pad|>"]]  # the shared unused row: v8's never-written padding
    with torch.no_grad():
        llm.model.embed_tokens.weight.copy_(rows)
        llm.tie_weights()
        set_qk_norms(llm, v8.model, calibration_ids(v8))
    frontend = audio_frontend(shapes, seed + 1)
    record = {"init": {"from": "v8", "v8_model_sha256": file_digest(folder / "model.safetensors")[:16], "seed": seed}}
    return CompactModel(llm, frontend, vocab, shapes, record), bpe


def calibration_ids(v8) -> list[list[int]]:
    """v8 token ids of text it reads and writes: its prompt and the mini corpus's scripted replies."""
    from ticktock.sessions.manifest import load_manifest
    from ticktock.shipped import resource_path

    sessions = load_manifest(resource_path("manifests/ticktock-mini/manifest.jsonl"))[:40]
    texts = [a["text"] for s in sessions for a in s.expected.get("script", []) if a.get("text")]
    prompt = v8.encode_text(v8.prompt_text(None, []))
    return [prompt + v8.encode_text(" " + text) for text in texts]


@torch.no_grad()
def set_qk_norms(llm, v8_model, sequences: list[list[int]]) -> None:
    """Qwen3's q/k norms set to the RMS of v8's per-head queries and keys on ``sequences``, so that at the start each
    norm roughly gives back the vector it normalises (v8 has no such norms)."""
    sums: dict[str, list[float]] = {}

    def hook(name: str, head_dim: int):
        def record(module, inputs, output):
            rms = output.reshape(*output.shape[:-1], -1, head_dim).pow(2).mean(-1).sqrt()
            sums.setdefault(name, []).append(float(rms.mean()))
        return record

    head_dim = llm.config.head_dim
    handles = [getattr(layer.self_attn, proj).register_forward_hook(hook(f"{i}.{proj}", head_dim))
               for i, layer in enumerate(v8_model.model.layers) for proj in ("q_proj", "k_proj")]
    try:
        for ids in sequences:
            v8_model(torch.tensor([ids]))
    finally:
        for handle in handles:
            handle.remove()
    for i, layer in enumerate(llm.model.layers):
        layer.self_attn.q_norm.weight.fill_(float(np.mean(sums[f"{i}.q_proj"])))
        layer.self_attn.k_norm.weight.fill_(float(np.mean(sums[f"{i}.k_proj"])))


# ------------------------------------------------------------------------------------------------- examples

def session_windows(session, frontend) -> np.ndarray:
    """The mel windows streaming computes for every 1 s chunk of ``session``, concatenated: [frames, n_mels] fp16."""
    from ticktock.sessions.audio import load_audio

    audio = torch.from_numpy(np.ascontiguousarray(load_audio(session.audio_path), dtype=np.float32))
    spans = session.chunk_spans()
    total = int(round(spans[-1].end_s * 16_000))
    padded = torch.zeros(total)
    padded[: min(total, audio.shape[0])] = audio[:total]
    windows = frontend.session_mel_windows(padded, 16_000, None)
    if len(windows) != len(spans):
        raise ValueError(f"{session.session_id}: {len(windows)} mel windows for {len(spans)} chunks")
    return torch.cat(windows, dim=-1).T.numpy().astype(np.float16)


def split_windows(mel: np.ndarray) -> list[torch.Tensor]:
    """The windows ``session_windows`` concatenated: 102 frames for chunk 0, 104 for every later chunk."""
    from ticktock.adapters.minicpm_audio import REDUNDANT_FRAMES, UNIT_FRAMES

    first, later = UNIT_FRAMES + REDUNDANT_FRAMES, UNIT_FRAMES + 2 * REDUNDANT_FRAMES
    if (mel.shape[0] - first) % later:
        raise ValueError(f"{mel.shape[0]} mel frames are not one window of {first} and windows of {later}")
    cuts = [first + later * i for i in range((mel.shape[0] - first) // later)]
    return [torch.from_numpy(part.T.astype(np.float32)) for part in np.split(mel, cuts)]


def session_examples(session, adapter, executor, phrasings: int, seed: int, variety: ReplyVariety) -> list[Example]:
    """The examples of one session: its scripted plan and ``phrasings - 1`` drawn ones, sharing its mel windows."""
    if session.chunk_s != 1.0 or session.first_chunk_s not in (None, 1.0):
        raise ValueError(f"{session.session_id}: training uses 1 s chunks, got chunk_s={session.chunk_s}")
    tokens, labels, decisions = planned_tokens(session, adapter, executor)
    mel = session_windows(session, adapter.frontend)
    words = np.zeros(len(session.chunk_spans()) * adapter.frontend.embeds_per_second, dtype=np.int32)
    first = Example(session.session_id, session.task, tokens, labels, mel, decisions, words)
    return phrasing_examples(first, session, adapter, executor, phrasings, seed, variety)


def corpus_examples(folders: list[Path], adapter, executor, phrasings: int, seed: int, variety: ReplyVariety,
                    tag: str) -> list[list[Example]]:
    """Every training session's examples, built once per corpus folder and cached there (``examples-v9-*.npz``)."""
    from ticktock.embedded.example_cache import ExampleCacheError, read_examples, write_examples
    from ticktock.embedded.train import training_sessions

    examples = []
    for folder in folders:
        cache = Path(folder) / f"examples-v9-p{phrasings}-s{seed}-{tag}.npz"
        try:
            examples += read_examples(cache)
            continue
        except ExampleCacheError:
            pass
        began, built = time.time(), []
        sessions = training_sessions(Path(folder) / "manifest.jsonl")
        for i, session in enumerate(sessions):
            built.append(session_examples(session, adapter, executor, phrasings, seed, variety))
            if (i + 1) % 500 == 0:
                print(f"  {folder}: examples {i + 1}/{len(sessions)} ({time.time() - began:.0f} s)", flush=True)
        write_examples(cache, built)
        examples += built
    return examples


# ---------------------------------------------------------------------------------------------------- losses

def collate(examples: list[Example], lookup: np.ndarray) -> dict:
    """Token ids and labels in compact ids (padded), the audio-slot mask and each example's mel windows."""
    length = max(e.length for e in examples)
    tokens = torch.zeros((len(examples), length), dtype=torch.long)
    labels = torch.full((len(examples), length), IGNORE, dtype=torch.long)
    mask = torch.zeros((len(examples), length), dtype=torch.long)
    audio = torch.zeros((len(examples), length), dtype=torch.bool)
    for b, e in enumerate(examples):
        ids, target = e.tokens.astype(np.int64), e.labels.astype(np.int64)
        audio[b, : e.length] = torch.from_numpy(ids == AUDIO)
        tokens[b, : e.length] = torch.from_numpy(np.where(ids == AUDIO, 0, lookup[np.maximum(ids, 0)]))
        labels[b, : e.length] = torch.from_numpy(np.where(target == IGNORE, IGNORE, lookup[np.maximum(target, 0)]))
        mask[b, : e.length] = 1
    return {"tokens": tokens, "labels": labels, "attention_mask": mask, "audio_slots": audio,
            "windows": [split_windows(e.mel) for e in examples]}


def audio_embeddings(frontend, batch: dict) -> torch.Tensor:
    """Every example's audio embeddings, concatenated in slot order."""
    return torch.cat([frontend.embed_windows(windows) for windows in batch["windows"]])


def task_loss(model: CompactModel, batch: dict, bf16: bool = True) -> tuple[torch.Tensor, dict]:
    """Cross-entropy over the output tokens (full vocabulary, exactly: ``compact_logits``)."""
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        embeds = model.llm.get_input_embeddings()(batch["tokens"])
        audio = audio_embeddings(model.frontend, batch).to(embeds.dtype)
        embeds = embeds.masked_scatter(batch["audio_slots"][..., None], audio)
        hidden = model.llm.model(inputs_embeds=embeds, attention_mask=batch["attention_mask"]).last_hidden_state
        logits = compact_logits(model.llm, hidden, model.vocab)
    logits, labels = logits.float(), batch["labels"]
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1),
                                             ignore_index=IGNORE)
    with torch.no_grad():
        trained = labels != IGNORE
        correct = (logits.argmax(-1) == labels) & trained
    return loss, {"tokens": int(trained.sum()), "correct": int(correct.sum())}


def v8_targets(sessions, v8) -> dict[str, torch.Tensor]:
    """v8's front-end embeddings of each session's audio (what distillation matches), keyed by session id."""
    from ticktock.embedded.data import session_mel

    frontend, targets = v8.frontend, {}
    with torch.no_grad():
        for session in sessions:
            mel = torch.from_numpy(session_mel(session, frontend).astype(np.float32))
            context = torch.full((frontend.context_frames, frontend.n_mels), frontend.silence_level())
            targets[session.session_id] = frontend.embed_frames(torch.cat([context, mel])[None])[0].half()
    return targets


def distill_loss(frontend, examples: list[Example], targets: dict) -> torch.Tensor:
    """Mean squared error of v9's audio embeddings against v8's, over the targets' mean power."""
    mine = torch.cat([frontend.embed_windows(split_windows(e.mel)) for e in examples])
    theirs = torch.cat([targets[e.session_id].float() for e in examples])
    count = min(mine.shape[0], theirs.shape[0])
    return (mine[:count] - theirs[:count]).pow(2).mean() / theirs.pow(2).mean()


# ---------------------------------------------------------------------------------------------------- stages

def training_adapter(folder: Path):
    """The adapter of ``model=embedded_v9`` over the compact model in ``folder`` (``real_layout.configured_adapter``):
    it lays out the training examples exactly as a replay feeds them."""
    from ticktock.embedded.real_layout import configured_adapter

    return configured_adapter(folder)


def held_out(examples: list[list[Example]], count: int, seed: int) -> tuple[list[Example], set[str]]:
    """``count`` sessions' scripted examples for validation (drawn with ``seed``), and their ids."""
    order = np.random.default_rng(seed).permutation(len(examples))
    valid = [examples[i][0] for i in order[:count]]
    return valid, {e.session_id for e in valid}


@torch.no_grad()
def validate(model: CompactModel, examples: list[Example], lookup: np.ndarray) -> dict:
    model.llm.eval(), model.frontend.eval()
    loss_sum, tokens, correct = 0.0, 0, 0
    for start in range(0, len(examples), 4):
        loss, stats = task_loss(model, collate(examples[start : start + 4], lookup), bf16=False)
        loss_sum, tokens, correct = loss_sum + float(loss) * stats["tokens"], tokens + stats["tokens"], correct + stats["correct"]
    model.llm.train(), model.frontend.train()
    return {"val_loss": round(loss_sum / max(tokens, 1), 5), "val_token_acc": round(correct / max(tokens, 1), 4)}


def run_stage(args, model: CompactModel, params: list, step_loss, train_set: list, evaluate) -> dict:
    """Optimizer steps of one stage until ``--steps`` (resumable: a checkpoint every ``--checkpoint-every`` steps and
    at ``--stage-minutes``); returns the stage's record."""
    from ticktock.embedded.checkpoint import save_state
    from ticktock.embedded.train import Progress, learning_rate, load_checkpoint, next_batch, restore

    out, rng = Path(args.out), np.random.default_rng(args.seed)
    optimizer = torch.optim.AdamW(params, lr=args.lr, betas=(0.9, 0.98), weight_decay=0.01)
    modules = {"llm": model.llm, "frontend": model.frontend, "optimizer": optimizer}
    options = {"stage": args.stage, **{k: v for k, v in vars(args).items() if k in STAGE_OPTIONS}}
    progress = Progress()
    state = load_checkpoint(out / CHECKPOINT, options)
    if state is not None:
        progress = restore(state, modules, rng, out / CHECKPOINT)
        print(f"resuming {args.stage} at step {progress.step}/{args.steps}", flush=True)

    def checkpoint() -> None:
        save_state(out / CHECKPOINT, {**{k: m.state_dict() for k, m in modules.items()}, "options": options,
                                      "numpy_rng": rng.bit_generator.state, "torch_rng": torch.get_rng_state(),
                                      "progress": asdict(progress)})

    began, before, log = time.time(), progress.elapsed_s, (out / f"{args.stage}_log.csv").open("a")
    with log:
        while progress.step < args.steps:
            if args.stage_minutes and time.time() - began > 60 * args.stage_minutes:
                progress.elapsed_s = before + time.time() - began
                checkpoint()
                print(f"stage over at step {progress.step}/{args.steps}; the same command resumes", flush=True)
                return {}
            lr = learning_rate(progress.step, args.steps, args.lr, args.warmup)
            for group in optimizer.param_groups:
                group["lr"] = lr
            loss = step_loss([train_set[i] for i in next_batch(progress, train_set, args.batch_tokens, rng)])
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            optimizer.step()
            value = float(loss.detach())
            progress.running = value if progress.running is None else 0.95 * progress.running + 0.05 * value
            progress.step += 1
            progress.elapsed_s = before + time.time() - began
            if progress.step % args.log_every == 0 or progress.step == args.steps:
                scores = evaluate() if progress.step % args.val_every == 0 or progress.step == args.steps else {}
                log.write(f"{progress.step},{progress.elapsed_s:.1f},{lr:.6f},{progress.running:.5f},"
                          f"{json.dumps(scores)}\n")
                log.flush()
                print(f"{args.stage} step {progress.step}/{args.steps} {progress.elapsed_s:.0f}s lr {lr:.2e} "
                      f"loss {progress.running:.4f} {scores}", flush=True)
            if args.checkpoint_every and progress.step % args.checkpoint_every == 0 and progress.step < args.steps:
                checkpoint()
    return {"steps": progress.step, "minutes": round(progress.elapsed_s / 60, 1), "lr": args.lr,
            "batch_tokens": args.batch_tokens, "final": evaluate(), "threads": torch.get_num_threads()}


STAGE_OPTIONS = ("corpus", "extra_corpus", "steps", "warmup", "lr", "batch_tokens", "seed", "phrasings", "framing",
                 "frames", "mixing", "wording", "sessions", "task_weight")


def stage_data(args, folder: Path):
    """The adapter, the examples of every corpus, the validation examples and the training examples."""
    from ticktock.embedded.train import augmented_of, variety_tag
    from ticktock.world.mock_tools import MockToolExecutor

    adapter = training_adapter(folder)
    variety = ReplyVariety(framing=args.framing, mixing=args.mixing, frames=args.frames, wording=args.wording)
    tag = variety_tag(variety).lstrip("-") or "plain"
    corpora = [Path(args.corpus), *map(Path, args.extra_corpus)]
    examples = corpus_examples(corpora[:1], adapter, MockToolExecutor(), args.phrasings, args.seed, variety, tag)
    valid, held = held_out(examples, args.validation, args.seed)
    extra = corpus_examples(corpora[1:], adapter, MockToolExecutor(), args.phrasings, args.seed, variety, tag)
    copies = {s.session_id for folder in corpora[1:] for s in _sessions(folder) if augmented_of(s) in held}
    weights = dict(args.task_weight)
    train_set = [e for draws in examples + extra for e in draws if e.session_id not in held | copies
                 for _ in range(weights.get(e.task, 1))]
    return adapter, valid, train_set


def distill(args) -> None:
    from ticktock.embedded.model import load_embedded_adapter

    out = Path(args.out)
    model, bpe = load_compact(out / TRAINED)
    torch.set_num_threads(args.threads)
    adapter, valid, train_set = stage_data(args, out / TRAINED)
    firsts = list({e.session_id: e for e in train_set}.values())
    chosen = [firsts[i] for i in np.random.default_rng(args.seed).permutation(len(firsts))[: args.sessions]]
    sessions = {s.session_id: s for folder in [args.corpus, *args.extra_corpus]
                for s in _sessions(folder) if s.session_id in {e.session_id for e in chosen + valid}}
    v8 = load_embedded_adapter()
    print(f"distilling on {len(chosen)} sessions: v8's front-end targets ...", flush=True)
    targets = v8_targets(sessions.values(), v8)
    params = list(model.frontend.parameters())
    for p in model.llm.parameters():
        p.requires_grad_(False)

    def evaluate() -> dict:
        with torch.no_grad():
            return {"val_mse": round(float(distill_loss(model.frontend, valid[:16], targets)), 5)}

    record = run_stage(args, model, params, lambda batch: distill_loss(model.frontend, batch, targets), chosen, evaluate)
    finish(args, model, bpe, record)


def _sessions(folder):
    from ticktock.embedded.train import training_sessions

    return training_sessions(Path(folder) / "manifest.jsonl")


def tune(args) -> None:
    out = Path(args.out)
    model, bpe = load_compact(out / TRAINED)
    torch.set_num_threads(args.threads)
    adapter, valid, train_set = stage_data(args, out / TRAINED)
    lookup = model.vocab.lookup()
    params = list(model.llm.parameters()) + list(model.frontend.parameters())
    record = run_stage(args, model, params, lambda batch: task_loss(model, collate(batch, lookup))[0], train_set,
                       lambda: validate(model, valid, lookup))
    finish(args, model, bpe, record)


def finish(args, model: CompactModel, bpe, record: dict) -> None:
    """A finished stage's compact model replaces ``trained`` (its record appended); its checkpoint is removed."""
    if not record:
        return
    out = Path(args.out)
    model.record = {**model.record, args.stage: {**record, **{k: v for k, v in vars(args).items() if k in STAGE_OPTIONS}}}
    save_compact(out / TRAINED, model, bpe)
    (out / CHECKPOINT).unlink(missing_ok=True)
    print(json.dumps(record), flush=True)


def ship(args) -> None:
    """The trained compact model in bfloat16 (the real layout's dtype: the same folder materializes) in ``--ship-to``
    (default: the package's ``weights_v9``), with its training record; the model card is written by hand."""
    from ticktock.embedded.real_layout import SHIPPED

    model, bpe = load_compact(Path(args.out) / TRAINED)
    target = Path(args.ship_to) if args.ship_to else SHIPPED
    save_compact(target, model, bpe, dtype="bfloat16")
    print(f"{target}: v9 shipped (bfloat16)", flush=True)


def init(args) -> None:
    model, bpe = from_v8(args.v8, Shapes(), args.seed)
    save_compact(Path(args.out) / TRAINED, model, bpe)
    print(f"{Path(args.out) / TRAINED}: v9 seeded from v8, {sum(p.numel() for p in model.llm.parameters()):,} LLM "
          f"and {sum(p.numel() for p in model.frontend.parameters()):,} audio parameters (compact)", flush=True)


def main(argv=None) -> None:
    from ticktock.embedded.targets import FRAME_SETS
    from ticktock.embedded.train import rate_argument, task_weight

    parser = argparse.ArgumentParser(prog="python -m ticktock.embedded.train_real_layout",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("stage", choices=("init", "distill", "tune", "ship"))
    parser.add_argument("--out", required=True, help="the training folder (its compact model in trained/)")
    parser.add_argument("--v8", default=None, help="init: v8's folder (default: the shipped weights)")
    parser.add_argument("--ship-to", default=None, help="ship: the folder (default: the package's weights_v9)")
    parser.add_argument("--corpus", help="distill, tune: the training corpus (validation sessions drawn from it)")
    parser.add_argument("--extra-corpus", action="append", default=[], metavar="DIR")
    parser.add_argument("--seed", type=whole_number(0, 2**31 - 1), default=0)
    parser.add_argument("--steps", type=whole_number(1, 10**8), default=400)
    parser.add_argument("--warmup", type=whole_number(0, 10**8), default=50)
    parser.add_argument("--lr", type=real_number(0.0, 1.0, above=True), default=1e-3)
    parser.add_argument("--batch-tokens", type=whole_number(1, 10**7), default=6000)
    parser.add_argument("--sessions", type=whole_number(1, 10**6), default=1200, help="distill: sessions distilled on")
    parser.add_argument("--validation", type=whole_number(1, 10**4), default=32)
    parser.add_argument("--phrasings", type=whole_number(1, 64), default=1)
    parser.add_argument("--framing", type=rate_argument, default=0.0)
    parser.add_argument("--frames", choices=sorted(FRAME_SETS), default="basic")
    parser.add_argument("--mixing", type=rate_argument, default=0.0)
    parser.add_argument("--wording", type=rate_argument, default=0.0)
    parser.add_argument("--task-weight", action="append", default=[], metavar="TASK=N", type=task_weight)
    parser.add_argument("--threads", type=whole_number(1, 1024), default=2)
    parser.add_argument("--stage-minutes", type=real_number(0.0), default=0.0)
    parser.add_argument("--checkpoint-every", type=whole_number(0, 10**8), default=100)
    parser.add_argument("--log-every", type=whole_number(1, 10**8), default=10)
    parser.add_argument("--val-every", type=whole_number(1, 10**8), default=100)
    args = parser.parse_args(argv)
    if args.stage in ("distill", "tune") and not args.corpus:
        parser.error(f"{args.stage} needs --corpus")
    {"init": init, "distill": distill, "tune": tune, "ship": ship}[args.stage](args)


if __name__ == "__main__":
    from ticktock.errors import user_errors

    with user_errors():
        main()
