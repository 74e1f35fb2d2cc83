"""``judge=hf_local``: a transformers causal LM on this machine as a single-answer grading judge (1 to 5).

The model and tokenizer are loaded from ``judge.path`` with ``local_files_only=True``: nothing is ever
downloaded, and a folder that is missing, unreadable or not a transformers causal LM is one error naming it.

Each reply becomes one grading prompt (``TEMPLATE``, or ``judge.template``): the user's request, the model's
reply, and the reference answer when the manifest has one, asking for a rating from 1 to 5. With a chat
template the prompt is the user message of a chat followed by the assistant's turn opening; without one it
ends with ``ANSWER_CUE``. The score is not parsed from generated text: it is the **expectation of the rating
under the next-token distribution restricted to the tokens "1".."5"**, so it is deterministic, continuous
and always within [1, 5] (the tokenizer must encode each digit as one token, else the judge stops with an
error saying so). The share of the full next-token probability on those five tokens is kept with each verdict
(``scale_mass``): a low value says the model does not answer in the asked format.

A prompt longer than ``judge.max_prompt_tokens`` keeps the end of the reply: the reply is cut from the left
(the cut marked with ``TRUNCATION_MARK``) and the verdict's note says how much was kept.

The fingerprint covers the model's files (small files by content; weight files by size and a digest of their
first and last MiB, so a checkpoint saved over the same names still changes it), the resolved dtype and device
type, the prompt template and ``max_prompt_tokens``. The batch size only groups prompts (left-padded, with the
attention mask and positions of each prompt alone), so it is not part of it.

Options (``configs/judge/hf_local.yaml``): ``path``, ``device`` (auto, cpu, cuda, cuda:K), ``dtype`` (auto:
bfloat16 on CUDA, float32 on the CPU; float32, bfloat16, float16), ``batch_size``, ``max_prompt_tokens``,
``template`` (text with the fields ``{request}``, ``{reply}`` and ``{reference}``; double literal braces).

Example::

    judge = LocalJudge(path="models/my-judge", device="cpu", dtype="float32")  # doctest: +SKIP
    [v.score for v in judge.judge(replies)]                                      # doctest: +SKIP
    [4.31, 2.07]
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import string
from pathlib import Path
from typing import Sequence

import torch

from ticktock.adapters.hf_unit import DTYPES, resolve_device
from ticktock.errors import one_line
from ticktock.judges.base import Judge, JudgeError, Reply, Verdict

TEMPLATE = """You are grading the reply a spoken AI assistant gave to a user's spoken request.
Judge how helpful, relevant, correct and complete the reply is for the request. The reply was spoken aloud, so \
ignore formatting, and judge what it says, not how long it is.{reference}

[User request]
{request}

[Assistant reply]
{reply}

Rate the reply on a scale from 1 to 5: 1 = wrong, unhelpful or no answer; 2 = mostly unhelpful; 3 = partly \
helpful; 4 = helpful with small flaws; 5 = fully helpful and correct.
Answer with the rating only, a single digit from 1 to 5."""
REFERENCE = "\nA correct reference answer is given; a reply that contradicts it is wrong.\n\n[Reference answer]\n{answers}"
FIELDS = frozenset({"request", "reply", "reference"})
ANSWER_CUE = "\n\nRating:\n"  # ends a prompt when the tokenizer has no chat template
TRUNCATION_MARK = "[...] "
NO_REQUEST = "(no transcript of the request)"
NO_REPLY = "(the assistant said nothing)"
SAMPLED_BYTES = 1 << 20  # files larger than twice this are fingerprinted by size, first and last MiB


def reference_text(references: Sequence[str]) -> str:
    """The template's ``{reference}`` field: empty without a reference, else the answer and its aliases.

    >>> reference_text(()), reference_text(("Paris", "paris, france")).splitlines()[-1]
    ('', 'Paris (also accepted: paris, france)')
    """
    if not references:
        return ""
    answers = references[0] + (f" (also accepted: {', '.join(references[1:])})" if len(references) > 1 else "")
    return REFERENCE.format(answers=answers)


def check_template(template: str) -> str:
    """The template if its fields are those of ``FIELDS`` and it has ``{reply}``; else a ``JudgeError``.

    >>> check_template("{request} -> {answer}")
    Traceback (most recent call last):
    ticktock.judges.base.JudgeError: judge.template: unknown field(s) {answer}; use {request}, {reply} and {reference} (double literal braces)
    """
    try:
        names = {field for _, field, _, _ in string.Formatter().parse(template) if field is not None}
    except ValueError as err:
        raise JudgeError(f"judge.template: not a format text ({err}); write literal braces as {{{{ and }}}}") from None
    unknown = sorted(names - FIELDS)
    if unknown:
        raise JudgeError(f"judge.template: unknown field(s) {', '.join('{' + n + '}' for n in unknown)}; use {{request}}, "
                         "{reply} and {reference} (double literal braces)")
    if "reply" not in names:
        raise JudgeError("judge.template: it has no {reply} field: the judge would not see the reply")
    return template


def model_folder(path) -> Path:
    """``judge.path`` as a readable folder holding a transformers config; else a ``JudgeError`` naming it."""
    if path in (None, ""):
        raise JudgeError("judge.path: not set: pass judge.path=<folder of a transformers causal LM on this machine> "
                         "(it is loaded from disk only, never downloaded)")
    folder = Path(str(path)).expanduser()
    if not folder.is_dir():
        raise JudgeError(f"judge.path: {folder}: no such folder (a transformers causal LM saved on this machine, "
                         "with config.json, weights and tokenizer files; nothing is downloaded)")
    if not os.access(folder, os.R_OK | os.X_OK):
        raise JudgeError(f"judge.path: {folder}: not readable by this user")
    if not (folder / "config.json").is_file():
        raise JudgeError(f"judge.path: {folder}: no config.json (not a transformers model folder)")
    return folder


def file_digest(path: Path) -> str:
    """SHA-256 of a small file's bytes; for a large one its size and the digest of its first and last MiB."""
    size = path.stat().st_size
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        if size <= 2 * SAMPLED_BYTES:
            digest.update(handle.read())
            return digest.hexdigest()
        digest.update(handle.read(SAMPLED_BYTES))
        handle.seek(size - SAMPLED_BYTES)
        digest.update(handle.read(SAMPLED_BYTES))
    return f"{size}:{digest.hexdigest()}"


