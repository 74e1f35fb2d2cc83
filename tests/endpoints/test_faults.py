"""Bad input and faults against a live endpoint (``python -m ticktock.run model=endpoint``): each is one line naming
the session, the event and what is wrong; a faulty session is failed while the others are written; a rerun replays
only the sessions that did not finish; an endpoint that cannot be used at all stops the run before any folder exists.

The misbehaving servers are real ones on loopback (``scripted_server``; ``ticktock serve`` for the bearer token).
Sessions are short (2 units of real time each) and every wait is bounded (``model.unit_timeout_s=2``)."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from live_runs import live_run, served
from scripted_server import scripted

#: Two sessions of two units each, and short waits.
FAST = ("task.tool_executor=null", "limit.sessions=2", "limit.chunks=2", "model.unit_timeout_s=2",
        "model.close_timeout_s=2", "model.connect_timeout_s=3")


@pytest.fixture(scope="module")
def manifest(tmp_path_factory):
    from helpers import write_sessions

    return write_sessions(tmp_path_factory.mktemp("faults"), count=2)


def overrides(manifest, *more: str) -> tuple[str, ...]:
    return (f"task.manifest={manifest}", *FAST, *more)


def refused(capsys, call) -> tuple[int, str]:
    """Run ``call`` as the command does (``user_errors``): its exit code and its stderr, which must be one line."""
    from ticktock.errors import user_errors

    capsys.readouterr()
    with pytest.raises(SystemExit) as done:
        with user_errors():
            call()
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and err.startswith("ticktock: error: "), err
    return done.value.code, err.strip()


def run_json(run_dir) -> dict:
    return json.loads((run_dir / "run.json").read_text())


def written(run_dir) -> set[str]:
    return set(pq.read_table(run_dir / "sessions.parquet", columns=["session_id"]).column(0).to_pylist())


def one_failed(run_dir, session_id: str, *words: str) -> str:
    """The run completed with ``session_id`` failed (its reason naming it and holding ``words``) and the other written;
    the reason."""
    meta = run_json(run_dir)
    assert meta["status"] == "complete"
    assert [f["session_id"] for f in meta["failed_sessions"]] == [session_id]
    reason = meta["failed_sessions"][0]["error"]
    assert reason.startswith(f"session {session_id}: ") and "\n" not in reason
    for word in words:
        assert word in reason, reason
    assert written(run_dir) == {"s0", "s1"} - {session_id}
    return reason


def one_partial(run_dir, session_id: str, decided: int, *words: str) -> str:
    """The run completed with ``session_id`` partial (``decided`` units of 2 written apart, its reason naming it and
    holding ``words``) and the other written; the reason."""
    meta = run_json(run_dir)
    assert meta["status"] == "complete" and meta["failed_sessions"] == []
    [partial] = meta["partial_sessions"]
    assert partial["session_id"] == session_id and partial["units_decided"] == decided and partial["units"] == 2
    assert partial["failed_at_unit"] == decided
    reason = partial["reason"]
    assert reason.startswith(f"session {session_id}: ") and "\n" not in reason
    for word in words:
        assert word in reason, reason
    assert written(run_dir) == {"s0", "s1"} - {session_id}  # never counted as complete
    kept = pq.read_table(run_dir / "partial" / "chunks.parquet").to_pydict()
    assert kept["session_id"] == [session_id] * decided and kept["chunk_index"] == list(range(decided))
    assert pq.read_table(run_dir / "partial" / "sessions.parquet").to_pydict()["session_id"] == [session_id]
    return reason


# ---------------------------------------------------------------------------------- before any work


def test_an_unreachable_endpoint_is_exit_5_in_one_line_and_no_folder(tmp_path, manifest, capsys):
    code, line = refused(capsys, lambda: live_run(tmp_path / "run", "ws://127.0.0.1:9/v1/realtime",
                                                  *overrides(manifest)))
    assert code == 5 and "ws://127.0.0.1:9/v1/realtime" in line and "cannot connect" in line
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("option, key", [("model.url=http://127.0.0.1:9/v1/realtime", "model.url"),
                                         ("model.frame_ms=30", "model.frame_ms"),
                                         ("model.token_env=TICKTOCK_TEST_UNSET_TOKEN", "model.token_env"),
                                         ("model.max_unit_text_chars=0", "model.max_unit_text_chars"),
                                         ("model.max_unit_audio_s=-1", "model.max_unit_audio_s")])
def test_a_bad_endpoint_option_is_exit_2_before_any_connection(tmp_path, manifest, capsys, monkeypatch, option,
                                                                key):
    monkeypatch.delenv("TICKTOCK_TEST_UNSET_TOKEN", raising=False)
    with scripted() as server:
        code, line = refused(capsys, lambda: live_run(tmp_path / "run", server.url, *overrides(manifest, option)))
        assert server.connections == 0
    assert code == 2 and line.startswith(f"ticktock: error: {key}: ")
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("token", [None, "wrong"])
def test_a_server_that_refuses_the_token_stops_the_run_at_the_probe(tmp_path, manifest, capsys, monkeypatch, token):
    monkeypatch.setenv("TICKTOCK_TEST_SERVER_TOKEN", "right")
    given = ()
    if token is not None:
        monkeypatch.setenv("TICKTOCK_TEST_CLIENT_TOKEN", token)
        given = ("model.token_env=TICKTOCK_TEST_CLIENT_TOKEN",)
    with served("decoder=ar", "serve.token_env=TICKTOCK_TEST_SERVER_TOKEN") as url:
        code, line = refused(capsys, lambda: live_run(tmp_path / "run", f"{url}/v1/realtime",
                                                      *overrides(manifest, *given)))
    assert code == 5 and "invalid_api_key" in line and "right" not in line
    assert not (tmp_path / "run").exists()


def test_a_missing_audio_file_stops_the_run_before_any_connection(tmp_path, capsys):
    from helpers import write_sessions

    manifest = write_sessions(tmp_path / "corpus", count=2)
    (tmp_path / "corpus" / "audio" / "s1.flac").unlink()
    with scripted() as server:
        code, line = refused(capsys, lambda: live_run(tmp_path / "run", server.url, *overrides(manifest)))
        assert server.connections == 0
    assert code == 3 and "s1.flac: audio file not found (session s1" in line
    assert not (tmp_path / "run").exists()


def test_a_missing_audio_file_is_skipped_and_listed_with_skip_bad_sessions(tmp_path):
    from helpers import write_sessions

    manifest = write_sessions(tmp_path / "corpus", count=2)
    (tmp_path / "corpus" / "audio" / "s1.flac").unlink()
    with scripted() as server:
        summary = live_run(tmp_path / "run", server.url, *overrides(manifest, "skip_bad_sessions=true"))
    meta = run_json(tmp_path / "run")
    assert summary.sessions == 1 and summary.skipped == 1 and written(tmp_path / "run") == {"s0"}
    assert [s["session_id"] for s in meta["skipped_sessions"]] == ["s1"] and meta["failed_sessions"] == []


# ---------------------------------------------------------------------------------- during a session


def test_a_session_refused_for_capacity_is_asked_again_and_held(tmp_path, manifest):
    with scripted({2: "refuse", 3: "refuse"}) as server:  # connection 0 is the probe, 1 the first session
        summary = live_run(tmp_path / "run", server.url, *overrides(manifest))
        assert server.connections == 5  # s1 asked three times: refused, refused, held
    assert summary.failed == 0 and summary.sessions == 2 and written(tmp_path / "run") == {"s0", "s1"}


def test_a_session_refused_for_capacity_past_the_wait_fails_with_the_server_s_words(tmp_path, manifest):
    with scripted({n: "refuse" for n in range(2, 40)}) as server:
        summary = live_run(tmp_path / "run", server.url, *overrides(manifest, "model.capacity_wait_s=1"))
        asks = server.connections - 2
    assert summary.failed == 1 and summary.sessions == 1 and asks >= 3
    reason = one_failed(tmp_path / "run", "s1", "resource_exhausted", "no capacity for another session",
                        "model.capacity_wait_s")
    assert f"asked {asks} times in 1 s" in reason


def test_listens_that_decide_no_unit_are_counted_apart_not_taken_as_decisions(tmp_path, manifest):
    """vLLM-Omni's runner also sends ``response.listen`` when the model's prefill did not complete (``buffering``)
    and, in a session without ``auto_response``, for every silent append (``silence_or_noise``); neither decides the
    unit whose audio is still coming, so neither is that unit's decision, nor a fault."""
    with scripted({1: "stray_listens", 2: "stray_listens"}) as server:
        summary = live_run(tmp_path / "run", server.url, *overrides(manifest))
    assert summary.failed == summary.partial == 0 and written(tmp_path / "run") == {"s0", "s1"}
    assert run_json(tmp_path / "run")["listens_not_decisions"] == {
        "buffering": 4, "before its unit's audio (silence_or_noise)": 4}
    rows = pq.read_table(tmp_path / "run" / "chunks.parquet", columns=["response_ms"]).column(0).to_pylist()
    assert len(rows) == 4 and all(0 <= r < 500 for r in rows)  # each unit timed by its own decision


