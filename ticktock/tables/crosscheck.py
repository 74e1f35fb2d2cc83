"""``python -m ticktock.tables.crosscheck RUN_A RUN_B``: do two runs of the same sessions decide the same units?

Built for one question: does an independent runtime serving a model (a live run against vLLM-Omni's server) decide
what TickTock's own adapter decides in process (a replayed ``decoder=ar`` run of the same model and sessions)? Every
unit both runs decided (same session, same chunk) is compared on its **kind** (listen, speak, tool call, ...) and
its **text** (the unit's words with the protocol's special tokens taken out and spaces trimmed, as a live client
receives them). The report gives the share of units that agree in kind, and in kind and text, and every unit that
differs, side by side; ``--min-agreement`` makes the command exit 1 below a share (kind and text).

Only a unit both runs decided is compared; sessions one run lacks are counted, not compared. After a session's
first difference the two runs continue from different histories: the report counts the units before each
session's first difference too, so a later cascade is told apart from independent differences.

Example::

    >>> unit_text("<|speak|> The capital of Greece is<|chunk_eos|>"), unit_text("<|listen|>")
    ('The capital of Greece is', '')
    >>> unit_text(None), unit_text("<tool_call>{}</tool_call><|chunk_eos|>")
    ('', '<tool_call>{}</tool_call>')
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from ticktock.errors import InputDataError, user_errors

SPECIAL = re.compile(r"<\|[A-Za-z0-9_]+\|>")
COLUMNS = ["session_id", "chunk_index", "kind", "output_text"]


def unit_text(text) -> str:
    """A unit's words: its ``<|...|>`` protocol tokens taken out, spaces trimmed (tool-call tags are kept)."""
    return SPECIAL.sub("", text or "").strip()


@dataclass
class Difference:
    session_id: str
    chunk_index: int
    first: tuple[str, str]
    second: tuple[str, str]
    after_first_difference: bool


@dataclass
class Agreement:
    """What two runs decided alike: units compared, same kind, same kind and text, and each difference."""

    names: tuple[str, str]
    units: int = 0
    same_kind: int = 0
    same: int = 0
    units_before_divergence: int = 0
    same_before_divergence: int = 0
    sessions: int = 0
    sessions_only_in_one: int = 0
    differences: list[Difference] = field(default_factory=list)

    @property
    def rate(self) -> float:
        return self.same / self.units if self.units else float("nan")

    def lines(self) -> list[str]:
        pct = lambda a, b: f"{100 * a / b:.1f}%" if b else "n/a"  # noqa: E731
        out = [f"{self.units} units of {self.sessions} sessions decided by both ({self.sessions_only_in_one} sessions "
               f"in one run only, not compared)",
               f"same kind: {self.same_kind} ({pct(self.same_kind, self.units)}); same kind and text: {self.same} "
               f"({pct(self.same, self.units)})",
               f"before each session's first difference: {self.same_before_divergence} of "
               f"{self.units_before_divergence} units"]
        for d in self.differences:
            where = " (after an earlier difference)" if d.after_first_difference else ""
            out.append(f"  {d.session_id} chunk {d.chunk_index}{where}: {self.names[0]} {d.first[0]} {d.first[1]!r} | "
                       f"{self.names[1]} {d.second[0]} {d.second[1]!r}")
        return out


def decided_units(run: Path):
    """The decided units of a run folder's complete sessions (``chunks.parquet``), keyed by (session, chunk)."""
    import pyarrow.parquet as pq

    path = Path(run) / "chunks.parquet"
    if not path.is_file():
        raise InputDataError(f"{path}: no chunks.parquet (not a finished run folder)")
    try:
        table = pq.read_table(path, columns=COLUMNS).to_pylist()
    except Exception as err:  # a torn file, or one without the columns: pyarrow's own error types
        raise InputDataError(f"{path}: not a run's chunk table ({type(err).__name__}: {err})") from None
    return {(row["session_id"], int(row["chunk_index"])): (row["kind"], unit_text(row["output_text"])) for row in table}


def compare(first: Path, second: Path) -> Agreement:
    """Unit by unit, what ``first`` and ``second`` decided (see the module docstring)."""
    a, b = decided_units(first), decided_units(second)
    result = Agreement((Path(first).name, Path(second).name))
    sessions_a, sessions_b = {s for s, _ in a}, {s for s, _ in b}
    result.sessions = len(sessions_a & sessions_b)
    result.sessions_only_in_one = len(sessions_a ^ sessions_b)
    diverged: set[str] = set()
    for key in sorted(set(a) & set(b)):
        session, chunk = key
        mine, theirs = a[key], b[key]
        result.units += 1
        result.same_kind += mine[0] == theirs[0]
        alike = mine == theirs
        result.same += alike
        if session not in diverged:
            result.units_before_divergence += 1
            result.same_before_divergence += alike
        if not alike:
            result.differences.append(Difference(session, chunk, mine, theirs, session in diverged))
            diverged.add(session)
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ticktock.tables.crosscheck", description=__doc__.splitlines()[0])
    parser.add_argument("first", help="a run folder (e.g. the in-process replay, decoder=ar)")
    parser.add_argument("second", help="a run folder of the same sessions (e.g. the live run against a server)")
    parser.add_argument("--min-agreement", type=float, default=None,
                        help="exit 1 when the share of units alike in kind and text is below this (e.g. 0.95)")
    parser.add_argument("--json", default=None, help="also write the report here")
    args = parser.parse_args(argv)
    with user_errors(prog=parser.prog):
        result = compare(Path(args.first), Path(args.second))
    print("\n".join(result.lines()))
    if args.json:
        summary = {k: v for k, v in vars(result).items() if k != "differences"}
        summary["differences"] = [vars(d) for d in result.differences]
        Path(args.json).write_text(json.dumps(summary, indent=1) + "\n")
    if args.min_agreement is not None and not result.rate >= args.min_agreement:
        print(f"agreement {result.rate:.3f} is below {args.min_agreement}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
