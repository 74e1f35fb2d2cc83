"""The session viewer: its embedded data round-trips, and headless Chromium draws it (when Chromium is installed)."""

import shutil
import subprocess
from pathlib import Path

import pytest
from table_runs import chunk, write_run
from test_cases import CHUNKS, FORWARDS

from ticktock.tables import load_results
from ticktock.tables.__main__ import main
from ticktock.tables.viewer import CHUNK_COLUMNS, FORWARD_COLUMNS, read_viewer_data, viewer_data

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
HEADLESS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars"]


def report(tmp_path) -> tuple[Path, dict]:
    tricky = chunk("t", 0, kind="speak", output_text='<|speak|>a </script><b>"x"</b> é')
    write_run(tmp_path / "runs" / "ar", "ar", CHUNKS + [tricky], forwards=FORWARDS)
    write_run(tmp_path / "runs" / "sl", "speclisten", CHUNKS + [tricky], forwards=FORWARDS)
    out = tmp_path / "out"
    assert main([str(tmp_path / "runs"), "--out", str(out), "--format", "html"]) == 0
    return out / "report.html", viewer_data(load_results([str(tmp_path / "runs")]))


def test_the_embedded_data_round_trips(tmp_path):
    page, expected = report(tmp_path)
    data = read_viewer_data(page.read_text())
    assert data == expected
    assert [r["decoder"] for r in data["runs"]] == ["ar", "speclisten"]
    sessions = {s["session_id"]: s for s in data["runs"][0]["sessions"]}
    chunks = [dict(zip(CHUNK_COLUMNS, row)) for row in sessions["s"]["chunks"]]
    assert [(c["work_start_ms"], c["work_end_ms"], c["missed_deadline"]) for c in chunks] == [
        (1000.0, 1300.0, False), (2100.0, 3600.0, True), (3600.0, 3700.0, False)]
    assert chunks[2]["window_open_ms"] is None  # no window while lagging: null, not NaN
    forwards = [dict(zip(FORWARD_COLUMNS, row)) for row in sessions["s"]["forwards"]]
    assert [(f["phase"], f["start_ms"], f["end_ms"]) for f in forwards][3:5] == [("post_audio", 1200.0, 1300.0),
                                                                                ("draft", 1300.0, 2100.0)]
    assert dict(zip(CHUNK_COLUMNS, sessions["t"]["chunks"][0]))["text"] == 'a </script><b>"x"</b> é'


def test_the_viewer_embeds_the_chosen_sessions_only(tmp_path, capsys):
    report(tmp_path)
    out = tmp_path / "one"
    assert main([str(tmp_path / "runs"), "--out", str(out), "--format", "html", "--viewer-sessions", "1"]) == 0
    page = (out / "report.html").read_text()
    data = read_viewer_data(page)
    assert (data["sessions"], data["total"]) == (1, 2) and "1 of 2 sessions" in page
    assert [[s["session_id"] for s in r["sessions"]] for r in data["runs"]] == [["s"], ["s"]]  # the case's session
    with pytest.raises(SystemExit):
        main([str(tmp_path / "runs"), "--viewer-sessions", "0"])
    assert "--viewer-sessions: must be 'all' or an integer >= 1, got '0'" in capsys.readouterr().err


def _chromium(*args, timeout=60):
    profile = ["--user-data-dir=" + args[0]]
    return subprocess.run([CHROMIUM, *HEADLESS, *profile, *args[1:]], capture_output=True, text=True, timeout=timeout)


@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (Debian: apt-get install chromium); "
                                             "the viewer's browser check needs it")
def test_headless_chromium_draws_the_viewer(tmp_path):
    page, data = report(tmp_path)
    run_id = data["runs"][1]["run_id"]
    address = f"{page.as_uri()}#viewer?run={run_id}&session=s&chunk=1&alone=1"
    dom = _chromium(str(tmp_path / "profile"), "--virtual-time-budget=5000", "--dump-dom", address)
    assert dom.returncode == 0, dom.stderr[-2000:]
    html = dom.stdout
    assert html.count('class="tt-chunk') == 3 and html.count('class="tt-forward"') == 4
    assert html.count('class="tt-draft"') == 3 and html.count('class="tt-lag"') == 1
    assert "chunk 1: audio 1000.0-2000.0 ms" in html and "DEADLINE MISSED: 600.0 ms lag" in html
    assert html.count('class="tt-row') == 3 and "MISSED" in html
    shot = tmp_path / "viewer.png"
    taken = _chromium(str(tmp_path / "profile"), "--virtual-time-budget=5000", "--window-size=1200,800",
                      f"--screenshot={shot}", address)
    assert taken.returncode == 0 and shot.stat().st_size > 5_000, taken.stderr[-2000:]
    from PIL import Image

    colours = Image.open(shot).convert("RGB").getcolors(maxcolors=1 << 20)
    assert len(colours) > 50  # drawn: blue audio, orange and violet forwards, text; a blank page has one colour
