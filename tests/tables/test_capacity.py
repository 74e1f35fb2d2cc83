"""Capacity per device: the search, the verdict, a search on a shared device with a hand-computed answer, and the
table and figure from hand-made runs."""

import hashlib
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from table_runs import chunk, concurrency, write_run

from ticktock.tables import build_report, build_tables, load_results
from ticktock.tables.capacity import (CapacityCriteria, capacity_data, capacity_figure, capacity_table,
                                      search_capacity, verdict)

# --- the search ----------------------------------------------------------------------------------------------------


def test_search_doubles_while_it_passes_then_bisects():
    asked = []

    def passes(n):
        asked.append(n)
        return n <= 6

    found = search_capacity(passes, limit=16)
    assert found.capacity == 6 and not found.at_limit
    assert found.tried == {1: True, 2: True, 4: True, 8: False, 6: True, 7: False}
    assert asked == [1, 2, 4, 8, 6, 7]  # each N once, in this order


def test_search_when_one_session_fails_is_zero():
    found = search_capacity(lambda n: False, limit=16)
    assert (found.capacity, found.tried) == (0, {1: False})


def test_search_never_goes_beyond_its_limit():
    found = search_capacity(lambda n: True, limit=12)
    assert found.capacity == 12 and found.at_limit
    assert found.tried == {1: True, 2: True, 4: True, 8: True, 12: True}
    capped = search_capacity(lambda n: n <= 10, limit=12)  # 12 fails: bisect between 8 and 12
    assert (capped.capacity, list(capped.tried)) == (10, [1, 2, 4, 8, 12, 10, 11])
    assert search_capacity(lambda n: True, limit=1).tried == {1: True}
    for bad in (0, -3, 2.5, True):
        with pytest.raises(ValueError, match="limit: must be a whole number >= 1"):
            search_capacity(lambda n: True, limit=bad)


# --- the verdict ---------------------------------------------------------------------------------------------------


def test_verdict_miss_rate_and_p95_onset_by_numpys_default_percentile():
    onsets = [120.0, 250.0, 310.0, 480.0, 900.0]
    frame = pd.DataFrame({
        "missed_deadline": [False] * 19 + [True],  # 1 of 20: 5%, at the limit
        "is_onset": [True] * 5 + [False] * 15,
        "response_ms": onsets + [5000.0] * 15,     # not onsets: never counted
    })
    result = verdict(frame)
    assert result.miss_rate == 0.05 and result.onsets == 5
    assert result.p95_onset_ms == pytest.approx(np.percentile(onsets, 95)) == pytest.approx(816.0)  # 480 + 0.8 * 420
    assert not result.passes  # the onset criterion fails
    assert verdict(frame, CapacityCriteria(max_p95_onset_ms=816.0)).passes  # both at their limits: a pass
    assert not verdict(frame, CapacityCriteria(max_miss_rate=0.04, max_p95_onset_ms=1000.0)).passes


def test_verdict_without_onsets_meets_the_onset_criterion():
    frame = pd.DataFrame({"missed_deadline": [False, False], "is_onset": [False, False],
                          "response_ms": [900.0, 2000.0]})
    result = verdict(frame)
    assert math.isnan(result.p95_onset_ms) and result.onsets == 0 and result.passes


def test_criteria_refuse_impossible_limits():
    with pytest.raises(ValueError, match="max_miss_rate: must be a share from 0 to 1"):
        CapacityCriteria(max_miss_rate=float("nan"))
    with pytest.raises(ValueError, match="max_p95_onset_ms: must be a finite number of ms > 0"):
        CapacityCriteria(max_p95_onset_ms=0.0)


# --- a search on a shared device with a known answer ---------------------------------------------------------------


