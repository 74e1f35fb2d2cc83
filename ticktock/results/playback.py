"""The playback model: when each piece of the assistant's speech plays, and where the voice stalls.

Every speak chunk of a replay with a talker yields one piece of audio (its committed text, synthesized). Piece t is
*ready* ``ready_ms`` after its chunk's audio arrived (the chunk's response time, plus the talker's time to its first
audio unless the piece was synthesized ahead in the idle window). A reply is a run of speak chunks inside one
assistant turn (``ticktock.results.rows.onset_flags``: a speak chunk opens a reply unless the chunk before it was a
speak chunk that did not end the turn). Within a reply:

- piece t starts playing at the later of its ready time and the end of the reply's previous piece;
- if it is ready only after the previous piece has finished, the voice stops in between: a *stall* of
  ``ready - previous end`` milliseconds (counted when longer than ``MIN_STALL_MS``, 10 ms: the gap a listener
  notices, and the threshold MiniCPM-o's own demo front-end counts buffer underruns by).

The first piece of a reply with audio starts when it is ready: its delay after the arrival of the reply's first chunk
is the reply's *first-audio onset* (the text's onset plus the talker's time to its first audio, or the text's onset
alone when the audio was synthesized ahead). A chunk without speech text (a decision alone) plays nothing and leaves
the reply as it was.

Example (1 s chunks; a reply of three pieces of 0.8 s, 1.8 s and 0.5 s, ready 300, 250 and 900 ms after arrival)::

    >>> pieces = [Piece(1000.0, 300.0, 0.8, True), Piece(2000.0, 250.0, 1.8, False), Piece(3000.0, 900.0, 0.5, False)]
    >>> [(p.start_ms, p.stall_ms) for p in place(pieces)]
    [(300.0, 0.0), (250.0, 150.0), (1050.0, 0.0)]

(piece 2 is ready at 2250 ms, 150 ms after piece 1 ended at 2100 ms: a stall; piece 3 is ready at 3900 ms but piece 2
plays until 4050 ms, so it starts 1050 ms after its arrival, without a stall.)

**Jitter buffer** (``delay_ms``, the run option ``playback_delay_ms``; 0: play as soon as ready, as above): a player
may hold a reply back until some of its audio is buffered, as MiniCPM-o's demo front-end does. A reply's first sound
then starts at the earliest time at which at least ``delay_ms`` of the reply's audio is ready (the lengths of its pieces
ready by then, added up), or every piece of the reply is ready (a reply shorter than the buffer still plays), and never
before its first piece is ready; its later pieces follow as above. The first audio comes later; the stalls shrink or
vanish. The same reply with a 1000 ms buffer: piece 1 alone is 800 ms of audio, so the buffer fills when piece 2 is
ready, at 2250 ms::

    >>> [(p.start_ms, p.stall_ms, p.onset_ms) for p in place(pieces, delay_ms=1000.0)]
    [(1250.0, 0.0, 1250.0), (1050.0, 0.0, None), (1850.0, 0.0, None)]

(piece 1 plays from 2250 to 3050 ms, piece 2 from 3050 to 4850 ms, piece 3 from 4850 ms: no stall, at the price of a
first audio 950 ms later, 1250 ms after the reply's first chunk arrived instead of 300 ms.)
"""

from __future__ import annotations

from dataclasses import dataclass

MIN_STALL_MS = 10.0


@dataclass(frozen=True)
class Piece:
    """One speak chunk's audio: its chunk's ``arrival_ms`` (from the session's start), ``ready_ms`` after that arrival,
    its length ``audio_s``, and whether it opens a reply."""

    arrival_ms: float
    ready_ms: float
    audio_s: float
    opens_reply: bool


@dataclass(frozen=True)
class Placed:
    """When a piece plays: ``start_ms`` after its chunk's arrival, and the ``stall_ms`` before it (the silence inside
    its reply between the previous piece's end and this one's start; 0 for a reply's first sound). ``onset_ms``: for
    the first piece of a reply that has audio, its start after the arrival of the reply's first chunk; else None."""

    start_ms: float
    stall_ms: float
    onset_ms: float | None = None


def place(pieces: list[Piece], delay_ms: float = 0.0) -> list[Placed]:
    """The playback of a session's pieces, in chunk order, each reply's first sound held back until ``delay_ms`` of
    its audio is ready (see the module docstring; 0: as soon as its first piece is ready)."""
    placed = []
    for reply in _replies(pieces):
        placed += _place_reply(reply, delay_ms)
    return placed


