"""The default judge, ``judge=rule``: no judge model. Reply quality is the rule-based task scores only.

The rule-based scores are those of ``ticktock.world.scoring`` (QA answer match, tool calls, turn-taking behaviour),
counted per session and pooled per decoder: the quality table shows them always, from the result tables
alone. They are counts of hits and trials, not a grade of each reply, so this judge gives no per-reply score
on a 1-5 scale (its ``scale`` is None) and writes no judgement file: ``python -m ticktock.judge`` with it says
what the quality table uses and how to plug in a judge model, and exits 2. A grade per reply, as the paper's
AlpacaEval-style judge gives, comes from a judge model (``judge=hf_local``: ``ticktock.judges.hf_local``).

Example::

    >>> judge = RuleJudge()
    >>> judge.scale is None, judge.unavailable().startswith("no judge model configured (judge=rule)")
    (True, True)
"""

from __future__ import annotations

from typing import Sequence

from ticktock.judges.base import HOW_TO_JUDGE, Judge, JudgeError, Reply, Verdict


class RuleJudge(Judge):
    """The rule-based task scores of ``ticktock.world.scoring``, pooled by the quality table; no per-reply score."""

    name = "rule"
    scale = None

    def settings(self) -> dict:
        return {"scores": "ticktock.world.scoring.score_session"}

    def describe(self) -> str:
        return "the rule-based task scores of ticktock.world.scoring (no judge model)"

    def unavailable(self) -> str:
        return (f"no judge model configured (judge={self.name}): the quality table scores replies with the rule-based "
                "task scores of ticktock.world.scoring only (QA answer match, tool calls, turn-taking), which need no judging "
                f"step; to grade every reply 1-5 with a local judge model, run: {HOW_TO_JUDGE}")

    def judge(self, replies: Sequence[Reply]) -> list[Verdict]:
        raise JudgeError(self.unavailable())