def test_a_server_closing_mid_session_keeps_what_was_decided_and_a_rerun_replays_only_it(tmp_path, manifest, capsys):
    with scripted({1: "close_after_1"}) as server:
        summary = live_run(tmp_path / "run", server.url, *overrides(manifest))
        assert summary.partial == 1 and summary.failed == 0 and summary.sessions == 1
        reason = one_partial(tmp_path / "run", "s0", 1, "closed the connection", "after 1 of 2 units")
        assert reason in capsys.readouterr().err
        assert "1 sessions (0 skipped, 1 partial), 2 units" in summary.line()
        server.script = {}  # behaving now
        again = live_run(tmp_path / "run", server.url, *overrides(manifest))
    assert "resumed 1 of 2 sessions" in capsys.readouterr().err
    assert again.failed == again.partial == 0 and written(tmp_path / "run") == {"s0", "s1"}
    meta = run_json(tmp_path / "run")
    assert meta["status"] == "complete" and meta["failed_sessions"] == meta["partial_sessions"] == []
    assert len(pq.read_table(tmp_path / "run" / "chunks.parquet")) == 4
    assert not (tmp_path / "run" / "partial").exists() and not list((tmp_path / "run" / "parts" / "partial").glob("*"))


@pytest.mark.parametrize("behaviour, decided, words", [
    ("malformed_after_1", 1, ("server event", "JSON")),
    ("twice_0", 1, ("response.listen for unit 0", "already decided")),
    ("ahead_0", 0, ("response.listen for unit 1 before unit 0", "out of order")),
    ("bad_audio_0", 1, ("response.output_audio.delta", "'delta' is not base64")),
])
def test_a_server_event_that_cannot_be_used_ends_the_session_in_one_line(tmp_path, manifest, behaviour, decided,
                                                                          words):
    with scripted({1: behaviour}) as server:
        summary = live_run(tmp_path / "run", server.url, *overrides(manifest))
    assert summary.sessions == 1 and (summary.partial, summary.failed) == ((1, 0) if decided else (0, 1))
    if decided:
        one_partial(tmp_path / "run", "s0", decided, *words)
    else:
        one_failed(tmp_path / "run", "s0", *words)


