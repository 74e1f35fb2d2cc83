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
    from ticktock import main_job

    job = ["--model", "fixture", "--per-task", "1", "--decoders", "ar,speclisten", "--temperatures", "", "limit.chunks=3"]
    assert main_job.main(["--out", str(tmp_path / "one"), "--jobs", "1", *job]) == 0  # in this process, one at a time
    # auto: 2 at a time on the modeled clock (the test machines have 2+ cores), in joblib's worker processes
    done = subprocess.run([sys.executable, "-m", "ticktock.main_job", "--out", str(tmp_path / "two"), *job],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    one, two = ({p.name: p.read_text() for p in sorted((tmp_path / out / "report").glob("*.csv"))}
                for out in ("one", "two"))
    assert len(one) > 5 and two == one  # two runs, two at a time: the same tables


def test_job_count_is_two_on_the_modeled_clock_and_one_when_a_run_measures_time(monkeypatch):
    import pytest

    from ticktock import main_job
    from ticktock.errors import ConfigError
    from ticktock.replay.config import compose_run

    modeled = compose_run("ar", "fixture", 1, [])
    wall = compose_run("speclisten", "fixture", 1, ["clock=wall"])
    monkeypatch.setattr(main_job, "usable_cores", lambda: 16)
    assert main_job.job_count("auto", [modeled, modeled]) == 2
    assert main_job.job_count("auto", [modeled, wall]) == 1
    assert main_job.job_count("3", [wall]) == 3
    monkeypatch.setattr(main_job, "usable_cores", lambda: 1)
    assert main_job.job_count("auto", [modeled]) == 1
    for bad in ("0", "two", "-1"):
        with pytest.raises(ConfigError, match=f"--jobs: must be 'auto' or an integer >= 1, got '{bad}'"):
            main_job.job_count(bad, [modeled])


def test_every_run_of_the_job_is_checked_before_any_is_replayed(tmp_path, capsys, monkeypatch):
    import pytest

    from ticktock import main_job

    monkeypatch.delenv("TICKTOCK_DEBUG", raising=False)
    cases = [("--temperatures", "-1", "run ar-T-1 (sampling.temperature=-1): sampling.temperature: must be 0 (greedy) or "
                                      "a number from 0.01 to 100, got -1"),
             ("--concurrency", "abc", "--concurrency: 'abc' is not an integer (values are separated by commas, e.g. 2,4)"),
             ("--concurrency", "1", "--concurrency: each N must be an integer >= 2 (N = 1 is every decoder's own run), "
                                    "got 1"),
             ("--per-task", "-2", "--per-task: must be an integer >= 0 (0: every session), got -2")]
    for option, value, message in cases:
        with pytest.raises(SystemExit) as done:
            main_job.main(["--out", str(tmp_path), "--model", "fixture", "--per-task", "1", "--decoders", "ar",
                           "--temperatures", "", option, value])
        assert (done.value.code, capsys.readouterr().err) == (2, f"ticktock: error: {message}\n")
        assert not (tmp_path / "runs").exists()  # nothing replayed (AR used to run before -1 was refused)
