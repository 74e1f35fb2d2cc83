"""The clock contract.

A replay never sleeps: arrival times are simulated, and the time each piece of work takes comes from a
*stopwatch*. The engine opens one stopwatch per phase (a chunk's post-audio work, an idle window) and
every target forward and audio encoding inside the phase runs through it (``Stopwatch.run(DeviceWork)``):
a session alone runs the work at once and charges it; a session sharing a device with others
(``ticktock.replay.device``) has it scheduled among theirs, and its stopwatches read the device's time.

- ``wall``: the stopwatch reads ``time.perf_counter`` (device-synchronised), so decoder bookkeeping,
  Python overhead and everything else in the phase counts.
- ``modeled``: the stopwatch sums a cost profile's charge for each forward (a function of query tokens and
  context length) and each audio encoding; the result is deterministic and hardware-independent.

Example::

    >>> from ticktock.clocks.modeled import ModeledClock, CostProfile
    >>> clock = ModeledClock(CostProfile.constant(forward_ms=20.0, encode_ms=5.0))
    >>> watch = clock.stopwatch()
    >>> watch.charge_encode(wall_ms=0.3), watch.charge_forward(11, 500, wall_ms=1.2)
    (5.0, 20.0)
    >>> watch.elapsed_ms()
    25.0
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Callable

FORWARD = "forward"
ENCODE = "encode"
TALK = "talk"  # a talker's synthesis of one piece of speech (``ticktock.talkers``)


@dataclass
class DeviceWork:
    """One piece of device work of one session: a target forward or an audio encoding.

    ``run`` does the work; ``adapter`` is the session's model adapter (its ``synchronize`` is the device
    barrier); a forward also says its ``query_tokens`` and ``context_tokens`` (what a cost profile charges)
    and its call (``segments``, ``tree``, ``logits_from``), so a shared device can run several sessions'
    forwards as one batched step (``ticktock.replay.device``). ``hypothesis`` is what a draft forward extends
    (the tokens of the hypothesis so far; empty for post-audio work): a draft scheduler may read it. An
    encoding says ``audio_fraction``, the share of its chunk's audio it encodes (1 for a whole chunk; less for
    a piece encoded as it arrives: ``IdleWindow.prefill_arrived``) and ``first_audio`` whether it is its session's
    first chunk (a cost profile may charge a cold start: ``encode_first_ms``); ``call`` is ``(samples, peek)``, so a
    shared device can encode several sessions' audio in one step (``ModelAdapter.encode_many``). ``early_prefill``: idle-window work that feeds
    arrived audio into the cache (an encoding or forward of early prefill: work the chunk's post-audio pass would
    otherwise do; a shared device's draft policy may favour it). ``silence_after``: an encoding that, in the same
    step, also encodes that many samples of silence from the state its audio leaves, then rolls them back (the next
    chunk's silence hypothesis, ready when its idle window opens: ``ticktock.replay.engine``); its result is then
    ``(embeddings, silence embeddings)``, and it is charged as one step of two encodings (``encode_pieces``). Other
    work (a talker's synthesis, ``TALK``) says its own price: ``priced(result)`` is the milliseconds it costs (from a
    talker cost entry), or None to charge the measured time (under the wall clock).
    """

    kind: str
    run: Callable[[], Any]
    adapter: Any
    query_tokens: int = 0
    context_tokens: int = 0
    call: tuple = ()
    hypothesis: tuple[int, ...] = field(default_factory=tuple)
    audio_fraction: float = 1.0
    priced: Callable[[Any], float | None] | None = None
    early_prefill: bool = False
    first_audio: bool = False
    silence_after: int = 0

    def with_silence(self, embeddings):
        """An encoding's result: ``embeddings`` of its audio, with the silence it encodes next from the state that audio
        left, rolled back, as ``(embeddings, silence)`` when it does (``silence_after``)."""
        if not self.silence_after:
            return embeddings
        import numpy as np

        return embeddings, self.adapter.peek_audio(np.zeros(self.silence_after, dtype=np.float32))


def encode_pieces(work: DeviceWork) -> list[tuple[float, bool]]:
    """The encodings an encoding step of ``work`` holds, as a cost profile prices them: (audio fraction, first) for
    its audio, and a whole chunk for the silence it encodes after it (``DeviceWork.silence_after``).

    >>> encode_pieces(DeviceWork(ENCODE, run=None, adapter=None, audio_fraction=0.5))
    [(0.5, False)]
    >>> encode_pieces(DeviceWork(ENCODE, run=None, adapter=None, silence_after=16000))
    [(1.0, False), (1.0, False)]
    """
    audio = [(work.audio_fraction, work.first_audio)]
    return audio + [(1.0, False)] if work.silence_after else audio


def step_pieces(works: list[DeviceWork]) -> list[tuple[float, bool]]:
    """The encodings one step of several works' encodings holds (``encode_pieces`` of each, in order)."""
    return [piece for work in works for piece in encode_pieces(work)]


class WindowClosed(Exception):
    """Idle-window work that could not start before the window closed (the next chunk's audio arrived while it
    waited for a device shared with other sessions): it is dropped, not run. A decoder drafting in an idle
    window may catch it to keep the drafts it already has; the engine rolls the model state back otherwise."""


class WindowOver(BaseException):
    """An idle window that goes on asking for work after its work was dropped (``WindowClosed``, caught by the
    decoder, ``MAX_REFUSED`` times): the shared device ends the window here. A ``BaseException``, so a decoder's
    ``except Exception`` cannot keep asking for ever; the engine ends the window and rolls the model back, and the
    chunk's post-audio pass runs as usual."""


MAX_REFUSED = 64  # idle-window work an idle window may ask for after its window closed, before ``WindowOver``


@dataclass
class WorkDone:
    """The result of device work, its measured ``wall_ms`` and the ``charged_ms`` the clock counted for it;
    ``waited_ms``: time it waited for the device while other sessions' work ran (0 for a session alone);
    ``batch_size``: sessions whose forwards ran in the same step (1 unless batched)."""

    result: Any
    wall_ms: float
    charged_ms: float
    waited_ms: float = 0.0
    batch_size: int = 1


class Stopwatch(ABC):
    waited_ms = 0.0  # time let pass with no work in this phase (``wait``)
    timer = time.perf_counter  # the seconds its work is measured in (a wall clock's may be fixed by a test)

    def __init__(self):
        self._wall_start = time.perf_counter()

    def wait(self, ms: float) -> None:
        """Let ``ms`` pass with no work: the device idles, e.g. while the next chunk's audio streams in during an
        idle window. The phase's time (``elapsed_ms``) moves on by ``ms``; nothing runs, nothing sleeps, and it is
        not charged as work (``waited_ms`` keeps the total)."""
        if ms > 0:
            self._advance(ms)
            self.waited_ms += ms

    def _advance(self, ms: float) -> None:
        raise NotImplementedError(f"{type(self).__name__} cannot let time pass without work (wait): a session sharing "
                                  "a device is scheduled by the device")

    @abstractmethod
    def elapsed_ms(self) -> float:
        """Time spent in this phase so far, on this clock."""

    def wall_ms(self) -> float:
        """Wall time of this phase so far (measured, whatever the clock)."""
        return (time.perf_counter() - self._wall_start) * 1000.0

    def run(self, work: DeviceWork) -> WorkDone:
        """Do ``work`` now (device-synchronised) and charge it to this phase. (On a shared device, the work of an
        idle window may instead raise ``WindowClosed``.)"""
        work.adapter.synchronize()
        start = self.timer()
        result = work.run()
        work.adapter.synchronize()
        wall = (self.timer() - start) * 1000.0
        if work.kind == FORWARD:
            return WorkDone(result, wall, self.charge_forward(work.query_tokens, work.context_tokens, wall))
        if work.priced is not None:
            return WorkDone(result, wall, self.charge_priced(work.priced(result), wall))
        if work.silence_after:
            return WorkDone(result, wall, self.charge_encode_batch(encode_pieces(work), wall))
        return WorkDone(result, wall, self.charge_encode(wall, work.audio_fraction, work.first_audio))

    @abstractmethod
    def charge_forward(self, query_tokens: int, context_tokens: int, wall_ms: float) -> float:
        """Account one target forward; returns the milliseconds charged for it."""

    def forward_estimate_ms(self, query_tokens: int, context_tokens: int) -> float | None:
        """What a forward of this shape is expected to cost on this phase's clock before it runs: a cost profile's
        price, or what the measuring clock's forwards cost so far (a least-squares line over query tokens); None when
        nothing is known yet. Decoders size their draft trees by it (``ChunkStep.verify``'s ``cost_cap``)."""
        return None

    @abstractmethod
    def charge_encode(self, wall_ms: float, fraction: float = 1.0, first: bool = False) -> float:
        """Account one audio encoding of ``fraction`` of a chunk's audio (``first``: its session's first chunk);
        returns the milliseconds charged."""

    def charge_encode_batch(self, pieces: list[tuple[float, bool]], wall_ms: float) -> float:
        """Account one step that encodes several sessions' audio, given as (audio fraction, first) per session."""
        raise NotImplementedError(f"{type(self).__name__} cannot charge batched encodings")

    def charge_batch(self, shapes: list[tuple[int, int]], wall_ms: float) -> float:
        """Account one batched step of several sessions' forwards, given as (query, context) tokens."""
        raise NotImplementedError(f"{type(self).__name__} cannot charge batched steps")

    def charge_priced(self, cost_ms: float | None, wall_ms: float) -> float:
        """Account work that says its own price (``DeviceWork.priced``): ``cost_ms``, or the measured ``wall_ms`` when
        it has none (a measuring clock only)."""
        raise NotImplementedError(f"{type(self).__name__} cannot charge priced work")


class Clock(ABC):
    name: str
    measured = False  # True: costs are measured wall time (work runs as it would on the device)
    timer = time.perf_counter  # the seconds a measuring clock reads (a test may fix it: ``WallClock(timer=...)``)

    @abstractmethod
    def stopwatch(self, window_ms: float | None = None) -> Stopwatch:
        """A stopwatch for one phase: post-audio work (``window_ms`` None) or an idle window that closes
        ``window_ms`` after it opens (when the next chunk's audio arrives). A session replayed alone
        ignores ``window_ms``; a session sharing a device (``ticktock.replay.device``) schedules by it."""

    def estimate_ms(self, query_tokens: int, context_tokens: int) -> float | None:
        """What a forward is expected to cost before it runs: a cost profile's price, a wall clock's line of the forwards
        it measured so far; None when nothing is known yet."""
        return None

    def estimate_batch_ms(self, shapes: list[tuple[int, int]]) -> float | None:
        """What one batched step of forwards, given as (query, context) tokens, is expected to cost (a cost profile with
        a batch dimension knows; None otherwise)."""
        return None

    @property
    def batches_encodings(self) -> bool:
        """Whether this clock can charge one step of several audio encodings (``Stopwatch.charge_encode_batch``): a
        measuring clock measures it, a cost profile needs a batch dimension for encodings."""
        return False

    def estimate_encode_ms(self, pieces: list[tuple[float, bool]]) -> float | None:
        """What one step encoding these pieces of audio (audio fraction, first) is expected to cost: a cost profile
        knows (for several, where it has a batch dimension of encodings); None otherwise."""
        return None

    def talker_cost(self, name: str):
        """The ``TalkerCost`` this clock charges talker ``name``'s work by (a cost profile's entry), or None when the
        work is measured (a wall clock)."""
        return None

    def wait_until(self, at_ms: float) -> None:
        """Return once ``at_ms`` (milliseconds from the session's start) has come: the moment a chunk's audio
        has arrived. A session replayed alone keeps relative time only, so this returns at once; a session
        sharing a device blocks until the device's time reaches it."""

    def describe(self) -> dict:
        return {"name": self.name}
