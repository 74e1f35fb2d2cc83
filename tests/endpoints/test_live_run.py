"""``python -m ticktock.run model=endpoint``: mini-corpus sessions replayed live into ``ticktock serve`` (embedded
model, AR) on loopback, written as an ordinary run folder; the same sessions replayed in process decide the same."""

from __future__ import annotations

import json

import pyarrow.parquet as pq

from live_runs import TWO_SESSIONS, live_run, served


def in_process(tmp_path):
    from ticktock.replay.config import compose_run
    from ticktock.replay.runner import run

    run(compose_run("ar", "embedded", None, [*TWO_SESSIONS, "clock=wall"]), tmp_path / "replayed")
    return tmp_path / "replayed"


def test_a_live_run_decides_every_unit_as_the_replay_does_and_resumes(tmp_path, capsys):
    with served("decoder=ar") as url:
        summary = live_run(tmp_path / "live", f"{url}/v1/realtime", *TWO_SESSIONS)
        assert summary.sessions == 2 and summary.failed == 0
        live = pq.read_table(tmp_path / "live" / "chunks.parquet").to_pandas()
        capsys.readouterr()
        again = live_run(tmp_path / "live", f"{url}/v1/realtime", *TWO_SESSIONS)
        assert again.sessions == 2 and "resumed 2 of 2 sessions" in capsys.readouterr().err
    replayed = pq.read_table(in_process(tmp_path) / "chunks.parquet").to_pandas()
    key = ["session_id", "chunk_index"]
    live, replayed = live.sort_values(key).reset_index(drop=True), replayed.sort_values(key).reset_index(drop=True)
    assert list(live["kind"]) == list(replayed["kind"]) and "speak" in set(live["kind"])
    assert (live["model"] == "embedded@" + url.split("//")[1]).all() and (live["decoder"] == "ar").all()
    assert (live["clock"] == "live:vllm_omni_duplex").all()
    assert live["response_ms"].notna().all() and (live["response_ms"] > 0).all() and live["send_lag_ms"].notna().all()
    sessions = {name: pq.read_table(tmp_path / name / "sessions.parquet").to_pandas().set_index("session_id")
                for name in ("live", "replayed")}
    assert dict(sessions["live"]["speech_text"]) == dict(sessions["replayed"]["speech_text"])
    meta = json.loads((tmp_path / "live" / "run.json").read_text())
    assert meta["status"] == "complete" and meta["clock"]["per_unit"] is True
    assert meta["environment"]["endpoint"]["served_decoder"] == "ar" and meta["send_lag"]["units"] == 12
