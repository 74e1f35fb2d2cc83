"""``model=endpoint`` options and secrets: bad options are one line before any work; the bearer token comes only from
the variable ``model.token_env`` names, and neither it nor the URL's credentials reach any file of the run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from live_runs import live_run, served

TOKEN = "tok-5f1e-not-a-real-secret"


@pytest.mark.parametrize("override, message", [
    ("model.url=http://127.0.0.1:8099/v1/realtime", "model.url: must be a ws:// or wss:// URL, got "
                                                   "'http://127.0.0.1:8099/v1/realtime'"),
    ("model.frame_ms=30", "model.frame_ms: must be a whole number of ms from 10 to 1000 that divides the 1000 ms unit"),
    ("model.unit_timeout_s=0", "model.unit_timeout_s: must be a number from 0.1 to 3600, got 0"),
    ("model.token_env=TICKTOCK_TEST_UNSET_TOKEN", "model.token_env: the environment variable TICKTOCK_TEST_UNSET_TOKEN "
                                                  "is not set or empty"),
    ("model.token_env=sk-abc", "model.token_env: must be the NAME of an environment variable"),
    ("talker=espeak", "talker: espeak: a live run hears the server's own speech; run it with talker=none"),
    ("concurrency.batching=true", "concurrency.batching: a live endpoint batches as its server does"),
    ("concurrency.batch_encodings=true", "concurrency.batch_encodings: a live endpoint batches as its server does"),
    ("protocol=nope", "protocol"),
])
def test_a_bad_endpoint_option_is_one_line_before_any_work(tmp_path, override, message):
    run_dir = tmp_path / "run"
    done = subprocess.run([sys.executable, "-m", "ticktock.run", "model=endpoint", override, "progress=false",
                           f"hydra.run.dir={run_dir}"], capture_output=True, text=True, timeout=120,
                          env={k: v for k, v in os.environ.items() if k != "TICKTOCK_TEST_UNSET_TOKEN"})
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1, done.stderr[-2000:]
    assert done.stderr.startswith("ticktock: error: ") and message in done.stderr, done.stderr
    assert not (run_dir / "run.json").exists()


def every_byte(folder: Path) -> bytes:
    return b"".join(path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file())


def test_the_token_and_the_urls_credentials_never_reach_the_run_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("TICKTOCK_TEST_SERVE_TOKEN", TOKEN)
    monkeypatch.setenv("TICKTOCK_TEST_CLIENT_TOKEN", TOKEN)
    with served("decoder=ar", "serve.token_env=TICKTOCK_TEST_SERVE_TOKEN") as url:
        port = url.rsplit(":", 1)[1]
        secret_url = f"ws://127.0.0.1:{port}/v1/realtime?api_key=zz-query-secret"
        summary = live_run(tmp_path / "live", secret_url, "model.token_env=TICKTOCK_TEST_CLIENT_TOKEN",
                           "task.tasks=[llama_questions]", "limit.sessions=1", "limit.chunks=2")
    assert summary.sessions == 1 and summary.failed == 0
    written = every_byte(tmp_path / "live")
    assert TOKEN.encode() not in written and b"zz-query-secret" not in written
    assert b"api_key=***" in written and b"TICKTOCK_TEST_CLIENT_TOKEN" in written


def test_a_server_that_redirects_the_handshake_is_refused_without_following(tmp_path):
    """A live run connects only to the URL given: a redirect to another server is exit 5, not followed."""
    import asyncio
    import threading

    from aiohttp import web

    from ticktock.endpoints.endpoint import Endpoint, EndpointError
    from ticktock.endpoints.run import probe
    from ticktock.endpoints.vllm_omni_duplex import VllmOmniDuplex

    followed = []

    async def redirect(request):
        raise web.HTTPFound(f"http://{request.host}/elsewhere")  # this same server: a followed redirect is seen

    async def elsewhere(request):
        followed.append(request.path)
        return web.Response(text="followed")

    loop, ready, port = asyncio.new_event_loop(), threading.Event(), []

    async def start():
        app = web.Application()
        app.router.add_get("/v1/realtime", redirect)
        app.router.add_get("/elsewhere", elsewhere)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port.append(runner.addresses[0][1])
        ready.set()

    thread = threading.Thread(target=lambda: (loop.run_until_complete(start()), loop.run_forever()), daemon=True)
    thread.start()
    assert ready.wait(30)
    try:
        with pytest.raises(EndpointError, match=r"the server redirects the WebSocket to http://127\.0\.0\.1:\d+/elsewhere; "
                                                r"a live run connects only to the URL given"):
            asyncio.run(probe(Endpoint(url=f"ws://127.0.0.1:{port[0]}/v1/realtime"), VllmOmniDuplex()))
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
    assert followed == []
