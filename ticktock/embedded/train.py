"""``python -m ticktock.embedded.train``: train the embedded model from scratch on synthetic sessions.

Reproducible from a seed: the training corpus comes from the corpus generator (split "train": seeds and
item instances disjoint from the shipped evaluation corpus), the tokenizer is trained on its text, the
model is initialised from ``--seed`` and trained for a fixed number of optimizer steps on batches drawn
with that seed. Loss curves go to ``training_log.csv`` and ``loss.png`` in the output folder.

Training runs in **stages**: ``--stage-minutes M`` (or ``--stage-steps N``) stops at a checkpoint
(``<out>/checkpoint.pt``: weights, optimizer, random states, the epoch's batches and where it is in them), and the
same command resumes it exactly where it stopped, bit for bit on the same machine and thread count; a checkpoint
is also saved every ``--checkpoint-every`` steps, so a crash loses little. A checkpoint of other training options
is refused, naming them. The examples built from the corpus are cached in the corpus folder.

Example (a model from scratch, as the shipped weights' first stage; about 80 minutes on 2 CPU cores, plus 11
minutes to synthesize the corpus; the second stage is in ``weights/MODEL_CARD.md``)::

    python -m ticktock.embedded.train --corpus work_data/train-corpus-1000 --generate 1000 \\
        --out work_data/model --steps 2800 --warmup 150 --val-every 400 --task-weight fdb_v3=2
    python -m ticktock.embedded.train ... --stage-minutes 150     # the same, in stages of at most 150 minutes

``--init DIR`` continues training from a trained model folder (its weights, front-end, tokenizer and
architecture): a curriculum, e.g. the shipped weights trained further on augmented audio. The folder's
weights digest is recorded, so the chain of commands that made a model is in its ``ticktock.json``.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import pickle
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch

from ticktock.results.atomic import atomic_write
from ticktock.embedded.data import batches, build_example, collate, forward_loss, phrasing_examples, word_vocabulary
from ticktock.embedded.model import (Architecture, SYSTEM_PROMPT, build_model, load_embedded_adapter, make_adapter,
                                     save_model)
from ticktock.embedded.targets import FRAME_SETS, ReplyVariety, tool_call_text
from ticktock.embedded.tokenizer import train_tokenizer
from ticktock.sessions.manifest import load_manifest
from ticktock.world.mock_tools import MockToolExecutor

TRAIN_SEED_BASE = 1_000_000


def generate_corpus(folder: Path, per_task: int, seed: int) -> Path:
    manifest = folder / "manifest.jsonl"
    if manifest.is_file():
        return manifest
    command = [sys.executable, "-m", "ticktock.corpus.synth", "--out", str(folder), "--split", "train",
               "--seed", str(TRAIN_SEED_BASE + seed), "--sessions-per-task", str(per_task)]
    print("generating the training corpus:", " ".join(command), flush=True)
    subprocess.run(command, check=True)
    return manifest


def corpus_texts(sessions, executor) -> list[str]:
    """Everything the model reads or writes as text, for the tokenizer."""
    texts = [SYSTEM_PROMPT]
    for session in sessions:
        for action in session.expected.get("script", []):
            texts += [" " + text for text in [action.get("text"), *action.get("variants", [])] if text]
            if action.get("action") == "tool_call":
                texts += [tool_call_text(action["call"]), "\n" + executor.respond(action["call"]) + "\n"]
    return texts


def load_examples(sessions, adapter, executor, vocabulary, cache: Path, phrasings: int = 1, seed: int = 0,
                  variety: ReplyVariety = ReplyVariety()):
    """Per session, its examples: the scripted phrasing and ``phrasings - 1`` drawn ones (``phrasing_examples``,
    mixed and framed as ``variety`` says), sharing the audio; built once and cached in ``cache``."""
    if cache.is_file():
        return pickle.loads(cache.read_bytes())
    examples = []
    began = time.time()
    for i, session in enumerate(sessions):
        first = build_example(session, adapter, executor, vocabulary)
        examples.append(phrasing_examples(first, session, adapter, executor, phrasings, seed, variety))
        if (i + 1) % 500 == 0:
            print(f"  examples {i + 1}/{len(sessions)} ({time.time() - began:.0f} s)", flush=True)
    with atomic_write(cache) as tmp:
        tmp.write_bytes(pickle.dumps(examples))
    return examples


def variety_tag(variety: ReplyVariety) -> str:
    """The example cache name's part for ``variety``; empty for none, the names of the runs before the knobs
    (the basic frames are the only ones before ``--frames``).

    >>> variety_tag(ReplyVariety()), variety_tag(ReplyVariety(framing=0.8)), variety_tag(ReplyVariety(0.8, 0.6))
    ('', '-f0.8', '-f0.8-m0.6')
    >>> variety_tag(ReplyVariety(0.8, 0.6, frames="wide")), variety_tag(ReplyVariety(1.0, 0.8, "wide", wording=1.0))
    ('-f0.8-wide-m0.6', '-f1-wide-m0.8-w1')
    """
    frames = "" if variety.frames == "basic" else f"-{variety.frames}"
    framing = f"-f{variety.framing:g}{frames}" if variety.framing else ""
    mixing = f"-m{variety.mixing:g}" if variety.mixing else ""
    return framing + mixing + (f"-w{variety.wording:g}" if variety.wording else "")


def training_sessions(manifest: Path) -> list:
    """The sessions of a training corpus (split "train" only: no evaluation item is ever trained on)."""
    sessions = load_manifest(manifest)
    splits = {s.provenance.get("split") for s in sessions}
    if splits != {"train"}:
        raise SystemExit(f"{manifest}: training needs split 'train' sessions only, found {sorted(map(str, splits))}")
    return sessions


def augmented_of(session) -> str | None:
    """The session an augmented session was made from (``ticktock.corpus.augment``), or None."""
    return (session.provenance.get("augmentation") or {}).get("of")


def task_weight(text: str) -> tuple[str, int]:
    """``--task-weight`` values: ``TASK=N`` with N a whole number >= 1, e.g. ``fdb_v3=2``."""
    task, sep, count = text.partition("=")
    if not sep or not task or not count.isdigit() or int(count) < 1:
        raise argparse.ArgumentTypeError(f"expected TASK=N with N a whole number >= 1 (e.g. fdb_v3=2), got {text!r}")
    return task, int(count)


def rate_argument(text: str) -> float:
    """``--framing``, ``--mixing`` and ``--wording`` values: a rate in [0, 1], e.g. ``0.8``."""
    try:
        rate = float(text)
    except ValueError:
        rate = math.nan
    if not 0.0 <= rate <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a rate between 0 and 1 (e.g. 0.8), got {text!r}")
    return rate


def learning_rate(step: int, steps: int, peak: float, warmup: int) -> float:
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = (step - warmup) / max(1, steps - warmup)
    return peak * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))


@torch.no_grad()
def validate(model, frontend, examples, pad_id: int) -> dict:
    model.eval(), frontend.eval()
    loss_sum, tokens, correct = 0.0, 0, 0
    for start in range(0, len(examples), 4):
        batch = collate(examples[start : start + 4], frontend, pad_id)
        loss, stats = forward_loss(model, frontend, batch)
        loss_sum += float(loss) * stats["tokens"]
        tokens += stats["tokens"]
        correct += stats["correct"]
    model.train(), frontend.train()
    return {"val_loss": loss_sum / max(tokens, 1), "val_token_acc": correct / max(tokens, 1)}


def plot_losses(log: Path, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = list(csv.DictReader(log.open()))
    steps = [int(r["step"]) for r in rows]
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(steps, [float(r["train_loss"]) for r in rows], label="train (running mean)")
    val = [(int(r["step"]), float(r["val_loss"])) for r in rows if r["val_loss"]]
    if val:
        ax.plot(*zip(*val), "o-", label="validation")
    ax.set_yscale("log"), ax.set_xlabel("optimizer step"), ax.set_ylabel("cross-entropy (output tokens)")
    ax.legend(), ax.grid(alpha=0.3), ax.set_title("embedded model training")
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


RUN_OPTIONS = ("corpus", "init", "extra_corpus", "phrasings", "framing", "frames", "mixing", "wording", "generate",
               "seed", "vocab", "hidden", "layers", "steps", "warmup", "lr", "batch_tokens", "bf16", "word_weight",
               "task_weight", "log_every", "val_every")  # what makes a training run: a checkpoint resumes only the same run
CHECKPOINT = "checkpoint.pt"
LOG_COLUMNS = ["step", "elapsed_s", "lr", "train_loss", "train_token_acc", "word_acc", "val_loss", "val_token_acc"]


class TrainingRunError(SystemExit):
    """A checkpoint that belongs to another training run (different options), or cannot be read."""


def run_options(args) -> dict:
    """The options that define the training run (not threads, stage length or the output folder)."""
    return {name: getattr(args, name) if name != "task_weight" else sorted(map(list, args.task_weight))
            for name in RUN_OPTIONS}


def tokenizer_digest(tokenizer) -> str:
    """A short digest of the tokenizer's vocabulary: cached examples are only reused with the same tokenizer."""
    import hashlib

    vocabulary = sorted(tokenizer.get_vocab().items())
    return hashlib.sha256(json.dumps(vocabulary).encode()).hexdigest()[:10]


