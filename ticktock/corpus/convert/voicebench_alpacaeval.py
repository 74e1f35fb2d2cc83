"""VoiceBench AlpacaEval (hlt-lab/voicebench, config ``alpacaeval``): spoken open-ended instructions.

Published layout: parquet files per config, e.g. ``alpacaeval/test-00000-of-00001.parquet``, with the
columns ``audio`` (the Hugging Face Audio feature, stored as ``{bytes, path}``; a decoded copy holds
``{array, sampling_rate}``, also accepted) and ``prompt`` (the instruction text). ``--src`` is one parquet
file, a folder of them, or the dataset folder holding ``<config>/`` folders (``--subsets``, default
``alpacaeval``; e.g. ``alpacaeval_full``). Files are read with pyarrow, never from the hub.

There is no reference reply, so every session gets the fixed reply room (``tail_unknown_s``, 8 s) and no
script. Task ``alpaca_eval``, id ``<config>-<row>`` (rows counted over the config's files in name order).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ticktock.corpus.convert import CONVERTER_VERSION, ConvertError, Options, source_path
from ticktock.corpus.convert.utterance import utterance_session
from ticktock.corpus.convert.writer import CorpusWriter
from ticktock.sessions.manifest import Session

SOURCE = "voicebench"
TASK = "alpaca_eval"
DEFAULT_SUBSET = "alpacaeval"
COLUMNS = {"audio": "audio", "text": "prompt"}


@dataclass(frozen=True)
class Item:
    subset: str
    index: int
    parquet: Path
    row_group: int
    row: int
    prompt: str


def parquet_files(src: Path, subset: str) -> list[Path]:
    if src.is_file():
        return [src]
    folder = src / subset if (src / subset).is_dir() else src
    files = sorted(folder.glob("*.parquet")) or sorted((folder / "data").glob("*.parquet"))
    if not files:
        raise ConvertError(f"{folder}: no parquet files (expected {subset}/test-*.parquet or a .parquet --src)")
    return files


def read_items(options: Options) -> list[Item]:
    import pyarrow.parquet as pq

    columns = {**COLUMNS, **options.columns}
    items: list[Item] = []
    subsets = options.subsets or (DEFAULT_SUBSET,)
    for subset in subsets:
        index = 0
        for path in parquet_files(options.src, subset):
            try:
                handle = pq.ParquetFile(path)
            except Exception as err:  # pyarrow raises ArrowInvalid / OSError on a damaged file
                raise ConvertError(f"{path}: cannot read parquet ({err})") from None
            names = handle.schema_arrow.names
            missing = [c for c in columns.values() if c not in names]
            if missing:
                raise ConvertError(f"{path}: missing column(s) {', '.join(missing)} (the file has {', '.join(names)})")
            for group in range(handle.num_row_groups):
                prompts = handle.read_row_group(group, columns=[columns["text"]]).column(0).to_pylist()
                for row, prompt in enumerate(prompts):
                    if options.limit is not None and index >= options.limit:
                        break
                    if not isinstance(prompt, str) or not prompt.strip():
                        raise ConvertError(f"{path}: row {index}: empty {columns['text']!r}")
                    items.append(Item(subset, index, path, group, row, prompt.strip()))
                    index += 1
    return items


@lru_cache(maxsize=1)
def _audio_column(path: Path, group: int, column: str) -> list:
    import pyarrow.parquet as pq

    return pq.ParquetFile(path).read_row_group(group, columns=[column]).column(0).to_pylist()


def session_key(item: Item) -> tuple[str, str]:
    """(task type, session id) of the session an item becomes."""
    return TASK, f"{item.subset}-{item.index:04d}"


def build_session(item: Item, writer: CorpusWriter, options: Options) -> Session:
    column = {**COLUMNS, **options.columns}["audio"]
    label = f"{item.parquet} row {item.index}"
    cell = _audio_column(item.parquet, item.row_group, column)[item.row]
    clip = decode_cell(cell, item.parquet.parent, writer, label)
    return utterance_session(
        writer, clip, label,
        session_id=session_key(item)[1],
        task=TASK,
        text=item.prompt,
        lead_s=options.lead_s,
        tail_unknown_s=options.tail_unknown_s,
        behaviour={"type": "instruction_following"},
        provenance={
            "source": SOURCE,
            "source_id": f"{item.subset}/test/{item.index}",
            "source_path": f"{source_path(item.parquet, options.src)}#row={item.index}",
            "audio_name": (cell or {}).get("path") if isinstance(cell, dict) else None,
            "converter_version": CONVERTER_VERSION,
        },
    )


def decode_cell(cell, folder: Path, writer: CorpusWriter, label: str):
    """An Audio-feature cell: ``{bytes, path}`` (encoded file) or ``{array, sampling_rate}`` (decoded)."""
    if not isinstance(cell, dict):
        raise ConvertError(f"{label}: audio cell is {type(cell).__name__}, "
                           f"expected {{bytes, path}} or {{array, sampling_rate}}")
    if cell.get("bytes"):
        return writer.read_audio(bytes(cell["bytes"]), label)
    if cell.get("array") is not None:
        if not cell.get("sampling_rate"):
            raise ConvertError(f"{label}: audio has an array but no sampling_rate")
        return writer.check_samples(cell["array"], int(cell["sampling_rate"]), label)
    if cell.get("path"):
        return writer.read_audio(folder / cell["path"], f"{label} ({folder / cell['path']})")
    raise ConvertError(f"{label}: audio cell has no bytes, array or path")
