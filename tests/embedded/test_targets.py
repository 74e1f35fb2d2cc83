"""The oracle policy (training targets), its drawn reply phrasings, and the training-sequence layout, on
hand-made sessions."""

import hashlib
import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from ticktock.adapters.fixture import build_fixture_adapter
from ticktock.embedded.data import AUDIO, IGNORE, layout
from ticktock.embedded.targets import (CLOSERS, OPENERS, WIDE_CLOSERS, WIDE_OPENERS, ChunkPlan, ReplyVariety, call_groups,
                                       WORDINGS, mixed, plan_session, sentences, speak_units, tool_call_text, worded)
from ticktock.sessions.manifest import Session, Turn, load_manifest
from ticktock.world.mock_tools import MockToolExecutor
from ticktock.shipped import resource_path


@pytest.fixture(scope="module")
def adapter():
    return build_fixture_adapter(seed=0, max_text_tokens=8, max_tool_tokens=200)


def session(turns, script, duration=12.0):
    return Session("s", "t", Path("x.flac"), duration, turns=tuple(turns), expected={"script": script})


def labels_of(plans):
    return [p.label for p in plans]


def test_reply_starts_after_half_a_second_of_silence_and_is_split_into_k_token_units(adapter):
    p = adapter.protocol
    turns = [Turn("user", "request", "q", 1.0, 2.7, (), True)]
    plans = plan_session(session(turns, [{"turn": 0, "action": "speak", "text": "abcdefghijklm"}]), adapter, MockToolExecutor())
    # 2.7 + 0.5 = 3.2 -> the first chunk ending at or after 3.2 is chunk 3 ([3, 4)).
    assert labels_of(plans)[:6] == ["listen", "listen", "listen", "speak", "speak", "listen"]
    units = speak_units(adapter, "abcdefghijklm")  # " abcdefghijklm" = 14 characters = 8 + 6
    assert plans[3].output == units[0] == [p.speak, *adapter.encode_text(" abcdefg"), p.chunk_eos]
    assert plans[4].output == [p.speak, *adapter.encode_text("hijklm"), p.turn_eos, p.chunk_eos]


def test_barge_in_interrupts_then_the_new_question_is_answered(adapter):
    turns = [Turn("user", "request", "q", 1.0, 2.0, (), True), Turn("user", "interruption", "q2", 4.5, 6.0, (), True)]
    script = [{"turn": 0, "action": "speak", "text": "x" * 60}, {"turn": 1, "action": "stop"},
              {"turn": 1, "action": "speak", "text": "ok"}]
    plans = plan_session(session(turns, script), adapter, MockToolExecutor())
    # reply from chunk 2 (2.0 + 0.5 <= 3.0); barge-in heard by 4.8 -> interrupt in chunk 4; answer from chunk 6.
    assert labels_of(plans)[:8] == ["listen", "listen", "speak", "speak", "interrupt", "listen", "speak", "listen"]


def test_user_backchannel_does_not_stop_the_reply(adapter):
    turns = [Turn("user", "request", "q", 1.0, 2.0, (), True), Turn("user", "backchannel", "uh-huh", 3.2, 3.5)]
    script = [{"turn": 0, "action": "speak", "text": "y" * 30}, {"turn": 1, "action": "keep_speaking"}]
    plans = plan_session(session(turns, script), adapter, MockToolExecutor())
    assert labels_of(plans)[2:7] == ["speak", "speak", "speak", "speak", "listen"]


def test_model_backchannel_in_a_pause(adapter):
    p = adapter.protocol
    turns = [Turn("user", "statement", "story", 1.0, 6.0)]
    script = [{"turn": 0, "action": "backchannel", "text": "mm-hmm", "at_s": 3.3}]
    plans = plan_session(session(turns, script), adapter, MockToolExecutor())
    assert plans[3].label == "backchannel"  # 3.3 + 0.4 = 3.7 <= 4.0
    assert plans[3].output == [p.backchannel, *adapter.encode_text(" mm-hmm"), p.chunk_eos]


