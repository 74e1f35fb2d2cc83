"""A model adapter's conformance checks (``ticktock certify model=...``): the ``ModelAdapter`` contract that the
decoders rely on, checked on the adapter itself.

Every check replays one scripted session (``Bench``): ``start_session``, then two 1 s chunks (noise, then a
tone) and their outputs, a chunk's last token deferred to the next chunk's head as the replay does (its other
tokens one per forward where the order of AR decoding matters, else in the chunk's prefill forward). Each
property is one ``Check`` (compared *exactly* or *reordered*, see below):

- ``sessions reproducible`` (exact): two ``build()`` adapters, and a used one after ``start_session``, give the
  same logits on the session; every other check stands on this.
- ``snapshot/restore exact`` (exact): snapshot after the session, two rounds of other work (forwards, a tree
  forward and ``keep``, ``encode_audio``, ``peek_audio``) each undone by ``restore``; then the next chunk's
  embeddings and the next forward's logits are those of a fresh adapter that did no other work.
- ``chunked prefill = one-shot`` (reordered): the session's inputs in four forwards or in one give the same last
  logits, cache length, cache (keys and values) and next forward.
- ``tree forward = its chains`` (reordered): each node of a draft tree (the next chunk's head and audio, then 6
  draft nodes on 3 branches) has the logits of its root-to-node chain run as a plain forward.
- ``keep compacts exactly`` (reordered): after a tree forward, ``keep`` of one path gives the cache length, cache
  and next logits of that path run as a chain (for a path of the tree's first nodes, and one that is not).
- ``silence hypothesis``: ``peek_audio`` encodes as ``encode_audio`` would and advances nothing, nor does
  ``silence_audio`` (exact); where ``silence_depends_on_state`` is False, ``silence_audio(n)`` equals
  ``peek_audio(zeros)`` after different audio histories (reordered).
- ``replica independent`` (exact): a replica's session, interleaved with the original's, changes nothing of the
  original's, and both answer as fresh adapters; skipped when the adapter has no ``replica()``.
- ``piecewise audio = whole`` (reordered): a chunk encoded in pieces cut on ``causal_granularity_ms`` (early
  prefill) gives its embeddings at once and the same next chunk; skipped when the granularity is None.
- ``forward_many = one by one`` (reordered): an original and its replica batched in ``forward_many`` (one of them
  a tree) answer, and leave their caches, as when run one by one; skipped without ``replica()``.

*exact* is bitwise: the same computation on the same inputs, so any difference is state that leaked.
*reordered* is for results that are equal in exact arithmetic but summed in another order or shape (several
forwards against one, a tree mask against a chain, a batch against one session): |difference| at most 1e-5 of
the compared tensor's scale (its largest |entry|, at least 1), i.e. about 80 float32 epsilons of it. fp32
rounding of reordered sums is relative to the magnitude of what is summed: the embedded model's logits reach
about 25 and move by up to 1e-5 between a batch and one session, or a chunked and a one-shot prefill, so a bare
atol of 1e-5 would sit at the edge of rounding; every shipped adapter stays under 5% of the scaled bound, while
a wrong row, mask or position moves results by a large part of their scale. A model held in bf16 or fp16 gets
the bound scaled by its dtype's epsilon (not yet tried on such a model).

Logits are compared on the rows a decoder reads (a prefill's last position, a verification's root and draft
nodes), each of which attends to the whole cache. When the adapter keeps a transformers cache
(``.cache.layers[i].keys`` / ``.values``), caches are also compared position by position; otherwise the next
forward's logits stand for the cache.

A failure names its first counter-example (the tensor, the row: query, embedding, cache position or draft
node, and the column) and by how much; an exception raised by the adapter is a failure naming it.

Example::

    >>> from ticktock.adapters.fixture import build_fixture_adapter
    >>> from ticktock.conformance.checks import table
    >>> results = adapter_checks(lambda: build_fixture_adapter(seed=0), "fixture")
    >>> print(table(results))                             # doctest: +ELLIPSIS
    property                    setting  result  first counter-example
    --------------------------  -------  ------  ...
    sessions reproducible       fixture  PASS
    snapshot/restore exact      fixture  PASS
    chunked prefill = one-shot  fixture  PASS
    tree forward = its chains   fixture  PASS
    keep compacts exactly       fixture  PASS
    silence hypothesis          fixture  PASS
    replica independent         fixture  PASS
    piecewise audio = whole     fixture  PASS
    forward_many = one by one   fixture  PASS
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import torch

from ticktock.adapters.base import ModelAdapter, Segment, TreeLayout
from ticktock.conformance.checks import Check, Progress
from ticktock.decoders.trees import DraftTree, tree_layout

SAMPLE_RATE = 16_000
CHUNK_SAMPLES = SAMPLE_RATE  # the scripted session's chunks are 1 s long
FP32_REORDERED = 1e-5

REPRODUCIBLE = "sessions reproducible"
RESTORE = "snapshot/restore exact"
CHUNKED_PREFILL = "chunked prefill = one-shot"
TREE = "tree forward = its chains"
KEEP = "keep compacts exactly"
SILENCE = "silence hypothesis"
REPLICA = "replica independent"
PIECEWISE = "piecewise audio = whole"
BATCHED = "forward_many = one by one"


def adapter_checks(build: Callable[[], ModelAdapter], setting: str, progress: Progress | None = None) -> list[Check]:
    """Every adapter property (see the module docstring), one ``Check`` each, in the module table's order.

    ``build()`` must return a fresh adapter on the same weights each call (it is called twice: the adapter under
    test and a reference that only replays the plain session); ``setting`` labels every result (e.g. the model's
    name); ``progress``: where each check's start and end are said (default: nowhere). Nothing is raised for a
    failing adapter: a failure, or an exception from the adapter, is a FAIL naming its first counter-example.

    Example::

        >>> from ticktock.adapters.fixture import build_fixture_adapter
        >>> results = adapter_checks(lambda: build_fixture_adapter(seed=0), "fixture")
        >>> [c.result for c in results if c.prop == "keep compacts exactly"]
        ['PASS']
    """
    progress = progress or Progress()
    with torch.inference_mode():
        try:
            subject, reference = build(), build()
        except Exception as err:  # the adapter under test cannot even be built: every property fails on it
            return [progress.ended(Check(prop, setting, False, "build()", describe_exception(err)))
                    for prop, _ in CHECKS]
        try:
            bench = Bench(subject, reference)
        except Exception as err:  # e.g. a tokenizer that gives no text token
            return [progress.ended(Check(prop, setting, False, "the scripted session", describe_exception(err)))
                    for prop, _ in CHECKS]
        return [progress.checked(prop, setting, lambda check=check, prop=prop: run_check(prop, setting, check, bench))
                for prop, check in CHECKS]


# ------------------------------------------------------------------------------------------ outcomes


class Mismatch(Exception):
    """A counter-example: ``where`` names it (tensor, row, column), ``detail`` says by how much."""

    def __init__(self, where: str, detail: str):
        super().__init__(f"{where}: {detail}")
        self.where = where
        self.detail = detail


class Skipped(Exception):
    """The adapter declares it lacks what a check needs; the message says why."""


def run_check(prop: str, setting: str, check: Callable[["Bench"], None], bench: "Bench") -> Check:
    try:
        check(bench)
    except Skipped as skip:
        return Check(prop, setting, None, "", str(skip))
    except Mismatch as mismatch:
        return Check(prop, setting, False, mismatch.where, mismatch.detail)
    except Exception as err:  # the adapter under test raised: a failure of this property, not of the suite
        return Check(prop, setting, False, "exception", describe_exception(err))
    return Check(prop, setting, True)


def describe_exception(err: Exception) -> str:
    """``Type: message (at file.py:line)``, the line being the innermost frame of the traceback."""
    frames = traceback.extract_tb(err.__traceback__)
    at = f" (at {Path(frames[-1].filename).name}:{frames[-1].lineno})" if frames else ""
    return f"{type(err).__name__}: {err}{at}"


# ----------------------------------------------------------------------------------------- comparing


@dataclass(frozen=True)
class Tolerance:
    """How far two results may differ: ``relative`` times the expected tensor's scale (its largest |entry|, at
    least 1); 0 is bitwise equality.

    >>> round(Tolerance(1e-5).bound(torch.tensor([[-26.0, 3.0]])), 8), Tolerance(1e-5).bound(torch.tensor([0.5]))
    (0.00026, 1e-05)
    """

    relative: float

    def bound(self, expected: torch.Tensor) -> float:
        if self.relative == 0 or expected.numel() == 0:
            return 0.0
        return self.relative * max(1.0, float(expected.abs().max()))  # max(1.0, nan) is 1.0

    def __str__(self) -> str:
        return "exact" if self.relative == 0 else f"{self.relative:g} x scale"


EXACT = Tolerance(0.0)


def reordered_tolerance(adapter: ModelAdapter) -> Tolerance:
    """1e-5 of the scale for a model held in fp32 (or finer); scaled by the dtype's epsilon for a coarser one
    (bf16: 0.66, fp16: 0.08).

    >>> reordered_tolerance(object())
    Tolerance(relative=1e-05)
    """
    dtype = getattr(adapter, "dtype", torch.float32)
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        dtype = torch.float32
    return Tolerance(FP32_REORDERED * max(1.0, torch.finfo(dtype).eps / torch.finfo(torch.float32).eps))


def as_matrix(value) -> torch.Tensor:
    """A result as a float32 (float64 if it is) CPU matrix [rows, columns]: logits [Q, V], embeddings [n, hidden]."""
    tensor = torch.as_tensor(value).detach()
    tensor = tensor.to("cpu", torch.float64 if tensor.dtype == torch.float64 else torch.float32)
    return tensor.reshape(tensor.shape[0], -1) if tensor.dim() != 1 else tensor[:, None]


def compare(actual, expected, tolerance: Tolerance, what: str, row: Callable[[int], str], column: str) -> None:
    """Raise ``Mismatch`` at the first row holding an element that differs by more than ``tolerance`` (a NaN
    always does), naming that row's worst column; shapes must agree."""
    got, want = as_matrix(actual), as_matrix(expected)
    if got.shape != want.shape:
        shapes = [tuple(torch.as_tensor(value).shape) for value in (actual, expected)]
        raise Mismatch(what, f"shape {shapes[0]}, expected {shapes[1]}")
    bound = tolerance.bound(want)
    if bound == 0 and torch.equal(got, want):
        return
    difference = (got - want).abs()
    if bound > 0 and float(difference.max()) <= bound:  # a NaN makes the max NaN: not within
        return
    difference = difference.nan_to_num(nan=float("inf"))
    beyond = (difference > bound).any(dim=1)
    r = int(beyond.nonzero()[0])
    c = int(difference[r].argmax())
    raise Mismatch(f"{what}, {row(r)}, {column} {c}",
                   f"{float(got[r, c]):.7g}, expected {float(want[r, c]):.7g} (|diff| {float(difference[r, c]):.2g}, "
                   f"{'exact' if bound == 0 else f'bound {bound:.2g}'}; largest |diff| {float(difference.max()):.2g})")


