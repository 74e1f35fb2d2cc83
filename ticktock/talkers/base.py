"""The talker contract: what turns a speak chunk's committed text into the audio the user hears.

In a full-duplex model the text of each speak chunk goes through a talker (MiniCPM-o 4.5's TTS head and
Token2Wav, Qwen2.5-Omni's Talker and token2wav) on the same device as the model. A replay with a talker
(``talker=espeak|piper|modeled``; ``talker=none``, the default, has none) synthesizes every speak chunk's text
once the chunk is committed; the work is charged to the run's clock and delays the next chunk's work
(``ticktock.replay.speech_out``), and the playback model (``ticktock.results.playback``) places the audio.

A talker declares:

- ``name``: the talker, as its config and the cost profile's ``talkers`` entry name it;
- ``sample_rate`` of the samples ``synthesize`` returns (float32, mono);
- ``text_only``: True when its audio depends on the text alone (then speculative synthesis is exact: audio
  made for a draft's text before the chunk is verified is byte for byte the audio of that text after);
- ``cost`` (optional): a ``ticktock.clocks.talker_cost.TalkerCost`` that prices its work whatever the run's clock (``talker=modeled``);
  None (the embedded talkers): measured under the wall clock, charged from the profile's entry under the
  modeled one.

Example (a talker of one's own: a tone whose length follows the text)::

    >>> import numpy as np
    >>> class Beeper(Talker):
    ...     name, sample_rate = "beeper", 8000
    ...     def synthesize(self, text):
    ...         return np.full(80 * len(text), 0.1, dtype=np.float32)
    >>> len(Beeper().synthesize("hi")), Beeper().describe()
    (160, {'name': 'beeper', 'sample_rate': 8000, 'text_only': True})
"""

from __future__ import annotations

import re
import unicodedata
from abc import ABC, abstractmethod

from ticktock.clocks.talker_cost import TalkerCost
from ticktock.errors import ConfigError


class TalkerError(ConfigError):
    """A talker option is not allowed, or a talker cannot run here (a missing extra, a cost entry the profile
    lacks); the message names the key and what to do (exit code 2)."""


class Talker(ABC):
    name: str = "talker"
    sample_rate: int = 22_050
    text_only: bool = True
    cost: TalkerCost | None = None

    @abstractmethod
    def synthesize(self, text: str):
        """The audio of ``text`` (float32 mono samples at ``sample_rate``); deterministic for the same text."""

    def describe(self) -> dict:
        """What run.json says of the talker."""
        data = {"name": self.name, "sample_rate": self.sample_rate, "text_only": self.text_only}
        if self.cost is not None:
            data["cost"] = self.cost.to_json()
        return data


def ascii_text(text: str) -> str:
    """``text`` as ASCII for the eSpeak engine (accents dropped, other characters left out), spaces collapsed.

    >>> ascii_text("Café  Zürich — ok")
    'Cafe Zurich ok'
    """
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    return re.sub(r"\s+", " ", re.sub(r"[^\x20-\x7e]", " ", folded)).strip()
