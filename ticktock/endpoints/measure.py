"""A live session's record (``ticktock.endpoints.client.LiveRecord``) as rows of the ordinary result tables.

All times are on the client's monotonic clock, in ms from the session's start. ``end_t`` is when the frame completing
unit t left the client.

**Per-unit protocols** (the server decides every unit: vLLM-Omni's duplex contract, ``ticktock serve``):

- response time ``r_t`` = the arrival of unit t's decision (``response.listen`` / ``response.speak``) - ``end_t``;
- the replay's own recursion (``ticktock.replay.timeline.advance``) gives the rest: carried lag
  ``b_t = max(0, r_t - D)``, post-audio latency ``l_t = r_t - b_(t-1)`` (a server that answers unit t late delays
  unit t+1's response, not its post-audio latency), a deadline miss where ``r_t > D`` (D: the next unit's length,
  1000 ms);
- a unit's kind: ``tool`` when a function call came before its decision, else its decision (``speak`` / ``listen``;
  ``backchannel`` where the server says a speak decision is one: ``ticktock serve`` does);
  its text: the text deltas after its decision (the audio transcript when the server sends no text); a spoken unit
  ends its turn when the response ends (``response.done``, or a listen decision) before the next decision;
- response onset: ``r_t`` of the first speak unit of a reply (``ticktock.results.rows.onset_flags``, as Table 5);
  tool-call latency: the function call's arrival - ``end_t`` of its unit.

**Turn-based protocols** (OpenAI Realtime GA: no per-unit decisions) measure replies, not units: an event belongs to
the last unit whose audio was all sent when it arrived; a unit with a function call is ``tool``, one with text or
audio ``speak``, else ``listen``. A speaking unit's ``response_ms`` is its first output's arrival - ``end_t``; a
reply's onset (its first unit) is measured from the commit of the user's turn it answers (Full-Duplex-Bench's
definition: from the end of the user's turn), and so is a tool call's latency. Lag, post-audio latency and deadline
misses are not measured (null): the server does not say when it decided a unit it listened through.

**Playback** (both): every audio delta is a piece of the reply it belongs to, ready when it arrived, played by the
run's playback model (``ticktock.results.playback.place`` with ``playback_delay_ms``); a unit's playback columns sum
its deltas. First audio: from the end of the reply's first unit (turn-based: from the turn's commit).

Example (a duplex session of 3 units: the server listens, then answers unit 1 in 1300 ms and unit 2 on time)::

    >>> from ticktock.wire import ResponseListen, ResponseSpeak, TextDelta, UnitReport
    >>> record = toy_record([(1000.0, 0), (2000.0, 1), (3000.0, 2)], [
    ...     (1040.0, ResponseListen(UnitReport(0))), (3300.0, ResponseSpeak("r1", "i1", UnitReport(1))),
    ...     (3310.0, TextDelta("r1", "i1", "Hi")), (3350.0, ResponseListen(UnitReport(2)))])
    >>> units = measure_units(record, per_unit=True)
    >>> [(u.kind, u.response_ms, u.post_audio_ms, u.lag_ms, u.missed) for u in units]
    [('listen', 40.0, 40.0, 0.0, False), ('speak', 1300.0, 1300.0, 300.0, True), ('listen', 350.0, 50.0, 0.0, False)]
    >>> units[1].text
    'Hi'
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from ticktock.endpoints.client import ListenNotSent, LiveRecord, SentFrame, ServersOwnUnit, Stamped
from ticktock.replay.timeline import advance
from ticktock.results.playback import Piece, place
from ticktock.results.rows import (ChunkFacts, ChunkPlayback, ChunkSpeech, ChunkTimes, SessionFacts, Sharing,
                                   build_chunk_row, build_session_row, onset_flags)
from ticktock.wire import AudioDelta, FunctionCallArgumentsDone, ResponseDone, TextDelta, UnitDecision

UNIT_MS = 1000.0


@dataclass
class UnitMeasure:
    """What the client measured of one unit (the columns of its chunk row)."""

    index: int
    end_ms: float | None = None
    kind: str = "listen"
    decided_ms: float | None = None
    first_output_ms: float | None = None
    text: str = ""
    transcript: str = ""
    ends_turn: bool = False
    calls: list = field(default_factory=list)
    call_ids: list = field(default_factory=list)
    call_ms: float | None = None
    injected: list = field(default_factory=list)
    audio: list = field(default_factory=list)  # (at_ms, AudioDelta)
    send_lag_ms: float = 0.0
    response_ms: float | None = None
    post_audio_ms: float | None = None
    lag_before_ms: float | None = None
    lag_ms: float | None = None
    missed: bool | None = None
    onset_ms: float | None = None  # turn-based: from the turn's commit

    @property
    def shown_text(self) -> str:
        return self.text or self.transcript


def toy_record(unit_ends: list[tuple[float, int]], events: list[tuple[float, object]]) -> LiveRecord:
    """A ``LiveRecord`` from unit-end send times and stamped events (for examples and tests)."""
    record = LiveRecord("toy", len(unit_ends))
    record.frames = [SentFrame(unit, end_ms, end_ms, unit, unit) for end_ms, unit in unit_ends]
    record.events = [Stamped(at_ms, event) for at_ms, event in events]
    return record


def measure_units(record: LiveRecord, per_unit: bool) -> list[UnitMeasure]:
    """Every unit's measurements (see the module docstring)."""
    units = [UnitMeasure(t, record.unit_end_ms(t)) for t in range(record.units)]
    for frame in record.frames:
        if frame.unit < len(units):
            units[frame.unit].send_lag_ms = max(units[frame.unit].send_lag_ms, frame.lag_ms)
    (_attribute_decided if per_unit else _attribute_by_time)(record, units)
    answers = {call.call_id: call.output for call in record.calls}
    for unit in units:
        unit.injected = [answers[call_id] for call_id in unit.call_ids if call_id in answers]
    if per_unit:
        _lag_recursion(units)
    else:
        _reply_times(record, units)
    return units


