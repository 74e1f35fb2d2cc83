"""Sessions as dataset rows: the columns of TickTock-Bench in Hugging Face dataset form, one row per session.

Every field of a manifest line (:mod:`ticktock.sessions.manifest`) is a typed column, so the Hub's viewer, pandas or
SQL see turns, tool schemas, expected calls and reference replies as data:

====================  ==========================================================================================
column                type
====================  ==========================================================================================
``schema_version``    int64 (the manifest format, 1)
``session_id``        string
``task``              string
``audio``             ``Audio``: the bytes of the session's audio file, as the corpus stores it (16 kHz FLAC)
``audio_file``        string: the manifest's ``audio`` path, relative to the manifest
``duration_s``        float64; ``chunk_s`` float64; ``first_chunk_s`` float64 or null
``system_prompt``     string or null
``tools``             list of {``name``, ``description``: string, ``parameters``: JSON text, ``extra``}
``turns``             list of {``speaker``, ``role``, ``text``: string, ``start_s``, ``end_s``: float64,
                      ``expects_response``: bool, ``words``: list of {``text``, ``start_s``, ``end_s``}, ``extra``}
``expected``          {``reference_answer``: string, ``answer_aliases``: list of string, ``answers``: list of
                      {``turn``, ``reference_answer``, ``answer_aliases``, ``extra``}, ``tool_calls``: list of
                      {``function``: string, ``args``: JSON text, ``extra``}, ``script`` (the reference replies):
                      list of {``turn``: int64, ``action``, ``text``: string, ``at_s``: float64, ``call``,
                      ``tool_results``: JSON text, ``variants``: list of string, ``extra``}, ``behaviour``: JSON
                      text, ``extra``}
``provenance``        {``source``, ``source_id``, ``source_path``: string, ``extra``}
====================  ==========================================================================================

The manifest's ``expected``, ``provenance`` and tool schemas are free-form objects; the typed fields hold the keys
they name, when the value has their type, and ``extra`` (JSON text of an object, or null) holds everything else: other
keys, and values of another type (a null, a number where text is typed). Free JSON values (a tool's parameters, a
call's arguments, a behaviour) are JSON text. So a row gives back its manifest line exactly (``manifest_line``), and
a session replayed from a dataset has the same ``manifest_sha256`` as its manifest twin
(:mod:`ticktock.results.fingerprint`).

Example::

    >>> spec = {"reference_answer": TEXT, "answer_aliases": (LIST, TEXT), "behaviour": JSON}
    >>> expected = {"reference_answer": None, "answer_aliases": ["Paris"], "behaviour": {"type": "qa"}, "note": 3}
    >>> stored = encode_object(expected, spec)
    >>> stored["reference_answer"], stored["answer_aliases"], stored["behaviour"], stored["extra"]
    (None, ['Paris'], '{"type":"qa"}', '{"reference_answer":null,"note":3}')
    >>> decode_object(stored, spec) == expected
    True
"""

from __future__ import annotations

import json
from typing import Any

TEXT, REAL, WHOLE, FLAG, JSON, LIST = "text", "real", "whole", "flag", "json", "list"
EXTRA = "extra"
INT64 = (-(2**63), 2**63 - 1)

WORD = {"text": TEXT, "start_s": REAL, "end_s": REAL}
TURN = {"speaker": TEXT, "role": TEXT, "text": TEXT, "start_s": REAL, "end_s": REAL, "expects_response": FLAG,
        "words": (LIST, WORD)}
TOOL = {"name": TEXT, "description": TEXT, "parameters": JSON}
ANSWER = {"turn": WHOLE, "reference_answer": TEXT, "answer_aliases": (LIST, TEXT)}
CALL = {"function": TEXT, "args": JSON}
ACTION = {"turn": WHOLE, "action": TEXT, "text": TEXT, "at_s": REAL, "call": JSON, "tool_results": JSON,
          "variants": (LIST, TEXT)}
EXPECTED = {"reference_answer": TEXT, "answer_aliases": (LIST, TEXT), "answers": (LIST, ANSWER),
            "tool_calls": (LIST, CALL), "script": (LIST, ACTION), "behaviour": JSON}
PROVENANCE = {"source": TEXT, "source_id": TEXT, "source_path": TEXT}
LINE = {"schema_version": WHOLE, "session_id": TEXT, "task": TEXT, "audio_file": TEXT, "duration_s": REAL,
        "chunk_s": REAL, "first_chunk_s": REAL, "system_prompt": TEXT, "tools": (LIST, TOOL), "turns": (LIST, TURN),
        "expected": EXPECTED, "provenance": PROVENANCE}  # a manifest line; its "audio" path is the column audio_file
