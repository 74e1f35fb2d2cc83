"""Which work a shared device runs next: the step policy, a pure function of the waiting work, its expected costs
and the time.

A shared device (``ticktock.replay.device``) keeps its sessions' lanes and time; whenever every session waits, it asks
``StepPolicy.next_step`` for the next **device step** and has ``ticktock.replay.step_executor`` run it. The policy
sees only what is waiting (``Waiting``: one piece of device work, its session's slot, its chunk's arrival, its idle
window), what each piece and each batched step is expected to cost (``Estimates``), the device's time ``now``, when
the next session's chunk arrives, and how much device time each session's post-audio work has already lent to idle
work in its current chunk. It changes none of them (the draft policy it consults may keep its own state, such as a
round-robin's turn); the device applies the ``Step`` it returns. The rules, in order:

1. idle-window work whose window has closed (its session's next audio arrived while it waited) is dropped;
2. **post-audio work first**, earliest chunk arrival first (ties: lower slot); with ``batching``, an arrived chunk's
   audio encoding that has waited as long as it costs leads an earlier chunk's forwards (``post_audio_order``),
   waiting post-audio forwards may lend one forward's time per chunk to an idle-window encoding (``lent_step``), and
   the waiting post-audio work of one kind runs as one step (up to ``max_batch``) that the draft policy's drafts may
   join (``DraftPolicy.join``);
3. **idle work** (draft forwards, early prefill, speculative synthesis) only when no post-audio work waits, only work
   expected to end before the next arrival, the draft policy's choice (``DraftPolicy.choose``), which may leave the
   device idle.

Example (hand-made work, no device: slot 1's chunk arrived at 1000 ms, slot 0 has a draft forward waiting in a
window that closes at 2000 ms; forwards cost 100 ms)::

    >>> from ticktock.clocks.base import FORWARD, DeviceWork
    >>> from ticktock.clocks.modeled import CostProfile, ModeledClock
    >>> from ticktock.replay.measured_costs import MeasuredCosts
    >>> from ticktock.scheduling.round_robin import RoundRobin
    >>> def forward(): return DeviceWork(FORWARD, lambda: None, None, query_tokens=1, context_tokens=10)
    >>> draft = Waiting(forward(), slot=0, arrival_ms=0.0, submitted_ms=900.0, order=1, closes_ms=2000.0)
    >>> answer = Waiting(forward(), slot=1, arrival_ms=1000.0, submitted_ms=1000.0, order=2)
    >>> estimates = Estimates(ModeledClock(CostProfile.constant(100.0)), MeasuredCosts())
    >>> step = StepPolicy(RoundRobin()).next_step([draft, answer], 1000.0, 2000.0, estimates)
    >>> step.kind, [w.slot for w in step.run]
    ('post_audio', [1])
    >>> step = StepPolicy(RoundRobin()).next_step([draft], 1100.0, 2000.0, estimates)
    >>> step.kind, [w.slot for w in step.run]
    ('draft', [0])
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping

from ticktock.clocks.base import ENCODE, FORWARD, TALK, Clock, DeviceWork, encode_pieces, step_pieces
from ticktock.replay.measured_costs import MeasuredCosts
from ticktock.scheduling.base import DraftCandidate


@dataclass(eq=False)  # a piece of work is itself only (found and removed by identity)
class Waiting:
    """One piece of device work waiting for a step, as the step policy sees it.

    ``slot``: its session's place; ``arrival_ms``: when the audio of the chunk its session works on arrived;
    ``submitted_ms``: when the work was asked for; ``order``: submission order (ties); ``closes_ms``: for idle-window
    work, when its window closes (its session's next chunk arrives), None for post-audio work; ``window_forwards``:
    idle-window steps its window ran before it; ``reply_open``, ``recent_dbfs``, ``tool_call_open``: what its session
    saw last (``DraftCandidate``).
    """

    work: DeviceWork
    slot: int
    arrival_ms: float
    submitted_ms: float
    order: int
    closes_ms: float | None = None
    window_forwards: int = 0
    reply_open: bool = False
    recent_dbfs: float = -200.0
    tool_call_open: int | None = None
    estimate_ms: float | None = None  # its expected cost, once asked (``Estimates.of``)

    @property
    def is_post_audio(self) -> bool:
        return self.closes_ms is None

    def key(self) -> tuple:
        return (self.arrival_ms, self.slot, self.order)

    def candidate(self, step_ms: float, next_arrival_ms: float) -> DraftCandidate:
        work = self.work
        purpose = "prefill" if work.early_prefill else "speech" if work.kind == TALK else "draft"
        return DraftCandidate(self.slot, self.closes_ms, self.window_forwards, work.hypothesis, self.reply_open,
                              self.recent_dbfs, self.tool_call_open, self.order, step_ms, next_arrival_ms, purpose)


def work_size(work: DeviceWork) -> float:
    """What a piece of work's measured cost grows with: a forward's query tokens, an encoding's share of its chunk (and
    the whole chunk of silence it encodes after it, if it does: ``DeviceWork.silence_after``)."""
    return work.query_tokens if work.kind == FORWARD else sum(fraction for fraction, _ in encode_pieces(work))


class Estimates:
    """What work is expected to cost on the device: the clock's own estimate (a cost profile; for forwards, the wall
    clock's line of what it measured), else what work of its kind and size cost so far on this device
    (``MeasuredCosts``, which the executor feeds)."""

    def __init__(self, clock: Clock, measured: MeasuredCosts):
        self.clock = clock
        self.measured = measured

    def of(self, waiting: Waiting) -> float:
        """``waiting``'s expected cost, worked out once (its work does not change while it waits)."""
        if waiting.estimate_ms is None:
            waiting.estimate_ms = self.work_ms(waiting.work)
        return waiting.estimate_ms

    def work_ms(self, work: DeviceWork) -> float:
        """The expected cost of one forward or encoding alone."""
        if work.kind == ENCODE:
            estimate = self.clock.estimate_encode_ms(encode_pieces(work))
        else:
            estimate = self.clock.estimate_ms(work.query_tokens, work.context_tokens)
        return estimate if estimate is not None else self.measured.estimate(work.kind, work_size(work))

    def forward_ms(self, query_tokens: int, context_tokens: int) -> float | None:
        """What one forward of this shape is expected to cost alone, as the clock says (a cost profile's price, the
        wall clock's line of the forwards it ran alone); None before anything is known."""
        return self.clock.estimate_ms(query_tokens, context_tokens)

    def step_ms(self, works: list[DeviceWork]) -> float:
        """The expected cost of a batched step of these forwards or encodings: the clock's batch estimate, else (a
        measuring clock) the members' measured costs alone times the batch factor measured so far."""
        if works[0].kind == ENCODE:
            estimate = self.clock.estimate_encode_ms(step_pieces(works))
        else:
            estimate = self.clock.estimate_batch_ms([(w.query_tokens, w.context_tokens) for w in works])
        if estimate is not None:
            return estimate
        return self.measured.estimate_batch(works[0].kind, [self.work_ms(w) for w in works])

    def batch_pays(self, batch: list[Waiting]) -> bool:
        """Whether ``batch`` is expected to cost less as one step than one after another: a cost profile batches
        whenever asked; a measuring clock only where the batches it measured say so (``MeasuredCosts.batch_pays``)."""
        if len(batch) < 2 or not self.clock.measured:
            return True
        return self.measured.batch_pays(batch[0].work.kind, [self.of(w) for w in batch])