@pytest.mark.parametrize("behaviour", ["unknown", "variants"])
def test_unknown_server_events_and_variants_of_events_the_client_does_not_need_are_ignored(tmp_path, manifest,
                                                                                          behaviour):
    with scripted({1: behaviour, 2: behaviour}) as server:
        summary = live_run(tmp_path / "run", server.url, *overrides(manifest))
    meta = run_json(tmp_path / "run")
    assert summary.failed == 0 and meta["failed_sessions"] == [] and written(tmp_path / "run") == {"s0", "s1"}
    assert len(pq.read_table(tmp_path / "run" / "chunks.parquet")) == 4


def test_a_server_that_never_answers_fails_the_session_at_the_unit_deadline(tmp_path, manifest):
    with scripted({1: "silent"}) as server:  # it keeps pinging and sending events of no interest
        summary = live_run(tmp_path / "run", server.url, *overrides(manifest, "limit.sessions=1"))
    meta = run_json(tmp_path / "run")
    assert summary.failed == 1 and meta["status"].startswith("failed: no session finished (0 partial, 1 failed")
    reason = meta["failed_sessions"][0]["error"]
    assert reason == ("session s0: unit 0's decision did not come within model.unit_timeout_s=2 s of the end of its "
                      "audio (0 of 2 units decided)"), reason
    assert summary.line().startswith(f"run {summary.run_id}: 0 sessions (0 skipped, 1 failed), 0 units")


