"""``python -m ticktock.embedded.train``: train the embedded model from scratch on synthetic sessions.

Reproducible from a seed: the training corpus comes from the corpus generator (split "train": seeds and
item instances disjoint from the shipped evaluation corpus), the tokenizer is trained on its text, the
model is initialised from ``--seed`` and trained for a fixed number of optimizer steps on batches drawn
with that seed. Loss curves go to ``training_log.csv`` and ``loss.png`` in the output folder.

Example (the shipped weights; about 80 minutes on 2 CPU cores, plus 11 minutes to synthesize the corpus)::

    python -m ticktock.embedded.train --corpus work_data/train-corpus-1000 --generate 1000 \\
        --out work_data/model --steps 2800 --warmup 150 --val-every 400 --task-weight fdb_v3=2
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
from pathlib import Path

import numpy as np
import torch

from ticktock.embedded.data import batches, build_example, collate, forward_loss, word_vocabulary
from ticktock.embedded.model import Architecture, SYSTEM_PROMPT, build_model, make_adapter, save_model
from ticktock.embedded.targets import tool_call_text
from ticktock.embedded.tokenizer import train_tokenizer
from ticktock.manifest import load_manifest
from ticktock.mock_tools import MockToolExecutor

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
            if "text" in action:
                texts.append(" " + action["text"])
            if action.get("action") == "tool_call":
                texts += [tool_call_text(action["call"]), "\n" + executor.respond(action["call"]) + "\n"]
    return texts


def load_examples(sessions, adapter, executor, vocabulary, cache: Path):
    if cache.is_file():
        return pickle.loads(cache.read_bytes())
    examples = []
    began = time.time()
    for i, session in enumerate(sessions):
        examples.append(build_example(session, adapter, executor, vocabulary))
        if (i + 1) % 500 == 0:
            print(f"  examples {i + 1}/{len(sessions)} ({time.time() - began:.0f} s)", flush=True)
    cache.write_bytes(pickle.dumps(examples))
    return examples


def task_weight(text: str) -> tuple[str, int]:
    """``--task-weight`` values: ``TASK=N`` with N a whole number >= 1, e.g. ``fdb_v3=2``."""
    task, sep, count = text.partition("=")
    if not sep or not task or not count.isdigit() or int(count) < 1:
        raise argparse.ArgumentTypeError(f"expected TASK=N with N a whole number >= 1 (e.g. fdb_v3=2), got {text!r}")
    return task, int(count)


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


def train(args) -> None:
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    rng = np.random.default_rng(args.seed)
    corpus = Path(args.corpus)
    manifest = generate_corpus(corpus, args.generate, args.seed) if args.generate else corpus / "manifest.jsonl"
    sessions = load_manifest(manifest)
    splits = {s.provenance.get("split") for s in sessions}
    if splits != {"train"}:
        raise SystemExit(f"{manifest}: training needs split 'train' sessions only, found {sorted(map(str, splits))}")
    executor = MockToolExecutor()
    tokenizer = train_tokenizer(corpus_texts(sessions, executor), args.vocab)
    arch = Architecture(hidden_size=args.hidden, num_layers=args.layers, intermediate_size=args.hidden * 3)
    model, frontend = build_model(tokenizer, arch, args.seed)
    model.config._attn_implementation = "sdpa"  # training only; inference and the shipped config use eager
    adapter = make_adapter(model, frontend, tokenizer, arch)
    print(f"{len(sessions)} sessions, vocab {len(tokenizer)}, "
          f"{sum(p.numel() for p in model.parameters()) + sum(p.numel() for p in frontend.parameters()):,} parameters", flush=True)
    vocabulary = word_vocabulary(sessions)
    word_head = torch.nn.Linear(arch.hidden_size, len(vocabulary) + 2)  # auxiliary, not shipped
    examples = load_examples(sessions, adapter, executor, vocabulary, corpus / f"examples-v{args.vocab}-s{args.seed}-wd.pkl")
    order = rng.permutation(len(examples))
    held = max(16, len(examples) // 50)
    valid = [examples[i] for i in order[:held]]
    weights = dict(args.task_weight)
    train_set = [examples[i] for i in order[held:] for _ in range(weights.get(examples[i].task, 1))]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    log_path = out / "training_log.csv"
    params = list(model.parameters()) + list(frontend.parameters()) + list(word_head.parameters())
    optimizer = torch.optim.AdamW(params, lr=args.lr, betas=(0.9, 0.98), weight_decay=0.01)
    model.train(), frontend.train()
    began, step, running = time.time(), 0, None
    with log_path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["step", "elapsed_s", "lr", "train_loss", "train_token_acc", "word_acc", "val_loss", "val_token_acc"])
        while step < args.steps:
            for batch_ids in batches(train_set, args.batch_tokens, rng):
                if step >= args.steps or (args.minutes and time.time() - began > 60 * args.minutes):
                    break
                lr = learning_rate(step, args.steps, args.lr, args.warmup)
                for group in optimizer.param_groups:
                    group["lr"] = lr
                batch = collate([train_set[i] for i in batch_ids], frontend, tokenizer.pad_token_id)
                loss, stats = forward_loss(model, frontend, batch, bf16=args.bf16, word_head=word_head,
                                           word_weight=args.word_weight)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(params, 1.0)
                optimizer.step()
                value = float(loss.detach())
                running = value if running is None else 0.98 * running + 0.02 * value
                step += 1
                if step % args.log_every == 0 or step == args.steps:
                    val = validate(model, frontend, valid, tokenizer.pad_token_id) if step % args.val_every == 0 or step == args.steps else {}
                    writer.writerow([step, round(time.time() - began, 1), f"{lr:.6f}", f"{running:.5f}",
                                     f"{stats['correct'] / max(stats['tokens'], 1):.4f}", f"{stats.get('word_acc', 0):.4f}",
                                     f"{val['val_loss']:.5f}" if val else "", f"{val['val_token_acc']:.4f}" if val else ""])
                    handle.flush()
                    print(f"step {step}/{args.steps} {time.time() - began:.0f}s lr {lr:.2e} loss {running:.4f} "
                          f"word acc {stats.get('word_acc', 0):.3f} {val}", flush=True)
            else:
                continue
            break
    elapsed = time.time() - began
    training = {"seed": args.seed, "steps": step, "planned_steps": args.steps, "train_minutes": round(elapsed / 60, 1),
                "sessions": len(sessions), "train_sessions": len(train_set), "validation_sessions": len(valid),
                "corpus_seed": TRAIN_SEED_BASE + args.seed, "sessions_per_task": args.generate, "vocab": len(tokenizer),
                "batch_tokens": args.batch_tokens, "lr": args.lr, "word_weight": args.word_weight,
                "task_weights": weights,
                "word_vocabulary": len(vocabulary), "threads": args.threads, "bf16_autocast": args.bf16,
                "final": validate(model, frontend, valid, tokenizer.pad_token_id)}
    model.config._attn_implementation = "eager"
    save_model(out, model, frontend, tokenizer, arch, training)
    plot_losses(log_path, out / "loss.png")
    print(json.dumps(training, indent=2))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", required=True, help="folder of the training corpus (generated there if --generate)")
    parser.add_argument("--generate", type=int, default=0, help="sessions per task to generate when the folder is empty")
    parser.add_argument("--out", required=True, help="model folder to write")
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
    parser.add_argument("--word-weight", type=float, default=0.5, help="weight of the auxiliary word-recognition loss")
    parser.add_argument("--task-weight", action="append", default=[], metavar="TASK=N", type=task_weight,
                        help="repeat the training sessions of TASK N times per epoch (e.g. fdb_v3=2)")
    parser.add_argument("--log-every", type=int, default=20)
    parser.add_argument("--val-every", type=int, default=500)
    train(parser.parse_args(argv))


if __name__ == "__main__":
    main()
