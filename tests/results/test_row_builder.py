"""One row builder for every kind of run: each kind's rows have every column of the schema, and the columns a kind
leaves null in every row are exactly the ones it declares it cannot know (``ticktock.results.rows``).

A schema column added without the builder fails the first check; one the builder fills but a kind leaves null,
undeclared, fails the second."""

from __future__ import annotations

import numpy as np
import pytest

from ticktock.clocks.modeled import CostProfile, ModeledClock
from ticktock.clocks.talker_cost import TalkerCost
from ticktock.decoders.speclisten import SpeculativeListeningDecoder
from ticktock.endpoints import measure
from ticktock.replay.engine import ReplayEngine
from ticktock.shipped import resource_path
from ticktock.replay.speech_out import SpeechOut
from ticktock.results import rows, schema
from ticktock.sessions.audio import load_audio
from ticktock.sessions.manifest import load_manifest
from ticktock.talkers.base import Talker
from ticktock.wire import ResponseCreated, ResponseDone

from live_events import audio, called, listen, said, speak

LABELS = {"run_id": "r", "model": "m", "decoder": "d", "clock": "c"}
ENDS = [(1000.0 * (t + 1), t) for t in range(4)]
# Columns this replay has nothing for, though a replay can: the fixture model makes no tool call in the session.
NOT_IN_THIS_REPLAY = {"chunks": (), "sessions": ("mean_tool_call_ms",)}
STAMPED_BY_THE_RUN = {"chunks": (), "sessions": rows.INPUT_COLUMNS}  # the runners add the inputs' digests


class Beeper(Talker):
    """A talker whose tone lasts as long as the text (a stand-in for a real one: speech columns filled)."""

    name, sample_rate = "beeper", 8000

    def synthesize(self, text):
        return np.full(80 * len(text), 0.1, dtype=np.float32)


def always_null(table_rows: list[dict]) -> set[str]:
    return {column for column in table_rows[0] if all(row[column] is None for row in table_rows)}


def expected_null(*declared: dict) -> dict[str, set[str]]:
    return {table: {column for lists in declared for column in lists[table]} for table in ("chunks", "sessions")}


def check_kind(chunks: list[dict], session: dict, null: dict[str, set[str]]) -> None:
    assert chunks and all(set(row) == set(schema.CHUNKS.names) for row in chunks)
    assert set(session) == set(schema.SESSIONS.names)
    assert always_null(chunks) == null["chunks"]
    assert always_null([session]) == null["sessions"]


@pytest.fixture(scope="module")
def replayed(fixture_adapter, small_manifest):
    """A replayed session's rows: speculative listening (draft counters) with a talker (speech columns)."""
    session = load_manifest(small_manifest)[0]
    engine = ReplayEngine(fixture_adapter, SpeculativeListeningDecoder(), ModeledClock(CostProfile.constant(10.0)),
                          speech=SpeechOut(Beeper(), TalkerCost(30.0, 10.0)))
    trace = engine.replay(session, load_audio(session.audio_path))
    chunks = rows.chunk_rows(trace, LABELS, fixture_adapter, playback_delay_ms=100.0)
    return chunks, rows.session_row(trace, LABELS, chunks, fixture_adapter, playback_delay_ms=100.0)


def live(events: list, per_unit: bool, turn_ends_ms: tuple[float, ...] = ()) -> tuple[list[dict], dict]:
    record = measure.toy_record(ENDS, events)
    record.turn_ends_ms = list(turn_ends_ms)
    session = load_manifest(resource_path("manifests/ticktock-mini/manifest.jsonl"), tasks=["llama_questions"])[0]
    units = measure.measure_units(record, per_unit)
    chunks = measure.chunk_rows(record, units, session, LABELS, per_unit, 2, 1, 100.0)
    return chunks, measure.session_row(record, units, session, LABELS, chunks, per_unit, 2, 1, 5.0, 100.0)


def test_the_declared_unknowns_are_columns_of_the_schema():
    for declared in (rows.REPLAY_UNKNOWN, rows.LIVE_UNKNOWN, rows.TURN_BASED_UNKNOWN):
        assert set(declared["chunks"]) <= set(schema.CHUNKS.names)
        assert set(declared["sessions"]) <= set(schema.SESSIONS.names)
    assert set(rows.INPUT_COLUMNS) <= set(schema.SESSIONS.names)


def test_a_replayed_run_fills_every_column_but_the_ones_a_replay_cannot_know(replayed):
    chunks, session = replayed
    check_kind(chunks, session, expected_null(rows.REPLAY_UNKNOWN, NOT_IN_THIS_REPLAY, STAMPED_BY_THE_RUN))


def test_a_live_per_unit_run_fills_every_column_but_the_ones_a_live_client_cannot_see():
    chunks, session = live([
        (1040.0, listen(0)), (2030.0, called("r1", "c1", "track_order", '{"id": 1}')),
        (2080.0, speak(1, "r1")), (2090.0, said("r1", "Hello")), (2100.0, audio("r1", 0.5)),
        (3040.0, speak(2, "r1")), (3041.0, said("r1", " there")), (3300.0, audio("r1", 0.5)),
        (4030.0, ResponseDone("r1", "completed")), (4031.0, listen(3))], per_unit=True)
    assert [c["kind"] for c in chunks] == ["listen", "tool", "speak", "listen"]
    check_kind(chunks, session, expected_null(rows.LIVE_UNKNOWN, STAMPED_BY_THE_RUN))


def test_a_live_turn_based_run_leaves_the_lags_null_too():
    chunks, session = live([
        (1500.0, ResponseCreated("r1")), (2400.0, said("r1", "Hi", transcript=True)), (2450.0, audio("r1", 0.4)),
        (2460.0, called("r1", "c2", "track_order", "{}")), (2900.0, ResponseDone("r1", "completed")),
        (3100.0, audio("r2", 0.4))], per_unit=False, turn_ends_ms=(1700.0,))
    assert [c["kind"] for c in chunks] == ["listen", "tool", "speak", "listen"]
    check_kind(chunks, session, expected_null(rows.LIVE_UNKNOWN, rows.TURN_BASED_UNKNOWN, STAMPED_BY_THE_RUN))