def named(label: str) -> Callable[[int], str]:
    return lambda index: f"{label} {index}"


def compare_logits(actual, expected, tolerance: Tolerance, what: str,
                   row: Callable[[int], str] = named("query")) -> None:
    compare(actual, expected, tolerance, what, row, "token id")


def compare_embeddings(actual, expected, tolerance: Tolerance, what: str) -> None:
    compare(actual, expected, tolerance, what, named("embedding"), "dimension")


def cache_tensors(adapter: ModelAdapter) -> list[tuple[str, torch.Tensor]] | None:
    """(name, [positions, ...]) of every layer's keys and values, copied, when the adapter keeps a transformers
    cache in ``.cache`` (``layers[i].keys`` / ``.values`` [batch, heads, positions, dim]); None otherwise."""
    layers = getattr(getattr(adapter, "cache", None), "layers", None)
    if not layers:
        return None
    tensors = []
    for index, layer in enumerate(layers):
        for part in ("keys", "values"):
            tensor = getattr(layer, part, None)
            if not isinstance(tensor, torch.Tensor) or tensor.dim() != 4:
                return None
            tensors.append((f"cache layer {index} {part}", tensor[0].transpose(0, 1).clone()))
    return tensors


def compare_caches(actual: ModelAdapter, expected: ModelAdapter, tolerance: Tolerance, what: str) -> None:
    """Cache lengths, then (when both expose one) keys and values position by position."""
    if actual.cache_length != expected.cache_length:
        raise Mismatch(f"{what}: cache length", f"{actual.cache_length}, expected {expected.cache_length}")
    got, want = cache_tensors(actual), cache_tensors(expected)
    if got is None or want is None:
        return
    if len(got) != len(want):
        raise Mismatch(f"{what}: cache layers", f"{len(got) // 2}, expected {len(want) // 2}")
    for (name, tensor), (_, reference) in zip(got, want):
        compare(tensor, reference, tolerance, f"{what}: {name}", named("position"), "head x dimension")


