"""Which converted sessions make up a benchmark: N sessions per task type, chosen reproducibly, or a list.

The public sources hold about 4,825 sessions (OpenAudioBench 300 + 1,000 + 1,000, VoiceBench AlpacaEval
199, Big Bench Audio 1,000, Full-Duplex-Bench v1.0 727, v1.5 499, v3 100). The TickTock-Bench paper
replays 760 of them (8 task types) but does not publish which, so its subset cannot be rebuilt. TickTock's
own selection is the config ``configs/selection/ticktock_bench.yaml``: 95 sessions per task type, seed 0
(760 sessions). ``python -m ticktock.corpus.convert SOURCE ... --selection ticktock_bench`` applies it (or
``--per-task N --seed S``); a config of your own (a YAML path) can list session ids instead, to match any
published subset.

Within a task type, sessions are ranked by the SHA-256 of ``"<seed>:<session id>"`` and the first N are
kept, in source order. The rank depends on the seed and the id alone, not on file-system order, on Python's
random module or on which other sessions are present: the 50 of a seed are among its 95, and converting
the sources one at a time keeps the same sessions as converting them together.

Config file (YAML)::

    name: ticktock_bench
    seed: 0
    per_task: 95                  # sessions per task type; null = all
    ids:                          # optional: task type -> the session ids to keep (instead of per_task)
      fdb_v3: [fdb_v3-ecommerce_09_65e8cf8f4c7424fa062e54a3, ...]

Example::

    >>> keys = [("trivia_qa", f"trivia_qa-{i:04d}") for i in range(6)] + [("fdb_v3", "fdb_v3-a"), ("fdb_v3", "fdb_v3-b")]
    >>> select(keys, Selection(per_task=2, seed=0))
    [3, 5, 6, 7]
    >>> select(keys, Selection(ids={"trivia_qa": ("trivia_qa-0005",)}, per_task=1))
    [5, 6]
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from ticktock.corpus.convert import ConvertError
from ticktock.shipped import resource_path

SELECTION_FOLDER = "configs/selection"


@dataclass(frozen=True)
class Selection:
    """``per_task`` sessions of every task type (None: all) ranked with ``seed``; ``ids`` fixes the sessions of
    some task types instead (task type -> session ids)."""

    per_task: int | None = None
    seed: int = 0
    ids: dict = field(default_factory=dict)
    name: str = "custom"


def rank(seed: int, session_id: str) -> str:
    """The sort key of a session within its task type."""
    return hashlib.sha256(f"{seed}:{session_id}".encode("utf-8")).hexdigest()


def select(keys: Sequence[tuple[str, str]], selection: Selection) -> list[int]:
    """Indices (in order) of the ``(task type, session id)`` keys that ``selection`` keeps."""
    by_task: dict[str, list[int]] = defaultdict(list)
    for index, (task, _) in enumerate(keys):
        by_task[task].append(index)
    kept: list[int] = []
    for task, indices in by_task.items():
        if task in selection.ids:
            wanted = set(selection.ids[task])
            kept += [i for i in indices if keys[i][1] in wanted]
        elif selection.per_task is None:
            kept += indices
        else:
            kept += sorted(indices, key=lambda i: rank(selection.seed, keys[i][1]))[: selection.per_task]
    return sorted(kept)


def missing_ids(keys: Sequence[tuple[str, str]], selection: Selection) -> list[str]:
    """Session ids the selection lists for a task type present in ``keys`` that are not among them."""
    present = {task for task, _ in keys}
    found = {sid for _, sid in keys}
    return [sid for task, ids in selection.ids.items() if task in present for sid in ids if sid not in found]


def load_selection(name_or_path: str | Path) -> Selection:
    """A selection config: a shipped name (``ticktock_bench``) or the path of a YAML file."""
    import yaml

    path = Path(name_or_path)
    if not path.suffix:
        path = resource_path(f"{SELECTION_FOLDER}/{name_or_path}.yaml")
    if not path.is_file():
        raise ConvertError(f"{path}: selection config not found (a YAML file, or a name in {SELECTION_FOLDER}/)")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as err:
        raise ConvertError(f"{path}: not valid YAML ({err})") from None
    except RecursionError:
        raise ConvertError(f"{path}: not valid YAML (nested too deeply)") from None
    if not isinstance(data, dict):
        raise ConvertError(f"{path}: expected a mapping with per_task, seed and ids")
    return selection_from(data, path)


def selection_from(data: dict, path: Path) -> Selection:
    """Check a decoded selection config field by field; errors name the file and the field."""
    unknown = sorted(set(data) - {"name", "per_task", "seed", "ids"})
    if unknown:
        raise ConvertError(f"{path}: unknown field(s) {', '.join(unknown)} (fields: name, per_task, seed, ids)")
    per_task, seed, ids = data.get("per_task"), data.get("seed", 0), data.get("ids") or {}
    if per_task is not None and (not isinstance(per_task, int) or isinstance(per_task, bool) or per_task < 1):
        raise ConvertError(f"{path}: field 'per_task' must be a whole number >= 1 or null, got {per_task!r}")
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise ConvertError(f"{path}: field 'seed' must be a whole number, got {seed!r}")
    if not isinstance(ids, dict) or not all(isinstance(v, list) and all(isinstance(s, str) for s in v)
                                            for v in ids.values()):
        raise ConvertError(f"{path}: field 'ids' must map task types to lists of session ids")
    return Selection(per_task, seed, {str(k): tuple(v) for k, v in ids.items()}, str(data.get("name") or path.stem))
