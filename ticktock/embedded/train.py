"""``python -m ticktock.embedded.train``: train the embedded model from scratch on synthetic sessions.

Reproducible from a seed: the training corpus comes from the corpus generator (split "train": seeds and
item instances disjoint from the shipped evaluation corpus), the tokenizer is trained on its text, the
model is initialised from ``--seed`` and trained for a fixed number of optimizer steps on batches drawn
with that seed. Loss curves go to ``training_log.csv`` and ``loss.png`` in the output folder.

Training runs in **stages**: ``--stage-minutes M`` (or ``--stage-steps N``) stops at a checkpoint
(``<out>/checkpoint.safetensors``: weights, optimizer, random states, the epoch's batches and where it is in them),
and the same command resumes it exactly where it stopped, bit for bit on the same machine and thread count; a
checkpoint is also saved every ``--checkpoint-every`` steps, so a crash loses little. A checkpoint of other training
options is refused, naming them. The examples built from the corpus are cached in the corpus folder
(``examples-*.npz``).

Nothing here unpickles a file: checkpoints are safetensors with JSON metadata (``ticktock.embedded.checkpoint``), the
example cache a NumPy archive read with ``allow_pickle=False`` (``ticktock.embedded.example_cache``). A checkpoint of
the earlier pickle format (``checkpoint.pt``) is refused in one line, never loaded; a cache of that format
(``examples-*.pkl``) is left unread and the examples are built again. Every number option is checked before any
work (argparse: ``error: argument --lr: expected a finite number > 0 and <= 1, got 'nan'``).

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
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch

from ticktock.corpus.arguments import real_number, whole_number
from ticktock.embedded.checkpoint import CheckpointError, load_state, save_state
from ticktock.embedded.data import batches, build_example, collate, forward_loss, phrasing_examples, word_vocabulary
from ticktock.embedded.example_cache import ExampleCacheError, read_examples, write_examples
from ticktock.embedded.model import (Architecture, SYSTEM_PROMPT, build_model, load_embedded_adapter, make_adapter,
                                     save_model)
from ticktock.embedded.targets import FRAME_SETS, ReplyVariety, tool_call_text
from ticktock.embedded.tokenizer import SPECIAL_TOKENS, train_tokenizer
from ticktock.errors import InputDataError, RunFolderError
from ticktock.sessions.manifest import TASK_TYPES, load_manifest
from ticktock.world.mock_tools import MockToolExecutor

TRAIN_SEED_BASE = 1_000_000
VALIDATION_SESSIONS = 16  # held out at least (1 in 50 of a larger corpus): a corpus needs more sessions than this
MAX_SEED = 2**31 - 1
MAX_SESSIONS_PER_TASK = 100_000
MAX_STEPS = 100_000_000
MAX_TASK_WEIGHT = 100


class TrainingDataError(InputDataError):
    """A training corpus that cannot be trained on: evaluation sessions in it, or too few sessions (exit code 3)."""


def generate_corpus(folder: Path, per_task: int, seed: int) -> Path:
    manifest = folder / "manifest.jsonl"
    if manifest.is_file():
        return manifest
    command = [sys.executable, "-m", "ticktock.corpus.synth", "--out", str(folder), "--split", "train",
               "--seed", str(TRAIN_SEED_BASE + seed), "--sessions-per-task", str(per_task)]
    print("generating the training corpus:", " ".join(command), flush=True)
    done = subprocess.run(command)
    if done.returncode:
        raise TrainingDataError(f"{folder}: generating the training corpus failed (exit status {done.returncode}; "
                                "its error is the line above)")
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


def cached_examples(cache: Path) -> list | None:
    """The examples cached in ``cache`` (``example_cache``), or None: there is no cache, or it cannot be used (a
    line says why; it is built again). A cache of the earlier pickle format beside it is never read."""
    legacy = cache.with_suffix(".pkl")
    if legacy.is_file() and not cache.is_file():
        print(f"note: {legacy}: an example cache of the earlier pickle format, not read (a pickle can run code); "
              f"building {cache.name} instead (the .pkl file can be deleted)", flush=True)
    if not cache.is_file():
        return None
    try:
        return read_examples(cache)
    except ExampleCacheError as err:
        print(f"note: {err}; building it again", flush=True)
        return None


def load_examples(sessions, adapter, executor, vocabulary, cache: Path, phrasings: int = 1, seed: int = 0,
                  variety: ReplyVariety = ReplyVariety()):
    """Per session, its examples: the scripted phrasing and ``phrasings - 1`` drawn ones (``phrasing_examples``,
    mixed and framed as ``variety`` says), sharing the audio; built once and cached in ``cache`` (an ``.npz``,
    ``example_cache``)."""
    cached = cached_examples(cache)
    if cached is not None:
        return cached
    examples = []
    began = time.time()
    for i, session in enumerate(sessions):
        first = build_example(session, adapter, executor, vocabulary)
        examples.append(phrasing_examples(first, session, adapter, executor, phrasings, seed, variety))
        if (i + 1) % 500 == 0:
            print(f"  examples {i + 1}/{len(sessions)} ({time.time() - began:.0f} s)", flush=True)
    write_examples(cache, examples)
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
        raise TrainingDataError(f"{manifest}: training needs split 'train' sessions only, found {sorted(map(str, splits))}")
    return sessions


def check_enough(sessions, manifest: Path) -> None:
    """A corpus must leave sessions to train on once ``VALIDATION_SESSIONS`` are held out."""
    if len(sessions) <= VALIDATION_SESSIONS:
        raise TrainingDataError(f"{manifest}: {len(sessions)} sessions; training needs at least "
                                f"{VALIDATION_SESSIONS + 1} ({VALIDATION_SESSIONS} are held out for validation)")


def augmented_of(session) -> str | None:
    """The session an augmented session was made from (``ticktock.corpus.augment``), or None."""
    return (session.provenance.get("augmentation") or {}).get("of")


def task_weight(text: str) -> tuple[str, int]:
    """``--task-weight`` values: ``TASK=N`` with TASK a task type and N a whole number from 1 to 100, e.g.
    ``fdb_v3=2``."""
    task, sep, count = text.partition("=")
    if not sep or not task or not count.isdigit() or not 1 <= int(count) <= MAX_TASK_WEIGHT:
        raise argparse.ArgumentTypeError(f"expected TASK=N with N a whole number from 1 to {MAX_TASK_WEIGHT} "
                                         f"(e.g. fdb_v3=2), got {text!r}")
    if task not in TASK_TYPES:
        raise argparse.ArgumentTypeError(f"unknown task {task!r} in {text!r} (tasks: {', '.join(TASK_TYPES)})")
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
CHECKPOINT = "checkpoint.safetensors"
LEGACY_CHECKPOINT = "checkpoint.pt"  # the earlier, pickled format: refused, never loaded
LOG_COLUMNS = ["step", "elapsed_s", "lr", "train_loss", "train_token_acc", "word_acc", "val_loss", "val_token_acc"]


class TrainingRunError(RunFolderError):
    """A checkpoint that belongs to another training run (different options), or cannot be read (exit code 4)."""


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
    """Write a checkpoint atomically (a crash while saving keeps the previous one); data only (``checkpoint``)."""
    save_state(path, state)


def refuse_legacy_checkpoint(out: Path) -> None:
    """A checkpoint of the earlier pickle format in ``out`` is refused before any work, never loaded (unpickling
    can run code)."""
    legacy = out / LEGACY_CHECKPOINT
    if legacy.is_file():
        raise TrainingRunError(f"{legacy}: a checkpoint of the earlier pickle format, which is never loaded (unpickling "
                               "can run code); delete it to train from the start, or use another --out")


def load_checkpoint(path: Path, options: dict) -> dict | None:
    """The checkpoint in ``path`` (None: there is none), refused when it was made with other options or cannot be
    read."""
    if not path.is_file():
        return None
    try:
        state = load_state(path)
    except CheckpointError as err:  # a torn or foreign file: say which, and how to start over
        raise TrainingRunError(f"{path}: cannot read the checkpoint ({err}); delete it to train from the start") from None
    if not isinstance(state.get("options"), dict):
        raise TrainingRunError(f"{path}: cannot read the checkpoint (no training options in it); delete it to train "
                               "from the start")
    changed = {k: (state["options"].get(k), v) for k, v in options.items() if state["options"].get(k) != v}
    if changed:
        detail = ", ".join(f"--{k.replace('_', '-')} {old!r} -> {new!r}" for k, (old, new) in changed.items())
        raise TrainingRunError(f"{path}: a checkpoint of another training run ({detail}); use another --out, "
                               "or delete the checkpoint to train from the start")
    return state


def restore(state: dict, modules: dict, rng: np.random.Generator, path: Path) -> Progress:
    """Load a checkpoint's weights, optimizer and random states into the run; its progress. A checkpoint that
    does not fit (a tensor of another shape, a missing entry) is refused in one line naming ``path``."""
    try:
        for name, module in modules.items():
            module.load_state_dict(state[name])
        rng.bit_generator.state = state["numpy_rng"]
        torch.set_rng_state(state["torch_rng"])
        return Progress(**state["progress"])
    except (KeyError, TypeError, ValueError, RuntimeError) as err:
        raise TrainingRunError(f"{path}: the checkpoint does not fit this training run ({type(err).__name__}: "
                               f"{str(err).splitlines()[0][:200]}); delete it to train from the start") from None


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
    refuse_legacy_checkpoint(Path(args.out))
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    rng = np.random.default_rng(args.seed)
    corpus = Path(args.corpus)
    manifest = generate_corpus(corpus, args.generate, args.seed) if args.generate else corpus / "manifest.jsonl"
    sessions = training_sessions(manifest)
    check_enough(sessions, manifest)
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
    cache = f"examples-v{len(tokenizer)}-s{args.seed}-p{args.phrasings}{variety_tag(variety)}-{tokenizer_digest(tokenizer)}.npz"
    examples = load_examples(sessions, adapter, executor, vocabulary, corpus / cache, args.phrasings, args.seed,
                             variety)
    order = rng.permutation(len(examples))
    held = max(VALIDATION_SESSIONS, len(examples) // 50)
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
        progress = restore(resumed, modules, rng, out / CHECKPOINT)
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


def min_generate() -> int:
    """The fewest sessions per task ``--generate`` may ask for: the corpus (every task) must outnumber the
    validation sessions."""
    from ticktock.corpus.tasks import BUILDERS

    return VALIDATION_SESSIONS // len(BUILDERS) + 1


class InitFolderError(InputDataError):
    """``--init DIR`` names no trained model folder (exit code 3)."""


INIT_FILES = ("config.json", "model.safetensors", "frontend.safetensors", "tokenizer.json", "ticktock.json")


def check_init(folder: str | None) -> None:
    """``--init DIR`` holds a trained model (the files ``load_embedded_adapter`` reads), checked before any work
    (before a corpus is generated); else one ``InitFolderError`` line naming DIR and what is missing."""
    if folder is None:
        return
    path = Path(folder)
    if not path.is_dir():
        raise InitFolderError(f"--init {folder}: {'not a folder' if path.exists() else 'no such folder'}; expected a "
                              "trained model folder (the --out of an earlier training)")
    missing = [name for name in INIT_FILES if not (path / name).is_file()]
    if missing:
        raise InitFolderError(f"--init {folder}: no trained model there: {', '.join(missing)} missing (a trained "
                              f"model folder, the --out of an earlier training, holds {', '.join(INIT_FILES)})")


def option_problem(args) -> str | None:
    """What is wrong with a combination of options (each is checked alone as it is parsed), or None.

    >>> option_problem(argparse.Namespace(steps=0, init=None, generate=0))
    "argument --steps: 0 steps train nothing; expected a whole number from 1 to 100000000 (0 only with --init, to save a trained model as it is), got '0'"
    >>> option_problem(argparse.Namespace(steps=10, init=None, generate=1))
    "argument --generate: 1 session per task leaves nothing to train on (16 sessions are held out for validation); expected 0 (train on the corpus as it is) or a whole number from 3 to 100000, got '1'"
    """
    if args.steps == 0 and not args.init:
        return (f"argument --steps: 0 steps train nothing; expected a whole number from 1 to {MAX_STEPS} (0 only "
                "with --init, to save a trained model as it is), got '0'")
    if 0 < args.generate < min_generate():
        sessions = f"{args.generate} session{'s' if args.generate > 1 else ''} per task"
        return (f"argument --generate: {sessions} leaves nothing to train on ({VALIDATION_SESSIONS} sessions are held "
                f"out for validation); expected 0 (train on the corpus as it is) or a whole number from "
                f"{min_generate()} to {MAX_SESSIONS_PER_TASK}, got '{args.generate}'")
    return None


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m ticktock.embedded.train", description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", required=True, help="folder of the training corpus (generated there if --generate)")
    parser.add_argument("--generate", type=whole_number(0, MAX_SESSIONS_PER_TASK), default=0,
                        help=f"sessions per task to generate when the folder is empty (0: none; else at least "
                             f"{min_generate()}, as {VALIDATION_SESSIONS} sessions are held out for validation)")
    parser.add_argument("--extra-corpus", action="append", default=[], metavar="DIR",
                        help="more training sessions, e.g. an augmented copy of the corpus (python -m "
                             "ticktock.corpus.augment); copies of validation sessions are left out (repeatable)")
    parser.add_argument("--phrasings", type=whole_number(1, 64), default=1,
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
    parser.add_argument("--seed", type=whole_number(0, MAX_SEED), default=0)
    parser.add_argument("--vocab", type=whole_number(256 + len(SPECIAL_TOKENS), 262_144), default=512,
                        help="tokenizer size (at least the 256 bytes and the special tokens)")
    parser.add_argument("--hidden", type=whole_number(8, 8192, multiple=8), default=256,
                        help="hidden size (4 attention heads of an even size)")
    parser.add_argument("--layers", type=whole_number(1, 128), default=6)
    parser.add_argument("--steps", type=whole_number(0, MAX_STEPS), default=6000,
                        help="optimizer steps (0 only with --init: the model is saved as it is)")
    parser.add_argument("--warmup", type=whole_number(0, MAX_STEPS), default=300)
    parser.add_argument("--lr", type=real_number(0.0, 1.0, above=True), default=1.5e-3)
    parser.add_argument("--batch-tokens", type=whole_number(1, 10_000_000), default=6000)
    parser.add_argument("--threads", type=whole_number(1, 1024), default=2)
    parser.add_argument("--bf16", action=argparse.BooleanOptionalAction, default=True,
                        help="bfloat16 autocast for the matrix products (fp32 weights)")
    parser.add_argument("--minutes", type=real_number(0.0), default=0.0,
                        help="safety stop (0: none); the run is then not the planned one")
    parser.add_argument("--stage-minutes", type=real_number(0.0), default=0.0,
                        help="stop after this long at a checkpoint; the same command resumes it (0: train to the end)")
    parser.add_argument("--stage-steps", type=whole_number(0, MAX_STEPS), default=0,
                        help="stop after this many steps at a checkpoint; the same command resumes it (0: no limit)")
    parser.add_argument("--checkpoint-every", type=whole_number(0, MAX_STEPS), default=200,
                        help="save a checkpoint every N steps (0: only at the end of a stage), so a crash loses little")
    parser.add_argument("--word-weight", type=real_number(0.0, 100.0), default=0.5,
                        help="weight of the auxiliary word-recognition loss")
    parser.add_argument("--task-weight", action="append", default=[], metavar="TASK=N", type=task_weight,
                        help="repeat the training sessions of TASK N times per epoch (e.g. fdb_v3=2)")
    parser.add_argument("--log-every", type=whole_number(1, MAX_STEPS), default=20)
    parser.add_argument("--val-every", type=whole_number(1, MAX_STEPS), default=500)
    args = parser.parse_args(argv)
    problem = option_problem(args)
    if problem:
        parser.error(problem)
    check_init(args.init)
    train(args)


if __name__ == "__main__":
    from ticktock.errors import user_errors

    with user_errors():
        main()
