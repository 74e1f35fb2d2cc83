"""The Full-Duplex-Bench folder layout shared by v1.0, v1.5 and v3: one folder per sample holding
``input.wav`` and JSON annotations whose times are ``[start_s, end_s]`` pairs.

The v1.0 and v1.5 downloads put their subset folders side by side in one folder (``candor_pause_handling/``
next to ``user_interruption/``); a copy may also keep them under ``v1_0/`` / ``v1_5/``. Some official
inference scripts and archive tools double a subset folder (``icc_backchannel/icc_backchannel/{ID}``):
:func:`subset_folder` finds a subset in any of these places.

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

import math
import re
from pathlib import Path
from typing import Any, Sequence

from ticktock.corpus.convert import ConvertError, Options, parse_json


def unnested(folder: Path) -> Path:
    """``folder``, or ``folder/<its own name>`` when an archive or a script doubled it (``X/X/{ID}``)."""
    inner = folder / folder.name
    return inner if inner.is_dir() else folder


def subset_folder(src: Path, subset: str, version_folders: Sequence[str] = ()) -> Path | None:
    """The folder holding ``subset``'s sample folders: ``src/<subset>``, or ``src/<v>/<subset>`` for a ``v``
    in ``version_folders``, with a doubled ``<subset>/<subset>`` followed; None when there is none.

    Example (``downloads/fdb`` holding ``icc_backchannel/icc_backchannel/1/input.wav``)::

        >>> subset_folder(Path("downloads/fdb"), "icc_backchannel", ("v1_0",))     # doctest: +SKIP
        PosixPath('downloads/fdb/icc_backchannel/icc_backchannel')
    """
    for parent in (src, *(src / name for name in version_folders)):
        if (parent / subset).is_dir():
            return unnested(parent / subset)
    return None


def subset_folders(options: Options, known, version_folders) -> dict[str, Path]:
    """subset -> the folder of its samples, for ``--subsets`` (default: every subset that is there)."""
    if options.subsets:
        unknown = [s for s in options.subsets if s not in known]
        if unknown:
            raise ConvertError(f"--subsets: unknown subset(s) {unknown}; choose from {', '.join(known)}")
        found = {s: subset_folder(options.src, s, version_folders) for s in options.subsets}
        missing = next((s for s, folder in found.items() if folder is None), None)
        if missing:
            raise ConvertError(f"{options.src / missing}: subset folder not found")
        return found
    found = {s: subset_folder(options.src, s, version_folders) for s in known}
    present = {s: folder for s, folder in found.items() if folder is not None}
    if not present:
        raise ConvertError(f"{options.src}: none of the subset folders {', '.join(known)} is there "
                           f"(looked in it and in {', '.join(version_folders)}/)")
    return present


def sample_folders(folder: Path) -> list[Path]:
    """The sample folders of a subset folder, in numeric order when the names are numbers."""
    found = [p for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".")]
    return sorted(found, key=lambda p: (0, int(p.name), "") if p.name.isdigit() else (1, 0, p.name))


def require(path: Path) -> Path:
    if not path.is_file():
        raise ConvertError(f"{path}: required file not found")
    return path


def read_json(path: Path) -> Any:
    """The decoded JSON of ``path``; a missing or invalid file (or one nested deeper than ``MAX_JSON_DEPTH``) raises
    ConvertError naming it."""
    require(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise ConvertError(f"{path}: not valid JSON ({err})") from None
    return parse_json(text, str(path))


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


def speech_until_gap(spans, max_gap_s: float) -> tuple[float, float] | None:
    """From the first speech (VAD spans) to the end of the speech before the first silence longer than
    ``max_gap_s``; None when there is no speech. FDB v3 ends the user's request this way (2 s), so the
    faint talk that some recordings carry in their long trailing room tone is not part of the request.

    >>> speech_until_gap([(0.5, 2.0), (3.0, 4.2), (9.0, 9.5)], 2.0)
    (0.5, 4.2)
    """
    if not spans:
        return None
    end = spans[0][1]
    for start, stop in spans[1:]:
        if start - end > max_gap_s:
            break
        end = max(end, stop)
    return round(spans[0][0], 3), round(end, 3)


def speaker_of(folder_name: str, example_id: str = "") -> str:
    """The speaker id of an FDB v3 folder ``{example_id}_{speaker_id}`` (released: 24 hex digits), or "".

    >>> speaker_of("ecommerce_09_65e8cf8f4c7424fa062e54a3", "ecommerce_09"), speaker_of("travel_02_spk7")
    ('65e8cf8f4c7424fa062e54a3', 'spk7')
    >>> speaker_of("ecommerce_09", "ecommerce_09"), speaker_of("ecommerce_09")
    ('', '')
    """
    if example_id and folder_name.startswith(f"{example_id}_"):
        return folder_name[len(example_id) + 1 :]
    match = re.search(r"_([^_]*[A-Za-z][^_]*)$", folder_name)
    return match.group(1) if match and folder_name != example_id else ""


def example_of(folder_name: str) -> str:
    """The example id of an FDB v3 folder ``{example_id}_{speaker_id}``: the name without its speaker.

    >>> example_of("housing_21_66c4f3cb14cbfc4db836bd4e"), example_of("housing_21")
    ('housing_21', 'housing_21')
    """
    speaker = speaker_of(folder_name)
    return folder_name[: -len(speaker) - 1] if speaker else folder_name
