"""One device shared by several live sessions: a discrete-event scheduler over their device work.

A production voice service replays many sessions on one GPU. Here every live session runs the ordinary
replay loop (``ReplayEngine.replay``) as a greenlet (a coroutine with its own stack, switched explicitly, in one
OS thread) driven by the scheduler's loop. A session runs its decoder's host-side code until it needs the device (a
forward, an audio encoding, a talker's synthesis) or needs time to pass (its next chunk's audio, or, inside an
idle window, more of that audio: early prefill and partial-audio re-drafts *wait* for it), then the scheduler's
loop takes over, in that same greenlet while no other session is ready to run (so a session whose work comes next
carries on without a switch), else control passes straight to the next session that may run. Nothing here is a
thread: a switch costs microseconds, not an OS thread hand-off. When every session is waiting, the scheduler
picks the next **device step**:

1. **post-audio work first**, earliest chunk arrival first (ties: lower slot); a talker's synthesis of a committed
   chunk's text (``ticktock.replay.speech_out``) counts as post-audio work. With ``batching``, an arrived chunk's
   audio encoding that has waited as long as it costs runs before an earlier chunk's forwards, so its session's
   forward joins theirs in a batched step instead of waiting for a long reply to end (``_post_audio_order``), and
   waiting post-audio forwards lend one forward's time per chunk to idle-window encodings whose drafts can then ride
   along on their steps (``_lent_step``);
2. **idle work** (draft forwards, early prefill, speculative synthesis) only when no post-audio work is waiting, only
   for sessions whose next audio has not arrived, and only work expected to end before the next session's chunk
   arrives (a step cannot be interrupted: idle work must not delay post-audio work); which session works is the
   draft policy's choice (``ticktock.scheduling``), and it may leave the device idle instead (with ``batching``, an
   idle-window encoding that has waited as long as it costs, and costs no more than the draft forward the policy
   chose, is offered first, so its session's drafts can then join the batched draft steps). Idle work still waiting when its session's
   next audio arrives is dropped: the decoder gets ``WindowClosed`` (a forward that has started always completes;
   if it ends after the arrival, the overrun is carried into that chunk as for a session alone);
3. otherwise time jumps to the next wake-up: a chunk's arrival, a session's start, or the moment a session waiting
   inside its idle window asked to wake (a **waiting lane**: it sleeps until then while the device runs others).

Each step runs at the device time ``now`` and takes its cost on the run's clock: under ``clock=modeled``
the cost profile's charge (a deterministic simulation: the same config gives the same parquet), under
``clock=wall`` the measured, device-synchronised time of the work (host-side decoder code between forwards
is assumed to overlap other sessions' device work, as it does on a GPU). With ``batching``, the post-audio
forwards of every session waiting in step 1 run as one step (up to ``max_batch``), and the draft policy may let
waiting draft forwards of other sessions join a step (``DraftPolicy.join``: a draft step batches drafts of several
sessions; a post-audio step may carry drafts along). A batched step is charged from the profile's batch model
(``CostProfile.batch_forward_ms``) and executed one forward after another under the modeled clock (so tokens stay
exactly those of a session alone), and really batched under the wall clock where the adapter can
(``ModelAdapter.forward_many``). With ``batch_encodings`` the audio encodings do the same: those of every session
whose audio is waiting run as one step (up to ``max_batch``; the draft policy may let idle-window encodings of other
sessions, early prefill's pieces, join it or a draft step of encodings), charged from the profile's batch model of
encodings (``CostProfile.encode_batch_ms``) and run as one batched encoder call under the wall clock
(``ModelAdapter.encode_many``). Without it, encodings waiting together under ``batching`` share a step one after
another, charged as many single encodings.

Device times are float milliseconds, finite and at most ``MAX_DEVICE_MS`` (a lane's start, every arrival,
every step's end): the scheduler refuses anything else with a ``DeviceTimeError`` rather than loop on it (an
infinite or NaN time never comes due; beyond the bound a float64 no longer resolves a step's microseconds, so
``now + cost == now``). The run options keep every time far inside it (``concurrency.stagger`` <= one hour,
manifest chunks and durations bounded by ``ticktock.sessions.manifest``).

A session's times follow from the device's: the stopwatch of a post-audio phase opens when the session
is ready and its audio has arrived and reads ``now`` minus that moment, so the lag recursion of
``ticktock.replay.timeline`` (and the engine loop) are unchanged and include the wait for the device; an idle
window closes when the next chunk's audio arrives. ``DeviceStats`` keeps where the device time went (post-audio
work, idle-window work, talker work, idle) for Figure 4c.

With a ``watchdog`` (``ticktock.replay.watchdog``), its countdown restarts at every switch to a session and at every
device step: a session whose own code runs past the limit fails alone (``SessionLane.failure``; ``run``'s
``on_failed`` gets it and the others go on), and a device step past it fails the sessions whose work it ran. With
``host_bound`` (a served device: ``serve.host_code_bound_s``) it bounds the sessions' own host code only: it is
disarmed for device steps, waits and the scheduler's own work, and a session is watched once its replay is under way
(``SessionLane.watch_from_now``: building its engine is not watched). Every hand-off of control disarms or re-arms
it first, in the greenlet that hands off, so a countdown that ran out raises in that session's greenlet, before the
scheduler's state changes.

With ``fail_alone`` (a served device) nothing a session's work raises stops the device: an ``Exception`` or any other
``BaseException`` (``SystemExit``, ``KeyboardInterrupt``, ``GreenletExit``: as ``SessionAborted``), raised in its host
code or inside a device step, goes to ``on_failed`` for that session alone.

Example (two sessions of constant-cost work, as in the tests)::

    device = SharedDevice(ModeledClock(CostProfile.constant(100.0)), RoundRobin())
    device.add(SessionLane(device, slot=0, start_ms=0.0), lambda lane: engine_a.replay(session_a, audio_a))
    device.add(SessionLane(device, slot=1, start_ms=250.0), lambda lane: engine_b.replay(session_b, audio_b))
    device.run(on_finished=lambda lane: print(lane.slot, lane.result))
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass
from typing import Callable

from greenlet import GreenletExit, getcurrent, greenlet

from ticktock.clocks.base import (ENCODE, FORWARD, MAX_REFUSED, TALK, Clock, DeviceWork, Stopwatch, WindowClosed,
                                  WindowOver, WorkDone, encode_pieces, step_pieces)
from ticktock.replay.measured_costs import MeasuredCosts
from ticktock.replay.realtime import RealTime
from ticktock.replay.watchdog import ChunkTimeout
from ticktock.scheduling.base import DraftCandidate


class DeviceClosed(Exception):
    """Raised inside a session's greenlet when the shared device stops (another session failed, Ctrl-C)."""


