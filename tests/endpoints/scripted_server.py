"""A duplex server that misbehaves on cue, for the endpoint fault tests (a helper module): a real aiohttp WebSocket
server on loopback, in a thread of its own, stopped when the test ends.

It speaks vLLM-Omni's duplex contract as ``ticktock serve`` does, with the server-event builders of
``ticktock.serve.protocol``: ``session.created`` answers the client's ``session.update``; the client's appends (16 kHz
PCM16 base64) are counted, and each completed 1000 ms unit (32000 bytes) is answered at once with a
``response.listen`` naming the unit; the commit ends the session with ``session.closed`` once every unit is decided.

``script`` maps a connection's number (0: the run's probe, 1: its first session, ...) to a *behaviour*, one of
``BEHAVIOURS``; a connection it does not name behaves. ``ScriptedServer.script`` may be changed between runs (the
"server behaving now" of a rerun). ``ScriptedServer.connections`` counts the connections opened.

Example::

    with scripted({2: "close_after_1"}) as server:   # the run's second session: closed after its first unit
        live_run(run_dir, server.url, ...)
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import threading

import numpy as np

from ticktock.serve import protocol

UNIT_BYTES = 32_000  # 1000 ms of 16 kHz PCM16
MODEL = "scripted"

#: What a connection may be told to do (``N`` is a number of units):
#: ``ok``: behave; ``refuse``: answer the ``session.update`` with an ``error`` ``resource_exhausted`` and close;
#: ``close_after_N``: close the connection once N units are decided; ``malformed_after_N``: send a frame that is not
#: JSON after N units; ``unknown``: send an event of an unknown type before every decision (and behave);
#: ``silent``: send ``session.created``, then nothing; ``twice_N``: decide unit N twice; ``ahead_N``: decide unit N+1
#: in place of unit N (out of order); ``bad_audio_N``: after unit N's decision, an audio delta that is not base64.
BEHAVIOURS = ("ok", "refuse", "close_after_N", "malformed_after_N", "unknown", "silent", "twice_N", "ahead_N",
              "bad_audio_N")


class ScriptedServer:
    """The server's state: its URL (``.../v1/realtime``), the script, the connections counted."""

    def __init__(self, script: dict[int, str]):
        self.script = dict(script)
        self.connections = 0
        self.url = ""

    def behaviour(self) -> tuple[str, int]:
        """The next connection's behaviour and its number of units (``close_after_2`` -> ``("close_after", 2)``)."""
        name = self.script.get(self.connections, "ok")
        self.connections += 1
        head, _, tail = name.rpartition("_")
        return (head, int(tail)) if tail.isdigit() else (name, 0)

    async def handle(self, request):
        from aiohttp import WSMsgType, web

        ws = web.WebSocketResponse(max_msg_size=64 * 1024 * 1024)
        await ws.prepare(request)
        act = Connection(ws, *self.behaviour())
        async for message in ws:
            if message.type != WSMsgType.TEXT or not await act.on(json.loads(message.data)):
                break
        if not ws.closed:
            await ws.close()
        return ws


class Connection:
    """One connection following its behaviour (see ``BEHAVIOURS``)."""

    def __init__(self, ws, behaviour: str, n: int):
        self.ws, self.behaviour, self.n = ws, behaviour, n
        self.received = 0
        self.decided = 0

    async def send(self, event) -> None:
        await self.ws.send_str(event if isinstance(event, str) else json.dumps(event))

    async def on(self, event: dict) -> bool:
        """React to one client event; False when the connection is to end."""
        kind = event.get("type")
        if kind == "session.update":
            if self.behaviour == "refuse":
                await self.send(protocol.error_event("resource_exhausted", "no capacity for another session"))
                return False
            await self.send(protocol.session_created({"id": "sess_scripted", "model": MODEL}))
        elif kind == "input_audio_buffer.append" and self.behaviour != "silent":
            self.received += len(base64.b64decode(event["audio"]))
            while self.decided < self.received // UNIT_BYTES:
                if not await self.decide():
                    return False
        elif kind == "input_audio_buffer.commit" and self.behaviour != "silent":
            await self.send(protocol.session_closed("sess_scripted", "input_ended"))
            return False
        return True

    async def decide(self) -> bool:
        """Decide the next unit as the behaviour says; False when the connection is to end."""
        unit, n, behaviour = self.decided, self.n, self.behaviour
        if behaviour in ("close_after", "malformed_after") and unit == n:
            if behaviour == "malformed_after":
                await self.send('{"type": "response.listen", "response": ')
                await asyncio.sleep(1.0)
            return False
        if behaviour == "unknown":
            await self.send({"type": "server.novelty", "event_id": protocol.new_event_id(), "note": {"x": [1, 2]}})
        shown = unit + 1 if behaviour == "ahead" and unit == n else unit
        await self.send(protocol.response_listen(protocol.UnitReport(unit=shown, post_audio_ms=5.0)))
        if behaviour == "twice" and unit == n:
            await self.send(protocol.response_listen(protocol.UnitReport(unit=unit, post_audio_ms=5.0)))
        if behaviour == "bad_audio" and unit == n:
            await self.send({**protocol.audio_delta("resp_1", "item_1", np.zeros(160), 16000),
                             "delta": "not base64!"})
        self.decided += 1
        return True


@contextlib.contextmanager
def scripted(script: dict[int, str] | None = None):
    """A ``ScriptedServer`` following ``script`` on a free loopback port, in a thread; yields it (``.url`` set)."""
    from aiohttp import web

    server = ScriptedServer(script or {})
    loop = asyncio.new_event_loop()
    app = web.Application()
    app.router.add_get("/v1/realtime", server.handle)
    runner = web.AppRunner(app, shutdown_timeout=1.0)
    ready = threading.Event()

    async def start() -> None:
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        server.url = f"ws://127.0.0.1:{port}/v1/realtime"
        ready.set()

    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    asyncio.run_coroutine_threadsafe(start(), loop).result(timeout=10)
    ready.wait(10)
    try:
        yield server
    finally:
        asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(timeout=10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        loop.close()
