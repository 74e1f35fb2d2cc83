"""Session scripts: what is said, by whom, when, and what the model is expected to do. No audio here.

A script is a list of utterances whose start times are *anchored* to earlier utterances (``At``), because
the real durations are only known after synthesis. Times that the expected behaviour needs (a pause start,
a barge-in time) are written as references (``At``, ``PauseStart``, ``PauseSpans``, ``TurnSpan``) and
replaced by numbers in :func:`ticktock.corpus.layout.resolve` once the utterances are placed.

Reply phrasings: every model reply a script action holds (``speak``, ``speak_after_tools``,
``backchannel``) carries, next to its ``text``, a list ``variants`` of other phrasings of the same reply
(templates of the item, or authored alternatives; never drawn from the session's random generator). The
text stays the first phrasing and alone sets the session's timing; a variant keeps the answer, every
tool-result value and the kind of reply, and about the text's length (so it fits the time the script
leaves). Training targets may draw any phrasing (``ticktock.embedded.targets.plan_session``).

Reply timing model (the brief's conventions): a reply to turn i starts ``REPLY_DELAY_S`` after turn i
ends and lasts ``REPLY_WORD_S`` per word; the next user turn starts after it plus a 0.5-1.5 s gap.

Example::

    >>> reply = "The capital of France is Paris."
    >>> first = Utterance("user", "request", (Piece("What is the capital of France?"),), At(None, "start", 2.0), True)
    >>> second_start = after_reply(0, reply, gap_s=1.0)
    >>> second_start
    At(turn=0, edge='end', offset_s=3.8)
    >>> speak(0, reply, variants_of(reply, ["Paris is the capital of France.", reply]))
    {'turn': 0, 'action': 'speak', 'text': 'The capital of France is Paris.', 'variants': ['Paris is the capital of France.']}
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

from ticktock.corpus.speech import Piece

REPLY_DELAY_S = 1.0  # expected model reply onset after the end of a user turn
REPLY_WORD_S = 0.3  # expected speaking time per reply word
TOOL_CALL_S = 1.0  # expected time for one tool call and its result before the spoken answer
TAIL_MARGIN_S = 1.5  # silence kept after the last expected model reply
SPEAKERS = ("user", "other")


@dataclass(frozen=True)
class At:
    """A time: ``offset_s`` after the ``edge`` ("start" or "end") of turn ``turn`` (None: the session start)."""

    turn: int | None
    edge: str = "end"
    offset_s: float = 0.0


@dataclass(frozen=True)
class PauseStart:
    """The start of pause ``index`` (0-based, between pieces) inside turn ``turn``."""

    turn: int
    index: int


@dataclass(frozen=True)
class PauseSpans:
    """All [start, end] pause spans inside the given turns (None: every user turn)."""

    turns: tuple[int, ...] | None = None


@dataclass(frozen=True)
class TurnSpan:
    """[start, end] of turn ``turn``."""

    turn: int


@dataclass(frozen=True)
class Utterance:
    """One turn to be spoken: ``pieces`` are spoken in order with their pauses in between."""

    speaker: str
    role: str
    pieces: tuple[Piece, ...]
    start: At
    expects_response: bool = False

    @property
    def text(self) -> str:
        return " ".join(piece.text for piece in self.pieces)

    def __post_init__(self):
        if self.speaker not in SPEAKERS:
            raise ValueError(f"Utterance.speaker must be one of {SPEAKERS}, got {self.speaker!r}")
        if not self.pieces:
            raise ValueError(f"Utterance {self.role!r} has no pieces")


@dataclass(frozen=True)
class SessionScript:
    """Everything about a session except its audio.

    ``actions`` and ``behaviour`` may hold time references; ``busy_until`` lists the times until which
    the model is expected to be speaking (the session's audio runs ``TAIL_MARGIN_S`` past the latest).
    ``answers`` holds one {"turn", "reference_answer", "answer_aliases"} record per answered question.
    """

    task: str
    item: str
    item_parts: tuple[str, ...]
    utterances: tuple[Utterance, ...]
    actions: tuple[dict, ...]
    behaviour: dict
    busy_until: tuple[At, ...] = ()
    answers: tuple[dict, ...] = ()
    tool_calls: tuple[dict, ...] = ()
    uses_tools: bool = False

    @property
    def reference_answer(self) -> str | None:
        return self.answers[0]["reference_answer"] if self.answers else None

    @property
    def answer_aliases(self) -> list[str]:
        return list(self.answers[0]["answer_aliases"]) if self.answers else []


def reply_duration_s(text: str) -> float:
    """Expected speaking time of a model reply: 0.3 s per word.

    >>> reply_duration_s("The capital of France is Paris.")
    1.8
    """
    return round(REPLY_WORD_S * len(text.split()), 3)


def reply_end(turn: int, text: str, tool_calls: int = 0) -> At:
    """When the expected reply to ``turn`` (after ``tool_calls`` tool calls) is over."""
    return At(turn, "end", round(REPLY_DELAY_S + TOOL_CALL_S * tool_calls + reply_duration_s(text), 3))


def after_reply(turn: int, text: str, gap_s: float, tool_calls: int = 0) -> At:
    """Start of the next user turn: ``gap_s`` after the expected reply to ``turn`` is over."""
    end = reply_end(turn, text, tool_calls)
    return At(turn, "end", round(end.offset_s + gap_s, 3))


def into_reply(turn: int, delay_s: float) -> At:
    """``delay_s`` seconds after the expected start of the reply to ``turn``."""
    return At(turn, "end", round(REPLY_DELAY_S + delay_s, 3))


def speak(turn: int, text: str, variants: Sequence[str] = ()) -> dict:
    """The script action "reply to turn ``turn`` with ``text``" (or one of its ``variants``)."""
    action = {"turn": turn, "action": "speak", "text": text}
    if variants:
        action["variants"] = list(variants)
    return action


def variants_of(text: str, phrasings: Iterable[str]) -> tuple[str, ...]:
    """The distinct ``phrasings`` other than ``text``, in their order.

    >>> variants_of("Okay.", ["Okay.", "Right.", "Right.", "I see."])
    ('Right.', 'I see.')
    """
    return tuple(p for p in dict.fromkeys(phrasings) if p != text)


def answer(turn: int, reference: str, aliases: tuple[str, ...] | list[str] = ()) -> dict:
    """A per-question answer record for ``SessionScript.answers``."""
    return {"turn": turn, "reference_answer": reference, "answer_aliases": list(aliases)}


def lead_in(rng) -> At:
    """The first utterance's start: 1-3 s of leading silence."""
    return At(None, "start", round(rng.uniform(1.0, 3.0), 3))


def gap(rng, low: float = 0.5, high: float = 1.5) -> float:
    """A random gap between the end of a reply and the next user turn."""
    return round(rng.uniform(low, high), 3)
