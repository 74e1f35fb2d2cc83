"""The session viewer: its embedded data round-trips, survives any reply text as HTML parsers read it (a spec
HTML5 tokenizer, Python's html.parser) and headless Chromium draws it and loads its --listen tracks (when Chromium is
installed)."""

import json
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import html5lib
import pytest
from table_runs import chunk, write_run
from test_cases import CHUNKS, FORWARDS
from test_tables_talker import voices  # noqa: F401 (a fixture: hand-made talker runs)

from ticktock.tables import load_results
from ticktock.tables.__main__ import main
from ticktock.tables.viewer import CHUNK_COLUMNS, DATA_ID, FORWARD_COLUMNS, SCRIPT, read_viewer_data, viewer_data

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
HEADLESS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars"]


# Reply texts that end a <script> element early when embedded as they are: a closing tag, and a comment opening
# a nested script (a browser then reads past the element's end: the viewer script after it is swallowed), a line
# separator (a line terminator to older JavaScript), character references and CDATA.
HOSTILE = ['a </script><b>"x"</b> é', "x\u2028y\u2029z & &amp; <![CDATA[ ]]>", "hi <!--<script> there"]


def report(tmp_path) -> tuple[Path, dict]:
    tricky = [chunk("t", i, kind="speak", output_text=f"<|speak|>{text}") for i, text in enumerate(HOSTILE)]
    write_run(tmp_path / "runs" / "ar", "ar", CHUNKS + tricky, forwards=FORWARDS)
    write_run(tmp_path / "runs" / "sl", "speclisten", CHUNKS + tricky, forwards=FORWARDS)
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
    assert [dict(zip(CHUNK_COLUMNS, row))["text"] for row in sessions["t"]["chunks"]] == HOSTILE


def html5_scripts(page: str) -> list[tuple[dict, str]]:
    """The <script> elements of a page as a browser's HTML5 tokenizer splits it (html5lib follows the spec's script
    data states, escaped and double-escaped ones included): (attributes, text) each."""
    return [(dict(node.attrib), node.text or "") for node in html5lib.parse(page, namespaceHTMLElements=False).iter("script")]


class ScriptTexts(HTMLParser):
    """The <script> elements of a page as Python's html.parser splits it: (attributes, text) each."""

    def __init__(self, page: str):
        super().__init__(convert_charrefs=True)
        self.found, self._open = [], None
        self.feed(page)
        self.close()

    def handle_starttag(self, tag, attrs):
        if tag == "script":
            self._open = (dict(attrs), [])

    def handle_data(self, data):
        if self._open is not None:
            self._open[1].append(data)

    def handle_endtag(self, tag):
        if tag == "script" and self._open is not None:
            self.found.append((self._open[0], "".join(self._open[1])))
            self._open = None


def check_viewer_scripts(scripts: list[tuple[dict, str]], expected: dict) -> None:
    """Exactly the viewer's two scripts, whole: the JSON data (decoding to ``expected``) and the viewer's code."""
    assert [attrs.get("id") for attrs, _ in scripts] == [DATA_ID, None], [text[:200] for _, text in scripts]
    assert json.loads(scripts[0][1]) == expected
    assert scripts[1][1] == SCRIPT


def test_any_reply_text_leaves_the_viewer_whole_as_html_parsers_read_the_page(tmp_path):
    page, expected = report(tmp_path)
    text = page.read_text()
    check_viewer_scripts(html5_scripts(text), expected)
    check_viewer_scripts(ScriptTexts(text).found, expected)
    texts = [dict(zip(CHUNK_COLUMNS, row))["text"] for row in
             {s["session_id"]: s for s in json.loads(html5_scripts(text)[0][1])["runs"][0]["sessions"]}["t"]["chunks"]]
    assert texts == HOSTILE  # the exact texts back
    embedded = text.split(f'id="{DATA_ID}">', 1)[1].split("</script>", 1)[0]
    assert not set(embedded) & set("<>&\u2028\u2029")  # nothing in it an HTML tokenizer or old JavaScript acts on


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
    hostile = _chromium(str(tmp_path / "profile"), "--virtual-time-budget=5000", "--dump-dom",
                        f"{page.as_uri()}#viewer?run={run_id}&session=t&alone=1")
    assert hostile.returncode == 0, hostile.stderr[-2000:]
    assert hostile.stdout.count('class="tt-row') == 3  # the viewer ran on the page, and drew session t's chunks
    for text in HOSTILE:  # each reply in its table cell, as text
        escaped = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        assert f'<td class="tt-text">{escaped}</td>' in hostile.stdout, escaped
    shot = tmp_path / "viewer.png"
    taken = _chromium(str(tmp_path / "profile"), "--virtual-time-budget=5000", "--window-size=1200,800",
                      f"--screenshot={shot}", address)
    assert taken.returncode == 0 and shot.stat().st_size > 5_000, taken.stderr[-2000:]
    from PIL import Image

    colours = Image.open(shot).convert("RGB").getcolors(maxcolors=1 << 20)
    assert len(colours) > 50  # drawn: blue audio, orange and violet forwards, text; a blank page has one colour


