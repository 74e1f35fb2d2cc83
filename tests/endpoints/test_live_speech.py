"""A live run against ``ticktock serve talker=espeak``: the server's talker labels the setup, the audio deltas are
played with the run's jitter buffer, and the tables show first audio and stalls (no re-synthesis of a live run)."""

from __future__ import annotations

import json

import pyarrow.parquet as pq

from live_runs import TWO_SESSIONS, live_run, served


def test_a_live_run_hears_the_servers_voice_and_a_buffer_delays_its_first_audio(tmp_path):
    with served("decoder=speclisten_speak", "talker=espeak") as url:
        for delay in (0, 1500):
            summary = live_run(tmp_path / f"delay{delay}", f"{url}/v1/realtime", *TWO_SESSIONS,
                               f"playback_delay_ms={delay}")
            assert summary.sessions == 2 and summary.failed == 0
    meta = json.loads((tmp_path / "delay0" / "run.json").read_text())
    assert meta["config"]["talker"] == {"name": "espeak"} and meta["talker"]["engine"] == "the server's own"
    first = {}
    for delay in (0, 1500):
        sessions = pq.read_table(tmp_path / f"delay{delay}" / "sessions.parquet").to_pandas()
        first[delay] = [ms for row in sessions["first_audio_latencies_ms"] if row is not None for ms in row]
        assert sessions["assistant_speech_s"].fillna(0).sum() > 0.5
    assert first[0] and len(first[0]) == len(first[1500])
    # two live runs, each with its own timing noise: the buffer shows in the replies' first audio as a whole
    assert sum(first[1500]) > sum(first[0]) + 500.0, first

    from ticktock.tables.__main__ import main as tables

    assert tables([str(tmp_path / "delay0"), str(tmp_path / "delay1500"), "--baseline", "speclisten_speak", "--out",
                   str(tmp_path / "tables")]) == 0
    text = (tmp_path / "tables" / "tables.md").read_text() if (tmp_path / "tables" / "tables.md").exists() else \
        "\n".join(p.read_text() for p in (tmp_path / "tables").glob("*.md"))
    assert "espeak" in text and "playback delay" in text
