"""Running one device step on a shared device: the work the step policy chose, on the run's clock, with a session's
failure contained to that session.

A shared device (``ticktock.replay.device``) hands the executor a step (``Request``: a ``Waiting`` piece of work with
its session's lane and stopwatch, and room for its outcome) and the device's time. The executor runs it (alone, as
one batched forward or encoding call where the clock measures and the adapter can, or one after another where the
clock models the batch), charges it on the clock, books it in the device's stats and costs, and gives every request
its outcome: ``done`` (a ``WorkDone``), ``failed`` (what its own work raised) or ``timed_out`` (the step ran past the
watchdog's limit). A batched step whose call raised runs again member by member, so only the session whose work is at
fault fails (a batched call that raised changed no session's state: it fails before any cache is written). Each
request that ran also gets ``ended_ms`` (the device time its step ended) and ``host_ms`` (its share of the step's
measured wall time, as a session alone pays it). The device then hands each request back to its session.

Device times are float milliseconds, finite and at most ``MAX_DEVICE_MS`` (``device_time``).

Example (one modeled forward of 100 ms, started at 250 ms)::

    >>> from ticktock.clocks.base import FORWARD, DeviceWork
    >>> from ticktock.clocks.modeled import CostProfile, ModeledClock
    >>> from ticktock.replay.measured_costs import MeasuredCosts
    >>> from types import SimpleNamespace
    >>> adapter = SimpleNamespace(synchronize=lambda: None)  # (a model adapter's device barrier)
    >>> work = DeviceWork(FORWARD, lambda: "logits", adapter, query_tokens=1, context_tokens=10)
    >>> request = Request(work, slot=0, arrival_ms=250.0, submitted_ms=250.0, order=1)
    >>> stats = StepStats()
    >>> executor = StepExecutor(ModeledClock(CostProfile.constant(100.0)), MeasuredCosts(), stats)
    >>> executor.execute([request], now=250.0)
    350.0
    >>> request.done.result, request.ended_ms, stats.steps, stats.busy_ms
    ('logits', 350.0, 1, 100.0)
    >>> broken = Request(DeviceWork(FORWARD, lambda: 1 / 0, adapter), slot=1, arrival_ms=0.0, submitted_ms=0.0, order=2)
    >>> executor.execute([broken], now=350.0), type(broken.failed).__name__, broken.done
    (350.0, 'ZeroDivisionError', None)
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

from ticktock.clocks.base import ENCODE, FORWARD, TALK, Clock, WorkDone, step_pieces
from ticktock.replay.measured_costs import MeasuredCosts
from ticktock.replay.realtime import RealTime
from ticktock.replay.step_policy import Estimates, Waiting, work_size
from ticktock.replay.watchdog import ChunkTimeout

MAX_DEVICE_MS = 1e13  # ~317 years of device time; float64 still resolves 2 microseconds there


class DeviceTimeError(RuntimeError):
    """A device time that is not a finite number of milliseconds in [0, ``MAX_DEVICE_MS``] (a caller's bug: the
    run options and manifests are checked so that none arises).

    >>> device_time(float("inf"), "slot 1 start")
    Traceback (most recent call last):
    ...
    ticktock.replay.step_executor.DeviceTimeError: slot 1 start: device time inf ms is not a finite number of milliseconds from 0 to 1e+13
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


@dataclass(eq=False)
class Request(Waiting):
    """A piece of work a session submitted to the shared device: what the step policy sees (``Waiting``), the
    session's ``lane`` and ``watch`` (its stopwatch; the device's), and its outcome once handed back."""

    lane: Any = None
    watch: Any = None
    done: WorkDone | None = None
    dropped: bool = False
    timed_out: ChunkTimeout | None = None  # the step that ran it went past the watchdog's limit
    failed: BaseException | None = None  # its own work raised (alone, or run again alone after its batched step raised)
    ended_ms: float | None = None  # the device time its step ended (when it ran)
    host_ms: float = 0.0  # its share of the measured wall time of the step that ran it


@dataclass
class StepStats:
    """What the device's steps did: counts of steps by kind and batching, and where the device time went (on the run's
    clock): ``busy_ms`` splits into ``post_audio_busy_ms`` (encodings and forwards after a chunk's audio arrived),
    ``draft_busy_ms`` (idle-window work: drafts, early prefill) and ``talker_busy_ms`` (a talker's synthesis, of
    committed text or speculatively of a draft's). A batched step that carries drafts along with post-audio forwards
    splits its time by their query tokens. ``ticktock.replay.device.DeviceStats`` adds the scheduler's own counts."""

    steps: int = 0
    post_audio_steps: int = 0
    draft_steps: int = 0
    batched_steps: int = 0
    batched_forwards: int = 0
    batched_draft_steps: int = 0  # steps of several sessions' draft forwards, chosen by the draft policy
    batched_encode_steps: int = 0  # steps that encoded several sessions' audio in one batched call (batch_encodings)
    batched_encodings: int = 0  # the encodings those steps ran
    carried_drafts: int = 0  # draft forwards that joined a batched post-audio step
    lent_steps: int = 0  # idle-window encodings run while post-audio forwards waited (``StepPolicy.lent_step``)
    busy_ms: float = 0.0
    post_audio_busy_ms: float = 0.0
    draft_busy_ms: float = 0.0
    talker_busy_ms: float = 0.0

    def charge(self, batch: list[Waiting], cost: float) -> None:
        """Book one step's device time by what it did."""
        self.busy_ms += cost
        if batch[0].work.kind == TALK:
            self.talker_busy_ms += cost
            return
        tokens = [max(w.work.query_tokens, 1) for w in batch]
        drafting = sum(t for w, t in zip(batch, tokens) if not w.is_post_audio)
        share = cost * drafting / sum(tokens)
        self.draft_busy_ms += share
        self.post_audio_busy_ms += cost - share


