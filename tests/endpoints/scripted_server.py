"""Conformance servers for the live client (a helper module): real aiohttp WebSocket servers on loopback, in a
thread of their own, that behave as the real servers do, and misbehave on cue.

Two flavours, read from the real servers' code (vLLM-Omni 0.30.0: ``entrypoints/duplex/serving.py`` and
``engine/duplex/session/runner.py``; OpenAI Realtime GA's documented session flow):

- ``vllm_omni`` (vLLM-Omni's duplex runner): the client's first event must be ``session.update`` (none within
  ``config_timeout_s``: an ``error`` ``config_timeout`` and the socket closes); it is answered ``session.created``
  then ``session.updated``, the model as the server runs it. Appends (16 kHz PCM16 base64) are counted and each
  completed 1000 ms unit is decided at once: ``response.listen``, or on every third unit from the second a spoken
  reply (``response.created``, ``response.speak``, a text delta, an audio delta; ``response.done`` follows
  ``reply_s`` later, so a reply can still be in flight after the last unit). ``input_audio_buffer.commit`` is a
  *turn* commit: answered ``input_audio_buffer.committed``, the session stays open. ``session.heartbeat`` is answered
  ``session.heartbeat_ack``. The session ends only on ``session.close`` (``session.closed`` with reason
  ``client_close``, then the socket closes with 1000) or on the socket's close. The server pings every ``ping_s``.
- ``openai`` (an OpenAI Realtime GA server): ``session.created`` on connect, before any client event;
  ``session.update`` answered ``session.updated``; no per-unit events; a commit is answered
  ``input_audio_buffer.committed`` and ``response.create`` makes a reply (``response.created``, a text delta, an
  audio delta, ``response.done``). No ``session.close`` in its vocabulary: the client closes the socket.

``script`` maps a connection's number (0: the run's probe, 1: its first session, ...) to a *behaviour*, one of
``BEHAVIOURS``; a connection it does not name behaves. ``ScriptedServer.script`` may be changed between runs (the
"server behaving now" of a rerun). ``ScriptedServer.connections`` counts the connections opened, ``closed_by`` how
each ended (``session.close``, ``socket``, ``server``), and ``decided[n]`` the units connection n decided.

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
import time

import numpy as np

from ticktock import wire

UNIT_BYTES = 32_000  # 1000 ms of 16 kHz PCM16
MODEL = "scripted"

#: What a connection may be told to do (``N`` is a number of units):
#: ``ok``: behave; ``refuse``: answer the ``session.update`` with an ``error`` ``resource_exhausted`` and close;
#: ``close_after_N``: close the connection once N units are decided; ``malformed_after_N``: send a frame that is not
#: JSON after N units; ``unknown``: send an event of an unknown type before every decision (and behave);
#: ``variants``: before every decision, events the client does not need in a server's own variant (fields of other
#: types than the wire package reads: ``session.updated``, ``input_audio_buffer.committed``, an output item) (and
#: behave);
#: ``silent``: send ``session.created``, then nothing but pings; ``mute_after_N``: decide N units, then decide
#: nothing more while it keeps pinging and sending events of no interest every 50 ms; ``twice_N``: decide unit N
#: twice; ``ahead_N``: decide unit N+1 in place of unit N (out of order); ``bad_audio_N``: after unit N's decision,
#: an audio delta that is not base64; ``no_closed``: answer ``session.close`` by closing the socket without
#: ``session.closed``; ``never_close``: ignore ``session.close`` (the client must close it); ``ping_storm``: ping
#: every 5 ms from the start (and behave); ``stray_listens``: decide as vLLM-Omni does (no unit index), and in the
#: middle of every unit's audio send the two ``response.listen`` of its runner that decide no unit (one with
#: ``buffering: true`` and one with reason ``silence_or_noise``).
#: ``speaks_on``: decide as vLLM-Omni's MiniCPM-o 4.5 deployment speaks a reply over several units: listens (no unit
#: index) but for one reply over units 1-3 with a single ``response.speak`` on unit 1; each unit's speech is an audio
#: delta and its text as a transcript delta, then an audio delta with an empty transcript; ``response.done`` after
#: unit 3's speech. ``speaks_past``: the same, but unit 3's speech comes 0.3 s after unit 2's without its audio, as
#: vLLM-Omni goes on speaking in silence units of its own once no input waits (run it with ``limit.chunks=3``).
#: ``listens_unsent``: a listen on unit 0, a reply spoken over units 1-2 (one ``response.speak``), no event for unit
#: 3 (vLLM-Omni sends no listen while the reply's speech is made), ``response.done`` once unit 3's audio is in (run
#: it with ``limit.chunks=4``).
#: Hostile words (``HOSTILE``: 3 MB of text wrapped in terminal escapes, a bell and newlines) where a server's own
#: words go: ``hostile_refuse``: the refusal of the session; ``hostile_error_N``: an ``error`` after N units;
#: ``hostile_closed_N``: ``session.closed`` with them as its reason after N units; ``hostile_close_N``: a close frame
#: whose reason holds escapes after N units. Floods, after unit N's decision: ``flood_text_N``: 10 text deltas of
#: 1 MB; ``flood_audio_N``: 3 audio deltas of 30 s each (16 kHz).
BEHAVIOURS = ("ok", "refuse", "close_after_N", "malformed_after_N", "unknown", "variants", "silent", "mute_after_N",
              "twice_N",
              "ahead_N", "bad_audio_N", "no_closed", "never_close", "ping_storm", "stray_listens", "hostile_refuse",
              "hostile_error_N", "hostile_closed_N", "hostile_close_N", "flood_text_N", "flood_audio_N", "speaks_on",
              "speaks_past", "listens_unsent")
#: A hostile server's words: a terminal escape that clears the screen, 3 MB, a colour, a newline and a bell.
HOSTILE = "\x1b[2J\x1b[H" + "A" * 3_000_000 + "\x1b[31m\nfake: line\x07"
FLAVOURS = ("vllm_omni", "openai")


class ScriptedServer:
    """The server's state: its URL (``.../v1/realtime``), flavour, script, and what its connections did."""

    def __init__(self, script: dict[int, str], flavour: str = "vllm_omni", ping_s: float = 2.0,
                 reply_s: float = 0.3, config_timeout_s: float = 5.0):
        assert flavour in FLAVOURS, flavour
        self.script = dict(script)
        self.flavour, self.ping_s, self.reply_s, self.config_timeout_s = flavour, ping_s, reply_s, config_timeout_s
        self.connections = 0
        self.closed_by: dict[int, str] = {}
        self.decided: dict[int, int] = {}
        self.url = ""

    def behaviour(self) -> tuple[int, str, int]:
        """The next connection's number, behaviour and number of units (``close_after_2`` -> ``("close_after",
        2)``)."""
        number = self.connections
        name = self.script.get(number, "ok")
        self.connections += 1
        head, _, tail = name.rpartition("_")
        return (number, head, int(tail)) if tail.isdigit() else (number, name, 0)

    async def handle(self, request):
        from aiohttp import WSMsgType, web

        ws = web.WebSocketResponse(max_msg_size=64 * 1024 * 1024, heartbeat=self.ping_s, autoping=True)
        await ws.prepare(request)
        number, behaviour, n = self.behaviour()
        act = Connection(self, ws, number, behaviour, n)
        chores = [asyncio.ensure_future(act.pinging())]
        try:
            if self.flavour == "openai":
                await act.send(wire.SessionCreated(act.session_object()))
            elif not await act.configured():
                return ws
            async for message in ws:
                if message.type != WSMsgType.TEXT or not await act.on(json.loads(message.data)):
                    break
            self.closed_by.setdefault(number, "socket")
        finally:
            for chore in chores + act.chores:
                chore.cancel()
            self.decided[number] = act.decided
            if not ws.closed:
                await ws.close()
        return ws


