"""The client's player: the assistant's speech played in real time as its audio deltas arrive, so the client can
tell the server how much it has played (``playback.ack``).

It places the deltas received so far with the run's playback model (``ticktock.results.playback.place``, the
``playback_delay_ms`` jitter buffer included): each delta is a piece ready when it arrived, and a new response id
opens a new reply. The session's stalls and first audio are computed afterwards from the same stamps
(``ticktock.endpoints.measure``); the player only answers "how much has played by now".

    >>> player = LivePlayer()
    >>> player.add(1000.0, 0.5, "resp_1"); player.add(1200.0, 0.5, "resp_1")
    >>> player.played_ms(1300.0), player.played_ms(5000.0)
    (300.0, 1000.0)
"""

from __future__ import annotations

from ticktock.results.playback import Piece, place


class LivePlayer:
    """Audio deltas as they arrive (``add``), played back to back within a reply (see the module docstring)."""

    def __init__(self, delay_ms: float = 0.0):
        self.delay_ms = float(delay_ms)
        self.pieces: list[Piece] = []
        self.reply: str | None = None

    def add(self, at_ms: float, audio_s: float, response_id: str | None) -> None:
        opens = not self.pieces or response_id != self.reply
        self.reply = response_id
        self.pieces.append(Piece(at_ms, 0.0, audio_s, opens))

    def played_ms(self, now_ms: float) -> float:
        """Milliseconds of speech played by ``now_ms`` (from the session's start)."""
        if not self.pieces:
            return 0.0
        placed = place(self.pieces, self.delay_ms)
        played = 0.0
        for piece, where in zip(self.pieces, placed):
            start = piece.arrival_ms + where.start_ms
            played += min(max(0.0, now_ms - start), 1000.0 * piece.audio_s)
        return played
