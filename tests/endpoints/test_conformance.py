"""The live client against servers that behave as the real ones do (``scripted_server``: vLLM-Omni's duplex runner,
and an OpenAI Realtime GA server), not only against ``ticktock serve``: every session ends by itself, with 1, 4 and 8
sessions at once, and under the faults a real deployment shows (a session that goes mute, a close without
``session.closed``, a server that never closes, a ping storm).

vLLM-Omni's semantics are the ones that used to hang the client: a commit is a turn commit, only ``session.close``
ends a session, and the socket pings (every 0.2 s here), so no wait may restart on a ping."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from live_runs import live_run
from scripted_server import scripted

#: Short waits; the OpenAI flavour's quiet end after 0.5 s. Sessions of three units (``overrides``).
FAST = ("task.tool_executor=null", "model.unit_timeout_s=2", "model.close_timeout_s=2",
        "model.connect_timeout_s=5", "model.quiet_s=0.5", "model.grace_s=2")


@pytest.fixture(scope="module")
def manifest(tmp_path_factory):
    from helpers import write_sessions

    return write_sessions(tmp_path_factory.mktemp("conformance"), count=8)  # user turn i ends at 2.6 + 0.3 i s


def overrides(manifest, *more: str, units: int = 3) -> tuple[str, ...]:
    return (f"task.manifest={manifest}", f"limit.chunks={units}", *FAST, *more)


def run_json(run_dir) -> dict:
    return json.loads((run_dir / "run.json").read_text())


@pytest.mark.parametrize("sessions", [1, 4, 8])
def test_every_session_ends_against_vllm_omni_semantics(tmp_path, manifest, sessions):
    with scripted(ping_s=0.2) as server:
        summary = live_run(tmp_path / "run", server.url,
                           *overrides(manifest, f"limit.sessions={sessions}", f"concurrency.sessions={sessions}"))
    summary.check_finished()  # exit 0: every session finished
    assert (summary.sessions, summary.partial, summary.failed) == (sessions, 0, 0)
    meta = run_json(tmp_path / "run")
    assert meta["session_endings"] == {"session.closed": sessions}  # the client closed, the server confirmed
    assert [server.closed_by[n] for n in range(1, sessions + 1)] == ["session.close"] * sessions
    chunks = pq.read_table(tmp_path / "run" / "chunks.parquet").to_pydict()
    assert len(chunks["chunk_index"]) == 3 * sessions and None not in chunks["response_ms"]
    assert None not in chunks["missed_deadline"]  # a per-unit protocol measures deadline misses
    assert "deadline misses" in summary.line() and "not measured" not in summary.line()


@pytest.mark.parametrize("sessions", [1, 4, 8])
def test_every_session_ends_against_an_openai_style_server(tmp_path, manifest, sessions):
    with scripted(flavour="openai", ping_s=0.2) as server:
        summary = live_run(tmp_path / "run", server.url, "protocol=openai_realtime",
                           *overrides(manifest, f"limit.sessions={sessions}", f"concurrency.sessions={sessions}",
                                      units=5))  # every user turn ends within the five units
    summary.check_finished()
    assert (summary.sessions, summary.partial, summary.failed) == (sessions, 0, 0)
    assert run_json(tmp_path / "run")["session_endings"] == {"client closed": sessions}
    assert [server.closed_by[n] for n in range(1, sessions + 1)] == ["socket"] * sessions
    chunks = pq.read_table(tmp_path / "run" / "chunks.parquet").to_pydict()
    assert chunks["kind"].count("speak") >= sessions  # each turn's commit got its reply
    assert "not measured (turn-based protocol" in summary.line()


def test_a_session_that_goes_mute_keeps_what_it_decided_and_ends_at_its_deadline(tmp_path, manifest):
    with scripted({1: "mute_after_1"}, ping_s=0.2) as server:  # pings and events of no interest keep coming
        summary = live_run(tmp_path / "run", server.url, *overrides(manifest, "limit.sessions=2"))
    assert (summary.sessions, summary.partial, summary.failed) == (1, 1, 0)
    [partial] = run_json(tmp_path / "run")["partial_sessions"]
    assert partial == {"session_id": "s0", "units_decided": 1, "units": 3, "failed_at_unit": 1,
                       "reason": "session s0: unit 1's decision did not come within model.unit_timeout_s=2 s of the "
                                 "end of its audio (1 of 3 units decided)"}
    assert server.closed_by[1] == "session.close"  # told the session is over, even after a fault
    assert pq.read_table(tmp_path / "run" / "partial" / "chunks.parquet").num_rows == 1


def test_a_mute_session_is_an_exit_6_run(tmp_path, manifest, capsys):
    from ticktock.errors import SessionsUnfinished

    with scripted({1: "mute_after_0"}, ping_s=0.2) as server:
        summary = live_run(tmp_path / "run", server.url, *overrides(manifest, "limit.sessions=1"))
    assert summary.failed == 1 and summary.line().split(": ", 1)[1].startswith("0 sessions (0 skipped, 1 failed)")
    with pytest.raises(SessionsUnfinished) as unfinished:
        summary.check_finished()
    assert unfinished.value.exit_code == 6 and str(unfinished.value).startswith("1 of 1 sessions did not finish (run.json")


@pytest.mark.parametrize("behaviour, ending", [
    ("no_closed", "socket closed"),
    ("never_close", "no session.closed within model.close_timeout_s=2 s"),
    ("ping_storm", "session.closed"),
])
def test_how_a_server_ends_a_session_never_costs_a_measured_session(tmp_path, manifest, behaviour, ending):
    with scripted({1: behaviour}, ping_s=0.2) as server:
        summary = live_run(tmp_path / "run", server.url, *overrides(manifest, "limit.sessions=1"))
    summary.check_finished()
    assert summary.sessions == 1 and run_json(tmp_path / "run")["session_endings"] == {ending: 1}
    assert pq.read_table(tmp_path / "run" / "chunks.parquet").num_rows == 3


def test_the_duplex_client_never_commits_and_closes_with_session_close(tmp_path, manifest):
    """A commit is a turn commit to vLLM-Omni (the model would be asked to answer): the duplex client sends none."""
    from ticktock.endpoints.vllm_omni_duplex import VllmOmniDuplex

    protocol = VllmOmniDuplex()
    assert protocol.turn_ended() == [] and protocol.input_ended() == []
    assert [event["type"] for event in protocol.closing()] == ["session.close"] and protocol.awaits_closed
