"""Sweeps that keep what is valid (``python -m ticktock.run -m``, real subprocesses, Hydra's launchers, the fixture
model): every arm is checked before any is launched, a bad arm is named by its overrides, and a job that
fails at run time does not stop the others."""

import json
import subprocess
import sys

from ticktock.errors import EXIT_CONFIG, EXIT_INPUT_DATA

SMOKE = ["experiment=smoke", "progress=false", "limit.chunks=2"]


def sweep(*overrides: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ticktock.run", "-m", *SMOKE, *overrides], capture_output=True,
                          text=True, timeout=300)


def test_a_bad_arm_stops_the_sweep_before_any_job_naming_the_arm(tmp_path):
    done = sweep("hydra/launcher=joblib", "hydra.launcher.n_jobs=2", "limit.sessions=1,-1",
                 f"hydra.sweep.dir={tmp_path / 'sw'}")
    assert done.returncode == EXIT_CONFIG and done.stdout == ""
    assert done.stderr.splitlines() == [
        "ticktock: error: sweep job 1 (limit.sessions=-1): limit.sessions: must be null or an integer >= 1, got -1 "
        "(1 of 2 jobs bad; none was launched)"]
    assert not (tmp_path / "sw").exists()  # the valid arm was neither started nor left as an empty folder


def test_a_job_that_fails_does_not_stop_the_others_and_the_sweep_exits_with_its_code(tmp_path):
    missing = tmp_path / "nowhere.jsonl"
    # Hydra's basic launcher, one job after another: the failing job comes first (a SystemExit in a job ended the
    # sweep there; under joblib it cancelled the jobs still running)
    done = sweep(f"task.manifest={missing},${{ticktock_resource:manifests/ticktock-mini/manifest.jsonl}}",
                 f"hydra.sweep.dir={tmp_path / 'sw'}")
    assert done.returncode == EXIT_INPUT_DATA, done.stderr[-2000:]
    errors = [line for line in done.stderr.splitlines() if line.startswith("ticktock: error:")]
    assert errors[0].startswith("ticktock: error: sweep job 0 (experiment=smoke ")
    assert errors[0].endswith(f" task.manifest={missing}): {missing}: manifest not found")
    assert errors[1].startswith("ticktock: error: 1 sweep job(s) failed, the others ran to their end: sweep job 0 ")
    assert "Traceback" not in done.stderr and len(errors) == 2
    [run_json] = (tmp_path / "sw").glob("*/run.json")  # the valid job ran to its end; the failed one left no folder
    assert run_json.parent.name.startswith("1-") and json.loads(run_json.read_text())["status"] == "complete"
    assert sorted(p.name for p in (tmp_path / "sw").iterdir()) == [".failed-jobs", run_json.parent.name,
                                                                   "multirun.yaml"]
