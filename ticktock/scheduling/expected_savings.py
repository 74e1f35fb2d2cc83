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

Early prefill (feeding audio that has arrived into the cache) ranks with tier 0: it is work the chunk's post-audio
pass would otherwise do, so it always saves.

With ``concurrency.batching`` (and ``batch_drafts``), other sessions' draft forwards join a batched step in rank
order (``join``) while each still ends before its window closes, and:

- a draft step grows only while it ends before the next arrival (or no later than the chosen draft alone would):
  batching drafts must not delay another session's post-audio work;
- a post-audio step carries drafts of tiers 0-3 along only while they make it at most ``carry_slowdown`` (a
  fraction, default 0.1) dearer than the post-audio forwards alone: the sessions waiting for it pay that much.

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

from ticktock.scheduling.base import DraftCandidate, DraftPolicy, DraftPolicyError, check_dbfs, fits_window


class ExpectedSavings(DraftPolicy):
    name = "expected_savings"

    def __init__(self, speech_dbfs: float = -45.0, batch_drafts: bool = True, carry_slowdown: float = 0.1,
                 name: str | None = None):
        if name is not None:
            self.name = name
        self.speech_dbfs = check_dbfs("draft_policy.speech_dbfs", speech_dbfs)
        if not isinstance(batch_drafts, bool):
            raise DraftPolicyError(f"draft_policy.batch_drafts: must be true or false, got {batch_drafts!r}")
        if isinstance(carry_slowdown, bool) or not isinstance(carry_slowdown, (int, float)) or not 0 <= carry_slowdown <= 10:
            raise DraftPolicyError(f"draft_policy.carry_slowdown: must be a number from 0 to 10 (a fraction of the "
                                   f"post-audio step's cost), got {carry_slowdown!r}")
        self.batch_drafts = batch_drafts
        self.carry_slowdown = float(carry_slowdown)

    def rank(self, candidate: DraftCandidate, now_ms: float) -> tuple:
        talking = candidate.recent_dbfs >= self.speech_dbfs
        if candidate.purpose == "prefill":
            tier = 0
        elif candidate.tool_call_open is not None and candidate.tool_call_open in candidate.hypothesis[:1]:
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

    @property
    def carries_drafts(self) -> bool:
        return self.batch_drafts

    def join(self, candidates, now_ms, step_ms, post_audio):
        if not self.batch_drafts:
            return []
        alone = step_ms([])
        joined: list[DraftCandidate] = []
        for candidate in sorted(candidates, key=lambda c: self.rank(c, now_ms)):
            tier = self.rank(candidate, now_ms)[0]
            if post_audio and tier == 4:
                break  # ranked last: the rest are tier 4 as well
            trial = [*joined, candidate]
            cost = step_ms(trial)
            if post_audio:
                affordable = cost <= alone * (1.0 + self.carry_slowdown)
            else:
                affordable = now_ms + cost <= max(candidate.next_arrival_ms, now_ms + alone)
            if affordable and all(fits_window(c, now_ms, cost) for c in trial):
                joined.append(candidate)
        return joined

    def describe(self) -> dict:
        return {"name": self.name, "speech_dbfs": self.speech_dbfs, "batch_drafts": self.batch_drafts,
                "carry_slowdown": self.carry_slowdown}
