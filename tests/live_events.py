"""Server events as a live client records them, built short for the measurement tests (a helper module): the same
``ticktock.wire`` classes ``ticktock serve`` sends and the client parses."""

from __future__ import annotations

import numpy as np

from ticktock.wire import (AudioDelta, FunctionCallArgumentsDone, ResponseListen, ResponseSpeak, TextDelta,
                           TranscriptDelta, UnitReport)

ITEM = "item_1"


def listen(unit: int) -> ResponseListen:
    """``response.listen`` for ``unit`` (a standalone decision)."""
    return ResponseListen(UnitReport(unit))


def speak(unit: int, response_id: str, kind: str | None = None) -> ResponseSpeak:
    """``response.speak`` for ``unit`` in response ``response_id`` (``kind="backchannel"`` for a backchannel)."""
    return ResponseSpeak(response_id, ITEM, UnitReport(unit, kind=kind))


def said(response_id: str, text: str, transcript: bool = False) -> TextDelta:
    """A text delta of the reply (``transcript``: the words of its speech)."""
    return (TranscriptDelta if transcript else TextDelta)(response_id, ITEM, text)


def called(response_id: str, call_id: str, name: str, arguments: str) -> FunctionCallArgumentsDone:
    """A complete function call."""
    return FunctionCallArgumentsDone(response_id, f"item_{call_id}", call_id, name, arguments)


def audio(response_id: str, seconds: float) -> AudioDelta:
    """``seconds`` of silence at 24 kHz."""
    return AudioDelta.of_samples(response_id, ITEM, np.zeros(int(24_000 * seconds), dtype=np.float32), 24_000)
