import subprocess
import sys

from ticktock.clocks.modeled import CostProfile


def test_calibrate_writes_a_loadable_measured_profile(tmp_path):
    out = tmp_path / "profile.yaml"
    result = subprocess.run(
        [sys.executable, "-m", "ticktock.calibrate", "model=fixture", f"out={out}", "repeats=2", "warmup=1",
         "query_tokens=[1,8]", "context_tokens=[0,64]", f"hydra.run.dir={tmp_path / 'hydra'}"],
        capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    profile = CostProfile.load(out)
    assert profile.query_tokens == [1, 8] and profile.context_tokens == [0, 64]
    assert all(v > 0 for row in profile.forward_table for v in row) and profile.encode_ms > 0
    assert profile.provenance.startswith("MEASURED") and "fixture" in profile.model
