"""Task scores of a replayed session, computed from its result rows and the manifest's expectations.

Pure functions over plain Python data (no torch, no model): the inputs are one session's chunk rows
(dicts with chunk_index, start_s, arrival_s, kind, output_text, tool_calls_json) and the manifest's
``expected`` and ``turns`` (as stored in sessions.parquet). Every metric is a count pair (hits, trials) so
that rates can be pooled over sessions.

- ``qa``: for every answered question (``expected.answers``), the reference answer (or an alias) appears
  in the model's spoken reply to that turn (normalised: lower case, punctuation removed).
- ``tool_strict``: the session's tool calls equal the expected calls (FDB v3 strict pass: every expected
  call with the right arguments, nothing missing, nothing extra); ``tool_args``: expected calls matched
  with exactly right arguments; ``tool_json``: tool-call spans that are valid calls.
- ``respond``: user turns expecting a response that get one (speech or a tool call) within 2 chunks after
  the turn ends; ``false_speak``: chunks that arrive while the user is still in the middle of a turn
  addressed to the model (pauses included) in which the model speaks (barge-in allowance aside);
  ``pause``: mid-utterance pauses (``behaviour.pause_spans``, e.g. Full-Duplex-Bench v1 pause handling) that
  the model waits through: no response in the chunks that arrive during the pause (a pause too short to
  hold a chunk arrival is no trial); ``stop``: barge-ins after which the model stops within 2 chunks; ``keep``: user
  backchannels / side talk during a reply that the model speaks through; ``ignore``: side talk and
  background speech (while listening) that get no response; ``backchannel``: scripted backchannel
  opportunities where the model backchannels within 2 chunks.
- ``backchannel_jsd``: where the session carries ground-truth backchannel timing
  (``behaviour.backchannel_distribution``, Full-Duplex-Bench v1's ``icc_gt_distribution.json``), the
  official Jensen-Shannon distance between the model's backchannel windows and it (1 when the model never
  backchannels). Not a rate: its "hits" add up distances, so the pooled value is the mean distance, and
  lower is better.

Example::

    >>> normalise("The capital of France is Paris.")
    'the capital of france is paris'
    >>> calls_match({"function": "f", "args": {"n": "2", "s": "Tokyo"}}, {"function": "f", "args": {"n": 2, "s": "tokyo"}})
    True
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter

SPECIAL = re.compile(r"<\|[a-z_]+\|>|</?(?:unit|tool_call|tool_response)>")
ADDRESSED_ROLES = ("request", "statement", "interruption")
WINDOW_CHUNKS = 2  # response windows, in chunks after the event's chunk (in seconds: response_window_s)


def response_window_s(chunks: list[dict]) -> float:
    """``WINDOW_CHUNKS`` chunks in seconds at this session's chunk duration, read from its rows: the longest
    chunk after the first (the first may be longer than the others, the last cut short).

    >>> response_window_s([{"start_s": 0.0, "arrival_s": 1.25}, {"start_s": 1.25, "arrival_s": 1.75},
    ...                    {"start_s": 1.75, "arrival_s": 2.0}])
    1.0
    """
    spans = [c["arrival_s"] - c["start_s"] for c in (chunks[1:] or chunks)]
    return WINDOW_CHUNKS * max(spans, default=1.0)


def normalise(text: str) -> str:
    text = SPECIAL.sub(" ", text).lower()
    text = re.sub(r"[^a-z0-9.:]+", " ", text)
    text = re.sub(r"(?<![0-9])[.:]|[.:](?![0-9])", " ", text)
    return " ".join(text.split())


def speech(chunk: dict) -> str:
    """The spoken text of a speak unit (units split words: join them without separators)."""
    return SPECIAL.sub("", chunk["output_text"]) if chunk["kind"] == "speak" else ""


def _value(v):
    if isinstance(v, bool) or v is None:
        return v
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, str):
        try:
            return float(v)
        except ValueError:
            return " ".join(v.lower().replace("_", " ").split())
    return json.dumps(v, sort_keys=True)


def calls_match(made: dict, expected: dict) -> bool:
    """Same function and the same arguments (strings case-insensitive, numbers by value)."""
    if made.get("function") != expected["function"]:
        return False
    args, want = made.get("args") or {}, expected["args"]
    return set(args) == set(want) and all(_value(args[k]) == _value(want[k]) for k in want)


def first_chunk_at_or_after(chunks: list[dict], time_s: float) -> int:
    """Index (in ``chunks``) of the chunk whose audio contains ``time_s`` (or the last one)."""
    for i, c in enumerate(chunks):
        if c["arrival_s"] > time_s:
            return i
    return len(chunks) - 1


def reply_text(chunks: list[dict], turns: list[dict], index: int) -> str:
    """The model's spoken reply to turn ``index``: the speech of the chunks that arrive after the turn ends and
    up to the response window after the next user turn that expects a response (chunks ordered by chunk_index).

    >>> turns = [{"speaker": "user", "start_s": 0.0, "end_s": 1.0, "expects_response": True},
    ...          {"speaker": "user", "start_s": 3.0, "end_s": 4.0, "expects_response": True}]
    >>> rows = [{"start_s": s, "arrival_s": s + 1.0, "kind": k, "output_text": t}
    ...         for s, k, t in [(0.0, "listen", ""), (1.0, "speak", "Paris"), (2.0, "speak", "."), (5.0, "speak", "Rome")]]
    >>> reply_text(rows, turns, 0), reply_text(rows, turns, 1)
    ('Paris.', 'Rome')
    """
    turn = turns[index]
    later = [t["start_s"] for t in turns[index + 1 :] if t["speaker"] == "user" and t.get("expects_response")]
    stop = (min(later) + response_window_s(chunks)) if later else math.inf
    return "".join(speech(c) for c in chunks if turn["end_s"] < c["arrival_s"] <= stop)


def score_qa(chunks, expected, turns) -> Counter:
    score = Counter()
    for answer in turn_answers(expected):
        if answer.get("turn") is None or answer["turn"] >= len(turns):
            continue
        reply = normalise(reply_text(chunks, turns, answer["turn"]))
        options = [answer["reference_answer"], *answer.get("answer_aliases", [])]
        score["qa_trials"] += 1
        score["qa_hits"] += any(f" {normalise(o)} " in f" {reply} " for o in options if normalise(o))
    return score


def turn_answers(expected: dict) -> list[dict]:
    """The reference answers of a session's manifest expectations, one per answered turn (``turn``,
    ``reference_answer``, ``answer_aliases``): ``expected.answers``, or a single ``reference_answer`` for turn 0.

    >>> turn_answers({"reference_answer": "Paris", "answer_aliases": ["paris, france"]})
    [{'turn': 0, 'reference_answer': 'Paris', 'answer_aliases': ['paris, france']}]
    """
    return expected.get("answers") or _single_answer(expected)


def _single_answer(expected) -> list[dict]:
    if not expected.get("reference_answer"):
        return []
    return [{"turn": 0, "reference_answer": expected["reference_answer"], "answer_aliases": expected.get("answer_aliases", [])}]


def score_tools(chunks, expected) -> Counter:
    want = expected.get("tool_calls") or []
    made_raw = [call for c in chunks if c.get("tool_calls_json") for call in json.loads(c["tool_calls_json"])]
    if not want and not made_raw:
        return Counter()
    made = [c for c in made_raw if c is not None]
    score = Counter(tool_json_trials=len(made_raw), tool_json_hits=len(made))
    unmatched = list(made)
    for call in want:
        hit = next((m for m in unmatched if calls_match(m, call)), None)
        score["tool_args_trials"] += 1
        if hit is not None:
            score["tool_args_hits"] += 1
            unmatched.remove(hit)
    if want:
        score["tool_strict_trials"] += 1
        score["tool_strict_hits"] += int(score["tool_args_hits"] == len(want) and not unmatched)
    return score


def _responds(kind: str) -> bool:
    return kind in ("speak", "tool")


def score_turn_taking(chunks, expected, turns) -> Counter:
    score = Counter()
    behaviour = expected.get("behaviour") or {}
    actions = expected.get("script") or []
    for i, turn in enumerate(turns):
        if turn["speaker"] == "user" and turn.get("expects_response"):
            first = first_chunk_at_or_after(chunks, turn["end_s"])
            window = chunks[first : first + WINDOW_CHUNKS + 1]
            score["respond_trials"] += 1
            score["respond_hits"] += any(_responds(c["kind"]) for c in window)
    barge = behaviour.get("barge_in_s")
    if barge is not None:
        start = first_chunk_at_or_after(chunks, barge)
        if start > 0 and chunks[start - 1]["kind"] == "speak":
            score["stop_trials"] += 1
            score["stop_hits"] += any(c["kind"] in ("listen", "interrupt") for c in chunks[start : start + WINDOW_CHUNKS + 1])
    for i, c in enumerate(chunks):
        turn = _addressing_turn(c, turns)
        if turn is None or _finishing_reply(chunks, i, turn):
            continue
        score["false_speak_trials"] += 1
        score["false_speak_hits"] += c["kind"] == "speak"
    for action in actions:
        turn = turns[action["turn"]] if action["turn"] < len(turns) else None
        if turn is None:
            continue
        if action["action"] == "keep_speaking":
            start = first_chunk_at_or_after(chunks, turn["start_s"])
            if start > 0 and chunks[start - 1]["kind"] == "speak":
                score["keep_trials"] += 1
                score["keep_hits"] += chunks[start]["kind"] == "speak"
        elif action["action"] == "ignore":
            start = first_chunk_at_or_after(chunks, turn["start_s"])
            if start > 0 and chunks[start - 1]["kind"] == "speak":
                continue  # during a reply: counted as keep-speaking behaviour, not as a new response
            if _overlaps_a_request(turn, turns, response_window_s(chunks)):
                continue  # a response then answers the request, not the side talk
            end = first_chunk_at_or_after(chunks, turn["end_s"])
            score["ignore_trials"] += 1
            score["ignore_hits"] += not any(_responds(c["kind"]) for c in chunks[start : end + WINDOW_CHUNKS + 1])
        elif action["action"] == "backchannel":
            start = first_chunk_at_or_after(chunks, action["at_s"])
            score["backchannel_trials"] += 1
            score["backchannel_hits"] += any(c["kind"] == "backchannel" for c in chunks[start : start + WINDOW_CHUNKS + 1])
    return score


def score_pauses(chunks, expected) -> Counter:
    """``pause`` trials: every pause span with a chunk arriving inside it; a hit when none of those responds."""
    score = Counter()
    for start, end in (expected.get("behaviour") or {}).get("pause_spans") or []:
        inside = [c for c in chunks if start < c["arrival_s"] <= end]
        if inside:
            score["pause_trials"] += 1
            score["pause_hits"] += not any(_responds(c["kind"]) for c in inside)
    return score


def _overlaps_a_request(turn, turns, window: float) -> bool:
    """Side talk or background that overlaps a request's span or its response window (``window`` s after it)."""
    return any(
        t is not turn and t["speaker"] == "user" and t.get("expects_response")
        and turn["start_s"] < t["end_s"] + window and t["start_s"] < turn["end_s"] + window
        for t in turns
    )