# ---------------------------------------------------------------------------------- the scripted session


def scripted_audio(kind: str, seed: int) -> np.ndarray:
    """1 s of 16 kHz test audio: ``noise`` (Gaussian, sigma 0.1), ``tone`` (a sine with a little noise), ``silence``.

    >>> [round(float(np.abs(scripted_audio(k, 1)).max()), 1) for k in ("silence", "tone")]
    [0.0, 0.3]
    """
    if kind == "silence":
        return np.zeros(CHUNK_SAMPLES, dtype=np.float32)
    rng = np.random.default_rng(seed)
    if kind == "noise":
        return rng.normal(0.0, 0.1, CHUNK_SAMPLES).astype(np.float32)
    seconds = np.arange(CHUNK_SAMPLES) / SAMPLE_RATE
    tone = 0.3 * np.sin(2 * np.pi * (200 + 40 * seed) * seconds) + rng.normal(0.0, 0.005, CHUNK_SAMPLES)
    return tone.astype(np.float32)


@dataclass(frozen=True)
class ScriptedChunk:
    """One chunk of the scripted session: its audio and the output committed for it."""

    samples: np.ndarray
    output: tuple[int, ...]


def text_tokens(adapter: ModelAdapter, count: int) -> list[int]:
    """``count`` ids of ordinary text (no protocol token), from a sentence through the adapter's tokenizer."""
    structural = adapter.protocol.structural()
    ids = [t for t in adapter.encode_text("Sure, the weather in Paris is sunny today.") if t not in structural]
    if not ids:
        raise ValueError("the adapter's tokenizer gives no text token for an English sentence")
    return [ids[i % len(ids)] for i in range(count)]