def _attribute_decided(record: LiveRecord, units: list[UnitMeasure]) -> None:
    """Per-unit protocols: decisions give each unit its time and kind (a ``ListenNotSent`` mark: listen, no time);
    outputs go to the last decided unit (none after a ``ServersOwnUnit`` mark, up to the next decision); calls to the
    next decision."""
    current: UnitMeasure | None = None
    servers_own = False
    pending_calls: list[tuple[float, FunctionCallArgumentsDone]] = []
    for stamped in record.events:
        event, at_ms = stamped.event, stamped.at_ms
        if isinstance(event, ServersOwnUnit):
            servers_own = True
        elif isinstance(event, (UnitDecision, ListenNotSent)):
            servers_own = False
            index = units.index(current) + 1 if current is not None else 0
            index = event.unit if event.unit is not None else index
            if index >= len(units):
                continue
            if current is not None and current.kind in ("speak", "tool", "backchannel") and not event.speak:
                current.ends_turn = True
            current = units[index]
            current.decided_ms = None if isinstance(event, ListenNotSent) else at_ms
            current.kind = (event.kind or "speak") if event.speak else "listen"
            if pending_calls:
                current.kind = "tool"
                current.calls = [_call_json(call) for _, call in pending_calls]
                current.call_ids = [call.call_id for _, call in pending_calls]
                current.call_ms = pending_calls[0][0]
                pending_calls = []
        elif isinstance(event, FunctionCallArgumentsDone):
            pending_calls.append((at_ms, event))
        elif current is not None and not servers_own:
            _add_output(current, event, at_ms)


def _attribute_by_time(record: LiveRecord, units: list[UnitMeasure]) -> None:
    """Turn-based protocols: an event belongs to the last unit whose audio was all sent when it arrived."""
    for stamped in record.events:
        event, at_ms = stamped.event, stamped.at_ms
        index = _unit_at(at_ms, units)
        if index is None:
            continue
        unit = units[index]
        if isinstance(event, FunctionCallArgumentsDone):
            unit.kind = "tool"
            unit.calls.append(_call_json(event))
            unit.call_ids.append(event.call_id)
            unit.call_ms = unit.call_ms if unit.call_ms is not None else at_ms
            unit.first_output_ms = unit.first_output_ms if unit.first_output_ms is not None else at_ms
        elif isinstance(event, (TextDelta, AudioDelta)):
            if unit.kind == "listen":
                unit.kind = "speak"
            unit.first_output_ms = unit.first_output_ms if unit.first_output_ms is not None else at_ms
            _add_output(unit, event, at_ms)
        elif isinstance(event, ResponseDone) and unit.kind in ("speak", "tool"):
            unit.ends_turn = True