def _addressing_turn(chunk, turns) -> dict | None:
    """The turn the user is in the middle of, addressed to the model, when this chunk arrives (a request,
    statement or barge-in that has started and not ended; pauses inside it included). A reply that starts
    in the chunk where the turn ends is on time, not a false start."""
    for t in turns:
        if t["speaker"] == "user" and t["role"] in ADDRESSED_ROLES and t["start_s"] < chunk["arrival_s"] < t["end_s"]:
            return t
    return None


def _finishing_reply(chunks, index, turn) -> bool:
    """Barge-in handling: the chunk continues a reply the model began before the user's turn started, within
    the allowance of 2 chunks after that start (whether the model then stops is what ``stop`` measures)."""
    first = index
    while first > 0 and chunks[first - 1]["kind"] == "speak":
        first -= 1
    began_before = chunks[first]["start_s"] < turn["start_s"]
    return chunks[index]["kind"] == "speak" and began_before and index <= first_chunk_at_or_after(chunks, turn["start_s"]) + WINDOW_CHUNKS


BACKCHANNEL_EPSILON = 1e-10  # added to every window of the model's distribution, as the official evaluation does


def backchannel_distribution(chunks: list[dict], window_s: float, count: int) -> list[float]:
    """The model's backchannels over ``count`` windows of ``window_s``, normalised (official binning).

    A backchannel chunk's output plays in the chunk after it arrives, ``[arrival_s, arrival_s + its length]``;
    each window from ``int(start / window_s)`` to ``int(end / window_s)`` counts it once; every window gets
    ``BACKCHANNEL_EPSILON``.

    >>> rows = [{"start_s": 0.0, "arrival_s": 0.4, "kind": "listen"}, {"start_s": 0.4, "arrival_s": 0.8, "kind": "backchannel"}]
    >>> [round(p, 3) for p in backchannel_distribution(rows, 0.4, 4)]
    [0.0, 0.0, 0.5, 0.5]
    """
    counts = [BACKCHANNEL_EPSILON] * count
    for c in chunks:
        if c["kind"] != "backchannel":
            continue
        start, end = c["arrival_s"], 2 * c["arrival_s"] - c["start_s"]
        for i in range(int(start / window_s), min(int(end / window_s), count - 1) + 1):
            counts[i] += 1
    total = sum(counts)
    return [v / total for v in counts]


