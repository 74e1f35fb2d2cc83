"""``python -m ticktock.serve`` as a user starts it: it prints its address, holds sessions, answers every bad client
event with an ``error`` event and goes on, refuses a wrong token and a session over the limit with a reason, survives
a client that disconnects mid-unit, and on Ctrl-C closes every open session with ``session.closed`` and exits 0.
A bad option is one line, exit 2, before the model is built."""

from __future__ import annotations

import base64
import json
import os
import re
import signal
import subprocess
import sys

import numpy as np
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

SECOND = base64.b64encode(np.zeros(16_000, dtype="<i2").tobytes()).decode()


class Served:
    """The command in a subprocess (its output read until the banner names the port); ``stop()`` is Ctrl-C."""

    def __init__(self, *args: str, env: dict | None = None):
        # The command, as the docs show it: python -m ticktock.serve decoder=speclisten_stream talker=espeak
        self.process = subprocess.Popen([sys.executable, "-m", "ticktock.serve", *args, "serve.port=0"],
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                        env={**os.environ, **(env or {})})
        banner = self.process.stdout.readline()
        found = re.search(r"ws://127\.0\.0\.1:(\d+)/v1/realtime\?duplex=1", banner)
        assert found, banner + self.process.stderr.read()
        self.url = f"ws://127.0.0.1:{found.group(1)}/v1/realtime?duplex=1"

    def stop(self) -> int:
        self.process.send_signal(signal.SIGINT)
        return self.process.wait(timeout=60)


def events_until(ws, kind: str, limit: int = 200) -> list[dict]:
    seen = []
    for _ in range(limit):
        seen.append(json.loads(ws.recv(timeout=30)))
        if seen[-1]["type"] == kind:
            return seen
    raise AssertionError(f"no {kind} in {[e['type'] for e in seen]}")


def handshake(ws) -> dict:
    ws.send(json.dumps({"type": "session.update", "session": {"sample_rate_hz": 16000}}))
    return events_until(ws, "session.created")[-1]


@pytest.fixture(scope="module")
def served():
    server = Served("decoder=speclisten_stream", "talker=espeak", "serve.max_sessions=2",
                    "serve.token_env=TICKTOCK_TEST_TOKEN", env={"TICKTOCK_TEST_TOKEN": "s3cret"})
    yield server
    if server.process.poll() is None:
        server.stop()


AUTH = {"Authorization": "Bearer s3cret"}


@pytest.mark.parametrize("frame, code", [
    ("not json", "invalid_json"),
    (json.dumps({"type": "dance"}), "unknown_event"),
    (json.dumps({"type": "input_audio_buffer.append", "audio": "%%%"}), "bad_audio"),
    (json.dumps({"type": "input_audio_buffer.append", "audio": base64.b64encode(b"abc").decode()}), "bad_audio"),
    (json.dumps({"type": "input_audio_buffer.append", "audio": SECOND, "sample_rate_hz": 0}), None),
    (json.dumps({"type": "input_audio_buffer.append", "audio": SECOND, "sample_rate_hz": 10**9}), None),
    (json.dumps({"type": "input_audio_buffer.append", "audio": "A" * (10 * 1024 * 1024)}), "event_too_large"),
    (json.dumps({"type": "conversation.item.create", "item": {"type": "function_call_output", "call_id": "nope",
                                                              "output": "{}"}}), "invalid_function_call_output"),
])
def test_every_bad_client_event_gets_an_error_event_and_the_session_goes_on(served, frame, code):
    with connect(served.url, additional_headers=AUTH, max_size=None) as ws:
        handshake(ws)
        ws.send(frame)
        error = events_until(ws, "error")[-1]["error"]
        assert error["message"] and "\n" not in error["message"]
        if code is not None:
            assert error["code"] == code, error
        ws.send(json.dumps({"type": "session.heartbeat"}))  # the session still answers
        assert events_until(ws, "session.heartbeat_ack")