class Connection:
    """One connection following its flavour and behaviour (see the module docstring and ``BEHAVIOURS``)."""

    def __init__(self, server: ScriptedServer, ws, number: int, behaviour: str, n: int):
        self.server, self.ws, self.number, self.behaviour, self.n = server, ws, number, behaviour, n
        self.received = 0
        self.decided = 0
        self.reply: str | None = None
        self.chores: list[asyncio.Future] = []
        self.first_event: dict | None = None

    def session_object(self) -> dict:
        return {"id": f"sess_scripted_{self.number}", "object": "realtime.session", "model": MODEL}

    async def send(self, event: wire.WireEvent | dict | str) -> None:
        """Send a wire event (its ``to_json()``), a JSON object, or a raw text frame as it is."""
        if isinstance(event, wire.WireEvent):
            event = event.to_json()
        if not self.ws.closed:
            await self.ws.send_str(event if isinstance(event, str) else json.dumps(event))

    async def pinging(self) -> None:
        """A ping storm (``ping_storm``, or ``mute``/``silent`` once they go quiet: pings and events of no
        interest keep coming); other behaviours leave pings to the socket's heartbeat."""
        while True:
            if self.behaviour == "ping_storm":
                await self.ws.ping()
                await asyncio.sleep(0.005)
            elif self.quiet():
                await self.ws.ping()
                await self.send({"type": "rate_limits.updated", "event_id": wire.new_event_id(),
                                 "rate_limits": []})
                await asyncio.sleep(0.05)
            else:
                await asyncio.sleep(0.05)

    def quiet(self) -> bool:
        """Whether the server has stopped deciding units (``silent``, or ``mute_after_N`` past its N units)."""
        return self.behaviour == "silent" or (self.behaviour == "mute_after" and self.decided >= self.n)

    async def configured(self) -> bool:
        """vLLM-Omni's handshake: the first event must be ``session.update`` within ``config_timeout_s``; False when
        the connection ends here."""
        from aiohttp import WSMsgType

        try:
            message = await self.ws.receive(timeout=self.server.config_timeout_s)
        except asyncio.TimeoutError:
            await self.send(wire.ErrorEvent("config_timeout", "Timeout waiting for session.update"))
            self.server.closed_by[self.number] = "server"
            return False
        if message.type != WSMsgType.TEXT:
            return False
        event = json.loads(message.data)
        if event.get("type") != "session.update":
            await self.send(wire.ErrorEvent("invalid_request", "the first event must be session.update"))
            return False
        if self.behaviour == "hostile_refuse":
            await self.send(wire.ErrorEvent("\x1b[31mno\x07", HOSTILE))
            self.server.closed_by[self.number] = "server"
            return False
        if self.behaviour == "refuse":
            await self.send(wire.ErrorEvent("resource_exhausted", "no capacity for another session"))
            self.server.closed_by[self.number] = "server"
            return False
        await self.send(wire.SessionCreated(self.session_object()))
        await self.send(wire.SessionUpdated(self.session_object()))
        return True

    async def on(self, event: dict) -> bool:
        """React to one client event; False when the connection is to end."""
        kind = event.get("type")
        if kind == "session.update":
            await self.send(wire.SessionUpdated(self.session_object()))
        elif kind == "input_audio_buffer.append":
            self.received += len(base64.b64decode(event["audio"]))
            if self.behaviour == "stray_listens" and self.received % UNIT_BYTES == UNIT_BYTES // 2:
                await self.send(wire.ResponseListen(reason="buffering", buffering=True))
                await self.send(wire.ResponseListen(reason="silence_or_noise"))
            if self.server.flavour == "vllm_omni":
                while not self.quiet() and self.decided < self.received // UNIT_BYTES:
                    if not await self.decide():
                        self.server.closed_by[self.number] = "server"
                        return False
        elif kind == "input_audio_buffer.commit":
            await self.send(wire.InputAudioBufferCommitted(f"item_{self.number}_{self.received}"))
        elif kind == "response.create" and self.server.flavour == "openai":
            await self.open_reply()
            await self.end_reply_later()
        elif kind == "session.heartbeat":
            await self.send(wire.HeartbeatAck(f"sess_scripted_{self.number}"))
        elif kind == "session.close":
            return await self.on_close()
        return True

    async def on_close(self) -> bool:
        """``session.close``: ``session.closed`` then the socket's close; as the behaviour says otherwise."""
        if self.behaviour == "never_close":
            return True
        self.server.closed_by[self.number] = "session.close"
        if self.behaviour != "no_closed":
            await self.send(wire.SessionClosed(f"sess_scripted_{self.number}", "client_close"))
        return False

    async def open_reply(self) -> None:
        self.reply = f"resp_{self.number}_{self.decided}"
        await self.send(wire.ResponseCreated(self.reply))
        await self.send(wire.TextDelta(self.reply, "item_1", "Hi. "))
        speech = np.zeros(1600, dtype=np.float32)
        await self.send(wire.AudioDelta.of_samples(self.reply, "item_1", speech, 16000))

    async def end_reply_later(self) -> None:
        reply = self.reply

        async def done() -> None:
            await asyncio.sleep(self.server.reply_s)
            if self.reply == reply:
                self.reply = None
                await self.send(wire.ResponseDone(reply))

        self.chores.append(asyncio.ensure_future(done()))

    async def decide(self) -> bool:
        """Decide the next unit as the behaviour says; False when the connection is to end."""
        unit, n, behaviour = self.decided, self.n, self.behaviour
        if behaviour in ("close_after", "malformed_after") and unit == n:
            if behaviour == "malformed_after":
                await self.send('{"type": "response.listen", "response": ')
                await asyncio.sleep(1.0)
            return False
        if behaviour.startswith("hostile_") and unit == n:
            return await self.hostile()
        if behaviour == "unknown":
            await self.send({"type": "server.novelty", "event_id": wire.new_event_id(), "note": {"x": [1, 2]}})
        if behaviour == "variants":
            for event in ({"type": "session.updated", "session": "updated"},
                          {"type": "input_audio_buffer.committed", "item_id": unit},
                          {"type": "response.output_item.added", "output_index": "first", "item": None}):
                await self.send(event)
        if behaviour == "listens_unsent":
            await self.listen_unsent(unit)
            self.decided += 1
            return True
        if behaviour in ("speaks_on", "speaks_past"):
            await self.speak_on(unit)
            if behaviour == "speaks_past" and unit == 2:
                await asyncio.sleep(0.3)
                await self.speak_on(3)
            self.decided += 1
            return True
        shown = unit + 1 if behaviour == "ahead" and unit == n else unit
        report = None if behaviour == "stray_listens" else wire.UnitReport(unit=shown, post_audio_ms=5.0)
        if unit % 3 == 1:  # a spoken reply, whose response.done comes reply_s later
            await self.open_reply()
            await self.send(wire.ResponseSpeak(self.reply, "item_1", report))
            await self.end_reply_later()
        else:
            await self.send(wire.ResponseListen(report))
        if behaviour == "twice" and unit == n:
            await self.send(wire.ResponseListen(wire.UnitReport(unit=unit, post_audio_ms=5.0)))
        if behaviour == "flood_text" and unit == n:
            for _ in range(10):
                await self.send(wire.TextDelta("resp_flood", "item_1", "x" * 1_000_000))
        if behaviour == "flood_audio" and unit == n:
            for _ in range(3):
                await self.send(wire.AudioDelta.of_samples("resp_flood", "item_1", np.zeros(30 * 16_000), 16_000))
        if behaviour == "bad_audio" and unit == n:
            await self.send({**wire.AudioDelta.of_samples("resp_1", "item_1", np.zeros(160), 16000).to_json(),
                             "delta": "not base64!"})
        self.decided += 1
        return True


    async def speak_on(self, unit: int) -> None:
        """``speaks_on``: units 1-3 one reply, one ``response.speak``; each unit's speech without a decision."""
        if not 1 <= unit <= 3:
            await self.send(wire.ResponseListen(None))
            return
        reply, speech = "resp_on", np.zeros(1600, dtype=np.float32)
        if unit == 1:
            await self.send(wire.ResponseCreated(reply))
            await self.send(wire.ResponseSpeak(reply, "item_on", None))
        for text in (["Hello", " there,", " friend."][unit - 1], ""):
            await self.send(wire.AudioDelta.of_samples(reply, "item_on", speech, 16000))
            await self.send(wire.TranscriptDelta(reply, "item_on", text))
        if unit == 3:
            await self.send(wire.ResponseDone(reply))

    async def listen_unsent(self, unit: int) -> None:
        """``listens_unsent``: unit 0 listens; units 1-2 one reply; unit 3 listens unsent and the reply ends."""
        reply, speech = "resp_unsent", np.zeros(1600, dtype=np.float32)
        if unit == 0:
            await self.send(wire.ResponseListen(None))
        elif unit in (1, 2):
            if unit == 1:
                await self.send(wire.ResponseCreated(reply))
                await self.send(wire.ResponseSpeak(reply, "item_unsent", None))
            await self.send(wire.AudioDelta.of_samples(reply, "item_unsent", speech, 16000))
            await self.send(wire.TranscriptDelta(reply, "item_unsent", ["Hello", " there."][unit - 1]))
        elif unit == 3:
            await self.send(wire.ResponseDone(reply))

    async def hostile(self) -> bool:
        """A hostile server's words where its own words go (``hostile_error``, ``hostile_closed``, ``hostile_close``);
        False: the connection ends."""
        if self.behaviour == "hostile_error":
            await self.send(wire.ErrorEvent("\x1b[31mboom\x07", HOSTILE))
        elif self.behaviour == "hostile_closed":
            await self.send(wire.SessionClosed(f"sess_scripted_{self.number}", None).to_json() | {"reason": HOSTILE})
        else:
            await self.ws.close(code=4000, message="\x1b[2J\x1b[31mbye\nfake: line\x07".encode())
            return False
        await asyncio.sleep(1.0)
        return False


@contextlib.contextmanager
def scripted(script: dict[int, str] | None = None, flavour: str = "vllm_omni", ping_s: float = 2.0,
             reply_s: float = 0.3, config_timeout_s: float = 5.0):
    """A ``ScriptedServer`` of ``flavour`` following ``script`` on a free loopback port, in a thread; yields it
    (``.url`` set). It stops when the block ends, whatever happened in it."""
    from aiohttp import web

    server = ScriptedServer(script or {}, flavour, ping_s, reply_s, config_timeout_s)
    loop = asyncio.new_event_loop()
    app = web.Application()
    app.router.add_get("/v1/realtime", server.handle)
    runner = web.AppRunner(app, shutdown_timeout=1.0)

    async def start() -> None:
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        server.url = f"ws://127.0.0.1:{runner.addresses[0][1]}/v1/realtime"

    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        asyncio.run_coroutine_threadsafe(start(), loop).result(timeout=10)
        yield server
    finally:
        began = time.monotonic()
        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(timeout=10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=max(0.1, 10 - (time.monotonic() - began)))
        if not thread.is_alive():
            loop.close()
