"""Training examples for the embedded model: one whole session per example, laid out as the replay feeds it.

Sequence of a session (``AUDIO`` marks the 10 audio-embedding slots of a chunk)::

    <|im_start|>system ... <|im_end|>\\n  <unit> AUDIO*10 [tail] out_0 ...  </unit> <unit> AUDIO*10 [tail] out_1 ...

which is token for token what ``ReplayEngine`` feeds (the previous chunk's last token, ``</unit>``,
``<unit>``, audio, tool response, then the chunk's output). Labels: every output token is the target of
the position before it; nothing else is trained (prompt, unit tokens, audio, tool responses).

Example::

    example = build_example(session, adapter, executor)
    example.tokens[:3], example.mel.shape      # e.g. [1, 126, 87], (1500, 64) for a 15-chunk session
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ticktock.sessions.audio import load_audio
from ticktock.embedded.targets import ReplyVariety, plan_session

AUDIO = -1
IGNORE = -100


@dataclass
class Example:
    session_id: str
    task: str
    tokens: np.ndarray  # int32 [L], AUDIO at audio slots
    labels: np.ndarray  # int32 [L], IGNORE where nothing is trained
    mel: np.ndarray  # float16 [100 * chunks, n_mels]
    decisions: np.ndarray  # int32 [chunks]: the target decision token of each chunk
    words: np.ndarray  # int32 [10 * chunks]: the word heard in each audio slot (auxiliary target; 0 = none)

    @property
    def length(self) -> int:
        return int(self.tokens.shape[0])


def layout(prompt: list[int], plans, protocol, embeds_per_chunk: int) -> tuple[list[int], list[int]]:
    """Token ids (AUDIO for audio slots) and labels of a planned session."""
    tokens, labels = list(prompt), [IGNORE] * len(prompt)
    for t, plan in enumerate(plans):
        known = protocol.unit_head(t) + [AUDIO] * embeds_per_chunk + list(plan.tail)
        tokens += known
        labels += [IGNORE] * len(known)
        labels[-1] = plan.output[0]
        tokens += plan.output
        labels += plan.output[1:] + [IGNORE]
    return tokens, labels


def session_mel(session, frontend) -> np.ndarray:
    """Log-mel frames of the whole session, zero-padded to whole chunks (exactly what streaming computes)."""
    audio = load_audio(session.audio_path)
    spans = session.chunk_spans()
    total = int(round(spans[-1].end_s * frontend.sample_rate))
    padded = np.zeros(total, dtype=np.float32)
    padded[: min(total, audio.shape[0])] = audio[:total]
    state = frontend.initial_state()
    with torch.no_grad():
        mel, _ = frontend.log_mel(torch.cat([state.samples, torch.from_numpy(padded)]))
    return mel.numpy().astype(np.float16)


def normal_word(text: str) -> str:
    return "".join(ch for ch in text.lower() if ch.isalnum() or ch == "'")


def word_vocabulary(sessions, size: int = 4000) -> dict[str, int]:
    """The most frequent spoken words of the training sessions -> ids 2.. (0: no word, 1: other word)."""
    from collections import Counter

    counts = Counter(normal_word(w.text) for s in sessions for t in s.turns for w in t.words)
    counts.pop("", None)
    return {word: i + 2 for i, (word, _) in enumerate(counts.most_common(size - 2))}


def frame_words(session, vocabulary: dict[str, int], embeds_per_chunk: int) -> np.ndarray:
    """For every audio slot, the id of the word whose span covers the slot's centre (0: none)."""
    spans = session.chunk_spans()
    step = 1.0 / embeds_per_chunk
    centres = np.asarray([span.start_s + (k + 0.5) * step * span.duration_s for span in spans for k in range(embeds_per_chunk)])
    labels = np.zeros(centres.shape[0], dtype=np.int32)
    for turn in session.turns:
        for word in turn.words:
            inside = (centres >= word.start_s) & (centres < word.end_s)
            labels[inside] = vocabulary.get(normal_word(word.text), 1)
    return labels


def build_example(session, adapter, executor, vocabulary: dict[str, int] | None = None) -> Example:
    """The training example of ``session`` with the scripted phrasing of every reply."""
    if session.first_chunk_s not in (None, session.chunk_s) or session.chunk_s != 1.0:
        raise ValueError(f"{session.session_id}: training uses 1 s chunks, got chunk_s={session.chunk_s}")
    tokens, labels, decisions = planned_tokens(session, adapter, executor)
    return Example(session.session_id, session.task, tokens, labels, session_mel(session, adapter.frontend), decisions,
                   frame_words(session, vocabulary or {}, adapter.frontend.embeds_per_second))


def planned_tokens(session, adapter, executor, rng: np.random.Generator | None = None,
                   variety: ReplyVariety = ReplyVariety()):
    """Token ids, labels and per-chunk decisions of the oracle plan (``rng``: draw each reply's phrasing;
    ``variety``: how drawn replies are mixed and framed, ``targets.ReplyVariety``)."""
    plans = plan_session(session, adapter, executor, rng=rng, variety=variety)
    prompt = adapter.encode_text(adapter.prompt_text(None, []))
    tokens, labels = layout(prompt, plans, adapter.protocol, adapter.frontend.embeds_per_second)
    return (np.asarray(tokens, dtype=np.int32), np.asarray(labels, dtype=np.int32),
            np.asarray([p.output[0] for p in plans], dtype=np.int32))


