"""The tables read live runs (``python -m ticktock.run model=endpoint``) beside replayed ones: a live run is its own
setup, what the client cannot see is n/a (never 0 nor a crash), a turn-based protocol's lag is not measured, frames
sent late are said, losslessness is not claimed, and capacity works on live concurrency runs.

One real live run (``ticktock serve`` on loopback, two short sessions in real time) and one in-process run of the same
sessions are made once for the module; the other cases are hand-made live run folders (``tests/tables/table_runs.py``).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from live_runs import TWO_SESSIONS, live_run, served

sys.path.insert(0, str(Path(__file__).parents[1] / "tables"))

from table_runs import chunk, concurrency, write_run  # noqa: E402

from ticktock.tables import build_tables, load_results  # noqa: E402
from ticktock.tables.__main__ import main as tables_main  # noqa: E402
from ticktock.tables.capacity import capacity_data, capacity_table  # noqa: E402
from ticktock.tables.common import LIVE_NOTE, NOT_PER_UNIT, NOT_SEEN  # noqa: E402
from ticktock.tables.compute import latency_table, max_lag_table, speak_speedup_table  # noqa: E402
from ticktock.tables.quality import NOT_CHECKED_LIVE, losslessness_table  # noqa: E402

LIVE_CLOCK = {"name": "live:vllm_omni_duplex", "kind": "live", "per_unit": True, "profile_sha256": None,
              "protocol": {"name": "vllm_omni_duplex", "per_unit": True}, "profile_device": "endpoint 127.0.0.1:9"}
TURNS_CLOCK = {**LIVE_CLOCK, "name": "live:openai_realtime", "per_unit": False,
               "protocol": {"name": "openai_realtime", "per_unit": False}}
LIVE_MODEL = "embedded@127.0.0.1:9"
UNSEEN = {"num_output_tokens": None, "output_token_ids": [], "num_post_audio_forwards": None, "encode_wall_ms": None,
          "num_draft_tokens": None, "num_accepted_draft_tokens": None, "lookup_hits": None, "window_budget_ms": None,
          "window_used_ms": None, "window_wall_ms": None, "window_forwards": None, "window_query_tokens": None,
          "context_tokens": None, "evicted_tokens": None, "device_wait_ms": None, "window_waited_ms": None,
          "prefilled_ms": None}  # what a live run's rows leave null (ticktock.endpoints.measure)


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """A real live run into ``ticktock serve decoder=ar`` and the in-process wall-clock run of the same sessions."""
    from ticktock.replay.config import compose_run
    from ticktock.replay.runner import run

    root = tmp_path_factory.mktemp("live_tables")
    with served("decoder=ar") as url:
        summary = live_run(root / "live", f"{url}/v1/realtime", *TWO_SESSIONS)
    assert summary.sessions == 2 and summary.failed == 0
    run(compose_run("ar", "embedded", None, [*TWO_SESSIONS, "clock=wall"]), root / "replayed")
    return {"live": root / "live", "replayed": root / "replayed", "host": url.split("//")[1]}


def test_the_tables_command_reads_a_live_run_beside_a_replayed_one(runs, tmp_path, capsys):
    code = tables_main([str(runs["live"]), str(runs["replayed"]), "--out", str(tmp_path / "out")])
    printed = capsys.readouterr().out
    assert code == 0 and (tmp_path / "out" / "report.html").is_file()
    assert f"embedded@{runs['host']}" in printed and "live:vllm_omni_duplex" in printed
    assert LIVE_NOTE in printed


def test_table2_shows_the_live_setup_beside_the_wall_one_with_no_mat(runs):
    results = load_results([runs["live"], runs["replayed"]])
    frame = speak_speedup_table(results).frame.set_index("clock")
    assert sorted(frame.index) == ["live:vllm_omni_duplex", "wall"] and set(frame["decoder"]) == {"ar"}
    live, wall = frame.loc["live:vllm_omni_duplex"], frame.loc["wall"]
    assert live["model"] == f"embedded@{runs['host']}" and live["device"] == f"endpoint {runs['host']}"
    assert live["#MAT"] == NOT_SEEN and wall["#MAT"] == pytest.approx(1.0)
    assert live["speedup"] == pytest.approx(1.0) and live["ms"] > 0  # over the live ar run of its own setup


def test_table5_has_the_live_onset_and_the_provenance_explains_live_runs(runs):
    table = latency_table(load_results([runs["live"], runs["replayed"]]))
    live = table.frame.set_index("clock").loc["live:vllm_omni_duplex"]
    assert live["onsets"] == 2 and 0 < live["onset ms"] < 1000
    assert LIVE_NOTE in table.provenance
    assert any(line.startswith(f"model embedded@{runs['host']}: served live at {runs['host']}: model embedded")
               for line in table.provenance)
    late = json.loads((runs["live"] / "run.json").read_text())["send_lag"]["late_units"]  # 0 unless the machine is
    assert any("sent later than" in line for line in table.provenance) == (late > 0)       # loaded: said iff late


def test_late_frames_in_run_json_give_the_send_lag_note(runs, tmp_path):
    late = tmp_path / "live_late"
    shutil.copytree(runs["live"], late)
    meta = json.loads((late / "run.json").read_text())
    meta["send_lag"] = {**meta["send_lag"], "late_units": 5, "bound_ms": 20}
    (late / "run.json").write_text(json.dumps(meta))
    provenance = speak_speedup_table(load_results([late])).provenance
    assert any(f"5 of {meta['send_lag']['units']} units had audio frames sent later than 20 ms: the client machine "
               "did not keep real time" in line for line in provenance)


def test_losslessness_is_not_claimed_for_live_runs(tmp_path):
    rows = [chunk("s1", 0, kind="speak", is_onset=True, **UNSEEN)]
    for decoder in ("ar", "speclisten"):
        write_run(tmp_path / decoder, decoder, rows, model=LIVE_MODEL, clock=LIVE_CLOCK)
    results = load_results([tmp_path])
    table = losslessness_table(results)
    assert list(table.frame["decoder"]) == ["speclisten"] and list(table.frame["status"]) == [NOT_CHECKED_LIVE]
    assert not table.failures and "identical to ar" not in table.frame
    speedup = speak_speedup_table(results).frame.set_index("decoder")
    assert list(speedup["#MAT"]) == [NOT_SEEN, NOT_SEEN]  # never 0, never a crash
    assert not build_tables(results).failures  # the whole build, the case studies included


def test_a_turn_based_live_run_has_no_lag_but_its_onset_and_tool_latency(tmp_path):
    unit = {**UNSEEN, "task": "fdb_v3", "post_audio_ms": None, "post_audio_wall_ms": None, "lag_before_ms": None,
            "lag_ms": None, "carried_ms": None, "missed_deadline": None}
    rows = [chunk("s1", 0, **unit, kind="speak", is_onset=True, response_ms=420.0),
            chunk("s1", 1, **unit, kind="tool", response_ms=650.0, tool_calls_json='[{"name": "f"}]')]
    sessions = [{"session_id": "s1", "task": "fdb_v3", "max_lag_ms": None, "mean_lag_ms": None,
                 "num_missed_deadlines": None}]
    write_run(tmp_path / "ar", "ar", rows, sessions, model=LIVE_MODEL, clock=TURNS_CLOCK)
    results = load_results([tmp_path])
    latency = latency_table(results).frame.iloc[0]
    assert (latency["onset ms"], latency["tool-call ms"]) == (420.0, 650.0)
    assert max_lag_table(results).frame.iloc[0]["mean max lag ms"] == NOT_PER_UNIT
    row = speak_speedup_table(results).frame.iloc[0]
    assert (row["ms"], row["speedup"], row["#MAT"]) == (NOT_PER_UNIT, NOT_PER_UNIT, NOT_SEEN)
    assert any("per-turn protocol" in line for line in latency_table(results).provenance)
    built = build_tables(results)
    assert not built.failures


def test_capacity_of_live_concurrency_runs(tmp_path):
    def live(n: int, slow_slot: int | None) -> Path:
        rows = [chunk(f"s{slot}", index, **UNSEEN, kind="speak" if index == 1 else "listen", is_onset=index == 1,
                      response_ms=900.0 if slot == slow_slot and index == 1 else 120.0, session_slot=slot,
                      missed_deadline=slot == slow_slot and index == 1)
                for slot in range(n) for index in range(4)]
        return write_run(tmp_path / f"ar_n{n}", "ar", rows, model=LIVE_MODEL, clock=LIVE_CLOCK,
                         sharing=concurrency(n), run_id=f"live-ar-n{n}")

    live(1, None), live(2, 1)  # N=2: one onset of two 900 ms late and a miss in 8 chunks: fails
    results = load_results([tmp_path])
    data = capacity_data(results).set_index("N")
    assert list(data["passes"]) == [True, False] and data.loc[2, "miss rate"] == pytest.approx(1 / 8)
    assert data.loc[2, "shortfall"] == "miss 12.5% > 5%, p95 onset 861 ms > 500 ms"  # 120 + 0.95 * (900 - 120)
    table = capacity_table(results, data=capacity_data(results))
    assert list(table.frame["capacity"]) == [1] and list(table.frame["model"]) == [LIVE_MODEL]
    assert LIVE_NOTE in table.provenance and any("measured live against endpoint" in n for n in table.notes)


def test_one_live_run_of_a_server_that_reports_no_decoder_gets_its_tables_and_a_line_for_the_speedups(tmp_path,
                                                                                                     capsys):
    """vLLM-Omni reports no TickTock decoder: its live run is labelled ``served``, and no ``ar`` run is beside it.
    Today: exit 2 asking for an ``ar`` run, and no table at all."""
    rows = [chunk("s1", 0, **UNSEEN, kind="listen"), chunk("s1", 1, **UNSEEN, kind="speak", is_onset=True,
                                                           response_ms=420.0, output_text="Hi")]
    write_run(tmp_path / "served", "served", rows, model=LIVE_MODEL, clock=LIVE_CLOCK)
    code = tables_main([str(tmp_path / "served"), "--out", str(tmp_path / "out"), "--format", "md,html"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert (tmp_path / "out" / "report.html").is_file() and (tmp_path / "out" / "table5_latency.md").is_file()
    results = load_results([tmp_path / "served"])
    latency = latency_table(results).frame.iloc[0]
    assert latency["decoder"] == "served" and latency["onset ms"] == 420.0  # a table that needs no baseline
    built = {table.key: table for table in build_tables(results).tables}
    speedup = built["table2_speak_speedup"]
    [needs] = [note for note in speedup.notes if note.startswith("no 'ar' run among the results")]
    assert needs == ("no 'ar' run among the results (decoders here: served): speedups and the comparisons with ar "
                     "need one; run the same sessions with decoder=ar (live: a server started with decoder=ar), or "
                     "name another decoder with --baseline")
    assert needs in built["tool_speedup"].notes and needs not in built["table5_latency"].notes
    assert needs in captured.out and "\n" not in needs
