"""Expected savings: the idle device drafts for the session whose next chunk a draft is most likely to speed up.

A draft saves post-audio forwards only when the next chunk has several tokens to write: a tool call (the
longest chunks there are: every token drafted saves a forward), a reply in progress, or a reply or tool
call about to start because the user just spoke. A session that will only listen (``<|listen|>``: one
token, one forward with or without a draft) gains nothing. Candidates are ranked by tier, then by the
earliest next arrival (the draft that is needed soonest), then by slot:

- tier 0: a tool call being drafted (a hypothesis that opened ``<tool_call>``);
- tier 1: the first forward of a window that may pay off: a reply in progress (the session's last chunk
  spoke or called a tool without ending the turn) or a user who may be talking (the last two chunks held
  audio above ``speech_dbfs``: a request may end in this chunk). One forward tells what the chunk will
  start with (a tool call moves its session to tier 0; a ``<|listen|>`` ends the hypothesis);
- tier 2: the rest of a reply in progress;
- tier 3: the rest of a window whose user may be talking;
- tier 4: everything else (drafts that would most likely be a ``<|listen|>``). A tier-4 draft forward is
  started only if it ends before another session's next chunk arrives (``next_arrival_ms``): a forward
  cannot be interrupted, and a draft of little value must not delay another session's post-audio work.
  When only such drafts are waiting, the device idles until that arrival (drafts still waiting when their
  own audio arrives are dropped).

Example::

    >>> from ticktock.scheduling.base import DraftCandidate
    >>> quiet = DraftCandidate(0, 300.0, 0, (), False, -80.0, 7, order=1)
    >>> talking = DraftCandidate(1, 900.0, 0, (), False, -25.0, 7, order=2)
    >>> replying = DraftCandidate(2, 950.0, 3, (5, 9), True, -80.0, 7, order=3)
    >>> calling = DraftCandidate(3, 990.0, 3, (7, 9), False, -80.0, 7, order=4)
    >>> policy = ExpectedSavings(speech_dbfs=-45.0)
    >>> [c.slot for c in sorted([quiet, talking, replying, calling], key=lambda c: policy.rank(c, 0.0))]
    [3, 1, 2, 0]
"""

from __future__ import annotations

from ticktock.scheduling.base import DraftCandidate, DraftPolicy, check_dbfs


class ExpectedSavings(DraftPolicy):
    name = "expected_savings"

    def __init__(self, speech_dbfs: float = -45.0, name: str | None = None):
        if name is not None:
            self.name = name
        self.speech_dbfs = check_dbfs("draft_policy.speech_dbfs", speech_dbfs)

    def rank(self, candidate: DraftCandidate, now_ms: float) -> tuple:
        talking = candidate.recent_dbfs >= self.speech_dbfs
        if candidate.tool_call_open is not None and candidate.tool_call_open in candidate.hypothesis[:1]:
            tier = 0
        elif (candidate.reply_open or talking) and not candidate.window_forwards:
            tier = 1
        elif candidate.reply_open:
            tier = 2
        elif talking:
            tier = 3
        else:
            tier = 4
        return (tier, candidate.window_closes_ms, candidate.slot, candidate.order)

    def choose(self, candidates: list[DraftCandidate], now_ms: float) -> DraftCandidate | None:
        best = min(candidates, key=lambda c: self.rank(c, now_ms))
        if self.rank(best, now_ms)[0] == 4 and now_ms + best.step_ms > best.next_arrival_ms:
            return None
        return best

    def describe(self) -> dict:
        return {"name": self.name, "speech_dbfs": self.speech_dbfs}
