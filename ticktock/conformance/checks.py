"""One conformance check's outcome, and the table ``ticktock certify`` prints.

Example::

    >>> results = [Check("tokens equal AR", "embedded, greedy", True),
    ...            Check("KV cache equals AR", "embedded, greedy", False, "session s1 chunk 7",
    ...                  "cache length 412, AR's 411")]
    >>> print(table(results))
    property            setting           result  first counter-example
    ------------------  ----------------  ------  ----------------------------------------------
    tokens equal AR     embedded, greedy  PASS
    KV cache equals AR  embedded, greedy  FAIL    session s1 chunk 7: cache length 412, AR's 411
    >>> all_passed(results)
    False
"""

from __future__ import annotations

from dataclasses import dataclass

PASS, FAIL, SKIP = "PASS", "FAIL", "SKIP"


@dataclass(frozen=True)
class Check:
    """One property checked in one setting: ``passed`` True, False, or None for a declared skip (``detail`` says
    why). ``where`` names the first counter-example (session, chunk, token or tensor), ``detail`` what differed."""

    prop: str
    setting: str
    passed: bool | None
    where: str = ""
    detail: str = ""

    @property
    def result(self) -> str:
        return SKIP if self.passed is None else (PASS if self.passed else FAIL)

    def counterexample(self) -> str:
        return ": ".join(part for part in (self.where, self.detail) if part)


def table(results: list[Check]) -> str:
    """A fixed-width table: property, setting, PASS/FAIL/SKIP, the first counter-example (or the skip's reason)."""
    rows = [(c.prop, c.setting, c.result, c.counterexample()) for c in results]
    header = ("property", "setting", "result", "first counter-example")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(3)]
    last = max([len(header[3]), *(len(r[3]) for r in rows)])
    line = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, [*widths, 0])).rstrip()
    return "\n".join([line(header), line(["-" * w for w in [*widths, last]]), *(line(r) for r in rows)])


def all_passed(results: list[Check]) -> bool:
    """True when no check failed (skips are declared capability gaps, not failures)."""
    return not any(c.passed is False for c in results)
