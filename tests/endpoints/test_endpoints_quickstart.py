"""docs/endpoints.md's quick start, as a user types it in two terminals: ``ticktock serve`` started as a command, a
live run into it, then the tables, which show the live run under its endpoint's labels.

The commands, as the page shows them (tests/test_docs_commands.py finds them here)::

    python -m ticktock.serve decoder=ar serve.port=8099
    python -m ticktock.run model=endpoint model.url=ws://127.0.0.1:8099/v1/realtime limit.sessions=2
    python -m ticktock.tables results/runs --out results/tables

and the page's turn-based run into the same server::

    python -m ticktock.run model=endpoint protocol=openai_realtime model.url=ws://127.0.0.1:8099/v1/realtime limit.sessions=2

Here the server takes a free port (``serve.port=0``, the port it prints is the one used) and the sessions are cut to
3 units each (``limit.chunks=3``): a live run holds its sessions in real time.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

BANNER = re.compile(r"ws://127\.0\.0\.1:(\d+)/v1/realtime\?duplex=1")


def command(*args: str, cwd: Path, timeout: int) -> subprocess.CompletedProcess:
    """``python -m <args>`` in ``cwd``, as typed in a terminal (one intra-op thread: the CI machine is shared)."""
    return subprocess.run([sys.executable, "-m", *args], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "OMP_NUM_THREADS": "1"})


@pytest.fixture(scope="module")
def server_port(tmp_path_factory):
    """Terminal 1: ``python -m ticktock.serve decoder=ar`` on a free port (read from its banner); Ctrl-C at the end."""
    process = subprocess.Popen([sys.executable, "-m", "ticktock.serve", "decoder=ar", "serve.port=0"],
                               cwd=tmp_path_factory.mktemp("server"),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env={**os.environ, "OMP_NUM_THREADS": "1"})
    try:
        banner = process.stdout.readline()
        found = BANNER.search(banner)
        assert found, banner + (process.stderr.read() if process.poll() is not None else "")
        yield int(found.group(1))
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def test_the_quick_start_runs_live_and_the_tables_show_the_live_run(tmp_path, server_port):
    url = f"ws://127.0.0.1:{server_port}/v1/realtime"
    run = command("ticktock.run", "model=endpoint", f"model.url={url}", "limit.sessions=2", "limit.chunks=3",
                  cwd=tmp_path, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "2 sessions (0 skipped)" in run.stdout and "live:vllm_omni_duplex" in run.stdout, run.stdout
    (run_dir,) = [path.parent for path in (tmp_path / "results" / "runs").glob("*/run.json")]
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["status"] == "complete" and meta["clock"]["kind"] == "live"
    assert meta["config"]["model"]["name"] == f"embedded@127.0.0.1:{server_port}"
    assert meta["config"]["decoder"]["name"] == "ar" and meta["send_lag"]["units"] == 6

    tables = command("ticktock.tables", "results/runs", "--out", "results/tables", cwd=tmp_path, timeout=300)
    assert tables.returncode == 0, tables.stdout + tables.stderr
    assert "Traceback" not in tables.stderr
    written = "\n".join(path.read_text(encoding="utf-8") for path in (tmp_path / "results" / "tables").glob("*.md"))
    assert f"embedded@127.0.0.1:{server_port}" in written and "live:vllm_omni_duplex" in written, written[:2000]


def test_the_turn_based_protocol_runs_live_and_measures_no_units(tmp_path, server_port):
    url = f"ws://127.0.0.1:{server_port}/v1/realtime"
    run = command("ticktock.run", "model=endpoint", "protocol=openai_realtime", f"model.url={url}", "limit.sessions=2",
                  "limit.chunks=3", cwd=tmp_path, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "live:openai_realtime" in run.stdout and "not measured (turn-based protocol" in run.stdout, run.stdout
    (run_dir,) = [path.parent for path in (tmp_path / "results" / "runs").glob("*/run.json")]
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["status"] == "complete" and meta["clock"]["per_unit"] is False
    assert meta["config"]["clock"]["name"] == "live:openai_realtime"