def resized(values: list[float], count: int) -> list[float]:
    """``values`` linearly interpolated onto ``count`` points over the same span (as the official evaluation
    stretches the ground truth onto the model's windows).

    >>> resized([0.0, 1.0], 3)
    [0.0, 0.5, 1.0]
    """
    if count == 1 or len(values) == 1:
        return [float(values[0])] * count
    out = []
    for i in range(count):
        x = i * (len(values) - 1) / (count - 1)
        low = min(int(x), len(values) - 2)
        out.append(values[low] + (values[low + 1] - values[low]) * (x - low))
    return out


def jensen_shannon(p: list[float], q: list[float]) -> float:
    """The Jensen-Shannon distance (natural log; both normalised first), as ``scipy.spatial.distance.jensenshannon``.

    >>> round(jensen_shannon([1, 0], [0, 1]), 4), jensen_shannon([1, 1], [2, 2])
    (0.8326, 0.0)
    """
    p_total, q_total = sum(p), sum(q)
    p, q = [v / p_total for v in p], [v / q_total for v in q]
    divergence = 0.0
    for a, b in zip(p, q):
        m = (a + b) / 2
        divergence += (a * math.log(a / m) if a > 0 else 0.0) + (b * math.log(b / m) if b > 0 else 0.0)
    return math.sqrt(max(divergence / 2, 0.0))