@dataclass
class Progress:
    """Where a training run is: ``step`` optimizer steps done, the current epoch's batches and the next one's
    index, the running loss and the training time so far (all stages)."""

    step: int = 0
    epoch: list[list[int]] | None = None
    next_batch: int = 0
    running: float | None = None
    elapsed_s: float = 0.0


def save_checkpoint(path: Path, state: dict) -> None:
    """Write a checkpoint atomically (a crash while saving keeps the previous one)."""
    partial = path.with_suffix(".partial")
    torch.save(state, partial)
    partial.replace(path)


def load_checkpoint(path: Path, options: dict) -> dict | None:
    """The checkpoint in ``path`` (None: there is none), refused when it was made with other options."""
    if not path.is_file():
        return None
    try:
        state = torch.load(path, weights_only=False)
    except Exception as err:  # a torn or foreign file: say which, and how to start over
        raise TrainingRunError(f"{path}: cannot read the checkpoint ({err}); delete it to train from the start") from None
    changed = {k: (state["options"].get(k), v) for k, v in options.items() if state["options"].get(k) != v}
    if changed:
        detail = ", ".join(f"--{k.replace('_', '-')} {old!r} -> {new!r}" for k, (old, new) in changed.items())
        raise TrainingRunError(f"{path}: a checkpoint of another training run ({detail}); use another --out, "
                               "or delete the checkpoint to train from the start")
    return state


