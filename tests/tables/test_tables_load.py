import json
import subprocess
import sys
import time

import pyarrow.parquet as pq
import pytest
from table_runs import chunk, write_run

from ticktock.results.schema import SCHEMA_VERSION
from ticktock.tables import TablesError, load_results
from ticktock.tables.paper import paper_numbers


def test_importing_the_tables_never_imports_torch_or_model_code():
    code = ("import sys, ticktock.tables, ticktock.tables.__main__, ticktock.tables.figures, ticktock.tables.report;"
            "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'transformers') "
            "or m.startswith(('ticktock.adapters', 'ticktock.replay.engine', 'ticktock.decoders.')));"  # the package: names only
            "print(heavy); assert not heavy")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_missing_path_and_empty_folder_give_clear_errors(tmp_path):
    with pytest.raises(TablesError, match=r"nowhere: no such file or folder"):
        load_results([str(tmp_path / "nowhere")])
    (tmp_path / "empty").mkdir()
    with pytest.raises(TablesError, match=r"empty: no result runs found"):
        load_results([str(tmp_path / "empty")])
    with pytest.raises(TablesError, match=r"no such file or folder"):
        load_results([str(tmp_path / "x*")])


def test_schema_version_mismatch_names_the_file(tmp_path):
    write_run(tmp_path / "old", "ar", [chunk("s", 0)], version=99)
    with pytest.raises(TablesError, match=rf"old/run\.json: schema_version 99, but these tables read version {SCHEMA_VERSION}"):
        load_results([str(tmp_path)])


def test_results_of_schema_version_1_are_refused_with_the_reason(tmp_path):
    """Version 2 renamed the idle-window columns (window_*) and pool_hits (lookup_hits): old runs are refused."""
    write_run(tmp_path / "v1", "ar", [chunk("s", 0)], version=1)
    with pytest.raises(TablesError, match=rf"v1/run\.json: schema_version 1, but these tables read version {SCHEMA_VERSION}"):
        load_results([str(tmp_path)])


def test_parquet_version_mismatch_names_the_parquet_file(tmp_path):
    run = write_run(tmp_path / "r", "ar", [chunk("s", 0)])
    table = pq.read_table(run / "chunks.parquet")
    future = str(SCHEMA_VERSION + 1)
    pq.write_table(table.replace_schema_metadata({b"ticktock_schema_version": future.encode()}), run / "chunks.parquet")
    with pytest.raises(TablesError, match=rf"r/chunks\.parquet: schema version {future}, but these tables read"):
        load_results([str(tmp_path)])


def test_results_of_schema_version_6_are_read_with_the_speech_columns_null(tmp_path):
    """Version 7 only added the speech-out columns: a run written before them is read as a run without a talker."""
    import json

    from ticktock.results.rows import SESSION_SPEECH_COLUMNS, SPEECH_COLUMNS

    run = write_run(tmp_path / "r", "ar", [chunk("s", 0)])
    for name, added in (("chunks", SPEECH_COLUMNS), ("sessions", SESSION_SPEECH_COLUMNS)):
        table = pq.read_table(run / f"{name}.parquet").drop_columns(list(added))
        pq.write_table(table.replace_schema_metadata({b"ticktock_schema_version": b"6"}), run / f"{name}.parquet")
    forwards = pq.read_table(run / "forwards.parquet")
    pq.write_table(forwards.replace_schema_metadata({b"ticktock_schema_version": b"6"}), run / "forwards.parquet")
    meta = json.loads((run / "run.json").read_text())
    (run / "run.json").write_text(json.dumps({**meta, "schema_version": 6}))
    cell = load_results([str(tmp_path)]).cells[0]
    assert cell.chunks["audio_sha256"].isna().all() and cell.sessions["num_stalls"].isna().all()
    assert cell.setup.talker == "none"


def test_globs_and_nested_folders_are_discovered_and_grouped_by_setup(tmp_path):
    write_run(tmp_path / "a" / "ar", "ar", [chunk("s", 0)])
    write_run(tmp_path / "a" / "sl", "speclisten", [chunk("s", 0)])
    write_run(tmp_path / "b" / "ar_t1", "ar", [chunk("s", 0)], temperature=1.0)
    results = load_results([str(tmp_path / "a"), str(tmp_path / "b" / "*")])
    assert [(c.decoder, c.setup.temperature) for c in results.cells] == [("ar", 0.0), ("speclisten", 0.0), ("ar", 1.0)]
    assert results.cells[0].setup.device == "Test GPU (derived)"


def test_runs_of_one_cell_with_disjoint_sessions_are_combined_but_overlaps_refused(tmp_path):
    write_run(tmp_path / "x" / "ar1", "ar", [chunk("s1", 0)])
    write_run(tmp_path / "x" / "ar2", "ar", [chunk("s2", 0)])
    results = load_results([str(tmp_path / "x")])
    assert len(results.cells) == 1 and len(results.cells[0].chunks) == 2
    write_run(tmp_path / "x" / "ar3", "ar", [chunk("s2", 0)])
    with pytest.raises(TablesError, match=r"overlap \(e\.g\. session s2 chunk 0\)"):
        load_results([str(tmp_path / "x")])


