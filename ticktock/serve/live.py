"""A live session's audio and its place on the served device: what lets the one replay loop serve clients in real time.

``ticktock serve`` runs the replay engine (``ticktock.replay.engine``) unchanged on sessions whose audio clients are
sending, all of them on one device scheduled by the replay's own scheduler (``ticktock.replay.device.SharedDevice``)
under real time. Three objects make that work:

- ``LiveAudio``, the engine's audio source (``ticktock.replay.audio_source``): the server appends the samples a client
  sends (16 kHz mono float32, from any thread); ``chunk(span)`` hands out a unit's audio once it is complete, and
  ``arriving(span, budget_ms)`` the part of the next unit that has really arrived so far (``LiveArrivingAudio``: what
  ``ArrivingAudio`` simulates on a recording), so a decoder drafts in the idle window on the audio that is there.
  It records when each unit's last sample arrived (``completed_at``): a unit's served latency counts from there.
- ``LiveLane``, the session's clock: a lane of the shared device whose units arrive when the client's audio completes
  them (``wait_until``), whose stopwatches read the wall clock, and whose device work the scheduler orders with every
  other session's: post-audio work first, earliest arrival first; idle-window work only while none waits, dropped
  when its own audio arrives; batched forwards and encodings with ``concurrency.batching`` and
  ``concurrency.batch_encodings``.
- ``ServedDevice``: that scheduler, run in a thread of its own (``ticktock.replay.realtime.RealTime`` is its time);
  a session is admitted from the server's thread and runs as a greenlet there.

A client that sends faster than real time is buffered up to ``max_ahead_s`` of audio beyond what the engine has
taken (``LiveAudioFull`` past it: the server answers with an error event); a unit's latency then counts from when its
audio arrived, which may be before the server could start it, and it gains no place in the device's order by it.
``end()`` (the client closed, or said it is done) makes the engine end the session after the last complete unit
(``AudioEnded``).

Example (a client has sent 1.2 s of audio: unit 0 is complete, 200 ms of unit 1 have arrived)::

    >>> from ticktock.sessions.manifest import ChunkSpan
    >>> audio = LiveAudio()
    >>> audio.append(np.full(19_200, 0.1, dtype=np.float32))
    >>> audio.holds(1000.0), audio.holds(2000.0)             # unit 0's last sample has arrived, unit 1's has not
    (True, False)
    >>> len(audio.chunk(ChunkSpan(0, 0.0, 1.0, True))), audio.completed_at(0) is not None, audio.completed_at(1)
    (16000, True, None)
    >>> audio.arriving(ChunkSpan(1, 1.0, 2.0, True), budget_ms=800.0).arrived_ms()
    200.0
    >>> audio.end(); audio.wait_for(2000.0)
    Traceback (most recent call last):
    ...
    ticktock.replay.audio_source.AudioEnded: the audio ended at 1200 ms, before 2000 ms
"""

from __future__ import annotations

import itertools
import threading
import time
from typing import Callable

import numpy as np

from ticktock.errors import TickTockError
from ticktock.replay.audio_source import AudioEnded
from ticktock.replay.device import DeviceClosed, SessionLane, SharedDevice
from ticktock.replay.realtime import RealTime
from ticktock.replay.watchdog import Watchdog
from ticktock.sessions.audio import SAMPLE_RATE

MAX_AHEAD_S = 30.0  # audio a client may send beyond what the engine has taken (faster than real time)
HOST_CODE_BOUND_S = 1.0  # serve.host_code_bound_s' default: one unit; host code holding the device longer makes
#                          every other session miss its deadline


class DeviceStopped(TickTockError):
    """The served device stopped on a fault of its own (not of one session's work, which fails that session alone):
    every session ended with it, ``/health`` fails and the server exits (one line, exit 1).

    >>> str(DeviceStopped.of(RuntimeError("shared device stalled at 12.0 ms")))
    'the served device has stopped (RuntimeError: shared device stalled at 12.0 ms): every session ended with it; restart the server'
    """

    @classmethod
    def of(cls, err: BaseException) -> "DeviceStopped":
        said = " ".join(str(err).split())[:300]
        return cls(f"the served device has stopped ({type(err).__name__}{f': {said}' if said else ''}): every session "
                   "ended with it; restart the server")


