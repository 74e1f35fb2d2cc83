"""The judge contract: a plug-in that scores the model's replies, one verdict per reply.

A **reply** (:class:`Reply`) is what the model said back to one user request of one replayed session: the
user's request (the manifest turn's transcript), the model's spoken reply to it (``ticktock.world.scoring.reply_text``)
and the reference answer(s) when the manifest has them. A **judge** (:class:`Judge`) turns a batch of replies
into one :class:`Verdict` each: a score on the judge's scale (e.g. 1 to 5), with the distribution over the
scale's points when it has one.

A judge's ``fingerprint()`` is a digest of everything that can change its verdicts (``settings()``: the model's
files, the prompt, the arithmetic): ``python -m ticktock.judge`` reuses a stored verdict only for the same
fingerprint and the same reply (``Reply.digest``), so a changed option judges everything again. Judges are
plug-ins selected by config (``configs/judge/<name>.yaml`` with ``_target_``); ``name`` is the config's label.

A judge whose ``scale`` is None scores no reply: ``unavailable()`` says why and what to do instead (the default,
``rule``: the quality table's rule-based task scores, ``ticktock.judges.rule``).

Example (a toy judge: longer replies score higher, up to 5)::

    >>> class LengthJudge(Judge):
    ...     name, scale = "length", (1, 5)
    ...     def __init__(self, words_per_point: int = 2):
    ...         self.words_per_point = words_per_point
    ...     def settings(self):
    ...         return {"words_per_point": self.words_per_point}
    ...     def judge(self, replies):
    ...         return [Verdict(min(5.0, 1.0 + len(r.reply.split()) // self.words_per_point)) for r in replies]
    >>> reply = Reply("run-1", "s0", "llama_questions", 0, "What is the capital of France?",
    ...               "The capital of France is Paris.", ("Paris",))
    >>> [v.score for v in LengthJudge().judge([reply])]
    [4.0]
    >>> LengthJudge().fingerprint() == LengthJudge(2).fingerprint() != LengthJudge(3).fingerprint()
    True
    >>> reply.key, len(reply.digest())
    (('s0', 0), 64)
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Sequence

from ticktock.errors import ConfigError
from ticktock.results.fingerprint import canonical_sha256

HOW_TO_JUDGE = ("python -m ticktock.judge <results dirs or globs> judge=hf_local judge.path=<folder of a transformers "
                "causal LM on this machine>")  # the command that adds a judge's column to the quality table


class JudgeError(ConfigError):
    """A judge cannot run as asked: no judge model configured, a model folder that cannot be loaded, a bad option,
    results that cannot be judged (exit code 2). The message names the option, folder or file."""


@dataclass(frozen=True)
class Reply:
    """One reply to one user turn: ``turn_index`` counts the session's turns (as in its ``turns_json``)."""

    run_id: str
    session_id: str
    task: str
    turn_index: int
    request: str  # the user's request: the manifest turn's transcript ("" when it has none)
    reply: str  # the model's spoken reply to it ("" when it said nothing)
    references: tuple[str, ...] = ()  # reference answer and accepted aliases, when the manifest has them

    @property
    def key(self) -> tuple[str, int]:
        """The reply's place in its run: (session_id, turn_index)."""
        return (self.session_id, self.turn_index)

    def digest(self) -> str:
        """SHA-256 of what a judge sees (request, reply, references): a stored verdict applies only to the same text."""
        return canonical_sha256({"request": self.request, "reply": self.reply, "references": list(self.references)})


@dataclass(frozen=True)
class Verdict:
    """A judge's verdict on one reply: ``score`` on the judge's scale."""

    score: float
    probabilities: tuple[float, ...] = ()  # over the scale's points (1, 2, ...), when the judge has a distribution
    scale_mass: float | None = None  # the share of the judge model's next-token probability on the scale's tokens
    note: str = ""  # anything the score depends on that the reply alone does not say (e.g. a truncated reply)


class Judge(ABC):
    """Scores replies. ``scale``: (lowest, highest) score, or None for a judge that scores no reply."""

    name: str = "judge"
    scale: tuple[int, int] | None = (1, 5)
    batch_size: int = 1  # replies per ``judge`` call; the judge command stores the verdicts after every call

    @abstractmethod
    def judge(self, replies: Sequence[Reply]) -> list[Verdict]:
        """One verdict per reply, in order; the same replies always get the same verdicts."""

    @abstractmethod
    def settings(self) -> dict:
        """Everything that can change a verdict (JSON-serialisable): what ``fingerprint`` digests."""

    def fingerprint(self) -> str:
        """SHA-256 (hex) of the judge's class and ``settings()``: equal fingerprints give equal verdicts."""
        kind = f"{type(self).__module__}.{type(self).__qualname__}"
        return canonical_sha256({"judge": kind, "settings": self.settings()})

    def describe(self) -> str:
        """What the judge is, in a few words (stored with its verdicts, shown in the quality table's notes)."""
        return self.name

    def unavailable(self) -> str | None:
        """Why this judge cannot score replies and what to do instead (None: it can)."""
        return None
