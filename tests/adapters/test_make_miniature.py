"""The README's CPU path for a real model: write a miniature with scripts/make_miniature.py, then replay a shipped
session on it with `python -m ticktock.run model=<m> model.path=<dir>` (separate processes, as a user runs them)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("model", ["gander", "streaming_slm"])
def test_make_miniature_then_run_it(tmp_path, model):
    folder = tmp_path / f"mini-{model}"
    made = subprocess.run([sys.executable, str(ROOT / "scripts" / "make_miniature.py"), "--model", model, "--out",
                           str(folder)], capture_output=True, text=True, timeout=300)
    assert made.returncode == 0, made.stderr[-2000:]
    assert f"model={model} model.path={folder}" in made.stdout
    run_dir = tmp_path / "run"
    ran = subprocess.run([sys.executable, "-m", "ticktock.run", f"model={model}", f"model.path={folder}",
                          "decoder=speclisten", "limit.sessions=1", "limit.chunks=4", "progress=false",
                          f"hydra.run.dir={run_dir}"], capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr[-2000:]
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["status"] == "complete" and meta["environment"]["model"]["name"] == model
    assert (run_dir / "chunks.parquet").is_file()