def test_tool_calls_are_grouped_and_answered_in_the_next_chunk(adapter):
    p = adapter.protocol
    executor = MockToolExecutor()
    search = {"function": "search_products", "args": {"query": "desk lamp", "max_price": 30}}
    order = {"function": "track_order", "args": {"order_id": "12345"}}
    found = executor.respond(search)
    product = found.split('"product_id": "')[1].split('"')[0]
    add = {"function": "add_to_cart", "args": {"product_id": product, "quantity": 1}}
    request = "find me a desk lamp under 30 and track order 1 2 3 4 5, then add one"
    assert call_groups([order, search, add], request, executor) == [[order, search], [add]]
    turns = [Turn("user", "request", request, 1.0, 2.2, (), True)]
    script = [{"turn": 0, "action": "tool_call", "call": c} for c in (order, search, add)]
    script.append({"turn": 0, "action": "speak_after_tools", "text": "done"})
    plans = plan_session(session(turns, script), adapter, executor)
    assert labels_of(plans)[:6] == ["listen", "listen", "tool", "tool", "speak", "listen"]
    assert plans[2].output == [p.tool_call_open, *adapter.encode_text(tool_call_text(order)), p.tool_call_close,
                               p.tool_call_open, *adapter.encode_text(tool_call_text(search)), p.tool_call_close, p.chunk_eos]
    assert plans[3].tail == adapter.tool_response_tokens(executor.respond(order)) + adapter.tool_response_tokens(found)
    assert plans[4].tail == adapter.tool_response_tokens(executor.respond(add))


def test_layout_matches_what_the_engine_feeds(adapter):
    p = adapter.protocol
    plans = [ChunkPlan(output=[p.listen]), ChunkPlan(tail=[77], output=[p.speak, 50, p.chunk_eos])]
    tokens, labels = layout([9, 9], plans, p, embeds_per_chunk=2)
    assert tokens == [9, 9, p.unit_open, AUDIO, AUDIO, p.listen, p.unit_close, p.unit_open, AUDIO, AUDIO, 77,
                      p.speak, 50, p.chunk_eos]
    assert labels == [IGNORE, IGNORE, IGNORE, IGNORE, p.listen, IGNORE, IGNORE, IGNORE, IGNORE, IGNORE, p.speak,
                      50, p.chunk_eos, IGNORE]


# ------------------------------------------------------------------------------------------ drawn phrasings

REPLIES = ("The capital of Peru is Lima.", "Lima is the capital of Peru.", "It's Lima, in Peru.")
NODS = ("mm-hmm", "I see", "okay")
PLAN_BEFORE_VARIANTS = "8b13e368a1311aa2"  # the plans of the shipped mini corpus before plan_session took an rng


def spoken(adapter, plans) -> list[str]:
    """The text of every reply (speak units joined up to their turn end) and backchannel, in order."""
    p, texts, current = adapter.protocol, [], []
    for plan in plans:
        if plan.label == "backchannel":
            texts.append(adapter.decode_tokens(plan.output[1:-1]).strip())
        elif plan.label == "speak":
            current += plan.output[1:-1]
            if p.turn_eos in current:
                texts.append(adapter.decode_tokens([t for t in current if t != p.turn_eos]).strip())
                current = []
    return texts


def varied_session():
    turns = [Turn("user", "statement", "story", 1.0, 5.0), Turn("user", "request", "q", 8.0, 9.0, (), True)]
    script = [{"turn": 0, "action": "backchannel", "text": NODS[0], "at_s": 2.0, "variants": list(NODS[1:])},
              {"turn": 0, "action": "speak", "text": REPLIES[0], "variants": list(REPLIES[1:])},
              {"turn": 1, "action": "speak", "text": REPLIES[0], "variants": list(REPLIES[1:])}]
    return session(turns, script, duration=16.0)


