"""Converters from the published TickTock-Bench sources into session manifests.

One module per source. The three sources published on the Hugging Face Hub take a Hub id (``hub.HUB_IDS``) or a
local copy for ``--src`` and are read through the Hub libraries and their cache (:mod:`ticktock.corpus.convert.hub`:
offline, a cached copy is used, and a missing one is a one-line error naming the command that fetches it); the
Full-Duplex-Bench sources (Google Drive zips) are read from the folder of their download:

==========================  =====================================================  =========================
source                      ``--src``                                              task types
==========================  =====================================================  =========================
``openaudiobench``          ``baichuan-inc/OpenAudioBench``, or the repo folder    llama_questions,
                            (or its ``eval_datas/``)                               web_questions, trivia_qa
``voicebench_alpacaeval``   ``hlt-lab/voicebench``, or a parquet file or folder    alpaca_eval
``big_bench_audio``         ``ArtificialAnalysis/big_bench_audio``, or the repo    big_bench_audio
                            folder (``metadata.jsonl``, data/)
``fdb_v1``                  the FDB v1.0/v1.5 download (subsets side by side)      fdb_v1
``fdb_v1_5``                the FDB v1.0/v1.5 download (subsets side by side)      fdb_v1_5
``fdb_v3``                  ``fdb_v3_data_released/`` (or the folder above it)     fdb_v3
==========================  =====================================================  =========================

Output: ``OUT/manifest.jsonl`` (format v1, :mod:`ticktock.sessions.manifest`) and ``OUT/audio/<session_id>.flac``
(16 kHz mono), with ``OUT/made_by.json`` recording the conversion: an ``OUT`` that is the source, or that holds
another corpus, is refused before any work unless ``overwrite`` (``--overwrite``; never over the source), see
:mod:`ticktock.corpus.output_folder`. Command line: ``python -m ticktock.corpus.convert SOURCE --src PATH --out DIR
[--limit N]``. Metadata files are JSON nested at most ``MAX_JSON_DEPTH`` levels deep (the published ones: 5).
``check`` (``--check``) reads and analyses a copy the same way but writes nothing. A selection
(:mod:`ticktock.corpus.convert.selection`: N sessions per task type, seeded, or a list of ids) picks the
sessions after the metadata is read, before any audio is decoded.

Example::

    >>> result = convert("big_bench_audio", "downloads/big_bench_audio", "data/tickbench/big_bench_audio",
    ...                  limit=5)                                                    # doctest: +SKIP
    >>> len(result.sessions), dict(result.warnings)                                  # doctest: +SKIP
    (5, {})
    >>> check("fdb_v3", "downloads/fdb_v3_data_released").warnings                  # doctest: +SKIP
    Counter({'request_end': 7, 'multi_entry_dialogue': 3})
"""

from __future__ import annotations

import importlib
import json
import math
import re
import sys
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

from ticktock.errors import ConfigError, InputDataError

if TYPE_CHECKING:
    from ticktock.corpus.convert.selection import Selection
    from ticktock.corpus.output_folder import MadeBy

SOURCES = ("openaudiobench", "voicebench_alpacaeval", "big_bench_audio", "fdb_v1", "fdb_v1_5", "fdb_v3")
CONVERTER_VERSION = "1"
LEAD_S_RANGE = (0.0, 60.0)  # --lead-s: silence before a single-utterance question
TAIL_S_RANGE = (0.0, 600.0)  # --tail-s: room for the reply (above the lower end)
MAX_LIMIT = 10_000_000
MAX_JSON_DEPTH = 64  # nesting of a metadata file; deeper is refused (it would overflow Python's stack later)


class ConvertError(InputDataError, ValueError):
    """A source file is missing, unreadable or not in the published layout; the message names the file (exit 3)."""


class ConvertOptionError(ConfigError):
    """The converter's options cannot work together (exit 2); the message names the option."""


@dataclass(frozen=True)
class Options:
    """What every source module gets. ``limit`` caps the items per subset (or in total, without subsets);
    ``columns`` overrides metadata field names (role -> name, see each module's ``COLUMNS``);
    ``backchannel_gt`` is the FDB v1 backchannel ground truth (``icc_gt_distribution.json``; None: looked
    for next to the source); ``hub_id``: the Hub dataset ``src`` stands for (``ticktock.corpus.convert.hub``)."""

    src: Path
    limit: int | None = None
    subsets: tuple[str, ...] | None = None
    lead_s: float = 1.0
    tail_unknown_s: float = 8.0
    columns: dict = field(default_factory=dict)
    backchannel_gt: Path | None = None
    hub_id: str | None = None  # ``src`` was this Hub id (``src``: its snapshot folder; ``hub.py``)


@dataclass
class Conversion:
    """The sessions of a conversion, its warnings by kind, and the manifest written (None for a check)."""

    sessions: list
    warnings: Counter
    manifest: Path | None


