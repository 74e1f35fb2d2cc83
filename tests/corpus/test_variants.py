"""Reply variants: every scripted model reply has several phrasings that keep what the scorer checks and fit
the time the script leaves, and adding them changed nothing else in the generated corpus."""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter

import pytest

from ticktock.corpus.knowledge import ALL_FACTS, reply_for, reply_variants
from ticktock.corpus.script import REPLY_DELAY_S, REPLY_WORD_S, TOOL_CALL_S, reply_duration_s
from ticktock.corpus.splits import EVAL_SEED_LIMIT
from ticktock.corpus.tasks import BUILDERS, build_scripts
from ticktock.corpus.tasks.alpaca import INSTRUCTIONS
from ticktock.corpus.tasks.conversation import MODEL_BACKCHANNELS, TOPICS
from ticktock.world.scoring import score_qa

REPLY_ACTIONS = ("speak", "speak_after_tools", "backchannel")
SCRIPTS_PER_TASK = 24
USER_BACKCHANNEL_MARGIN_S = 2.0  # fdb_v1_5: a second user backchannel starts >= 2 s before the scripted reply ends

# Computed before variants existed (eval seed 0, one session per task): per session, the sha256 (first 16 hex
# digits) of its manifest line without "tools" (the mock tool schemas evolve on their own) and of its FLAC file.
BEFORE_VARIANTS = {
    "llama_questions-eval-0-0000": ("cfcfce5ca0327bce", "d40be984a7ad79b6"),
    "web_questions-eval-0-0000": ("26901d360d2059fd", "db102baf15101aef"),
    "trivia_qa-eval-0-0000": ("4b16c8124a599e20", "5361e96ebdacf34a"),
    "alpaca_eval-eval-0-0000": ("9cb3f7914c13e520", "1188e63bbab582eb"),
    "big_bench_audio-eval-0-0000": ("a7ce820cc2b9997b", "8621429228afe546"),
    "fdb_v1-eval-0-0000": ("c0478bcd86813939", "891203c08cf23f03"),
    "fdb_v1_5-eval-0-0000": ("a78393f9b10fc8d1", "e465d9f53b84fd13"),
    "fdb_v3-eval-0-0000": ("f045e2911e18bc09", "e729a23cb4fc1683"),
}
# Also computed before variants existed: the scripts (no audio) of sessions 0-7 of every task and split.
SCRIPTS_BEFORE_VARIANTS = {
    ("eval", "llama_questions"): "1c1651b20bbacc8d", ("eval", "web_questions"): "9b5acf74c5ba2b05",
    ("eval", "trivia_qa"): "81a8463ac7038b13", ("eval", "alpaca_eval"): "8e0a0fc67fab2492",
    ("eval", "big_bench_audio"): "2ba7791711878c74", ("eval", "fdb_v1"): "ac30156a2ae5aae7",
    ("eval", "fdb_v1_5"): "5d5e7cf74a31b531", ("eval", "fdb_v3"): "5b02376b0aac83f5",
    ("train", "llama_questions"): "8978f0b316cab767", ("train", "web_questions"): "33e5de2b5c1cbe4a",
    ("train", "trivia_qa"): "117c94607ac62874", ("train", "alpaca_eval"): "edab401aa8606b75",
    ("train", "big_bench_audio"): "03d4699170afb420", ("train", "fdb_v1"): "87a0e2edcb2d6aa6",
    ("train", "fdb_v1_5"): "c51a4eaef798425f", ("train", "fdb_v3"): "0466e180bb858290",
}


def without_variants(actions) -> list[dict]:
    return [{k: v for k, v in a.items() if k != "variants"} for a in actions]


def short_sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def all_scripts():
    """SCRIPTS_PER_TASK scripts of every task in both splits."""
    for split, seed in (("eval", 0), ("train", EVAL_SEED_LIMIT)):
        for task in BUILDERS:
            yield from build_scripts(task, split, seed, SCRIPTS_PER_TASK)


def script_replies():
    """(action, answer record or None, task) of every reply action of ``all_scripts``."""
    for script in all_scripts():
        answers = {a["turn"]: a for a in script.answers}
        for action in script.actions:
            if action["action"] in REPLY_ACTIONS:
                yield action, answers.get(action["turn"]), script.task


def phrasings(action) -> list[str]:
    return [action["text"], *action.get("variants", [])]


def minimum_phrasings(action, answered: bool) -> int:
    """Open-ended replies (instructions, stories: no reference answer, no tools) need 5, the others 3."""
    return 5 if action["action"] == "speak" and not answered else 3


def allowed_word_difference(words: int) -> int:
    return max(1, int(0.3 * words + 0.5))


