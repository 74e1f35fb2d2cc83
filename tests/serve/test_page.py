"""The talk page of ``ticktock serve`` (``/``, its files at ``/static/{name}`` from an allow-list only), and a whole
session held by it in headless Chromium (when installed): a fake microphone fed from a mini-corpus session streams
PCM16 to the server, the page plays the talker's speech back, shows a latency row for every unit and logs no
JavaScript error. Without the flag that lets a page start audio by itself (the browsers' default), ``?autostart=1``
does not hang: the page says a click is needed and shows a start button, and a click on it starts the session.
Chromium is driven through the DevTools protocol (its console errors and exceptions collected)."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from served import serving

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
HEADLESS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars"]
MEDIA = ["--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream"]
FAKE_MIC = [*MEDIA, "--autoplay-policy=no-user-gesture-required"]
GESTURE_NEEDED = [*MEDIA, "--autoplay-policy=document-user-activation-required"]  # (the browsers' default policy)
SESSION = "llama_questions-eval-0-0008"  # listens 3 units, speaks in units 3-6
WAV_S = 8.0
UNITS = 6  # at least this many unit rows
PAGE_WAIT_S = 45.0  # the whole browser session's bound (Chromium's start included)


@pytest.fixture(scope="module")
def served():
    with serving("decoder=speclisten_stream", "talker=espeak") as (server, url):
        yield server, url.replace("ws://", "http://")


def get(url: str) -> tuple[int, str, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=10) as answer:
            return answer.status, answer.headers.get("Content-Type", ""), answer.read()
    except urllib.error.HTTPError as err:
        return err.code, err.headers.get("Content-Type", ""), err.read()


def test_the_page_and_only_its_files_are_served(served):
    _, base = served
    status, kind, body = get(base + "/")
    assert (status, kind.split(";")[0]) == (200, "text/html") and b'src="/static/app.js"' in body
    for name, expected in [("app.js", "text/javascript"), ("capture-worklet.js", "text/javascript"),
                           ("index.html", "text/html")]:
        status, kind, body = get(f"{base}/static/{name}")
        assert (status, kind.split(";")[0]) == (200, expected) and body, name
    for name in ["server.py", "..%2Fserver.py", "..%2F__init__.py", "%2Fetc%2Fpasswd", "nope.js", "static"]:
        assert get(f"{base}/static/{name}")[0] == 404, name
    assert get(f"{base}/static/../server.py")[0] == 404


def session_wav(path: Path) -> Path:
    """The first ``WAV_S`` seconds of the mini-corpus session as 16-bit PCM WAV (Chromium's fake microphone)."""
    import soundfile

    from ticktock.shipped import resource_path
    from ticktock.sessions.audio import SAMPLE_RATE, load_audio
    from ticktock.sessions.manifest import load_manifest

    sessions = load_manifest(resource_path("manifests/ticktock-mini/manifest.jsonl"), tasks=["llama_questions"])
    session = next(s for s in sessions if s.session_id == SESSION)
    soundfile.write(path, load_audio(session.audio_path)[: int(WAV_S * SAMPLE_RATE)], SAMPLE_RATE, subtype="PCM_16")
    return path


class DevTools:
    """A minimal DevTools-protocol client on one page target: commands, and the page's errors as they come."""

    def __init__(self, ws):
        self.ws, self.next_id, self.waiting, self.errors = ws, 0, {}, []
        self.reader = asyncio.ensure_future(self._read())

    async def _read(self):
        async for message in self.ws:
            event = json.loads(message.data)
            if "id" in event:
                self.waiting.pop(event["id"]).set_result(event)
            elif event.get("method") == "Runtime.exceptionThrown":
                details = event["params"]["exceptionDetails"]
                self.errors.append(f"exception: {details.get('exception', {}).get('description') or details['text']}")
            elif event.get("method") == "Runtime.consoleAPICalled" and event["params"]["type"] == "error":
                self.errors.append("console.error: " + " ".join(str(a.get("value", a.get("description")))
                                                                for a in event["params"]["args"]))
            elif event.get("method") == "Log.entryAdded" and event["params"]["entry"]["level"] == "error":
                entry = event["params"]["entry"]
                self.errors.append(f"log: {entry['text']} {entry.get('url', '')}")

    async def call(self, method: str, **params) -> dict:
        self.next_id += 1
        answer = asyncio.get_running_loop().create_future()
        self.waiting[self.next_id] = answer
        await self.ws.send_json({"id": self.next_id, "method": method, "params": params})
        result = await asyncio.wait_for(answer, timeout=10)
        assert "error" not in result, (method, result["error"])
        return result["result"]

    async def status(self) -> dict | None:
        expression = "JSON.stringify(window.ticktock ? {...window.ticktock} : null)"
        value = (await self.call("Runtime.evaluate", expression=expression, returnByValue=True))["result"]
        return json.loads(value["value"]) if value.get("type") == "string" else None


async def hold_page(port_file: Path, page: str, chromium: subprocess.Popen) -> tuple[dict, list[str]]:
    """Open ``page`` in the running Chromium and wait (bounded) until it has shown UNITS+2 units and played speech;
    returns the page's last status and the errors it logged."""
    import aiohttp

    deadline = time.monotonic() + PAGE_WAIT_S
    while not (port_file.exists() and port_file.read_text().strip()):  # Chromium writes its DevTools port there
        assert chromium.poll() is None and time.monotonic() < deadline, "Chromium did not start its DevTools"
        await asyncio.sleep(0.1)
    port = int(port_file.read_text().split()[0])
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as http:
        async with http.get(f"http://127.0.0.1:{port}/json/list") as answer:
            target = next(t for t in await answer.json() if t["type"] == "page")
        async with http.ws_connect(target["webSocketDebuggerUrl"], max_msg_size=0) as ws:
            tools = DevTools(ws)
            for domain in ("Runtime", "Log", "Page"):
                await tools.call(f"{domain}.enable")
            await tools.call("Page.navigate", url=page)
            status = None
            while time.monotonic() < deadline:
                await asyncio.sleep(0.5)
                status = await tools.status()
                if status and status["unitsShown"] >= UNITS + 2 and status["playedSeconds"] > 0:
                    break
                if status and status["state"] == "closed":
                    break
            rows = await tools.call("Runtime.evaluate", returnByValue=True, expression=(
                "Array.from(document.querySelectorAll('#units tr'), r => Array.from(r.cells, c => c.textContent))"))
            status = dict(status or {}, rows=rows["result"]["value"],
                          transcript=(await tools.call("Runtime.evaluate", returnByValue=True, expression=(
                              "document.getElementById('transcript').textContent")))["result"]["value"])
            tools.reader.cancel()
            return status, tools.errors


@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (Debian: apt-get install chromium); "
                                             "the page's browser check needs it")
