"""``python -m ticktock.serve`` as a user starts it: it prints its address, holds sessions, answers every bad client
event with an ``error`` event and goes on, refuses a wrong token (a bare one included: only ``Authorization: Bearer``)
and a session over the limit with a reason, keeps ``/health`` open without a token but says nothing there but
``{"status": "ok"}``, survives a client that disconnects mid-unit, and on Ctrl-C closes every open session with
``session.closed`` and exits 0 within ``SHUTDOWN_BOUND_S``, even when its shell started it with SIGINT ignored (``&``)
or the signal comes as soon as it has printed its address. A bad option, or a port in use, is one line, exit 2,
before the model is built; ``--help`` prints the usage and exits 0."""

from __future__ import annotations

import base64
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import numpy as np
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

SECOND = base64.b64encode(np.zeros(16_000, dtype="<i2").tobytes()).decode()
#: From Ctrl-C or SIGTERM to the process's exit, a session open (docs/serving.md gives the figures measured): the
#: server's own shutdown takes milliseconds when no session is mid-unit; the bound leaves a loaded 2-core machine room.
SHUTDOWN_BOUND_S = 3.0
#: From the server's last line (``ticktock serve: stopped; ...``) to the process's exit: the interpreter's teardown of
#: torch's and transformers' modules, without the collector's passes over them (``freeze_for_exit``: 0.3 s measured on a
#: loaded 2-core machine, 2.1 to 2.6 s before).
EXIT_BOUND_S = 1.0


class Served:
    """The command in a subprocess (its output read until the banner names the port); ``stop()`` is Ctrl-C."""

    def __init__(self, *args: str, env: dict | None = None, sigint_ignored: bool = False):
        # The command, as the docs show it: python -m ticktock.serve decoder=speclisten_stream talker=espeak
        # (sigint_ignored: as a non-interactive shell starts a command with &, SIGINT ignored from the start)
        ignore = (lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)) if sigint_ignored else None
        self.process = subprocess.Popen([sys.executable, "-m", "ticktock.serve", *args, "serve.port=0"],
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                        env={**os.environ, **(env or {})}, preexec_fn=ignore)
        try:
            banner = self.process.stdout.readline()
            found = re.search(r"ws://127\.0\.0\.1:(\d+)/v1/realtime\?duplex=1", banner)
            assert found, banner + self.process.stderr.read()
        except BaseException:
            self.kill()
            raise
        self.port = int(found.group(1))
        self.url = f"ws://127.0.0.1:{self.port}/v1/realtime?duplex=1"

    def stop(self) -> int:
        self.process.send_signal(signal.SIGINT)
        return self.process.wait(timeout=60)

    def kill(self) -> None:
        """On any outcome: the process is gone and waited for."""
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=30)


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
    server = Served("decoder=speclisten_stream", "talker=espeak", "serve.max_sessions=2", "serve.config_timeout_s=2",
                    "serve.token_env=TICKTOCK_TEST_TOKEN", env={"TICKTOCK_TEST_TOKEN": "s3cret"})
    try:
        yield server
    finally:
        if server.process.poll() is None:
            server.process.send_signal(signal.SIGINT)
            try:
                server.process.wait(timeout=30)
            finally:
                server.kill()


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


def test_a_wrong_missing_or_bare_token_is_refused_with_a_reason(served):
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "s3cret"}, {"Authorization": "Basic s3cret"}):
        with connect(served.url, additional_headers=headers) as ws:
            error = json.loads(ws.recv(timeout=10))
            assert error["type"] == "error" and error["error"]["code"] == "invalid_api_key"
            with pytest.raises(ConnectionClosed) as closed:
                ws.recv(timeout=10)
            assert closed.value.rcvd.code == 1008 and "token" in closed.value.rcvd.reason
    assert "s3cret" not in served.process.stderr.peek() if hasattr(served.process.stderr, "peek") else True


def test_the_token_is_taken_only_as_authorization_bearer_in_any_case(served):
    for headers in ({"Authorization": "Bearer s3cret"}, {"Authorization": "bearer s3cret"}):
        with connect(served.url, additional_headers=headers) as ws:
            assert handshake(ws)["session"]["model"] == "embedded"
    with connect(served.url + "&api_key=s3cret") as ws:  # vLLM's server reads no key from the query either
        assert json.loads(ws.recv(timeout=10))["error"]["code"] == "invalid_api_key"


