"""N sessions replayed at once on one device (``concurrency.sessions=N``).

The run's sessions are taken in order, N at a time, keeping N live: when a session finishes, the next
one takes its slot, so a run still covers the whole task. Every session has its own timeline: it starts
at its slot's free time plus a stagger offset, and its chunk t arrives at ``start + end of chunk t``.
All of them share one device (``ticktock.replay.device.SharedDevice``): its scheduler orders their forwards,
and the lag recursion of every session includes its waits for the device.

Every slot has its own replay engine: a replica of the model adapter (same weights, its own KV cache and
front-end state) and its own decoder, reused by the sessions that take the slot one after another (as a
run with N = 1 reuses one decoder). Tokens never depend on N: each session's output equals what it
writes replayed alone.

Stagger (``concurrency.stagger``): ``random`` (default) gives the j-th admitted session a seeded offset
uniform within its first chunk; a number ``d`` (0 to ``MAX_STAGGER_MS``, one hour) gives the session in slot s
an offset of ``s * d`` ms. Sessions last minutes, so a larger stagger only replays them one after another;
the bound also keeps every device time far inside the range where a float64 millisecond count still resolves
microseconds (``ticktock.replay.device.MAX_DEVICE_MS``).

Example::

    settings = ConcurrencySettings.parse({"sessions": 4, "batching": False, "max_batch": None, "stagger": "random",
                                          "batch_encodings": True})
    replay = ConcurrentReplay(slot_engines, SharedDevice(clock, ExpectedSavings()), settings, seed=0)
    replay.replay(sessions, load=lambda s: load_audio(s.audio_path), on_trace=write_rows)
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Callable

from ticktock.sessions.audio import AudioError, chunk_samples
from ticktock.replay.device import SessionLane, SharedDevice
from ticktock.errors import ConfigError


class ConcurrencyError(ConfigError):
    """A ``concurrency.*`` option is not allowed; the message names the key, the value and what is allowed."""


MAX_SESSIONS = 1024  # live sessions on one device: each has its own adapter replica (KV cache) and decoder
MAX_STAGGER_MS = 3_600_000.0  # one hour: longer than any session, so a larger stagger changes nothing but the clock


@dataclass(frozen=True)
class ConcurrencySettings:
    """``concurrency.*`` of the run config, checked.

    Example::

        >>> ConcurrencySettings.parse({"sessions": 0})
        Traceback (most recent call last):
        ...
        ticktock.replay.concurrency.ConcurrencyError: concurrency.sessions: must be an integer from 1 to 1024, got 0
        >>> ConcurrencySettings.parse({"sessions": 2, "stagger": "sometimes"})
        Traceback (most recent call last):
        ...
        ticktock.replay.concurrency.ConcurrencyError: concurrency.stagger: must be 'random' or a number of milliseconds from 0 to 3600000 (one hour), got 'sometimes'
        >>> ConcurrencySettings.parse({"sessions": 2, "stagger": float("inf")})
        Traceback (most recent call last):
        ...
        ticktock.replay.concurrency.ConcurrencyError: concurrency.stagger: must be 'random' or a number of milliseconds from 0 to 3600000 (one hour), got inf
    """

    sessions: int = 1
    batching: bool = False
    max_batch: int | None = None
    stagger: str | float = "random"
    batch_encodings: bool = False  # the audio encodings of sessions waiting together run as one batched step

    @classmethod
    def parse(cls, values) -> "ConcurrencySettings":
        values = dict(values or {})
        known = ("sessions", "batching", "max_batch", "stagger", "batch_encodings")
        for key in values:
            if key not in known:
                raise ConcurrencyError(f"concurrency.{key}: unknown setting (known: {', '.join(known)})")
        settings = cls(**values)
        settings._check()
        return settings

    def _check(self) -> None:
        if not _is_int(self.sessions, 1) or self.sessions > MAX_SESSIONS:
            raise ConcurrencyError(f"concurrency.sessions: must be an integer from 1 to {MAX_SESSIONS}, "
                                   f"got {self.sessions!r}")
        for key in ("batching", "batch_encodings"):
            if not isinstance(getattr(self, key), bool):
                raise ConcurrencyError(f"concurrency.{key}: must be true or false, got {getattr(self, key)!r}")
        if self.max_batch is not None and not _is_int(self.max_batch, 2):
            raise ConcurrencyError(f"concurrency.max_batch: must be null (all waiting sessions) or an integer >= 2, "
                                   f"got {self.max_batch!r}")
        number = isinstance(self.stagger, (int, float)) and not isinstance(self.stagger, bool)
        if self.stagger != "random" and not (number and 0 <= self.stagger <= MAX_STAGGER_MS):  # False for nan
            raise ConcurrencyError(f"concurrency.stagger: must be 'random' or a number of milliseconds from 0 to "
                                   f"{MAX_STAGGER_MS:.0f} (one hour), got {self.stagger!r}")

    @property
    def shares_device(self) -> bool:
        """True when sessions go through the shared device (more than one at once, or batching asked for)."""
        return self.sessions > 1 or self.batching or self.batch_encodings


def _is_int(value, least: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= least


def check_sessions_replayed(settings: ConcurrencySettings, replayed: int) -> None:
    """Refuse ``concurrency.sessions`` above ``replayed``, the number of sessions this run replays (after the
    ``limit.*`` options and its shard; a resumed run counts the sessions it already has too): N slots that never all
    hold a session would record a concurrency the device never served. Called before the model is built.

    >>> check_sessions_replayed(ConcurrencySettings(sessions=4), replayed=4)
    >>> check_sessions_replayed(ConcurrencySettings(sessions=1000), replayed=1)
    Traceback (most recent call last):
    ...
    ticktock.replay.concurrency.ConcurrencyError: concurrency.sessions: 1000 sessions at once, but this run replays 1 session (after limit.* and shard.*): use concurrency.sessions=1 or less, or replay more sessions
    """
    if settings.sessions > replayed:
        raise ConcurrencyError(f"concurrency.sessions: {settings.sessions} sessions at once, but this run replays "
                               f"{replayed} session{'' if replayed == 1 else 's'} (after limit.* and shard.*): use "
                               f"concurrency.sessions={max(replayed, 1)} or less, or replay more sessions")


def stagger_offset_ms(stagger, admitted: int, slot: int, chunk_ms: float, seed: int) -> float:
    """The start offset of the ``admitted``-th session (0-based), placed in ``slot``, after its slot frees.

    >>> stagger_offset_ms(250.0, admitted=5, slot=2, chunk_ms=1000.0, seed=0)
    500.0
    >>> 0 <= stagger_offset_ms("random", admitted=5, slot=2, chunk_ms=1000.0, seed=0) < 1000.0
    True
    """
    if stagger == "random":
        return random.Random(f"ticktock-stagger:{seed}:{admitted}").uniform(0.0, chunk_ms)
    return slot * float(stagger)


class ConcurrentReplay:
    """Replays sessions N at a time on one shared device (see the module docstring).

    ``engines``: one ``ReplayEngine`` per slot (each with its own adapter replica and decoder);
    ``device``: the shared device (its clock and draft policy).
    """

    def __init__(self, engines: list, device: SharedDevice, settings: ConcurrencySettings, seed: int = 0):
        if len(engines) != settings.sessions:
            raise ValueError(f"{settings.sessions} sessions at once need {settings.sessions} engines, got {len(engines)}")
        self.engines = engines
        self.device = device
        self.settings = settings
        self.seed = seed
        self._admitted = 0

    def replay(self, sessions: list, load: Callable, on_trace: Callable, on_skip: Callable | None = None,
               on_chunk: Callable | None = None, before_session: Callable | None = None,
               on_fail: Callable | None = None) -> None:
        """Replay every session; ``load(session)`` returns its audio (an ``AudioError`` goes to ``on_skip(session,
        error)``, which re-raises to stop the run, and the slot takes the next session); ``on_trace(trace)`` gets
        each finished session (in the order they finish); ``on_chunk(chunk)`` after every chunk;
        ``before_session()`` before each session is admitted; ``on_fail(session, reason)`` each session the device's
        watchdog stopped (``ticktock.replay.watchdog``; the slot takes the next session; without ``on_fail`` the
        ``ChunkTimeout`` is raised)."""
        queue = list(sessions)

        def admit(slot: int, free_ms: float) -> None:
            while queue:
                session = queue.pop(0)
                if before_session is not None:
                    before_session()
                try:
                    audio = load(session)
                except AudioError as err:
                    if on_skip is None:
                        raise
                    on_skip(session, err)
                    continue
                self._start(slot, free_ms, session, audio, on_chunk)
                return

        def finished(lane: SessionLane) -> None:
            trace = lane.result
            trace.concurrency, trace.slot, trace.start_ms = self.settings.sessions, lane.slot, lane.start_ms
            on_trace(trace)
            admit(lane.slot, lane.local_ms)

        def failed(lane: SessionLane) -> None:
            on_fail(lane.session, lane.failure)
            admit(lane.slot, lane.local_ms)

        for slot in range(self.settings.sessions):
            admit(slot, 0.0)
        self.device.run(on_finished=finished, on_failed=failed if on_fail is not None else None)

    def _start(self, slot: int, free_ms: float, session, audio, on_chunk) -> None:
        engine = self.engines[slot]
        offset = stagger_offset_ms(self.settings.stagger, self._admitted, slot, 1000.0 * session.chunk_s, self.seed)
        self._admitted += 1
        lane = SessionLane(self.device, slot, max(free_ms, self.device.now) + offset, engine.adapter.protocol)
        lane.session, lane.where = session, lambda: engine.where
        engine.clock = lane
        engine.watchdog = self.device.watchdog

        def observe(chunk) -> None:
            lane.observe_chunk(chunk.kind, chunk.output, chunk_samples(audio, chunk.span.start_s, chunk.span.end_s))
            if on_chunk is not None:
                on_chunk(chunk)

        self.device.add(lane, lambda lane: engine.replay(session, audio, on_chunk=observe))