def segments_length(adapter: ModelAdapter, segments: Sequence[Segment]) -> int:
    return sum(adapter.segment_length(segment) for segment in segments)


def forward_last(adapter: ModelAdapter, segments: Sequence[Segment], tree: TreeLayout | None = None, rows: int = 1):
    """One forward; the logits of its last ``rows`` positions only (as a prefill or a verification asks for them:
    every such row reads the whole cache)."""
    return adapter.forward(segments, tree, logits_from=segments_length(adapter, segments) - rows)


def stacked(embeddings: Sequence[Segment]) -> torch.Tensor:
    return torch.cat([as_matrix(e) for e in embeddings])


class Bench:
    """The adapter under test (``subject``), a reference built the same way that only replays plain sessions,
    and the scripted session both play."""

    # A draft tree after the next chunk's head and audio: branches 0-1-2, 0-3 and 4-5 (node -> parent).
    DRAFT_PARENTS = (-1, 0, 1, 0, -1, 4)
    LEAF_PATHS = ((0, 1, 2), (0, 3), (4, 5))
    KEPT_PATHS = ((0, 1, 2), (4, 5))  # the tree's first nodes (a truncation), and a later branch (a gather)

    def __init__(self, subject: ModelAdapter, reference: ModelAdapter):
        self.subject = subject
        self.reference = reference
        self.protocol = p = self.subject.protocol
        self.text = text_tokens(self.subject, 6)
        self.prefix = (ScriptedChunk(scripted_audio("noise", 1), (p.listen,)),
                       ScriptedChunk(scripted_audio("tone", 1), (p.speak, self.text[0], self.text[1], p.chunk_eos)))
        self.next_samples = scripted_audio("noise", 2)
        self.other_samples = scripted_audio("noise", 3)  # audio of work that is undone (never the next chunk's)
        self.reordered = reordered_tolerance(self.subject)

    def head(self, index: int) -> list[int]:
        """Chunk ``index``'s head: the previous chunk's deferred last token, ``</unit>``, ``<unit>``."""
        deferred = [self.prefix[index - 1].output[-1]] if index else []
        return deferred + self.protocol.unit_head(index)

    @property
    def next_head(self) -> list[int]:
        return self.head(len(self.prefix))

    def play_prefix(self, adapter: ModelAdapter, stepwise: bool = False):
        """``start_session`` and the scripted chunks; the last-position logits of every forward [forwards, V].

        ``stepwise``: a chunk's output tokens one per forward, as AR decoding feeds them; otherwise in the chunk's
        prefill forward (fewer forwards, for checks that only need the session in the cache).
        """
        adapter.start_session(None, [])
        rows = []
        for index, chunk in enumerate(self.prefix):
            tokens = list(chunk.output[:-1])
            segments = [self.head(index), adapter.encode_audio(chunk.samples)]
            rows.append(forward_last(adapter, segments if stepwise or not tokens else [*segments, tokens]))
            rows += [forward_last(adapter, [[token]]) for token in tokens if stepwise]
        return torch.cat([as_matrix(r) for r in rows])

    def prefill_segments(self, adapter: ModelAdapter) -> list[Segment]:
        """The scripted session's inputs as segments (after ``start_session``; encodes its audio)."""
        audio = [adapter.encode_audio(chunk.samples) for chunk in self.prefix]
        return [self.head(0), audio[0], self.head(1), audio[1], list(self.prefix[1].output[:-1])]

    def draft(self) -> DraftTree:
        """The draft tree of ``DRAFT_PARENTS``: decision tokens and text, as a decoder drafts a chunk's output."""
        tree = DraftTree()
        tokens = (self.protocol.speak, *self.text[2:5], self.protocol.listen, self.text[5])
        for token, parent in zip(tokens, self.DRAFT_PARENTS):
            tree.add_node(token, parent)
        return tree

    def probe(self) -> list[list[int]]:
        """A plain two-token forward that reads the whole cache."""
        return [[self.text[0], self.text[1]]]

    def other_work(self, adapter: ModelAdapter) -> None:
        """Work a decoder undoes: a chunk of other audio, a forward, a tree forward and ``keep``, a peek."""
        audio = adapter.encode_audio(self.other_samples)
        forward_last(adapter, [self.next_head, audio, [self.protocol.speak, self.text[0]]])
        draft = self.draft()
        start = adapter.cache_length
        forward_last(adapter, [list(draft.tokens)], TreeLayout(tuple(draft.parents)))
        adapter.keep(start, self.KEPT_PATHS[1])
        adapter.peek_audio(self.next_samples)
        adapter.encode_audio(self.other_samples)


