"""One session's fault is that session's alone on the served device (issue 62, items 1-3), on real served sessions
(embedded model, AR, streamed in real time on loopback):

- a decoder plug-in whose host code blocks (``time.sleep(2)`` in its ``idle``) holds the device thread past
  ``serve.host_code_bound_s``: its session fails alone, with one error naming it and the bound, and the other session
  keeps its deadlines (before: every unit of the other was delayed by the same 2 s, and nothing was said);
- a ``BaseException`` from one session's work (``SystemExit``, ``KeyboardInterrupt``, ``GreenletExit``), in its
  decoder's host code or inside a device step, fails that session only (``SessionAborted``), the others keep their
  tokens; a device that has stopped on a fault of its own makes ``/health`` answer 503, and ``python -m ticktock.serve``
  exit 1 with one line;
- ``GreenletExit`` in a decoder's host code ends its session with one ``error`` event and ``session.closed``, and frees
  its lane (before: the session hung, with no event, until the client gave up).

Every wait is bounded (a broken fix fails these tests, it does not hang them)."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import re
import subprocess
import sys
import time

import numpy as np
import pytest
from greenlet import GreenletExit

from ticktock.decoders.ar import ARDecoder
from ticktock.replay.device import SessionAborted
from ticktock.world.injection import ToolCallInjector
from ticktock.shipped import resource_path
from ticktock.replay.watchdog import ChunkTimeout
from ticktock.serve.server import failure_line
from ticktock.sessions.manifest import load_manifest
from ticktock.world.mock_tools import MockToolExecutor

from helpers import outputs
from helpers import replay as replay_alone
import served
from served import serving

UNITS = 6
ABORTS = [SystemExit, KeyboardInterrupt, GreenletExit]


@pytest.fixture(scope="module")
def sessions():
    return load_manifest(resource_path("manifests/ticktock-mini/manifest.jsonl"), tasks=["fdb_v3"])[:2]


def served_model(*overrides: str):
    """The model ``python -m ticktock.serve decoder=ar <overrides>`` serves."""
    from ticktock.serve.__main__ import compose_serve
    from ticktock.serve.session import ServedModel

    return ServedModel(compose_serve(["decoder=ar", *overrides, "progress=false"]))


def serve_together(model, sessions, units: int = UNITS) -> list:
    """Serve ``sessions`` at once (``served.serve_together``); each one's (units, every error its ``on_end`` was
    called with)."""
    return served.serve_together(model, sessions, units)


def alone(model, session, units: int = UNITS) -> list:
    return outputs(replay_alone(model.adapter, session, ARDecoder(), max_chunks=units,
                                injector=ToolCallInjector(MockToolExecutor())))


class Faulty(ARDecoder):
    """AR, except in the session ``faulty_id`` (None: every session): there it sleeps ``sleep_s`` in every idle window,
    or raises ``raises`` in its second unit's ``decode_chunk`` (host code)."""

    def __init__(self, faulty_id: str | None, sleep_s: float = 0.0, raises: type[BaseException] | None = None):
        super().__init__()
        self.faulty_id, self.sleep_s, self.raises = faulty_id, sleep_s, raises
        self.faulty, self.units = False, 0

    def start_session(self, session) -> None:
        super().start_session(session)
        self.faulty = self.faulty_id in (None, session.session_id)

    def idle(self, window) -> None:
        if self.faulty and self.sleep_s:
            time.sleep(self.sleep_s)
        super().idle(window)

    def decode_chunk(self, step) -> None:
        self.units += 1
        if self.faulty and self.raises is not None and self.units == 2:
            raise self.raises()
        super().decode_chunk(step)


# ------------------------------------------------------------------------------ item 1: host code past the bound


def test_a_decoder_that_blocks_the_device_thread_fails_alone_and_the_other_keeps_its_deadlines(sessions, monkeypatch):
    model = served_model("serve.host_code_bound_s=0.5")
    sleepy, other = sessions
    monkeypatch.setattr(model, "decoder", lambda: Faulty(sleepy.session_id, sleep_s=2.0))
    try:
        (_, sleepy_ended), (other_units, other_ended) = serve_together(model, sessions)
    finally:
        model.close()
    [error] = sleepy_ended  # one end, one error
    assert isinstance(error, ChunkTimeout)
    assert re.fullmatch(rf"session {sleepy.session_id}: chunk \d+ \(idle window\): its host code held the served "
                        r"device for more than 0.5 s \(serve.host_code_bound_s=0.5\); the session fails, the others go "
                        "on", str(error)), str(error)
    assert failure_line(error) == f"ChunkTimeout: {error}"  # the client's one engine_error says all of it
    assert other_ended == [None] and len(other_units) == UNITS
    # The 2 s sleep that ran past the bound delays the other session once (the units that arrived during it), not at
    # every unit: before the bound, it missed 4 units of 6 or more.
    assert sum(unit.deadline_miss for unit in other_units) <= 2, [u.served_ms for u in other_units]
    assert [u.output_tokens for u in other_units] == alone(model, other)


def test_the_bound_is_an_option_checked_before_the_model_is_built():
    from ticktock.serve.server import ServeOptionError, ServeOptions

    assert ServeOptions.parse({}).host_code_bound_s == 1.0
    assert ServeOptions.parse({"host_code_bound_s": None}).host_code_bound_s is None
    with pytest.raises(ServeOptionError, match=r"^serve.host_code_bound_s: must be a number of seconds from 0.05 to "
                                               r"3600, got 0$"):
        ServeOptions.parse({"host_code_bound_s": 0})


