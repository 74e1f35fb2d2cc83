"""A served session's lifecycle, as vLLM-Omni's duplex server holds it, and the serving surface under hostile input,
on one in-process ``ticktock serve`` (embedded model, AR) with short timeouts:

- the duplex handshake (``session.update`` answered ``session.created`` then ``session.updated``, whose ``model`` is
  the model served, whatever the client asked for); no first message within ``serve.config_timeout_s`` is an
  ``error`` (``config_timeout``) and a close; turn mode says ``session.created`` on connect;
- ``input_audio_buffer.commit`` is a turn commit (``input_audio_buffer.committed``, the partial unit closed with
  silence, audio taken after it); ``session.close`` is graceful (``session.closed`` with the client's reason, the
  socket closed); a client silent past ``serve.idle_timeout_s`` gets ``session.expired``; the server pings every
  ``serve.ping_interval_s`` and closes a client that does not answer;
- a mid-stream change of the input format is refused (``invalid_request``) and changes nothing;
- a client that never reads while it floods the server with bad events carrying long ids is closed (1008, with a
  reason) once ``serve.max_queue_bytes`` of events wait for it, its errors echo only a short prefix of its ids, and
  another client completes its session meanwhile;
- ``/health`` says only ``{"status": "ok"}``;
- a browser page of another site cannot open a session (cross-site WebSocket hijacking): a handshake whose ``Origin``
  is neither the server's own page, nor one of ``serve.allowed_origins``, is refused with 403 before the upgrade;
  clients that send no ``Origin`` (the SDKs, programs) are served."""

from __future__ import annotations

import asyncio
import base64
import http.client
import json
import socket
import threading
import urllib.request

import aiohttp
import numpy as np
import pytest

from ticktock.wire import ECHO_CHARS, AudioDelta

from served import serving

SECOND = base64.b64encode(np.zeros(16_000, dtype="<i2").tobytes()).decode()  # 1 s of PCM16 silence at 16 kHz
HALF = base64.b64encode(np.zeros(8_000, dtype="<i2").tobytes()).decode()  # half a unit
DECISIONS = {"response.listen", "response.speak"}
CONFIG_TIMEOUT_S = 1
IDLE_TIMEOUT_S = 3
QUEUE_BYTES = 64 * 1024
ALLOWED = "https://app.example:8443"  # serve.allowed_origins of the module's server


@pytest.fixture(scope="module")
def served():
    with serving("decoder=ar", f"serve.config_timeout_s={CONFIG_TIMEOUT_S}", f"serve.idle_timeout_s={IDLE_TIMEOUT_S}",
                 f"serve.max_queue_bytes={QUEUE_BYTES}", "serve.max_sessions=3",
                 f"serve.allowed_origins=[{ALLOWED}]") as (server, url):
        yield server, int(url.rsplit(":", 1)[1])


@pytest.fixture
def port(served):
    return served[1]


def append(audio: str = SECOND, **extra) -> dict:
    return {"type": "input_audio_buffer.append", "audio": audio, **extra}


class Client:
    """A plain WebSocket client (aiohttp) that keeps every event, in order, and waits for some (bounded); while it
    waits it sends ``session.heartbeat`` so that a slow machine does not make it idle."""

    def __init__(self, ws):
        self.ws, self.events, self.closed_with = ws, [], None

    async def send(self, *events: dict) -> None:
        for event in events:
            await self.ws.send_json(event)

    async def until(self, done, timeout_s: float = 30.0, keepalive: bool = True) -> list[dict]:
        """Read until ``done(events)`` holds or the socket closes; every event so far. ``keepalive``: heartbeats
        while it waits."""
        async def read() -> None:
            while not done(self.events):
                try:
                    message = await self.ws.receive(timeout=0.5 if keepalive else None)
                except asyncio.TimeoutError:
                    await self.ws.send_json({"type": "session.heartbeat"})
                    continue
                if message.type != aiohttp.WSMsgType.TEXT:
                    self.closed_with = (self.ws.close_code, message.extra)
                    return
                self.events.append(json.loads(message.data))

        await asyncio.wait_for(read(), timeout_s)
        return self.events

    def kinds(self) -> list[str]:
        return [event["type"] for event in self.events]

    def decided(self) -> list[int]:
        return [event["ticktock"]["unit"] for event in self.events if event["type"] in DECISIONS]


