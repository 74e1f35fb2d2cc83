"""Place a script's utterances on the session timeline and turn its time references into numbers.

Inputs are the script and, per utterance, its spoken length, word timings and pause spans (relative to
the utterance start; from :mod:`ticktock.corpus.speech` or, in tests, from any stand-in). Start times are
snapped to the 16 kHz sample grid; manifest times are rounded to milliseconds.

Example::

    >>> from ticktock.sessions.manifest import Word
    >>> from ticktock.corpus.script import At, Utterance, Piece, PauseStart
    >>> utterances = (Utterance("user", "request", (Piece("Hi", 1.0), Piece("there")), At(None, "start", 2.0)),)
    >>> timing = [UtteranceTiming((Word("Hi", 0.0, 0.3), Word("there", 1.3, 1.7)), ((0.3, 1.3),))]
    >>> placed = place(utterances, timing)
    >>> placed[0].start_s, placed[0].end_s, placed[0].pause_spans
    (2.0, 3.7, ((2.3, 3.3),))
    >>> resolve({"at_s": PauseStart(0, 0)}, placed)
    {'at_s': 2.3}
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

from ticktock.sessions.audio import SAMPLE_RATE
from ticktock.sessions.manifest import Turn, Word
from ticktock.corpus.script import TAIL_MARGIN_S, At, PauseSpans, PauseStart, SessionScript, TurnSpan, Utterance


class LayoutError(ValueError):
    """A script cannot be placed (a reference to a later turn, turns out of order, ...)."""


@dataclass(frozen=True)
class UtteranceTiming:
    """Word timings and pause spans of one spoken utterance, relative to its first sample."""

    words: tuple[Word, ...]
    pause_spans: tuple[tuple[float, float], ...] = ()

    @property
    def duration_s(self) -> float:
        return self.words[-1].end_s if self.words else 0.0


@dataclass(frozen=True)
class PlacedTurn:
    """An utterance at its absolute place: ``start_s`` is on the 16 kHz grid, times in seconds."""

    utterance: Utterance
    start_s: float
    words: tuple[Word, ...]
    pause_spans: tuple[tuple[float, float], ...]

    @property
    def end_s(self) -> float:
        return self.words[-1].end_s if self.words else self.start_s

    @property
    def start_sample(self) -> int:
        return int(round(self.start_s * SAMPLE_RATE))

    def to_turn(self) -> Turn:
        u = self.utterance
        return Turn(u.speaker, u.role, u.text, _ms(self.start_s), _ms(self.end_s), self.words, u.expects_response)


def _ms(value: float) -> float:
    return round(value + 0.0, 3)


def place(utterances: Sequence[Utterance], timings: Sequence[UtteranceTiming]) -> list[PlacedTurn]:
    """Absolute placement of every utterance, in script order (which must be chronological)."""
    if len(utterances) != len(timings):
        raise LayoutError(f"{len(utterances)} utterances but {len(timings)} timings")
    placed: list[PlacedTurn] = []
    for index, (utterance, timing) in enumerate(zip(utterances, timings)):
        start = _time_of(utterance.start, placed, f"utterance {index}")
        start = round(start * SAMPLE_RATE) / SAMPLE_RATE
        if placed and start < placed[-1].start_s:
            raise LayoutError(f"utterance {index} starts at {start:.3f} s, before utterance {index - 1}")
        words = tuple(Word(w.text, _ms(start + w.start_s), _ms(start + w.end_s)) for w in timing.words)
        pauses = tuple((_ms(start + a), _ms(start + b)) for a, b in timing.pause_spans)
        placed.append(PlacedTurn(utterance, start, words, pauses))
    return placed


def _time_of(at: At, placed: Sequence[PlacedTurn], where: str) -> float:
    if at.turn is None:
        return at.offset_s
    if not 0 <= at.turn < len(placed):
        raise LayoutError(f"{where}: refers to turn {at.turn}, but only turns 0..{len(placed) - 1} are placed before it")
    turn = placed[at.turn]
    if at.edge not in ("start", "end"):
        raise LayoutError(f"{where}: edge must be 'start' or 'end', got {at.edge!r}")
    return (turn.start_s if at.edge == "start" else turn.end_s) + at.offset_s


def session_samples(script: SessionScript, placed: Sequence[PlacedTurn], audio_end_s: float) -> int:
    """Session length in samples: past the last audio and the last expected model reply, plus a margin,
    rounded up to 10 ms."""
    busy = [_time_of(at, placed, "busy_until") for at in script.busy_until]
    end = max([audio_end_s, *(t.end_s for t in placed), *busy]) + TAIL_MARGIN_S
    return int(math.ceil(round(end * 100, 6))) * (SAMPLE_RATE // 100)


def resolve(value: Any, placed: Sequence[PlacedTurn]) -> Any:
    """Copy of ``value`` (dicts, lists, tuples) with every time reference replaced by seconds (ms precision)."""
    if isinstance(value, At):
        return _ms(_time_of(value, placed, "reference"))
    if isinstance(value, PauseStart):
        return _pause(value, placed)[0]
    if isinstance(value, PauseSpans):
        if value.turns is None:
            turns = [i for i, turn in enumerate(placed) if turn.utterance.speaker == "user"]
        else:
            turns = list(value.turns)
        return [list(span) for i in turns for span in placed[i].pause_spans]
    if isinstance(value, TurnSpan):
        turn = placed[value.turn]
        return [_ms(turn.start_s), _ms(turn.end_s)]
    if isinstance(value, dict):
        return {key: resolve(item, placed) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [resolve(item, placed) for item in value]
    return value


def _pause(ref: PauseStart, placed: Sequence[PlacedTurn]) -> tuple[float, float]:
    spans = placed[ref.turn].pause_spans
    if not 0 <= ref.index < len(spans):
        raise LayoutError(f"PauseStart: turn {ref.turn} has {len(spans)} pauses, no pause {ref.index}")
    return spans[ref.index]