def qa_hit(text: str, answer: dict) -> bool:
    """Whether the QA scorer accepts ``text`` as the spoken reply to a question with ``answer``."""
    turns = [{"speaker": "user", "role": "request", "start_s": 0.0, "end_s": 1.0, "expects_response": True}]
    chunks = [{"chunk_index": 0, "start_s": 1.0, "arrival_s": 2.0, "kind": "speak", "output_text": text}]
    return score_qa(chunks, {"answers": [{**answer, "turn": 0}]}, turns)["qa_hits"] == 1


OPPOSITES = {"yes": "no", "no": "yes", "valid": "invalid", "invalid": "valid"}


# ------------------------------------------------------------------------------------- nothing else changed


def test_the_generated_corpus_is_unchanged_but_for_the_variants(corpus_dir):
    seen = {}
    for line in (corpus_dir / "manifest.jsonl").read_text(encoding="utf-8").splitlines():
        data = json.loads(line)
        data.pop("tools")
        data["expected"]["script"] = without_variants(data["expected"]["script"])
        audio = (corpus_dir / data["audio"]).read_bytes()
        seen[data["session_id"]] = (short_sha(json.dumps(data, ensure_ascii=False).encode()), short_sha(audio))
    assert seen == BEFORE_VARIANTS


def test_scripts_draw_the_same_content_and_timing_as_before_the_variants():
    for (split, task), expected in SCRIPTS_BEFORE_VARIANTS.items():
        digest = hashlib.sha256()
        for s in build_scripts(task, split, 0 if split == "eval" else EVAL_SEED_LIMIT, 8):
            parts = (s.task, s.item, s.item_parts, s.utterances, tuple(without_variants(s.actions)), s.behaviour,
                     s.busy_until, s.answers, s.tool_calls, s.uses_tools)
            digest.update(hashlib.sha256(repr(parts).encode()).hexdigest().encode())
        assert digest.hexdigest()[:16] == expected, (split, task)


# ------------------------------------------------------------------------------------- how many, how long


@pytest.mark.parametrize("which", ["corpus", "train_corpus"])
def test_every_reply_of_a_generated_corpus_has_enough_distinct_phrasings(which, request):
    kinds = Counter()
    for session in request.getfixturevalue(which):
        answered = {a["turn"] for a in session.expected["answers"]}
        for action in session.expected["script"]:
            if action["action"] not in REPLY_ACTIONS:
                continue
            variants = action["variants"]
            assert all(isinstance(v, str) and v.strip() for v in variants)
            assert len(set(phrasings(action))) == len(phrasings(action)), action  # text first, no repeats
            assert len(phrasings(action)) >= minimum_phrasings(action, action["turn"] in answered), (session.session_id, action)
            kinds[action["action"]] += 1
    assert set(kinds) == (set(REPLY_ACTIONS) if which == "train_corpus" else {"speak", "speak_after_tools"})


def test_every_scripted_reply_has_enough_distinct_phrasings():
    for action, answer, task in script_replies():
        assert len(set(phrasings(action))) == len(phrasings(action)), action
        assert len(phrasings(action)) >= minimum_phrasings(action, answer is not None or task == "big_bench_audio"), action


def test_every_fact_instruction_and_story_reply_has_its_variants():
    for fact in ALL_FACTS:
        assert len({reply_for(fact), *reply_variants(fact)}) >= 4, fact.id
    for instruction in INSTRUCTIONS:
        assert len({instruction.reply, *instruction.variants}) >= 5, instruction.id
    for topic in TOPICS:
        for question, reply, variants in topic.questions:
            assert len({reply, *variants}) >= 5, question


def test_variants_stay_about_as_long_as_the_text():
    """Within 30 % of the text's words (at least one word either way); the long instruction replies never
    have more characters (the model writes them at a fixed number of tokens a second) and stay long enough
    for a user backchannel late in the scripted reply to fall inside them."""
    checked = 0
    for action, _, _ in script_replies():
        words = len(action["text"].split())
        for variant in action.get("variants", []):
            assert abs(len(variant.split()) - words) <= allowed_word_difference(words), (action["text"], variant)
            checked += 1
    for instruction in INSTRUCTIONS:
        words = len(instruction.reply.split())
        for variant in instruction.variants:
            assert 30 <= len(variant.split()) <= 45 and len(variant) <= len(instruction.reply), variant
            assert REPLY_WORD_S * (words - len(variant.split())) < USER_BACKCHANNEL_MARGIN_S, variant
    assert checked > 1000


