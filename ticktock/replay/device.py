"""One device shared by several live sessions: a discrete-event scheduler over their device work.

A production voice service replays many sessions on one GPU. Here every live session runs the ordinary
replay loop (``ReplayEngine.replay``) as a greenlet (a coroutine with its own stack, switched explicitly, in one
OS thread) driven by the scheduler's loop. A session runs its decoder's host-side code until it needs the device (a
forward, an audio encoding, a talker's synthesis) or needs time to pass (its next chunk's audio, or, inside an
idle window, more of that audio: early prefill and partial-audio re-drafts *wait* for it), then the scheduler's
loop takes over, in that same greenlet while no other session is ready to run (so a session whose work comes next
carries on without a switch), else control passes straight to the next session that may run. Nothing here is a
thread: a switch costs microseconds, not an OS thread hand-off.

The device is three pieces, as a serving engine keeps its scheduler's policy apart from the runner of a step:

- **the step policy** (``ticktock.replay.step_policy``): when every session is waiting, which work runs next, what
  joins a batch and what is dropped, a pure function of the waiting work, its expected costs and the time (post-audio
  work first, earliest arrival first; idle work only when none waits and only work that ends before the next
  arrival, the draft policy's choice; idle work whose window closed is dropped: the decoder gets ``WindowClosed``);
- **the step executor** (``ticktock.replay.step_executor``): runs the chosen step on the run's clock, books its cost,
  and contains a session's failure to that session;
- **the lanes** (here): each session's greenlet and time (``SessionLane``), waiting for its audio, sleeping inside its
  idle window (a **waiting lane**), switching between sessions, the watchdog's countdowns; when no step is due, time
  jumps to the next wake-up (a chunk's arrival, a session's start, a waiting lane's wake-up).

Each step runs at the device time ``now`` and takes its cost on the run's clock: under ``clock=modeled``
the cost profile's charge (a deterministic simulation: the same config gives the same parquet), under
``clock=wall`` the measured, device-synchronised time of the work (host-side decoder code between forwards
is assumed to overlap other sessions' device work, as it does on a GPU). With ``batching``, the post-audio
forwards of every waiting session run as one step (up to ``max_batch``), and the draft policy may let
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

from ticktock.clocks.base import MAX_REFUSED, Clock, DeviceWork, Stopwatch, WindowClosed, WindowOver, WorkDone
from ticktock.replay.measured_costs import MeasuredCosts
from ticktock.replay.realtime import RealTime
from ticktock.replay.step_executor import (MAX_DEVICE_MS, DeviceTimeError, Request, StepExecutor, StepStats,
                                           device_time)
from ticktock.replay.step_policy import Step, StepPolicy
from ticktock.replay.watchdog import ChunkTimeout

__all__ = ["MAX_DEVICE_MS", "DeviceClosed", "DeviceStats", "DeviceTimeError", "LaneStopwatch", "SessionAborted",
           "SessionLane", "SharedDevice", "device_time"]


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
        encodings so far (``StepPolicy.lent_step``)."""
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


