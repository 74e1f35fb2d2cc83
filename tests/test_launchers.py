"""Sweeps through Hydra's launcher plugins and sharded runs, end to end (``python -m ticktock.run -m``, real
subprocesses, the fixture model): a parallel sweep gives the tables a sequential one gives, shards combined by the
tables give the unsharded run chunk for chunk, and a shard missing, twice or failed is refused with a clear line.
No cluster is needed: joblib and submitit's local executor run on this machine, Ray on a local instance."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from helpers import made_once
from ticktock.tables.build import build_tables
from ticktock.tables.load import TablesError, load_results

SWEEP = ["model=fixture", "decoder=ar,speclisten", "limit.per_task=1", "limit.chunks=3", "progress=false"]
VARYING = ["run_id"]  # differs by folder; and every *_wall_* column: measured, not modeled


def sweep(folder: Path, *overrides: str, timeout: int = 400) -> Path:
    done = subprocess.run([sys.executable, "-m", "ticktock.run", "-m", *SWEEP, f"hydra.sweep.dir={folder}", *overrides],
                          capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr[-3000:]
    return folder


def chunk_rows(results) -> pd.DataFrame:
    """Every chunk of every cell, modeled columns only, in a fixed order."""
    frames = [c.chunks.assign(decoder=c.decoder) for c in results.cells]
    rows = pd.concat(frames, ignore_index=True)
    rows = rows.drop(columns=VARYING + [c for c in rows.columns if "wall" in c])
    rows["output_token_ids"] = rows["output_token_ids"].map(list)
    return rows.sort_values(["decoder", "session_id", "chunk_index"]).reset_index(drop=True)


def table_texts(results) -> dict:
    return {t.key: t.formatted().to_csv(index=False) for t in build_tables(results).tables}


@pytest.fixture(scope="session")
def sequential(shared_dir):
    """Hydra's basic launcher, one job after another: swept once per test session, read by every worker."""
    return made_once(shared_dir, "launchers-sequential", lambda folder: sweep(folder / "sweep")) / "sweep"


@pytest.fixture(scope="session")
def shards(shared_dir):
    """Four shards of each decoder, two jobs at a time (joblib): swept once per test session."""
    return made_once(shared_dir, "launchers-sharded", lambda folder: sweep(
        folder / "sweep", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2", "shard.count=4",
        "shard.index=range(0,4)")) / "sweep"