def test_a_failed_run_is_refused_unless_allowed_and_then_said_in_the_provenance(tmp_path):
    """A run that failed (e.g. a full disk: EFBIG) with some sessions done is not a complete run: refused in one line,
    or with --allow-interrupted built from its completed sessions, saying so under "Produced by"."""
    write_run(tmp_path / "r", "ar", [chunk("s", 0)], status="failed: OSError: [Errno 27] File too large")
    with pytest.raises(TablesError, match=r"r/run\.json: failed run \(status 'failed: OSError: \[Errno 27\] File too "
                                          r"large'; 0 of \? sessions done\); rerun it into .*/r to resume it, or pass "
                                          r"--allow-interrupted"):
        load_results([str(tmp_path)])
    results = load_results([str(tmp_path)], allow_interrupted=True)
    assert results.runs[0].status.startswith("failed") and not results.warnings
    assert results.provenance() == [f"run {tmp_path / 'r'}: failed (status 'failed: OSError: [Errno 27] File too "
                                    "large'); built from its completed sessions only (1 sessions, 1 chunks; 0 of ? "
                                    "sessions done)"]


def test_a_run_stopped_before_its_end_is_refused_unless_allowed(tmp_path):
    write_run(tmp_path / "r", "ar", [chunk("s", 0)], status="interrupted")
    with pytest.raises(TablesError, match=r"r/run\.json: interrupted run \(stopped before its end: status 'interrupted'; "
                                          r"0 of \? sessions done\); rerun it into .*/r to resume it, or pass "
                                          r"--allow-interrupted"):
        load_results([str(tmp_path)])
    results = load_results([str(tmp_path)], allow_interrupted=True)
    assert not results.warnings and len(results.cells[0].chunks) == 1 and results.runs[0].status == "interrupted"
    assert results.provenance() == [f"run {tmp_path / 'r'}: interrupted (stopped before its end: status 'interrupted'); "
                                    "built from its completed sessions only (1 sessions, 1 chunks; 0 of ? sessions done)"]


def killed(folder, heartbeat, sessions_total=3):
    """A run whose run.json still says "running", with ``heartbeat``, and one completed session in its parts only
    (no consolidated tables: killed before its first consolidation)."""
    run = write_run(folder, "ar", [chunk("s", 0)], status="running")
    (run / "parts").mkdir()
    for name in ("chunks", "sessions", "forwards"):
        (run / f"{name}.parquet").rename(run / "parts" / f"s-0.{name}.parquet")
    meta = json.loads((run / "run.json").read_text())
    (run / "run.json").write_text(json.dumps({**meta, "heartbeat": heartbeat, "sessions_total": sessions_total}))
    return run


def test_a_running_run_whose_process_is_gone_is_interrupted_and_built_from_its_parts_when_allowed(tmp_path):
    from ticktock.results.liveness import heartbeat

    killed(tmp_path / "gone", {**heartbeat(1), "pid": 2**22 + 1})  # no process ever has this pid
    with pytest.raises(TablesError, match=r"gone/run\.json: interrupted run \(status still 'running', but its process "
                                          r"\(pid 4194305 on host .+\) is gone; 1 of 3 sessions done\)"):
        load_results([str(tmp_path)])
    results = load_results([str(tmp_path)], allow_interrupted=True)
    assert len(results.cells[0].chunks) == 1 and len(results.cells[0].sessions) == 1
    assert "built from its completed sessions only (1 sessions, 1 chunks; 1 of 3 sessions done)" in results.provenance()[0]


def test_a_live_or_recently_heard_run_is_not_taken_as_interrupted(tmp_path):
    from ticktock.results.liveness import STALE_AFTER_S, heartbeat

    killed(tmp_path / "alive", heartbeat(1))  # this very process
    killed(tmp_path / "far", {**heartbeat(1), "host": "another-host", "pid": 1})
    for name in ("alive", "far"):  # not refused as interrupted: read as they are
        with pytest.raises(TablesError, match=rf"{name}/chunks\.parquet: missing \(the run was not consolidated; is it "
                                              r"still running\?\)"):
            load_results([str(tmp_path / name)])
    killed(tmp_path / "stale", {**heartbeat(1), "host": "another-host", "updated": time.time() - STALE_AFTER_S - 60})
    with pytest.raises(TablesError, match=r"stale/run\.json: interrupted run \(status still 'running', but no heartbeat "
                                          r"for 16 min \(pid \d+ on host another-host; taken as gone after 15 min\)"):
        load_results([str(tmp_path / "stale")])


def test_paper_numbers_cite_table_row_column_and_value():
    numbers = paper_numbers()
    assert len(numbers) > 40
    for entry in numbers:
        assert {"table", "row", "column", "value", "decoder"} <= set(entry), entry
        assert isinstance(entry["value"], (int, float))
    gander = [e for e in numbers if e["table"] == 2 and e["row"] == "Gander" and e["column"] == "speak speedup"]
    assert gander[0]["value"] == 2.60
    json.dumps(numbers)


@pytest.mark.parametrize("module", ["metrics", "paper", "common", "render", "quality"])
def test_docstring_examples_hold(module):
    import doctest
    import importlib

    failures, _ = doctest.testmod(importlib.import_module(f"ticktock.tables.{module}"), optionflags=doctest.ELLIPSIS)
    assert failures == 0