class StepExecutor:
    """Runs the steps of one shared device (see the module docstring).

    ``clock`` runs and charges the work (modeled or wall); ``measured`` learns what steps cost (the estimates of a
    measuring clock); ``stats`` books them; ``batch_encodings``: a step of several encodings is one batched call;
    ``contained``: what a session's work may raise that fails that session alone (``Exception``; on a served device
    any ``BaseException``); ``watchdog``: names a step that ran past its limit; ``realtime``: under real time (a served
    device) a step ends at the wall clock's now, not at its start plus its charge.
    """

    def __init__(self, clock: Clock, measured: MeasuredCosts, stats: StepStats, batch_encodings: bool = False,
                 contained: type[BaseException] = Exception, watchdog=None, realtime: RealTime | None = None):
        self.clock = clock
        self.measured = measured
        self.estimates = Estimates(clock, measured)
        self.stats = stats
        self.batch_encodings = batch_encodings
        self.contained = contained
        self.watchdog = watchdog
        self.realtime = realtime

    def execute(self, batch: list[Request], now: float) -> float:
        """Run ``batch`` from the device time ``now``; every request gets its outcome. Returns the device time after
        the step (``now`` when nothing ran)."""
        try:
            return self._run_step(batch, now)
        except ChunkTimeout as err:
            self.watchdog.disarm()
            batched = f" (a batched step of {len(batch)} sessions: all of them failed)" if len(batch) > 1 else ""
            timeout = ChunkTimeout(self.watchdog.reason_of(err) + batched)
            for request in batch:
                request.timed_out = timeout
            return now
        except DeviceTimeError:
            raise
        except self.contained as err:  # the work itself raised: it fails the session whose work it was, not the device
            return self._fail_step(batch, err, now)

    def _fail_step(self, batch: list[Request], err: BaseException, now: float) -> float:
        """A step whose work raised ``err``. Alone, its session gets the error; batched, each request runs again alone,
        so the session whose work is at fault fails and the others get their results."""
        if len(batch) == 1:
            batch[0].failed = err
            return now
        for request in batch:
            try:
                now = self._run_step([request], now)
            except (ChunkTimeout, DeviceTimeError):
                raise
            except self.contained as alone:
                request.failed = alone
        return now

    def _run_step(self, batch: list[Request], start: float) -> float:
        began = time.perf_counter()
        if len(batch) == 1:
            done = self.clock.stopwatch().run(batch[0].work)
            results, wall, cost = [done.result], done.wall_ms, done.charged_ms
            self.measured.add(batch[0].work.kind, work_size(batch[0].work), cost)
        elif batch[0].work.kind == FORWARD:
            results, wall, cost = self.run_batch([r.work for r in batch])
            self.stats.batched_steps += 1
            self.stats.batched_forwards += len(batch)
            self.measured.add_batch(FORWARD, cost, [self.estimates.work_ms(r.work) for r in batch])
        elif self.batch_encodings:
            results, wall, cost = self.run_batch([r.work for r in batch])
            self.stats.batched_encode_steps += 1
            self.stats.batched_encodings += len(batch)
            self.measured.add_batch(ENCODE, cost, [self.estimates.work_ms(r.work) for r in batch])
        else:  # audio encodings of sessions waiting together: one step, one after another (no batching gain)
            done = [self.clock.stopwatch().run(r.work) for r in batch]
            results, wall, cost = [d.result for d in done], sum(d.wall_ms for d in done), sum(d.charged_ms for d in done)
        working = (time.perf_counter() - began) * 1000.0  # the work and its charge, as a session alone pays them
        if not (math.isfinite(cost) and cost >= 0):
            raise DeviceTimeError(f"the clock charged a device step {cost!r} ms (a finite number >= 0 expected)")
        end = device_time(start + cost if self.realtime is None else max(start, self.realtime.ms()),
                          "the end of a device step")
        self.stats.steps += 1
        self.stats.charge(batch, cost)
        for request, result in zip(batch, results):
            request.done = WorkDone(result, wall, cost, start - request.submitted_ms, len(batch))
            request.ended_ms = end
            request.host_ms = working / len(batch)  # a batched step's time, shared
        return end

    def run_batch(self, works: list) -> tuple[list, float, float]:
        """Several sessions' forwards, or audio encodings, as one step: really batched under a measuring clock (where
        the adapter can: ``ModelAdapter.forward_many``, ``ModelAdapter.encode_many``), one after another otherwise;
        the cost is the clock's charge for a batch of them, from the wall time its timer read."""
        adapter, encoding = works[0].adapter, works[0].kind == ENCODE
        adapter.synchronize()
        start = self.clock.timer()
        if self.clock.measured:
            results = (adapter.encode_many if encoding else adapter.forward_many)([(w.adapter, *w.call) for w in works])
            if encoding:
                results = [w.with_silence(r) for w, r in zip(works, results)]
        else:
            results = [w.run() for w in works]
        adapter.synchronize()
        wall = (self.clock.timer() - start) * 1000.0
        watch = self.clock.stopwatch()
        if encoding:
            return results, wall, watch.charge_encode_batch(step_pieces(works), wall)
        return results, wall, watch.charge_batch([(w.query_tokens, w.context_tokens) for w in works], wall)