@dataclass
class DeviceStats(StepStats):
    """What the device did: its steps (``StepStats``: steps by kind, batched steps, where the device time went), and
    the scheduler's own counts and wall time.

    ``span_ms`` runs from the first session's start to the last one's end (device time), ``idle_ms`` in the summary is
    the part of it no step ran.
    """

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

    def record(self, step: Step) -> None:
        """Count the step the policy chose by its kind."""
        if step.kind == "drop":
            self.dropped_drafts += len(step.dropped)
        elif step.kind == "lent":
            self.lent_steps += 1
            self.draft_steps += 1
        elif step.kind == "post_audio":
            self.post_audio_steps += 1
            self.carried_drafts += step.carried
        elif step.kind == "draft":
            self.batched_draft_steps += int(step.joined)
            self.draft_steps += len(step.run)
        elif step.kind == "declined":
            self.declined += 1


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
        self.step_policy = StepPolicy(draft_policy, batching, batch_encodings, max_batch)
        self.watchdog = watchdog  # ``ticktock.replay.watchdog.Watchdog`` or None
        self.host_bound = host_bound and watchdog is not None  # the watchdog bounds host code only (serving)
        self._stretches = 0  # the watchdog's countdowns started (each switch to a session, each device step)
        self.now = 0.0
        self.lanes: list[SessionLane] = []
        self.requests: list[Request] = []
        self.stats = DeviceStats()
        self.measured = MeasuredCosts()  # what steps cost so far: a measuring clock's estimates
        self.executor = StepExecutor(clock, self.measured, self.stats, batch_encodings,
                                     BaseException if fail_alone else Exception, watchdog, realtime)
        self.estimates = self.executor.estimates
        self._scheduler: greenlet | None = None  # the greenlet that runs ``run``: the parent of every session's
        self._started: list[SessionLane] = []
        self._closed = False
        self._order = 0
        self._first_start: float | None = None
        self._last_end = 0.0

    # ----------------------------------------------------------------- called from a session's greenlet

    def submit(self, lane: SessionLane, work: DeviceWork, watch: LaneStopwatch) -> WorkDone:
        """Queue ``work`` and return once the device has run it (or raise ``WindowClosed`` if it was dropped)."""
        self._order += 1
        request = Request(work, lane.slot, lane.arrival_ms, lane.current_ms(), self._order, watch.closes,
                          watch.steps - 1, lane.reply_open, max(lane.dbfs, default=-200.0), lane.tool_call_open,
                          lane=lane, watch=watch)
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
        lent = {lane.slot: lane.lent_ms() for lane in self.lanes}
        step = self.step_policy.next_step(self.requests, self.now, self._next_arrival(), self.estimates, lent)
        self.stats.record(step)
        self._lend(step)
        self.stats.scheduler_wall_ms += (time.perf_counter() - started) * 1000.0
        if step.dropped:
            self._drop(step.dropped)
            return True
        if step.run:
            self._execute(step.run)
        return bool(step.run)

    def _lend(self, step: Step) -> None:
        """The waiting post-audio work of a lent step lends the step's time (``StepPolicy.lent_step``)."""
        for lane in self.lanes:
            if lane.slot in step.lenders:
                lane.lend(step.lent_ms)

    def _drop(self, closed: list[Request]) -> None:
        """Idle-window work whose window closed while it waited: its session goes on from the window's end
        (``submit`` raises ``WindowClosed``)."""
        for request in closed:
            request.dropped = True
            request.lane.local_ms = max(request.lane.local_ms, request.closes_ms)
            request.lane.runnable = True
            self.requests.remove(request)

    def _next_arrival(self) -> float:
        """The earliest moment a session waiting for time gets its next chunk's audio (infinity when none waits)."""
        waiting = [lane.expected_ms if lane.until is not None else lane.wake_at
                   for lane in self.lanes if lane.awaits_audio]
        asleep = [lane.audio_due for lane in self.lanes if lane.audio_due is not None]
        return min([t for t in (*waiting, *asleep) if t is not None], default=float("inf"))

    def forward_estimate_ms(self, query_tokens: int, context_tokens: int) -> float | None:
        """What one forward of this shape is expected to cost alone, as the clock says (a cost profile's price, the
        wall clock's line of the forwards this device ran alone); None before anything is known."""
        return self.estimates.forward_ms(query_tokens, context_tokens)

    def _execute(self, batch: list[Request]) -> None:
        """Run one device step (``StepExecutor``) and hand each request back to its session: with a result, or with
        the error its own work raised, or past the watchdog's limit with the ``ChunkTimeout`` (each raised in its
        session's own greenlet by ``submit``)."""
        if self.host_bound:
            self._unwatch()  # (a device step is not host code)
        else:
            doing = "; ".join(r.lane.where() or f"slot {r.lane.slot}" for r in batch)
            self._watch(f"{doing}, in a device step ({batch[0].work.kind})")
        self.now = self.executor.execute(batch, self.now)
        for request in batch:
            if request.done is not None and request.failed is None and request.timed_out is None:
                self._add_busy(request.lane, request.host_ms)
                request.lane.local_ms = request.ended_ms
            request.lane.runnable = True
            if request in self.requests:
                self.requests.remove(request)

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
