"""The Full-Duplex-Bench folder layout shared by v1.0, v1.5 and v3: one folder per sample holding
``input.wav`` and JSON annotations whose times are ``[start_s, end_s]`` pairs.

Every reader here raises :class:`~ticktock.corpus.convert.ConvertError` naming the file it could not use.

Example::

    >>> span([1.5, 2.25], "pause.json")
    (1.5, 2.25)
    >>> span([3, 1], "pause.json")
    Traceback (most recent call last):
    ...
    ticktock.corpus.convert.ConvertError: pause.json: timestamp [3, 1] is not [start_s, end_s] with start <= end
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from ticktock.corpus.convert import ConvertError


def sample_folders(folder: Path) -> list[Path]:
    """The sample folders of a subset folder, in numeric order when the names are numbers."""
    found = [p for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".")]
    return sorted(found, key=lambda p: (0, int(p.name), "") if p.name.isdigit() else (1, 0, p.name))


def require(path: Path) -> Path:
    if not path.is_file():
        raise ConvertError(f"{path}: required file not found")
    return path


def read_json(path: Path) -> Any:
    """The decoded JSON of ``path``; a missing or invalid file raises ConvertError naming it."""
    require(path)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ConvertError(f"{path}: not valid JSON ({err})") from None


def span(value: Any, where: str) -> tuple[float, float]:
    """A ``[start_s, end_s]`` pair as floats, checked."""
    try:
        start, end = (float(v) for v in value)
    except (TypeError, ValueError):
        raise ConvertError(f"{where}: timestamp {value!r:.60} is not [start_s, end_s]") from None
    if not (math.isfinite(start) and math.isfinite(end)) or start < 0 or end < start:
        raise ConvertError(f"{where}: timestamp {value!r:.60} is not [start_s, end_s] with start <= end")
    return start, end


def clamp_span(start: float, end: float, duration: float, writer, where: str) -> tuple[float, float]:
    """``(start, end)`` inside [0, duration]; a warning when the source time runs past the audio."""
    if end > duration + 0.05:
        writer.warn("timing", f"{where}: time {end:.3f} s is after the end of the audio ({duration:.3f} s)")
    end = min(end, duration)
    return round(min(start, end), 3), round(end, 3)


def speech_before(spans, time_s: float) -> tuple[float, float] | None:
    """First to last speech (VAD spans) before ``time_s``, or None when there is none.

    >>> speech_before([(0.2, 1.0), (1.5, 3.0), (5.0, 6.0)], 2.0)
    (0.2, 2.0)
    """
    before = [(a, min(b, time_s)) for a, b in spans if a < time_s]
    return (round(before[0][0], 3), round(before[-1][1], 3)) if before else None


def speaker_of(text: str) -> str:
    """The speaker id at the end of an FDB v3 folder name ``{example_id}_{speaker_id}``, or ""."""
    match = re.search(r"_([^_]+)$", text)
    return match.group(1) if match else ""