def test_headless_chromium_talks_to_the_model_through_the_page(served, tmp_path):
    _, base = served
    wav = session_wav(tmp_path / "mic.wav")
    profile = tmp_path / "profile"
    chromium = subprocess.Popen([CHROMIUM, *HEADLESS, *FAKE_MIC, f"--use-file-for-fake-audio-capture={wav}",
                                 f"--user-data-dir={profile}", "--remote-debugging-port=0", "about:blank"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        status, errors = asyncio.run(asyncio.wait_for(
            hold_page(profile / "DevToolsActivePort", f"{base}/?autostart=1", chromium), PAGE_WAIT_S + 15))
    finally:
        chromium.terminate()
        try:
            chromium.wait(10)
        except subprocess.TimeoutExpired:
            chromium.kill()
            chromium.wait(10)
    assert not errors and not status.get("errors"), (errors, status.get("errors"))
    assert not status["serverErrors"], status["serverErrors"]
    assert status["appendsSent"] > 0, status  # the microphone streamed
    assert status["unitsShown"] >= UNITS, status
    rows = status["rows"]
    assert [int(r[0]) for r in rows] == list(range(len(rows))), rows  # every unit, in order, from the first
    for unit, decision, latency, draft, miss in rows:
        assert decision in ("listen", "speak") and float(latency) >= 0 and miss in ("yes", "no"), rows
        assert draft in ("yes", "no", ""), rows
    assert "speak" in [r[1] for r in rows] and status["transcript"].strip(), status
    assert status["playedSeconds"] > 0, status  # the talker's speech played
    assert status["medianMs"] is not None and status["medianMs"] >= 0


def start_chromium(flags: list[str], tmp_path: Path) -> tuple[subprocess.Popen, Path]:
    profile = tmp_path / "profile"
    chromium = subprocess.Popen([CHROMIUM, *HEADLESS, *flags, f"--user-data-dir={profile}", "--remote-debugging-port=0",
                                 "about:blank"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    return chromium, profile / "DevToolsActivePort"


def stop_chromium(chromium: subprocess.Popen) -> None:
    chromium.terminate()
    try:
        chromium.wait(10)
    except subprocess.TimeoutExpired:
        chromium.kill()
        chromium.wait(10)


async def page_tools(port_file: Path, chromium: subprocess.Popen, http):
    """A DevTools client on Chromium's page target (once Chromium has written its DevTools port)."""
    deadline = time.monotonic() + PAGE_WAIT_S
    while not (port_file.exists() and port_file.read_text().strip()):
        assert chromium.poll() is None and time.monotonic() < deadline, "Chromium did not start its DevTools"
        await asyncio.sleep(0.1)
    port = int(port_file.read_text().split()[0])
    async with http.get(f"http://127.0.0.1:{port}/json/list") as answer:
        target = next(t for t in await answer.json() if t["type"] == "page")
    return await http.ws_connect(target["webSocketDebuggerUrl"], max_msg_size=0)


async def until_state(tools: DevTools, states: set[str]) -> dict:
    """Poll the page's status until its state is one of ``states`` (bounded); the last status."""
    deadline, status = time.monotonic() + PAGE_WAIT_S, None
    while time.monotonic() < deadline:
        status = await tools.status()
        if status and status["state"] in states:
            return status
        await asyncio.sleep(0.2)
    return status or {}


async def click(tools: DevTools, selector: str) -> None:
    """A real click (a user gesture to the page) at the centre of ``selector``."""
    box = (await tools.call("Runtime.evaluate", returnByValue=True, expression=(
        f"(() => {{ const r = document.querySelector('{selector}').getBoundingClientRect(); "
        "return [r.x + r.width / 2, r.y + r.height / 2]; })()")))["result"]["value"]
    for kind in ("mousePressed", "mouseReleased"):
        await tools.call("Input.dispatchMouseEvent", type=kind, x=box[0], y=box[1], button="left", clickCount=1)


async def autostart_needing_a_click(port_file: Path, page: str, chromium: subprocess.Popen) -> tuple[dict, str, dict]:
    """Open ``page`` (``?autostart=1``) where audio needs a gesture: the status it settles in and the Talk button's
    text; then click Talk and hang up: the status once live, and once closed."""
    import aiohttp

    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as http:
        async with await page_tools(port_file, chromium, http) as ws:
            tools = DevTools(ws)
            for domain in ("Runtime", "Log", "Page"):
                await tools.call(f"{domain}.enable")
            await tools.call("Page.navigate", url=page)
            waiting = await until_state(tools, {"needs-gesture", "live", "closed"})
            button = (await tools.call("Runtime.evaluate", returnByValue=True,
                                       expression="document.getElementById('talk').textContent"))["result"]["value"]
            await click(tools, "#talk")
            live = await until_state(tools, {"live", "closed"})
            await click(tools, "#hangup")
            closed = await until_state(tools, {"closed"})
            tools.reader.cancel()
            return waiting, button, {**live, "closed": closed, "errors": [*live.get("errors", []), *tools.errors]}


@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (Debian: apt-get install chromium); "
                                             "the page's browser check needs it")
def test_autostart_where_audio_needs_a_click_shows_a_start_button_and_a_click_starts(served, tmp_path):
    _, base = served
    chromium, port_file = start_chromium(GESTURE_NEEDED, tmp_path)
    try:
        waiting, button, live = asyncio.run(asyncio.wait_for(
            autostart_needing_a_click(port_file, f"{base}/?autostart=1", chromium), 3 * PAGE_WAIT_S))
    finally:
        stop_chromium(chromium)
    assert waiting["state"] == "needs-gesture", waiting  # not a hang in "starting"
    assert "click" in button.lower()
    assert live["state"] == "live" and not live["errors"], live
    assert live["closed"]["state"] == "closed" and not live["closed"]["serverErrors"], live