def has(kind: str):
    return lambda events: any(event["type"] == kind for event in events)


def units(count: int):
    return lambda events: sum(event["type"] in DECISIONS for event in events) >= count


async def session(port: int, body, query: str = "?duplex=1", **connect):
    """Run ``body(client)`` on a fresh connection; its result."""
    async with aiohttp.ClientSession() as http:
        async with http.ws_connect(f"http://127.0.0.1:{port}/v1/realtime{query}", **connect) as ws:
            return await body(Client(ws))


def run(port: int, body, query: str = "?duplex=1", **connect):
    return asyncio.run(asyncio.wait_for(session(port, body, query, **connect), 60))


# ------------------------------------------------------------------------------------------------ handshake


def test_the_handshake_is_created_then_updated_and_names_the_model_served_not_the_one_asked(port):
    async def body(client: Client):
        await client.send({"type": "session.update", "session": {"model": "gpt-realtime", "sample_rate_hz": 16000}})
        await client.until(has("session.updated"))
        await client.send({"type": "session.close"})
        return await client.until(has("session.closed"))

    events = run(port, body)
    assert [e["type"] for e in events] == ["session.created", "session.updated", "session.closed"]
    assert events[0]["session"]["model"] == events[1]["session"]["model"] == "embedded"


def test_no_session_update_within_the_config_timeout_is_an_error_and_a_close(port):
    async def body(client: Client):
        return await client.until(lambda events: False, CONFIG_TIMEOUT_S + 20, keepalive=False), client.closed_with

    events, closed = run(port, body)
    assert [e["type"] for e in events] == ["error"]
    assert events[0]["error"]["code"] == "config_timeout" and "serve.config_timeout_s" in events[0]["error"]["message"]
    assert closed is not None  # the server closed the connection


def test_turn_mode_says_session_created_on_connect_before_any_client_event(port):
    async def body(client: Client):
        await client.until(has("session.created"))
        await client.send({"type": "session.close"})
        return await client.until(has("session.closed"))

    events = run(port, body, query="")
    assert events[0]["type"] == "session.created" and events[0]["session"]["ticktock"]["mode"] == "turns"


# ------------------------------------------------------------------------------------- commit, close, expiry


def test_commit_is_a_turn_commit_and_audio_goes_on_until_session_close(port):
    async def body(client: Client):
        await client.send(append(), append(HALF), {"type": "input_audio_buffer.commit", "event_id": "c1"})
        await client.until(units(2))  # the commit closed unit 1 with silence: it is decided now
        await client.send(append(), {"type": "input_audio_buffer.commit"})  # the input goes on after a commit
        await client.until(units(3))
        await client.send({"type": "session.close"})
        return await client.until(has("session.closed")), client

    events, client = run(port, body)  # (the first event opened the session with defaults: session.created)
    kinds = client.kinds()
    assert kinds[0] == "session.created" and "error" not in kinds
    assert kinds.count("input_audio_buffer.committed") == 2
    first, second = [e for e in events if e["type"] == "input_audio_buffer.committed"]
    assert first["previous_item_id"] is None and second["previous_item_id"] == first["item_id"]
    assert client.decided() == [0, 1, 2]
    assert events[-1]["type"] == "session.closed" and events[-1]["reason"] == "client_close"
    assert client.closed_with is None or client.closed_with[0] == 1000


def test_session_close_is_graceful_nothing_follows_session_closed_and_the_socket_closes(port):
    async def body(client: Client):
        await client.send({"type": "session.update", "session": {}}, append(), append(), append())
        await client.until(units(1))
        await client.send({"type": "session.close", "reason": "user_hung_up"})
        await client.until(lambda events: False, timeout_s=20)  # to the socket's close
        return client

    client = run(port, body)
    assert client.kinds()[-1] == "session.closed" and client.events[-1]["reason"] == "user_hung_up"
    assert client.closed_with is not None and client.closed_with[0] == 1000


