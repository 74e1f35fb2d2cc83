"""How noisy a wall-clock run's timings are: the same fixed forward, timed at the start, every few sessions
and at the end of the run.

On a loaded machine the same listen chunk can take 31 ms or 900 ms, and a wall-clock run cannot tell
that from a slow decoder. So a run under ``clock=wall`` times a fixed **probe**: one chunk's prefill (the
unit head and 1 s of fixed noise audio, encoded and forwarded) on a scratch session that the next real
session's ``start_session`` discards; the adapter is rolled back (``snapshot``/``restore``) between
repetitions, so every repetition does exactly the same work. Each measurement is ``repeats`` timed
repetitions after one warm-up; there is one at the start, one before every ``every``-th session and one at
the end. run.json's ``timing_noise`` keeps every sample and the summary: median, fastest, slowest,
``spread`` = slowest / fastest, the coefficient of variation, and ``noisy`` = spread above ``max_spread``
(the tables flag such runs). A quiet machine keeps the spread near 1.

Example::

    >>> summarize([10.0, 10.5, 11.0, 30.0], max_spread=1.5)
    {'median_ms': 10.75, 'min_ms': 10.0, 'max_ms': 30.0, 'spread': 3.0, 'cv': 0.55, 'noisy': True}
"""

from __future__ import annotations

import statistics
import time

PROBE = "one chunk prefill (unit head + 1 s of fixed noise audio) on a scratch session, device-synchronised"


def summarize(samples: list[float], max_spread: float) -> dict:
    """Median, fastest and slowest (ms), spread (slowest / fastest), coefficient of variation, noisy flag."""
    low, high, mean = min(samples), max(samples), statistics.fmean(samples)
    spread = high / low if low > 0 else float("inf")
    cv = statistics.pstdev(samples) / mean if mean > 0 else 0.0
    return {"median_ms": round(statistics.median(samples), 4), "min_ms": round(low, 4), "max_ms": round(high, 4),
            "spread": round(spread, 3), "cv": round(cv, 3), "noisy": spread > max_spread}


def probe_audio(num_samples: int = 16_000):
    """The probe's fixed audio: 1 s of low noise at 16 kHz, the same in every run."""
    import numpy as np

    return np.random.default_rng(0).normal(0.0, 0.05, num_samples).astype(np.float32)


def time_probe(adapter, repeats: int, audio=None) -> list[float]:
    """Milliseconds of ``repeats`` identical probe forwards (after one warm-up) on a scratch session."""
    audio = probe_audio() if audio is None else audio
    adapter.start_session(None, [])
    state = adapter.snapshot()
    head = adapter.protocol.unit_head(0)
    samples = []
    for i in range(repeats + 1):
        adapter.restore(state)
        adapter.synchronize()
        start = time.perf_counter()
        adapter.forward([head, adapter.encode_audio(audio)])
        adapter.synchronize()
        if i:  # the first repetition warms caches up
            samples.append((time.perf_counter() - start) * 1000.0)
    adapter.restore(state)
    return samples


class NoiseProbe:
    """The timing-noise measurements of one run; ``record`` is the dict kept in run.json as ``timing_noise``
    (updated in place, so every run.json write carries the measurements so far).

    Example (any adapter; the run calls ``before_session`` before each session and ``finish`` at the end)::

        probe = NoiseProbe(adapter, repeats=5, every=10, max_spread=1.5)
        probe.before_session()      # session 0: measures "start"
        ...
        probe.finish()              # measures "end"
        probe.record["spread"]      # e.g. 1.12
    """

    def __init__(self, adapter, repeats: int, every: int, max_spread: float):
        self.adapter, self.repeats, self.every = adapter, repeats, every
        self.sessions_seen = 0
        self.record = {"probe": PROBE, "repeats": repeats, "every_sessions": every, "max_spread": max_spread,
                       "measurements": []}

    def before_session(self) -> None:
        """Measure before the first session and before every ``every``-th one."""
        if self.sessions_seen % self.every == 0:
            self.measure("start" if self.sessions_seen == 0 else f"after {self.sessions_seen} sessions")
        self.sessions_seen += 1

    def finish(self) -> None:
        self.measure("end")

    def measure(self, when: str) -> None:
        samples = time_probe(self.adapter, self.repeats)
        self.record["measurements"].append({"when": when, "time": time.time(),
                                            "ms": [round(ms, 4) for ms in samples]})
        every_sample = [ms for m in self.record["measurements"] for ms in m["ms"]]
        self.record.update(summarize(every_sample, self.record["max_spread"]))
