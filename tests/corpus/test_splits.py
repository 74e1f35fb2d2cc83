"""Evaluation and training never share a seed or an item; every fact stays learnable from training."""

from __future__ import annotations

import pytest

from ticktock.corpus.knowledge import ALL_FACTS, ALL_TEMPLATES, GROUPS, Question, question_split, questions
from ticktock.corpus.splits import EVAL_SEED_LIMIT, SplitError, check_seed, held_out_forms, split_of
from ticktock.corpus.tasks import BUILDERS, build_scripts
from ticktock.corpus.tasks.alpaca import INSTRUCTIONS, instruction_items
from ticktock.corpus.tasks.conversation import background_lines, side_talk_lines

SESSIONS = 40  # scripts only (no audio): cheap


def item_parts(split: str, seed: int) -> dict[str, set[str]]:
    return {task: {p for s in build_scripts(task, split, seed, SESSIONS) for p in s.item_parts} for task in BUILDERS}


def test_eval_and_train_sessions_share_no_item():
    evaluation, training = item_parts("eval", 0), item_parts("train", EVAL_SEED_LIMIT)
    all_eval = set().union(*evaluation.values())
    all_train = set().union(*training.values())
    assert all_eval and all_train
    assert not all_eval & all_train, sorted(all_eval & all_train)[:5]


def test_items_are_assigned_by_id_not_by_seed():
    for seed in (0, 17, 999_999):
        for task, parts in item_parts("eval", seed).items():
            for part in parts:
                assert _split_of_part(part) == "eval", (task, part)


def _split_of_part(part: str) -> str:
    if part.startswith("qa/"):
        _, template_id, fact_id = part.split("/")
        template = next(t for t in ALL_TEMPLATES if t.id == template_id)
        fact = next(f for f in ALL_FACTS if f.id == fact_id)
        return question_split(Question(template, fact))
    if part.startswith("alpaca/"):
        return "eval" if any(i.id == part for i in instruction_items("eval")) else "train"
    if part.startswith(("side_talk/", "background/")):
        lines = side_talk_lines("eval") + background_lines("eval")
        return "eval" if any(line.id == part for line in lines) else "train"
    return split_of(part)


def test_seeds_are_disjoint_with_clear_errors():
    assert check_seed("eval", EVAL_SEED_LIMIT - 1) == EVAL_SEED_LIMIT - 1
    assert check_seed("train", EVAL_SEED_LIMIT) == EVAL_SEED_LIMIT
    with pytest.raises(SplitError, match="training seed"):
        check_seed("eval", EVAL_SEED_LIMIT)
    with pytest.raises(SplitError, match="reserved for evaluation"):
        check_seed("train", 3)
    with pytest.raises(SplitError, match="--split"):
        check_seed("test", 3)
    with pytest.raises(SplitError, match="non-negative"):
        check_seed("eval", -1)
    with pytest.raises(SplitError):
        build_scripts("fdb_v3", "train", 0, 1)


def test_every_fact_appears_in_training_through_some_template():
    trained = {q.fact.id for group in GROUPS for q in questions(group, "train")}
    assert trained == {f.id for f in ALL_FACTS}


def test_every_instruction_appears_in_training():
    assert {i.instruction.id for i in instruction_items("train")} == {i.id for i in INSTRUCTIONS}


def test_held_out_forms_keep_a_training_form():
    assert held_out_forms("x", ["only"]) == []
    for n in range(2, 12):
        forms = [f"f{i}" for i in range(n)]
        held = held_out_forms("content", forms)
        assert len(held) == max(1, n // 4) and set(held) < set(forms)


def test_eval_pools_are_large_enough_for_the_shipped_corpus():
    for group in GROUPS:
        assert len(questions(group, "eval")) >= 30, group
    assert len(instruction_items("eval")) >= 30
    assert len(side_talk_lines("eval")) >= 4 and len(background_lines("eval")) >= 5


def test_session_scripts_do_not_depend_on_the_number_of_sessions():
    for task in BUILDERS:
        assert build_scripts(task, "eval", 3, 1)[0] == build_scripts(task, "eval", 3, 5)[0]