# ------------------------------------------------------------------------------------------- checks


def check_reproducible(bench: Bench) -> None:
    first = bench.play_prefix(bench.subject, stepwise=True)
    compare_logits(bench.play_prefix(bench.reference, stepwise=True), first, EXACT,
                   "the session's logits on a second build()", named("forward"))
    bench.other_work(bench.subject)
    compare_logits(bench.play_prefix(bench.subject, stepwise=True), first, EXACT,
                   "the session's logits after start_session on a used adapter", named("forward"))


def check_restore(bench: Bench) -> None:
    subject, reference = bench.subject, bench.reference
    bench.play_prefix(subject, stepwise=True)
    state, length = subject.snapshot(), subject.cache_length
    for round_ in (1, 2):
        bench.other_work(subject)
        subject.restore(state)
        if subject.cache_length != length:
            raise Mismatch(f"cache length after restore (round {round_})",
                           f"{subject.cache_length}, snapshot's {length}")
    bench.play_prefix(reference, stepwise=True)  # a fresh session that never did the other work
    compare_caches(subject, reference, EXACT, "cache after restore")
    expected_audio = reference.encode_audio(bench.next_samples)
    compare_embeddings(subject.encode_audio(bench.next_samples), expected_audio, EXACT,
                       "front-end after restore: the next chunk's embeddings")
    compare_logits(forward_last(subject, [bench.next_head, expected_audio]),
                   forward_last(reference, [bench.next_head, expected_audio]), EXACT,
                   "cache after restore: the next forward's last logits")