def test_without_rng_every_action_says_its_text_as_before(adapter):
    executor = MockToolExecutor()
    with_variants = varied_session()
    plain = session(with_variants.turns, [{k: v for k, v in a.items() if k != "variants"}
                                          for a in with_variants.expected["script"]], 16.0)
    plans = plan_session(with_variants, adapter, executor)
    assert plans == plan_session(plain, adapter, executor)
    assert plans == plan_session(plain, adapter, executor, rng=np.random.default_rng(3))  # nothing to draw from
    assert spoken(adapter, plans) == [NODS[0], REPLIES[0], REPLIES[0]]


def test_the_plans_of_the_shipped_corpus_are_unchanged(adapter):
    digest = hashlib.sha256()
    for s in load_manifest(resource_path("manifests/ticktock-mini/manifest.jsonl")):
        for plan in plan_session(s, adapter, MockToolExecutor()):
            digest.update(repr((plan.tail, plan.output, plan.label)).encode())
    assert digest.hexdigest()[:16] == PLAN_BEFORE_VARIANTS


def test_an_rng_draws_every_phrasing_independently_per_action_and_the_same_for_the_same_seed(adapter):
    executor = MockToolExecutor()
    draws = [tuple(spoken(adapter, plan_session(varied_session(), adapter, executor, rng=np.random.default_rng(seed))))
             for seed in range(40)]
    assert all(nod in NODS and first in REPLIES and second in REPLIES for nod, first, second in draws)
    assert {d[0] for d in draws} == set(NODS) and {d[1] for d in draws} == {d[2] for d in draws} == set(REPLIES)
    assert any(first != second for _, first, second in draws)  # each action draws on its own
    again = tuple(spoken(adapter, plan_session(varied_session(), adapter, executor, rng=np.random.default_rng(7))))
    assert again == draws[7]


def test_framing_opens_and_closes_only_drawn_replies_and_keeps_their_words(adapter):
    executor = MockToolExecutor()
    framing = ReplyVariety(framing=0.6)
    assert plan_session(varied_session(), adapter, executor, variety=framing) == plan_session(varied_session(), adapter,
                                                                                              executor)  # no rng: scripted
    forms = Counter()
    for seed in range(200):
        nod, *replies = spoken(adapter, plan_session(varied_session(), adapter, executor, np.random.default_rng(seed), framing))
        assert nod in NODS  # backchannels are never framed
        for reply in replies:
            core = [r for r in REPLIES if r in reply]
            assert len(core) == 1, reply
            head, tail = reply.split(core[0])
            assert head.strip() in ("", *OPENERS) and tail.strip() in ("", *CLOSERS), reply
            forms["opener" if head.strip() else "bare"] += 1
            forms["closer"] += bool(tail.strip())
            assert len(speak_units(adapter, reply)) <= max(len(speak_units(adapter, r)) for r in REPLIES)  # it fits
    assert forms["opener"] > 40 and forms["bare"] > forms["opener"] / 8
    again = spoken(adapter, plan_session(varied_session(), adapter, executor, np.random.default_rng(5), framing))
    assert again == spoken(adapter, plan_session(varied_session(), adapter, executor, np.random.default_rng(5), framing))


def reply_frames(adapter, variety, seeds=range(300)) -> Counter:
    """How often each opener (and "bare") opens the drawn replies of ``varied_session``, checking each reply's words."""
    executor, openers = MockToolExecutor(), Counter()
    for seed in seeds:
        _, *replies = spoken(adapter, plan_session(varied_session(), adapter, executor, np.random.default_rng(seed), variety))
        for reply in replies:
            [core] = [r for r in REPLIES if r in reply]
            head, tail = reply.split(core)
            assert tail.strip() in ("", *WIDE_CLOSERS), reply
            openers[head.strip() or "bare"] += 1
    return openers