class HostCodeBound(Watchdog):
    """The served device's watchdog (``serve.host_code_bound_s``): a session whose own host code (its decoder's, its
    talker's, between two device steps or waits) holds the device thread past ``limit_s`` fails alone, with one line
    naming it, where it was and the bound; the other sessions keep their deadlines. Device steps are not bounded
    (a slow model is not a fault), nor is building a session's engine. A hang inside one C call (``time.sleep``, a
    native library) is stopped only when that call returns: the device waits for it, once.

    >>> bound = HostCodeBound(0.5)
    >>> bound.arm(("device", 1), lambda: "session s1: chunk 2 (idle window)")
    >>> bound.reason()
    'session s1: chunk 2 (idle window): its host code held the served device for more than 0.5 s (serve.host_code_bound_s=0.5); the session fails, the others go on'
    """

    def reason(self) -> str:
        return (f"{self.where() or 'a session'}: its host code held the served device for more than {self.limit_s:g} s "
                f"(serve.host_code_bound_s={self.limit_s:g}); the session fails, the others go on")


class LiveAudioFull(Exception):
    """A client sent audio further ahead of the model than ``max_ahead_s``; the message says how far."""


class LiveAudio:
    """A session's audio as a client sends it (see the module docstring). Thread-safe: the server appends, the
    session's engine thread reads.

    ``unit_s`` is the unit length (1 s, the duplex contract's); ``completed_at(i)`` is the ``time.perf_counter()`` at
    which unit ``i``'s last sample arrived (None while it has not)."""

    def __init__(self, max_ahead_s: float = MAX_AHEAD_S, unit_s: float = 1.0, sample_rate: int = SAMPLE_RATE):
        self.sample_rate = sample_rate
        self.unit_samples = int(round(unit_s * sample_rate))
        self.max_ahead = int(round(max_ahead_s * sample_rate))
        self._changed = threading.Condition()
        self._kept = np.zeros(0, dtype=np.float32)  # samples from ``_base`` on (earlier ones were taken and dropped)
        self._base = 0
        self._received = 0
        self._taken = 0  # samples up to the end of the last unit the engine took
        self._completed: dict[int, float] = {}
        self.ended = False
        self.last_chunk = np.zeros(0, dtype=np.float32)  # the samples of the last unit the engine took
        self.on_change: Callable[[], None] = lambda: None  # after every append and at the end: the device's poke

    # ---------------------------------------------------------------------------------- the server's side

    def append(self, samples) -> None:
        """Add samples a client sent (16 kHz mono float32); ``LiveAudioFull`` when that would put more than
        ``max_ahead_s`` of audio beyond what the engine has taken."""
        samples = np.asarray(samples, dtype=np.float32).reshape(-1)
        now = time.perf_counter()
        with self._changed:
            if self.ended:
                raise AudioEnded("the session's audio has ended; nothing more is taken")
            ahead = self._received + len(samples) - self._taken
            if ahead > self.max_ahead:
                raise LiveAudioFull(f"audio {ahead / self.sample_rate:.1f} s ahead of the model, above the "
                                    f"{self.max_ahead / self.sample_rate:g} s this server buffers: send in real time")
            before = self._received
            self._kept = np.concatenate([self._kept, samples])
            self._received += len(samples)
            for unit in range(before // self.unit_samples, self._received // self.unit_samples):
                self._completed[unit] = now
            self._changed.notify_all()
        self.on_change()

    def end(self) -> None:
        """No more audio: the engine ends the session after the last complete unit."""
        with self._changed:
            self.ended = True
            self._changed.notify_all()
        self.on_change()

    def received_samples(self) -> int:
        with self._changed:
            return self._received

    def received_ms(self) -> float:
        return 1000.0 * self.received_samples() / self.sample_rate

    def completed_at(self, unit: int) -> float | None:
        with self._changed:
            return self._completed.get(unit)

    # ---------------------------------------------------------------------------------- the engine's side

    def holds(self, at_ms: float) -> bool:
        """Whether a wait for the audio to reach ``at_ms`` is over: it has, or the audio has ended."""
        with self._changed:
            return self.ended or self._received >= self._samples_at(at_ms)

    def reached_at(self, at_ms: float) -> float | None:
        """When the audio reached ``at_ms`` (a unit's end: the ``time.perf_counter()`` of its last sample); or None."""
        needed = self._samples_at(at_ms)
        if needed % self.unit_samples:
            return None
        return self.completed_at(needed // self.unit_samples - 1)

    def _samples_at(self, at_ms: float) -> int:
        return int(round(at_ms * self.sample_rate / 1000.0))

    def wait_for(self, at_ms: float) -> None:
        """Block until the audio has reached ``at_ms`` from the session's start; ``AudioEnded`` if it ends first."""
        needed = int(round(at_ms * self.sample_rate / 1000.0))
        with self._changed:
            while self._received < needed:
                if self.ended:
                    raise AudioEnded(f"the audio ended at {1000.0 * self._received / self.sample_rate:.0f} ms, before "
                                     f"{at_ms:.0f} ms")
                self._changed.wait()

    def chunk(self, span) -> np.ndarray:
        """The samples of ``span`` (arrived: the clock waited for them); earlier audio is dropped from here on."""
        start, end = self._bounds(span)
        with self._changed:
            piece = self._kept[start - self._base: end - self._base].copy()
            self.last_chunk = piece
            self._taken = max(self._taken, end)
            self._drop_before(start)
        return piece

    def arrived(self, span) -> np.ndarray:
        """A copy of the samples of ``span`` that have arrived by now (all of them once it is complete)."""
        start, end = self._bounds(span)
        with self._changed:
            return self._kept[start - self._base: min(end, self._received) - self._base].copy()

    def arriving(self, span, budget_ms: float) -> "LiveArrivingAudio":
        return LiveArrivingAudio(self, span)

    def _bounds(self, span) -> tuple[int, int]:
        return int(round(span.start_s * self.sample_rate)), int(round(span.end_s * self.sample_rate))

    def _drop_before(self, sample: int) -> None:
        if sample > self._base:
            self._kept = self._kept[sample - self._base:]
            self._base = sample


class LiveArrivingAudio:
    """The next unit's audio as it really arrives during the idle window before it: ``ArrivingAudio``'s interface
    (``ticktock.decoders.idle``), read from a ``LiveAudio`` at the moment of asking (``elapsed_ms`` is not needed:
    the arrival is real, not simulated). It holds no samples: ``arrived`` copies what is there now."""

    def __init__(self, audio: LiveAudio, span):
        self._audio = audio
        self._span = span
        self.sample_rate = audio.sample_rate
        self.num_samples = int(round(span.end_s * audio.sample_rate)) - int(round(span.start_s * audio.sample_rate))
        self.duration_ms = 1000.0 * self.num_samples / self.sample_rate
        self.opened_at_ms = self.arrived_ms(0.0)

    def arrived_ms(self, elapsed_ms: float = 0.0) -> float:
        received = self._audio.received_ms() - 1000.0 * self._span.start_s
        return min(self.duration_ms, max(0.0, received))

    def samples_by(self, chunk_ms: float) -> int:
        return min(self.num_samples, int(chunk_ms * self.sample_rate // 1000))

    def arrived(self, elapsed_ms: float = 0.0, start: int = 0) -> np.ndarray:
        return self._audio.arrived(self._span)[start:]


class LiveLane(SessionLane):
    """A served session's lane on the served device: its units arrive when the client's audio completes them.

    ``wait_until(at_ms)`` returns once the audio has reached ``at_ms`` (``AudioEnded`` if the stream ends first), while
    the device serves other sessions. The unit's post-audio phase opens when its last sample arrived (so a wait for
    the device counts in its latency), and its place in the device's earliest-arrival-first order is that moment, but
    never earlier than real-time pace allows (``start_ms + at_ms``): a client that sends ahead gains no priority.
    ``wait_event(until, timeout_s)`` waits for another outside event (a tool's output from the client).
    """

    def __init__(self, device, slot: int, start_ms: float, protocol, audio: LiveAudio):
        super().__init__(device, slot, start_ms, protocol)
        self.audio = audio

    def wait_until(self, at_ms: float) -> None:
        before = self.local_ms
        nominal = self.start_ms + at_ms
        self.device.wait_for(self, lambda: self.audio.holds(at_ms), expected_ms=nominal)
        self.audio.wait_for(at_ms)  # at once: the audio is there, or it ended (AudioEnded)
        completed = self.audio.reached_at(at_ms)
        completed_ms = self.device.realtime.ms_at(completed) if completed is not None else self.current_ms()
        self.arrival_ms = max(completed_ms, nominal)
        self.local_ms = max(before, completed_ms)

    def wait_event(self, until, timeout_s: float) -> None:
        self.device.wait_for(self, until, deadline_ms=self.current_ms() + 1000.0 * timeout_s)

    def describe(self) -> dict:
        return {"name": self.name, "live": True}


class ServedDevice:
    """The device of ``ticktock serve``: the replay's scheduler (``SharedDevice``) under real time, in a thread of its
    own. Sessions are admitted from any thread (``admit``); each runs as a greenlet of that thread, and ends through
    its lane's ``on_end(error or None)``, called from that thread. ``stop`` ends the thread once its sessions have
    ended.

    ``clock`` measures the steps (the wall clock, device-synchronised); ``draft_policy``, ``batching``, ``max_batch``
    and ``batch_encodings`` are the run's (``draft_policy``, ``concurrency.*``); ``host_code_bound_s`` bounds each
    stretch of one session's host code (``HostCodeBound``; None: unbounded).

    Nothing a session's work raises stops the device (``SharedDevice``'s ``fail_alone``): it ends that session. A
    fault of the scheduler itself stops it: every open session ends with it, ``error`` holds it, later sessions are
    refused, and each ``on_fault`` callback is called once (the server then exits: ``DeviceStopped``).
    """

    def __init__(self, clock, draft_policy, batching: bool = False, max_batch: int | None = None,
                 batch_encodings: bool = False, host_code_bound_s: float | None = HOST_CODE_BOUND_S):
        self.realtime = RealTime()
        self.watchdog = HostCodeBound(host_code_bound_s)
        self.shared = SharedDevice(clock, draft_policy, batching=batching, max_batch=max_batch,
                                   batch_encodings=batch_encodings, realtime=self.realtime, fail_alone=True,
                                   watchdog=self.watchdog, host_bound=True)
        self.error: BaseException | None = None
        self._faulted: list[Callable[[BaseException], None]] = []
        self._lock = threading.Lock()
        self._slots = itertools.count()
        self._open: set = set()  # lanes admitted whose on_end has not been called
        self._thread = threading.Thread(target=self._serve, name="ticktock-device", daemon=True)
        self._thread.start()

    def lane(self, audio: LiveAudio, protocol, on_end: Callable[[BaseException | None], None]) -> LiveLane:
        """A lane for a session starting now, whose audio is ``audio``; ``on_end`` is called once when it ends."""
        lane = LiveLane(self.shared, next(self._slots), self.realtime.ms(), protocol, audio)
        lane.on_end = on_end
        return lane

    def admit(self, lane: LiveLane, target: Callable[[LiveLane], object]) -> None:
        """Run ``target(lane)`` (the session's replay) on the device; from any thread."""
        if self.error is not None or self.realtime.stopping:
            raise RuntimeError(f"the served device has stopped{f' ({self.error!r})' if self.error else ''}")
        self._open.add(lane)
        self.shared.admit(lane, target)

    def poke(self) -> None:
        """Something a session may wait for changed (audio arrived or ended, a tool's output came); from any thread."""
        self.realtime.poke()

    def stop(self, timeout_s: float = 5.0) -> None:
        """Stop once the sessions have ended (cancel them first), waiting up to ``timeout_s``."""
        self.realtime.stop()
        self._thread.join(timeout_s)

    def on_fault(self, callback: Callable[[BaseException], None]) -> None:
        """Call ``callback(error)`` once if the device stops on a fault of its own (from the device's thread; at once
        when it already has)."""
        with self._lock:
            if self.error is None:
                self._faulted.append(callback)
                return
        callback(self.error)

    @property
    def healthy(self) -> bool:
        """Whether the device serves: no fault stopped it, and its thread runs (or was asked to stop)."""
        return self.error is None and (self._thread.is_alive() or self.realtime.stopping)

    def _serve(self) -> None:
        faulted: list = []
        try:
            with self.watchdog.running():
                self.shared.run(on_finished=self._ended, on_failed=self._ended)
        except BaseException as err:  # a fault of the scheduler itself: every open session ends with it
            with self._lock:
                self.error, faulted = err, self._faulted
        for lane in list(self._open):  # (closed with the device: DeviceClosed ended them)
            self._ended(lane, self.error or DeviceClosed("the served device stopped"))
        for callback in faulted:
            callback(self.error)

    def _ended(self, lane: LiveLane, error: BaseException | None = None) -> None:
        if lane in self._open:
            self._open.discard(lane)
            lane.on_end(error if error is not None else lane.error)
