"""Session scripts (no audio): content rules of each task."""

from __future__ import annotations

import json
import re

from ticktock.corpus.knowledge import ALL_FACTS, ALL_TEMPLATES
from ticktock.corpus.script import At, REPLY_DELAY_S
from ticktock.corpus.splits import EVAL_SEED_LIMIT
from ticktock.corpus.tasks import BUILDERS, build_scripts
from ticktock.corpus.tasks.alpaca import INSTRUCTIONS
from ticktock.corpus.tasks.bbh import NUMBER_WORDS
from ticktock.world.mock_tools import execute

COUNT = 24


def scripts(task: str, split: str = "eval"):
    seed = 0 if split == "eval" else EVAL_SEED_LIMIT
    return build_scripts(task, split, seed, COUNT)


def test_knowledge_base_size_and_templates():
    assert len(ALL_FACTS) >= 150
    for kind in {f.kind for f in ALL_FACTS}:
        assert sum(t.kind == kind for t in ALL_TEMPLATES) >= 2, kind


def test_every_spoken_text_is_ascii():
    for task in BUILDERS:
        for script in scripts(task):
            for utterance in script.utterances:
                assert utterance.text.isascii(), utterance.text


def test_qa_replies_contain_their_reference_answer():
    for task in ("llama_questions", "web_questions", "trivia_qa"):
        for script in scripts(task):
            assert len(script.utterances) == 2
            for answer in script.answers:
                reply = script.actions[answer["turn"]]["text"]
                assert answer["reference_answer"].lower() in reply.lower(), (reply, answer)


def test_alpaca_replies_are_long():
    for instruction in INSTRUCTIONS:
        assert 30 <= len(instruction.reply.split()) <= 45, instruction.id


def test_bbh_answers_are_computed_correctly():
    for script in scripts("big_bench_audio"):
        for utterance, answer in zip(script.utterances, script.answers):
            assert _solve(utterance.text) == answer["reference_answer"], utterance.text


def _solve(text: str) -> str:
    """An independent solver for the generated texts."""
    if text.startswith("Always face forward."):
        x = y = 0
        for count, direction in re.findall(r"Take (\w+) steps? (\w+)\.", text):
            n = NUMBER_WORDS.index(count)
            x += n * {"left": -1, "right": 1}.get(direction, 0)
            y += n * {"forward": 1, "backward": -1}.get(direction, 0)
        return "yes" if x == y == 0 else "no"
    if "How many" in text:
        category = re.search(r"How many (.+) do I have", text).group(1)
        from ticktock.corpus.tasks.bbh import THINGS

        names = {name for pair in THINGS[category] for name in pair}
        total = 0
        for phrase in re.split(r", | and ", text.split(". How many")[0].removeprefix("I have ")):
            count, name = phrase.split(" ", 1)
            if name in names:
                total += 1 if count in ("a", "an") else NUMBER_WORDS.index(count)
        return NUMBER_WORDS[total]
    if "valid or invalid" in text:
        return "valid" if _valid(text) else "invalid"
    truth = {}
    for sentence in text.split(". "):
        if m := re.fullmatch(r"(\w+) (tells the truth|lies)\.?", sentence):
            truth[m.group(1)] = m.group(2) == "tells the truth"
        elif m := re.fullmatch(r"(\w+) says (\w+) (tells the truth|lies)\.?", sentence):
            truth[m.group(1)] = truth[m.group(2)] == (m.group(3) == "tells the truth")
    last = re.search(r"Does (\w+) tell the truth", text).group(1)
    return "yes" if truth[last] else "no"


def _valid(text: str) -> bool:
    premises = text.split(" Is this argument")[0]
    patterns = [  # the four valid forms, as regular expressions over the sentences
        r"Every (.+) is an? (.+)\. (\w+) is an? \1\. So \3 is an? \2\.",
        r"Every (.+) is an? (.+)\. (\w+) is not an? \2\. So \3 is not an? \1\.",
        r"All (.+) are (.+)\. All \2 are (.+)\. So all \1 are \3\.",
        r"No (.+) are (.+)\. All (.+) are \1\. So no \3 are \2\.",
    ]
    return any(re.fullmatch(p, premises) for p in patterns)


