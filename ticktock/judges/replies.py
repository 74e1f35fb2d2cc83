"""The replies of a replayed run, as judges see them: one :class:`~ticktock.judges.base.Reply` per user turn
that expects a response, in every session of the run.

The request is the turn's transcript (``text`` of the session's ``turns_json``), the reply is the model's
speech after the turn (``ticktock.world.scoring.reply_text``: the same span the QA score reads) and the references are
the manifest's reference answer and aliases for that turn (``ticktock.world.scoring.turn_answers``). Pure functions
over the result tables: no torch, no model.

Example::

    >>> import json
    >>> session = {"session_id": "s0", "task": "llama_questions", "expected_json": json.dumps(
    ...     {"reference_answer": "Paris", "answer_aliases": []}), "turns_json": json.dumps([
    ...     {"speaker": "user", "role": "request", "text": "What is the capital of France?",
    ...      "start_s": 0.0, "end_s": 1.0, "expects_response": True}])}
    >>> chunks = [{"chunk_index": 1, "start_s": 1.0, "arrival_s": 2.0, "kind": "speak", "output_text": "Paris."},
    ...           {"chunk_index": 0, "start_s": 0.0, "arrival_s": 1.0, "kind": "listen", "output_text": ""}]
    >>> [(r.turn_index, r.request, r.reply, r.references) for r in session_replies("run-1", session, chunks)]
    [(0, 'What is the capital of France?', 'Paris.', ('Paris',))]
"""

from __future__ import annotations

import json

from ticktock.judges.base import Reply
from ticktock.world.scoring import reply_text, turn_answers

REPLY_COLUMNS = ["chunk_index", "start_s", "arrival_s", "kind", "output_text"]


def references_by_turn(expected: dict) -> dict[int, tuple[str, ...]]:
    """turn index -> (reference answer, aliases...) of the session's expectations."""
    found = {}
    for answer in turn_answers(expected):
        if answer.get("turn") is not None and answer.get("reference_answer"):
            texts = [answer["reference_answer"], *answer.get("answer_aliases", [])]
            found[int(answer["turn"])] = tuple(str(t) for t in texts if t)
    return found


def session_replies(run_id: str, session: dict, chunks: list[dict]) -> list[Reply]:
    """The replies of one session (a sessions.parquet row as a dict) from its chunk rows (any order)."""
    turns = json.loads(session.get("turns_json") or "[]")
    references = references_by_turn(json.loads(session.get("expected_json") or "{}"))
    chunks = sorted(chunks, key=lambda c: c["chunk_index"])
    return [Reply(run_id, str(session["session_id"]), str(session.get("task") or ""), i, str(turn.get("text") or ""),
                  reply_text(chunks, turns, i).strip(), references.get(i, ()))
            for i, turn in enumerate(turns) if turn["speaker"] == "user" and turn.get("expects_response")]


def run_replies(run) -> list[Reply]:
    """Every reply of a run (``ticktock.tables.load.Run``), session by session in the run's order."""
    by_session = {sid: group for sid, group in run.chunks.groupby("session_id", sort=False)}
    replies = []
    for session in run.sessions.to_dict("records"):
        group = by_session.get(session["session_id"])
        if group is not None:
            replies += session_replies(run.run_id, session, group[REPLY_COLUMNS].to_dict("records"))
    return replies