def test_the_tables_show_a_partial_session_apart_and_never_as_complete(tmp_path, manifest):
    from ticktock.tables.load import load_results

    with scripted({1: "close_after_1"}) as server:
        live_run(tmp_path / "run", server.url, *overrides(manifest))
    results = load_results([tmp_path / "run"])
    [note] = [line for line in results.provenance() if "partial" in line]
    assert note.startswith(f"run {tmp_path / 'run'}: 1 session partial (1 of 2 units decided), in no table: its "
                           f"decided units are in {tmp_path / 'run' / 'partial'}")
    assert set(results.runs[0].chunks["session_id"]) == {"s1"}  # only the complete session is in the tables


# ---------------------------------------------------------------------------------- a hostile server


def test_a_hostile_refusal_is_one_short_line_with_its_control_characters_escaped(tmp_path, manifest, capsys):
    with scripted({0: "hostile_refuse"}) as server:  # the probe is refused with 3 MB of words wrapped in escapes
        code, line = refused(capsys, lambda: live_run(tmp_path / "run", server.url, *overrides(manifest)))
    assert code == 5 and "the server refused the session: \\x1b[31mno\\x07: \\x1b[2J\\x1b[HAAA" in line
    assert len(line) < 500 and line.isprintable() and line.endswith("...")
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("behaviour, words", [
    ("hostile_error_1", ("server error \\x1b[31mboom\\x07: \\x1b[2J\\x1b[HAAA",)),
    ("hostile_closed_1", ("the server ended the session (session.closed: \\x1b[2J\\x1b[HAAA", "after 1 of 2 units")),
    ("hostile_close_1", ("close code 4000: \\x1b[2J\\x1b[31mbye\\nfake: line\\x07", "after 1 of 2 units")),
])
def test_a_hostile_server_s_words_are_clipped_and_escaped_where_the_client_prints_or_keeps_them(
        tmp_path, manifest, capsys, behaviour, words):
    with scripted({1: behaviour}) as server:
        live_run(tmp_path / "run", server.url, *overrides(manifest))
    reason = one_partial(tmp_path / "run", "s0", 1, *words)
    assert len(reason) < 500 and reason.isprintable()
    err = capsys.readouterr().err
    assert reason in err and "\x1b" not in err and "\x07" not in err and len(err) < 20_000
    assert not any(line.startswith("fake") for line in err.splitlines())
    assert (tmp_path / "run" / "run.json").stat().st_size < 100_000


@pytest.mark.parametrize("behaviour, words", [
    ("flood_text_0", ("unit 0's output passed model.max_unit_text_chars=65536 characters of text",)),
    ("flood_audio_0", ("unit 0's output passed model.max_unit_audio_s=60 s of audio",)),
])
def test_a_server_that_floods_a_unit_fails_its_session_at_the_bound_and_keeps_what_it_decided(
        tmp_path, manifest, behaviour, words):
    with scripted({1: behaviour}) as server:  # after unit 0's decision: 10 MB of text, or 90 s of audio
        live_run(tmp_path / "run", server.url, *overrides(manifest))
    one_partial(tmp_path / "run", "s0", 1, *words)
    kept = pq.read_table(tmp_path / "run" / "partial" / "chunks.parquet").to_pydict()
    assert all(len(text or "") <= 65_536 for text in kept["output_text"])
    assert (tmp_path / "run" / "partial" / "chunks.parquet").stat().st_size < 1_000_000


