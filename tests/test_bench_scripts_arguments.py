"""``scripts/bench_concurrency.py`` checks every argument before any replay: one line, exit 2 (issue 42, item 8;
``--sessions 0 | abc | 1,-2`` were tracebacks, the last after replaying N = 1)."""

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "bench_concurrency.py"


def bench(tmp_path, *argv):
    return subprocess.run([sys.executable, str(SCRIPT), "--out", str(tmp_path / "out"), *argv], capture_output=True,
                          text=True, timeout=240, cwd=tmp_path)


@pytest.mark.parametrize("argv, line", [
    (["--sessions", "0"], "argument --sessions: expected whole numbers from 1 to 1024, comma-separated, got '0' ('0' "
                          "is not one)"),
    (["--sessions", "abc"], "argument --sessions: expected whole numbers from 1 to 1024, comma-separated, got 'abc' "
                            "('abc' is not one)"),
    (["--sessions", "1,-2"], "argument --sessions: expected whole numbers from 1 to 1024, comma-separated, got '1,-2' "
                             "('-2' is not one)"),
    (["--sessions", "2,2"], "argument --sessions: N=2 given twice in '2,2'"),
    (["--per-task", "-1"], "argument --per-task: expected a whole number >= 0, got '-1'"),
    (["--sessions", "1", "--decoders", "nope"], "decoder=nope: no such decoder"),
    (["--sessions", "1,4", "--per-task", "1", "limit.sessions=2"],
     "argument --sessions: N=4 above the 2 sessions a run replays (--per-task 1 and the overrides): more sessions at "
     "once than the run has cannot be measured"),
])
def test_every_argument_is_checked_before_any_replay_in_one_line(tmp_path, argv, line):
    done = bench(tmp_path, *argv)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert lines[0].startswith(f"bench_concurrency: error: {line}")
    assert not (tmp_path / "out").exists()  # nothing replayed
