"""Runs with a talker in the tables: their own setups, Table 5's first-audio and stall columns, and --listen (the
session as its user heard it: the user's audio and the assistant's re-synthesized speech at its playback times).

Hand-made runs carry real eSpeak NG digests (``spoken``) so that --listen can re-synthesize and check them; real
runs replay the fixture model with ``talker=espeak`` (wall clock: the cost profile need not price the talker)."""

import json
import math
from functools import lru_cache

import numpy as np
import pandas as pd
import pytest
from table_runs import chunk, write_run

from ticktock.results.fingerprint import file_sha256
from ticktock.sessions.audio import SAMPLE_RATE, load_audio
from ticktock.sessions.manifest import load_manifest
from ticktock.tables import TablesError, load_results
from ticktock.tables.__main__ import main
from ticktock.tables.build import build_tables
from ticktock.tables.common import setup_label
from ticktock.tables.compute import latency_table, speak_speedup_table
from ticktock.tables.listen import listen_choice, listen_tracks, read_tracks
from ticktock.tables.render import csv

ESPEAK = {"name": "espeak", "_target_": "ticktock.talkers.espeak.EspeakTalker", "voice": "en-us", "rate_wpm": 175,
          "pitch": 50}
DESCRIBED = {"name": "espeak", "sample_rate": 22050, "text_only": True, "engine": "espeak-ng", "charged": "measured"}
TABLE5 = ["model", "decoder", "onset ms", "tasks", "onsets", "tool-call ms", "tool chunks"]  # model m: not the paper's
SPEECH = ["onset to first audio ms", "replies with audio", "stalls", "total stall ms", "stalls per min of speech",
          "speech s"]


@lru_cache(maxsize=None)
def spoken(text: str) -> tuple[float, str, np.ndarray]:
    """(seconds, sha256, samples at 16 kHz) of ``text`` as the default eSpeak talker speaks it."""
    from ticktock.replay.speech_out import samples_sha256
    from ticktock.sessions.audio import resample
    from ticktock.talkers.espeak import EspeakTalker

    talker = EspeakTalker()
    samples = talker.synthesize(text)
    return len(samples) / talker.sample_rate, samples_sha256(samples), resample(samples, talker.sample_rate, SAMPLE_RATE)


def with_talker(folder, talker: dict | None = ESPEAK, manifest=None):
    """Give a hand-made run's run.json a talker (``talker=None``: an old run.json, no config.talker at all)."""
    meta = json.loads((folder / "run.json").read_text())
    if talker is None:
        meta["config"].pop("talker", None)
    else:
        meta["config"]["talker"] = talker
        meta["talker"] = DESCRIBED if talker["name"] != "none" else None
    if manifest is not None:
        meta["config"]["task"] = {"name": "test", "manifest": str(manifest)}
    (folder / "run.json").write_text(json.dumps(meta))
    return folder


def speaking(session_id, index, text, start_ms, **values):
    """A speak chunk of a talker run (arriving at index + 1 s) whose piece ``text`` starts ``start_ms`` after arrival."""
    seconds, digest, _ = spoken(text)
    return chunk(session_id, index, start_s=float(index), arrival_s=index + 1.0, kind="speak", is_onset=True,
                 talker_text=text, audio_s=seconds, audio_sha256=digest, talker_ms=40.0, speech_ahead=False,
                 speech_prepared=0, audio_ready_ms=start_ms, playback_start_ms=start_ms, stall_ms=0.0, **values)


def silent(session_id, index):
    return chunk(session_id, index, start_s=float(index), arrival_s=index + 1.0, talker_text="", audio_s=0.0,
                 talker_ms=0.0, speech_ahead=False, speech_prepared=0)