def _unit_at(at_ms: float, units: list[UnitMeasure]) -> int | None:
    """The last unit whose audio was all sent by ``at_ms`` (unit 0 before any is complete)."""
    index = 0
    for unit in units:
        if unit.end_ms is not None and unit.end_ms <= at_ms:
            index = unit.index
    return index if units else None


def _add_output(unit: UnitMeasure, event, at_ms: float) -> None:
    if isinstance(event, TextDelta):
        if event.transcript:
            unit.transcript += event.text
        else:
            unit.text += event.text
    elif isinstance(event, AudioDelta):
        unit.audio.append((at_ms, event))
    elif isinstance(event, ResponseDone):
        unit.ends_turn = unit.kind in ("speak", "tool")


def _call_json(call: FunctionCallArgumentsDone) -> dict:
    try:
        arguments = json.loads(call.arguments) if call.arguments else {}
    except json.JSONDecodeError:
        arguments = call.arguments
    return {"function": call.name, "args": arguments}


def _lag_recursion(units: list[UnitMeasure]) -> None:
    """r_t measured; b_t, l_t and the miss from the replay's recursion (``timeline.advance``)."""
    lag = 0.0
    for unit in units:
        if unit.decided_ms is None or unit.end_ms is None:
            continue
        response = unit.decided_ms - unit.end_ms
        timing = advance(lag, max(0.0, response - lag), UNIT_MS)  # D: the next unit's 1000 ms
        unit.response_ms, unit.post_audio_ms = timing.response_ms, timing.latency_ms
        unit.lag_before_ms, unit.lag_ms, unit.missed = timing.lag_before_ms, timing.lag_ms, timing.missed_deadline
        lag = timing.lag_ms
        if unit.kind == "tool" and unit.call_ms is not None:
            unit.onset_ms = unit.call_ms - unit.end_ms


def _reply_times(record: LiveRecord, units: list[UnitMeasure]) -> None:
    """Turn-based: a speaking unit's first output after its end; a reply's first unit from the turn's commit."""
    previous_speaking = False
    for unit in units:
        speaking = unit.kind in ("speak", "tool")
        if speaking and unit.first_output_ms is not None and unit.end_ms is not None:
            unit.response_ms = max(0.0, unit.first_output_ms - unit.end_ms)
            if not previous_speaking:
                commit = _last_before(record.turn_ends_ms, unit.first_output_ms)
                unit.response_ms = unit.first_output_ms - (commit if commit is not None else unit.end_ms)
            if unit.call_ms is not None:
                commit = _last_before(record.turn_ends_ms, unit.call_ms)
                unit.onset_ms = unit.call_ms - (commit if commit is not None else unit.end_ms)
        previous_speaking = speaking and not unit.ends_turn


def _last_before(times: list[float], at_ms: float) -> float | None:
    earlier = [t for t in times if t <= at_ms]
    return earlier[-1] if earlier else None


# ------------------------------------------------------------------------------------------------ rows


def chunk_rows(record: LiveRecord, units: list[UnitMeasure], session, labels: dict, per_unit: bool,
               concurrency: int = 1, slot: int = 0, playback_delay_ms: float = 0.0) -> list[dict]:
    """The chunk rows of a live session (``ticktock.results.rows.build_chunk_row``): what a live client cannot see
    is null (``rows.LIVE_UNKNOWN``; a turn-based protocol's lags too, ``rows.TURN_BASED_UNKNOWN``)."""
    spans = session.chunk_spans()[: len(units)]
    onsets = onset_flags([u.kind for u in units], [u.ends_turn for u in units])
    playback = unit_playback(record, units, per_unit, playback_delay_ms)
    sharing = Sharing(concurrency, slot, 0.0)
    return [build_chunk_row(labels, session, live_chunk(unit, span, onset, playback.get(unit.index), per_unit), sharing)
            for unit, span, onset in zip(units, spans, onsets)]


