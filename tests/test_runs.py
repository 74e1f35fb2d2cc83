"""``python -m ticktock.runs`` / ``ticktock runs``: one line per run folder, with its status read from run.json and
its heartbeat (complete, running, interrupted, failed), sessions done / total and the last heartbeat."""

import json
import os
import subprocess
import sys

import pytest

from ticktock.results.liveness import heartbeat


def write_meta(folder, status, beat=None, done=0, total=4, decoder="ar"):
    folder.mkdir(parents=True)
    (folder / "parts").mkdir()
    for i in range(done):
        (folder / "parts" / f"s{i}-0.sessions.parquet").write_bytes(b"")  # only names are read
    config = {name: {"name": value} for name, value in
              (("model", "fixture"), ("decoder", decoder), ("clock", "modeled"), ("task", "mini"))}
    meta = {"run_id": f"fixture-{decoder}-{folder.name}", "status": status, "config": config, "sessions_total": total}
    (folder / "run.json").write_text(json.dumps({**meta, **({"heartbeat": beat} if beat else {})}))


def test_runs_lists_every_run_with_its_state(tmp_path):
    write_meta(tmp_path / "a-complete", "complete", heartbeat(4), done=4)
    write_meta(tmp_path / "b-running", "running", heartbeat(2), done=2)  # this very process: alive
    write_meta(tmp_path / "c-killed", "running", {**heartbeat(1), "pid": 2**22 + 1}, done=1)  # no such process
    write_meta(tmp_path / "d-failed", "failed: AudioError: x.flac: cannot decode", heartbeat(3), done=3)
    write_meta(tmp_path / "nested" / "e-stopped", "interrupted", heartbeat(1), done=1, decoder="pld")
    (tmp_path / "f-broken").mkdir()
    (tmp_path / "f-broken" / "run.json").write_text("{not json")
    done = subprocess.run([sys.executable, "-m", "ticktock.runs", str(tmp_path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["run", "model/decoder/clock/task", "shard", "status", "sessions", "last", "heartbeat", "path"]
    rows = {line.split()[-1].rsplit(os.sep, 1)[-1]: line.split() for line in lines[1:]}
    assert {name: row[1:5] for name, row in rows.items() if name != "f-broken"} == {
        "a-complete": ["fixture/ar/modeled/mini", "-", "complete", "4/4"],
        "b-running": ["fixture/ar/modeled/mini", "-", "running", "2/4"],
        "c-killed": ["fixture/ar/modeled/mini", "-", "interrupted", "1/4"],
        "d-failed": ["fixture/ar/modeled/mini", "-", "failed", "3/4"],
        "e-stopped": ["fixture/pld/modeled/mini", "-", "interrupted", "1/4"],
    }
    assert " s ago) " in " ".join(rows["a-complete"]) and "unreadable: JSONDecodeError:" in " ".join(rows["f-broken"])


def ticktock(*args):
    return subprocess.run([sys.executable, "-m", "ticktock.cli", *args], capture_output=True, text=True)


def test_the_ticktock_command_has_runs_and_errors_are_one_line(tmp_path):
    write_meta(tmp_path / "r", "complete", heartbeat(4), done=4)
    listed = ticktock("runs", str(tmp_path))
    assert listed.returncode == 0 and "fixture-ar-r" in listed.stdout
    missing = ticktock("runs", str(tmp_path / "nowhere"))
    assert missing.returncode == 2 and missing.stderr == f"ticktock: error: {tmp_path / 'nowhere'}: no such folder\n"
    (tmp_path / "empty").mkdir()
    empty = ticktock("runs", str(tmp_path / "empty"))
    assert empty.returncode == 2
    assert empty.stderr == f"ticktock: error: {tmp_path / 'empty'}: no runs found (a run folder holds run.json)\n"


def test_no_folder_is_one_ticktock_error_line_exit_2(capsys):
    """Issue 62: ``python -m ticktock.runs`` with no folder printed argparse's usage block, not the one-line form."""
    from ticktock.runs import main

    with pytest.raises(SystemExit) as done:
        main([])
    err = capsys.readouterr().err
    assert done.value.code == 2 and len(err.strip().splitlines()) == 1, err
    assert err.startswith("ticktock: error: runs: the following arguments are required: folders")