@pytest.fixture
def voices(tmp_path, small_manifest):
    """ar and speclisten, each with and without a talker, on sessions s0 and s1 of the small manifest (6.4 s); the
    talker runs speak in s0 (the speclisten piece of chunk 5 ends at 6.0 + 0.3 + its length: past the session's end)."""
    sessions = {s.session_id: s for s in load_manifest(small_manifest)}
    rows = lambda extra: [{"session_id": sid, "task": "fdb_v3", "duration_s": 6.4,  # noqa: E731
                           "audio_sha256": file_sha256(sessions[sid].audio_path), **extra(sid)} for sid in ("s0", "s1")]
    for decoder, late in (("ar", 900.0), ("speclisten", 300.0)):
        chunks = [silent("s0", 0), speaking("s0", 1, "Hello there.", 400.0), silent("s0", 2),
                  speaking("s0", 5, "Goodbye now.", late), *[silent("s1", i) for i in range(3)]]
        for c in chunks:
            c["task"] = "fdb_v3"
        audio = lambda sid: {"first_audio_latencies_ms": [400.0, late] if sid == "s0" else [],  # noqa: E731
                             "num_stalls": 0, "total_stall_ms": 0.0, "stalls_per_min": 0.0,
                             "assistant_speech_s": spoken("Hello there.")[0] + spoken("Goodbye now.")[0] if sid == "s0" else 0.0}
        with_talker(write_run(tmp_path / "spoken" / decoder, decoder, chunks, rows(audio), run_id=f"{decoder}-spoken"),
                    ESPEAK, small_manifest)
        plain = [{**c, **{k: None for k in c if k.startswith(("talker", "audio_", "speech_", "playback", "stall"))}}
                 for c in chunks]
        with_talker(write_run(tmp_path / "plain" / decoder, decoder, plain, rows(lambda sid: {}), run_id=f"{decoder}-plain"),
                    None, small_manifest)
    return tmp_path


def test_runs_with_different_talkers_are_separate_setups(voices, tmp_path):
    results = load_results([str(voices / "spoken"), str(voices / "plain")])
    setups = results.setups()
    assert [(s.talker, s.talker_args) for s in setups] == [("none", ""), ("espeak", '{"pitch": 50, "rate_wpm": 175, '
                                                                                     '"voice": "en-us"}')]
    assert setup_label(setups[0]) == "m / modeled:test-profile / Test GPU (derived) / T=0 / seed 0"  # as before talkers
    assert setup_label(setups[1]).endswith('/ seed 0 / talker espeak {"pitch": 50, "rate_wpm": 175, "voice": "en-us"}')
    assert [(c.setup.talker, c.decoder) for c in results.cells] == [("none", "ar"), ("none", "speclisten"),
                                                                    ("espeak", "ar"), ("espeak", "speclisten")]
    table = speak_speedup_table(results)  # each setup's decoders against its own baseline, one talker column
    assert table.frame[["talker", "decoder", "chunks"]].values.tolist() == [
        ["none", "ar", 2], ["none", "speclisten", 2], ["espeak", "ar", 2], ["espeak", "speclisten", 2]]
    assert any(p.startswith("talker espeak") and "espeak-ng" in p for p in table.provenance)
    # {"name": "none"} (a run without a talker since talkers) is the setup of a run.json written before talkers
    with_talker(voices / "plain" / "ar", {"name": "none"})
    assert len(load_results([str(voices / "plain")]).setups()) == 1
    # another rate is another setup: its audio differs
    with_talker(voices / "spoken" / "speclisten", {**ESPEAK, "rate_wpm": 200})
    assert len(load_results([str(voices / "spoken")]).setups()) == 2


def test_a_talker_of_the_wrong_shape_is_one_line_naming_the_key(voices, capsys):
    with_talker(voices / "spoken" / "ar", {"name": 7})
    with pytest.raises(TablesError, match=r"run.json: config.talker.name: must be a string, got 7"):
        load_results([str(voices / "spoken")])
    meta = json.loads((voices / "spoken" / "ar" / "run.json").read_text())
    (voices / "spoken" / "ar" / "run.json").write_text(json.dumps({**meta, "config": {**meta["config"], "talker": ["x"]}}))
    assert main([str(voices / "spoken"), "--out", str(voices / "out")]) == 2
    assert "config.talker: must be an object, got a list" in capsys.readouterr().err


def test_table5_talker_columns_hand_checked(tmp_path):
    # ar: task a replies [100], [300, 200]; task b [50] -> first audio (200 + 50) / 2 = 125 ms; 2 + 1 stalls of
    # 150 + 40 ms in 20 + 10 s of speech -> 6 per minute; speclisten: no speech at all
    sessions = {"ar": [{"session_id": "a1", "task": "a", "first_audio_latencies_ms": [100.0], "num_stalls": 2,
                        "total_stall_ms": 150.0, "assistant_speech_s": 20.0},
                       {"session_id": "a2", "task": "a", "first_audio_latencies_ms": [300.0, 200.0], "num_stalls": 0,
                        "total_stall_ms": 0.0, "assistant_speech_s": 0.0},
                       {"session_id": "b1", "task": "b", "first_audio_latencies_ms": [50.0], "num_stalls": 1,
                        "total_stall_ms": 40.0, "assistant_speech_s": 10.0}],
                "speclisten": [{"session_id": s, "task": t, "first_audio_latencies_ms": [], "num_stalls": 0,
                                "total_stall_ms": 0.0, "assistant_speech_s": 0.0} for s, t in (("a1", "a"), ("a2", "a"),
                                                                                               ("b1", "b"))]}
    for decoder, rows in sessions.items():
        chunks = [chunk(s["session_id"], 0, task=s["task"], kind="speak", is_onset=True, response_ms=80.0) for s in rows]
        with_talker(write_run(tmp_path / "espeak" / decoder, decoder, chunks, rows))
    table = latency_table(load_results([str(tmp_path / "espeak")]))
    assert list(table.frame.columns) == TABLE5 + SPEECH
    assert table.frame[SPEECH].iloc[0].tolist() == [125.0, 4, 3, 190.0, 6.0, 30.0]
    assert table.frame[["replies with audio", "stalls", "speech s"]].iloc[1].tolist() == [0, 0, 0.0]
    assert math.isnan(table.frame["onset to first audio ms"][1]) and math.isnan(table.frame["stalls per min of speech"][1])
    assert table.formatted()[SPEECH].iloc[0].tolist() == ["125.0", "4", "3", "190.0", "6.00", "30.0"]
    assert any(n.startswith("runs with a talker") for n in table.notes)


