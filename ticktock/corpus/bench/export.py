"""Export a corpus as a Hugging Face dataset: one config per task, split ``test``, in the layout the Hub serves.

``CORPUS`` is a folder holding ``manifest.jsonl`` (or that file), or the output of ``ticktock bench build`` (a folder
of such corpus folders, one per source); several may be given. Their sessions (ids unique across them) are checked
as a replay checks them (every line valid, every audio file there and as long as its ``duration_s``), then written
to ``OUT``::

    OUT/README.md                                    the dataset card (``card.py``): YAML header, composition, ...
    OUT/<task>/test-00000-of-0000N.parquet           the rows of one task (``ticktock.sessions.dataset_rows``)
    OUT/made_by.json                                 what wrote OUT (``ticktock.corpus.output_folder``)

The ``audio`` column is the ``Audio`` feature holding each session's audio file's bytes unchanged (its FLAC), so
``datasets`` reads it back without torchcodec (``Audio(decode=False)``) and a replay from the dataset hashes the same
audio. The rows are built as plain ``{bytes, path}`` structs and then cast to ``Audio()``: the cast is pure Arrow,
while building rows through an ``Audio`` feature makes ``datasets`` 5 import torchcodec. ``load_dataset(OUT, task)``
reads a config (offline: it is a local folder); ``task=hf task.dataset=OUT`` replays it.

``OUT`` may be new or empty, or this export's own earlier output (its ``made_by.json`` records ``bench export`` of
the same corpora and options: rewritten); the corpus itself is always refused, and a folder holding anything else
(another corpus or export, the user's own files) unless ``overwrite``. Even then only the card (``README.md``),
``made_by.json`` and the config folders (folders of parquet shards only) are replaced; nothing else is deleted.
The files are staged in ``OUT/.export-*`` (a staging folder left by a killed export does not count as content) and
moved in at the end, the card last. ``push_to_hub`` uploads an export with ``datasets``' own ``push_to_hub`` (one
call per config) and the card with ``huggingface_hub``'s ``DatasetCard.push_to_hub``.

Example::

    >>> result = export(Path("my-corpus"), Path("my-dataset"))                                # doctest: +SKIP
    >>> [(row.task, row.sessions) for row in result.rows][:1]                                # doctest: +SKIP
    [('llama_questions', 13)]
"""

from __future__ import annotations

import math
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ticktock.corpus.bench import BenchError
from ticktock.corpus.bench.card import SPLIT, TaskRow, composition, dataset_card, task_order
from ticktock.errors import shown
from ticktock.sessions.hub import quiet

SHARD_ROWS = 500  # sessions per parquet file (bounds the memory an export holds at once)
CONFIG_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
SHARD = re.compile(rf"{SPLIT}-\d{{5}}-of-\d{{5}}\.parquet")


@dataclass
class Export:
    """What an export wrote: the folder and its tasks' composition."""

    out: Path
    rows: list[TaskRow]


def corpus_manifests(corpus: Path) -> list[Path]:
    """The manifests of ``CORPUS``: its ``manifest.jsonl`` (or the file itself), else those of its subfolders (the
    output of ``ticktock bench build``), in name order."""
    if corpus.is_file():
        return [corpus]
    if (corpus / "manifest.jsonl").is_file():
        return [corpus / "manifest.jsonl"]
    found = sorted(corpus.glob("*/manifest.jsonl"))
    if not found:
        raise BenchError(f"{corpus}: no manifest.jsonl (CORPUS is a corpus folder, its manifest file, or a folder of "
                         "corpus folders such as ticktock bench build writes)")
    return found


def load_corpora(manifests: list[Path]) -> list:
    """Every session of the manifests, checked as a replay checks them; an id in two manifests is refused."""
    from ticktock.sessions.manifest import check_audio_durations, load_manifest

    sessions, first = [], {}
    for manifest in manifests:
        for session in load_manifest(manifest):
            if session.session_id in first:
                raise BenchError(f"{manifest}:{session.manifest_line}: session id {session.session_id!r} is also in "
                                 f"{first[session.session_id]}")
            first[session.session_id] = manifest
            sessions.append(session)
    return check_audio_durations(sessions)