def test_a_joblib_sweep_gives_the_tables_of_the_same_sweep_run_sequentially(sequential, tmp_path):
    parallel = sweep(tmp_path / "sweep", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2")
    threads = {json.loads(p.read_text())["environment"]["torch_threads"] for p in parallel.glob("*/run.json")}
    assert threads == {1}  # 2 cores, 2 jobs: joblib gives each job cores // n_jobs threads
    assert table_texts(load_results([parallel])) == table_texts(load_results([sequential]))
    pd.testing.assert_frame_equal(chunk_rows(load_results([parallel])), chunk_rows(load_results([sequential])))


def test_four_shards_combined_by_the_tables_equal_the_unsharded_run(sequential, shards):
    folders = sorted(p.parent.name for p in shards.glob("*/run.json"))
    assert len(folders) == 8 and all("-shard" in name for name in folders)  # 2 decoders x 4 shards
    records = [json.loads(p.read_text())["shard"] for p in shards.glob("*/run.json")]
    assert sum(r["sessions"] for r in records) == 2 * 8 and {r["split_sessions"] for r in records} == {8}
    combined, whole = load_results([shards]), load_results([sequential])
    assert [(c.decoder, len(c.runs)) for c in combined.cells] == [("ar", 4), ("speclisten", 4)]
    pd.testing.assert_frame_equal(chunk_rows(combined), chunk_rows(whole))  # tokens and modeled latencies
    assert table_texts(combined) == table_texts(whole)


def copy_runs(shards: Path, to: Path, keep) -> Path:
    for folder in sorted(p.parent for p in shards.glob("*/run.json")):
        if keep(folder.name):
            shutil.copytree(folder, to / folder.name)
    return to


def runs_listing(folder: Path) -> str:
    done = subprocess.run([sys.executable, "-m", "ticktock.runs", str(folder)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_missing_shard_is_refused_naming_it(shards, tmp_path):
    runs = copy_runs(shards, tmp_path / "runs", keep=lambda name: "speclisten" not in name and "shard2of4" not in name)
    with pytest.raises(TablesError) as caught:
        load_results([runs])
    assert "shard(s) 2 of 4 missing (3 found:" in str(caught.value)
    assert str(caught.value).endswith("(or pass --allow-missing-shards to build from the shards there)")
    partial = load_results([runs], allow_missing_shards=True)
    assert any(note.startswith("incomplete: sharded run fixture/ar/modeled/ticktock_mini") for note in partial.provenance())
    assert "3 of 4 shards (missing: 2), 3 complete" in runs_listing(runs)
    done = subprocess.run([sys.executable, "-m", "ticktock.tables", str(runs), "--out", str(tmp_path / "t")],
                          capture_output=True, text=True)
    assert done.returncode == 2 and done.stderr.startswith("ticktock: error: sharded run fixture/ar/modeled/ticktock_mini (split ")


def test_overlapping_shards_are_refused_naming_both_folders(shards, tmp_path):
    runs = copy_runs(shards, tmp_path / "runs", keep=lambda name: "speclisten" not in name)
    again = next(runs.glob("*shard1of4"))
    shutil.copytree(again, tmp_path / "runs" / "again" / again.name)
    with pytest.raises(TablesError) as caught:
        load_results([runs], allow_missing_shards=True)  # never allowed
    assert "shard 1 of 4 appears 2 times (overlapping: " in str(caught.value) and str(again) in str(caught.value)
    assert "shard 1 twice" in runs_listing(runs)


def test_a_failed_shard_is_visible_and_never_silently_missing_from_a_table(shards, tmp_path):
    runs = copy_runs(shards, tmp_path / "runs", keep=lambda name: "speclisten" not in name)
    failed = next(runs.glob("*shard3of4"))
    meta = json.loads((failed / "run.json").read_text())
    (failed / "run.json").write_text(json.dumps({**meta, "status": "failed: RuntimeError: CUDA out of memory"}))
    with pytest.raises(TablesError) as caught:
        load_results([runs])
    assert f"shard 3 of 4 ({failed}) is failed: RuntimeError: CUDA out of memory; rerun it" in str(caught.value)
    listing = runs_listing(runs)
    assert "3 complete, 1 failed (shard 3)" in listing
    assert [line.split()[2:4] for line in listing.splitlines() if "shard3of4" in line] == [["3/4", "failed"]]
    allowed = load_results([runs], allow_missing_shards=True)
    from ticktock.tables.report import _runs_table

    assert "failed: RuntimeError: CUDA out of memory" in _runs_table(allowed) and "3 of 4" in _runs_table(allowed)


def test_a_requeued_shard_resumes_its_folder(shards, tmp_path):
    runs = copy_runs(shards, tmp_path / "runs", keep=lambda name: name.startswith("0-") or "ar-modeled-shard0" in name)
    [folder] = list(runs.iterdir())
    first = sorted((folder / "parts").glob("*.sessions.parquet"))[0]
    for part in (folder / "parts").glob(first.name.removesuffix(".sessions.parquet") + ".*"):
        part.unlink()  # as if preempted before the last session was written
    done = subprocess.run([sys.executable, "-m", "ticktock.run", "model=fixture", "decoder=ar", "limit.per_task=1",
                           "limit.chunks=3", "progress=false", "shard.index=0", "shard.count=4",
                           f"hydra.run.dir={folder}"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"{len(list((folder / 'parts').glob('*.sessions.parquet')))} sessions" in done.stdout
    original = next(p for p in shards.glob("*ar-modeled-shard0of4"))
    pd.testing.assert_frame_equal(chunk_rows(load_results([folder], allow_missing_shards=True)),
                                  chunk_rows(load_results([original], allow_missing_shards=True)))


def test_slurm_local_runs_the_submitit_path_on_this_machine(sequential, tmp_path):
    folder = sweep(tmp_path / "sweep", "hydra/launcher=slurm_local", "threads=1", "decoder=ar", "shard.count=2",
                   "shard.index=0,1")
    assert (folder / ".submitit").is_dir()
    whole = load_results([sequential])
    ar = [c for c in whole.cells if c.decoder == "ar"]
    combined = load_results([folder])
    pd.testing.assert_frame_equal(chunk_rows(combined), chunk_rows(type(whole)(whole.runs, ar, [], [])))


def test_the_slurm_config_is_a_valid_submitit_job_array_for_one_gpu_per_task(tmp_path, monkeypatch):
    """No cluster here: the shipped config, with a site's overrides, becomes the sbatch script submitit would submit
    (submitit only checks that an ``srun`` is on the PATH; nothing is submitted or run)."""
    import os

    import submitit

    (tmp_path / "srun").write_text("#!/bin/sh\nexit 1\n")
    (tmp_path / "srun").chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from ticktock.replay.resources import register_resolver
    from ticktock.shipped import resource_path

    register_resolver()
    with initialize_config_dir(config_dir=str(resource_path("configs")), version_base=None):
        cfg = compose("run", overrides=["hydra/launcher=slurm", "hydra.launcher.partition=gpu-a100",
                                        "hydra.launcher.account=lab", "hydra.sweep.dir=/scratch/grid"],
                      return_hydra_config=True)
    params = OmegaConf.to_container(cfg.hydra.launcher, resolve=False)
    assert params.pop("_target_").endswith("SlurmLauncher")
    base = {"timeout_min", "cpus_per_task", "gpus_per_node", "tasks_per_node", "mem_gb", "nodes", "name", "stderr_to_stdout"}
    params.pop("submitit_folder")
    params["name"] = "ticktock"
    executor = submitit.AutoExecutor(folder="/scratch/grid/.submitit/%j", cluster="slurm",
                                     slurm_max_num_timeout=params.pop("max_num_timeout"))
    executor.update_parameters(**{k if k in base else f"slurm_{k}": v for k, v in params.items()})  # rejects unknown keys
    script = executor._executor._make_submission_file_text("python -m ticktock.run", "uid")
    for line in ("#SBATCH --partition=gpu-a100", "#SBATCH --account=lab", "#SBATCH --gpus-per-task=1",
                 "#SBATCH --cpus-per-task=8", "#SBATCH --mem=64GB", "#SBATCH --time=240", "#SBATCH --signal=USR2@120"):
        assert line in script, script
    assert executor._executor.max_num_timeout == 3  # requeued after a timeout (and on preemption) up to 3 times


def ray_can_start() -> str | None:
    """None when a local Ray instance starts here, else why not."""
    probe = "import ray; ray.init(num_cpus=1, include_dashboard=False); print(ray.get(ray.remote(lambda: 7).remote()))"
    try:
        done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=180)
    except subprocess.TimeoutExpired:
        return "a local Ray instance did not start within 180 s"
    if done.returncode != 0 or done.stdout.split()[-1:] != ["7"]:
        return f"a local Ray instance cannot start on this machine: {(done.stderr.strip().splitlines() or ['?'])[-1]}"
    return None


def test_a_ray_sweep_on_a_local_instance_gives_the_sequential_tables(sequential, tmp_path):
    """A sweep that fails is a failure, unless a bare local Ray instance cannot start on this machine either (asked
    only then: starting one costs ~10 s)."""
    pytest.importorskip("ray", reason="Ray is not installed (pip install -e '.[cluster]')")
    folder = tmp_path / "sweep"
    done = subprocess.run([sys.executable, "-m", "ticktock.run", "-m", *SWEEP, f"hydra.sweep.dir={folder}",
                           "hydra/launcher=ray", "+hydra.launcher.ray.init.num_cpus=1",
                           "+hydra.launcher.ray.init.include_dashboard=false"], capture_output=True, text=True,
                          timeout=400)
    if done.returncode != 0:
        reason = ray_can_start()
        if reason:
            pytest.skip(reason)
    assert done.returncode == 0, done.stderr[-3000:]
    assert table_texts(load_results([folder])) == table_texts(load_results([sequential]))
    pd.testing.assert_frame_equal(chunk_rows(load_results([folder])), chunk_rows(load_results([sequential])))
