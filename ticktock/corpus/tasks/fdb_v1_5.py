"""Full-Duplex-Bench v1.5 style overlap sessions (``fdb_v1_5``), four kinds in rotation:

* user interruption: as in fdb_v1, with a topic-changing barge-in ("Sorry, different question. ...").
* user backchannel: the user says "uh-huh" / "okay" / "right" 1.5-3 s into the model's long reply (and
  maybe once more later); the model keeps speaking.
* talking to others: the user says something to someone else ("Hang on, honey, ..."), either while the
  model listens (between two questions: ignore it) or while it speaks (keep speaking).
* background speech: a second voice ("other", -12 dB) says unrelated sentences over a user question or in
  the silence before it; the model never responds to it.

Example::

    >>> from ticktock.corpus.tasks.base import ItemDealer, SessionContext
    >>> script = build_fdb_v1_5(SessionContext("fdb_v1_5", "eval", 0, 3, ItemDealer("fdb_v1_5", "eval", 0)))
    >>> script.behaviour["type"], sorted({u.speaker for u in script.utterances})
    ('background_speech', ['other', 'user'])
"""

from __future__ import annotations

from ticktock.corpus.knowledge import questions
from ticktock.corpus.mixing import BACKGROUND_GAIN_DB
from ticktock.corpus.script import (
    At, Piece, SessionScript, TurnSpan, Utterance, after_reply, answer, gap, into_reply, lead_in, reply_duration_s,
    reply_end, speak,
)
from ticktock.corpus.tasks.alpaca import instruction_items
from ticktock.corpus.tasks.base import SessionContext
from ticktock.corpus.tasks.conversation import USER_BACKCHANNELS, background_lines, side_talk_lines
from ticktock.corpus.tasks.fdb_v1 import build_user_interruption
from ticktock.corpus.tasks.qa import question_pieces

KEEP_SPEAKING = "keep_speaking"


def build_fdb_v1_5(ctx: SessionContext) -> SessionScript:
    """Session ``ctx.index`` is of kind ``KINDS[index % 4]``."""
    kinds = list(KINDS)
    return KINDS[kinds[ctx.index % len(kinds)]](ctx)


def build_user_backchannel(ctx: SessionContext) -> SessionScript:
    """A long-reply request; the user backchannels once or twice during the expected reply."""
    request = ctx.dealer.deal("long_replies", instruction_items(ctx.split))
    reply = request.instruction.reply
    offsets = [round(ctx.rng.uniform(1.5, 3.0), 3)]
    later = round(offsets[0] + ctx.rng.uniform(3.0, 4.5), 3)
    if later < reply_duration_s(reply) - 2.0 and ctx.rng.random() < 0.5:
        offsets.append(later)
    utterances = [Utterance("user", "request", (Piece(request.text),), lead_in(ctx.rng), True)]
    for offset in offsets:
        word = ctx.rng.choice(USER_BACKCHANNELS)
        utterances.append(Utterance("user", "backchannel", (Piece(word.capitalize() + "."),), into_reply(0, offset)))
    turns = range(1, len(utterances))
    return SessionScript(
        task=ctx.task,
        item=request.id,
        item_parts=(request.id,),
        utterances=tuple(utterances),
        actions=(speak(0, reply, request.instruction.variants), *({"turn": t, "action": KEEP_SPEAKING} for t in turns)),
        behaviour={"type": "user_backchannel", "reply_start_s": into_reply(0, 0.0),
                   "backchannel_spans": [TurnSpan(t) for t in turns], "respond_after_s": [At(0, "end")]},
        busy_until=(reply_end(0, reply),),
    )


def build_talking_to_others(ctx: SessionContext) -> SessionScript:
    """Side talk to someone else, while the model listens (between two questions) or while it speaks."""
    line = ctx.dealer.deal("side_talk", side_talk_lines(ctx.split))
    if ctx.rng.random() < 0.5:
        return _side_talk_while_speaking(ctx, line)
    first, second = (ctx.dealer.deal("casual", questions("casual", ctx.split)) for _ in range(2))
    utterances = (
        Utterance("user", "request", question_pieces(first, ctx.rng), lead_in(ctx.rng), True),
        Utterance("user", "side_talk", (Piece(line.text),), after_reply(0, first.reply, gap(ctx.rng))),
        Utterance("user", "request", question_pieces(second, ctx.rng), At(1, "end", gap(ctx.rng)), True),
    )
    return SessionScript(
        task=ctx.task,
        item=f"{first.id}+{line.id}+{second.id}",
        item_parts=(first.id, line.id, second.id),
        utterances=utterances,
        actions=(speak(0, first.reply, first.reply_variants), {"turn": 1, "action": "ignore"},
                 speak(2, second.reply, second.reply_variants)),
        behaviour={"type": "talking_to_others", "during_reply": False, "side_talk_spans": [TurnSpan(1)],
                   "respond_after_s": [At(0, "end"), At(2, "end")]},
        busy_until=(reply_end(2, second.reply),),
        answers=(answer(0, first.fact.answer, first.fact.aliases), answer(2, second.fact.answer, second.fact.aliases)),
    )