def shared_device_chunks(n: int) -> pd.DataFrame:
    """N scripted sessions of 3 one-second chunks replayed at once on one device, all starting at 0 (stagger 0),
    every chunk a listen chunk: one post-audio forward of 100 ms (constant cost profile, audio encoding free).
    Their chunks as chunks.parquet has them (missed_deadline, response_ms, is_onset)."""
    from scripted import PROTOCOL, ScriptedAdapter

    from ticktock.clocks.modeled import CostProfile, ModeledClock
    from ticktock.decoders.ar import ARDecoder
    from ticktock.replay.concurrency import ConcurrencySettings, ConcurrentReplay
    from ticktock.replay.device import SharedDevice
    from ticktock.replay.engine import ReplayEngine
    from ticktock.results.rows import onset_flags
    from ticktock.scheduling.round_robin import RoundRobin
    from ticktock.sessions.manifest import Session

    clock = ModeledClock(CostProfile.constant(100.0, encode_ms=0.0))
    engines = [ReplayEngine(ScriptedAdapter({}), ARDecoder(), clock) for _ in range(n)]
    sessions = [Session(f"s{i}", "test", Path(f"s{i}.flac"), 3.0) for i in range(n)]
    traces = []
    ConcurrentReplay(engines, SharedDevice(clock, RoundRobin()), ConcurrencySettings(sessions=n, stagger=0.0)).replay(
        sessions, load=lambda s: np.zeros(int(16_000 * s.duration_s), np.float32), on_trace=traces.append)
    rows = []
    for trace in traces:
        onsets = onset_flags([c.kind for c in trace.chunks], [PROTOCOL.turn_eos in c.output for c in trace.chunks])
        rows += [{"session_id": trace.session.session_id, "missed_deadline": c.timing.missed_deadline,
                  "response_ms": c.timing.response_ms, "is_onset": onset} for c, onset in zip(trace.chunks, onsets)]
    assert len(rows) == 3 * n
    return pd.DataFrame(rows)


def test_capacity_search_on_a_constant_cost_shared_device_finds_the_hand_computed_capacity():
    # Every session's chunk costs the device 100 ms, and all N sessions' chunks arrive together every 1000 ms (the
    # deadline: the next chunk's duration). Whatever the order, the device is busy N x 100 ms after each arrival:
    # - N <= 10: the last chunk served responds within N x 100 <= 1000 ms: no miss, and the device is free again
    #   when the next chunks arrive: miss rate 0;
    # - N >= 11: in each of the 3 rounds some chunk ends at least N x 100 >= 1100 ms after its arrival: at least 3
    #   misses of 3N chunks, >= 3/48 = 6.25% > 5% for every N up to 16.
    # No chunk speaks: no onsets, the onset criterion holds. The search: 1, 2, 4, 8 pass, 16 fails; 12 fails,
    # 10 passes, 11 fails: capacity 10.
    verdicts = {}

    def passes(n):
        verdicts[n] = verdict(shared_device_chunks(n))
        return verdicts[n].passes

    found = search_capacity(passes, limit=16)
    assert found.capacity == 10
    assert found.tried == {1: True, 2: True, 4: True, 8: True, 16: False, 12: False, 10: True, 11: False}
    assert verdicts[10].miss_rate == 0.0 and verdicts[10].onsets == 0 and math.isnan(verdicts[10].p95_onset_ms)
    assert verdicts[11].miss_rate >= 3 / 33 and verdicts[16].miss_rate >= 3 / 48


# --- the table and figure from runs ------------------------------------------------------------------------------


def rows(misses: int, onset_ms: float = 300.0) -> list[dict]:
    """20 chunks of session s (the first of two turns' onsets at ``onset_ms`` and 100 ms), ``misses`` of them
    missing their deadline."""
    return [chunk("s", i, kind="speak" if i in (0, 10) else "listen", is_onset=i in (0, 10),
                  response_ms=onset_ms if i == 0 else 100.0, missed_deadline=i < misses) for i in range(20)]


def capacity_runs(folder: Path) -> Path:
    """AR: N = 1, 2 pass, 4 misses 10% (capacity 2); batched, N = 4 and 8 pass, 16 misses (capacity 8).
    Speculative Listening: N = 1, 2, 4 pass, 8 misses nothing but its p95 onset is 900 ms (capacity 4); batched,
    N = 16 passes (capacity 16). A decoder replayed alone only (pld) has no line."""
    write_run(folder / "ar-N1", "ar", rows(0))
    write_run(folder / "ar-N2", "ar", rows(1), sharing=concurrency(2))  # 5%: at the limit, passes
    write_run(folder / "ar-N4", "ar", rows(2), sharing=concurrency(4))
    write_run(folder / "ar-N4-b", "ar", rows(0), sharing=concurrency(4, batching=True))
    write_run(folder / "ar-N8-b", "ar", rows(0), sharing=concurrency(8, batching=True))
    write_run(folder / "ar-N16-b", "ar", rows(5), sharing=concurrency(16, batching=True))
    write_run(folder / "sl-N1", "speclisten", rows(0))
    write_run(folder / "sl-N2", "speclisten", rows(0), sharing=concurrency(2))
    write_run(folder / "sl-N4", "speclisten", rows(0), sharing=concurrency(4))
    write_run(folder / "sl-N8", "speclisten", rows(0, onset_ms=900.0), sharing=concurrency(8))
    write_run(folder / "sl-N16-b", "speclisten", rows(0), sharing=concurrency(16, batching=True))
    write_run(folder / "pld-N1", "pld", rows(0))
    return folder