# ------------------------------------------------------------------------------ item 2: BaseException of one session


def check_one_aborted(results, aborted, model, sessions, raised: type[BaseException]) -> None:
    """The session ``aborted`` ended once with ``SessionAborted`` naming it and ``raised``; the others, once, with
    no error and the tokens of each alone."""
    for (units, ended), session in zip(results, sessions):
        if session.session_id == aborted:
            [error] = ended
            assert isinstance(error, SessionAborted), repr(error)
            assert str(error).startswith(f"session {aborted}: its work raised {raised.__name__}"), str(error)
        else:
            assert ended == [None]
            assert [u.output_tokens for u in units] == alone(model, session, units=len(units))
            assert len(units) == UNITS


@pytest.mark.parametrize("raised", ABORTS, ids=lambda kind: kind.__name__)
def test_a_base_exception_in_one_sessions_decoder_code_fails_that_session_only(sessions, monkeypatch, raised):
    model = served_model()
    monkeypatch.setattr(model, "decoder", lambda: Faulty(sessions[0].session_id, raises=raised))
    try:
        results = serve_together(model, sessions)
    finally:
        model.close()
    check_one_aborted(results, sessions[0].session_id, model, sessions, raised)
    assert model.device.healthy and model.device.shared.lanes == []


@pytest.mark.parametrize("raised", ABORTS, ids=lambda kind: kind.__name__)
def test_a_base_exception_inside_a_device_step_fails_that_session_only(sessions, monkeypatch, raised):
    model = served_model()
    adapter_type = type(model.adapter)
    replica, forward, made, calls = adapter_type.replica, adapter_type.forward, [], []
    owner = {}

    def replicas(self):
        made.append(replica(self))
        return made[-1]

    def forward_of_one(self, *args, **kwargs):  # the first session's replica raises from its 5th forward on
        if made and self is made[0]:
            calls.append(1)
            if len(calls) >= 5:
                raise raised()
        return forward(self, *args, **kwargs)

    engine = type(model).engine

    def engine_of(self, lane, tools):  # which session replays on the first replica
        built = engine(self, lane, tools)
        owner.setdefault("first", lane)
        return built

    monkeypatch.setattr(adapter_type, "replica", replicas)
    monkeypatch.setattr(adapter_type, "forward", forward_of_one)
    monkeypatch.setattr(type(model), "engine", engine_of)
    try:
        results = serve_together(model, sessions)
    finally:
        model.close()
    assert len(calls) >= 5  # it raised inside a device step
    aborted = owner["first"].session.session_id
    check_one_aborted(results, aborted, model, sessions, raised)
    assert model.device.healthy


def test_a_stopped_device_makes_health_fail():
    from ticktock.serve.server import Server, ServeOptions

    model = served_model()
    server = Server(model, ServeOptions())
    try:
        assert asyncio.run(server.health(None)).status == 200
        model.device.realtime.post(("not a lane", None))  # a fault of the scheduler itself (no session's work)
        deadline = time.monotonic() + 10
        while model.device.error is None and time.monotonic() < deadline:
            time.sleep(0.01)
        answer = asyncio.run(server.health(None))
    finally:
        model.close()
    assert answer.status == 503
    assert json.loads(answer.text) == {"status": "error", "error": "the served device has stopped"}


STOPPED = """
import sys
from ticktock.errors import user_errors
from ticktock.replay.device import SharedDevice
from ticktock.serve.__main__ import main

def fault(self):
    raise RuntimeError("a scheduler fault")

SharedDevice._step = fault  # the scheduler itself fails once it runs
with user_errors():
    sys.exit(main(sys.argv[1:]))
"""


def test_the_server_exits_non_zero_with_one_line_when_its_device_stops():
    done = subprocess.run([sys.executable, "-c", STOPPED, "decoder=ar", "serve.port=0", "threads=1", "progress=false"],
                          capture_output=True, text=True, timeout=90, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert done.returncode == 1, done.stderr[-2000:]
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    assert done.stderr.strip().splitlines()[-1] == ("ticktock: error: the served device has stopped (RuntimeError: a "
                                                    "scheduler fault): every session ended with it; restart the server")


# ------------------------------------------------------------------------------ item 3: GreenletExit in host code


def test_greenlet_exit_in_decoder_code_ends_its_session_with_an_error_event_and_frees_its_lane(monkeypatch):
    from websockets.sync.client import connect

    second = base64.b64encode(np.zeros(16_000, dtype="<i2").tobytes()).decode()
    with serving("decoder=ar") as (server, url):
        monkeypatch.setattr(server.model, "decoder", lambda: Faulty(None, raises=GreenletExit))
        seen = []
        with connect(f"{url}/v1/realtime?duplex=1") as ws:
            ws.send(json.dumps({"type": "session.update", "session": {}}))
            for _ in range(3):
                ws.send(json.dumps({"type": "input_audio_buffer.append", "audio": second}))
            while not seen or seen[-1]["type"] != "session.closed":
                seen.append(json.loads(ws.recv(timeout=15)))
        lanes = list(server.model.device.shared.lanes)
    errors = [event for event in seen if event["type"] == "error"]
    assert len(errors) == 1 and errors[0]["error"]["code"] == "engine_error", errors
    session_id = seen[0]["session"]["id"]
    assert errors[0]["error"]["message"].startswith(f"the session failed: SessionAborted: session {session_id}: its "
                                                    "work raised GreenletExit"), errors[0]
    assert seen[-1]["reason"] == "engine_error"
    assert lanes == []