def folder_identity(folder: Path) -> dict[str, str]:
    """Relative file name -> ``file_digest`` for every file of a model folder (hidden files and folders left out)."""
    try:
        files = sorted(p for p in folder.rglob("*") if p.is_file()
                       and not any(part.startswith(".") for part in p.relative_to(folder).parts))
        return {p.relative_to(folder).as_posix(): file_digest(p) for p in files}
    except OSError as err:
        raise JudgeError(f"judge.path: {folder}: cannot read its files ({one_line(err)})") from None


def torch_settings(device: str, dtype: str) -> tuple[torch.device, torch.dtype]:
    """The torch device and dtype of ``judge.device`` and ``judge.dtype`` (``auto`` resolved for this machine)."""
    kind, _, index = str(device).partition(":")
    if kind not in ("auto", "cpu", "cuda") or (index and (kind != "cuda" or not index.isdigit())):
        raise JudgeError(f"judge.device: must be auto, cpu, cuda or cuda:K, got {device!r}")
    resolved = resolve_device(str(device))
    if resolved.type == "cuda" and (not torch.cuda.is_available() or (resolved.index or 0) >= torch.cuda.device_count()):
        raise JudgeError(f"judge.device: {device} asked for, but this process sees no such CUDA device")
    if dtype != "auto" and dtype not in DTYPES:
        raise JudgeError(f"judge.dtype: must be one of {', '.join(['auto', *DTYPES])}, got {dtype!r}")
    chosen = (torch.bfloat16 if resolved.type == "cuda" else torch.float32) if dtype == "auto" else DTYPES[dtype]
    return resolved, chosen


