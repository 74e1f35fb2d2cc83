"""``ticktock serve``'s turn-based mode: ``WS /v1/realtime`` without ``duplex=1`` serves the same session (the duplex
model listens and speaks unit by unit, and decides itself when to answer) in OpenAI Realtime GA's turn-based
vocabulary only, as vLLM-Omni serves it there. The OpenAI SDK (no ``extra_query``) streams a mini-corpus session in
real time, commits at the user's turn end and gets ``input_audio_buffer.committed``, the spoken reply as one
response, no per-unit decision events, and ``session.closed`` after ``session.close``; the served text equals the
duplex mode's for the same audio; both modes label the session with the served model and decoder; a client that hangs
up still has its partial last unit decided."""

from __future__ import annotations

import asyncio
import base64
import json
import time

import aiohttp
import numpy as np
import pytest

from ticktock.shipped import resource_path
from ticktock.sessions.audio import load_audio
from ticktock.sessions.manifest import load_manifest

from served import events_until_closed, serving

SECONDS = 8  # llama_questions-eval-0-0008 asks at 1.1-2.8 s and the model speaks in units 3 to 6
PIECE_BYTES = 3200  # 100 ms of PCM16 at 16 kHz
DECODER = "speclisten_stream"
DECISIONS = {"response.listen", "response.speak"}


@pytest.fixture(scope="module")
def session():
    sessions = load_manifest(resource_path("manifests/ticktock-mini/manifest.jsonl"), tasks=["llama_questions"])
    return next(s for s in sessions if s.session_id == "llama_questions-eval-0-0008")


@pytest.fixture(scope="module")
def pcm(session) -> bytes:
    samples = load_audio(session.audio_path)[: SECONDS * 16_000]
    return (np.clip(samples, -1.0, 1.0) * 32767.0).round().astype("<i2").tobytes()


@pytest.fixture(scope="module")
def served():
    with serving(f"decoder={DECODER}", "talker=espeak") as (server, url):
        yield server, int(url.rsplit(":", 1)[1])


@pytest.fixture
def port(served):
    return served[1]


def user_turn_ends(session, seconds: float) -> list[float]:
    """When each user turn that ends within the streamed audio ends (s), in order."""
    return sorted(t.end_s for t in session.turns if t.speaker == "user" and t.end_s <= seconds)


async def hold_turns_with_the_sdk(port: int, pcm: bytes, turn_ends: list[float]) -> list:
    """A turn-based session with the OpenAI SDK (no ``duplex`` query): stream ``pcm`` in real time, commit (and ask
    for a response, as a turn-based client does) once each user turn has been sent, then ``session.close``; every
    server event until ``session.closed``."""
    from openai import AsyncOpenAI

    client = AsyncOpenAI(api_key="not-needed", base_url=f"http://127.0.0.1:{port}/v1",
                         websocket_base_url=f"ws://127.0.0.1:{port}/v1")
    async with client.realtime.connect(model="embedded") as connection:
        await connection.session.update(session={"type": "realtime", "output_modalities": ["audio"]})
        await connection.input_audio_buffer.clear()  # a turn-based client clears before its first turn

        async def stream() -> None:
            pending, began = list(turn_ends), time.monotonic()
            for k, start in enumerate(range(0, len(pcm), PIECE_BYTES)):  # on a monotonic schedule
                await asyncio.sleep(max(0.0, began + k * 0.1 - time.monotonic()))
                piece = pcm[start: start + PIECE_BYTES]
                await connection.input_audio_buffer.append(audio=base64.b64encode(piece).decode())
                while pending and pending[0] <= (start + len(piece)) / 2 / 16_000:
                    pending.pop(0)
                    await connection.input_audio_buffer.commit()
                    await connection.response.create()
            await connection.send({"type": "session.close"})

        return await events_until_closed(connection, stream)


def test_the_sdk_holds_a_turn_based_session_committing_turns_and_hearing_one_response(port, session, pcm):
    turn_ends = user_turn_ends(session, SECONDS)
    assert turn_ends == [pytest.approx(2.788)]  # the first question; the second ends after the streamed audio
    events = asyncio.run(asyncio.wait_for(hold_turns_with_the_sdk(port, pcm, turn_ends), 60))
    kinds = [event.type for event in events]
    assert kinds[0] == "session.created" and "error" not in kinds and not DECISIONS & set(kinds)
    assert events[0].session.model_extra["ticktock"] == {"mode": "turns", "model": "embedded", "decoder": DECODER,
                                                         "talker": "espeak"}
    committed = events[kinds.index("input_audio_buffer.committed")]
    assert committed.item_id.startswith("item_") and committed.previous_item_id is None
    assert kinds.index("input_audio_buffer.committed") < kinds.index("response.created")
    transcript = "".join(e.delta for e in events if e.type == "response.output_audio_transcript.delta")
    assert "Mercury" in transcript
    assert kinds.count("response.created") == kinds.count("response.done") >= 1
    assert kinds.index("response.created") < kinds.index("response.output_audio.delta") < kinds.index("response.done")
    assert kinds[-1] == "session.closed" and events[-1].model_extra["reason"] == "ended"