def test_capacity_table_from_runs(tmp_path):
    results = load_results([str(capacity_runs(tmp_path / "runs"))])
    table = capacity_table(results)
    assert table.key == "capacity" and table.title == "Capacity: sessions per device within the deadline criteria"
    got = table.frame[["decoder", "batching", "capacity", "x AR", "first failing N", "N passing", "N failing"]]
    records = got.to_dict("records")
    assert [r["capacity"] for r in records] == [2, 4, 8, ">= 16"]  # no N failed: a lower bound
    assert [r["x AR"] for r in records] == [1.0, 2.0, 1.0, ">= 2.00"]
    assert set(table.frame["sessions"]) == {"1 session #" + hashlib.sha256(b"s\n").hexdigest()[:8]}
    # speclisten at N = 8: onsets 900 and 100 ms, p95 = 100 + 0.95 * 800 = 860 ms
    assert [r["N failing"] for r in records] == ["4 (miss 10.0% > 5%)", "8 (p95 onset 860 ms > 500 ms)",
                                                 "16 (miss 25.0% > 5%)", "none"]
    assert [r["N passing"] for r in records] == ["1, 2", "1, 2, 4", "4, 8", "16"]
    assert [r["decoder"] for r in records] == ["ar", "speclisten", "ar", "speclisten"]
    assert [r["batching"] for r in records] == ["no", "no", "yes", "yes"]
    assert [r["first failing N"] for r in records[:3]] == [4, 8, 16]
    assert math.isnan(records[3]["first failing N"])  # none failed: a lower bound
    assert table.frame["miss rate at capacity"].tolist() == [0.05, 0.0, 0.0, 0.0]
    assert table.formatted()["miss rate at capacity"].tolist() == ["5.0%", "0.0%", "0.0%", "0.0%"]
    assert any(n.startswith("capacity: the largest N (sessions replayed at once on one device) at which the device "
                            "keeps deadline misses <= 5% of chunks and 95th-percentile response onset <= 500 ms")
               for n in table.notes)
    assert any(n.startswith("times on clock modeled:test-profile: modeled from cost profile test-profile")
               for n in table.notes)
    assert any("assumes deadline misses and onsets only grow with N" in n for n in table.notes)
    assert any(n.startswith("pld (m / modeled:test-profile") and "no unbatched capacity" in n for n in table.notes)


def test_x_ar_is_missing_where_ar_has_no_capacity_or_no_runs(tmp_path):
    write_run(tmp_path / "ar-N1", "ar", rows(3))  # AR alone misses 15%: capacity 0
    write_run(tmp_path / "ar-N2", "ar", rows(3), sharing=concurrency(2))
    write_run(tmp_path / "sl-N1", "speclisten", rows(0))
    write_run(tmp_path / "sl-N2", "speclisten", rows(0), sharing=concurrency(2))
    write_run(tmp_path / "sl-N4-b", "speclisten", rows(0), sharing=concurrency(4, batching=True))  # no batched AR
    write_run(tmp_path / "sl-N8-b", "speclisten", rows(4), sharing=concurrency(8, batching=True))
    frame = capacity_table(load_results([str(tmp_path)])).frame
    assert frame["capacity"].tolist() == [0, ">= 2", 4]
    assert all(math.isnan(v) for v in frame["x AR"])


def test_a_larger_n_passing_above_a_failure_is_flagged(tmp_path):
    write_run(tmp_path / "ar-N1", "ar", rows(0))
    write_run(tmp_path / "ar-N2", "ar", rows(4), sharing=concurrency(2))
    write_run(tmp_path / "ar-N4", "ar", rows(0), sharing=concurrency(4))
    table = capacity_table(load_results([str(tmp_path)]))
    assert table.frame["capacity"].tolist() == [1]
    assert any(n.startswith("not monotonic: ar (m / modeled:test-profile")
               and "passes at N=4 above its failing N=2" in n for n in table.notes)


def test_no_concurrency_runs_give_an_empty_table_with_a_note_and_no_figure(tmp_path):
    write_run(tmp_path / "ar", "ar", rows(0))
    results = load_results([str(tmp_path)])
    table = capacity_table(results)
    assert table.frame.empty and table.notes[0].startswith("no concurrency runs: every run replayed one session alone")
    assert capacity_figure(capacity_data(results), tmp_path / "capacity.png") is None