def test_wide_frames_spread_a_reply_over_many_openers_and_basic_ones_stay_as_before(adapter):
    assert set(OPENERS) < set(WIDE_OPENERS) and len(set(WIDE_OPENERS)) == len(WIDE_OPENERS) == 24
    assert set(CLOSERS) < set(WIDE_CLOSERS) and all(f.strip()[-1] in ".?!" for f in WIDE_OPENERS + WIDE_CLOSERS)
    executor = MockToolExecutor()
    basic = [plan_session(varied_session(), adapter, executor, np.random.default_rng(s), ReplyVariety(0.6)) for s in range(30)]
    assert basic == [plan_session(varied_session(), adapter, executor, np.random.default_rng(s),
                                  ReplyVariety(0.6, frames="basic")) for s in range(30)]  # the default, as before
    narrow, wide = reply_frames(adapter, ReplyVariety(1.0)), reply_frames(adapter, ReplyVariety(1.0, frames="wide"))
    assert set(narrow) <= {"bare", *OPENERS} and set(wide) <= {"bare", *WIDE_OPENERS}
    assert len(set(wide) - {"bare", *OPENERS}) >= 12  # the new openers are drawn
    top = lambda counts: max(n for form, n in counts.items() if form != "bare")  # noqa: E731
    assert top(wide) < top(narrow) / 2  # no opener is nearly as likely as with the 8 basic ones
    with pytest.raises(ValueError, match="frames: expected one of \\['basic', 'wide'\\], got 'nope'"):
        ReplyVariety(0.5, frames="nope")


LONG_REPLIES = ("It is Lima. It is in Peru. It is old.", "Lima it is. Peru has it. Very old.",
                "The answer: Lima. In Peru. An old one.", "Lima, the capital of Peru.")


def test_mixing_rebuilds_drawn_replies_sentence_by_sentence_from_phrasings_of_as_many_sentences(adapter):
    executor = MockToolExecutor()
    turns = [Turn("user", "request", "q", 1.0, 2.0, (), True)]
    long_session = session(turns, [{"turn": 0, "action": "speak", "text": LONG_REPLIES[0],
                                    "variants": list(LONG_REPLIES[1:])}], duration=20.0)
    three = [sentences(r) for r in LONG_REPLIES[:3]]
    room = max(len(speak_units(adapter, r)) for r in LONG_REPLIES)
    mixing = ReplyVariety(mixing=0.7)
    said = Counter()
    for seed in range(200):
        [reply] = spoken(adapter, plan_session(long_session, adapter, executor, np.random.default_rng(seed), mixing))
        parts = sentences(reply)
        assert reply == LONG_REPLIES[3] or (len(parts) == 3 and all(parts[i] in {t[i] for t in three} for i in range(3)))
        assert len(speak_units(adapter, reply)) <= room  # it fits the session
        said[reply] += 1
    assert len(said) > 8 and set(LONG_REPLIES) <= set(said)  # new combinations, and every phrasing still whole
    assert said[LONG_REPLIES[3]] > 30  # a one-sentence phrasing is never mixed (drawn a quarter of the time)
    no_mixing = [plan_session(long_session, adapter, executor, np.random.default_rng(seed), ReplyVariety(mixing=0.0))
                 for seed in range(20)]
    assert no_mixing == [plan_session(long_session, adapter, executor, np.random.default_rng(seed)) for seed in range(20)]
    assert {spoken(adapter, p)[0] for p in no_mixing} <= set(LONG_REPLIES)  # whole phrasings only
    again = plan_session(long_session, adapter, executor, np.random.default_rng(11), mixing)
    assert again == plan_session(long_session, adapter, executor, np.random.default_rng(11), mixing)


def test_mixing_keeps_every_name_and_number_once_and_one_counting_style():
    booking = {"text": "Ann is booked on AC721. The number is BK1.",
               "variants": ["Done. Ann has AC721, number BK1.", "Ann flies AC721. Booking BK1.", "Ann is on AC721. It is BK1."]}
    tips = {"text": "First, sleep. Second, eat. Third, walk.",
            "variants": ["One, sleep well. Two, eat well. Three, walk.", "First, rest. Second, food. Third, a walk."]}
    said = set()
    for seed in range(100):
        for action in (booking, tips):
            for text in (action["text"], *action["variants"]):
                reply = mixed(action, text, np.random.default_rng(seed), 1.0)
                said.add(reply)
                if action is booking:
                    assert [reply.count(value) for value in ("Ann", "AC721", "BK1")] == [1, 1, 1], reply
                    assert reply.startswith("Done.") == text.startswith("Done.")  # no peer: never mixed
                else:
                    assert ("First," in reply) != ("One," in reply) and ("Two," in reply) == ("One," in reply), reply
    assert "Ann flies AC721. The number is BK1." in said and "First, rest. Second, eat. Third, a walk." in said


