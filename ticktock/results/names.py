"""Names that become file names: one character set for session ids, task names and judge names.

A session id names its audio file (``audio/<id>.flac`` in a converted corpus or an unpacked dataset), its result
parts and its case-study figure; a judge name names ``judgements/<name>.parquet``. Such names come from data (a
manifest line, a dataset row, a source corpus's folder names) or from options, so they are checked where they are
read, and every path is built from the checked name (``named_path``), never from raw text: a name of
``../../x`` or ``/etc/x`` could otherwise make a run write outside its folder.

The character set (``NAME_PATTERN``): 1 to ``MAX_NAME_LENGTH`` (128) characters, ASCII letters, digits, ``.``,
``_`` and ``-``, the first a letter or digit. So a name has no path separator, is never ``.``, ``..`` or a hidden
file, never looks like an option (``-x``), holds no NUL, space or control character, and spells the same on every
file system. Every id the project makes fits: the corpus's ``fdb_v3-eval-0-0008``, the converters'
``fdb_v3-<safe_id(folder)>``, augmentation's ``<id>-aug2``.

Example::

    >>> checked_name("fdb_v3-eval-0-0008", "session_id", "m.jsonl:3")
    'fdb_v3-eval-0-0008'
    >>> checked_name("../../etc/passwd", "session_id", "m.jsonl:3")
    Traceback (most recent call last):
    ...
    ticktock.errors.InputDataError: m.jsonl:3: field 'session_id': '../../etc/passwd' is not a name: it names files, ...; starts with '.'
    >>> named_path(Path("audio"), "s-1", ".flac", "session_id", "m.jsonl:3").as_posix()
    'audio/s-1.flac'
"""

from __future__ import annotations

import re
from pathlib import Path

from ticktock.errors import InputDataError, TickTockError, shown

MAX_NAME_LENGTH = 128
NAME_PATTERN = rf"[A-Za-z0-9][A-Za-z0-9._-]{{0,{MAX_NAME_LENGTH - 1}}}"
_NAME = re.compile(NAME_PATTERN)
RULE = (f"names files, so it must be 1 to {MAX_NAME_LENGTH} ASCII letters, digits, '.', '_' or '-', the first a "
        "letter or digit")


def name_problem(text) -> str | None:
    """What keeps ``text`` from being a name (``NAME_PATTERN``), in words; None when it is one.

    >>> name_problem("a.b_c-1"), name_problem(""), name_problem(".hidden"), name_problem("a b")
    (None, 'empty', "starts with '.'", "has ' ' at position 2")
    """
    if not isinstance(text, str):
        return f"expected a string, got {type(text).__name__}"
    if not text:
        return "empty"
    if _NAME.fullmatch(text):
        return None
    if not re.fullmatch(r"[A-Za-z0-9]", text[0]):
        return f"starts with {text[0]!r}"
    position = next((i for i, ch in enumerate(text) if not re.fullmatch(r"[A-Za-z0-9._-]", ch)), None)
    if position is not None:
        return f"has {text[position]!r} at position {position + 1}"
    return f"{len(text)} characters long"


def is_name(text) -> bool:
    """Whether ``text`` fits ``NAME_PATTERN``."""
    return name_problem(text) is None


def checked_name(text, what: str, where: str, error: type[TickTockError] = InputDataError) -> str:
    """``text`` when it is a name (``NAME_PATTERN``), else an ``error`` (the caller's class: ``ManifestError`` for a
    manifest line, ``DatasetError`` for a dataset row, a ``ConfigError`` for an option) of one line: ``<where>:
    field '<what>': <text> is not a name: it names files, ...; <the problem>``."""
    problem = name_problem(text)
    if problem is not None:
        raise error(f"{where}: field '{what}': {shown(text)} is not a name: it {RULE}; {problem}")
    return text


def named_path(folder: Path, name, suffix: str, what: str, where: str,
               error: type[TickTockError] = InputDataError) -> Path:
    """``folder / (name + suffix)`` for a checked ``name`` (``checked_name``); the path is confirmed to stay inside
    ``folder`` once resolved (a ``suffix`` holding a separator, or a link in the way, is an ``error`` too)."""
    path = Path(folder) / f"{checked_name(name, what, where, error)}{suffix}"
    return inside(Path(folder), path, what, where, error)


def inside(folder: Path, path: Path, what: str, where: str, error: type[TickTockError] = InputDataError) -> Path:
    """``path`` when, resolved, it lies inside ``folder`` (resolved), else an ``error`` naming ``where`` and
    ``what``; the path returned is the one given."""
    if not Path(path).resolve().is_relative_to(Path(folder).resolve()):
        raise error(f"{where}: field '{what}': the path it makes, {shown(str(path))}, leaves {folder}")
    return path
