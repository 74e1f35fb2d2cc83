"""Full-Duplex-Bench v1 style turn-taking sessions (``fdb_v1``), four kinds in rotation:

* pause handling: two questions, each with a 1-3 s pause at a syntactically incomplete point
  ("Could you tell me ... the capital of Peru?"); the model keeps listening through the pause.
* backchannel: a short story told with 0.6-1.0 s pauses between sentences, ending in a question; the
  model says "mm-hmm" / "I see" at the pauses (the other ``MODEL_BACKCHANNELS`` are the action's variants)
  and replies after the question.
* smooth turn-taking: three questions, each answered promptly.
* user interruption: a request with a long reply (>= 30 words); 2-3 s into the expected reply the user
  barges in with a new question; the model stops and answers it.

Example::

    >>> from ticktock.corpus.tasks.base import ItemDealer, SessionContext
    >>> script = build_fdb_v1(SessionContext("fdb_v1", "eval", 0, 1, ItemDealer("fdb_v1", "eval", 0)))
    >>> script.behaviour["type"], [a["action"] for a in script.actions][-1]
    ('backchannel', 'speak')
"""

from __future__ import annotations

from ticktock.corpus.knowledge import Question, questions
from ticktock.corpus.script import (
    At, PauseSpans, PauseStart, Piece, SessionScript, Utterance, answer, into_reply, lead_in, reply_end, speak,
    variants_of,
)
from ticktock.corpus.tasks.alpaca import instruction_items
from ticktock.corpus.tasks.base import SessionContext
from ticktock.corpus.tasks.conversation import MODEL_BACKCHANNELS, make_story
from ticktock.corpus.tasks.qa import question_pieces, question_session

def build_fdb_v1(ctx: SessionContext) -> SessionScript:
    """Session ``ctx.index`` is of kind ``KINDS[index % 4]``."""
    kinds = list(KINDS)
    return KINDS[kinds[ctx.index % len(kinds)]](ctx)


def build_pause_handling(ctx: SessionContext) -> SessionScript:
    """Two questions with mid-utterance pauses; the model answers each only after it is complete."""
    picked = [ctx.dealer.deal("pause", questions("pause", ctx.split)) for _ in range(2)]
    return question_session(ctx, picked, {"type": "pause_handling", "pause_spans": PauseSpans()})


def build_backchannel(ctx: SessionContext) -> SessionScript:
    """A story in pieces with backchannel opportunities at the pauses, then a question."""
    story = ctx.dealer.draw(ctx.rng, make_story, lambda s: s.id)
    pauses = [round(ctx.rng.uniform(0.6, 1.0), 3) for _ in story.sentences]
    pieces = tuple(Piece(text, pause) for text, pause in zip(story.sentences, pauses)) + (Piece(story.question),)
    actions = []
    for k in range(len(story.sentences)):
        word = ctx.rng.choice(MODEL_BACKCHANNELS)
        actions.append({"turn": 0, "action": "backchannel", "text": word, "at_s": PauseStart(0, k),
                        "variants": list(variants_of(word, MODEL_BACKCHANNELS))})
    actions.append(speak(0, story.reply, story.variants))
    return SessionScript(
        task=ctx.task,
        item=story.id,
        item_parts=(story.id,),
        utterances=(Utterance("user", "request", pieces, lead_in(ctx.rng), True),),
        actions=tuple(actions),
        behaviour={"type": "backchannel", "pause_spans": PauseSpans((0,)), "respond_after_s": [At(0, "end")]},
        busy_until=(reply_end(0, story.reply),),
    )


def build_smooth_turn_taking(ctx: SessionContext) -> SessionScript:
    """Three short questions, each answered promptly after it ends."""
    picked = [ctx.dealer.deal("casual", questions("casual", ctx.split)) for _ in range(3)]
    return question_session(ctx, picked, {"type": "smooth_turn_taking"})


def build_user_interruption(ctx: SessionContext, barge_group: str, prefix: str = "") -> SessionScript:
    """A long-reply request, then a barge-in question 2-3 s after the expected reply start.

    ``prefix`` is said before the barge-in question (e.g. "Sorry, different question.").
    """
    request = ctx.dealer.deal("long_replies", instruction_items(ctx.split))
    barge: Question = ctx.dealer.deal(barge_group, questions(barge_group, ctx.split))
    barge_pieces = question_pieces(barge, ctx.rng)
    if prefix:
        barge_pieces = (Piece(f"{prefix} {barge_pieces[0].text}", barge_pieces[0].pause_after_s),) + barge_pieces[1:]
    utterances = (
        Utterance("user", "request", (Piece(request.text),), lead_in(ctx.rng), True),
        Utterance("user", "interruption", barge_pieces, into_reply(0, round(ctx.rng.uniform(2.0, 3.0), 3)), True),
    )
    actions = (speak(0, request.instruction.reply, request.instruction.variants), {"turn": 1, "action": "stop"},
               speak(1, barge.reply, barge.reply_variants))
    return SessionScript(
        task=ctx.task,
        item=f"{request.id}+{barge.id}",
        item_parts=(request.id, barge.id),
        utterances=utterances,
        actions=actions,
        behaviour={"type": "user_interruption", "reply_start_s": into_reply(0, 0.0), "barge_in_s": At(1, "start"),
                   "respond_after_s": [At(0, "end"), At(1, "end")]},
        busy_until=(reply_end(1, barge.reply),),
        answers=(answer(1, barge.fact.answer, barge.fact.aliases),),
    )


KINDS = {
    "pause_handling": build_pause_handling,
    "backchannel": build_backchannel,
    "smooth_turn_taking": build_smooth_turn_taking,
    "user_interruption": lambda ctx: build_user_interruption(ctx, barge_group="barge"),
}