def test_a_wrong_or_missing_token_is_refused_with_a_reason(served):
    for headers in ({}, {"Authorization": "Bearer wrong"}):
        with connect(served.url, additional_headers=headers) as ws:
            error = json.loads(ws.recv(timeout=10))
            assert error["type"] == "error" and error["error"]["code"] == "invalid_api_key"
            with pytest.raises(ConnectionClosed) as closed:
                ws.recv(timeout=10)
            assert closed.value.rcvd.code == 1008 and "token" in closed.value.rcvd.reason
    assert "s3cret" not in served.process.stderr.peek() if hasattr(served.process.stderr, "peek") else True


def test_more_sessions_than_allowed_get_an_error_naming_the_limit(served):
    with connect(served.url, additional_headers=AUTH) as one, connect(served.url, additional_headers=AUTH) as two:
        handshake(one), handshake(two)
        with connect(served.url, additional_headers=AUTH) as three:
            error = json.loads(three.recv(timeout=10))["error"]
            assert error["code"] == "resource_exhausted" and "at most 2 sessions" in error["message"]


def test_a_client_that_disconnects_mid_unit_leaves_the_others_served(served):
    with connect(served.url, additional_headers=AUTH) as other:
        handshake(other)
        with connect(served.url, additional_headers=AUTH) as leaving:
            handshake(leaving)
            leaving.send(json.dumps({"type": "input_audio_buffer.append", "audio": SECOND[: len(SECOND) // 2]}))
        for _ in range(2):  # the other session goes on deciding its units
            other.send(json.dumps({"type": "input_audio_buffer.append", "audio": SECOND}))
        decided = events_until(other, "response.listen")
        assert decided[-1]["ticktock"]["unit"] == 0


def test_ctrl_c_closes_every_open_session_with_session_closed_and_exits_0():
    server = Served("decoder=ar")
    with connect(server.url) as ws:
        handshake(ws)
        ws.send(json.dumps({"type": "input_audio_buffer.append", "audio": SECOND}))
        events_until(ws, "response.listen")
        code = None
        server.process.send_signal(signal.SIGINT)
        closed = events_until(ws, "session.closed")[-1]
        assert closed["reason"] == "server_shutdown"
        code = server.process.wait(timeout=60)
    assert code == 0
    assert "Traceback" not in server.process.stderr.read()


@pytest.mark.parametrize("args, says", [
    (["serve.max_sessions=0"], "serve.max_sessions: must be a whole number from 1 to 256, got 0"),
    (["serve.token_env=TICKTOCK_NOT_SET_ANYWHERE"], "serve.token_env: the environment variable"),
    (["serve.nope=1"], "serve.nope"),
    (["decoder=nope"], "decoder=nope"),
])
def test_a_bad_option_is_one_line_exit_2_before_the_model_is_built(args, says):
    done = subprocess.run([sys.executable, "-m", "ticktock.serve", *args], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and says in done.stderr, done.stderr


def test_audio_sent_faster_than_real_time_is_buffered_up_to_a_bound_then_refused():
    server = Served("decoder=ar", "serve.max_ahead_s=2")
    try:
        with connect(server.url) as ws:
            handshake(ws)
            for _ in range(4):  # 4 s at once: the model has taken at most a unit of it
                ws.send(json.dumps({"type": "input_audio_buffer.append", "audio": SECOND}))
            error = events_until(ws, "error")[-1]["error"]
            assert error["code"] == "input_backpressure" and "above the 2 s this server buffers" in error["message"]
    finally:
        assert server.stop() == 0


def test_a_client_that_does_not_read_is_closed_with_a_reason_and_its_queue_stays_bounded():
    import asyncio

    from ticktock.serve.server import EVENT_QUEUE, Connection

    async def flood() -> Connection:
        connection = Connection(ws=None, session_id="s", model_name="m", loop=asyncio.get_running_loop())
        for unit in range(3 * EVENT_QUEUE):  # nothing sends: the client reads nothing
            connection._queue([{"type": "response.listen", "unit": unit}])
        return connection

    connection = asyncio.run(flood())
    assert connection.closing == f"the client has not read its last {EVENT_QUEUE} events"
    assert connection.outgoing.qsize() == 1 and connection.outgoing.get_nowait() is None  # only the end marker