def test_a_live_run_whose_every_session_is_partial_is_not_complete_and_its_lock_names_its_live_labels(tmp_path,
                                                                                                    manifest):
    """Today: exit 6, yet run.json says status complete; and the lock (what a second writer is told) says clock
    modeled and decoder ar, the config's defaults, not what the run is."""
    import threading
    import time

    from ticktock.errors import SessionsUnfinished
    from ticktock.results.lock import read_holder

    run_dir, held, done = tmp_path / "run", [], threading.Event()

    def watch() -> None:  # what the lock says while the run holds it
        deadline = time.monotonic() + 60
        while not done.is_set() and time.monotonic() < deadline:
            holder = read_holder(run_dir)
            if holder:
                held.append(holder)
                return
            time.sleep(0.02)

    watcher = threading.Thread(target=watch, daemon=True)
    with scripted({1: "close_after_1", 2: "close_after_1"}) as server:
        watcher.start()
        try:
            summary = live_run(run_dir, server.url, *overrides(manifest))
        finally:
            done.set()
            watcher.join(10)
    assert (summary.sessions, summary.partial, summary.failed) == (0, 2, 0)
    with pytest.raises(SessionsUnfinished):
        summary.check_finished()  # exit 6
    status = run_json(run_dir)["status"]
    assert status.startswith("failed: no session finished (2 partial, 0 failed"), status
    host = server.url.split("//")[1].split("/")[0]
    assert held and {key: held[0].get(key) for key in ("model", "decoder", "clock")} == {
        "model": f"scripted@{host}", "decoder": "served", "clock": "live:vllm_omni_duplex"}


def test_a_reply_spoken_over_several_units_with_one_speak_decides_each_unit_by_its_speech(tmp_path, manifest):
    """vLLM-Omni sends ``response.speak`` once per reply: the units a reply goes on speaking in are decided speak by
    the arrival of their own speech (a non-empty transcript), each with its own text, the reply's last ending the
    turn."""
    with scripted({1: "speaks_on"}) as server:
        summary = live_run(tmp_path / "run", server.url, f"task.manifest={manifest}", "task.tool_executor=null",
                           "limit.sessions=1", "limit.chunks=6", "model.unit_timeout_s=3", "model.close_timeout_s=2")
    assert summary.failed == summary.partial == 0
    rows = pq.read_table(tmp_path / "run" / "chunks.parquet",
                         columns=["chunk_index", "kind", "output_text", "ends_turn"]).to_pylist()
    assert [(r["kind"], r["output_text"], r["ends_turn"]) for r in rows] == [
        ("listen", "", False), ("speak", "Hello", False), ("speak", " there,", False), ("speak", " friend.", True),
        ("listen", "", False), ("listen", "", False)]


def test_speech_the_server_makes_past_the_audio_sent_is_no_unit_s_text(tmp_path, manifest):
    """vLLM-Omni goes on speaking in silence units of its own once the input has ended: that speech belongs to no unit
    of the session, so the last unit keeps its own words only (counted apart, as speech past the audio sent)."""
    with scripted({1: "speaks_past"}) as server:
        summary = live_run(tmp_path / "run", server.url, f"task.manifest={manifest}", "task.tool_executor=null",
                           "limit.sessions=1", "limit.chunks=3", "model.unit_timeout_s=3", "model.close_timeout_s=2")
    assert summary.failed == summary.partial == 0
    rows = pq.read_table(tmp_path / "run" / "chunks.parquet", columns=["kind", "output_text"]).to_pylist()
    assert [(r["kind"], r["output_text"]) for r in rows] == [("listen", ""), ("speak", "Hello"), ("speak", " there,")]
    apart = run_json(tmp_path / "run")["listens_not_decisions"]
    assert apart == {"speech past the audio sent (the server's own units)": 1}


def test_units_decided_while_a_reply_spoke_with_no_listen_sent_are_listens_without_a_time(tmp_path, manifest):
    """vLLM-Omni sends no ``response.listen`` for a unit decided while its reply's speech is made: once every unit's
    audio went before the reply ended and the server has been quiet for ``model.quiet_s``, the units left undecided
    were listens (no decision time: ``response_ms`` null), and the session is complete."""
    with scripted({1: "listens_unsent"}) as server:
        summary = live_run(tmp_path / "run", server.url, f"task.manifest={manifest}", "task.tool_executor=null",
                           "limit.sessions=1", "limit.chunks=4", "model.unit_timeout_s=8", "model.quiet_s=1",
                           "model.close_timeout_s=2")
    assert summary.failed == summary.partial == 0
    rows = pq.read_table(tmp_path / "run" / "chunks.parquet",
                         columns=["kind", "output_text", "ends_turn", "response_ms"]).to_pylist()
    assert [(r["kind"], r["output_text"], r["ends_turn"]) for r in rows] == [
        ("listen", "", False), ("speak", "Hello", False), ("speak", " there.", True), ("listen", "", False)]
    assert rows[3]["response_ms"] is None and all(r["response_ms"] is not None for r in rows[:3])
