"""The modeled talker (``talker=modeled``): a real model's talker, charged from a cost entry, spoken by eSpeak.

No real talker runs here (no weights, maybe no GPU), but its cost can be modeled: ``entry`` names a talker cost in a
cost profile's ``talkers:`` section (``ticktock.clocks.talker_cost.TalkerCost``: first-packet time, time per second of
audio, whether it streams), and every piece is charged that, under the wall clock as under the modeled one. The
audio itself (its length decides the playback, and it is what ``--listen`` plays) comes from the eSpeak talker.

The shipped profile's entries say where each number comes from (measured here, or derived from a published figure
with its setup); the real models' own talkers publish no talker-only latency, so they have no entry of their own
(see the docs' talker page).

Example::

    >>> talker = ModeledTalker(entry="cosyvoice2-l20")                       # doctest: +SKIP
    >>> talker.cost.first_packet_ms, talker.cost.streams                     # doctest: +SKIP
    (218.0, True)
"""

from __future__ import annotations

from pathlib import Path

from ticktock.talkers.base import TalkerError
from ticktock.talkers.espeak import EspeakTalker


class ModeledTalker(EspeakTalker):
    name = "modeled"

    def __init__(self, entry: str, profile: str | Path, voice: str = "en-us", rate_wpm: int = 175):
        super().__init__(voice=voice, rate_wpm=rate_wpm)
        from ticktock.clocks.modeled import CostProfile

        loaded = CostProfile.load(profile)
        talkers = loaded.talkers or {}
        if entry not in talkers:
            known = ", ".join(sorted(talkers)) or "none"
            raise TalkerError(f"talker.entry: {entry!r} is not a talker cost of profile {loaded.name} ({profile}); "
                              f"its talkers: {known}")
        self.entry = entry
        self.cost = talkers[entry]
        self.profile_name = loaded.name

    def describe(self) -> dict:
        return {**super().describe(), "entry": self.entry, "profile": self.profile_name}