@pytest.fixture(scope="module")
def real(tmp_path_factory, small_manifest):
    """ar and speclisten replayed by the fixture model with talker=espeak (wall clock), 2 sessions."""
    from ticktock.replay.config import compose_run
    from ticktock.replay.runner import run

    folder = tmp_path_factory.mktemp("talker_runs")
    for decoder in ("ar", "speclisten"):
        cfg = compose_run(decoder, "fixture", None, [f"task.manifest={small_manifest}", "task.tool_executor=null",
                                                     "limit.sessions=2", "progress=false", "talker=espeak", "clock=wall"])
        run(cfg, folder / decoder)
    return folder


def test_table5_of_real_talker_runs_is_their_sessions_parquet(real):
    results = load_results([str(real)])
    table = latency_table(results)
    for row in table.frame.to_dict("records"):
        sessions = pd.read_parquet(real / row["decoder"] / "sessions.parquet")
        replies = [v for values in sessions["first_audio_latencies_ms"] for v in values]
        assert sessions["task"].nunique() == 1 and len(replies) > 0  # one task: the mean over its replies
        assert row["onset to first audio ms"] == pytest.approx(sum(replies) / len(replies))
        assert row["replies with audio"] == len(replies)
        assert row["stalls"] == sessions["num_stalls"].sum()
        assert row["total stall ms"] == pytest.approx(sessions["total_stall_ms"].sum())
        assert row["speech s"] == pytest.approx(sessions["assistant_speech_s"].sum())
        assert row["stalls per min of speech"] == pytest.approx(60 * row["stalls"] / row["speech s"])


def test_table5_without_a_talker_is_as_before(voices):
    table = latency_table(load_results([str(voices / "plain")]))
    assert list(table.frame.columns) == TABLE5 and not any("talker" in n for n in table.notes)
    assert csv(table) == ("model,decoder,onset ms,tasks,onsets,tool-call ms,tool chunks\n"
                          "m,ar,100.0,1,2,,0\nm,speclisten,100.0,1,2,,0\n")
    assert table.formats == {"onset ms": ".1f", "tool-call ms": ".1f"}


def test_the_headline_prints_the_talker_columns_for_talker_runs_only(voices, capsys):
    assert main([str(voices / "spoken"), str(voices / "plain"), "--out", str(voices / "out"), "--format", "md"]) == 0
    printed = capsys.readouterr().out
    head = next(line for line in printed.splitlines() if line.startswith("| model | talker | decoder | onset ms"))
    assert head.endswith("| onset to first audio ms | replies with audio | stalls | total stall ms | "
                         "stalls per min of speech | speech s |")
    assert "| m | espeak | ar | 100.0 | 1 | 2 | – | 0 | 650.0 | 2 | 0 | 0.0 | 0.00 |" in printed
    assert "| m | none | ar | 100.0 | 1 | 2 | – | 0 | – | – | – | – | – | – |" in printed


def track_of(tracks, decoder, session_id="s0"):
    return next(t for t in tracks if t.decoder == decoder and t.session_id == session_id)


