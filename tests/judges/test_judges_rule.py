"""judge=rule, the default: no judge model; it points at the rule-based task scores and at a local judge."""

import pytest

from ticktock.judge import build_judge, compose_judge
from ticktock.judges.base import HOW_TO_JUDGE, JudgeError, Reply
from ticktock.judges.rule import RuleJudge
from ticktock.shipped import resource_path


def test_the_default_config_is_the_rule_judge():
    judge = build_judge(compose_judge([]))
    assert isinstance(judge, RuleJudge) and judge.name == "rule" and judge.scale is None


def test_it_grades_no_reply_and_says_what_to_do():
    judge = RuleJudge()
    reason = judge.unavailable()
    assert "rule-based task scores of ticktock.world.scoring only" in reason and reason.endswith(f"run: {HOW_TO_JUDGE}")
    with pytest.raises(JudgeError, match=r"^no judge model configured \(judge=rule\)"):
        judge.judge([Reply("run", "s0", "llama_questions", 0, "Capital of France?", "Paris.")])
    assert judge.fingerprint() == RuleJudge().fingerprint()


@pytest.mark.parametrize("option", sorted(p.stem for p in resource_path("configs/judge").glob("*.yaml")))
def test_every_judge_config_composes_and_names_its_file(option):
    cfg = compose_judge([f"judge={option}"])
    assert cfg.judge.name == option and cfg.judge._target_.startswith("ticktock.judges.")
