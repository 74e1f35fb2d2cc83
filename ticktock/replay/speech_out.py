"""A talker on the run's device: the speech-out stage of a replay with ``talker=espeak|piper|modeled``.

After chunk t is committed, its spoken text (``ticktock.talkers.base.spoken_text``) is synthesized by the talker as
one piece of device work (``clocks.base.TALK``) on the run's clock: measured under the wall clock, charged from the
talker's cost (``TalkerCost``: the talker's own for ``talker=modeled``, else the cost profile's ``talkers.<name>``)
under the modeled clock. The engine runs it before chunk t+1's idle window: it shrinks that window, and what runs
past chunk t+1's arrival is carried into its latency, as it would be on one GPU; on a shared device it is scheduled
with the other sessions' work (as post-audio work: a user is waiting for it).

Speculative synthesis (``IdleWindow.speak_ahead``, the Speculative Listening knob ``speak_ahead``): in chunk t+1's
idle window a decoder may synthesize the spoken text of its leading draft, charged to the window. If chunk t+1's
committed spoken text is exactly a text synthesized ahead, that audio is used and is ready at once; otherwise the
text is synthesized after the commit as without the knob. The audio played is always the talker's audio of exactly
the committed text, so for a talker whose audio depends on the text alone (``text_only``) it is byte for byte the
audio a replay without speculation plays.

Example::

    speech = SpeechOut(EspeakTalker(), cost=clock.talker_cost("espeak"))
    engine = ReplayEngine(adapter, decoder, clock, speech=speech)
    trace = engine.replay(session, audio)
    [c.speech.text for c in trace.chunks if c.speech and c.speech.text][:2]   # e.g. ['Sure, the', 'capital is']
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from ticktock.clocks.base import TALK, DeviceWork, Stopwatch
from ticktock.adapters.base import spoken_text
from ticktock.clocks.talker_cost import TalkerCost
from ticktock.talkers.base import Talker


@dataclass(frozen=True)
class SpokenPiece:
    """A committed chunk's speech: its ``text`` ("" when it speaks nothing), ``audio_s`` seconds of audio (its samples'
    ``audio_sha256``), ``talker_ms`` of the run's clock spent synthesizing it after the commit (0 when it was
    synthesized ahead), ``ready_ms`` from the commit until its audio can play, and whether it was synthesized ``ahead``
    (in the idle window, speculatively); ``prepared``: texts synthesized ahead for the chunk; ``samples``: the audio
    itself (float32 at the talker's ``sample_rate``; None when it speaks nothing), which a server streams to its client
    and result rows leave out."""

    text: str
    audio_s: float
    audio_sha256: str | None
    talker_ms: float
    ready_ms: float
    ahead: bool
    prepared: int = 0
    samples: object = field(default=None, repr=False, compare=False)
    sample_rate: int = 0


def samples_sha256(samples) -> str:
    """SHA-256 of the samples' float32 bytes (what byte-equality of two replays' audio compares)."""
    import numpy as np

    return hashlib.sha256(np.ascontiguousarray(samples, dtype=np.float32).tobytes()).hexdigest()


class SpeechOut:
    """``talker`` on the run's clock; ``cost`` prices its work (None: measured, under the wall clock)."""

    def __init__(self, talker: Talker, cost: TalkerCost | None = None):
        self.talker = talker
        self.cost = talker.cost or cost

    @classmethod
    def for_clock(cls, talker: Talker, clock) -> "SpeechOut":
        """The stage for a run on ``clock``: the talker's own cost, else the clock's (a profile's entry; None: wall)."""
        return cls(talker, talker.cost or clock.talker_cost(talker.name))

    def synthesize(self, stopwatch: Stopwatch, adapter, text: str):
        """Run the talker on ``text`` as device work on ``stopwatch``; returns (samples, its ``WorkDone``)."""
        def priced(samples):
            return None if self.cost is None else self.cost.work_ms(self.audio_s(samples))

        done = stopwatch.run(DeviceWork(TALK, lambda: self.talker.synthesize(text), adapter, priced=priced))
        return done.result, done

    def audio_s(self, samples) -> float:
        return len(samples) / self.talker.sample_rate

    def speak(self, clock, adapter, output, prepared: dict) -> SpokenPiece:
        """The speech of a committed chunk's ``output``: synthesized now on a fresh stopwatch of ``clock``, or taken
        from ``prepared`` (text -> samples synthesized ahead) when its text is there."""
        text = spoken_text(output, adapter)
        if not text:
            return SpokenPiece("", 0.0, None, 0.0, 0.0, False, len(prepared))
        if text in prepared:
            samples = prepared[text]
            return SpokenPiece(text, self.audio_s(samples), samples_sha256(samples), 0.0, 0.0, True, len(prepared),
                               samples, self.talker.sample_rate)
        watch = clock.stopwatch()
        samples, done = self.synthesize(watch, adapter, text)
        elapsed, audio_s = watch.elapsed_ms(), self.audio_s(samples)
        in_work = done.charged_ms if self.cost is None else self.cost.ready_ms(audio_s)  # first audio within the work
        ready = elapsed - done.charged_ms + min(in_work, done.charged_ms)
        return SpokenPiece(text, audio_s, samples_sha256(samples), elapsed, ready, False, len(prepared), samples,
                           self.talker.sample_rate)

    def describe(self) -> dict:
        return {**self.talker.describe(), "charged": "measured" if self.cost is None else self.cost.to_json()}