@dataclass
class Step:
    """The policy's answer: what the device does next.

    ``kind``: ``drop`` (``dropped``: idle-window work whose window closed, handed back), ``post_audio`` (``run``:
    post-audio work, and the drafts that joined it: ``carried``), ``lent`` (``run``: one idle-window encoding that
    waiting post-audio forwards lend their time to; ``lent_ms`` to each slot of ``lenders``), ``draft`` (``run``:
    idle-window work, ``joined`` when other sessions' work joined it), ``declined`` (the draft policy leaves the
    device idle although work waits) or ``none`` (nothing waits).
    """

    kind: str
    run: list[Waiting] = field(default_factory=list)
    dropped: list[Waiting] = field(default_factory=list)
    carried: int = 0
    joined: bool = False
    lenders: tuple[int, ...] = ()
    lent_ms: float = 0.0


class StepPolicy:
    """The rules of the module docstring, for one device: ``draft_policy`` (``ticktock.scheduling``) picks idle work
    and what joins a batch; ``batching`` runs waiting post-audio forwards together, ``batch_encodings`` waiting audio
    encodings; ``max_batch`` bounds a step (None: no bound)."""

    def __init__(self, draft_policy, batching: bool = False, batch_encodings: bool = False,
                 max_batch: int | None = None):
        self.draft_policy = draft_policy
        self.batching = batching
        self.batch_encodings = batch_encodings
        self.max_batch = max_batch

    def next_step(self, waiting: list[Waiting], now: float, next_arrival_ms: float, estimates: Estimates,
                  lent_ms: Mapping[int, float] | None = None) -> Step:
        """The next step, given the ``waiting`` work (in submission order), the device's time ``now``, the earliest
        arrival of a session's next chunk (infinity when none is due), the ``estimates``, and per slot the device time
        its post-audio work lent to idle work in its current chunk (``lent_ms``; none lent where absent)."""
        closed = [w for w in waiting if not w.is_post_audio and now >= w.closes_ms]
        if closed:
            return Step("drop", dropped=closed)
        urgent = self.post_audio_order(waiting, now, estimates)
        lent = self.lent_step(waiting, urgent, now, estimates, lent_ms or {})
        if lent is not None:
            return lent
        if urgent:
            batch = self.batch(urgent, estimates)
            carried = self.joining(waiting, batch, now, next_arrival_ms, estimates)
            return Step("post_audio", run=batch + carried, carried=len(carried))
        if waiting:
            return self.draft_step(waiting, now, next_arrival_ms, estimates)
        return Step("none")

    # ------------------------------------------------------------------------------- post-audio work

    def post_audio_order(self, waiting: list[Waiting], now: float, estimates: Estimates) -> list[Waiting]:
        """The waiting post-audio work in the order it runs: earliest chunk arrival first, except that with
        ``batching`` an arrived chunk's audio encoding that has waited as long as it is expected to cost leads an
        earlier chunk's forwards. Once encoded, its session's forward joins the batched forward step, where it costs
        little; without the lead, a session deep in a long reply or tool call (its chunk arrived first) would keep
        every newly arrived chunk waiting behind its whole chain of forwards, which a serving stack does not do (its
        steps mix new requests' encodings and prefill into the running decodes). Waiting first for as long as the
        encoding costs bounds what the earlier session gives up: a chain about to end ends first, and the earlier
        session never waits for encodings longer than the newcomers waited for it (a rent-or-buy rule).

        Example (tests/test_device.py, hand-computed): forwards of 100 ms, encodings of 30 ms. Slot 0 writes 11 tokens
        for its chunk that arrived at 1000 ms; slot 1's chunk arrives at 1310 ms. At 1330 its encoding has waited
        20 ms, so slot 0's forward runs; at 1430 it has waited 120 ms and runs (1430-1460), and slot 1's forward joins
        slot 0's next one (1460-1560): slot 1 answers in 250 ms, not 980, and slot 0's chunk ends 30 ms later.
        """
        urgent = sorted((w for w in waiting if w.is_post_audio), key=Waiting.key)
        if not self.batching or not urgent or urgent[0].work.kind != FORWARD:
            return urgent
        overdue = overdue_encodings(urgent, now, estimates)
        return overdue + [w for w in urgent if w not in overdue]

    def lent_step(self, waiting: list[Waiting], urgent: list[Waiting], now: float, estimates: Estimates,
                  lent_ms: Mapping[int, float]) -> Step | None:
        """With ``batching``, while post-audio forwards wait: one idle-window encoding (a hypothesis' audio, a piece of
        early prefill) that runs first, or None. Without it, a session whose draft must first encode its audio gets no
        draft at all while another session writes a long reply or tool call, since post-audio work comes first step
        after step; once encoded, its draft forwards ride along in those post-audio steps (``DraftPolicy.join``), where
        they cost little. The lend is bounded: the encoding must have waited as long as it costs, fit before its own
        window closes, and cost no more than what every waiting session may still lend in its current chunk (one
        forward's cost in all: the cheapest waiting post-audio forward), and the draft policy must choose it as
        worth the device before the next arrival, which is now (``ExpectedSavings`` declines its tier 4). Only for a
        policy that lets drafts ride on post-audio steps (``DraftPolicy.carries_drafts``): otherwise the lend would buy
        nothing but an earlier start once the post-audio work has ended.

        Example (tests/test_device.py, hand-computed): forwards of 100 ms, encodings of 60 ms. Slot 0 writes 10 forwards
        from 0 ms; slots 1 and 2 must each encode a hypothesis before drafting, in windows closing at 1000. At 100 slot
        1's encoding has waited 100 ms and runs (100-160); its draft forwards then ride slot 0's steps (8 of them, to
        960), and slot 0's chunk ends at 1060 instead of 1000. Slot 2's encoding would exceed slot 0's lend
        (60 + 60 > 100): its window closes first.
        """
        if not (self.batching and urgent and self.draft_policy.carries_drafts) or urgent[0].work.kind != FORWARD:
            return None
        lenders = tuple(dict.fromkeys(w.slot for w in urgent))
        forward = min(estimates.of(w) for w in urgent if w.work.kind == FORWARD)
        room = forward - max(lent_ms.get(slot, 0.0) for slot in lenders)
        idle = [w for w in overdue_encodings([w for w in waiting if not w.is_post_audio], now, estimates, room)
                if now + estimates.of(w) <= w.closes_ms]
        chosen = self.choose(idle, now, now, estimates)
        if chosen is None:
            return None
        lent = next(w for w in idle if w.order == chosen.order)
        return Step("lent", run=[lent], lenders=lenders, lent_ms=estimates.of(lent))

    def batch(self, urgent: list[Waiting], estimates: Estimates) -> list[Waiting]:
        """The first waiting post-audio work, and with batching (or, for an encoding, ``batch_encodings``) every other
        waiting post-audio work of the same kind."""
        first = urgent[0]
        kind = first.work.kind
        if kind == TALK or not (self.batching or self.batches(kind)):  # a talker's pieces run one at a time
            return [first]
        limit = self.max_batch or len(urgent)
        batch = [first, *[w for w in urgent[1:] if w.work.kind == kind][: limit - 1]]
        return batch if estimates.batch_pays(batch) else [first]

    # ------------------------------------------------------------------------------------- idle work

    def draft_step(self, waiting: list[Waiting], now: float, arrival: float, estimates: Estimates) -> Step:
        """The idle-window work the draft policy runs next (with batching: the draft forwards it lets join); declined
        when it leaves the device idle.

        With ``batching``, idle-window encodings that have waited as long as they cost are offered to the policy
        first (as arrived chunks' encodings lead in ``post_audio_order``): a session whose hypothesis must first
        encode its audio would otherwise wait while another session's long draft runs step after step, though its
        draft forwards, once the audio is encoded, would join those steps at little cost."""
        fitting = [w for w in waiting if now + estimates.of(w) <= arrival]
        chosen = self.choose(fitting, now, arrival, estimates)
        lead = self.leading_encodings(fitting, chosen, now, estimates)
        if lead:
            chosen = self.choose(lead, now, arrival, estimates) or chosen
        if chosen is None:
            return Step("declined")
        batch = [w for w in waiting if w.order == chosen.order]
        joined = self.joining(waiting, batch, now, arrival, estimates)
        return Step("draft", run=batch + joined, joined=bool(joined))

    def leading_encodings(self, fitting: list[Waiting], chosen: DraftCandidate | None, now: float,
                          estimates: Estimates) -> list[Waiting]:
        """With ``batching``, when the policy chose a draft forward: the idle-window encodings that have waited as
        long as they cost and cost no more than that forward (so the step they put in its place is no dearer)."""
        if not self.batching or chosen is None:
            return []
        first = next(w for w in fitting if w.order == chosen.order)
        if first.work.kind != FORWARD:
            return []
        return overdue_encodings(fitting, now, estimates, estimates.of(first))

    def choose(self, candidates: list[Waiting], now: float, arrival: float,
               estimates: Estimates) -> DraftCandidate | None:
        """The draft policy's choice among ``candidates`` (None for none, or when it leaves the device idle)."""
        if not candidates:
            return None
        return self.draft_policy.choose([w.candidate(estimates.of(w), arrival) for w in candidates], now)

    def batches(self, kind: str) -> bool:
        """Whether work of ``kind`` runs batched: forwards with ``batching``, encodings with ``batch_encodings``."""
        return (kind == FORWARD and self.batching) or (kind == ENCODE and self.batch_encodings)

    def joining(self, waiting: list[Waiting], batch: list[Waiting], now: float, arrival: float,
                estimates: Estimates) -> list[Waiting]:
        """The waiting idle-window work of other sessions (draft forwards, or encodings) that the draft policy lets
        join ``batch`` (a step of that kind that runs batched: ``batches``), up to ``max_batch``; ``arrival``: the next
        arrival of a session's chunk."""
        kind = batch[0].work.kind
        room = (self.max_batch or math.inf) - len(batch)
        if not self.batches(kind) or room <= 0:
            return []
        busy = {w.slot for w in batch}
        others = {w.order: w for w in waiting if not w.is_post_audio and w.work.kind == kind and w.slot not in busy}
        if not others:
            return []
        candidates = [w.candidate(estimates.of(w), arrival) for w in others.values()]
        base = [w.work for w in batch]

        def step_ms(joined: list[DraftCandidate]) -> float:
            return estimates.step_ms(base + [others[c.order].work for c in joined])

        chosen = self.draft_policy.join(candidates, now, step_ms, post_audio=batch[0].is_post_audio)
        joined = [others[c.order] for c in chosen][: int(min(room, len(chosen)))]
        while joined and not estimates.batch_pays(batch + joined):  # a measuring clock: only where batching is cheaper
            joined.pop()
        return joined


def overdue_encodings(waiting: list[Waiting], now: float, estimates: Estimates,
                      at_most_ms: float = math.inf) -> list[Waiting]:
    """The audio encodings among ``waiting`` that have waited as long as they are expected to cost (and are expected
    to cost at most ``at_most_ms``)."""
    return [w for w in waiting if w.work.kind == ENCODE and now - w.submitted_ms >= estimates.of(w)
            and estimates.of(w) <= at_most_ms]
