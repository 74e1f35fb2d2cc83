"""The paper's reported numbers (``paper_numbers.yaml``), to print beside ours, and the models it measured.

Each entry cites the paper's table (or figure) and row, the column it belongs to, and the TickTock
decoder(s) it corresponds to. ``paper_value`` gives one value or the range over the paper's models.
``measured_by_paper`` says whether a model is one of the paper's (the file's ``models``): the only models the
paper's columns stand beside (``ticktock.tables.load.Setup.compares_with_paper``).

Example::

    >>> paper_value(2, "speak speedup", "speclisten")
    '2.60-2.76'
    >>> paper_value(5, "onset ms", "ar", digits=0)
    '417-1089'
    >>> paper_value(2, "speak speedup", "speclisten_plus")
    ''
    >>> paper_value("fig4c", "tool speedup", "speclisten", row=r"N=4\\b")
    '10.50'
    >>> measured_by_paper("gander"), measured_by_paper("fixture")
    (True, False)
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

import yaml

PAPER_FILE = Path(__file__).with_name("paper_numbers.yaml")


@lru_cache(maxsize=1)
def _paper_file() -> dict:
    return yaml.safe_load(PAPER_FILE.read_text())


def paper_numbers() -> tuple[dict, ...]:
    return tuple(_paper_file()["numbers"])


def paper_models() -> dict[str, str]:
    """The models the paper measured: TickTock's model name (run.json ``config.model.name``) -> the paper's name."""
    return {str(name): str(label) for name, label in _paper_file()["models"].items()}


def measured_by_paper(model: str) -> bool:
    """Whether ``model`` (a TickTock model name) is one the paper measured: the one place that decides it."""
    return model in paper_models()


def not_measured_note(model: str) -> str:
    """The provenance line of a model the paper did not measure, '' for one it did.

    >>> not_measured_note("fixture")[:46]
    'model fixture: not one the paper measured (it '
    """
    if measured_by_paper(model):
        return ""
    measured = ", ".join(f"{label} as {name}" for name, label in paper_models().items())
    return (f"model {model}: not one the paper measured (it measured {measured}: paper_numbers.yaml models), so no "
            "paper value is shown beside it")


def _decoders(entry: dict) -> list[str]:
    decoder = entry.get("decoder")
    return decoder if isinstance(decoder, list) else [decoder]


def paper_entries(table, column: str, decoder: str | None = None, row: str | None = None) -> list[dict]:
    """The entries of ``table`` and ``column`` (of ``decoder``; whose row starts with the regular expression ``row``)."""
    return [e for e in paper_numbers() if e["table"] == table and e["column"] == column
            and (decoder is None or decoder in _decoders(e)) and (row is None or re.match(row, str(e["row"])))]


def paper_value(table, column: str, decoder: str, digits: int = 2, percent: bool = False, row: str | None = None) -> str:
    """The paper's value for ``decoder`` in ``column`` of ``table`` (in the rows matching ``row`` when given): one
    number, a min-max range, or ''."""
    values = [float(e["value"]) for e in paper_entries(table, column, decoder, row)]
    if not values:
        return ""
    fmt = (lambda v: f"{100 * v:.{max(digits - 1, 0)}f}%") if percent else (lambda v: f"{v:.{digits}f}")
    low, high = min(values), max(values)
    return fmt(low) if low == high else f"{fmt(low)}-{fmt(high)}"


def paper_note(table, columns: list[str] | None = None) -> str:
    """One line citing the paper's entries of ``table``, grouped by column (for a table's notes).

    >>> paper_note(7)
    'Paper (Table 7): user speaking: Realtime-Venus 0.379 | tool chunks: Gander 0.34'
    """
    entries = [e for e in paper_numbers() if e["table"] == table and (columns is None or e["column"] in columns)]
    if not entries:
        return ""
    where = f"Table {table}" if isinstance(table, int) else (f"Figure {table[3:]}" if str(table).startswith("fig") else "text")
    groups: dict[str, list[str]] = {}
    for e in entries:
        groups.setdefault(e["column"], []).append(f"{e['row']} {e['value']:g}")
    return f"Paper ({where}): " + " | ".join(f"{column}: {'; '.join(values)}" for column, values in groups.items())