def next_batch(progress: Progress, train_set, batch_tokens: int, rng) -> list[int]:
    """The next batch of the current epoch, drawing a new epoch (with ``rng``) when it is used up."""
    if progress.epoch is None or progress.next_batch >= len(progress.epoch):
        progress.epoch, progress.next_batch = batches(train_set, batch_tokens, rng), 0
    progress.next_batch += 1
    return progress.epoch[progress.next_batch - 1]


def open_log(path: Path, step: int):
    """The training log, kept up to ``step`` (rows a crash wrote after the last checkpoint are dropped)."""
    rows = list(csv.reader(path.open())) if step and path.is_file() else []
    kept = [rows[0]] + [r for r in rows[1:] if int(r[0]) <= step] if rows else [LOG_COLUMNS]
    handle = path.open("w", newline="")
    writer = csv.writer(handle)
    writer.writerows(kept)
    handle.flush()
    return handle, writer


def stage_over(args, seconds: float, steps: int) -> bool:
    """Whether this stage has run its ``--stage-minutes`` or ``--stage-steps``."""
    return bool((args.stage_minutes and seconds > 60 * args.stage_minutes) or (args.stage_steps and steps >= args.stage_steps))


def initial_model(args, sessions, executor):
    """The model to train: ``--init``'s trained folder (the LLM, front-end, tokenizer and architecture, and a record
    of where it came from), or a new one initialised from ``--seed`` with a tokenizer trained on the corpus text."""
    if args.init:
        import hashlib

        folder = Path(args.init)
        adapter = load_embedded_adapter(folder)
        meta = json.loads((folder / "ticktock.json").read_text())
        digest = hashlib.sha256((folder / "model.safetensors").read_bytes()).hexdigest()[:16]
        origin = {"folder": str(folder), "model_sha256": digest, "training": meta.get("training")}
        return adapter.model, adapter.frontend, adapter.tokenizer, Architecture(**meta["architecture"]), origin
    tokenizer = train_tokenizer(corpus_texts(sessions, executor), args.vocab)
    arch = Architecture(hidden_size=args.hidden, num_layers=args.layers, intermediate_size=args.hidden * 3)
    model, frontend = build_model(tokenizer, arch, args.seed)
    return model, frontend, tokenizer, arch, None