class SessionAborted(RuntimeError):
    """On a served device (``fail_alone``): a session's own work raised a ``BaseException`` that is not an
    ``Exception`` (``SystemExit``, ``KeyboardInterrupt``, ``GreenletExit`` from a plug-in; nothing outside the device's
    thread raises them there). It ends that session alone; ``str()`` names the session and what it raised.

    >>> str(SessionAborted.of("session s1", SystemExit(3)))
    'session s1: its work raised SystemExit: 3; the session ends here (a served session may not stop the device)'
    """

    @classmethod
    def of(cls, who: str, err: BaseException) -> "SessionAborted":
        said = " ".join(str(err).split())
        return cls(f"{who}: its work raised {type(err).__name__}{f': {said}' if said else ''}; the session ends here "
                   "(a served session may not stop the device)")


MAX_DEVICE_MS = 1e13  # ~317 years of device time; float64 still resolves 2 microseconds there


class DeviceTimeError(RuntimeError):
    """A device time that is not a finite number of milliseconds in [0, ``MAX_DEVICE_MS``] (a caller's bug: the
    run options and manifests are checked so that none arises).

    >>> device_time(float("inf"), "slot 1 start")
    Traceback (most recent call last):
    ...
    ticktock.replay.device.DeviceTimeError: slot 1 start: device time inf ms is not a finite number of milliseconds from 0 to 1e+13
    """


def device_time(ms: float, what: str) -> float:
    """``ms`` itself when it is a usable device time, else a ``DeviceTimeError`` naming ``what``.

    >>> device_time(250.0, "slot 1 start")
    250.0
    """
    try:
        usable = math.isfinite(ms) and 0.0 <= ms <= MAX_DEVICE_MS
    except TypeError:  # not a number at all
        usable = False
    if not usable:
        raise DeviceTimeError(f"{what}: device time {ms!r} ms is not a finite number of milliseconds from 0 to "
                              f"{MAX_DEVICE_MS:g}")
    return ms


def work_size(work: DeviceWork) -> float:
    """What a piece of work's measured cost grows with: a forward's query tokens, an encoding's share of its chunk (and
    the whole chunk of silence it encodes after it, if it does: ``DeviceWork.silence_after``)."""
    return work.query_tokens if work.kind == FORWARD else sum(fraction for fraction, _ in encode_pieces(work))


class SessionLane(Clock):
    """The clock a session replays on when it shares the device: its stopwatches read the device's time.

    ``slot`` is the session's place among the live sessions; ``start_ms`` its start on the device's time
    (chunk t's audio arrives at ``start_ms + span.end_s * 1000``).
    """

    def __init__(self, device: "SharedDevice", slot: int, start_ms: float, protocol=None):
        self.device = device
        self.name = device.clock.name
        self.slot = slot
        self.start_ms = start_ms = device_time(start_ms, f"slot {slot}: session start")
        self.tool_call_open = getattr(protocol, "tool_call_open", None)
        self.turn_eos = getattr(protocol, "turn_eos", None)
        self.arrival_ms = start_ms  # arrival of the chunk the session works on
        self.local_ms = start_ms  # the session's own time: when its last event (wake-up, finished work) happened
        self.wake_at: float | None = start_ms
        self.awaits_audio = False  # waiting for a chunk's audio (not for the session's start)
        self.audio_due: float | None = None  # asleep inside an idle window: when that window's chunk arrives
        self.until: Callable[[], bool] | None = None  # an outside event it waits for (live audio, a tool's output)
        self.expected_ms: float | None = None  # when the live audio it waits for is due at the pace of real time
        self.runnable = False
        self.finished = False
        self.result = None
        self.error: BaseException | None = None
        self.failure: str | None = None  # the watchdog's reason when the session ran past its limit
        self.session = None  # the session replayed on this lane (``ticktock.replay.concurrency``)
        self.where: Callable[[], str | None] = lambda: None  # the work the session runs now (its engine's ``where``)
        self.watched = False  # under a host-code bound: whether its own code is bounded yet (``watch_from_now``)
        self.reply_open = False
        self.lent = (start_ms, 0.0)  # (a chunk's arrival, device time its post-audio work lent to idle work: ``lend``)
        self.dbfs: list[float] = []
        self.busy_wall_ms = 0.0  # measured host time and device work of this session
        self._resumed_at: float | None = None
        self._greenlet: greenlet | None = None  # runs the session (see SharedDevice)

    # ----------------------------------------------------------------------------- the Clock contract

    def stopwatch(self, window_ms: float | None = None) -> "LaneStopwatch":
        return LaneStopwatch(self, window_ms)

    def wait_until(self, at_ms: float) -> None:
        self.arrival_ms = self.start_ms + at_ms
        self.device.wait(self, self.arrival_ms)

    def describe(self) -> dict:
        return self.device.clock.describe()

    @property
    def batches_encodings(self) -> bool:
        return self.device.clock.batches_encodings

    # ------------------------------------------------------------------------ what the session saw

    def observe_chunk(self, kind: str, output, samples) -> None:
        """Record what a draft policy may use after a chunk: whether a reply is open, how loud its audio was."""
        from ticktock.sessions.audio import rms_dbfs

        self.reply_open = kind in ("speak", "tool") and (self.turn_eos is None or self.turn_eos not in output)
        self.dbfs = [*self.dbfs[-1:], rms_dbfs(samples)]

    def lent_ms(self) -> float:
        """Device time the post-audio work of the chunk the session works on has lent to other sessions' idle-window
        encodings so far (``SharedDevice._lent_step``)."""
        arrival, lent = self.lent
        return lent if arrival == self.arrival_ms else 0.0

    def lend(self, ms: float) -> None:
        self.lent = (self.arrival_ms, self.lent_ms() + ms)

    def current_ms(self) -> float:
        """The session's own time while it runs: ``local_ms``, which under real time (a served device) follows the
        wall clock, host code included."""
        return self.device.lane_time(self)

    def watch_from_now(self) -> None:
        """Under a host-code bound (a served device: ``SharedDevice``'s ``host_bound``), bound this session's own code
        from here on, in this stretch and every later one; what it ran before (building its engine: a model replica,
        a decoder, a talker) is not bounded. Nothing without one."""
        self.watched = True
        if self.device.host_bound:
            self.device._watch_lane(self)

    def busy_now(self) -> float:
        running = (time.perf_counter() - self._resumed_at) * 1000.0 if self._resumed_at is not None else 0.0
        return self.busy_wall_ms + running


