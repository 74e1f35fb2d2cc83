"""Where a replay's audio comes from: a recording, or a live stream (``ticktock serve``).

The replay engine (``ticktock.replay.engine``) reads a session's audio through two calls, so the same loop replays a
recording and serves a live client:

- ``chunk(span)``: the samples of chunk ``span`` (16 kHz mono float32), called once the chunk's audio has arrived
  (the clock's ``wait_until`` returned);
- ``arriving(span, budget_ms)``: the chunk's audio as it streams in during the idle window before it, an object with
  ``ArrivingAudio``'s interface (``ticktock.decoders.idle``): it hands out only the samples that have arrived.

``RecordedAudio`` is a recording: every sample is known, and arrival is simulated on the run's clock (the window opens
``budget_ms`` before the chunk is complete). A live source (``ticktock.serve.live.LiveAudio``) hands out what a client
has really sent, and its clock blocks until the audio is there. A live stream that ends raises ``AudioEnded`` from
the clock's wait or from ``chunk``; the engine then ends the session with the chunks done so far.

Example::

    >>> import numpy as np
    >>> from ticktock.sessions.manifest import ChunkSpan
    >>> source = RecordedAudio(np.ones(24_000, dtype=np.float32))          # 1.5 s
    >>> span = ChunkSpan(1, 1.0, 2.0, True)
    >>> len(source.chunk(span)), float(source.chunk(span)[-1])              # zero-padded past the end
    (16000, 0.0)
    >>> source.arriving(span, budget_ms=250.0).arrived_ms(0.0)             # 750 ms arrived when the window opens
    750.0
"""

from __future__ import annotations

from ticktock.decoders.idle import ArrivingAudio
from ticktock.sessions.audio import SAMPLE_RATE, chunk_samples


class AudioEnded(Exception):
    """A live stream ended before the audio a replay waits for arrived (the client closed or stopped sending)."""


class RecordedAudio:
    """A recording's samples (16 kHz mono float32) as the engine's audio source."""

    def __init__(self, samples):
        self.samples = samples

    def chunk(self, span):
        return chunk_samples(self.samples, span.start_s, span.end_s)

    def arriving(self, span, budget_ms: float) -> ArrivingAudio:
        return ArrivingAudio(self.chunk(span), budget_ms, SAMPLE_RATE)


def as_audio_source(audio):
    """``audio`` as an audio source: a source as it is (it has ``chunk`` and ``arriving``), samples as a recording."""
    return audio if hasattr(audio, "arriving") and hasattr(audio, "chunk") else RecordedAudio(audio)