def test_health_is_open_without_a_token_and_says_only_that_the_server_is_up(served):
    with connect(served.url, additional_headers=AUTH) as ws:
        handshake(ws)  # a session is open: /health does not say so
        with urllib.request.urlopen(f"http://127.0.0.1:{served.port}/health", timeout=10) as answer:
            assert json.loads(answer.read()) == {"status": "ok"}


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


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_ctrl_c_or_sigterm_closes_every_open_session_with_session_closed_and_exits_0_even_with_sigint_ignored(signum):
    server = Served("decoder=ar", sigint_ignored=True)  # started as `ticktock serve &` starts it
    try:
        with connect(server.url) as ws:
            handshake(ws)
            ws.send(json.dumps({"type": "input_audio_buffer.append", "audio": SECOND}))
            events_until(ws, "response.listen")
            signalled = time.monotonic()
            server.process.send_signal(signum)
            closed = events_until(ws, "session.closed")[-1]
            assert closed["reason"] == "server_shutdown"
            with pytest.raises(ConnectionClosed) as ended:
                ws.recv(timeout=30)
            assert ended.value.rcvd is not None and ended.value.rcvd.code == 1001
        stopped, exited = shutdown_times(server)
        assert server.process.returncode == 0
        assert exited - signalled <= SHUTDOWN_BOUND_S, f"exited {exited - signalled:.2f} s after the signal"
        assert exited - stopped <= EXIT_BOUND_S, f"exited {exited - stopped:.2f} s after its last line"
        assert "Traceback" not in server.process.stderr.read()
    finally:
        server.kill()


def test_sigterm_as_soon_as_the_address_is_printed_stops_the_server_cleanly_and_promptly():
    """The address line means the server is ready: its signal handlers are in place by then (a SIGTERM in between
    would otherwise kill it unannounced, exit -15)."""
    server = Served("decoder=ar")
    try:
        signalled = time.monotonic()
        server.process.send_signal(signal.SIGTERM)
        stopped, exited = shutdown_times(server)
        assert server.process.returncode == 0, server.process.stderr.read()
        assert exited - signalled <= SHUTDOWN_BOUND_S, f"exited {exited - signalled:.2f} s after the signal"
        assert exited - stopped <= EXIT_BOUND_S, f"exited {exited - stopped:.2f} s after its last line"
    finally:
        server.kill()


def shutdown_times(server: Served) -> tuple[float, float]:
    """When the stopping server's last line (``ticktock serve: stopped; ...``) was read, and when it exited
    (``time.monotonic()``); a hang guard of 30 s each."""
    line = server.process.stdout.readline()
    stopped = time.monotonic()
    assert line.startswith("ticktock serve: stopped; the device ran "), line + server.process.stderr.read()
    server.process.wait(timeout=30)
    return stopped, time.monotonic()


def test_help_prints_the_usage_and_exits_0():
    done = subprocess.run([sys.executable, "-m", "ticktock.serve", "--help"], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: python -m ticktock.serve") and "serve.idle_timeout_s" in done.stdout
    assert "Exception" not in done.stderr


def test_a_port_in_use_is_one_line_exit_2_before_the_model_is_built():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run([sys.executable, "-m", "ticktock.serve", f"serve.port={port}"], capture_output=True,
                              text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == (f"ticktock: error: serve.port: 127.0.0.1:{port} is in use (choose another with "
                                   "serve.port=...)")  # one line, and nothing of the model's loading


def test_every_interface_without_a_token_is_warned_before_anything_else():
    # serve.host=0.0.0.0 with a port held on loopback: the warning, then the port's one line, and nothing is served
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run([sys.executable, "-m", "ticktock.serve", "serve.host=0.0.0.0", f"serve.port={port}"],
                              capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    warning, error = done.stderr.strip().splitlines()
    assert warning.startswith("ticktock serve: warning: serve.host=0.0.0.0 without serve.token_env: the model is open")
    assert "every interface" in warning and error.startswith("ticktock: error: serve.port: 0.0.0.0:")


@pytest.mark.parametrize("args, says", [
    (["serve.max_sessions=0"], "serve.max_sessions: must be a whole number from 1 to 256, got 0"),
    (["serve.token_env=TICKTOCK_NOT_SET_ANYWHERE"], "serve.token_env: the environment variable"),
    (["serve.nope=1"], "serve.nope"),
    (["serve.idle_timeout_s=0"], "serve.idle_timeout_s: must be a number of seconds from 0.1 to 86400, got 0"),
    (["serve.config_timeout_s=soon"], "serve.config_timeout_s: must be a number of seconds"),
    (["serve.ping_interval_s=-1"], "serve.ping_interval_s: must be a number of seconds"),
    (["serve.max_queue_bytes=10"], "serve.max_queue_bytes: must be a whole number from 65536"),
    (["serve.allowed_origins=[evil.example]"], "serve.allowed_origins: 'evil.example' is not an origin"),
    (["serve.allowed_origins=[https://app.example/page]"], "serve.allowed_origins: 'https://app.example/page' is not"),
    (["serve.allowed_origins=https://app.example"], "serve.allowed_origins: must be a list of origins"),
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
        assert server.stop() == 0
    finally:
        server.kill()
