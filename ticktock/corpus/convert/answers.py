"""Reference answers as the sources store them: one string, a list written as JSON or Python, or
alternatives separated by ";" or "|". An alias field may also be one comma-separated string (TriviaQA's
normalised aliases in OpenAudioBench): ``parse_aliases`` splits it; an answer keeps its commas.

Example::

    >>> parse_answers("['Jamaican English', 'Jamaican Creole English Language']")
    ['Jamaican English', 'Jamaican Creole English Language']
    >>> parse_answers("Paris; City of Paris"), parse_answers("Washington, D.C.")
    (['Paris', 'City of Paris'], ['Washington, D.C.'])
    >>> parse_aliases("mars, planet mars, red planet"), parse_aliases("['mars', 'the red planet']")
    (['mars', 'planet mars', 'red planet'], ['mars', 'the red planet'])
    >>> number_aliases("7"), number_aliases("seven"), number_aliases("valid")
    (['seven'], ['7'], [])
"""

from __future__ import annotations

import ast
import json
from typing import Any

from ticktock.corpus.convert import MAX_JSON_DEPTH, nesting_depth

NUMBER_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
                "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty")


def parse_answers(value: Any) -> list[str]:
    """All answers in ``value``, first the main one; duplicates and empty strings removed."""
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        found = [a for v in value for a in parse_answers(v)]
    elif isinstance(value, dict):
        keys = ("value", "normalized_value", "aliases", "normalized_aliases")
        found = [a for key in keys for a in parse_answers(value.get(key))]
    else:
        text = str(value).strip()
        decoded = _decode(text) if text[:1] in "[({" else None
        if decoded is not None:
            return parse_answers(decoded)
        separator = next((s for s in (";", "|") if s in text), None)
        found = [p.strip() for p in text.split(separator)] if separator else [text]
    unique: list[str] = []
    for answer in found:
        if answer and answer.lower() not in (u.lower() for u in unique):
            unique.append(answer)
    return unique


def parse_aliases(value: Any) -> list[str]:
    """Like ``parse_answers``, but a plain string is also split at commas (one alias per comma-separated
    part); lists, ";" and "|" are read as ``parse_answers`` reads them."""
    if isinstance(value, str) and value.strip()[:1] not in "[({" and not any(s in value for s in ";|"):
        return parse_answers([part for part in value.split(",")])
    return parse_answers(value)


def _decode(text: str) -> Any:
    """A list or object written as JSON or as a Python literal (never evaluated: ``ast.literal_eval``), or None;
    one nested deeper than ``MAX_JSON_DEPTH`` is read as plain text (``parse_answers`` would overflow the stack).

    >>> _decode("['a', 'b']"), _decode("[" * 500 + "]" * 500), _decode("Paris")
    (['a', 'b'], None, None)
    """
    for decode in (json.loads, ast.literal_eval):
        try:
            value = decode(text)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            continue
        if isinstance(value, (list, tuple, dict)):
            return value if nesting_depth(value) <= MAX_JSON_DEPTH else None
    return None


def number_aliases(answer: str) -> list[str]:
    """The other spelling of a small whole number ("7" <-> "seven"), so either counts as the answer."""
    text = answer.strip().lower()
    if text.isdigit() and int(text) < len(NUMBER_WORDS):
        return [NUMBER_WORDS[int(text)]]
    if text in NUMBER_WORDS:
        return [str(NUMBER_WORDS.index(text))]
    return []