SAFE_ID_LENGTH = 96  # a converter's id is "<task>-[<subset>-]<safe_id>": within the 128 characters of a name


def safe_id(text: str) -> str:
    """A session-id-safe spelling of a source's name: runs of characters outside the name set of
    ``ticktock.results.names`` (letters, digits, ``.``, ``_``, ``-``) become ``_``, leading and trailing ``_`` go, and
    the result is cut to ``SAFE_ID_LENGTH`` characters (two names alike in their first 96 characters are two
    sessions of the same id: the writer refuses that in one line). It never holds a ``/``, so
    ``<task>-<safe_id>`` is a name; the writer checks every id it writes all the same.

    >>> safe_id("a b/c"), safe_id("../../etc/passwd"), safe_id("caf\u00e9 \u00fcber"), len(safe_id("x" * 500))
    ('a_b_c', '.._.._etc_passwd', 'caf_ber', 96)
    """
    spelled = re.sub(r"[^A-Za-z0-9_.-]+", "_", str(text)).strip("_")[:SAFE_ID_LENGTH]
    return spelled or "x"


def source_path(path: Path, root: Path) -> str:
    """``path`` relative to the source root when inside it (portable provenance), else as given."""
    try:
        return Path(path).resolve().relative_to(Path(root).resolve()).as_posix()
    except ValueError:
        return Path(path).as_posix()


def nesting_depth(value: Any) -> int:
    """How deeply lists, tuples and objects nest in decoded JSON (or a Python literal), counted without recursion.

    >>> nesting_depth("a"), nesting_depth([1, {"b": [2]}]), nesting_depth({"a": (), "b": {}})
    (0, 3, 2)
    """
    deepest, pending = 0, [(value, 0)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, (list, tuple, dict)):
            deepest = max(deepest, depth + 1)
            pending.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return deepest


def parse_json(text: str, where: str) -> Any:
    """Decoded JSON of a metadata file or line, refused (ConvertError naming ``where``) when it is not valid JSON
    or nests deeper than ``MAX_JSON_DEPTH``.

    >>> parse_json('{"id": 1}', "metadata.json")
    {'id': 1}
    >>> parse_json("[" * 100000 + "]" * 100000, "metadata.json")
    Traceback (most recent call last):
    ...
    ticktock.corpus.convert.ConvertError: metadata.json: not valid JSON (nested deeper than 64 levels)
    """
    deep = ConvertError(f"{where}: not valid JSON (nested deeper than {MAX_JSON_DEPTH} levels)")
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise ConvertError(f"{where}: not valid JSON ({err.msg} at line {err.lineno} column {err.colno})") from None
    except RecursionError:
        raise deep from None
    if nesting_depth(value) > MAX_JSON_DEPTH:
        raise deep
    return value


def source_module(source: str):
    if source not in SOURCES:
        raise ConvertError(f"unknown source {source!r}; choose from {', '.join(SOURCES)}")
    return importlib.import_module(f"ticktock.corpus.convert.{source}")


def convert(source: str, src: str | Path, out: str | Path, *, limit: int | None = None,
            subsets: Sequence[str] | None = None, lead_s: float = 1.0, tail_unknown_s: float = 8.0,
            columns: dict | None = None, backchannel_gt: str | Path | None = None,
            selection: Selection | None = None, warn: Callable[[str], None] | None = None,
            overwrite: bool = False) -> Conversion:
    """Convert the local copy ``src`` of ``source`` into ``out``; all or nothing (see ``writer``).

    Metadata is read and checked for every item before any audio is decoded. Problems that do not stop
    the conversion (clipped or silent audio, ...) go to ``warn`` (default: stderr) and are counted.
    ``selection`` (a :class:`~ticktock.corpus.convert.selection.Selection`) keeps only some sessions.
    ``out`` must not be ``src`` nor hold another corpus unless ``overwrite`` (``output_folder.claim_output``).
    """
    from ticktock.corpus.convert.writer import CorpusWriter
    from ticktock.corpus.output_folder import claim_output

    module, options = prepare(source, src, limit, subsets, lead_s, tail_unknown_s, columns, backchannel_gt)
    record = made_by(source, options, selection)
    claim_output(Path(out), record, {"--src": options.src}, overwrite)
    writer = CorpusWriter(Path(out), warn or _stderr)
    try:
        sessions = [module.build_session(item, writer, options) for item in chosen_items(module, options, selection,
                                                                                         writer)]
        manifest = writer.commit(sessions, record)
    except BaseException:
        writer.discard()
        raise
    return Conversion(sessions, writer.warnings, manifest)


