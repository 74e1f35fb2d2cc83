"""A run.json of the wrong shape (a list, a missing key, a value of the wrong kind, an absurd number): one line naming
the file and the key, with the documented exit code, from the tables (with or without --skip-bad-runs) and from
``ticktock runs``; never a traceback."""

import json
import subprocess
import sys

import pytest
from table_runs import chunk, write_run

from ticktock.runs import main as runs_main
from ticktock.tables import load_results
from ticktock.tables.__main__ import main as tables_main


def reshape(meta: dict, path: str, value=None, delete=False) -> dict:
    *parents, last = path.split(".")
    node = meta
    for key in parents:
        node = node[key]
    if delete:
        del node[last]
    else:
        node[last] = value
    return meta


BAD = [  # (what is done to run.json, the problem the error names)
    (lambda m: [m], "not a ticktock run.json (a JSON list, not an object)"),
    (lambda m: reshape(m, "config.decoder", delete=True), "config.decoder: missing"),
    (lambda m: reshape(m, "config.decoder.name", 7), "config.decoder.name: must be a string, got 7"),
    (lambda m: reshape(m, "config", "ar"), "config: must be an object, got 'ar'"),
    (lambda m: reshape(m, "config.sampling.temperature", "hot"),
     "config.sampling.temperature: must be a number, got 'hot'"),
    (lambda m: reshape(m, "config.sampling.temperature", float("nan")),
     "config.sampling.temperature: must be a finite number, got nan"),
    (lambda m: reshape(m, "status", "weird"),
     "status: must be one of complete, running, interrupted or 'failed: <why>', got 'weird'"),
    (lambda m: reshape(m, "status", delete=True), "status: missing"),
    (lambda m: reshape(m, "shard", {"index": 0, "count": 10**30, "split": "x"}),
     "shard.count: must be >= 1 and <= 100_000, got 1000000000000000000000000000000"),
    (lambda m: reshape(m, "heartbeat", ["pid", 4]), "heartbeat: must be an object or null, got a list"),
    (lambda m: reshape(m, "heartbeat", {"pid": 4, "updated": 1e300}),
     "heartbeat.updated: must be a time in seconds since 1970, got 1e+300"),
    (lambda m: reshape(m, "timing_noise", {"spread": 3.0}),
     "timing_noise.median_ms: missing (a measured timing noise records it)"),
    (lambda m: reshape(m, "environment", {"model": {"parameters": "many"}}),
     "environment.model.parameters: must be an integer or null, got 'many'"),
    (lambda m: reshape(m, "config.concurrency.sessions", 0), "config.concurrency.sessions: must be >= 1, got 0"),
    (lambda m: reshape(m, "config.concurrency.batch_encodings", "yes"),
     "config.concurrency.batch_encodings: must be true or false, got 'yes'"),
    (lambda m: reshape(m, "clock.profile_sources", {"encode_ms": {"guessed": "85 ms"}}),
     "clock.profile_sources: entry 'encode_ms': must be one {kind: text} with kind measured, published, derived or "
     "assumed, got {'guessed': '85 ms'}"),
    (lambda m: reshape(m, "clock.profile_sources", ["encode_ms"]),
     "clock.profile_sources: must be an object or null, got a list"),
    (lambda m: reshape(m, "shared_device", {"span_ms": 1.0, "batched_encodings": -1}),
     "shared_device.batched_encodings: must be >= 0, got -1"),
    (lambda m: reshape(m, "shared_device", {"batched_encode_steps": 2.5}),
     "shared_device.batched_encode_steps: must be an integer, got 2.5"),
]


def bad_run(folder, change):
    run = write_run(folder, "ar", [chunk("s", 0, kind="speak")])
    (run / "run.json").write_text(json.dumps(change(json.loads((run / "run.json").read_text()))))
    return run


@pytest.mark.parametrize("change, problem", BAD, ids=[problem.split(":")[0] for _, problem in BAD])
def test_a_run_json_of_the_wrong_shape_is_one_line_from_the_tables_and_listed_by_runs(tmp_path, capsys, change, problem):
    run = bad_run(tmp_path / "runs" / "bad", change)
    assert tables_main([str(run), "--out", str(tmp_path / "o"), "--format", "md"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"ticktock: error: {run / 'run.json'}: {problem}"), err

    write_run(tmp_path / "runs" / "ar", "ar", [chunk("s", 0, kind="speak")])
    results = load_results([str(tmp_path / "runs")], skip_bad_runs=True)  # --skip-bad-runs
    assert [r.path.name for r in results.runs] == ["ar"] and len(results.skipped) == 1
    assert results.skipped[0].startswith(f"{run / 'run.json'}: {problem}")

    assert runs_main([str(tmp_path / "runs")]) == 0
    listed = [line for line in capsys.readouterr().out.splitlines() if line.endswith(str(run))]
    assert len(listed) == 1 and " unreadable: " in listed[0]


def test_skip_bad_runs_says_which_run_json_it_left_out_under_produced_by(tmp_path, capsys):
    run = bad_run(tmp_path / "runs" / "bad", BAD[2][0])
    write_run(tmp_path / "runs" / "ar", "ar", [chunk("s", 0, kind="speak")])
    assert tables_main([str(tmp_path / "runs"), "--out", str(tmp_path / "o"), "--format", "md", "--skip-bad-runs"]) == 0
    line = f"skipped: {run / 'run.json'}: {BAD[2][1]}"
    assert f"warning: {line}" in capsys.readouterr().err
    assert f"- {line}" in (tmp_path / "o" / "table2_speak_speedup.md").read_text()


def test_the_tables_command_prints_one_line_and_exits_2(tmp_path):
    """Through the installed command's entry (``ticktock tables``), as a user runs it."""
    run = bad_run(tmp_path / "bad", lambda m: [m])
    done = subprocess.run([sys.executable, "-m", "ticktock.cli", "tables", str(run), "--out", str(tmp_path / "o")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and done.stderr == (f"ticktock: error: {run / 'run.json'}: not a ticktock run.json "
                                                    "(a JSON list, not an object)\n"), done.stderr[-2000:]