class LaneStopwatch(Stopwatch):
    """A phase of one session on the shared device: ``elapsed_ms`` is device time since the phase opened; ``wait``
    puts the session to sleep on the device (a waiting lane) while other sessions' work runs."""

    def __init__(self, lane: SessionLane, window_ms: float | None):
        self.lane = lane
        self.opened = lane.local_ms
        self.closes = None if window_ms is None else self.opened + window_ms
        self.steps = 0
        self.refused = 0  # idle-window work dropped because the window had closed
        self._busy_at_open = lane.busy_now()

    def elapsed_ms(self) -> float:
        return self.lane.current_ms() - self.opened

    def wall_ms(self) -> float:
        return self.lane.busy_now() - self._busy_at_open

    def run(self, work: DeviceWork) -> WorkDone:
        if self.refused >= MAX_REFUSED:
            raise WindowOver(f"slot {self.lane.slot}: idle-window work asked for {self.refused} times after the window "
                             "closed; the window ends here")
        self.steps += 1
        try:
            return self.lane.device.submit(self.lane, work, self)
        except WindowClosed:
            self.refused += 1
            raise

    def _advance(self, ms: float) -> None:
        self.lane.device.sleep(self.lane, self.lane.current_ms() + ms, self.closes)

    def charge_forward(self, query_tokens: int, context_tokens: int, wall_ms: float) -> float:
        raise TypeError("a session sharing a device is charged by the device's steps (LaneStopwatch.run)")

    def forward_estimate_ms(self, query_tokens: int, context_tokens: int) -> float | None:
        return self.lane.device.forward_estimate_ms(query_tokens, context_tokens)

    def charge_encode(self, wall_ms: float, fraction: float = 1.0) -> float:
        raise TypeError("a session sharing a device is charged by the device's steps (LaneStopwatch.run)")


@dataclass(eq=False)  # a request is itself only (found and removed by identity)
class Request:
    lane: SessionLane
    work: DeviceWork
    watch: LaneStopwatch
    submitted_ms: float
    order: int
    done: WorkDone | None = None
    dropped: bool = False
    estimate_ms: float | None = None  # the expected cost, once asked (``SharedDevice._estimate``)
    timed_out: ChunkTimeout | None = None  # the step that ran it went past the watchdog's limit
    failed: BaseException | None = None  # its own work raised (alone, or run again alone after its batched step raised)

    @property
    def is_post_audio(self) -> bool:
        return self.watch.closes is None

    def key(self) -> tuple:
        return (self.lane.arrival_ms, self.lane.slot, self.order)

    def candidate(self, step_ms: float, next_arrival_ms: float) -> DraftCandidate:
        lane, work = self.lane, self.work
        purpose = "prefill" if work.early_prefill else "speech" if work.kind == TALK else "draft"
        return DraftCandidate(lane.slot, self.watch.closes, self.watch.steps - 1, work.hypothesis,
                              lane.reply_open, max(lane.dbfs, default=-200.0), lane.tool_call_open, self.order,
                              step_ms, next_arrival_ms, purpose)


@dataclass
class DeviceStats:
    """What the device did: steps by kind, batched steps, where the device time went, and the scheduler's own wall
    time.

    Device time (on the run's clock): ``busy_ms`` splits into ``post_audio_busy_ms`` (encodings and forwards after a
    chunk's audio arrived), ``draft_busy_ms`` (idle-window work: drafts, early prefill) and ``talker_busy_ms`` (a
    talker's synthesis, of committed text or speculatively of a draft's); ``span_ms`` runs from the first session's start to the last
    one's end, ``idle_ms`` is the rest of it. A batched step that carries drafts along with post-audio forwards splits
    its time by their query tokens.
    """

    steps: int = 0
    post_audio_steps: int = 0
    draft_steps: int = 0
    batched_steps: int = 0
    batched_forwards: int = 0
    batched_draft_steps: int = 0  # steps of several sessions' draft forwards, chosen by the draft policy
    batched_encode_steps: int = 0  # steps that encoded several sessions' audio in one batched call (batch_encodings)
    batched_encodings: int = 0  # the encodings those steps ran
    carried_drafts: int = 0  # draft forwards that joined a batched post-audio step
    lent_steps: int = 0  # idle-window encodings run while post-audio forwards waited (``SharedDevice._lent_step``)
    busy_ms: float = 0.0
    post_audio_busy_ms: float = 0.0
    draft_busy_ms: float = 0.0
    talker_busy_ms: float = 0.0
    span_ms: float = 0.0
    sleeps: int = 0  # times a session waited inside its idle window for more audio (a waiting lane)
    declined: int = 0  # times the draft policy left the device idle although drafts were waiting
    dropped_drafts: int = 0  # idle-window work still waiting when its session's next audio arrived
    scheduler_wall_ms: float = 0.0  # the scheduler's own decisions
    switches: int = 0  # greenlet switches
    run_wall_ms: float = 0.0  # the whole run of the device, measured
    sessions_wall_ms: float = 0.0  # of which the sessions' own host code and device work
    callbacks_wall_ms: float = 0.0  # and the run's callbacks between sessions (results written, next session admitted)

    def summary(self) -> dict:
        """The counts and times, for run.json (``shared_device``)."""
        overhead = self.overhead_wall_ms()
        return {**{k: round(v, 3) if isinstance(v, float) else v for k, v in asdict(self).items()},
                "idle_ms": round(self.span_ms - self.busy_ms, 3), "overhead_wall_ms": round(overhead, 3),
                "handoff_wall_ms": round(overhead - self.scheduler_wall_ms, 3)}

    def overhead_wall_ms(self) -> float:
        """What sharing the device costs in wall time: the whole run less the sessions' own host code and device work
        and the run's callbacks, i.e. the scheduler's decisions, its bookkeeping and the switches between sessions
        (``handoff_wall_ms`` in the summary: all but the decisions)."""
        return max(0.0, self.run_wall_ms - self.sessions_wall_ms - self.callbacks_wall_ms)

    def charge(self, batch: list[Request], cost: float) -> None:
        """Book one step's device time by what it did."""
        self.busy_ms += cost
        if batch[0].work.kind == TALK:
            self.talker_busy_ms += cost
            return
        tokens = [max(r.work.query_tokens, 1) for r in batch]
        drafting = sum(t for r, t in zip(batch, tokens) if not r.is_post_audio)
        share = cost * drafting / sum(tokens)
        self.draft_busy_ms += share
        self.post_audio_busy_ms += cost - share