def check(source: str, src: str | Path, *, limit: int | None = None, subsets: Sequence[str] | None = None,
          lead_s: float = 1.0, tail_unknown_s: float = 8.0, columns: dict | None = None,
          backchannel_gt: str | Path | None = None, selection: Selection | None = None,
          warn: Callable[[str], None] | None = None) -> Conversion:
    """Everything ``convert`` does (read, decode, analyse, warn) except writing: what a copy holds."""
    from ticktock.corpus.convert.writer import CorpusWriter

    module, options = prepare(source, src, limit, subsets, lead_s, tail_unknown_s, columns, backchannel_gt)
    writer = CorpusWriter(None, warn or _stderr)
    sessions = [module.build_session(item, writer, options) for item in chosen_items(module, options, selection, writer)]
    return Conversion(sessions, writer.warnings, None)


def _stderr(line: str) -> None:
    print(line, file=sys.stderr)


def made_by(source: str, options: Options, selection) -> MadeBy:
    """The record of a conversion (``OUT/made_by.json``): the source, its resolved path and every option."""
    from ticktock.corpus.output_folder import MadeBy

    gt = options.backchannel_gt
    return MadeBy("convert", {"source": source, "--src": options.hub_id or str(options.src.resolve()),
                              "--limit": options.limit,
                              "--subsets": list(options.subsets) if options.subsets else None,
                              "--lead-s": options.lead_s, "--tail-s": options.tail_unknown_s, "--column": options.columns,
                              "--backchannel-gt": str(gt.resolve()) if gt is not None else None,
                              "--selection": asdict(selection) if selection is not None else None,
                              "converter": CONVERTER_VERSION})


def prepare(source: str, src, limit, subsets, lead_s, tail_unknown_s, columns, backchannel_gt):
    """The source module and checked options of a conversion."""
    module = source_module(source)
    if limit is not None and not 1 <= limit <= MAX_LIMIT:
        raise ConvertError(f"--limit must be a whole number from 1 to {MAX_LIMIT}, got {limit}")
    if not (math.isfinite(lead_s) and LEAD_S_RANGE[0] <= lead_s <= LEAD_S_RANGE[1]):
        raise ConvertError(f"--lead-s must be a finite number from {LEAD_S_RANGE[0]:g} to {LEAD_S_RANGE[1]:g} seconds, "
                           f"got {lead_s}")
    if not (math.isfinite(tail_unknown_s) and TAIL_S_RANGE[0] < tail_unknown_s <= TAIL_S_RANGE[1]):
        raise ConvertError(f"--tail-s must be a finite number > {TAIL_S_RANGE[0]:g} and <= {TAIL_S_RANGE[1]:g} seconds, "
                           f"got {tail_unknown_s}")
    roles = getattr(module, "COLUMNS", {})
    unknown = sorted(set(columns or {}) - set(roles))
    if unknown:
        raise ConvertError(f"--column: {source} has no field role {', '.join(unknown)} "
                           f"(roles: {', '.join(roles) or 'none'})")
    src, hub_id = source_location(module, source, src, subsets)
    if backchannel_gt is not None and not Path(backchannel_gt).is_file():
        raise ConvertError(f"{backchannel_gt}: backchannel ground truth file not found")
    return module, Options(src, limit, tuple(subsets) if subsets else None, lead_s, tail_unknown_s,
                           dict(columns or {}), Path(backchannel_gt) if backchannel_gt is not None else None, hub_id)


def source_location(module, source: str, src, subsets) -> tuple[Path, str | None]:
    """Where a conversion reads: ``(folder or file, None)`` for a local copy; for a Hub id of a source published on
    the Hub (its module's ``HUB_ID``), ``(the snapshot folder, hub id)``, fetched or found in the Hub cache
    (``hub.snapshot``, the files of ``module.hub_patterns(subsets)``), or ``(Path(hub id), hub id)`` for a module
    that reads the Hub with ``datasets`` itself (no ``hub_patterns``)."""
    from ticktock.corpus.convert import hub
    from ticktock.sessions.hub import is_hub_id

    if not is_hub_id(src):
        if not Path(src).exists():
            raise ConvertError(f"{src}: source folder or file not found")
        return Path(src), None
    if not hasattr(module, "HUB_ID"):
        raise ConvertError(f"{src}: source folder or file not found ({source} is not on the Hugging Face Hub: --src "
                           "is the folder of its download)")
    if not hasattr(module, "hub_patterns"):
        return Path(src), str(src)
    return hub.snapshot(source, str(src), module.hub_patterns(subsets)), str(src)


def chosen_items(module, options: Options, selection, writer) -> list:
    """The source's items, only those ``selection`` keeps (every one without a selection)."""
    from ticktock.corpus.convert.selection import missing_ids, select

    items = module.read_items(options)
    if not items:
        raise ConvertError(f"{options.src}: no {module.__name__.rsplit('.', 1)[-1]} items found")
    if selection is None:
        return items
    keys = [module.session_key(item) for item in items]
    for sid in missing_ids(keys, selection):
        writer.warn("selection", f"selection {selection.name}: session {sid} is not in {options.src}")
    return [items[i] for i in select(keys, selection)]
