"""Session script builders, one per TickTock-Bench task type.

``BUILDERS`` is the single registry: task name -> function(SessionContext) -> SessionScript.

Example::

    >>> scripts = build_scripts("llama_questions", "eval", 0, 2)
    >>> [s.task for s in scripts], len(scripts[0].utterances)
    (['llama_questions', 'llama_questions'], 2)
"""

from __future__ import annotations

from typing import Callable

from ticktock.corpus.script import SessionScript
from ticktock.corpus.splits import check_seed
from ticktock.corpus.tasks.alpaca import build_alpaca
from ticktock.corpus.tasks.base import ItemDealer, SessionContext
from ticktock.corpus.tasks.bbh import build_bbh
from ticktock.corpus.tasks.fdb_v1 import build_fdb_v1
from ticktock.corpus.tasks.fdb_v1_5 import build_fdb_v1_5
from ticktock.corpus.tasks.fdb_v3 import build_fdb_v3
from ticktock.corpus.tasks.qa import build_qa

BUILDERS: dict[str, Callable[[SessionContext], SessionScript]] = {
    "llama_questions": build_qa,
    "web_questions": build_qa,
    "trivia_qa": build_qa,
    "alpaca_eval": build_alpaca,
    "big_bench_audio": build_bbh,
    "fdb_v1": build_fdb_v1,
    "fdb_v1_5": build_fdb_v1_5,
    "fdb_v3": build_fdb_v3,
}


def build_scripts(task: str, split: str, seed: int, count: int) -> list[SessionScript]:
    """Scripts of sessions 0..count-1 of ``task``; session i does not depend on ``count``."""
    if task not in BUILDERS:
        raise ValueError(f"unknown task {task!r}; tasks are {', '.join(BUILDERS)}")
    check_seed(split, seed)
    dealer = ItemDealer(task, split, seed)
    return [BUILDERS[task](SessionContext(task, split, seed, index, dealer)) for index in range(count)]