def _replies(pieces: list[Piece]) -> list[list[Piece]]:
    """The pieces cut into replies: a new one at every piece that opens a reply (pieces before the first such piece
    form a reply of their own).

    >>> [len(r) for r in _replies([Piece(0, 0, 1, True), Piece(1, 0, 1, False), Piece(2, 0, 1, True)])]
    [2, 1]
    """
    replies: list[list[Piece]] = []
    for piece in pieces:
        if piece.opens_reply or not replies:
            replies.append([])
        replies[-1].append(piece)
    return replies


def _place_reply(reply: list[Piece], delay_ms: float) -> list[Placed]:
    """One reply's playback: its first sound at ``buffered_start``, every later piece at the later of its ready time
    and the previous piece's end (a stall when it is ready after that end)."""
    audible = [piece for piece in reply if piece.audio_s > 0]
    if not audible:
        return [Placed(piece.ready_ms, 0.0) for piece in reply]
    origin = reply[0].arrival_ms if reply[0].opens_reply else audible[0].arrival_ms  # the reply's first chunk
    first_start = buffered_start(audible, delay_ms)
    placed, reply_end = [], None
    for piece in reply:
        ready = piece.arrival_ms + piece.ready_ms
        if piece.audio_s <= 0:  # nothing to play: the reply's timeline is unchanged
            placed.append(Placed(piece.ready_ms, 0.0))
            continue
        if reply_end is None:  # the reply's first sound
            start = first_start
            placed.append(Placed(piece.ready_ms if start == ready else start - piece.arrival_ms, 0.0, start - origin))
        else:
            start = max(ready, reply_end)
            placed.append(Placed(start - piece.arrival_ms, max(0.0, ready - reply_end)))
        reply_end = start + 1000.0 * piece.audio_s
    return placed


def buffered_start(audible: list[Piece], delay_ms: float) -> float:
    """When a reply's first sound starts (ms from the session's start), given its pieces with audio in chunk order:
    the earliest time at which ``delay_ms`` of their audio is ready, or all of it is; never before the first piece is
    ready.

    >>> reply = [Piece(1000.0, 300.0, 0.8, True), Piece(2000.0, 250.0, 1.8, False)]
    >>> buffered_start(reply, 0.0), buffered_start(reply, 800.0), buffered_start(reply, 1000.0), buffered_start(reply, 9000.0)
    (1300.0, 1300.0, 2250.0, 2250.0)
    """
    first_ready = audible[0].arrival_ms + audible[0].ready_ms
    if delay_ms <= 0:
        return first_ready
    buffered, ready = 0.0, first_ready
    for ready, audio_s in sorted((piece.arrival_ms + piece.ready_ms, piece.audio_s) for piece in audible):
        buffered += 1000.0 * audio_s
        if buffered >= delay_ms:
            break
    return max(ready, first_ready)


@dataclass(frozen=True)
class PlaybackSummary:
    """A session's playback: first-audio onset of each reply (ms after its first chunk's arrival), the stalls
    (count and total ms, those above ``MIN_STALL_MS``), and the assistant's speech in seconds."""

    first_audio_ms: list[float]
    num_stalls: int
    stall_ms: float
    speech_s: float

    @property
    def stalls_per_minute(self) -> float | None:
        """Stalls per minute of the assistant's speech (None without speech)."""
        return 60.0 * self.num_stalls / self.speech_s if self.speech_s > 0 else None


def summarize(pieces: list[Piece], placed: list[Placed]) -> PlaybackSummary:
    """The session's playback figures from its pieces and their placement.

    >>> pieces = [Piece(1000.0, 300.0, 0.8, True), Piece(2000.0, 250.0, 1.8, False), Piece(3000.0, 900.0, 0.5, False)]
    >>> summary = summarize(pieces, place(pieces))
    >>> summary.first_audio_ms, summary.num_stalls, summary.stall_ms, summary.speech_s, round(summary.stalls_per_minute, 1)
    ([300.0], 1, 150.0, 3.1, 19.4)
    """
    stalls = [p.stall_ms for p in placed if p.stall_ms > MIN_STALL_MS]
    return PlaybackSummary(
        first_audio_ms=[p.onset_ms for p in placed if p.onset_ms is not None],
        num_stalls=len(stalls),
        stall_ms=float(sum(stalls)),
        speech_s=float(sum(piece.audio_s for piece in pieces)),
    )
