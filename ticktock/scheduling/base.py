"""The draft-policy contract.

When several sessions share a device (``ticktock.replay.device``) and no post-audio work is waiting, the device
runs one draft forward of one session whose next audio has not arrived yet. A draft policy picks which:
``choose(candidates, now_ms)`` gets one ``DraftCandidate`` per waiting draft forward and returns one.
A candidate holds only what a live system knows at that moment (no transcript, no future audio).

Example::

    >>> from ticktock.scheduling.round_robin import RoundRobin
    >>> a = DraftCandidate(slot=0, window_closes_ms=900.0, window_forwards=2, hypothesis=(), reply_open=False,
    ...                    recent_dbfs=-70.0, tool_call_open=None, order=7)
    >>> b = DraftCandidate(slot=1, window_closes_ms=300.0, window_forwards=0, hypothesis=(), reply_open=True,
    ...                    recent_dbfs=-20.0, tool_call_open=None, order=8, step_ms=27.0, next_arrival_ms=120.0)
    >>> RoundRobin().choose([a, b], now_ms=100.0).slot
    0
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Callable

from ticktock.errors import ConfigError

DBFS_RANGE = (-200.0, 0.0)  # an RMS level in dB full scale: -200 is the floor of ``sessions.audio.rms_dbfs``


class DraftPolicyError(ConfigError):
    """A ``draft_policy.*`` setting is not allowed; the message names the key, the value and what is allowed."""


def check_dbfs(key: str, value) -> float:
    """``value`` as a float when it is an RMS level in dB full scale (``DBFS_RANGE``), else a ``DraftPolicyError``.

    >>> check_dbfs("draft_policy.speech_dbfs", -45)
    -45.0
    >>> check_dbfs("draft_policy.speech_dbfs", float("nan"))
    Traceback (most recent call last):
    ...
    ticktock.scheduling.base.DraftPolicyError: draft_policy.speech_dbfs: must be a number of dB full scale from -200 to 0, got nan
    """
    low, high = DBFS_RANGE
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (math.isfinite(value) and low <= value <= high):
        raise DraftPolicyError(f"{key}: must be a number of dB full scale from {low:g} to {high:g}, got {value!r}")
    return float(value)


@dataclass(frozen=True)
class DraftCandidate:
    """One session's waiting draft forward, as a draft policy sees it.

    ``window_closes_ms``: when the session's next chunk arrives (device time); ``window_forwards``: draft
    forwards this window already ran; ``hypothesis``: the tokens of the hypothesis the forward extends
    (empty for a hypothesis' first forward); ``reply_open``: the session's last chunk was a reply or a tool
    call that did not end the turn; ``recent_dbfs``: the louder of its last two chunks' audio (RMS, dB full
    scale: the user may be talking); ``tool_call_open``: the protocol's ``<tool_call>`` id (None when the
    model has none); ``order``: submission order (ties); ``step_ms``: the forward's expected cost on the run's
    clock; ``next_arrival_ms``: the earliest moment another session's chunk arrives (its post-audio work
    would then wait for this forward; infinity when none is due); ``purpose``: ``draft`` (a forward or encoding
    of a hypothesis), ``prefill`` (early prefill: feeds audio that has arrived into the cache, work the chunk's
    post-audio pass would otherwise do) or ``speech`` (speculative synthesis of a drafted reply).
    """

    slot: int
    window_closes_ms: float
    window_forwards: int
    hypothesis: tuple[int, ...]
    reply_open: bool
    recent_dbfs: float
    tool_call_open: int | None
    order: int
    step_ms: float = 0.0
    next_arrival_ms: float = float("inf")
    purpose: str = "draft"


class DraftPolicy(ABC):
    name = "draft_policy"

    @abstractmethod
    def choose(self, candidates: list[DraftCandidate], now_ms: float) -> DraftCandidate | None:
        """The candidate whose draft forward runs next (``candidates`` is never empty), or None to leave the
        device idle until the next session's audio arrives (the candidates ask again then)."""

    @property
    def carries_drafts(self) -> bool:
        """Whether ``join`` may let draft forwards ride on a post-audio step (``post_audio`` True). The device lends
        a post-audio step's time to an idle-window encoding only for a policy that does: the lend buys the drafts
        that follow the encoding a ride on the post-audio steps, and nothing else. Default: False."""
        return False

    def join(self, candidates: list[DraftCandidate], now_ms: float, step_ms: Callable[[list[DraftCandidate]], float],
             post_audio: bool) -> list[DraftCandidate]:
        """With ``concurrency.batching``: which of ``candidates`` (waiting draft forwards of sessions not in the step)
        join the device's next step, a batched forward step: the draft this policy chose (``post_audio`` False), or
        the post-audio forwards of sessions whose chunk has arrived (``post_audio`` True: they wait for the step to
        end). ``step_ms(joined)`` is the step's expected cost with ``joined`` added. Default: none join (every draft
        forward runs alone)."""
        return []

    def describe(self) -> dict:
        return {"name": self.name}


def fits_window(candidate: DraftCandidate, now_ms: float, step_ms: float) -> bool:
    """Whether a step of ``step_ms`` starting at ``now_ms`` ends before ``candidate``'s window closes (a draft
    that ends after its chunk's audio arrived delays that chunk).

    >>> c = DraftCandidate(0, 300.0, 0, (), False, -80.0, None, order=1)
    >>> fits_window(c, 100.0, 150.0), fits_window(c, 100.0, 250.0)
    (True, False)
    """
    return now_ms + step_ms <= candidate.window_closes_ms