class SharedDevice:
    """The scheduler of one device shared by several sessions (see the module docstring).

    ``clock`` gives each step's cost (modeled or wall); ``draft_policy`` picks which session's idle-window work runs
    when the device would otherwise idle (and, with batching, which drafts join a batched step); ``batching`` runs
    waiting post-audio forwards together, ``batch_encodings`` waiting audio encodings.
    """

    def __init__(self, clock: Clock, draft_policy, batching: bool = False, max_batch: int | None = None,
                 watchdog=None, batch_encodings: bool = False, realtime: RealTime | None = None,
                 fail_alone: bool = False, host_bound: bool = False):
        self.clock = clock
        self.realtime = realtime  # None: the device keeps its own time (a replay); else the wall clock (serving)
        self.fail_alone = fail_alone  # any session's error goes to ``on_failed`` and the others go on (serving)
        self._seen_pokes = 0
        self.policy = draft_policy
        self.batching = batching
        self.batch_encodings = batch_encodings
        self.max_batch = max_batch
        self.watchdog = watchdog  # ``ticktock.replay.watchdog.Watchdog`` or None
        self.host_bound = host_bound and watchdog is not None  # the watchdog bounds host code only (serving)
        self._stretches = 0  # the watchdog's countdowns started (each switch to a session, each device step)
        self.now = 0.0
        self.lanes: list[SessionLane] = []
        self.requests: list[Request] = []
        self.stats = DeviceStats()
        self._scheduler: greenlet | None = None  # the greenlet that runs ``run``: the parent of every session's
        self._started: list[SessionLane] = []
        self._closed = False
        self._order = 0
        self.measured = MeasuredCosts()  # what steps cost so far: a measuring clock's estimates
        self._first_start: float | None = None
        self._last_end = 0.0

    # ----------------------------------------------------------------- called from a session's greenlet

    def submit(self, lane: SessionLane, work: DeviceWork, watch: LaneStopwatch) -> WorkDone:
        """Queue ``work`` and return once the device has run it (or raise ``WindowClosed`` if it was dropped)."""
        self._order += 1
        request = Request(lane, work, watch, lane.current_ms(), self._order)
        self.requests.append(request)
        self._carry_on(lane)
        if request.timed_out is not None:
            raise request.timed_out
        if request.failed is not None:
            raise request.failed
        if request.dropped:
            raise WindowClosed(f"slot {lane.slot}: the next chunk arrived at {request.watch.closes:.1f} ms before this "
                               "idle-window work could start")
        return request.done

    def wait(self, lane: SessionLane, at_ms: float) -> None:
        """Return once the device's time reaches ``at_ms``, a chunk's arrival (at once when it already has)."""
        device_time(at_ms, f"slot {lane.slot}: chunk arrival")
        if lane.local_ms >= at_ms:
            return
        lane.wake_at, lane.awaits_audio = at_ms, True
        self._carry_on(lane)

    def wait_for(self, lane: SessionLane, until: Callable[[], bool], deadline_ms: float | None = None,
                 expected_ms: float | None = None) -> None:
        """Return once ``until()`` holds (an outside event: a client's audio reached a unit's end, a tool's output
        came) or the device's time reaches ``deadline_ms``, while the device runs other sessions' work. Under real
        time only: ``until`` is looked at whenever another thread pokes the device (``RealTime.poke``).
        ``expected_ms``: when a live unit's audio is due at the pace of real time (a draft policy's next arrival)."""
        if until():
            return
        if self.realtime is None:
            raise RuntimeError("a device that keeps its own time cannot wait for an outside event")
        lane.until, lane.expected_ms = until, expected_ms
        lane.wake_at = None if deadline_ms is None else device_time(deadline_ms, f"slot {lane.slot}: deadline")
        lane.awaits_audio = expected_ms is not None
        self._carry_on(lane)

    def lane_time(self, lane: SessionLane) -> float:
        """``lane``'s own time as it runs: under real time it follows the wall clock (never back)."""
        if self.realtime is not None:
            lane.local_ms = max(lane.local_ms, self.realtime.ms())
        return lane.local_ms

    def admit(self, lane: SessionLane, target: Callable[[SessionLane], object]) -> None:
        """``add`` from any thread, for a device under real time: the device's own thread adds the session at its next
        look (a greenlet belongs to the thread that made it)."""
        if self.realtime is None:
            raise RuntimeError("admit is for a device under real time; a replay adds its sessions (add)")
        self.realtime.post((lane, target))

    def sleep(self, lane: SessionLane, at_ms: float, audio_due_ms: float | None) -> None:
        """A waiting lane: inside an idle window that closes at ``audio_due_ms``, let the session sleep until ``at_ms``
        (more of its next chunk's audio has arrived) while the device runs other sessions' work."""
        device_time(at_ms, f"slot {lane.slot}: wake-up in an idle window")
        if lane.local_ms >= at_ms:
            return
        lane.wake_at, lane.audio_due = at_ms, audio_due_ms
        self.stats.sleeps += 1
        self._carry_on(lane)

    def _carry_on(self, lane: SessionLane) -> None:
        """Wait, in ``lane``'s own greenlet, until ``lane`` may run again (its work is done, its time has come).

        The scheduler's loop runs in whichever greenlet has control: while no other session is ready to run, this
        greenlet takes the scheduler's steps itself (the same decisions, in the same order), so a session whose work
        comes next goes on without a switch. When another session must run first, or a session finishes, control
        passes on (``_yield``).
        """
        while True:
            self._unwatch()
            self._wake_due()
            if lane.runnable:
                lane.runnable = False
                if self.host_bound:  # (disarmed above; a replay's countdown goes on from its last re-arm)
                    self._watch_lane(lane)
                return
            if any(other.runnable for other in self.lanes) or self._closed:
                self._yield(lane)  # the scheduler resumes this lane once it is runnable
                return
            self._add_busy(lane, (time.perf_counter() - lane._resumed_at) * 1000.0)  # host time so far
            moved = self._step() or self._advance(stall_ok=True)
            lane._resumed_at = time.perf_counter()
            self._watch_lane(lane)
            if not moved:
                self._yield(lane)
                return

    # ------------------------------------------------------------------------------ the scheduler

    def add(self, lane: SessionLane, target: Callable[[SessionLane], object]) -> None:
        """A session that starts at ``lane.start_ms``; its greenlet runs ``target(lane)`` (the replay) once the
        device's loop gives it control."""
        lane.wake_at = max(lane.start_ms, self.now)
        self._first_start = lane.start_ms if self._first_start is None else min(self._first_start, lane.start_ms)
        self.lanes.append(lane)
        self._started.append(lane)
        lane._greenlet = greenlet(lambda: self._lane_main(lane, target), parent=self._scheduler or getcurrent())

    def run(self, on_finished: Callable[[SessionLane], None],
            on_failed: Callable[[SessionLane], None] | None = None) -> None:
        """Run until every session (including those ``on_finished`` and ``on_failed`` add) is done. A session the
        watchdog stopped goes to ``on_failed`` (``lane.failure`` says why; without it, it is raised here); any other
        error of a session stops the device and is raised here."""
        began = time.perf_counter()
        self._scheduler = getcurrent()
        for lane in self.lanes:
            lane._greenlet.parent = self._scheduler
        try:
            while self.lanes or self._serving():
                self._run_ready(on_finished, on_failed)
                if not self._step() and (self.lanes or self._serving()):
                    self._advance()
        finally:
            self.close()
            self.stats.run_wall_ms += (time.perf_counter() - began) * 1000.0
            self.stats.span_ms = max(self._last_end, self.now) - (self._first_start or 0.0)

    def _serving(self) -> bool:
        """Under real time, the device waits for sessions until ``RealTime.stop`` (a replay ends with its last)."""
        return self.realtime is not None and not self.realtime.stopping

    def close(self) -> None:
        """Stop: every session still waiting raises ``DeviceClosed`` inside its greenlet and ends."""
        self._closed = True
        for lane in self._started:
            if lane._greenlet:  # started and not finished (one never started simply never runs)
                lane._greenlet.throw(DeviceClosed())

    def _run_ready(self, on_finished, on_failed=None) -> None:
        """Let the sessions that may run do so (lowest slot first; they pass control on among themselves) and
        take in the sessions that finished (or failed: ``run``)."""
        while True:
            self._wake_due()
            for lane in [lane for lane in self.lanes if lane.finished]:
                self.lanes.remove(lane)
                self.requests = [r for r in self.requests if r.lane is not lane]  # a failed session's pending work
                self.stats.sessions_wall_ms += lane.busy_wall_ms
                self._last_end = max(self._last_end, lane.local_ms)
                if lane.error is not None and (on_failed is None or (lane.failure is None and not self.fail_alone)):
                    raise lane.error
                if self.watchdog is not None:
                    self.watchdog.disarm()  # the run's callbacks (results written, next session loaded) are not a chunk
                began = time.perf_counter()
                (on_finished if lane.error is None else on_failed)(lane)
                self.stats.callbacks_wall_ms += (time.perf_counter() - began) * 1000.0
            ready = self._next_ready()
            if ready is None:
                return
            ready.runnable = False
            self._resume(ready)

    def _next_ready(self) -> SessionLane | None:
        return min((lane for lane in self.lanes if lane.runnable), key=lambda lane: lane.slot, default=None)

    def _step(self) -> bool:
        """Run the next device step; False when nothing is waiting for the device (or the draft policy leaves
        it idle until the next arrival)."""
        started = time.perf_counter()
        self._tick()
        if self._drop_closed_drafts():
            return True
        urgent = self._post_audio_order()
        lent = self._lent_step(urgent)
        if lent:
            batch = lent
        elif urgent:
            batch = self._batch(urgent)
            self.stats.post_audio_steps += 1
            carried = self._joining(batch, self._next_arrival())
            self.stats.carried_drafts += len(carried)
            batch += carried
        elif self.requests:
            batch = self._draft_step()
        else:
            batch = []
        self.stats.scheduler_wall_ms += (time.perf_counter() - started) * 1000.0
        if batch:
            self._execute(batch)
        return bool(batch)

    def _post_audio_order(self) -> list[Request]:
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
        urgent = sorted((r for r in self.requests if r.is_post_audio), key=Request.key)
        if not self.batching or not urgent or urgent[0].work.kind != FORWARD:
            return urgent
        overdue = self._overdue_encodings(urgent)
        return overdue + [r for r in urgent if r not in overdue]

    def _lent_step(self, urgent: list[Request]) -> list[Request]:
        """With ``batching``, while post-audio forwards wait: one idle-window encoding (a hypothesis' audio, a piece of
        early prefill) that runs first, or none. Without it, a session whose draft must first encode its audio gets no
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
        if not (self.batching and urgent and self.policy.carries_drafts) or urgent[0].work.kind != FORWARD:
            return []
        waiting = {r.lane.slot: r.lane for r in urgent}.values()
        forward = min(self._estimate(r) for r in urgent if r.work.kind == FORWARD)
        room = forward - max(lane.lent_ms() for lane in waiting)
        idle = [r for r in self._overdue_encodings([r for r in self.requests if not r.is_post_audio], room)
                if self.now + self._estimate(r) <= r.watch.closes]
        chosen = self._choose(idle, self.now)
        if chosen is None:
            return []
        lent = next(r for r in idle if r.order == chosen.order)
        for lane in waiting:
            lane.lend(self._estimate(lent))
        self.stats.lent_steps += 1
        self.stats.draft_steps += 1
        return [lent]

    def _overdue_encodings(self, requests: list[Request], at_most_ms: float = math.inf) -> list[Request]:
        """The audio encodings among ``requests`` that have waited as long as they are expected to cost (and are
        expected to cost at most ``at_most_ms``)."""
        return [r for r in requests if r.work.kind == ENCODE and self.now - r.submitted_ms >= self._estimate(r)
                and self._estimate(r) <= at_most_ms]

    def _draft_step(self) -> list[Request]:
        """The idle-window work the draft policy runs next (with batching: the draft forwards it lets join); empty
        when it leaves the device idle.

        With ``batching``, idle-window encodings that have waited as long as they cost are offered to the policy
        first (as arrived chunks' encodings lead in ``_post_audio_order``): a session whose hypothesis must first
        encode its audio would otherwise wait while another session's long draft runs step after step, though its
        draft forwards, once the audio is encoded, would join those steps at little cost."""
        arrival = self._next_arrival()
        fitting = [r for r in self.requests if self.now + self._estimate(r) <= arrival]
        chosen = self._choose(fitting, arrival)
        lead = self._leading_encodings(fitting, chosen)
        if lead:
            chosen = self._choose(lead, arrival) or chosen
        if chosen is None:
            self.stats.declined += 1
            return []
        batch = [r for r in self.requests if r.order == chosen.order]
        joined = self._joining(batch, arrival)
        if joined:
            self.stats.batched_draft_steps += 1
        batch += joined
        self.stats.draft_steps += len(batch)
        return batch

    def _leading_encodings(self, fitting: list[Request], chosen: DraftCandidate | None) -> list[Request]:
        """With ``batching``, when the policy chose a draft forward: the idle-window encodings that have waited as
        long as they cost and cost no more than that forward (so the step they put in its place is no dearer)."""
        if not self.batching or chosen is None:
            return []
        first = next(r for r in fitting if r.order == chosen.order)
        if first.work.kind != FORWARD:
            return []
        return self._overdue_encodings(fitting, self._estimate(first))

    def _choose(self, requests: list[Request], arrival: float) -> DraftCandidate | None:
        """The draft policy's choice among ``requests`` (None for none, or when it leaves the device idle)."""
        if not requests:
            return None
        return self.policy.choose([r.candidate(self._estimate(r), arrival) for r in requests], self.now)

    def _batches(self, kind: str) -> bool:
        """Whether work of ``kind`` runs batched: forwards with ``batching``, encodings with ``batch_encodings``."""
        return (kind == FORWARD and self.batching) or (kind == ENCODE and self.batch_encodings)

    def _joining(self, batch: list[Request], arrival: float) -> list[Request]:
        """The waiting idle-window work of other sessions (draft forwards, or encodings) that the draft policy lets
        join ``batch`` (a step of that kind that runs batched: ``_batches``), up to ``max_batch``; ``arrival``: the next
        arrival of a session's chunk."""
        kind = batch[0].work.kind
        room = (self.max_batch or math.inf) - len(batch)
        if not self._batches(kind) or room <= 0:
            return []
        busy = {r.lane.slot for r in batch}
        waiting = {r.order: r for r in self.requests if not r.is_post_audio and r.work.kind == kind
                   and r.lane.slot not in busy}
        if not waiting:
            return []
        candidates = [r.candidate(self._estimate(r), arrival) for r in waiting.values()]
        base = [r.work for r in batch]

        def step_ms(joined: list[DraftCandidate]) -> float:
            return self._estimate_step_ms(base + [waiting[c.order].work for c in joined])

        chosen = self.policy.join(candidates, self.now, step_ms, post_audio=batch[0].is_post_audio)
        joined = [waiting[c.order] for c in chosen][: int(min(room, len(chosen)))]
        while joined and not self._batch_pays(batch + joined):  # a measuring clock: only where batching is cheaper
            joined.pop()
        return joined

    def _closed_draft(self, request: Request) -> bool:
        return not request.is_post_audio and self.now >= request.watch.closes

    def _next_arrival(self) -> float:
        """The earliest moment a session waiting for time gets its next chunk's audio (infinity when none waits)."""
        waiting = [lane.expected_ms if lane.until is not None else lane.wake_at
                   for lane in self.lanes if lane.awaits_audio]
        asleep = [lane.audio_due for lane in self.lanes if lane.audio_due is not None]
        return min([t for t in (*waiting, *asleep) if t is not None], default=float("inf"))

    def _drop_closed_drafts(self) -> bool:
        """Drop the idle-window work whose window has closed (its session's next audio arrived while it waited)."""
        closed = [r for r in self.requests if self._closed_draft(r)]
        for request in closed:
            request.dropped = True
            request.lane.local_ms = max(request.lane.local_ms, request.watch.closes)
            request.lane.runnable = True
            self.requests.remove(request)
        self.stats.dropped_drafts += len(closed)
        return bool(closed)

    def _estimate(self, request: Request) -> float:
        """``request``'s expected cost, worked out once (its work does not change while it waits)."""
        if request.estimate_ms is None:
            request.estimate_ms = self._estimate_ms(request.work)
        return request.estimate_ms

    def _estimate_ms(self, work: DeviceWork) -> float:
        """The expected cost of a forward or an encoding: the clock's own estimate (a cost profile; for forwards, the
        wall clock's line of what they measured), else what work of its kind and size cost so far (``MeasuredCosts``)."""
        if work.kind == ENCODE:
            estimate = self.clock.estimate_encode_ms(encode_pieces(work))
        else:
            estimate = self.clock.estimate_ms(work.query_tokens, work.context_tokens)
        return estimate if estimate is not None else self.measured.estimate(work.kind, work_size(work))

    def forward_estimate_ms(self, query_tokens: int, context_tokens: int) -> float | None:
        """What one forward of this shape is expected to cost alone, as the clock says (a cost profile's price, the
        wall clock's line of the forwards this device ran alone); None before anything is known."""
        return self.clock.estimate_ms(query_tokens, context_tokens)

    def _estimate_step_ms(self, works: list[DeviceWork]) -> float:
        """The expected cost of a batched step of these forwards or encodings: the clock's batch estimate, else (a
        measuring clock) the members' measured costs alone times the batch factor measured so far."""
        if works[0].kind == ENCODE:
            estimate = self.clock.estimate_encode_ms(step_pieces(works))
        else:
            estimate = self.clock.estimate_batch_ms([(w.query_tokens, w.context_tokens) for w in works])
        if estimate is not None:
            return estimate
        return self.measured.estimate_batch(works[0].kind, [self._estimate_ms(w) for w in works])

    def _batch(self, urgent: list[Request]) -> list[Request]:
        """The first waiting request, and with batching (or, for an encoding, ``batch_encodings``) every other waiting
        request of the same kind."""
        first = urgent[0]
        kind = first.work.kind
        if kind == TALK or not (self.batching or self._batches(kind)):  # a talker's pieces run one at a time
            return [first]
        limit = self.max_batch or len(urgent)
        batch = [first, *[r for r in urgent[1:] if r.work.kind == first.work.kind][: limit - 1]]
        return batch if self._batch_pays(batch) else [first]

    def _batch_pays(self, batch: list[Request]) -> bool:
        """Whether ``batch`` is expected to cost less as one step than one after another: a cost profile batches
        whenever asked; a measuring clock only where the batches it measured say so (``MeasuredCosts.batch_pays``)."""
        if len(batch) < 2 or not self.clock.measured:
            return True
        return self.measured.batch_pays(batch[0].work.kind, [self._estimate(r) for r in batch])

    def _execute(self, batch: list[Request]) -> None:
        """Run one device step; past the watchdog's limit, its sessions' requests end with the ``ChunkTimeout``
        (raised in each session's own greenlet by ``submit``)."""
        if self.host_bound:
            self._unwatch()  # (a device step is not host code)
        else:
            doing = "; ".join(r.lane.where() or f"slot {r.lane.slot}" for r in batch)
            self._watch(f"{doing}, in a device step ({batch[0].work.kind})")
        try:
            self._run_step(batch)
        except ChunkTimeout as err:
            self.watchdog.disarm()
            batched = f" (a batched step of {len(batch)} sessions: all of them failed)" if len(batch) > 1 else ""
            timeout = ChunkTimeout(self.watchdog.reason_of(err) + batched)
            for request in batch:
                request.timed_out = timeout
                self._hand_back(request)
        except DeviceTimeError:
            raise
        except self._contained as err:  # the work itself raised: it fails the session whose work it was, not the device
            self._fail_step(batch, err)

    @property
    def _contained(self) -> type[BaseException]:
        """What a session's work may raise that fails that session alone: any ``Exception``; on a served device
        (``fail_alone``) any ``BaseException`` (``SystemExit``, ``KeyboardInterrupt``, ``GreenletExit`` from a plug-in:
        nothing outside the device's own thread raises them there)."""
        return BaseException if self.fail_alone else Exception

    def _fail_step(self, batch: list[Request], err: BaseException) -> None:
        """A step whose work raised ``err``. Alone, its session gets the error (raised in its greenlet by ``submit``);
        batched, each request runs again alone, so the session whose work is at fault fails and the others get
        their results (a batched call that raised changed no session's state: it fails before any cache is
        written)."""
        if len(batch) == 1:
            batch[0].failed = err
            self._hand_back(batch[0])
            return
        for request in batch:
            try:
                self._run_step([request])
            except (ChunkTimeout, DeviceTimeError):
                raise
            except self._contained as alone:
                request.failed = alone
                self._hand_back(request)

    def _hand_back(self, request: Request) -> None:
        """``request`` ends without a result (its session's ``submit`` raises why)."""
        request.lane.runnable = True
        if request in self.requests:
            self.requests.remove(request)

    def _run_step(self, batch: list[Request]) -> None:
        began = time.perf_counter()
        if len(batch) == 1:
            done = self.clock.stopwatch().run(batch[0].work)
            results, wall, cost = [done.result], done.wall_ms, done.charged_ms
            self.measured.add(batch[0].work.kind, work_size(batch[0].work), cost)
        elif batch[0].work.kind == FORWARD:
            results, wall, cost = self._run_batch([r.work for r in batch])
            self.stats.batched_steps += 1
            self.stats.batched_forwards += len(batch)
            self.measured.add_batch(FORWARD, cost, [self._estimate_ms(r.work) for r in batch])
        elif self.batch_encodings:
            results, wall, cost = self._run_batch([r.work for r in batch])
            self.stats.batched_encode_steps += 1
            self.stats.batched_encodings += len(batch)
            self.measured.add_batch(ENCODE, cost, [self._estimate_ms(r.work) for r in batch])
        else:  # audio encodings of sessions waiting together: one step, one after another (no batching gain)
            done = [self.clock.stopwatch().run(r.work) for r in batch]
            results, wall, cost = [d.result for d in done], sum(d.wall_ms for d in done), sum(d.charged_ms for d in done)
        working = (time.perf_counter() - began) * 1000.0  # the work and its charge, as a session alone pays them
        if not (math.isfinite(cost) and cost >= 0):
            raise DeviceTimeError(f"the clock charged a device step {cost!r} ms (a finite number >= 0 expected)")
        start = self.now
        self.now = device_time(start + cost if self.realtime is None else max(start, self.realtime.ms()),
                               "the end of a device step")
        self.stats.steps += 1
        self.stats.charge(batch, cost)
        for request, result in zip(batch, results):
            request.done = WorkDone(result, wall, cost, start - request.submitted_ms, len(batch))
            self._add_busy(request.lane, working / len(batch))  # a batched step's time, shared
            request.lane.local_ms = self.now
            request.lane.runnable = True
            self.requests.remove(request)

    def _run_batch(self, works: list[DeviceWork]) -> tuple[list, float, float]:
        """Several sessions' forwards, or audio encodings, as one step: really batched under a measured clock (where
        the adapter can: ``ModelAdapter.forward_many``, ``ModelAdapter.encode_many``), one after another otherwise;
        the cost is the clock's charge for a batch of them."""
        adapter, encoding = works[0].adapter, works[0].kind == ENCODE
        adapter.synchronize()
        start = time.perf_counter()
        if self.clock.measured:
            results = (adapter.encode_many if encoding else adapter.forward_many)([(w.adapter, *w.call) for w in works])
            if encoding:
                results = [w.with_silence(r) for w, r in zip(works, results)]
        else:
            results = [w.run() for w in works]
        adapter.synchronize()
        wall = (time.perf_counter() - start) * 1000.0
        watch = self.clock.stopwatch()
        if encoding:
            return results, wall, watch.charge_encode_batch(step_pieces(works), wall)
        return results, wall, watch.charge_batch([(w.query_tokens, w.context_tokens) for w in works], wall)

    def _advance(self, stall_ok: bool = False) -> bool:
        """Move the device's time to the next wake-up; False when nobody waits for time (a stall, unless
        ``stall_ok``: a session's greenlet then passes control on). The wake-up is a finite time
        (``device_time``), so the session waiting for it wakes: every call makes progress."""
        waiting = [lane.wake_at for lane in self.lanes if lane.wake_at is not None]
        if self.realtime is not None:  # real time passes by itself: wait for it, or for another thread's poke
            self.realtime.wait(self._seen_pokes, min(waiting, default=None))
            self._tick()
            return True
        if not waiting:
            if stall_ok:
                return False
            raise RuntimeError(f"shared device stalled at {self.now:.1f} ms: {len(self.lanes)} sessions neither "
                               "running nor waiting")
        self.now = max(self.now, device_time(min(waiting), "the next wake-up"))
        return True

    def _wake_due(self) -> None:
        """Sessions whose time has come (possibly while a step ran) run from that moment on their own time; under
        real time, also those whose outside event happened (``wait_for``), and the sessions posted (``admit``)."""
        if self.realtime is not None:
            self._seen_pokes = self.realtime.pokes  # (before looking: a change from now on wakes the next wait)
            for lane, target in self.realtime.take():
                self.add(lane, target)
            self._tick()
        for lane in self.lanes:
            if lane.wake_at is not None and lane.wake_at <= self.now:
                lane.local_ms = max(lane.local_ms, lane.wake_at)
            elif lane.until is None or not lane.until():
                continue
            lane.wake_at, lane.awaits_audio, lane.audio_due = None, False, None
            lane.until = lane.expected_ms = None
            lane.runnable = True

    def _tick(self) -> None:
        """Under real time, the device's time is the wall clock's now."""
        if self.realtime is not None:
            self.now = max(self.now, self.realtime.ms())

    # ------------------------------------------------------------------------------- switching

    def _lane_main(self, lane: SessionLane, target) -> None:
        """A session's greenlet: the replay; its end returns control to the scheduler (the greenlet's parent)."""
        lane._resumed_at = time.perf_counter()
        try:
            try:
                lane.result = target(lane)
            finally:
                self._unwatch()  # (a countdown that ran out raises here at the latest: caught below, as this session's)
        except DeviceClosed:
            return
        except ChunkTimeout as err:  # this session alone ran past the watchdog's limit
            self.watchdog.disarm()
            lane.failure = self.watchdog.reason_of(err)
            lane.error = err if str(err) else ChunkTimeout(lane.failure)  # (one the monitor thread raised says nothing)
        except GreenletExit as err:
            if self._closed:  # the device is going away (or the greenlet is collected): nothing is left to tell
                return
            lane.error = self._aborted(lane, err)  # raised by the session's own code: it ends here, and says so
        except BaseException as err:  # handed to ``run``: ``on_failed``, or raised from ``run``
            lane.error = self._aborted(lane, err)
        lane.finished = True
        self._account_host(lane)

    def _aborted(self, lane: SessionLane, err: BaseException) -> BaseException:
        """The error ``lane`` ends with when its work raised ``err``: ``err`` itself, except on a served device
        (``fail_alone``) for a ``BaseException`` that is not an ``Exception``, which would stop whoever catches it
        (``SessionAborted``, naming the session)."""
        if isinstance(err, Exception) or not self.fail_alone:
            return err
        session = getattr(lane.session, "session_id", None)
        return SessionAborted.of(f"session {session}" if session is not None else f"slot {lane.slot}", err)

    def _yield(self, lane: SessionLane) -> None:
        """Pass control to the next session that may run (to the scheduler when none may) and return once this
        session may run again."""
        following = self._next_ready()
        if following is None:
            self._unwatch()
        else:
            self._watch_lane(following)  # (first: a countdown that ran out raises here, in this session)
        self.stats.switches += 1
        self._account_host(lane)
        if following is None:
            self._scheduler.switch()
        else:
            following.runnable = False
            following._greenlet.switch()
        if self._closed:
            raise DeviceClosed()
        lane._resumed_at = time.perf_counter()
        self._watch_lane(lane)

    def _watch(self, where) -> None:
        """Start the watchdog's countdown afresh for ``where`` (a session's stretch of work, or a device step)."""
        if self.watchdog is not None:
            self._stretches += 1
            self.watchdog.arm(("device", self._stretches), where)

    def _watch_lane(self, lane: SessionLane) -> None:
        """Start the countdown for ``lane``'s own code, which runs from now. With ``host_bound``, only once its replay
        is under way (``SessionLane.watch_from_now``), naming the phase it is in when the countdown runs out."""
        if not self.host_bound:
            self._watch(lane.where() or f"slot {lane.slot}")
        elif not lane.watched:
            self._unwatch()
        else:
            self._watch(lambda: lane.where() or f"slot {lane.slot}")

    def _unwatch(self) -> None:
        """With ``host_bound``: no session's host code runs from now (a device step, a wait, the scheduler's work)."""
        if self.host_bound:
            self.watchdog.disarm()

    def _account_host(self, lane: SessionLane) -> None:
        if lane._resumed_at is not None:
            self._add_busy(lane, (time.perf_counter() - lane._resumed_at) * 1000.0)
            lane._resumed_at = None

    def _add_busy(self, lane: SessionLane, ms: float) -> None:
        lane.busy_wall_ms += ms

    def _resume(self, lane: SessionLane) -> None:
        """Let ``lane`` run until control comes back to the scheduler (a session needs the device or time, or
        finished)."""
        if self._closed:
            raise DeviceClosed()
        self.stats.switches += 1
        self._watch_lane(lane)
        lane._greenlet.switch()