def positive_int(key: str, value, least: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise JudgeError(f"judge.{key}: must be an integer >= {least}, got {value!r}")
    return value


def load_model(folder: Path, dtype: torch.dtype, device: torch.device):
    """(tokenizer, model in eval mode on ``device``) from the folder, never downloading."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
        model = AutoModelForCausalLM.from_pretrained(str(folder), local_files_only=True, dtype=dtype)
    except Exception as err:  # any failure to load is the folder's: say which folder and what went wrong
        raise JudgeError(f"judge.path: {folder}: cannot load a transformers causal LM and its tokenizer from it "
                         f"({type(err).__name__}: {one_line(err)})") from None
    return tokenizer, model.to(device).eval()


def scale_token_ids(tokenizer, folder: Path, points: Sequence[int]) -> list[int]:
    """The token id of each rating's digits; a ``JudgeError`` when one is not a single token."""
    ids = []
    for point in points:
        encoded = tokenizer.encode(str(point), add_special_tokens=False)
        unknown = getattr(tokenizer, "unk_token_id", None)
        if len(encoded) != 1 or (unknown is not None and encoded[0] == unknown):
            raise JudgeError(f"judge.path: {folder}: its tokenizer does not encode {str(point)!r} as one known token "
                             f"(it gives the ids {encoded}); this judge reads the next-token probabilities of the "
                             f"single tokens '{points[0]}'..'{points[-1]}', so each must be one token")
        ids.append(encoded[0])
    return ids


class LocalJudge(Judge):
    """A local transformers causal LM scoring each reply 1-5 as the expected rating of its next token."""

    name = "hf_local"
    scale = (1, 5)

    def __init__(self, path: str | None = None, device: str = "auto", dtype: str = "auto", batch_size: int = 4,
                 max_prompt_tokens: int = 2048, template: str | None = None):
        self.folder = model_folder(path)
        self.device, self.dtype = torch_settings(device, dtype)
        self.batch_size = positive_int("batch_size", batch_size)
        self.max_prompt_tokens = positive_int("max_prompt_tokens", max_prompt_tokens, least=8)
        self.template = check_template(TEMPLATE if template is None else str(template))
        self.points = list(range(self.scale[0], self.scale[1] + 1))
        self._identity: dict | None = None
        self._model = None

    def settings(self) -> dict:
        if self._identity is None:
            self._identity = folder_identity(self.folder)
        return {"model_files": self._identity, "dtype": str(self.dtype).removeprefix("torch."), "device": self.device.type,
                "max_prompt_tokens": self.max_prompt_tokens, "template": self.template, "answer_cue": ANSWER_CUE,
                "truncation_mark": TRUNCATION_MARK, "score": "expected rating over the next-token probabilities of "
                                                              "the scale's digit tokens"}

    def describe(self) -> str:
        try:
            architectures = json.loads((self.folder / "config.json").read_text()).get("architectures") or []
        except (OSError, ValueError):
            architectures = []
        kind = f" ({', '.join(architectures)})" if architectures else ""
        return f"local transformers model {self.folder.name}{kind}, {str(self.dtype).removeprefix('torch.')} on {self.device.type}"

    def judge(self, replies: Sequence[Reply]) -> list[Verdict]:
        verdicts = []
        for start in range(0, len(replies), self.batch_size):
            batch = replies[start : start + self.batch_size]
            fitted = [self.fitted_prompt(r) for r in batch]
            distributions, masses = self._rating_distributions([ids for ids, _ in fitted])
            for (_, note), probabilities, mass in zip(fitted, distributions, masses):
                score = sum(p * point for p, point in zip(probabilities, self.points))
                verdicts.append(Verdict(score, tuple(probabilities), mass, note))
        return verdicts

    def _loaded(self):
        if self._model is None:
            tokenizer, model = load_model(self.folder, self.dtype, self.device)
            self._scale_ids = scale_token_ids(tokenizer, self.folder, self.points)
            self._keeps_logits = "logits_to_keep" in inspect.signature(model.forward).parameters
            self._pad_id = next((i for i in (tokenizer.pad_token_id, tokenizer.eos_token_id) if i is not None), 0)
            self._tokenizer, self._model = tokenizer, model
        return self._tokenizer, self._model

    def prompt_ids(self, reply: Reply, reply_text: str) -> list[int]:
        """The token ids of the grading prompt for ``reply`` with ``reply_text`` as its reply."""
        tokenizer, _ = self._loaded()
        content = self.template.format(request=reply.request or NO_REQUEST, reply=reply_text or NO_REPLY,
                                       reference=reference_text(reply.references))
        if getattr(tokenizer, "chat_template", None):
            text = tokenizer.apply_chat_template([{"role": "user", "content": content}], tokenize=False,
                                                 add_generation_prompt=True)
            return tokenizer.encode(text, add_special_tokens=False)
        return tokenizer.encode(content + ANSWER_CUE)

    def fitted_prompt(self, reply: Reply) -> tuple[list[int], str]:
        """(prompt ids within ``max_prompt_tokens``, note): the reply cut from the left when the prompt is too long."""
        ids = self.prompt_ids(reply, reply.reply)
        if len(ids) <= self.max_prompt_tokens:
            return ids, ""
        tokenizer, _ = self._loaded()
        reply_ids = tokenizer.encode(reply.reply, add_special_tokens=False)
        keep = len(reply_ids) - (len(ids) - self.max_prompt_tokens)
        while keep > 0:
            ids = self.prompt_ids(reply, TRUNCATION_MARK + tokenizer.decode(reply_ids[-keep:]).lstrip())
            if len(ids) <= self.max_prompt_tokens:
                return ids, (f"reply cut from the left to its last {keep} of {len(reply_ids)} tokens "
                             f"(judge.max_prompt_tokens={self.max_prompt_tokens})")
            keep -= len(ids) - self.max_prompt_tokens
        raise JudgeError(f"judge.max_prompt_tokens: {self.max_prompt_tokens} tokens cannot hold the grading prompt "
                         f"of session {reply.session_id} turn {reply.turn_index} even without its reply; raise it")

    @torch.inference_mode()
    def _rating_distributions(self, prompts: list[list[int]]) -> tuple[list[list[float]], list[float]]:
        """For each prompt: the next-token distribution restricted to the scale's tokens, and their total share."""
        _, model = self._loaded()
        width = max(map(len, prompts))
        ids = torch.full((len(prompts), width), self._pad_id, dtype=torch.long)
        mask = torch.zeros((len(prompts), width), dtype=torch.long)
        for row, prompt in enumerate(prompts):  # left padding: every prompt's next token is at the last position
            ids[row, width - len(prompt):] = torch.tensor(prompt, dtype=torch.long)
            mask[row, width - len(prompt):] = 1
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        extra = {"logits_to_keep": 1} if self._keeps_logits else {}
        logits = model(input_ids=ids.to(self.device), attention_mask=mask.to(self.device),
                       position_ids=positions.to(self.device), **extra).logits[:, -1, :].float()
        on_scale = logits.log_softmax(-1)[:, self._scale_ids]
        return on_scale.softmax(-1).cpu().tolist(), on_scale.exp().sum(-1).cpu().tolist()
