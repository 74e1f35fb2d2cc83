"""Task scores on hand-made sessions (chunk rows + expectations), computed by hand."""

import json

from ticktock.scoring import calls_match, normalise, rates, score_session


def chunk(i, kind, text="", calls=None):
    return {"chunk_index": i, "start_s": float(i), "arrival_s": float(i + 1), "kind": kind,
            "output_text": text, "tool_calls_json": json.dumps(calls) if calls else ""}


def turn(role, start, end, expects=True, speaker="user"):
    return {"speaker": speaker, "role": role, "start_s": start, "end_s": end, "expects_response": expects}


def test_qa_joins_units_and_matches_answers_and_aliases():
    chunks = [chunk(0, "listen"), chunk(1, "listen"), chunk(2, "speak", "<|speak|> The capital of Gre<|chunk_eos|>"),
              chunk(3, "speak", "<|speak|>ece is Athens.<|turn_eos|><|chunk_eos|>"), chunk(4, "listen"),
              chunk(5, "listen"), chunk(6, "speak", "<|speak|> It is the yen.<|chunk_eos|>")]
    expected = {"answers": [{"turn": 0, "reference_answer": "Athens", "answer_aliases": []},
                            {"turn": 1, "reference_answer": "Japanese yen", "answer_aliases": ["yen"]}]}
    turns = [turn("request", 0.2, 1.8), turn("request", 4.2, 5.5)]
    counts = score_session(chunks, expected, turns)
    assert (counts["qa_hits"], counts["qa_trials"]) == (2, 2)
    assert (counts["respond_hits"], counts["respond_trials"]) == (2, 2)


def test_tool_scores_strict_args_and_json():
    want = [{"function": "track_order", "args": {"order_id": "86084"}},
            {"function": "get_exchange_rate", "args": {"amount": 1000, "from_currency": "USD", "to_currency": "GBP"}}]
    made = [{"function": "track_order", "args": {"order_id": "86084"}},
            {"function": "get_exchange_rate", "args": {"amount": "1000", "from_currency": "usd", "to_currency": "EUR"}}]
    chunks = [chunk(0, "listen"), chunk(1, "tool", "", made + [None]), chunk(2, "speak", "ok")]
    counts = score_session(chunks, {"tool_calls": want}, [turn("request", 0.1, 0.9)])
    assert (counts["tool_args_hits"], counts["tool_args_trials"]) == (1, 2)
    assert (counts["tool_strict_hits"], counts["tool_strict_trials"]) == (0, 1)
    assert (counts["tool_json_hits"], counts["tool_json_trials"]) == (2, 3)
    assert calls_match(made[0], want[0]) and not calls_match(made[1], want[1])


def test_false_starts_pauses_and_barge_in_allowance():
    # request 0.5-4.5 with a pause inside; the model speaks in chunk 2 (false start: turn still going), answers at 5.
    turns = [turn("request", 0.5, 4.5), turn("interruption", 7.5, 9.0)]
    kinds = ["listen", "listen", "speak", "listen", "listen", "speak", "speak", "speak", "speak", "interrupt", "listen"]
    chunks = [chunk(i, k, "<|speak|> x<|chunk_eos|>" if k == "speak" else "") for i, k in enumerate(kinds)]
    expected = {"behaviour": {"barge_in_s": 7.5}, "script": [{"turn": 1, "action": "stop"}]}
    counts = score_session(chunks, expected, turns)
    # trials: chunks arriving inside a turn: 0 (1.0), 1, 2, 3 (arrival 4.0) for turn 0; 7, 8 for the barge-in.
    # chunks 7 and 8 continue a reply begun before the barge-in, within the 2-chunk allowance: excused.
    assert (counts["false_speak_hits"], counts["false_speak_trials"]) == (1, 4)
    assert (counts["stop_hits"], counts["stop_trials"]) == (1, 1)


def test_keep_ignore_and_backchannel():
    turns = [turn("request", 0.2, 1.5), turn("backchannel", 3.2, 3.5, expects=False),
             turn("side_talk", 8.2, 9.5, expects=False), turn("statement", 12.0, 16.0, expects=False)]
    kinds = ["listen", "listen", "speak", "speak", "speak", "listen", "listen", "listen", "listen", "listen", "listen",
             "listen", "listen", "backchannel", "listen", "listen", "listen"]
    chunks = [chunk(i, k) for i, k in enumerate(kinds)]
    script = [{"turn": 1, "action": "keep_speaking"}, {"turn": 2, "action": "ignore"},
              {"turn": 3, "action": "backchannel", "text": "mm-hmm", "at_s": 12.6}]
    counts = score_session(chunks, {"script": script}, turns)
    assert rates(counts)["keep"] == 1.0 and rates(counts)["ignore"] == 1.0 and rates(counts)["backchannel"] == 1.0


def test_normalise_keeps_numbers_and_drops_special_tokens():
    assert normalise("<|speak|> It costs 59.99 dollars, at 09:40.<|chunk_eos|>") == "it costs 59.99 dollars at 09:40"