def check_chunked_prefill(bench: Bench) -> None:
    subject, reference = bench.subject, bench.reference
    subject.start_session(None, [])
    segments = bench.prefill_segments(subject)
    next_audio = subject.encode_audio(bench.next_samples)
    reference.start_session(None, [])
    expected_last = forward_last(reference, segments)

    subject.start_session(None, [])
    tokens = segments[4]  # cut at segment boundaries and inside the last token segment
    pieces = ([segments[0], segments[1]], [segments[2]], [segments[3], tokens[:1]], [tokens[1:]])
    for piece in pieces:
        last = forward_last(subject, [s for s in piece if segments_length(subject, [s])])
    compare_logits(last, expected_last, bench.reordered, "the last logits of four forwards against one")
    compare_caches(subject, reference, bench.reordered, "four forwards against one")
    following = [bench.next_head, next_audio]
    compare_logits(forward_last(subject, following), forward_last(reference, following), bench.reordered,
                   "the next forward's last logits after four forwards against one")


def tree_row(row: int) -> str:
    """Row ``row`` of a verification's logits (from the prefix's last position on)."""
    return "root (the audio's last position)" if row == 0 else f"draft node {row - 1}"


def check_tree(bench: Bench) -> None:
    subject, reference = bench.subject, bench.reference
    bench.play_prefix(subject)
    prefix = [bench.next_head, subject.encode_audio(bench.next_samples)]
    length = segments_length(subject, prefix)
    draft = bench.draft()
    tree_logits = as_matrix(forward_last(subject, [*prefix, list(draft.tokens)], tree_layout(length, draft),
                                         rows=1 + len(draft)))
    for path in bench.LEAF_PATHS:
        bench.play_prefix(reference)
        chain = forward_last(reference, [*prefix, [draft.tokens[i] for i in path]], rows=1 + len(path))
        rows = [0, *(1 + i for i in path)]
        compare_logits(chain, tree_logits[rows], bench.reordered,
                       f"tree forward against the chain to draft node {path[-1]} ({'-'.join(map(str, path))})",
                       lambda r: tree_row(rows[r]))


def check_keep(bench: Bench) -> None:
    subject, reference = bench.subject, bench.reference
    draft = bench.draft()
    for path in bench.KEPT_PATHS:
        bench.play_prefix(subject)
        prefix = [bench.next_head, subject.encode_audio(bench.next_samples)]
        length = segments_length(subject, prefix)
        start = subject.cache_length
        forward_last(subject, [*prefix, list(draft.tokens)], tree_layout(length, draft))
        subject.keep(start + length, path)
        bench.play_prefix(reference)
        chain = [*prefix, [draft.tokens[i] for i in path]]
        forward_last(reference, chain)
        what = f"keep({start + length}, {list(path)}) against the chain"
        compare_caches(subject, reference, bench.reordered, what)
        compare_logits(subject.forward(bench.probe()), reference.forward(bench.probe()), bench.reordered,
                       f"{what}: the next forward's logits")


