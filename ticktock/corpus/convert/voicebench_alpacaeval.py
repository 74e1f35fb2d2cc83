"""VoiceBench AlpacaEval (hlt-lab/voicebench, config ``alpacaeval``): spoken open-ended instructions.

The dataset has one config per subset (``alpacaeval``, ``alpacaeval_full``, ...; ``--subsets``, default
``alpacaeval``), each a ``test`` split with the columns ``audio`` (the Hugging Face ``Audio`` feature) and ``prompt``
(the instruction text). ``--src`` is the Hub id ``hlt-lab/voicebench`` (``datasets.load_dataset(id, config)``: the
datasets cache, used offline when it holds the config), or a local copy in the published layout: one parquet file,
a folder of them, or the dataset folder holding ``<config>/`` folders (``load_dataset("parquet", ...)``). Either
way the rows come from ``datasets``; the audio column is read with ``Audio(decode=False)`` and its bytes decoded by
soundfile (a copy whose cells are already decoded, ``{array, sampling_rate}``, is accepted too).

There is no reference reply, so every session gets the fixed reply room (``tail_unknown_s``, 8 s) and no
script. Task ``alpaca_eval``, id ``<config>-<row>`` (rows counted over the config's files in name order).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ticktock.corpus.convert import CONVERTER_VERSION, ConvertError, Options
from ticktock.corpus.convert.hub import HUB_IDS, load_split
from ticktock.corpus.convert.utterance import utterance_session
from ticktock.corpus.convert.writer import CorpusWriter
from ticktock.sessions.hub import quiet
from ticktock.sessions.manifest import Session

SOURCE = "voicebench"
HUB_ID = HUB_IDS["voicebench_alpacaeval"]
TASK = "alpaca_eval"
DEFAULT_SUBSET = "alpacaeval"
SPLIT = "test"
COLUMNS = {"audio": "audio", "text": "prompt"}


@dataclass(frozen=True)
class Item:
    subset: str
    index: int
    prompt: str
    where: str  # the config's rows in messages: "hlt-lab/voicebench alpacaeval/test", or the local file or folder


def parquet_files(src: Path, subset: str) -> list[Path]:
    """The parquet files of a local copy's config: ``src`` itself, ``src/<subset>/``, ``src/`` or ``src/data/``."""
    if src.is_file():
        return [src]
    folder = src / subset if (src / subset).is_dir() else src
    files = sorted(folder.glob("*.parquet")) or sorted((folder / "data").glob("*.parquet"))
    if not files:
        raise ConvertError(f"{folder}: no parquet files (expected {subset}/test-*.parquet or a .parquet --src)")
    return files


@lru_cache(maxsize=4)
def config_rows(src: str, hub_id: str | None, subset: str):
    """``(the config's test split as a datasets.Dataset, how messages name it)``; read once per conversion."""
    if hub_id:
        return load_split("voicebench_alpacaeval", hub_id, subset), f"{hub_id} {subset}/{SPLIT}"
    files = parquet_files(Path(src), subset)
    where = str(files[0]) if len(files) == 1 else str(files[0].parent)
    return load_local(files, where), where


def load_local(files: list[Path], where: str):
    """The rows of local parquet files through ``datasets``' parquet builder (its cache)."""
    import datasets
    import pyarrow

    try:
        with quiet():
            return datasets.load_dataset("parquet", data_files={SPLIT: [str(f) for f in files]}, split=SPLIT)
    except (datasets.exceptions.DatasetGenerationError, pyarrow.ArrowException, OSError) as err:
        cause = err.__cause__ or err
        raise ConvertError(f"{where}: cannot read parquet ({type(cause).__name__}: {str(cause).splitlines()[0]})") \
            from None


def audio_rows(dataset, column: str):
    """The audio column alone, an ``Audio`` feature read undecoded (``{bytes, path}``: no torchcodec needed)."""
    from datasets import Audio

    dataset = dataset.select_columns([column])
    if isinstance(dataset.features[column], Audio):
        dataset = dataset.cast_column(column, Audio(decode=False))
    return dataset


def read_items(options: Options) -> list[Item]:
    columns = {**COLUMNS, **options.columns}
    config_rows.cache_clear()  # a new conversion: read the copy afresh
    items: list[Item] = []
    for subset in options.subsets or (DEFAULT_SUBSET,):
        dataset, where = config_rows(str(options.src), options.hub_id, subset)
        missing = [c for c in columns.values() if c not in dataset.column_names]
        if missing:
            raise ConvertError(f"{where}: missing column(s) {', '.join(missing)} "
                               f"(the file has {', '.join(dataset.column_names)})")
        for index, prompt in enumerate(dataset.select_columns([columns["text"]])[columns["text"]]):
            if options.limit is not None and index >= options.limit:
                break
            if not isinstance(prompt, str) or not prompt.strip():
                raise ConvertError(f"{where} row {index}: empty {columns['text']!r}")
            items.append(Item(subset, index, prompt.strip(), where))
    return items


def session_key(item: Item) -> tuple[str, str]:
    """(task type, session id) of the session an item becomes."""
    return TASK, f"{item.subset}-{item.index:04d}"


def build_session(item: Item, writer: CorpusWriter, options: Options) -> Session:
    column = {**COLUMNS, **options.columns}["audio"]
    label = f"{item.where} row {item.index}"
    dataset, _ = config_rows(str(options.src), options.hub_id, item.subset)
    cell = audio_rows(dataset, column)[item.index][column]
    clip = decode_cell(cell, writer, label)
    provenance = {
        "source": SOURCE,
        "source_id": f"{item.subset}/{SPLIT}/{item.index}",
        "source_path": f"{item.subset}/{SPLIT}#row={item.index}",
        "audio_name": (cell or {}).get("path") if isinstance(cell, dict) else None,
        "converter_version": CONVERTER_VERSION,
    }
    if options.hub_id:
        provenance["hub_id"] = options.hub_id
    return utterance_session(
        writer, clip, label,
        session_id=session_key(item)[1],
        task=TASK,
        text=item.prompt,
        lead_s=options.lead_s,
        tail_unknown_s=options.tail_unknown_s,
        behaviour={"type": "instruction_following"},
        provenance=provenance,
    )


def decode_cell(cell, writer: CorpusWriter, label: str):
    """An audio cell: ``{bytes, path}`` (an encoded file, decoded by soundfile) or ``{array, sampling_rate}``."""
    if not isinstance(cell, dict):
        raise ConvertError(f"{label}: audio cell is {type(cell).__name__}, "
                           f"expected {{bytes, path}} or {{array, sampling_rate}}")
    if cell.get("bytes"):
        return writer.read_audio(bytes(cell["bytes"]), label)
    if cell.get("array") is not None:
        if not cell.get("sampling_rate"):
            raise ConvertError(f"{label}: audio has an array but no sampling_rate")
        return writer.check_samples(cell["array"], int(cell["sampling_rate"]), label)
    raise ConvertError(f"{label}: audio cell has no bytes or array (a path alone cannot be read: "
                       f"{cell.get('path')!r})")