def test_interruptions_follow_long_replies_by_two_to_three_seconds():
    for task in ("fdb_v1", "fdb_v1_5"):
        for script in scripts(task):
            if script.behaviour["type"] != "user_interruption":
                continue
            assert len(script.actions[0]["text"].split()) >= 30
            start = script.utterances[1].start
            assert start.turn == 0 and start.edge == "end"
            assert REPLY_DELAY_S + 2.0 <= start.offset_s <= REPLY_DELAY_S + 3.0
            assert [a["action"] for a in script.actions] == ["speak", "stop", "speak"]


def test_user_backchannels_fall_inside_the_expected_reply():
    for script in scripts("fdb_v1_5"):
        if script.behaviour["type"] != "user_backchannel":
            continue
        reply_words = len(script.actions[0]["text"].split())
        first = script.utterances[1].start
        assert REPLY_DELAY_S + 1.5 <= first.offset_s <= REPLY_DELAY_S + 3.0
        assert all(u.start.offset_s < REPLY_DELAY_S + 0.3 * reply_words for u in script.utterances[1:])


def test_background_speech_is_a_second_voice_that_gets_no_reply():
    seen = 0
    for script in scripts("fdb_v1_5"):
        for turn, utterance in enumerate(script.utterances):
            if utterance.speaker == "other":
                seen += 1
                assert utterance.role == "background" and not utterance.expects_response
                assert {"turn": turn, "action": "ignore"} in script.actions
    assert seen


def test_tool_answers_only_use_values_from_the_results():
    for split in ("eval", "train"):
        for script in scripts("fdb_v3", split):
            final = script.actions[-1]
            assert final["action"] == "speak_after_tools"
            results_text = json.dumps(final["tool_results"])
            for token in re.findall(r"[A-Z]*\d[\w.:]*", final["text"]):
                assert token.rstrip(".") in results_text, (token, final["text"])


def test_tool_calls_replay_to_the_scripted_results():
    for script in scripts("fdb_v3"):
        final = script.actions[-1]
        assert [execute(c) for c in script.tool_calls] == final["tool_results"]
        assert 1 <= len(script.tool_calls) <= 3
        assert script.tool_calls == tuple(a["call"] for a in script.actions if a["action"] == "tool_call")


def test_chained_calls_use_ids_from_earlier_results():
    for script in scripts("fdb_v3"):
        calls, results = script.tool_calls, script.actions[-1]["tool_results"]
        for previous, result, call in zip(calls, results, calls[1:]):
            if call["function"] == "book_flight":
                assert call["args"]["flight_id"] == result["flights"][0]["flight_id"]
            if call["function"] == "add_to_cart":
                assert call["args"]["product_id"] == result["products"][0]["product_id"]
            if call["function"] == "calculate_commute" and previous["function"] == "search_apartments":
                assert call["args"]["origin_address"] == result["apartments"][0]["address"]


def test_self_corrections_expect_the_corrected_value():
    corrected = 0
    for script in scripts("fdb_v3") + scripts("fdb_v3", "train"):
        rollback = script.behaviour["state_rollback"]
        if rollback is None:
            continue
        corrected += 1
        (arg, value), = rollback["corrected"].items()
        assert any(call["args"].get(arg) == value for call in script.tool_calls)
        assert all(call["args"].get(arg) != rollback["original"][arg] for call in script.tool_calls)
    assert corrected


def test_pause_handling_pauses_are_one_to_three_seconds_at_incomplete_points():
    for script in scripts("fdb_v1"):
        if script.behaviour["type"] != "pause_handling":
            continue
        for utterance in script.utterances:
            first = utterance.pieces[0]
            assert 1.0 <= first.pause_after_s <= 3.0
            assert not first.text.endswith((".", "?", "!"))


def test_session_starts_are_anchored_in_order():
    for task in BUILDERS:
        for script in scripts(task):
            assert script.utterances[0].start.turn is None
            for index, utterance in enumerate(script.utterances[1:], start=1):
                assert isinstance(utterance.start, At) and utterance.start.turn is not None
                assert utterance.start.turn < index
