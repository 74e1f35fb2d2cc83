"""The playback's jitter buffer as a run option (``playback_delay_ms``): checked before any work, part of a run's
identity only when not 0, applied to the speech of real replays, and a setup of its own in the tables.

The run-level tests replay the embedded model with ``decoder=speclisten_speak`` and ``talker=modeled`` on the modeled
clock (deterministic): in its third mini session the first reply opens with a 0.85 s piece and stalls 138 ms before
the next one, so a 1000 ms buffer trades a later first audio for that stall."""

import json

import pandas as pd
import pytest

from ticktock.replay.config import RunOptionError, check_run_options, compose_run, identity

from ticktock.replay.runner import run
from ticktock.tables import load_results
from ticktock.tables.common import setup_label
from ticktock.tables.compute import PLAYBACK_DELAY_NOTE, latency_table

DELAY = "playback_delay_ms: must be a number of milliseconds from 0 to 10000 (0: play as soon as ready)"
REPLAY = ["talker=modeled", "limit.sessions=3", "limit.chunks=8"]
BUFFER_MS = 1000


def config(*overrides, decoder="speclisten_speak"):
    return compose_run(decoder, "embedded", None, [*REPLAY, *overrides])


@pytest.mark.parametrize("value, shown", [("-1", "-1"), ("10001", "10001"), ("abc", "'abc'"), ("true", "True"),
                                          ("nan", "nan"), ("inf", "inf"), ("null", "None")])
def test_a_bad_delay_is_one_line_naming_the_key_before_any_work(value, shown):
    with pytest.raises(RunOptionError) as err:
        check_run_options(config(f"playback_delay_ms={value}"))
    assert str(err.value) == f"{DELAY}, got {shown}" and err.value.exit_code == 2


@pytest.mark.parametrize("value", ["0", "0.0", "250.5", "10000"])
def test_delays_from_0_to_10000_ms_are_allowed(value):
    check_run_options(config(f"playback_delay_ms={value}"))


def test_the_delay_is_part_of_the_identity_only_when_not_zero():
    plain = identity(config())
    assert "playback_delay_ms" not in plain and identity(config("playback_delay_ms=0")) == plain  # old runs resume
    assert identity(config("playback_delay_ms=400")) == {**plain, "playback_delay_ms": 400.0}
    assert identity(config("playback_delay_ms=400.0")) == identity(config("playback_delay_ms=400"))


@pytest.fixture(scope="module")
def buffered_runs(tmp_path_factory):
    """The same speclisten_speak replay played without a buffer and with a 1000 ms one."""
    folder = tmp_path_factory.mktemp("playback_delay")
    for delay in (0, BUFFER_MS):
        run(config(f"playback_delay_ms={delay}"), folder / f"delay{delay}")
    return folder


def frames(folder, name):
    sessions = pd.read_parquet(folder / name / "sessions.parquet").sort_values("session_id").reset_index(drop=True)
    chunks = pd.read_parquet(folder / name / "chunks.parquet").sort_values(["session_id", "chunk_index"])
    return sessions, chunks.reset_index(drop=True)


def test_a_buffer_delays_first_audio_and_removes_stalls_on_the_same_tokens_and_audio(buffered_runs):
    (plain, plain_chunks), (held, held_chunks) = frames(buffered_runs, "delay0"), frames(buffered_runs, f"delay{BUFFER_MS}")
    meta = json.loads((buffered_runs / f"delay{BUFFER_MS}" / "run.json").read_text())
    assert meta["config"]["playback_delay_ms"] == BUFFER_MS and meta["identity"]["playback_delay_ms"] == BUFFER_MS
    assert "playback_delay_ms" not in json.loads((buffered_runs / "delay0" / "run.json").read_text())["identity"]
    # the same replay: tokens, audio and ready times; only the playback differs
    assert list(held_chunks.output_token_ids.map(list)) == list(plain_chunks.output_token_ids.map(list))
    for column in ("audio_sha256", "audio_ready_ms"):
        pd.testing.assert_series_equal(held_chunks[column], plain_chunks[column])
    assert held.assistant_speech_s.tolist() == plain.assistant_speech_s.tolist()
    for before, after in zip(plain.itertuples(), held.itertuples()):
        assert len(after.first_audio_latencies_ms) == len(before.first_audio_latencies_ms)
        assert all(a >= b for a, b in zip(after.first_audio_latencies_ms, before.first_audio_latencies_ms))
        assert after.total_stall_ms <= before.total_stall_ms and after.num_stalls <= before.num_stalls
    assert held.mean_first_audio_ms.sum() > plain.mean_first_audio_ms.sum()  # some reply waited for its buffer
    assert plain.total_stall_ms.sum() > 0 and held.total_stall_ms.sum() < plain.total_stall_ms.sum()
    # each reply's first sound starts once 1000 ms of its audio is ready, or all of it
    starts = held_chunks[held_chunks.is_onset & held_chunks.audio_s.fillna(0).gt(0)]
    for row in starts.itertuples():
        reply = reply_of(held_chunks, row)
        start = 1000 * row.arrival_s + row.playback_start_ms
        ready = reply[1000 * reply.arrival_s + reply.audio_ready_ms <= start + 1e-6]
        assert 1000 * ready.audio_s.sum() >= BUFFER_MS - 1e-6 or len(ready) == len(reply)


def reply_of(chunks: pd.DataFrame, onset) -> pd.DataFrame:
    """The speaking chunks of the reply a speak chunk opens (up to the next onset, in its session)."""
    session = chunks[(chunks.session_id == onset.session_id) & chunks.audio_s.notna()]
    after = session[session.chunk_index >= onset.chunk_index]
    ends = after.index[after.is_onset & (after.chunk_index > onset.chunk_index)]
    return after if len(ends) == 0 else after.loc[: ends[0] - 1]


def test_the_tables_show_two_setups_and_the_delay_beside_first_audio_and_stalls(buffered_runs):
    results = load_results([str(buffered_runs)])
    setups = sorted(results.setups(), key=lambda s: s.playback_delay_ms)
    assert [s.playback_delay_ms for s in setups] == [0.0, float(BUFFER_MS)]
    assert setup_label(setups[1]) == setup_label(setups[0]) + f" / playback delay {BUFFER_MS} ms"
    table = latency_table(results)
    rows = table.frame.sort_values("playback delay ms")
    assert rows["playback delay ms"].tolist() == [0.0, float(BUFFER_MS)]
    assert rows["onset to first audio ms"].iloc[1] > rows["onset to first audio ms"].iloc[0]
    assert rows["total stall ms"].iloc[1] < rows["total stall ms"].iloc[0]
    assert PLAYBACK_DELAY_NOTE in table.notes
    assert list(table.formatted()["playback delay ms"].sort_values()) == ["0", str(BUFFER_MS)]