SILENCE_HISTORIES = (("1 s of noise", (("noise", 4),)), ("1 s of noise, 1 s of tone", (("noise", 4), ("tone", 2))))


def history_audio(history) -> list[np.ndarray]:
    return [scripted_audio(kind, seed) for kind, seed in history]


def encode_after(adapter: ModelAdapter, history: list[np.ndarray], samples: np.ndarray):
    """``start_session``, ``encode_audio`` of each history chunk, then of ``samples``."""
    adapter.start_session(None, [])
    for chunk in history:
        adapter.encode_audio(chunk)
    return adapter.encode_audio(samples)


def check_silence(bench: Bench) -> None:
    subject, reference = bench.subject, bench.reference
    zeros = np.zeros(CHUNK_SAMPLES, dtype=np.float32)
    peeked = {}
    for name, history in SILENCE_HISTORIES:
        audio = history_audio(history)
        expected_silence = encode_after(reference, audio, zeros)
        expected_next = encode_after(reference, audio, bench.next_samples)
        subject.start_session(None, [])
        for chunk in audio:
            subject.encode_audio(chunk)
        peeked[name] = subject.peek_audio(zeros)
        subject.peek_audio(bench.other_samples)
        subject.silence_audio(CHUNK_SAMPLES)
        compare_embeddings(peeked[name], expected_silence, EXACT,
                           f"peek_audio(zeros) after {name} against encode_audio")
        compare_embeddings(subject.encode_audio(bench.next_samples), expected_next, EXACT,
                           f"encode_audio after peek_audio and silence_audio (after {name}) against no peek")
    if subject.silence_depends_on_state:
        return
    for name, peek in peeked.items():  # declared stateless: the cached silence must be every history's silence
        compare_embeddings(subject.silence_audio(CHUNK_SAMPLES), peek, bench.reordered,
                           f"silence_audio({CHUNK_SAMPLES}) against peek_audio(zeros) after {name}")


def replica_of(adapter: ModelAdapter) -> ModelAdapter:
    try:
        return adapter.replica()
    except NotImplementedError as err:
        raise Skipped(f"no replica(): {err}") from None


def other_session(bench: Bench, adapter: ModelAdapter) -> tuple:
    """A second session's first steps: (its audio embeddings, its first forward's logits)."""
    adapter.start_session(None, [])
    audio = adapter.encode_audio(bench.other_samples)
    return audio, forward_last(adapter, [bench.head(0), audio])


def check_replica(bench: Bench) -> None:
    subject, reference = bench.subject, bench.reference
    bench.play_prefix(reference)
    expected_audio = reference.encode_audio(bench.next_samples)
    expected_logits = forward_last(reference, [bench.next_head, expected_audio])
    expected_twin_audio, expected_twin_first = other_session(bench, reference)
    expected_twin_second = reference.forward(bench.probe())

    bench.play_prefix(subject)
    length = subject.cache_length
    twin = replica_of(subject)
    twin_audio, twin_first = other_session(bench, twin)  # the replica's session, while the original holds its own
    if subject.cache_length != length:
        raise Mismatch("original's cache length after the replica's start_session and forward",
                       f"{subject.cache_length}, was {length}")
    compare_embeddings(subject.encode_audio(bench.next_samples), expected_audio, EXACT,
                       "original's next chunk's embeddings after the replica's work")
    compare_logits(forward_last(subject, [bench.next_head, expected_audio]), expected_logits, EXACT,
                   "original's next forward's last logits after the replica's work")
    twin_second = twin.forward(bench.probe())  # the replica again, after the original's work
    compare_embeddings(twin_audio, expected_twin_audio, EXACT, "replica's embeddings against a fresh adapter's")
    compare_logits(twin_first, expected_twin_first, EXACT, "replica's first forward against a fresh adapter's")
    compare_logits(twin_second, expected_twin_second, EXACT,
                   "replica's forward after the original's work against a fresh adapter's")