COLUMNS = ("schema_version", "session_id", "task", "audio", *list(LINE)[3:])


def conforms(value: Any, kind) -> bool:
    """Whether ``value`` can be stored in a field of ``kind`` and read back equal (JSON fields take any value)."""
    if kind == TEXT:
        return isinstance(value, str)
    if kind == REAL:
        return isinstance(value, float)
    if kind == WHOLE:
        return isinstance(value, int) and not isinstance(value, bool) and INT64[0] <= value <= INT64[1]
    if kind == FLAG:
        return isinstance(value, bool)
    if kind == JSON:
        return True
    if isinstance(kind, dict):
        return isinstance(value, dict)
    return isinstance(value, list) and all(conforms(item, kind[1]) for item in value)


def encode_value(value: Any, kind) -> Any:
    if kind == JSON:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    if isinstance(kind, dict):
        return encode_object(value, kind)
    if isinstance(kind, tuple):
        return [encode_value(item, kind[1]) for item in value]
    return value


def encode_object(data: dict, spec: dict) -> dict:
    """The stored form of a free-form object: its typed fields (null where absent) and ``extra`` (the rest)."""
    stored, extra = dict.fromkeys(spec), {}
    for key, value in data.items():
        if key in spec and conforms(value, spec[key]):
            stored[key] = encode_value(value, spec[key])
        else:
            extra[key] = value
    stored[EXTRA] = json.dumps(extra, ensure_ascii=False, separators=(",", ":")) if extra else None
    return stored


def decode_value(value: Any, kind) -> Any:
    if kind == JSON:
        return json.loads(value)
    if isinstance(kind, dict):
        return decode_object(value, kind)
    if isinstance(kind, tuple):
        return [decode_value(item, kind[1]) for item in value]
    return value


def decode_object(stored: dict, spec: dict) -> dict:
    """The object ``encode_object`` stored: its typed fields that are not null, then the keys of ``extra``."""
    data = {key: decode_value(stored[key], kind) for key, kind in spec.items() if stored.get(key) is not None}
    if stored.get(EXTRA):
        data.update(json.loads(stored[EXTRA]))
    return data


def session_row(line: dict, audio: bytes) -> dict:
    """The row of a session: its manifest line (``Session.to_json()``, audio path relative to the manifest) and the
    bytes of its audio file. The line's own fields are typed (``None`` for a null ``first_chunk_s`` or
    ``system_prompt``); its tools, turns, expectations and provenance are stored with ``encode_object``."""
    fields = {**line, "audio_file": line["audio"]}
    row = {key: encode_value(fields[key], kind) if fields.get(key) is not None else None for key, kind in LINE.items()}
    row["audio"] = {"bytes": audio, "path": line["audio"]}
    return row


class RowError(ValueError):
    """A row's column that does not hold what its type says (JSON text that is not JSON, ...); names the column."""


def manifest_line(row: dict) -> dict:
    """The manifest line a row stores (``session_row`` backwards), ready for ``manifest.parse_session``; a column
    that cannot be read is a ``RowError`` naming it (``field 'expected': ...``)."""
    line = {}
    for key, kind in LINE.items():
        try:
            line[key] = decode_value(row[key], kind) if row.get(key) is not None else None
        except (ValueError, TypeError, KeyError, AttributeError, RecursionError) as err:
            raise RowError(f"field {key!r}: not what the column holds ({type(err).__name__}: {err})") from None
    line["audio"] = line.pop("audio_file")
    return line


def features():
    """The ``datasets.Features`` of the columns, with ``audio`` as its stored struct ``{bytes, path}`` (cast it to
    ``datasets.Audio()`` once the rows are in: building rows through an ``Audio`` feature needs torchcodec)."""
    from datasets import Features, List, Value

    kinds = {TEXT: Value("string"), REAL: Value("float64"), WHOLE: Value("int64"), FLAG: Value("bool"),
             JSON: Value("string")}

    def feature(kind):
        if isinstance(kind, dict):
            return {**{key: feature(k) for key, k in kind.items()}, EXTRA: Value("string")}
        if isinstance(kind, tuple):
            return List(feature(kind[1]))
        return kinds[kind]

    columns = {key: feature(kind) for key, kind in LINE.items()}
    columns["audio"] = {"bytes": Value("binary"), "path": Value("string")}
    return Features({name: columns[name] for name in COLUMNS})