def test_a_session_idle_past_the_idle_timeout_expires(port):
    async def body(client: Client):
        await client.send({"type": "session.update", "session": {}})
        await client.until(has("session.updated"))
        message = await client.ws.receive(timeout=IDLE_TIMEOUT_S + 20)  # the client says nothing more
        return json.loads(message.data), await client.ws.receive(timeout=20)

    expired, after = run(port, body)
    assert expired["type"] == "session.expired" and expired["reason"] == "idle_ttl_expired"
    assert after.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.CLOSING)


def test_a_mid_stream_input_format_change_is_refused_and_changes_nothing(port):
    async def body(client: Client):
        await client.send({"type": "session.update", "session": {"sample_rate_hz": 16000}}, append())
        await client.until(units(1))
        await client.send({"type": "session.update", "event_id": "u2", "session": {"sample_rate_hz": 8000}})
        await client.until(has("error"))
        await client.send(append(), {"type": "input_audio_buffer.commit"})  # 16,000 samples: one unit at 16 kHz
        await client.until(has("input_audio_buffer.committed"))
        await client.until(units(2))
        await client.send({"type": "session.heartbeat"})
        await client.until(has("session.heartbeat_ack"))
        await client.send({"type": "session.close"})
        await client.until(has("session.closed"))
        return client

    client = run(port, body)
    (error,) = [e["error"] for e in client.events if e["type"] == "error"]
    assert (error["code"], error["event_id"]) == ("invalid_request", "u2")
    assert "16000 Hz" in error["message"] and "8000 Hz" in error["message"] and "nothing was changed" in error["message"]
    assert client.decided() == [0, 1]  # at 8 kHz the second second would have been two units


def test_health_says_only_that_the_server_is_up(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=10) as answer:
        assert json.loads(answer.read()) == {"status": "ok"}


# ------------------------------------------------------------------------------------ a page of another site


def upgrade(port: int, origin: str) -> tuple[int, str]:
    """A WebSocket handshake carrying ``Origin: origin``, as a browser's page sends it: the status and the body (of a
    refusal; a handshake that is answered 101 is closed at once)."""
    headers = {"Origin": origin, "Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Version": "13",
               "Sec-WebSocket-Key": base64.b64encode(b"0123456789abcdef").decode()}
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("GET", "/v1/realtime?duplex=1", headers=headers)
        answer = connection.getresponse()
        return answer.status, answer.read().decode() if answer.status != 101 else ""
    finally:
        connection.close()


@pytest.mark.parametrize("origin", ["http://evil.example", "http://evil.example:8099", "null",
                                    "https://app.example:8444", "http://127.0.0.1.evil.example"])
def test_a_page_of_another_site_is_refused_403_before_the_upgrade(served, origin):
    server, port = served
    status, body = upgrade(port, origin)
    assert status == 403, (status, body)
    assert body.startswith("Origin ") and "serve.allowed_origins" in body and "\n" not in body.strip()
    assert not server.connections  # no session was opened, no slot taken


@pytest.mark.parametrize("origin", ["own", ALLOWED, ALLOWED.upper() + "/"])
def test_the_server_s_own_page_and_the_allowed_origins_open_a_session(port, origin):
    origin = f"http://127.0.0.1:{port}" if origin == "own" else origin

    async def body(client: Client):
        await client.send({"type": "session.update", "session": {}}, append())
        await client.until(units(1))
        await client.send({"type": "session.close"})
        return await client.until(has("session.closed"))

    events = run(port, body, origin=origin)
    assert [e["type"] for e in events if e["type"] in DECISIONS] and events[-1]["reason"] == "client_close"


# ----------------------------------------------------------------------------------- a client that does not read


