"""Converters from the published TickTock-Bench sources (local copies only) into session manifests.

One module per source; each reads a local copy in its published layout and never downloads anything:

==========================  =====================================================  =========================
source                      local copy (``--src``)                                 task types
==========================  =====================================================  =========================
``openaudiobench``          the OpenAudioBench repo (or its ``eval_datas/``)       llama_questions,
                                                                                   web_questions, trivia_qa
``voicebench_alpacaeval``   a VoiceBench parquet file, or a folder of them         alpaca_eval
``big_bench_audio``         the Big Bench Audio repo (``metadata.jsonl``, data/)   big_bench_audio
``fdb_v1``                  Full-Duplex-Bench v1.0 (``candor_pause_handling/``...)  fdb_v1
``fdb_v1_5``                Full-Duplex-Bench v1.5 (``user_interruption/``...)      fdb_v1_5
``fdb_v3``                  ``fdb_v3_data_released/`` (or the folder above it)     fdb_v3
==========================  =====================================================  =========================

Output: ``OUT/manifest.jsonl`` (format v1, :mod:`ticktock.manifest`) and ``OUT/audio/<session_id>.flac``
(16 kHz mono). Command line: ``python -m ticktock.corpus.convert SOURCE --src PATH --out DIR [--limit N]``.

Example::

    >>> result = convert("big_bench_audio", "downloads/big_bench_audio", "data/tickbench/big_bench_audio",
    ...                  limit=5)                                                    # doctest: +SKIP
    >>> len(result.sessions), dict(result.warnings)                                  # doctest: +SKIP
    (5, {})
"""

from __future__ import annotations

import importlib
import re
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

SOURCES = ("openaudiobench", "voicebench_alpacaeval", "big_bench_audio", "fdb_v1", "fdb_v1_5", "fdb_v3")
CONVERTER_VERSION = "1"


class ConvertError(ValueError):
    """A source file is missing, unreadable or not in the published layout; the message names the file."""


@dataclass(frozen=True)
class Options:
    """What every source module gets. ``limit`` caps the items per subset (or in total, without subsets);
    ``columns`` overrides metadata field names (role -> name, see each module's ``COLUMNS``)."""

    src: Path
    limit: int | None = None
    subsets: tuple[str, ...] | None = None
    lead_s: float = 1.0
    tail_unknown_s: float = 8.0
    columns: dict = field(default_factory=dict)


@dataclass
class Conversion:
    sessions: list
    warnings: Counter
    manifest: Path


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
            columns: dict | None = None, warn: Callable[[str], None] | None = None) -> Conversion:
    """Convert the local copy ``src`` of ``source`` into ``out``; all or nothing (see ``writer``).

    Metadata is read and checked for every item before any audio is decoded. Problems that do not stop
    the conversion (clipped or silent audio, ...) go to ``warn`` (default: stderr) and are counted.
    """
    from ticktock.corpus.convert.writer import CorpusWriter

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
    options = Options(src, limit, tuple(subsets) if subsets else None, lead_s, tail_unknown_s, dict(columns or {}))
    items = module.read_items(options)
    if not items:
        raise ConvertError(f"{src}: no {source} items found")
    writer = CorpusWriter(Path(out), warn or (lambda line: print(line, file=sys.stderr)))
    try:
        sessions = [module.build_session(item, writer, options) for item in items]
        manifest = writer.commit(sessions)
    except BaseException:
        writer.discard()
        raise
    return Conversion(sessions, writer.warnings, manifest)
