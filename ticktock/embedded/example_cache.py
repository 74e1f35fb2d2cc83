"""The training examples of a corpus, cached as plain arrays: a NumPy ``.npz`` read with ``allow_pickle=False``, so
a cache file can hold numbers and text, never code.

``train`` builds every session's examples once (its audio's log-mel frames and word labels, and the token ids,
labels and decisions of each drawn phrasing) and keeps them in the corpus folder. The file stores the sessions'
ids, tasks, frames and word labels once, and every phrasing's arrays, as concatenations with offsets::

    format                     "ticktock-examples-1"
    session_id, task           [S] text
    mel, mel_offsets           [frames, n_mels] float16, [S + 1]
    words, word_offsets        [slots] int32, [S + 1]
    draw_session               [D] int64: the session of each phrasing
    tokens, labels, token_offsets, decisions, decision_offsets

Anything else (a torn file, a pickle, arrays that do not fit together) raises ``ExampleCacheError``; ``train``
then builds the examples again. Reading back gives arrays equal, bit for bit, to the ones written.

Example::

    >>> import tempfile
    >>> from ticktock.embedded.data import Example
    >>> one = Example("s1", "fdb_v3", np.array([1, 2], np.int32), np.array([2, -100], np.int32),
    ...               np.zeros((100, 4), np.float16), np.array([7], np.int32), np.zeros(10, np.int32))
    >>> path = Path(tempfile.mkdtemp()) / "examples.npz"
    >>> write_examples(path, [[one, one]])
    >>> [[e.session_id for e in draws] for draws in read_examples(path)], read_examples(path)[0][1].tokens
    ([['s1', 's1']], array([1, 2], dtype=int32))
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np

from ticktock.results.atomic import atomic_write

FORMAT = "ticktock-examples-1"
PER_SESSION = ("session_id", "task", "mel", "mel_offsets", "words", "word_offsets")
PER_DRAW = ("draw_session", "tokens", "labels", "token_offsets", "decisions", "decision_offsets")


class ExampleCacheError(ValueError):
    """An example cache that cannot be used (unreadable, not this format, or inconsistent); it is rebuilt."""


def offsets(lengths) -> np.ndarray:
    """Where each of a concatenation's parts starts, and the total: ``offsets([2, 3]) -> [0, 2, 5]``."""
    return np.concatenate([[0], np.cumsum(np.asarray(list(lengths), dtype=np.int64))]).astype(np.int64)


def write_examples(path: Path, examples) -> None:
    """Write ``examples`` (per session, its list of Examples: the phrasings, which share the audio) atomically."""
    firsts = [draws[0] for draws in examples]
    draws = [(i, e) for i, session in enumerate(examples) for e in session]
    arrays = {
        "format": np.array(FORMAT),
        "session_id": np.array([e.session_id for e in firsts], dtype=str),
        "task": np.array([e.task for e in firsts], dtype=str),
        "mel": np.concatenate([e.mel for e in firsts]) if firsts else np.zeros((0, 0), np.float16),
        "mel_offsets": offsets(e.mel.shape[0] for e in firsts),
        "words": np.concatenate([e.words for e in firsts]) if firsts else np.zeros(0, np.int32),
        "word_offsets": offsets(e.words.shape[0] for e in firsts),
        "draw_session": np.array([i for i, _ in draws], dtype=np.int64),
        "tokens": np.concatenate([e.tokens for _, e in draws]) if draws else np.zeros(0, np.int32),
        "labels": np.concatenate([e.labels for _, e in draws]) if draws else np.zeros(0, np.int32),
        "token_offsets": offsets(e.tokens.shape[0] for _, e in draws),
        "decisions": np.concatenate([e.decisions for _, e in draws]) if draws else np.zeros(0, np.int32),
        "decision_offsets": offsets(e.decisions.shape[0] for _, e in draws),
    }
    with atomic_write(path) as tmp:
        with tmp.open("wb") as handle:
            np.savez(handle, **arrays)


def load_arrays(path: Path) -> dict[str, np.ndarray]:
    """Every array of the file, read without pickles (an object array is refused, not unpickled)."""
    try:
        with np.load(path, allow_pickle=False) as data:
            return {name: data[name] for name in data.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, KeyError) as err:
        raise ExampleCacheError(f"{path}: not an example cache ({type(err).__name__}: {err})") from None


def check_offsets(name: str, starts: np.ndarray, parts: int, total: int) -> None:
    """``starts`` must be ``parts + 1`` non-decreasing offsets from 0 to ``total``."""
    fits = starts.ndim == 1 and starts.shape[0] == parts + 1 and starts.dtype.kind == "i"
    if not (fits and starts[0] == 0 and starts[-1] == total and np.all(np.diff(starts) >= 0)):
        raise ExampleCacheError(f"{name} do not fit the arrays they index")


def check_arrays(arrays: dict[str, np.ndarray]) -> None:
    """Refuse a cache of another format, or whose arrays do not fit together."""
    missing = [name for name in ("format", *PER_SESSION, *PER_DRAW) if name not in arrays]
    if missing:
        raise ExampleCacheError(f"missing arrays {', '.join(missing)}")
    if str(arrays["format"]) != FORMAT:
        raise ExampleCacheError(f"format {str(arrays['format'])!r:.40}, not {FORMAT!r}")
    sessions, draws = arrays["session_id"].shape[0], arrays["draw_session"].shape[0]
    if arrays["task"].shape != (sessions,) or arrays["mel"].ndim != 2:
        raise ExampleCacheError("session arrays of different lengths")
    check_offsets("mel_offsets", arrays["mel_offsets"], sessions, arrays["mel"].shape[0])
    check_offsets("word_offsets", arrays["word_offsets"], sessions, arrays["words"].shape[0])
    check_offsets("token_offsets", arrays["token_offsets"], draws, arrays["tokens"].shape[0])
    check_offsets("decision_offsets", arrays["decision_offsets"], draws, arrays["decisions"].shape[0])
    if arrays["labels"].shape != arrays["tokens"].shape:
        raise ExampleCacheError("labels and tokens of different lengths")
    owners = arrays["draw_session"]
    if owners.dtype.kind != "i" or (draws and (owners.min() < 0 or owners.max() >= sessions or np.any(np.diff(owners) < 0))):
        raise ExampleCacheError("draw_session does not name the sessions in order")


def read_examples(path: Path) -> list:
    """The examples ``write_examples`` wrote to ``path``; ExampleCacheError when the file is anything else."""
    from ticktock.embedded.data import Example

    arrays = load_arrays(path)
    try:
        check_arrays(arrays)
    except ExampleCacheError as err:
        raise ExampleCacheError(f"{path}: not an example cache of this version ({err})") from None
    mel, words, token_at, decision_at = (arrays[k] for k in ("mel_offsets", "word_offsets", "token_offsets",
                                                               "decision_offsets"))
    examples: list[list] = [[] for _ in range(arrays["session_id"].shape[0])]
    for d, s in enumerate(arrays["draw_session"].tolist()):
        tokens = slice(token_at[d], token_at[d + 1])
        examples[s].append(Example(str(arrays["session_id"][s]), str(arrays["task"][s]), arrays["tokens"][tokens],
                                   arrays["labels"][tokens], arrays["mel"][mel[s] : mel[s + 1]],
                                   arrays["decisions"][decision_at[d] : decision_at[d + 1]],
                                   arrays["words"][words[s] : words[s + 1]]))
    if any(not draws for draws in examples):
        raise ExampleCacheError(f"{path}: not an example cache of this version (a session without examples)")
    return examples