def test_wording_redraws_ordinary_words_among_their_forms_and_keeps_names_numbers_and_capitals():
    text = "It is big, so I will start now. Big Ben moves people's 12 feet. Choose a main road."
    said = Counter()
    for seed in range(200):
        reply = worded(text, np.random.default_rng(seed), 1.0)
        assert reply == worded(text, np.random.default_rng(seed), 1.0)  # deterministic per generator
        assert "Big Ben" in reply and "people's 12 feet" in reply, reply  # a name, a possessive, a number
        assert reply.startswith(("It is ", "It's ")) and (" I will " in reply or " I'll " in reply), reply
        assert reply.count(".") == 3, reply
        said.update(set(reply.replace(",", " ").replace(".", " ").split()))
    assert all(said[form] > 30 for form in ("big", "large", "start", "begin", "Choose", "Pick", "main", "chief")), said
    assert worded(text, np.random.default_rng(0), 0.0) == text
    assert worded(text, np.random.default_rng(0), 1.0, fits=lambda t: len(t) <= len(text) - 50) == text  # too long
    forms = [form for group in WORDINGS for form in group]
    assert len(forms) == len(set(forms)) and all(form == form.lower() for form in forms)


def test_a_drawn_phrasing_keeps_the_timing_of_the_plan(adapter):
    """Where each reply starts does not depend on the phrasing (only how many units it takes)."""
    executor = MockToolExecutor()
    plain = plan_session(varied_session(), adapter, executor)
    drawn = plan_session(varied_session(), adapter, executor, rng=np.random.default_rng(1))
    first_units = lambda plans: [i for i, p in enumerate(plans) if p.label != "listen"
                                 and (i == 0 or plans[i - 1].label == "listen")]
    assert first_units(drawn) == first_units(plain)


def test_the_oracle_policy_with_drawn_phrasings_scores_perfectly_on_a_generated_corpus(embedded_adapter, tmp_path):
    """Every phrasing keeps the answer and the tool values, and fits the session: drawn plans score like the text
    (mixed, worded and framed ones too)."""
    from ticktock.corpus.splits import EVAL_SEED_LIMIT
    from ticktock.corpus.synth import generate
    from ticktock.corpus.tasks import BUILDERS
    from ticktock.world.injection import parse_tool_call
    from ticktock.world.scoring import rates, score_session

    adapter, executor = embedded_adapter, MockToolExecutor()
    total = Counter()
    for s in generate(tmp_path, list(BUILDERS), "train", EVAL_SEED_LIMIT, 4):
        rows = []
        plans = plan_session(s, adapter, executor, rng=np.random.default_rng(session_seed(s)),
                             variety=ReplyVariety(framing=0.6, mixing=0.6, wording=1.0))
        for span, plan in zip(s.chunk_spans(), plans):
            calls = [parse_tool_call(t) for t in adapter.tool_call_texts(plan.output)]
            rows.append({"chunk_index": span.index, "start_s": span.start_s, "arrival_s": span.end_s,
                         "kind": adapter.protocol.kind_of(plan.output), "output_text": adapter.decode_tokens(plan.output),
                         "tool_calls_json": json.dumps(calls) if calls else ""})
        turns = [{"speaker": t.speaker, "role": t.role, "start_s": t.start_s, "end_s": t.end_s,
                  "expects_response": t.expects_response} for t in s.turns]
        total += score_session(rows, s.expected, turns)
    measured = rates(total)
    assert set(measured) >= {"qa", "tool_strict", "respond", "stop", "keep", "backchannel", "false_speak"}
    assert all(value == 1.0 for name, value in measured.items() if name != "false_speak"), measured
    assert measured["false_speak"] == 0.0


def session_seed(session) -> int:
    return int(hashlib.sha256(session.session_id.encode()).hexdigest()[:8], 16)