def export(corpora: Path | list[Path], out: Path, *, name: str = "TickTock-Bench", repo: str | None = None,
           overwrite: bool = False) -> Export:
    """Write the corpora as one dataset into ``out`` (module docstring); ``repo`` is named in the card."""
    from ticktock.corpus.output_folder import MadeBy, OutputFolderError, claim_output, differences, read_record
    from ticktock.results.fingerprint import file_sha256

    manifests = [m for corpus in ([corpora] if isinstance(corpora, Path) else corpora)
                 for m in corpus_manifests(Path(corpus))]
    sessions = load_corpora(manifests)
    by_task = {task: [s for s in sessions if s.task == task] for task in task_order({s.task for s in sessions})}
    for task in by_task:
        if not CONFIG_NAME.fullmatch(task):
            raise BenchError(f"{by_task[task][0].manifest_path}: task {task!r} cannot name a dataset config (letters, "
                             "digits, '_', '.', '-')")
    record = MadeBy("bench export", {"corpus": {str(m.resolve()): file_sha256(m) for m in manifests},
                                     "--name": name, "--push-to-hub": repo})
    out = Path(out)
    previous = read_record(out)
    if not overwrite and previous is not None and previous.command == record.command and \
            previous.to_json() != record.to_json():
        raise OutputFolderError(f"{out}: already holds a dataset export ({differences(previous, record)}); choose "
                                "another --out, or pass --overwrite to replace it")
    claim_output(out, record, {f"CORPUS {m}": m.parent for m in manifests}, overwrite)
    if not overwrite and not (previous is not None and previous.to_json() == record.to_json()):
        refuse_foreign(out)
    out.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=out, prefix=".export-"))
    try:
        with quiet():
            for task, group in by_task.items():
                write_config(staging / task, group)
        rows = composition(sessions)
        (staging / "README.md").write_text(dataset_card(name, rows, repo), encoding="utf-8")
        commit(staging, out, record)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return Export(out, rows)


def refuse_foreign(out: Path) -> None:
    """Refuse a folder that holds anything (but an interrupted export's staging folder) and is not this export's own
    earlier output: its files are the user's (a ``README.md`` would be replaced by the card). ``OutputFolderError``
    naming the folder, what it holds and ``--overwrite``."""
    from ticktock.corpus.output_folder import OutputFolderError

    held = sorted(p.name for p in out.iterdir() if not p.name.startswith(".export-")) if out.is_dir() else []
    if held:
        names = ", ".join(shown(name) for name in held[:3]) + (f" and {len(held) - 3} more" if len(held) > 3 else "")
        raise OutputFolderError(f"{out}: not empty and not an earlier export of these corpora (holds {names}); choose "
                                "another --out, or pass --overwrite to write there anyway (its README.md becomes the "
                                "dataset card)")


def write_config(folder: Path, sessions: list) -> None:
    """One config: the sessions' rows in parquet shards of ``SHARD_ROWS``, the audio column an ``Audio`` feature."""
    from datasets import Audio, Dataset

    from ticktock.sessions.dataset_rows import COLUMNS, features, session_row

    folder.mkdir()
    shards = max(1, math.ceil(len(sessions) / SHARD_ROWS))
    for index in range(shards):
        part = sessions[index * SHARD_ROWS : (index + 1) * SHARD_ROWS]
        rows = [session_row(s.to_json(), s.audio_path.read_bytes()) for s in part]
        table = Dataset.from_dict({c: [row[c] for row in rows] for c in COLUMNS}, features=features())
        table.cast_column("audio", Audio()).to_parquet(str(folder / f"{SPLIT}-{index:05d}-of-{shards:05d}.parquet"))


def commit(staging: Path, out: Path, record) -> None:
    """Replace an earlier export's configs (folders of parquet shards) with the staged ones; the card last."""
    from ticktock.corpus.output_folder import write_record

    configs = sorted(p for p in staging.iterdir() if p.is_dir())
    for folder in configs:
        if (out / folder.name).exists() and not is_config(out / folder.name):
            raise BenchError(f"{out / folder.name}: exists and is not a config of an earlier export; choose another "
                             "--out")
    for old in out.iterdir():
        if old != staging and is_config(old):
            shutil.rmtree(old)
    for folder in configs:
        os.replace(folder, out / folder.name)
    write_record(out, record)
    os.replace(staging / "README.md", out / "README.md")


def is_config(folder: Path) -> bool:
    """Whether ``folder`` is a config an export wrote: a folder of parquet shards and nothing else."""
    files = list(folder.iterdir()) if folder.is_dir() else []
    return bool(files) and all(SHARD.fullmatch(f.name) for f in files)


def push_to_hub(out: Path, repo: str, tasks: list[str], private: bool | None = None) -> None:
    """Upload an export to the Hub dataset ``repo`` (needs network and a login, ``hf auth login``): each config
    with ``DatasetDict.push_to_hub(repo, config_name=task)``, then the card."""
    from datasets import load_dataset
    from huggingface_hub import DatasetCard

    for task in tasks:
        load_dataset(str(out), task).push_to_hub(repo, config_name=task, private=private)
    DatasetCard((out / "README.md").read_text(encoding="utf-8")).push_to_hub(repo, repo_type="dataset")