async def stream_raw(port: int, pcm: bytes, duplex: bool) -> list[dict]:
    """A session over a plain WebSocket, audio sent at once in 100 ms appends (turn mode: one commit mid-way). Duplex
    mode: a turn commit after the audio, and ``session.close`` once every unit is decided (a graceful close decides
    nothing more); turn mode: ``session.close`` ends the input, and its units are decided before ``session.closed``.
    Every event until it closes."""
    query = "?duplex=1" if duplex else ""
    events = []
    async with aiohttp.ClientSession() as http, http.ws_connect(f"http://127.0.0.1:{port}/v1/realtime{query}") as ws:
        for k, start in enumerate(range(0, len(pcm), PIECE_BYTES)):
            await ws.send_json({"type": "input_audio_buffer.append",
                                "audio": base64.b64encode(pcm[start: start + PIECE_BYTES]).decode()})
            if not duplex and k == 30:
                await ws.send_json({"type": "input_audio_buffer.commit"})
        if duplex:
            await ws.send_json({"type": "input_audio_buffer.commit"})
        else:
            await ws.send_json({"type": "session.close"})
        async for message in ws:
            events.append(json.loads(message.data))
            if duplex and sum(e["type"] in DECISIONS for e in events) == SECONDS:
                await ws.send_json({"type": "session.close"})
            if events[-1]["type"] == "session.closed":
                break
    return events


def test_turn_mode_serves_the_same_text_as_duplex_mode_for_the_same_audio(port, pcm):
    duplex = asyncio.run(asyncio.wait_for(stream_raw(port, pcm, duplex=True), 60))
    turns = asyncio.run(asyncio.wait_for(stream_raw(port, pcm, duplex=False), 60))
    text = {mode: "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta")
            for mode, events in (("duplex", duplex), ("turns", turns))}
    assert "Mercury" in text["duplex"] and text["turns"] == text["duplex"]
    kinds = {mode: [e["type"] for e in events] for mode, events in (("duplex", duplex), ("turns", turns))}
    assert kinds["duplex"].count("response.listen") + kinds["duplex"].count("response.speak") == SECONDS
    assert not DECISIONS & set(kinds["turns"]) and "input_audio_buffer.committed" in kinds["turns"]
    assert kinds["turns"].count("response.created") == kinds["duplex"].count("response.created")
    for events in (duplex, turns):
        assert "error" not in [e["type"] for e in events]
    assert duplex[-1]["reason"] == "client_close" and turns[-1]["reason"] == "ended"


async def handshake_and_close(port: int, query: str, *before_close: dict) -> list[dict]:
    """Open a session, say ``session.update``, send ``before_close``, then ``session.close``; every event to the
    end."""
    events = []
    async with aiohttp.ClientSession() as http, http.ws_connect(f"http://127.0.0.1:{port}/v1/realtime{query}") as ws:
        await ws.send_json({"type": "session.update", "session": {"type": "realtime"}})
        for event in before_close:
            await ws.send_json(event)
        await ws.send_json({"type": "session.close"})
        async for message in ws:
            events.append(json.loads(message.data))
            if events[-1]["type"] == "session.closed":
                break
    return events


@pytest.mark.parametrize("query, mode", [("?duplex=1", "duplex"), ("?duplex=true", "duplex"), ("", "turns"),
                                         ("?duplex=0", "turns")])
def test_session_created_says_the_mode_and_the_served_model_and_decoder(port, query, mode):
    events = asyncio.run(asyncio.wait_for(handshake_and_close(port, query), 30))
    assert [e["type"] for e in events] == ["session.created", "session.updated", "session.closed"]
    labels = {"mode": mode, "model": "embedded", "decoder": DECODER, "talker": "espeak"}
    assert events[0]["session"]["ticktock"] == events[1]["session"]["ticktock"] == labels


def test_turn_mode_ignores_clear_accepts_response_create_and_refuses_cancel_as_duplex_does(port):
    turns = asyncio.run(asyncio.wait_for(handshake_and_close(
        port, "", {"type": "input_audio_buffer.clear", "event_id": "c1"}, {"type": "response.create"},
        {"type": "response.cancel", "event_id": "x1"}), 30))
    errors = [e["error"] for e in turns if e["type"] == "error"]
    assert [(e["code"], e["event_id"]) for e in errors] == [("bad_event", "x1")]
    assert errors[0]["message"].startswith("response.cancel: not served in turn mode")
    duplex = asyncio.run(asyncio.wait_for(handshake_and_close(
        port, "?duplex=1", {"type": "input_audio_buffer.clear", "event_id": "c1"}), 30))
    assert [e["error"]["event_id"] for e in duplex if e["type"] == "error"] == ["c1"]
    assert turns[-1]["type"] == duplex[-1]["type"] == "session.closed"


async def send_and_hang_up(port: int, pcm: bytes, server) -> object:
    """Open a turn-mode session, send ``pcm`` at once, and close the socket without a word; the served session."""
    async with aiohttp.ClientSession() as http, http.ws_connect(f"http://127.0.0.1:{port}/v1/realtime") as ws:
        for start in range(0, len(pcm), PIECE_BYTES):
            await ws.send_json({"type": "input_audio_buffer.append",
                                "audio": base64.b64encode(pcm[start: start + PIECE_BYTES]).decode()})
        while not (open_ones := [c for c in server.connections.copy() if not c.session.audio.ended]):
            await asyncio.sleep(0.01)  # the server holds the session once it has read the first append
        (connection,) = open_ones  # (the earlier tests' sessions have ended their audio)
    return connection.session


def test_in_turn_mode_a_closed_socket_ends_the_input_and_its_partial_last_unit_is_still_decided(served, pcm):
    server, port = served
    session = asyncio.run(asyncio.wait_for(send_and_hang_up(port, pcm[: 2 * 16_000 * 2 + 16_000], server), 30))
    deadline = time.monotonic() + 10
    while not session.audio.ended and time.monotonic() < deadline:  # the server reads the hang-up, ends the input
        time.sleep(0.01)
    assert session.audio.ended
    session.close(timeout_s=30)  # waits for the session's thread to decide its last units
    assert [unit.index for unit in session.units] == [0, 1, 2]  # 2.5 s: the last half unit padded with silence