def live_chunk(unit: UnitMeasure, span, is_onset: bool, playback: ChunkPlayback | None, per_unit: bool) -> ChunkFacts:
    """A live unit's facts: no token ids, forwards, drafts or encoding, and of the talker only what it sent (its
    text and audio); the post-audio latency the client measured stands for the wall time too."""
    times = ChunkTimes(unit.post_audio_ms, unit.post_audio_ms, None, 0.0 if per_unit else None, unit.lag_before_ms,
                       unit.lag_ms, unit.response_ms, unit.missed)
    return ChunkFacts(span, unit.kind, None, unit.shown_text, unit.ends_turn, is_onset, "\n".join(unit.injected),
                      unit.calls, times, counters=None, speech=unit_speech(unit), playback=playback,
                      send_lag_ms=unit.send_lag_ms)


def unit_speech(unit: UnitMeasure) -> ChunkSpeech | None:
    """The audio the server sent for a unit (None: none): its transcript (else its text), its deltas' total length
    and their digests joined (cut to 64 characters); the talker's own work is not seen (None)."""
    if not unit.audio:
        return None
    return ChunkSpeech(unit.transcript or unit.text, sum(delta.audio_s for _, delta in unit.audio),
                       "".join(delta.sha256 for _, delta in unit.audio)[:64], talker_ms=None, ahead=None, prepared=None)


def audio_pieces(record: LiveRecord, units: list[UnitMeasure], per_unit: bool) -> tuple[list[Piece], list[int]]:
    """Every audio delta as a playback piece (ready when it arrived, measured from its unit's end; a reply's first
    piece of a turn-based session from the turn's commit) and the unit each belongs to."""
    pieces, owners, reply = [], [], object()
    for unit in units:
        for at_ms, delta in unit.audio:
            opens = delta.response_id != reply or not pieces
            reply = delta.response_id
            arrival = unit.end_ms if unit.end_ms is not None else at_ms
            if opens and not per_unit:
                commit = _last_before(record.turn_ends_ms, at_ms)
                arrival = commit if commit is not None else arrival
            pieces.append(Piece(arrival, at_ms - arrival, delta.audio_s, opens))
            owners.append(unit.index)
    return pieces, owners


def unit_playback(record: LiveRecord, units: list[UnitMeasure], per_unit: bool,
                  delay_ms: float) -> dict[int, ChunkPlayback]:
    """Unit index -> where its audio plays, from its end: its first delta's ready and start times, and the stalls
    before all its deltas added up (units without audio are absent)."""
    pieces, owners = audio_pieces(record, units, per_unit)
    by_index = {unit.index: unit for unit in units}
    playback: dict[int, ChunkPlayback] = {}
    for piece, where, owner in zip(pieces, place(pieces, delay_ms), owners):
        unit_end = by_index[owner].end_ms if by_index[owner].end_ms is not None else piece.arrival_ms
        if owner not in playback:
            playback[owner] = ChunkPlayback(ready_ms=piece.arrival_ms + piece.ready_ms - unit_end,
                                            start_ms=piece.arrival_ms + where.start_ms - unit_end, stall_ms=0.0)
        first = playback[owner]
        playback[owner] = ChunkPlayback(first.ready_ms, first.start_ms, first.stall_ms + where.stall_ms)
    return playback


def session_row(record: LiveRecord, units: list[UnitMeasure], session, labels: dict, chunks: list[dict],
                per_unit: bool, concurrency: int = 1, slot: int = 0, start_ms: float = 0.0,
                playback_delay_ms: float = 0.0) -> dict:
    """The session row of a live session (``ticktock.results.rows.build_session_row``); its inputs' digests are
    null here: the live run stamps them."""
    pieces, _ = audio_pieces(record, units, per_unit)
    facts = SessionFacts(
        lags_measured=per_unit,
        tool_call_latencies_ms=[u.onset_ms for u in units if u.kind == "tool" and u.onset_ms is not None],
        spoken_texts=[u.shown_text for u in units if u.kind == "speak"],
        tool_calls=[call for u in units for call in u.calls],
        wall_s=record.wall_s,
        speech_pieces=pieces or None,
        max_send_lag_ms=max((frame.lag_ms for frame in record.frames), default=0.0),
        inputs=None,
    )
    return build_session_row(labels, session, chunks, facts, Sharing(concurrency, slot, start_ms), playback_delay_ms)
