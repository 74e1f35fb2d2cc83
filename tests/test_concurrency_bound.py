"""``concurrency.sessions`` above the sessions a run replays is refused before the model is built (issue 42, item 6):
a run of one session at N = 1000 used to be accepted and recorded as concurrency 1000."""

import json
import subprocess
import sys

import pytest

from ticktock.replay import runner
from ticktock.replay.concurrency import ConcurrencyError
from ticktock.replay.config import compose_run
from ticktock.replay.runner import run


def config(manifest, *overrides):
    return compose_run("ar", "fixture", None, [f"task.manifest={manifest}", "task.tool_executor=null", "limit.chunks=2",
                                               *overrides])


def test_n_above_the_sessions_after_the_limits_is_refused_before_the_model_is_built(tmp_path, small_manifest,
                                                                                     monkeypatch):
    monkeypatch.setattr(runner, "build_engine", lambda *a: pytest.fail("the model was built"))
    with pytest.raises(ConcurrencyError) as failure:
        run(config(small_manifest, "limit.sessions=2", "concurrency.sessions=3"), tmp_path / "run")
    assert str(failure.value) == ("concurrency.sessions: 3 sessions at once, but this run replays 2 sessions (after "
                                  "limit.* and shard.*): use concurrency.sessions=2 or less, or replay more sessions")
    assert not (tmp_path / "run" / "run.json").exists()


def test_the_bound_is_this_shards_part_of_a_sharded_run(tmp_path, small_manifest):
    # 3 sessions over 2 shards: shard 1 holds 1 of them (the split balances chunks), so N = 2 is refused there
    with pytest.raises(ConcurrencyError, match="this run replays 1 session "):
        run(config(small_manifest, "shard.index=1", "shard.count=2", "concurrency.sessions=2"), tmp_path / "shard1")


def test_n_equal_to_the_sessions_runs_and_its_resume_is_not_refused(tmp_path, small_manifest):
    cfg = config(small_manifest, "limit.sessions=2", "concurrency.sessions=2")
    first = run(cfg, tmp_path / "run")
    again = run(cfg, tmp_path / "run")  # nothing left to replay: still the same run at the same N
    assert first.sessions == again.sessions == 2 and first.run_id == again.run_id
    config_recorded = json.loads((tmp_path / "run" / "run.json").read_text())["config"]
    assert config_recorded["concurrency"]["sessions"] == 2


def test_the_smoke_experiment_at_n_1000_is_one_line_exit_2(tmp_path):
    done = subprocess.run([sys.executable, "-m", "ticktock.run", "progress=false", "threads=1", "experiment=smoke",
                           "concurrency.sessions=1000", f"hydra.run.dir={tmp_path / 'run'}"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [
        "ticktock: error: concurrency.sessions: 1000 sessions at once, but this run replays 1 session (after limit.* "
        "and shard.*): use concurrency.sessions=1 or less, or replay more sessions"]
    assert not (tmp_path / "run" / "run.json").exists()
