"""Measuring a talker's cost on this machine (``python -m ticktock.calibrate talker=<name>``).

Each of ``PIECES`` (chunk-sized pieces of a spoken reply, 1 to 9 words) is synthesized ``warmup`` times, then timed
``repeats`` times; the median wall time of each piece and its audio length give a least-squares line
``first_packet_ms + ms_per_audio_s * seconds`` (both at least 0): a ``TalkerCost`` for the cost profile's
``talkers:`` section, labelled with the device and the date. The embedded talkers do not stream (a piece's audio
is ready when its synthesis ends), so ``streams`` is false.

Example::

    >>> cost = measure_talker(EspeakTalker(), "CPU", warmup=1, repeats=3)        # doctest: +SKIP
    >>> cost.first_packet_ms > 0, cost.streams                                    # doctest: +SKIP
    (True, False)
"""

from __future__ import annotations

import statistics
import time
from datetime import date

from ticktock.clocks.talker_cost import TalkerCost
from ticktock.talkers.base import Talker

PIECES = (
    "Sure.", "Okay, your order", "is on its way", "and should arrive on Tuesday.", "The capital of Peru",
    "is Lima.", "Let me check that for you right now.", "Your flight TK212 leaves at", "nine forty in the morning",
    "from gate B twelve, and boarding", "starts thirty minutes before.", "Anything else?",
)


def fit_line(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """Least-squares ``y = a + b x`` with ``a, b >= 0`` (a slope below 0 becomes 0 and ``a`` the mean).

    >>> fit_line([1.0, 2.0, 3.0], [12.0, 14.0, 16.0])
    (10.0, 2.0)
    """
    mean_x, mean_y = statistics.fmean(xs), statistics.fmean(ys)
    spread = sum((x - mean_x) ** 2 for x in xs)
    slope = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys)) / spread if spread > 0 else 0.0
    if slope <= 0:
        return max(0.0, mean_y), 0.0
    intercept = mean_y - slope * mean_x
    if intercept < 0:  # through the origin instead
        return 0.0, sum(x * y for x, y in zip(xs, ys)) / sum(x * x for x in xs)
    return intercept, slope


def measure_talker(talker: Talker, device: str, warmup: int = 1, repeats: int = 5) -> TalkerCost:
    """The talker's cost on this machine, from ``PIECES`` (see the module docstring)."""
    seconds, costs = [], []
    for text in PIECES:
        for _ in range(warmup):
            talker.synthesize(text)
        times = []
        for _ in range(repeats):
            began = time.perf_counter()
            samples = talker.synthesize(text)
            times.append((time.perf_counter() - began) * 1000.0)
        seconds.append(len(samples) / talker.sample_rate)
        costs.append(statistics.median(times))
    first, per_second = fit_line(seconds, costs)
    return TalkerCost(round(first, 3), round(per_second, 3), streams=False, device=device,
                      provenance=f"MEASURED by `ticktock calibrate talker={talker.name}` on {date.today().isoformat()}: "
                                 f"{len(PIECES)} pieces of {min(seconds):.1f}-{max(seconds):.1f} s of audio, median of "
                                 f"{repeats} after {warmup} warm-up, least-squares line; not streaming (audio ready at "
                                 "the end of each piece)")