def test_the_tables_command_writes_the_capacity_table_and_figure(tmp_path):
    results = load_results([str(capacity_runs(tmp_path / "runs"))])
    assert "capacity" in [t.key for t in build_tables(results).tables]
    report = build_report(results, tmp_path / "out", formats=("md", "csv", "html"))
    out = tmp_path / "out"
    assert (out / "capacity.png").read_bytes()[:4] == b"\x89PNG"
    assert "| m | speclisten | no | 4 | 2.00 | 8 |" in (out / "capacity.md").read_text()
    assert (out / "capacity.csv").read_text().startswith("model,decoder,batching,capacity,x AR,")
    page = report.read_text()
    assert 'id="capacity"' in page and "capacity.png" in page


# --- session sets and lower bounds (issue 42, item 6) ---------------------------------------------------------------


def rows_of(session_ids: list[str], misses: int = 0) -> list[dict]:
    """``rows`` for each of ``session_ids`` (20 chunks each, ``misses`` of them missing their deadline)."""
    return [{**row, "session_id": s} for s in session_ids for row in rows(misses)]


def set_label(*session_ids: str) -> str:
    ids = sorted(session_ids)
    digest = hashlib.sha256("".join(f"{s}\n" for s in ids).encode()).hexdigest()[:8]
    return f"{len(ids)} session{'' if len(ids) == 1 else 's'} #{digest}"


def test_x_ar_across_different_session_sets_is_not_shown_and_a_note_says_why(tmp_path):
    # AR's capacity found on sessions a, b; speclisten's on a, b, c, d: the old table divided them (2 / 1 = 2.00)
    write_run(tmp_path / "ar-N1", "ar", rows_of(["a", "b"]))
    write_run(tmp_path / "ar-N2", "ar", rows_of(["a", "b"], misses=4), sharing=concurrency(2))
    write_run(tmp_path / "sl-N1", "speclisten", rows_of(["a", "b", "c", "d"]))
    write_run(tmp_path / "sl-N2", "speclisten", rows_of(["a", "b", "c", "d"]), sharing=concurrency(2))
    write_run(tmp_path / "sl-N4", "speclisten", rows_of(["a", "b", "c", "d"], misses=4), sharing=concurrency(4))
    results = load_results([str(tmp_path)])
    table = capacity_table(results)
    records = table.frame.to_dict("records")
    assert [(r["decoder"], r["capacity"], r["sessions"]) for r in records] == [
        ("ar", 1, set_label("a", "b")), ("speclisten", 2, set_label("a", "b", "c", "d"))]
    assert records[0]["x AR"] == 1.0 and math.isnan(records[1]["x AR"])
    assert table.formatted()["x AR"].tolist() == ["1.00", "–"]
    assert any(n.startswith("not compared: speclisten (m / modeled:test-profile") and
               f"found its capacity on {set_label('a', 'b', 'c', 'd')}, ar on {set_label('a', 'b')}: x AR is not shown" in n
               for n in table.notes)
    assert "capacity" in [t.key for t in build_tables(results).tables]  # flagged, not a failure of the whole command


def test_a_line_whose_n_ran_on_different_sessions_is_mixed_and_noted(tmp_path):
    write_run(tmp_path / "ar-N1", "ar", rows_of(["a"]))
    write_run(tmp_path / "ar-N2", "ar", rows_of(["a", "b"], misses=4), sharing=concurrency(2))
    write_run(tmp_path / "sl-N1", "speclisten", rows_of(["a"]))
    write_run(tmp_path / "sl-N2", "speclisten", rows_of(["a", "b"]), sharing=concurrency(2))
    write_run(tmp_path / "sl-N4", "speclisten", rows_of(["a", "b"], misses=4), sharing=concurrency(4))
    table = capacity_table(load_results([str(tmp_path)]))
    assert table.frame["sessions"].tolist() == ["mixed", "mixed"]
    assert math.isnan(table.frame["x AR"].iloc[1])  # mixed sets compare nothing
    assert any(n.startswith("different sessions: speclisten (m / modeled:test-profile") and
               f"(N=1: {set_label('a')}, N=2: {set_label('a', 'b')}, N=4: {set_label('a', 'b')})" in n
               for n in table.notes)