def check_piecewise(bench: Bench) -> None:
    subject, reference = bench.subject, bench.reference
    granularity = subject.causal_granularity_ms
    if not granularity:
        raise Skipped("causal_granularity_ms is None: the front-end encodes a chunk only whole (no early prefill)")
    inner = list(range(SAMPLE_RATE * granularity // 1000, CHUNK_SAMPLES, SAMPLE_RATE * granularity // 1000))
    if not inner:
        raise Skipped(f"causal_granularity_ms {granularity}: no boundary inside a 1 s chunk")
    cuts = [0, *sorted({inner[0], inner[len(inner) // 2]}), CHUNK_SAMPLES]  # one granule, then a few, then the rest
    history, chunk = bench.prefix[0].samples, bench.prefix[1].samples
    expected = encode_after(reference, [history], chunk)
    expected_next = reference.encode_audio(bench.next_samples)
    subject.start_session(None, [])
    subject.encode_audio(history)
    pieces = [subject.encode_audio(chunk[a:b]) for a, b in zip(cuts, cuts[1:])]
    spans = ", ".join(f"{1000 * a // SAMPLE_RATE}-{1000 * b // SAMPLE_RATE} ms" for a, b in zip(cuts, cuts[1:]))
    compare_embeddings(stacked(pieces), expected, bench.reordered,
                       f"a chunk encoded in pieces ({spans}) against at once")
    compare_embeddings(subject.encode_audio(bench.next_samples), expected_next, bench.reordered,
                       "the next chunk after a chunk encoded in pieces")


def check_batched(bench: Bench) -> None:
    subject, reference = bench.subject, bench.reference
    bench.play_prefix(subject)
    twin = replica_of(subject)
    twin.start_session(None, [])
    twin_segments = [bench.head(0), twin.encode_audio(bench.other_samples)]
    prefix = [bench.next_head, subject.encode_audio(bench.next_samples)]
    draft = bench.draft()
    segments = [*prefix, list(draft.tokens)]
    length = segments_length(subject, prefix)
    layout = tree_layout(length, draft)
    twin_length = segments_length(twin, twin_segments)
    batched = subject.forward_many([(subject, segments, layout, length - 1),
                                    (twin, twin_segments, None, twin_length - 1)])

    bench.play_prefix(reference)
    compare_logits(batched[0], forward_last(reference, segments, layout, rows=1 + len(draft)), bench.reordered,
                   "forward_many, session 0 (a tree after a session) against alone", tree_row)
    compare_caches(subject, reference, bench.reordered, "forward_many, session 0 against alone")
    compare_logits(subject.forward(bench.probe()), reference.forward(bench.probe()), bench.reordered,
                   "session 0's next forward after forward_many against alone")
    reference.start_session(None, [])
    compare_logits(batched[1], forward_last(reference, twin_segments), bench.reordered,
                   "forward_many, session 1 (a replica's first chunk) against alone")
    compare_caches(twin, reference, bench.reordered, "forward_many, session 1 against alone")
    compare_logits(twin.forward(bench.probe()), reference.forward(bench.probe()), bench.reordered,
                   "session 1's next forward after forward_many against alone")


CHECKS: tuple[tuple[str, Callable[[Bench], None]], ...] = (
    (REPRODUCIBLE, check_reproducible),
    (RESTORE, check_restore),
    (CHUNKED_PREFILL, check_chunked_prefill),
    (TREE, check_tree),
    (KEEP, check_keep),
    (SILENCE, check_silence),
    (REPLICA, check_replica),
    (PIECEWISE, check_piecewise),
    (BATCHED, check_batched),
)
