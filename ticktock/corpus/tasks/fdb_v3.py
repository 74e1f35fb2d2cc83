"""Full-Duplex-Bench v3 style voice tool calling (``fdb_v3``): one spoken request per session, 1-3 calls.

Difficulty rotates easy (1 call), medium (2), hard (3). The request is rendered with disfluencies of the
five FDB v3 kinds: fillers ("um", "uh"), pauses (a complete-sounding request, then a detail after
0.5-1.5 s: "Find me a flight to Tokyo. ... On Friday, please."), hesitations ("find me, find me ..."),
false starts ("Could you look up the, um, ...") and self-corrections ("Paris, no, sorry, Rome"; the
expected call uses the corrected value and ``behaviour.state_rollback`` records both).

The script issues the calls after the request ends, then speaks an answer rendered from the mock results
(its ``variants``: the same values in other words).

Example::

    >>> from ticktock.corpus.tasks.base import ItemDealer, SessionContext
    >>> script = build_fdb_v3(SessionContext("fdb_v3", "eval", 0, 1, ItemDealer("fdb_v3", "eval", 0)))
    >>> [a["action"] for a in script.actions]
    ['tool_call', 'tool_call', 'speak_after_tools']
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from ticktock.corpus.script import At, PauseSpans, Piece, SessionScript, Utterance, lead_in, reply_end
from ticktock.corpus.tasks.base import SessionContext
from ticktock.corpus.tasks.tool_requests import SCENARIOS, ToolRequest

DIFFICULTY_CYCLE = ("easy", "medium", "hard")
FILLERS = ("Um,", "Uh,", "So, um,", "Hmm,")
CORRECTIONS = ("{wrong}, no, sorry, {right}", "{wrong}, I mean {right}", "{wrong}, uh, actually, {right}")
FALSE_STARTS = ("Can you check my,", "I want to cancel, no, wait.", "Could you look up the, um,",
                "So I was going to,", "Is it possible to, actually,")


@dataclass(frozen=True)
class RenderedRequest:
    pieces: tuple[Piece, ...]
    disfluencies: tuple[str, ...]
    state_rollback: dict | None


def _decapitalize(text: str) -> str:
    first = text.split(" ", 1)[0]
    return text if first == "I" or first.startswith("I'") else text[:1].lower() + text[1:]


def _capitalize(text: str) -> str:
    return text[:1].upper() + text[1:]


def render_request(request: ToolRequest, rng: random.Random) -> RenderedRequest:
    """Say ``request`` with randomly chosen disfluencies (at least one).

    Example::

        >>> from ticktock.corpus.tasks.tool_requests import flight_search
        >>> rendered = render_request(flight_search(random.Random(0)), random.Random(4))
        >>> rendered.disfluencies, [p.text for p in rendered.pieces]
        (('filler', 'pause', 'false_start', 'self_correction'), ['So I was going to,', 'Um, find me a flight to Boston, no, sorry, Chicago.', 'On Sunday, please.'])
    """
    features: list[str] = []
    slot_text, rollback = _slot_text(request, rng, features)
    main = request.main.format(slot=slot_text)
    detail = _capitalize(request.detail.format(slot=slot_text)) if request.detail else ""
    if rng.random() < 0.25:
        lead = " ".join(main.split()[:2]).rstrip(",.?")
        main = f"{lead}, {_decapitalize(main)}"
        features.append("hesitation")
    if rng.random() < 0.5 or not (features or detail):
        main = f"{rng.choice(FILLERS)} {_decapitalize(main)}"
        features.append("filler")
    pieces: list[Piece] = []
    if rng.random() < 0.2:
        pieces.append(Piece(rng.choice(FALSE_STARTS), round(rng.uniform(0.3, 0.7), 3)))
        main = _decapitalize(main) if main.split(" ", 1)[0] not in ("Um,", "Uh,", "Hmm,", "So,") else main
        features.append("false_start")
    if detail and (rng.random() < 0.7 or not features):
        pieces += [Piece(main, round(rng.uniform(0.5, 1.5), 3)), Piece(detail)]
        features.append("pause")
    else:
        pieces.append(Piece(f"{main} {detail}".strip()))
    order = ("filler", "pause", "hesitation", "false_start", "self_correction")
    return RenderedRequest(tuple(pieces), tuple(sorted(features, key=order.index)), rollback)


def _slot_text(request: ToolRequest, rng: random.Random, features: list[str]) -> tuple[str, dict | None]:
    slot = request.slot
    if slot is None:
        return "", None
    if rng.random() >= 0.35:
        return slot.said, None
    features.append("self_correction")
    text = rng.choice(CORRECTIONS).format(wrong=slot.wrong_said, right=slot.said)
    return text, {"original": {slot.arg: slot.wrong_value}, "corrected": {slot.arg: slot.value}}


def build_fdb_v3(ctx: SessionContext) -> SessionScript:
    """One tool request of the session's difficulty; calls, then the answer from their results."""
    difficulty = DIFFICULTY_CYCLE[ctx.index % len(DIFFICULTY_CYCLE)]
    scenarios = SCENARIOS[difficulty]
    name = ctx.dealer.deal(f"scenarios/{difficulty}", sorted(scenarios))
    request: ToolRequest = ctx.dealer.draw(ctx.rng, scenarios[name], lambda r: r.id)
    rendered = render_request(request, ctx.rng)
    actions = [{"turn": 0, "action": "tool_call", "call": call} for call in request.calls]
    actions.append({"turn": 0, "action": "speak_after_tools", "text": request.answer, "tool_results": list(request.results),
                    "variants": list(request.variants)})
    behaviour = {
        "type": "tool_calling",
        "scenario": request.scenario,
        "difficulty": difficulty,
        "disfluencies": list(rendered.disfluencies),
        "state_rollback": rendered.state_rollback,
        "pause_spans": PauseSpans((0,)),
        "respond_after_s": [At(0, "end")],
    }
    return SessionScript(
        task=ctx.task,
        item=request.id,
        item_parts=(request.id,),
        utterances=(Utterance("user", "request", rendered.pieces, lead_in(ctx.rng), True),),
        actions=tuple(actions),
        behaviour=behaviour,
        busy_until=(reply_end(0, request.answer, tool_calls=len(request.calls)),),
        tool_calls=request.calls,
        uses_tools=True,
    )