def test_a_capacity_with_no_failing_n_prints_as_a_lower_bound_and_bounds_the_ratio(tmp_path):
    # AR passes every N tried (1, 2: at least 2); speclisten fails at 8 (exactly 4): x AR at most 4 / 2
    write_run(tmp_path / "ar-N1", "ar", rows(0))
    write_run(tmp_path / "ar-N2", "ar", rows(0), sharing=concurrency(2))
    write_run(tmp_path / "sl-N1", "speclisten", rows(0))
    write_run(tmp_path / "sl-N4", "speclisten", rows(0), sharing=concurrency(4))
    write_run(tmp_path / "sl-N8", "speclisten", rows(2), sharing=concurrency(8))
    results = load_results([str(tmp_path)])
    table = capacity_table(results)
    formatted = table.formatted()
    assert formatted["capacity"].tolist() == [">= 2", "4"]
    assert formatted["x AR"].tolist() == ["1.00", "<= 2.00"]
    build_report(results, tmp_path / "out", formats=("md",))
    assert "| m | ar | no | \\>= 2 | 1.00 |" in (tmp_path / "out" / "capacity.md").read_text()  # ">" escaped


# --- sessions a run did not serve --------------------------------------------------------------------------------


def with_unserved(folder: Path, failed: list[str] = (), partial: list[str] = ()) -> Path:
    """The run in ``folder`` with run.json's ``failed_sessions`` (refused) and ``partial_sessions`` (ended early), as
    a live run writes them."""
    meta = json.loads((folder / "run.json").read_text())
    meta["failed_sessions"] = [{"session_id": s, "error": "the server refused the session (server_full)"} for s in failed]
    meta["partial_sessions"] = [{"session_id": s, "reason": "the server closed the connection", "failed_at_unit": 3,
                                 "units_decided": 3, "units": 6} for s in partial]
    (folder / "run.json").write_text(json.dumps(meta))
    return folder


def test_refused_sessions_are_not_held_a_server_holding_two_has_capacity_two_not_at_least_three(tmp_path):
    write_run(tmp_path / "ar-N1", "ar", rows(0))
    write_run(tmp_path / "ar-N2", "ar", rows(0), sharing=concurrency(2))
    with_unserved(write_run(tmp_path / "ar-N3", "ar", rows(0), sharing=concurrency(3)), failed=["s3"])  # held 2 of 3
    records = capacity_table(load_results([str(tmp_path)])).formatted().to_dict("records")
    assert [(r["capacity"], r["N failing"]) for r in records] == [("2", "3 (1 session failed)")]


def test_a_partial_session_fails_its_n_and_an_old_run_json_without_the_keys_counts_none(tmp_path):
    write_run(tmp_path / "ar-N1", "ar", rows(0))
    write_run(tmp_path / "ar-N2", "ar", rows(0), sharing=concurrency(2))  # written before either key: all served
    with_unserved(write_run(tmp_path / "ar-N4", "ar", rows(0), sharing=concurrency(4)), partial=["s", "s2"])
    data = capacity_data(load_results([str(tmp_path)]))
    assert data[["N", "passes", "shortfall"]].to_dict("records") == [
        {"N": 1, "passes": True, "shortfall": ""}, {"N": 2, "passes": True, "shortfall": ""},
        {"N": 4, "passes": False, "shortfall": "2 sessions partial"}]
    assert set(data["capacity"]) == {2} and not data["lower bound"].any()


def test_a_capacity_search_judges_a_run_folder_by_its_chunks_and_the_sessions_it_did_not_serve(tmp_path):
    """``run_verdict``: what the capacity scripts judge each N by; a refused or partial session fails N even when the
    chunks written pass."""
    from ticktock.tables.capacity import run_verdict

    chunks = [chunk("s0", 0, kind="listen", response_ms=80.0, missed_deadline=False, is_onset=False),
              chunk("s0", 1, kind="speak", response_ms=120.0, missed_deadline=False, is_onset=True)]
    served = write_run(tmp_path / "served", "ar", chunks)
    assert run_verdict(served).passes
    refused = write_run(tmp_path / "refused", "ar", chunks)
    meta = json.loads((refused / "run.json").read_text())
    meta["failed_sessions"] = [{"session_id": "s1", "error": "session s1: the server refused the session"}]
    (refused / "run.json").write_text(json.dumps(meta))
    assert not run_verdict(refused).passes and run_verdict(refused).failed == 1
    meta["failed_sessions"], meta["partial_sessions"] = [], [{"session_id": "s2", "reason": "closed", "units": 4,
                                                             "units_decided": 2, "failed_at_unit": 2}]
    (refused / "run.json").write_text(json.dumps(meta))
    assert not run_verdict(refused).passes and run_verdict(refused).partial == 1