def train(args) -> None:
    """Train (or resume) the run of ``args``; with ``--stage-minutes``, stop at a checkpoint after that long."""
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    rng = np.random.default_rng(args.seed)
    corpus = Path(args.corpus)
    manifest = generate_corpus(corpus, args.generate, args.seed) if args.generate else corpus / "manifest.jsonl"
    sessions = training_sessions(manifest)
    extra = [training_sessions(Path(folder) / "manifest.jsonl") for folder in args.extra_corpus]
    executor = MockToolExecutor()
    model, frontend, tokenizer, arch, origin = initial_model(args, sessions, executor)
    model.config._attn_implementation = "sdpa"  # training only; inference and the shipped config use eager
    adapter = make_adapter(model, frontend, tokenizer, arch)
    print(f"{len(sessions)} sessions, vocab {len(tokenizer)}, "
          f"{sum(p.numel() for p in model.parameters()) + sum(p.numel() for p in frontend.parameters()):,} parameters", flush=True)
    vocabulary = word_vocabulary(sessions)
    word_head = torch.nn.Linear(arch.hidden_size, len(vocabulary) + 2)  # auxiliary, not shipped
    variety = ReplyVariety(framing=args.framing, mixing=args.mixing, frames=args.frames, wording=args.wording)
    cache = f"examples-v{len(tokenizer)}-s{args.seed}-p{args.phrasings}{variety_tag(variety)}-{tokenizer_digest(tokenizer)}.pkl"
    examples = load_examples(sessions, adapter, executor, vocabulary, corpus / cache, args.phrasings, args.seed,
                             variety)
    order = rng.permutation(len(examples))
    held = max(16, len(examples) // 50)
    valid = [examples[i][0] for i in order[:held]]  # the scripted phrasing, as the evaluation corpus has it
    held_ids = {e.session_id for e in valid}
    weights = dict(args.task_weight)
    train_set = [e for i in order[held:] for e in examples[i] for _ in range(weights.get(e.task, 1))]
    for folder, more in zip(args.extra_corpus, extra):  # augmented copies of validation sessions stay out
        kept = [s for s in more if augmented_of(s) not in held_ids]
        drawn = load_examples(kept, adapter, executor, vocabulary, Path(folder) / cache, args.phrasings, args.seed,
                              variety)
        train_set += [e for draws in drawn for e in draws for _ in range(weights.get(e.task, 1))]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    params = list(model.parameters()) + list(frontend.parameters()) + list(word_head.parameters())
    optimizer = torch.optim.AdamW(params, lr=args.lr, betas=(0.9, 0.98), weight_decay=0.01)
    modules = {"model": model, "frontend": frontend, "word_head": word_head, "optimizer": optimizer}
    options, progress = run_options(args), Progress()
    resumed = load_checkpoint(out / CHECKPOINT, options)
    if resumed is not None:
        for name, module in modules.items():
            module.load_state_dict(resumed[name])
        rng.bit_generator.state = resumed["numpy_rng"]
        torch.set_rng_state(resumed["torch_rng"])
        progress = Progress(**resumed["progress"])
        print(f"resuming {out / CHECKPOINT} at step {progress.step}/{args.steps}", flush=True)

    def checkpoint() -> None:
        save_checkpoint(out / CHECKPOINT, {**{k: m.state_dict() for k, m in modules.items()}, "options": options,
                                           "numpy_rng": rng.bit_generator.state, "torch_rng": torch.get_rng_state(),
                                           "progress": asdict(progress)})

    model.train(), frontend.train()
    stage_began, resumed_elapsed, stage_first_step = time.time(), progress.elapsed_s, progress.step
    handle, writer = open_log(out / "training_log.csv", progress.step)
    with handle:
        while progress.step < args.steps:
            if args.minutes and time.time() - stage_began > 60 * args.minutes:
                break
            if stage_over(args, time.time() - stage_began, progress.step - stage_first_step):
                progress.elapsed_s = resumed_elapsed + time.time() - stage_began
                checkpoint()
                print(f"stage over at step {progress.step}/{args.steps}: {out / CHECKPOINT} saved; the same command "
                      "resumes", flush=True)
                return
            lr = learning_rate(progress.step, args.steps, args.lr, args.warmup)
            for group in optimizer.param_groups:
                group["lr"] = lr
            batch = collate([train_set[i] for i in next_batch(progress, train_set, args.batch_tokens, rng)], frontend,
                            tokenizer.pad_token_id)
            loss, stats = forward_loss(model, frontend, batch, bf16=args.bf16, word_head=word_head,
                                       word_weight=args.word_weight)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            optimizer.step()
            value = float(loss.detach())
            progress.running = value if progress.running is None else 0.98 * progress.running + 0.02 * value
            progress.step += 1
            progress.elapsed_s = resumed_elapsed + time.time() - stage_began
            step = progress.step
            if step % args.log_every == 0 or step == args.steps:
                val = validate(model, frontend, valid, tokenizer.pad_token_id) if step % args.val_every == 0 or step == args.steps else {}
                writer.writerow([step, round(progress.elapsed_s, 1), f"{lr:.6f}", f"{progress.running:.5f}",
                                 f"{stats['correct'] / max(stats['tokens'], 1):.4f}", f"{stats.get('word_acc', 0):.4f}",
                                 f"{val['val_loss']:.5f}" if val else "", f"{val['val_token_acc']:.4f}" if val else ""])
                handle.flush()
                print(f"step {step}/{args.steps} {progress.elapsed_s:.0f}s lr {lr:.2e} loss {progress.running:.4f} "
                      f"word acc {stats.get('word_acc', 0):.3f} {val}", flush=True)
            if args.checkpoint_every and step % args.checkpoint_every == 0 and step < args.steps:
                checkpoint()
    training = {"seed": args.seed, "steps": progress.step, "planned_steps": args.steps,
                "train_minutes": round(progress.elapsed_s / 60, 1),
                "sessions": len(sessions), "train_examples": len(train_set), "validation_sessions": len(valid),
                "phrasings": args.phrasings, "framing": args.framing, "frames": args.frames, "mixing": args.mixing,
                "wording": args.wording, "extra_corpora": [str(f) for f in args.extra_corpus],
                "extra_sessions": sum(map(len, extra)),
                "corpus_seed": TRAIN_SEED_BASE + args.seed, "sessions_per_task": args.generate, "vocab": len(tokenizer),
                "batch_tokens": args.batch_tokens, "lr": args.lr, "word_weight": args.word_weight,
                "task_weights": weights, "init": origin,
                "word_vocabulary": len(vocabulary), "threads": args.threads, "bf16_autocast": args.bf16,
                "final": validate(model, frontend, valid, tokenizer.pad_token_id)}
    model.config._attn_implementation = "eager"
    save_model(out, model, frontend, tokenizer, arch, training)
    plot_losses(out / "training_log.csv", out / "loss.png")
    print(json.dumps(training, indent=2))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", required=True, help="folder of the training corpus (generated there if --generate)")
    parser.add_argument("--generate", type=int, default=0, help="sessions per task to generate when the folder is empty")
    parser.add_argument("--extra-corpus", action="append", default=[], metavar="DIR",
                        help="more training sessions, e.g. an augmented copy of the corpus (python -m "
                             "ticktock.corpus.augment); copies of validation sessions are left out (repeatable)")
    parser.add_argument("--phrasings", type=int, default=1,
                        help="examples per session: the scripted phrasing of every reply, and N - 1 with each reply's "
                             "phrasing drawn from its variants (sharing the audio)")
    parser.add_argument("--framing", type=rate_argument, default=0.0,
                        help="in the drawn phrasings, the rate of replies that open with an acknowledgement or filler "
                             "(half as many close with a closing remark; 0: none)")
    parser.add_argument("--frames", choices=sorted(FRAME_SETS), default="basic",
                        help="the openers and closers --framing draws from: basic (8 + 3) or wide (24 + 7, with "
                             "fillers such as 'Um.' and 'Well.')")
    parser.add_argument("--mixing", type=rate_argument, default=0.0,
                        help="in the drawn phrasings, the rate of replies rebuilt sentence by sentence from their "
                             "phrasings (0: none)")
    parser.add_argument("--wording", type=rate_argument, default=0.0,
                        help="in the drawn phrasings, the rate of words and contractions redrawn among their "
                             "interchangeable forms ('it is' / 'it's', 'big' / 'large'; 0: none)")
    parser.add_argument("--out", required=True, help="model folder to write")
    parser.add_argument("--init", default=None, metavar="DIR",
                        help="continue from this trained model folder (its weights, tokenizer and architecture; "
                             "--vocab, --hidden and --layers are then not used)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--vocab", type=int, default=512)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--layers", type=int, default=6)
    parser.add_argument("--steps", type=int, default=6000)
    parser.add_argument("--warmup", type=int, default=300)
    parser.add_argument("--lr", type=float, default=1.5e-3)
    parser.add_argument("--batch-tokens", type=int, default=6000)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--bf16", action=argparse.BooleanOptionalAction, default=True,
                        help="bfloat16 autocast for the matrix products (fp32 weights)")
    parser.add_argument("--minutes", type=float, default=0.0, help="safety stop (0: none); the run is then not the planned one")
    parser.add_argument("--stage-minutes", type=float, default=0.0,
                        help="stop after this long at a checkpoint; the same command resumes it (0: train to the end)")
    parser.add_argument("--stage-steps", type=int, default=0,
                        help="stop after this many steps at a checkpoint; the same command resumes it (0: no limit)")
    parser.add_argument("--checkpoint-every", type=int, default=200,
                        help="save a checkpoint every N steps (0: only at the end of a stage), so a crash loses little")
    parser.add_argument("--word-weight", type=float, default=0.5, help="weight of the auxiliary word-recognition loss")
    parser.add_argument("--task-weight", action="append", default=[], metavar="TASK=N", type=task_weight,
                        help="repeat the training sessions of TASK N times per epoch (e.g. fdb_v3=2)")
    parser.add_argument("--log-every", type=int, default=20)
    parser.add_argument("--val-every", type=int, default=500)
    train(parser.parse_args(argv))


if __name__ == "__main__":
    main()