def flood(port: int, outcome: dict) -> None:
    """A client that never reads: a small receive buffer, its WebSocket library's queue of 2 messages, no
    compression; it opens a session, then sends bad events whose ids are 2,000 characters long until the server
    stops taking them. Then it reads what was left for it, to the close."""
    from websockets.exceptions import ConnectionClosed
    from websockets.sync.client import connect

    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", port))
    bad = json.dumps({"type": "dance", "event_id": "x" * 2000})
    with connect(f"ws://127.0.0.1:{port}/v1/realtime?duplex=1", sock=sock, max_queue=2, compression=None,
                 open_timeout=10) as ws:
        try:
            ws.send(json.dumps({"type": "session.update", "session": {}}))
            for _ in range(20_000):
                ws.send(bad)
        except (ConnectionClosed, OSError):
            pass
        outcome["ready"].wait(60)  # the other client's session is done: now read
        outcome["echoed"], outcome["close"] = [], None
        try:
            while True:
                event = json.loads(ws.recv(timeout=30))
                if event["type"] == "error":
                    outcome["echoed"].append(event["error"].get("event_id", ""))
        except ConnectionClosed as closed:
            outcome["close"] = (closed.rcvd.code, closed.rcvd.reason) if closed.rcvd else ("none", "")


def test_a_client_that_does_not_read_is_closed_and_the_others_are_served_throughout(served):
    server, port = served
    outcome = {"ready": threading.Event()}
    flooding = threading.Thread(target=flood, args=(port, outcome), daemon=True)
    flooding.start()
    try:
        async def body(client: Client):
            await client.send({"type": "session.update", "session": {}}, append(), append(),
                              {"type": "input_audio_buffer.commit"})
            await client.until(units(2))
            await client.send({"type": "session.close"})
            return await client.until(has("session.closed")), client

        events, client = run(port, body)
    finally:
        outcome["ready"].set()
        flooding.join(90)
    assert client.decided() == [0, 1] and events[-1]["reason"] == "client_close"
    assert "error" not in client.kinds()
    assert not flooding.is_alive()
    code, reason = outcome["close"]
    assert code == 1008 and "not reading" in reason and "serve.max_queue_bytes" in reason
    assert outcome["echoed"] and all(len(echo) <= ECHO_CHARS + 3 for echo in outcome["echoed"])


def test_the_events_waiting_for_a_client_are_bounded_in_bytes_not_in_count():
    from ticktock.serve.server import Connection

    async def fill() -> tuple[Connection, int]:
        connection = Connection(ws=None, session_id="s", model_name="m", loop=asyncio.get_running_loop(),
                                max_queue_bytes=QUEUE_BYTES)
        peak = 0
        for _ in range(100):  # nothing sends: the client reads nothing; 100 events of 10 kB
            connection.send_soon(AudioDelta("resp_1", "item_1", "A" * 10_000))
            peak = max(peak, connection.queued_bytes)
        return connection, peak

    connection, peak = asyncio.run(fill())
    assert peak <= QUEUE_BYTES
    assert connection.closing and "serve.max_queue_bytes" in connection.closing and connection.close_code == 1008
    assert connection.outgoing.qsize() == 1 and connection.outgoing.get_nowait() is None  # only the end marker


# ------------------------------------------------------------------------------------------------------ pings


@pytest.fixture
def pinging():
    with serving("decoder=ar", "serve.ping_interval_s=0.2") as (server, url):
        yield int(url.rsplit(":", 1)[1])


def test_the_server_pings_and_closes_a_client_that_does_not_answer(pinging):
    async def body(client: Client):
        await client.send({"type": "session.update", "session": {}})
        pings = 0
        while True:
            message = await client.ws.receive(timeout=30)
            if message.type == aiohttp.WSMsgType.PING:
                pings += 1  # (not answered: autoping is off)
            elif message.type != aiohttp.WSMsgType.TEXT:
                return pings, message.type

    pings, ending = run(pinging, body, autoping=False)
    assert pings >= 1
    assert ending in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.CLOSING,
                      aiohttp.WSMsgType.ERROR)
