"""Spoken factual QA sessions: ``llama_questions``, ``web_questions``, ``trivia_qa``.

Each session asks two questions over the knowledge base; the second comes after the expected reply to the
first. The three tasks differ in their question templates (see ``ticktock.corpus.knowledge``): short
direct questions (llama), search-style phrasing about countries (web), and trivia-style phrasing (trivia).

Example::

    >>> from ticktock.corpus.tasks.base import ItemDealer, SessionContext
    >>> script = build_qa(SessionContext("trivia_qa", "eval", 0, 0, ItemDealer("trivia_qa", "eval", 0)))
    >>> len(script.utterances), [a["action"] for a in script.actions]
    (2, ['speak', 'speak'])
"""

from __future__ import annotations

from typing import Sequence

from ticktock.corpus.knowledge import Question, questions
from ticktock.corpus.script import (
    At, Piece, SessionScript, Utterance, after_reply, answer, gap, lead_in, reply_end, speak,
)
from ticktock.corpus.tasks.base import SessionContext

QA_GROUPS = {"llama_questions": "llama", "web_questions": "web", "trivia_qa": "trivia"}
QUESTIONS_PER_SESSION = 2


def build_qa(ctx: SessionContext) -> SessionScript:
    """Two knowledge questions of the task's flavour, each answered by a short scripted reply."""
    pool = questions(QA_GROUPS[ctx.task], ctx.split)
    picked = [ctx.dealer.deal("questions", pool) for _ in range(QUESTIONS_PER_SESSION)]
    return question_session(ctx, picked, {"type": "question_answering"})


def question_pieces(question: Question, rng) -> tuple[Piece, ...]:
    """The question as pieces: a 1-3 s pause at every "|" of its template."""
    parts = question.pieces_text
    pauses = [round(rng.uniform(1.0, 3.0), 3) for _ in parts[:-1]] + [0.0]
    return tuple(Piece(text, pause) for text, pause in zip(parts, pauses))


def question_session(ctx: SessionContext, picked: Sequence[Question], behaviour: dict) -> SessionScript:
    """Questions asked one after the other, each after the expected reply to the previous one.

    ``behaviour`` gets "respond_after_s" (the end of every question) added.
    """
    utterances, actions, answers = [], [], []
    start = lead_in(ctx.rng)
    for turn, question in enumerate(picked):
        utterances.append(Utterance("user", "request", question_pieces(question, ctx.rng), start, True))
        actions.append(speak(turn, question.reply, question.reply_variants))
        answers.append(answer(turn, question.fact.answer, question.fact.aliases))
        start = after_reply(turn, question.reply, gap(ctx.rng))
    last = len(picked) - 1
    return SessionScript(
        task=ctx.task,
        item="+".join(q.id for q in picked),
        item_parts=tuple(q.id for q in picked),
        utterances=tuple(utterances),
        actions=tuple(actions),
        behaviour={**behaviour, "respond_after_s": [At(t, "end") for t in range(len(picked))]},
        busy_until=(reply_end(last, picked[last].reply),),
        answers=tuple(answers),
    )
