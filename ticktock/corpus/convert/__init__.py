"""Converters from the published TickTock-Bench sources (local copies only) into session manifests.

One module per source; each reads a local copy in its published layout and never downloads anything:

==========================  =====================================================  =========================
source                      local copy (``--src``)                                 task types
==========================  =====================================================  =========================
``openaudiobench``          the OpenAudioBench repo (or its ``eval_datas/``)       llama_questions,
                                                                                   web_questions, trivia_qa
``voicebench_alpacaeval``   a VoiceBench parquet file, or a folder of them         alpaca_eval
``big_bench_audio``         the Big Bench Audio repo (``metadata.jsonl``, data/)   big_bench_audio
``fdb_v1``                  the FDB v1.0/v1.5 download (subsets side by side)      fdb_v1
``fdb_v1_5``                the FDB v1.0/v1.5 download (subsets side by side)      fdb_v1_5
``fdb_v3``                  ``fdb_v3_data_released/`` (or the folder above it)     fdb_v3
==========================  =====================================================  =========================

Output: ``OUT/manifest.jsonl`` (format v1, :mod:`ticktock.sessions.manifest`) and ``OUT/audio/<session_id>.flac``
(16 kHz mono). Command line: ``python -m ticktock.corpus.convert SOURCE --src PATH --out DIR [--limit N]``.
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
import re
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Sequence

if TYPE_CHECKING:
    from ticktock.corpus.convert.selection import Selection

SOURCES = ("openaudiobench", "voicebench_alpacaeval", "big_bench_audio", "fdb_v1", "fdb_v1_5", "fdb_v3")
CONVERTER_VERSION = "1"


class ConvertError(ValueError):
    """A source file is missing, unreadable or not in the published layout; the message names the file."""


@dataclass(frozen=True)
class Options:
    """What every source module gets. ``limit`` caps the items per subset (or in total, without subsets);
    ``columns`` overrides metadata field names (role -> name, see each module's ``COLUMNS``);
    ``backchannel_gt`` is the FDB v1 backchannel ground truth (``icc_gt_distribution.json``; None: looked
    for next to the source)."""

    src: Path
    limit: int | None = None
    subsets: tuple[str, ...] | None = None
    lead_s: float = 1.0
    tail_unknown_s: float = 8.0
    columns: dict = field(default_factory=dict)
    backchannel_gt: Path | None = None


@dataclass
class Conversion:
    """The sessions of a conversion, its warnings by kind, and the manifest written (None for a check)."""

    sessions: list
    warnings: Counter
    manifest: Path | None


def safe_id(text: str) -> str:
    """A session-id-safe spelling: ``safe_id("a b/c") == "a_b_c"``."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", str(text)).strip("_") or "x"


def source_path(path: Path, root: Path) -> str:
    """``path`` relative to the source root when inside it (portable provenance), else as given."""
    try:
        return Path(path).resolve().relative_to(Path(root).resolve()).as_posix()
    except ValueError:
        return Path(path).as_posix()


def source_module(source: str):
    if source not in SOURCES:
        raise ConvertError(f"unknown source {source!r}; choose from {', '.join(SOURCES)}")
    return importlib.import_module(f"ticktock.corpus.convert.{source}")


def convert(source: str, src: str | Path, out: str | Path, *, limit: int | None = None,
            subsets: Sequence[str] | None = None, lead_s: float = 1.0, tail_unknown_s: float = 8.0,
            columns: dict | None = None, backchannel_gt: str | Path | None = None,
            selection: Selection | None = None, warn: Callable[[str], None] | None = None) -> Conversion:
    """Convert the local copy ``src`` of ``source`` into ``out``; all or nothing (see ``writer``).

    Metadata is read and checked for every item before any audio is decoded. Problems that do not stop
    the conversion (clipped or silent audio, ...) go to ``warn`` (default: stderr) and are counted.
    ``selection`` (a :class:`~ticktock.corpus.convert.selection.Selection`) keeps only some sessions.
    """
    from ticktock.corpus.convert.writer import CorpusWriter

    module, options = prepare(source, src, limit, subsets, lead_s, tail_unknown_s, columns, backchannel_gt)
    writer = CorpusWriter(Path(out), warn or _stderr)
    try:
        sessions = [module.build_session(item, writer, options) for item in chosen_items(module, options, selection,
                                                                                         writer)]
        manifest = writer.commit(sessions)
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


def prepare(source: str, src, limit, subsets, lead_s, tail_unknown_s, columns, backchannel_gt):
    """The source module and checked options of a conversion."""
    module = source_module(source)
    if limit is not None and limit < 1:
        raise ConvertError(f"--limit must be >= 1, got {limit}")
    if lead_s < 0 or tail_unknown_s <= 0:
        raise ConvertError(f"lead must be >= 0 and tail > 0 seconds, got {lead_s} and {tail_unknown_s}")
    roles = getattr(module, "COLUMNS", {})
    unknown = sorted(set(columns or {}) - set(roles))
    if unknown:
        raise ConvertError(f"--column: {source} has no field role {', '.join(unknown)} "
                           f"(roles: {', '.join(roles) or 'none'})")
    src = Path(src)
    if not src.exists():
        raise ConvertError(f"{src}: source folder or file not found")
    if backchannel_gt is not None and not Path(backchannel_gt).is_file():
        raise ConvertError(f"{backchannel_gt}: backchannel ground truth file not found")
    return module, Options(src, limit, tuple(subsets) if subsets else None, lead_s, tail_unknown_s,
                           dict(columns or {}), Path(backchannel_gt) if backchannel_gt is not None else None)


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