def score_backchannel_timing(chunks, expected) -> Counter:
    """``backchannel_jsd`` of a session with ground-truth backchannel timing (nothing without): the official
    distance over windows of the session's length, the ground truth stretched onto them."""
    truth = (expected.get("behaviour") or {}).get("backchannel_distribution")
    if not truth or not truth.get("probabilities") or not chunks:
        return Counter()
    window = float(truth.get("window_s", 0.2))
    count = int(chunks[-1]["arrival_s"] / window) + 1
    if not any(c["kind"] == "backchannel" for c in chunks):
        distance = 1.0
    else:
        distance = jensen_shannon(backchannel_distribution(chunks, window, count), resized(truth["probabilities"], count))
    return Counter(backchannel_jsd_hits=distance, backchannel_jsd_trials=1)


def score_session(chunks: list[dict], expected: dict, turns: list[dict]) -> Counter:
    """All count pairs of one session (chunks ordered by chunk_index)."""
    chunks = sorted(chunks, key=lambda c: c["chunk_index"])
    return (score_qa(chunks, expected, turns) + score_tools(chunks, expected) + score_turn_taking(chunks, expected, turns)
            + score_pauses(chunks, expected) + score_backchannel_timing(chunks, expected))


def rates(counts: Counter) -> dict[str, float]:
    """hits / trials for every metric with trials."""
    names = sorted({k.rsplit("_", 1)[0] for k in counts if k.endswith("_trials")})
    return {n: counts[f"{n}_hits"] / counts[f"{n}_trials"] for n in names if counts[f"{n}_trials"]}
