"""The one-command main job end to end, on the test fixture (the real job uses the embedded model)."""

import subprocess
import sys


def test_main_job_runs_every_decoder_and_prints_the_headline_tables(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "ticktock.main_job", "--out", str(tmp_path), "--model", "fixture", "--per-task", "1",
         "--decoders", "ar,pld,speclisten", "--temperatures", "0.8", "--concurrency", "2", "limit.chunks=6"],
        capture_output=True, text=True, timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    for title in ("Table 2", "Tool-call speedup", "Table 5"):
        assert title in result.stdout
    assert (tmp_path / "report" / "report.html").is_file()
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == [
        "fixture-modeled-ar", "fixture-modeled-ar-N2", "fixture-modeled-ar-T0.8", "fixture-modeled-pld",
        "fixture-modeled-speclisten", "fixture-modeled-speclisten-T0.8", "fixture-modeled-speclisten_plus-N2"]
    assert (tmp_path / "report" / "fig4c_concurrency.png").is_file()


def test_main_job_with_two_jobs_at_once_writes_the_tables_of_one_at_a_time(tmp_path):
    def main_job(out, *extra):
        done = subprocess.run(
            [sys.executable, "-m", "ticktock.main_job", "--out", str(out), "--model", "fixture", "--per-task", "1",
             "--decoders", "ar,pld,speclisten", "--temperatures", "", *extra, "limit.chunks=4"],
            capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        return {p.name: p.read_text() for p in sorted((out / "report").glob("*.csv"))}

    one = main_job(tmp_path / "one")
    two = main_job(tmp_path / "two", "--jobs", "2")
    assert len(one) > 5 and two == one