def phrasing_examples(example: Example, session, adapter, executor, count: int, seed: int,
                      variety: ReplyVariety = ReplyVariety()) -> list[Example]:
    """``example`` and ``count - 1`` more with each reply's phrasing drawn (``targets.plan_session``, ``variety``:
    mixed sentence by sentence, opened and closed too), sharing its audio: the model learns a distribution over phrasings, not one string
    per reply. Deterministic per seed.

    The draws' random generators are keyed by (seed, session id, draw), so adding sessions changes no other draw."""
    from ticktock.corpus.mixing import stable_seed

    draws = [example]
    for k in range(1, count):
        rng = np.random.default_rng([seed, stable_seed(session.session_id), k])
        tokens, labels, decisions = planned_tokens(session, adapter, executor, rng, variety)
        draws.append(Example(example.session_id, example.task, tokens, labels, example.mel, decisions, example.words))
    return draws


def batches(examples: list[Example], max_tokens: int, rng: np.random.Generator) -> list[list[int]]:
    """Index batches of similar length whose padded size stays under ``max_tokens``, in random order."""
    order = sorted(range(len(examples)), key=lambda i: examples[i].length + rng.random())
    result, current, longest = [], [], 0
    for i in order:
        longest_next = max(longest, examples[i].length)
        if current and longest_next * (len(current) + 1) > max_tokens:
            result.append(current)
            current, longest_next = [], examples[i].length
        current.append(i)
        longest = longest_next
    if current:
        result.append(current)
    rng.shuffle(result)
    return result


def collate(examples: list[Example], frontend, pad_id: int) -> dict[str, torch.Tensor]:
    """Pad a batch: token ids, labels, attention mask, audio-slot mask and mel (with silence context)."""
    length = max(e.length for e in examples)
    frames = max(e.mel.shape[0] for e in examples)
    tokens = torch.full((len(examples), length), pad_id, dtype=torch.long)
    labels = torch.full((len(examples), length), IGNORE, dtype=torch.long)
    mask = torch.zeros((len(examples), length), dtype=torch.long)
    mel = torch.full((len(examples), frontend.context_frames + frames, frontend.n_mels), frontend.silence_level())
    for b, e in enumerate(examples):
        tokens[b, : e.length] = torch.from_numpy(e.tokens.astype(np.int64))
        labels[b, : e.length] = torch.from_numpy(e.labels.astype(np.int64))
        mask[b, : e.length] = 1
        mel[b, frontend.context_frames : frontend.context_frames + e.mel.shape[0]] = torch.from_numpy(e.mel.astype(np.float32))
    audio = tokens == AUDIO
    tokens[audio] = pad_id
    words = torch.from_numpy(np.concatenate([e.words for e in examples]).astype(np.int64))
    return {"tokens": tokens, "labels": labels, "attention_mask": mask, "audio_slots": audio, "mel": mel, "words": words}


def forward_loss(model, frontend, batch: dict[str, torch.Tensor], bf16: bool = False, word_head=None,
                 word_weight: float = 0.0) -> tuple[torch.Tensor, dict]:
    """Cross-entropy over the output tokens of a collated batch (audio slots filled by the front-end).

    ``word_head``: an auxiliary linear classifier (training only) that predicts, from the LLM's last hidden
    state at every audio slot, the word being heard there; its cross-entropy is added with ``word_weight``.
    It gives the model a dense speech-recognition signal from the manifest's word timings.
    ``bf16``: run the matrix products under CPU bfloat16 autocast (fp32 master weights), ~2x faster on
    CPUs with AVX512-BF16.
    """
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        embeds = model.get_input_embeddings()(batch["tokens"])
        audio = frontend.embed_frames(batch["mel"])  # [B, chunks * 10, H]
        slots = batch["audio_slots"]
        counts = slots.sum(dim=1)
        chosen = torch.cat([audio[b, : int(counts[b])] for b in range(audio.shape[0])]).to(embeds.dtype)
        embeds = embeds.masked_scatter(slots[..., None], chosen)
        hidden = model.model(inputs_embeds=embeds, attention_mask=batch["attention_mask"]).last_hidden_state
        logits = model.lm_head(hidden)
        word_logits = word_head(hidden[slots]) if word_head is not None else None
    logits = logits.float()
    labels = batch["labels"]
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1), ignore_index=IGNORE)
    stats = {}
    if word_logits is not None:
        word_loss = torch.nn.functional.cross_entropy(word_logits.float(), batch["words"])
        with torch.no_grad():
            spoken = batch["words"] > 0
            stats["word_acc"] = float((word_logits.argmax(-1)[spoken] == batch["words"][spoken]).float().mean()) if spoken.any() else 0.0
        stats["word_loss"] = float(word_loss.detach())
        loss = loss + word_weight * word_loss
    with torch.no_grad():
        trained = labels != IGNORE
        correct = (logits.argmax(-1) == labels) & trained
    return loss, {"tokens": int(trained.sum()), "correct": int(correct.sum()), **stats}