@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (Debian: apt-get install chromium); "
                                             "the viewer's browser check needs it")
def test_headless_chromium_loads_every_track_with_its_duration(voices, tmp_path):
    """Each --listen track is an audio element the browser decodes (readyState, duration as made), shown with its run
    and session, the timeline's cursor visible over it."""
    import re

    from ticktock.tables.listen import read_tracks

    out = tmp_path / "out"
    assert main([str(voices / "spoken"), "--out", str(out), "--format", "html", "--listen", "s0", "--listen", "s1"]) == 0
    page = out / "report.html"
    made = {(t["run_id"], t["session_id"]): t["expected_s"] for t in read_tracks(page.read_text())}
    assert len(made) == 4 and made[("ar-spoken", "s0")] > 6.4 == made[("ar-spoken", "s1")]
    dom = _chromium(str(tmp_path / "profile"), "--virtual-time-budget=10000", "--dump-dom",
                    f"{page.as_uri()}#viewer?run=speclisten-spoken&session=s0&alone=1")
    assert dom.returncode == 0, dom.stderr[-2000:]
    figures = re.findall(r'<figure class="tt-track" data-run="([^"]+)" data-session="([^"]+)"( hidden="")?>.*?'
                         r'<audio [^>]*data-expected="([0-9.]+)"[^>]*?data-duration="([0-9.]+)" data-ready="(\d)"',
                         dom.stdout, re.S)
    assert len(figures) == 4, dom.stdout[-3000:]
    for run_id, session_id, hidden, expected, duration, ready in figures:
        assert int(ready) >= 1 and float(expected) == made[(run_id, session_id)]  # HAVE_METADATA or more
        assert float(duration) == pytest.approx(float(expected), abs=0.02)  # (Opus pads its last frame)
        assert (hidden == "") == ((run_id, session_id) == ("speclisten-spoken", "s0"))  # the one shown
    assert re.search(r'<line id="tt-cursor"[^>]*visibility="visible"', dom.stdout)
    assert "s0 (fdb_v3) · listen" in dom.stdout
    # a click on the timeline 3.5 s in seeks the track there; the track's time (timeupdate, as it plays) moves the cursor
    probe = page.with_name("probe.html")
    probe.write_text(page.read_text().replace("</body>", SEEK_PROBE + "</body>"))
    seen = _chromium(str(tmp_path / "profile"), "--virtual-time-budget=10000", "--dump-dom",
                     f"{probe.as_uri()}#viewer?run=ar-spoken&session=s0&alone=1")
    assert 'data-probe="clicked t=3.5 x=630; played t=2 x=390"' in seen.stdout, seen.stdout[-2000:]


SEEK_PROBE = """<script>
window.addEventListener("load", () => {
  const svg = document.getElementById("tt-timeline"), box = svg.getBoundingClientRect();
  const audio = Array.from(document.querySelectorAll(".tt-track")).find(f => !f.hidden).querySelector("audio");
  const cursor = () => document.getElementById("tt-cursor").getAttribute("x1");
  const probe = () => {  // (synchronous: the media pipeline's own timing plays no part)
    svg.dispatchEvent(new MouseEvent("click", {clientX: box.left + 70 + 160 * 3.5, clientY: box.top + 20, bubbles: true}));
    const clicked = `clicked t=${audio.currentTime} x=${cursor()}`;
    audio.currentTime = 2;
    audio.dispatchEvent(new Event("timeupdate"));  // as the playing track says its time
    document.body.dataset.probe = `${clicked}; played t=${audio.currentTime} x=${cursor()}`;
  };
  if (audio.readyState >= 1) probe(); else audio.addEventListener("loadedmetadata", probe);
});
</script>"""