def _side_talk_while_speaking(ctx: SessionContext, line) -> SessionScript:
    request = ctx.dealer.deal("long_replies", instruction_items(ctx.split))
    reply = request.instruction.reply
    utterances = (
        Utterance("user", "request", (Piece(request.text),), lead_in(ctx.rng), True),
        Utterance("user", "side_talk", (Piece(line.text),), into_reply(0, round(ctx.rng.uniform(2.0, 4.0), 3))),
    )
    return SessionScript(
        task=ctx.task,
        item=f"{request.id}+{line.id}",
        item_parts=(request.id, line.id),
        utterances=utterances,
        actions=(speak(0, reply, request.instruction.variants), {"turn": 1, "action": KEEP_SPEAKING}),
        behaviour={"type": "talking_to_others", "during_reply": True, "side_talk_spans": [TurnSpan(1)],
                   "reply_start_s": into_reply(0, 0.0), "respond_after_s": [At(0, "end")]},
        busy_until=(reply_end(0, reply),),
    )


def build_background_speech(ctx: SessionContext) -> SessionScript:
    """Two questions; a second voice talks over the first one or in the silence before it, and maybe
    over the second one too."""
    first, second = (ctx.dealer.deal("casual", questions("casual", ctx.split)) for _ in range(2))
    lines = [ctx.dealer.deal("background", background_lines(ctx.split)) for _ in range(3)]

    def background(texts, start: At) -> Utterance:
        return Utterance("other", "background", tuple(Piece(line.text, 0.4) for line in texts), start)

    if ctx.rng.random() < 0.5:  # over the first question
        utterances = [Utterance("user", "request", question_pieces(first, ctx.rng), lead_in(ctx.rng), True),
                      background(lines[:2], At(0, "start", round(ctx.rng.uniform(0.3, 1.2), 3)))]
        first_turn = 0
    else:  # in the silence before it
        utterances = [background(lines[:2], At(None, "start", round(ctx.rng.uniform(0.3, 1.0), 3))),
                      Utterance("user", "request", question_pieces(first, ctx.rng), At(0, "end", gap(ctx.rng, 0.3, 0.8)), True)]
        first_turn = 1
    utterances.append(Utterance("user", "request", question_pieces(second, ctx.rng),
                                after_reply(first_turn, first.reply, gap(ctx.rng)), True))
    if ctx.rng.random() < 0.5:
        utterances.append(background(lines[2:], At(2, "start", round(ctx.rng.uniform(0.2, 1.0), 3))))
    replies = {first_turn: first, 2: second}
    actions = [speak(t, replies[t].reply, replies[t].reply_variants) if t in replies else {"turn": t, "action": "ignore"}
               for t in range(len(utterances))]
    used = lines[:2] + (lines[2:] if len(utterances) == 4 else [])
    parts = (first.id, second.id, *(line.id for line in used))
    return SessionScript(
        task=ctx.task,
        item="+".join(parts),
        item_parts=parts,
        utterances=tuple(utterances),
        actions=tuple(actions),
        behaviour={"type": "background_speech", "background_level_db": BACKGROUND_GAIN_DB,
                   "background_spans": [TurnSpan(t) for t in range(len(utterances)) if t not in replies],
                   "respond_after_s": [At(first_turn, "end"), At(2, "end")]},
        busy_until=(reply_end(2, second.reply),),
        answers=tuple(answer(t, q.fact.answer, q.fact.aliases) for t, q in sorted(replies.items())),
    )


KINDS = {
    "user_interruption": lambda ctx: build_user_interruption(ctx, barge_group="casual", prefix="Sorry, different question."),
    "user_backchannel": build_user_backchannel,
    "talking_to_others": build_talking_to_others,
    "background_speech": build_background_speech,
}
