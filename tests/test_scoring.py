"""Task scores on hand-made sessions (chunk rows + expectations), computed by hand."""

import json

from ticktock.world.scoring import calls_match, normalise, rates, score_session


def chunk(i, kind, text="", calls=None, chunk_s=1.0):
    return {"chunk_index": i, "start_s": i * chunk_s, "arrival_s": (i + 1) * chunk_s, "kind": kind,
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


def test_pauses_held_are_those_with_no_response_in_the_chunks_arriving_inside_them():
    # pause 1.2-3.1 holds arrivals 2.0 and 3.0 (the model speaks at 3.0: taken over); pause 5.5-6.0 holds arrival
    # 6.0 (listen: held); pause 7.1-7.8 holds no arrival: no trial.
    turns = [turn("request", 0.5, 9.0)]
    kinds = ["listen", "listen", "speak", "listen", "listen", "listen", "listen", "listen", "listen", "speak"]
    chunks = [chunk(i, k) for i, k in enumerate(kinds)]
    expected = {"behaviour": {"pause_spans": [[1.2, 3.1], [5.5, 6.0], [7.1, 7.8]]}}
    counts = score_session(chunks, expected, turns)
    assert (counts["pause_hits"], counts["pause_trials"]) == (1, 2)
    assert "pause_trials" not in score_session(chunks, {}, turns)


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


def test_windows_in_seconds_follow_the_chunk_duration():
    # 0.5 s chunks: the 2-chunk window is 1 s. The answer to question 0 arrives at 4.5 s, more than 1 s after
    # question 1 starts (3.0 s): it is not credited to question 0. The side talk at 5.6 s starts more than 1 s
    # after question 1 ends (4.0 s): it is outside that question's response window, so it is an ignore trial.
    turns = [turn("request", 0.2, 1.4), turn("request", 3.0, 4.0), turn("side_talk", 5.6, 6.4, expects=False)]
    kinds = ["listen"] * 8 + ["speak", "speak"] + ["listen"] * 6
    texts = {8: "<|speak|> Athens.<|chunk_eos|>", 9: "<|speak|> The yen.<|turn_eos|><|chunk_eos|>"}
    chunks = [chunk(i, k, texts.get(i, ""), chunk_s=0.5) for i, k in enumerate(kinds)]
    expected = {"answers": [{"turn": 0, "reference_answer": "Athens"}, {"turn": 1, "reference_answer": "yen"}],
                "script": [{"turn": 2, "action": "ignore"}]}
    counts = score_session(chunks, expected, turns)
    assert (counts["qa_hits"], counts["qa_trials"]) == (1, 2)
    assert (counts["ignore_hits"], counts["ignore_trials"]) == (1, 1)


def test_normalise_keeps_numbers_and_drops_special_tokens():
    assert normalise("<|speak|> It costs 59.99 dollars, at 09:40.<|chunk_eos|>") == "it costs 59.99 dollars at 09:40"


def official_jsd(backchannels, duration_s, truth, window_s=0.2):
    """Full-Duplex-Bench v1's backchannel JSD (eval_backchannel.py), with scipy: the reference to match."""
    import numpy as np
    from scipy.spatial.distance import jensenshannon

    if not backchannels:
        return 1.0
    bins = np.zeros(int(duration_s / window_s) + 1)
    for start, end in backchannels:
        bins[int(start / window_s) : int(end / window_s) + 1] += 1
    bins = (bins + 1e-10) / np.sum(bins + 1e-10)
    stretched = np.interp(np.linspace(0, 1, len(bins)), np.linspace(0, 1, len(truth)), truth)
    return float(jensenshannon(bins, stretched))


def test_backchannel_timing_against_the_ground_truth_distribution():
    truth = [0.0] * 10 + [0.05] * 10 + [0.0] * 20 + [0.05] * 10 + [0.0] * 11  # 61 windows of 0.2 s: 12.2 s
    expected = {"behaviour": {"type": "backchannel", "backchannel_distribution": {"window_s": 0.2, "probabilities": truth}}}
    turns = [turn("statement", 0.5, 12.0, expects=False)]
    kinds = ["listen"] * 12
    kinds[2] = kinds[8] = "backchannel"  # played during 3-4 s and 9-10 s
    chunks = [chunk(i, k) for i, k in enumerate(kinds)]
    counts = score_session(chunks, expected, turns)
    assert counts["backchannel_jsd_trials"] == 1
    assert abs(counts["backchannel_jsd_hits"] - official_jsd([(3.0, 4.0), (9.0, 10.0)], 12.0, truth)) < 1e-9
    silent = score_session([chunk(i, "listen") for i in range(12)], expected, turns)
    assert (silent["backchannel_jsd_hits"], silent["backchannel_jsd_trials"]) == (1.0, 1)
    assert "backchannel_jsd_trials" not in score_session(chunks, {"behaviour": {"type": "backchannel"}}, turns)
    assert rates(counts + silent)["backchannel_jsd"] == (counts["backchannel_jsd_hits"] + 1.0) / 2
