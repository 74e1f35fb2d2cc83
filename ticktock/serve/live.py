"""A live session's audio and clock: what lets the one replay loop serve a client in real time.

``ticktock serve`` runs the replay engine (``ticktock.replay.engine``) unchanged on a session whose audio a client is
sending. Two objects make that work:

- ``LiveAudio``, the engine's audio source (``ticktock.replay.audio_source``): the server appends the samples a client
  sends (16 kHz mono float32, from any thread); ``chunk(span)`` hands out a unit's audio once it is complete, and
  ``arriving(span, budget_ms)`` the part of the next unit that has really arrived so far (``LiveArrivingAudio``: what
  ``ArrivingAudio`` simulates on a recording), so a decoder drafts in the idle window on the audio that is there.
  It records when each unit's last sample arrived (``completed_at``): a unit's served latency counts from there.
- ``LiveClock``, the engine's clock: measured wall time, as the ``wall`` clock measures it, with three differences
  that real time brings. ``wait_until(at_ms)`` blocks until the session's audio has reached ``at_ms`` (a unit's
  post-audio step starts when its last sample has arrived), ``Stopwatch.wait`` really waits (an idle window that
  waits for audio to arrive), and every piece of device work holds the ``DeviceQueue`` that serialises the sessions
  sharing one model in arrival order.

A client that sends faster than real time is buffered up to ``max_ahead_s`` of audio beyond what the engine has
taken (``LiveAudioFull`` past it: the server answers with an error event); a unit's latency then counts from when its
audio arrived, which may be before the server could start it. ``end()`` (the client closed, or said it is done) makes
the engine end the session after the last complete unit (``AudioEnded``).

Example (a client has sent 1.2 s of audio: unit 0 is complete, 200 ms of unit 1 have arrived)::

    >>> from ticktock.sessions.manifest import ChunkSpan
    >>> audio = LiveAudio()
    >>> audio.append(np.full(19_200, 0.1, dtype=np.float32))
    >>> clock = LiveClock(audio, DeviceQueue())
    >>> clock.wait_until(1000.0)                      # returns: unit 0's last sample has arrived
    >>> len(audio.chunk(ChunkSpan(0, 0.0, 1.0, True))), audio.completed_at(0) is not None, audio.completed_at(1)
    (16000, True, None)
    >>> audio.arriving(ChunkSpan(1, 1.0, 2.0, True), budget_ms=800.0).arrived_ms()
    200.0
    >>> audio.end(); clock.wait_until(2000.0)
    Traceback (most recent call last):
    ...
    ticktock.replay.audio_source.AudioEnded: the audio ended at 1200 ms, before 2000 ms
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from typing import Callable

import numpy as np

from ticktock.clocks.base import Clock, DeviceWork, WorkDone
from ticktock.clocks.wall import WallStopwatch
from ticktock.replay.audio_source import AudioEnded
from ticktock.sessions.audio import SAMPLE_RATE

MAX_AHEAD_S = 30.0  # audio a client may send beyond what the engine has taken (faster than real time)


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

    def end(self) -> None:
        """No more audio: the engine ends the session after the last complete unit."""
        with self._changed:
            self.ended = True
            self._changed.notify_all()

    def received_samples(self) -> int:
        with self._changed:
            return self._received

    def received_ms(self) -> float:
        return 1000.0 * self.received_samples() / self.sample_rate

    def completed_at(self, unit: int) -> float | None:
        with self._changed:
            return self._completed.get(unit)

    # ---------------------------------------------------------------------------------- the engine's side

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


class DeviceQueue:
    """One model shared by several live sessions: their device work runs one piece at a time, in the order it asked
    (a ticket lock, first come first served). ``hold()`` is a context manager; ``waited_ms`` of a piece is its wait."""

    def __init__(self):
        self._turn = threading.Condition()
        self._next_ticket = 0
        self._serving = 0

    @contextmanager
    def hold(self):
        with self._turn:
            ticket = self._next_ticket
            self._next_ticket += 1
            while ticket != self._serving:
                self._turn.wait()
        try:
            yield
        finally:
            with self._turn:
                self._serving += 1
                self._turn.notify_all()


class LiveStopwatch(WallStopwatch):
    """Measured wall time of one phase of a live session: device work holds the ``DeviceQueue``, and ``wait`` really
    waits (time passes: the audio is arriving)."""

    def __init__(self, synchronize: Callable[[], None], device: DeviceQueue):
        super().__init__(synchronize)
        self.device = device

    def wait(self, ms: float) -> None:
        if ms > 0:
            time.sleep(ms / 1000.0)
            self.waited_ms += ms

    def run(self, work: DeviceWork) -> WorkDone:
        asked = time.perf_counter()
        with self.device.hold():
            waited_ms = (time.perf_counter() - asked) * 1000.0
            done = super().run(work)
        done.waited_ms = waited_ms
        return done


class LiveClock(Clock):
    """The clock of a live session: wall time on this machine, waiting for the session's ``LiveAudio``, with its
    device work serialised through ``device`` (shared by the sessions of one model)."""

    name = "wall"
    measured = True

    def __init__(self, audio: LiveAudio, device: DeviceQueue, synchronize: Callable[[], None] | None = None):
        self.audio = audio
        self.device = device
        self.synchronize = synchronize or (lambda: None)

    def stopwatch(self, window_ms: float | None = None) -> LiveStopwatch:
        return LiveStopwatch(self.synchronize, self.device)

    def wait_until(self, at_ms: float) -> None:
        self.audio.wait_for(at_ms)

    def describe(self) -> dict:
        return {"name": self.name, "live": True}