@pytest.mark.parametrize("which", ["corpus", "train_corpus"])
def test_variants_fit_the_time_the_script_leaves(which, request):
    """Spoken at the script's pace, a variant ends before the next turn that starts after the scripted reply
    (or the session's end), and still runs when a turn the model is meant to talk over starts."""
    for session in request.getfixturevalue(which):
        turns, script = session.turns, session.expected["script"]
        calls = Counter(a["turn"] for a in script if a["action"] == "tool_call")
        for action in script:
            if action["action"] not in ("speak", "speak_after_tools"):
                continue
            start = turns[action["turn"]].end_s + REPLY_DELAY_S + TOOL_CALL_S * calls[action["turn"]]
            end = start + reply_duration_s(action["text"])
            if any(a["action"] == "stop" and start <= turns[a["turn"]].start_s < end for a in script):
                continue  # a barge-in cuts this reply short by design
            limit = min((t.start_s for t in turns if t.start_s >= end - 1e-6), default=session.duration_s)
            talked_over = [turns[a["turn"]].start_s for a in script
                           if a["action"] == "keep_speaking" and start <= turns[a["turn"]].start_s < end]
            for variant in action["variants"]:
                variant_end = start + reply_duration_s(variant)
                assert variant_end <= limit + 1e-6, (session.session_id, variant)
                assert all(variant_end > s for s in talked_over), (session.session_id, variant)


# ------------------------------------------------------------------------------------- what the scorer checks


def test_every_phrasing_of_every_fact_passes_the_qa_scorer():
    for fact in ALL_FACTS:
        answer = {"reference_answer": fact.answer, "answer_aliases": list(fact.aliases)}
        for text in (reply_for(fact), *reply_variants(fact)):
            assert qa_hit(text, answer), (fact.id, text)


def test_every_phrasing_of_every_scripted_answer_passes_the_qa_scorer_and_never_says_the_opposite():
    checked = 0
    for action, answer, _ in script_replies():
        if answer is None:
            continue
        opposite = OPPOSITES.get(answer["reference_answer"])
        for text in phrasings(action):
            assert qa_hit(text, answer), (text, answer)
            assert opposite is None or not qa_hit(text, {"reference_answer": opposite, "answer_aliases": []}), text
            checked += 1
    assert checked > 500


@pytest.mark.parametrize("which", ["corpus", "train_corpus"])
def test_qa_variants_of_a_generated_corpus_pass_the_scorer(which, request):
    for session in request.getfixturevalue(which):
        answers = {a["turn"]: a for a in session.expected["answers"]}
        for action in session.expected["script"]:
            if action["action"] == "speak" and action["turn"] in answers:
                assert all(qa_hit(text, answers[action["turn"]]) for text in phrasings(action)), action


def result_values(results) -> set[str]:
    """Every scalar of the tool results as text (names also with "_" read as a space, as the answers say them)."""
    values: set[str] = set()
    stack = list(results)
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            stack += value.values()
        elif isinstance(value, list):
            stack += value
        elif isinstance(value, str):
            values |= {value, value.replace("_", " ")}
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            values.add(str(value))
    return {v for v in values if v.strip()}


def says(text: str, value: str) -> bool:
    """``value`` as a whole word or number in ``text``, exactly (or capitalised, starting a sentence)."""
    forms = {value, value[:1].upper() + value[1:]}
    return any(re.search(rf"(?<![\w.]){re.escape(form)}(?!\w|\.\d)", text) for form in forms)


def numbers(text: str) -> set[str]:
    return set(re.findall(r"\d+(?:[.:]\d+)*", text))


def tool_answers():
    for script in all_scripts():
        for action in script.actions:
            if action["action"] == "speak_after_tools":
                yield action


def test_tool_answer_variants_keep_every_tool_result_value_of_the_answer():
    checked = 0
    for action in tool_answers():
        used = {v for v in result_values(action["tool_results"]) if says(action["text"], v)}
        assert used, action["text"]
        for variant in action["variants"]:
            missing = [v for v in used if not says(variant, v)]
            assert not missing, (action["text"], variant, missing)
            assert numbers(variant) == numbers(action["text"]), (action["text"], variant)
            checked += 1
    assert checked > 100


def test_tool_answer_variants_of_a_generated_corpus_keep_the_result_values(train_corpus):
    for session in train_corpus:
        for action in session.expected["script"]:
            if action["action"] == "speak_after_tools":
                used = {v for v in result_values(action["tool_results"]) if says(action["text"], v)}
                assert all(says(variant, v) for variant in action["variants"] for v in used), action


def test_acknowledgements_stay_acknowledgements():
    """A "Done." answer's variants acknowledge too, and a model backchannel's variants are backchannels."""
    acknowledgements = ("Done.", "All set.", "Okay,", "Filter updated.", "I updated", "The filter is updated")
    for action in tool_answers():
        if action["text"].startswith("Done."):
            assert all(v.startswith(acknowledgements) for v in action["variants"]), action["variants"]
    for action, _, _ in script_replies():
        if action["action"] == "backchannel":
            assert set(phrasings(action)) == set(MODEL_BACKCHANNELS)