def test_listen_places_the_re_synthesized_speech_over_the_users_audio(voices, small_manifest):
    results = load_results([str(voices / "spoken")])
    tracks = listen_tracks(results, listen_choice(results, ("s0",)))
    assert [(t.decoder, t.session_id, t.pieces) for t in tracks] == [("ar", "s0", 2), ("speclisten", "s0", 2)]
    user = load_audio(next(s for s in load_manifest(small_manifest) if s.session_id == "s0").audio_path)
    hello, bye = spoken("Hello there.")[2], spoken("Goodbye now.")[2]
    for decoder, late in (("ar", 900.0), ("speclisten", 300.0)):
        track = track_of(tracks, decoder).samples
        first, last = round(2400 * 16), round((6000 + late) * 16)  # chunk 1 arrives at 2 s, chunk 5 at 6 s
        assert len(user) == 6.4 * SAMPLE_RATE < last + len(bye) == len(track)  # the last piece ends after the session
        assert np.array_equal(track[:first], user[:first])
        assert np.allclose(track[first:first + len(hello)], user[first:first + len(hello)] + hello, atol=1e-6)
        after = np.concatenate([np.zeros(max(0, last - len(user)), np.float32), bye[max(0, len(user) - last):]])
        assert np.array_equal(track[len(user):], after)  # after the user's audio: silence, then the last piece alone
    assert listen_tracks(results, listen_choice(results, ("s1",)))[0].samples.shape == (round(6.4 * SAMPLE_RATE),)


def test_the_report_embeds_a_track_per_decoder_of_the_session_duration_or_the_last_playback(real, tmp_path):
    out = tmp_path / "out"
    assert main([str(real), "--out", str(out), "--format", "html", "--listen", "s1", "--listen", "s0"]) == 0
    found = read_tracks((out / "report.html").read_text())
    assert sorted((t["session_id"], t["run_id"].split("-")[1]) for t in found) == [
        ("s0", "ar"), ("s0", "speclisten"), ("s1", "ar"), ("s1", "speclisten")]
    for track in found:
        run = real / track["run_id"].split("-")[1]
        chunks = pd.read_parquet(run / "chunks.parquet").query(f"session_id == '{track['session_id']}'")
        played = chunks[chunks["playback_start_ms"].notna()]
        ends = (played["arrival_s"] + played["playback_start_ms"] / 1000 + played["audio_s"]).tolist()
        duration = pd.read_parquet(run / "sessions.parquet").set_index("session_id").loc[track["session_id"], "duration_s"]
        expected = max([duration, *ends])
        assert track["rate"] == SAMPLE_RATE and len(played) > 0
        assert track["expected_s"] == pytest.approx(expected, abs=1e-3)
        assert len(track["samples"]) / SAMPLE_RATE == pytest.approx(expected, abs=3 / SAMPLE_RATE)


def test_by_default_talker_runs_get_their_case_sessions_and_other_runs_none(voices, tmp_path):
    results = load_results([str(voices / "spoken"), str(voices / "plain")])
    built = build_tables(results, "ar")
    assert [(s.talker, sid) for s, sid in built.listen] == [("espeak", "s0")]  # the onset case of the talker setup
    assert listen_choice(load_results([str(voices / "plain")])) == []
    assert main([str(voices / "plain"), "--out", str(tmp_path / "plain"), "--format", "html"]) == 0
    assert 'id="tt-listen"' not in (tmp_path / "plain" / "report.html").read_text()


def test_an_unknown_session_is_one_line_naming_it_and_the_sessions_there(voices, capsys):
    assert main([str(voices / "spoken"), "--out", str(voices / "out"), "--listen", "s9"]) == 2
    err = capsys.readouterr().err
    assert err == "ticktock: error: --listen s9: no run with a talker holds this session (sessions there: s0, s1)\n"
    assert main([str(voices / "plain"), "--out", str(voices / "out"), "--listen", "s0"]) == 2
    assert "--listen s0: no run among the results has a talker" in capsys.readouterr().err
    assert not (voices / "out").exists()  # refused before any work
    with pytest.raises(SystemExit):
        main([str(voices / "spoken"), "--listen", "s0", "--format", "md,csv"])
    assert "--listen s0: the tracks go into report.html; add html to --format" in capsys.readouterr().err


def test_a_talker_that_changed_since_the_run_is_refused_in_one_line(voices):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = voices / "spoken" / "speclisten" / "chunks.parquet"
    table = pq.read_table(path)
    digests = ["0" * 64 if d == spoken("Hello there.")[1] else d for d in table.column("audio_sha256").to_pylist()]
    pq.write_table(table.set_column(table.schema.get_field_index("audio_sha256"), "audio_sha256",
                                    pa.array(digests, pa.string())), path)
    results = load_results([str(voices / "spoken")])
    with pytest.raises(TablesError, match=r"session s0 chunk 1: the talker's audio of 'Hello there.' is not the "
                                          r"run's .*the talker changed since the run; rerun it to listen$"):
        listen_tracks(results, listen_choice(results, ("s0",)))
