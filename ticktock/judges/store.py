"""Judgement files: a judge's verdicts on a run's replies, stored in the run's folder.

``<run dir>/judgements/<judge name>.parquet`` holds one row per judged reply (``SCHEMA``): where the reply is
(run_id, session_id, task, turn_index), its score and the scale, the distribution over the scale's points, the
share of the judge model's next-token probability on the scale's tokens, a note (e.g. a reply truncated to fit
the prompt), which judge produced it (name, fingerprint, description), the digest of the text it judged
(``Reply.digest``: a verdict counts only for the same text) and when. A file holds the verdicts of one judge
configuration (one fingerprint). Files are written atomically (``ticktock.results.atomic``): a reader sees the previous
file or the new one, never a partial one. Pure pyarrow: no torch.

Example::

    >>> import tempfile
    >>> from ticktock.judges.base import Reply, Verdict
    >>> class Fixed:
    ...     name, scale = "fixed", (1, 5)
    ...     def fingerprint(self): return "f" * 64
    ...     def describe(self): return "always 4"
    >>> reply = Reply("run-1", "s0", "llama_questions", 0, "Capital of France?", "Paris.", ("Paris",))
    >>> rows = verdict_rows(Fixed(), [reply], [Verdict(4.0)], judged_at=0.0)
    >>> path = judgement_path(Path(tempfile.mkdtemp()), "fixed")
    >>> write_judgements(path, rows)
    >>> read_judgements(path)[["session_id", "turn_index", "score", "judge"]].to_dict("records")
    [{'session_id': 's0', 'turn_index': 0, 'score': 4.0, 'judge': 'fixed'}]
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ticktock.results.atomic import atomic_write
from ticktock.results.names import MAX_NAME_LENGTH, is_name
from ticktock.errors import InputDataError
from ticktock.judges.base import JudgeError, Reply, Verdict

FOLDER = "judgements"
VERSION = 1
VERSION_KEY = b"ticktock_judgements_version"
SCHEMA = pa.schema([
    pa.field("run_id", pa.string()),
    pa.field("session_id", pa.string()),
    pa.field("task", pa.string()),
    pa.field("turn_index", pa.int32()),
    pa.field("score", pa.float64()),
    pa.field("scale_min", pa.float64()),
    pa.field("scale_max", pa.float64()),
    pa.field("probabilities", pa.list_(pa.float64())),
    pa.field("scale_mass", pa.float64()),
    pa.field("note", pa.string()),
    pa.field("judge", pa.string()),
    pa.field("judge_fingerprint", pa.string()),
    pa.field("judge_description", pa.string()),
    pa.field("input_sha256", pa.string()),
    pa.field("judged_at", pa.float64()),  # seconds since the epoch
], metadata={VERSION_KEY: str(VERSION).encode()})


class JudgementFileError(InputDataError):
    """A judgement file cannot be read (exit code 3); the message names it."""


def check_judge_name(name) -> str:
    """``name`` when it can name a judgement file: a name of ``ticktock.results.names`` (letters, digits, ``_``,
    ``.`` and ``-``, the first a letter or digit, at most 128), so the file stays in the run's ``judgements/``
    folder; else a ``JudgeError``.

    >>> check_judge_name("hf_local-v2.1")
    'hf_local-v2.1'
    >>> check_judge_name("../../x")
    Traceback (most recent call last):
    ...
    ticktock.judges.base.JudgeError: judge.name: must be a plain name of letters, digits, '_', '.' and '-' (starting with a letter or digit, at most 128): it names the file judgements/<name>.parquet in each run folder; got '../../x'
    """
    if not is_name(name):
        raise JudgeError("judge.name: must be a plain name of letters, digits, '_', '.' and '-' (starting with a "
                         f"letter or digit, at most {MAX_NAME_LENGTH}): it names the file {FOLDER}/<name>.parquet in "
                         f"each run folder; got {name!r:.80}")
    return name


def judgement_path(run_dir: Path, judge_name: str) -> Path:
    """Where a judge's verdicts on a run are stored (``judge_name`` checked by ``check_judge_name``)."""
    return Path(run_dir) / FOLDER / f"{check_judge_name(judge_name)}.parquet"


def judgement_files(run_dir: Path) -> list[Path]:
    """Every judge's file in a run's folder, by name."""
    return sorted((Path(run_dir) / FOLDER).glob("*.parquet"))


def verdict_rows(judge, replies: Sequence[Reply], verdicts: Sequence[Verdict], judged_at: float) -> list[dict]:
    """One ``SCHEMA`` row per reply and its verdict."""
    low, high = judge.scale
    fingerprint, description = judge.fingerprint(), judge.describe()
    return [{"run_id": r.run_id, "session_id": r.session_id, "task": r.task, "turn_index": r.turn_index,
             "score": float(v.score), "scale_min": float(low), "scale_max": float(high),
             "probabilities": [float(p) for p in v.probabilities], "scale_mass": v.scale_mass, "note": v.note,
             "judge": judge.name, "judge_fingerprint": fingerprint, "judge_description": description,
             "input_sha256": r.digest(), "judged_at": judged_at}
            for r, v in zip(replies, verdicts, strict=True)]


def write_judgements(path: Path, rows: list[dict]) -> None:
    """Write ``rows`` (``SCHEMA`` dicts) as the judgement file ``path``, atomically (its folder is created)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    table = pa.Table.from_pylist([{name: row.get(name) for name in SCHEMA.names} for row in rows], schema=SCHEMA)
    with atomic_write(path) as tmp:
        pq.write_table(table, tmp)


def no_judgements() -> pd.DataFrame:
    """An empty frame with the schema's columns."""
    return SCHEMA.empty_table().to_pandas()


def read_judgements(path: Path) -> pd.DataFrame:
    """A judgement file's rows (``no_judgements()`` when there is no file)."""
    if not path.is_file():
        return no_judgements()
    try:
        schema = pq.read_schema(path)
        version = (schema.metadata or {}).get(VERSION_KEY)
        if version != str(VERSION).encode():
            raise JudgementFileError(f"{path}: judgement file version {(version or b'none').decode()}, but this ticktock "
                                     f"reads version {VERSION}; delete it and judge again")
        missing = [name for name in SCHEMA.names if name not in schema.names]
        if missing:
            raise JudgementFileError(f"{path}: columns missing: {', '.join(missing)}; delete it and judge again")
        return pq.read_table(path).to_pandas()
    except (OSError, pa.ArrowException) as err:
        first = (str(err).strip().splitlines() or [type(err).__name__])[0]
        raise JudgementFileError(f"{path}: not a readable judgement file ({first}); delete it and judge again") from None
