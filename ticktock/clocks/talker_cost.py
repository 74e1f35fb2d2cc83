"""What a talker's work costs on a device: the ``talkers:`` entries of a cost profile (``ticktock.clocks.modeled``).

A talker (``ticktock.talkers``) turns a speak chunk's text into audio on the same device as the model; its cost is a
first-packet time and a time per second of audio it makes, measured (``python -m ticktock.calibrate talker=...``) or
derived from a published figure, with the device and the source named.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

from ticktock.errors import ConfigError, shown


class TalkerCostError(ConfigError):
    """A talker cost entry is malformed or missing; the message names the entry and field (exit code 2)."""


MAX_TALKER_MS = 3_600_000.0  # one hour: any cost beyond it is a typo


@dataclass(frozen=True)
class TalkerCost:
    """What a talker's work for one piece of speech costs on a device: ``first_packet_ms`` before its first audio,
    and ``ms_per_audio_s`` per second of audio it makes. The device is busy for
    ``first_packet_ms + ms_per_audio_s * seconds``; the audio is ready to play after ``first_packet_ms`` when the
    talker ``streams`` (its later audio comes faster than it plays), else only when the whole piece is done.

    A cost profile holds such entries under ``talkers:`` (``ticktock.clocks.modeled``), each with the ``device`` it
    was measured on and its ``provenance`` (measured by ``ticktock calibrate``, or derived from published figures).

    Example::

        >>> cost = TalkerCost(first_packet_ms=200.0, ms_per_audio_s=120.0, streams=True)
        >>> cost.work_ms(1.5), cost.ready_ms(1.5)
        (380.0, 200.0)
        >>> TalkerCost(first_packet_ms=4.0, ms_per_audio_s=3.0).ready_ms(2.0)
        10.0
    """

    first_packet_ms: float
    ms_per_audio_s: float
    streams: bool = False
    device: str = ""
    provenance: str = ""

    def work_ms(self, audio_s: float) -> float:
        """Device time of the work that makes ``audio_s`` seconds of speech."""
        return self.first_packet_ms + self.ms_per_audio_s * audio_s

    def ready_ms(self, audio_s: float) -> float:
        """Time from the work's start until its audio can start to play."""
        return self.first_packet_ms if self.streams else self.work_ms(audio_s)

    def to_json(self) -> dict:
        return {"first_packet_ms": self.first_packet_ms, "ms_per_audio_s": self.ms_per_audio_s,
                "streams": self.streams, "device": self.device, "provenance": self.provenance}

    @staticmethod
    def parse(data, where: str) -> "TalkerCost":
        """A cost from its mapping (a profile's ``talkers.<name>``); a ``TalkerCostError`` names ``where`` and the field.

        >>> TalkerCost.parse({"first_packet_ms": -1, "ms_per_audio_s": 2}, "talkers.espeak")
        Traceback (most recent call last):
        ...
        ticktock.clocks.talker_cost.TalkerCostError: talkers.espeak.first_packet_ms: must be a finite number of milliseconds from 0 to 3600000, got -1
        """
        problem = cost_problem(data)
        if problem:
            raise TalkerCostError(f"{where}.{problem[0]}: {problem[1]}" if problem[0] else f"{where}: {problem[1]}")
        return TalkerCost(float(data["first_packet_ms"]), float(data["ms_per_audio_s"]), bool(data.get("streams", False)),
                          str(data.get("device", "")), str(data.get("provenance", "")))


COST_FIELDS = ("first_packet_ms", "ms_per_audio_s", "streams", "device", "provenance")


def cost_problem(data) -> tuple[str, str] | None:
    """The first problem of a talker cost mapping, as (field, what is wrong), or None.

    >>> cost_problem({"first_packet_ms": 1.0, "ms_per_audio_s": 2.0}) is None
    True
    >>> cost_problem({"first_packet_ms": 1.0, "ms_per_audio": 2.0})
    ('ms_per_audio', 'unknown field (known: first_packet_ms, ms_per_audio_s, streams, device, provenance)')
    """
    if not isinstance(data, dict):
        return "", f"must be a mapping of {', '.join(COST_FIELDS)}, got {type(data).__name__}"
    for key in data:
        if key not in COST_FIELDS:
            return str(key), f"unknown field (known: {', '.join(COST_FIELDS)})"
    for key in ("first_packet_ms", "ms_per_audio_s"):
        if key not in data:
            return key, "missing"
        value = data[key]
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 <= value <= MAX_TALKER_MS \
                or not math.isfinite(value):  # compared first: a huge integer is out of range, not an OverflowError
            return key, f"must be a finite number of milliseconds from 0 to {MAX_TALKER_MS:.0f}, got {shown(value)}"
    if not isinstance(data.get("streams", False), bool):
        return "streams", f"must be true or false, got {data['streams']!r}"
    for key in ("device", "provenance"):
        if isinstance(data.get(key), (list, dict, tuple, set)):
            return key, f"must be text, got {type(data[key]).__name__}"
    return None
