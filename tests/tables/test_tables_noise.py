"""Wall-clock runs with noisy timings are flagged in the provenance and by a printed warning."""

import json

from table_runs import chunk, write_run

from ticktock.tables.__main__ import main

WALL = {"name": "wall"}


def with_noise(folder, spread, median_ms=30.0):
    meta = json.loads((folder / "run.json").read_text())
    meta["timing_noise"] = {"median_ms": median_ms, "min_ms": 30.0, "max_ms": 30.0 * spread, "spread": spread,
                            "cv": 0.1, "noisy": spread > 1.5, "max_spread": 1.5, "measurements": []}
    (folder / "run.json").write_text(json.dumps(meta))


def wall_runs(folder, sl_spread):
    rows = [chunk("s", 0, kind="speak", task="llama_questions", post_audio_ms=400.0, num_output_tokens=4,
                  num_post_audio_forwards=4, is_onset=True, response_ms=400.0, output_token_ids=[1, 2, 3, 4])]
    with_noise(write_run(folder / "ar", "ar", rows, clock=WALL), 1.08)
    fast = [dict(rows[0], post_audio_ms=100.0, num_post_audio_forwards=1, response_ms=100.0)]
    with_noise(write_run(folder / "sl", "speclisten", fast, clock=WALL), sl_spread)
    return folder


def test_noisy_wall_clock_runs_are_flagged_in_the_provenance_and_warned_about(tmp_path, capsys):
    assert main([str(wall_runs(tmp_path / "r", sl_spread=29.0)), "--out", str(tmp_path / "o"), "--format", "md"]) == 0
    captured = capsys.readouterr()
    assert f"warning: run {tmp_path / 'r' / 'sl'}: wall-clock timings are noisy: the same probe forward took 30.0 to " \
           "870.0 ms (spread 29.00 > 1.5)" in captured.err
    assert str(tmp_path / "r" / "ar") not in captured.err
    line = ("WARNING: noisy timings; timing noise of clock wall (a fixed probe forward, slowest / fastest): "
            "ar 1.08 (median 30.0 ms), speclisten 29.00 (median 30.0 ms) NOISY")
    assert line in captured.out and line in (tmp_path / "o" / "table2_speak_speedup.md").read_text()


def test_quiet_wall_clock_runs_show_their_noise_without_a_warning(tmp_path, capsys):
    assert main([str(wall_runs(tmp_path / "r", sl_spread=1.1)), "--out", str(tmp_path / "o"), "--format", "md"]) == 0
    captured = capsys.readouterr()
    assert "noisy" not in captured.err
    assert ("timing noise of clock wall (a fixed probe forward, slowest / fastest): ar 1.08 (median 30.0 ms), "
            "speclisten 1.10 (median 30.0 ms)") in captured.out and "WARNING" not in captured.out
