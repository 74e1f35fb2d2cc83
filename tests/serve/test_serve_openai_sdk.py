"""The OpenAI Python SDK's realtime client holds a session with ``ticktock serve``: it connects, updates the session,
streams a mini-corpus session's audio in real time, commits the turn (``input_audio_buffer.committed``; the session
stays open), receives the model's reply as transcript and audio deltas (the embedded model with the eSpeak talker),
and ends the session with ``session.close`` once every unit is decided. A client over ``serve.max_sessions`` reads
the ``error`` event naming the limit before the close."""

from __future__ import annotations

import asyncio
import base64
import json
import time

import numpy as np
import pytest

from ticktock.shipped import resource_path
from ticktock.sessions.audio import load_audio
from ticktock.sessions.manifest import load_manifest

from served import events_until_closed, serving

SECONDS = 8  # llama_questions-eval-0-0008 speaks in units 3 to 6
DECISIONS = {"response.listen", "response.speak"}


@pytest.fixture(scope="module")
def port():
    with serving("decoder=speclisten_stream", "talker=espeak", "serve.max_sessions=2") as (server, url):
        yield int(url.rsplit(":", 1)[1])


def sdk_client(port: int):
    from openai import AsyncOpenAI

    return AsyncOpenAI(api_key="not-needed", base_url=f"http://127.0.0.1:{port}/v1",
                       websocket_base_url=f"ws://127.0.0.1:{port}/v1")


async def hold_session(port: int, samples: np.ndarray, instructions: str) -> list:
    async with sdk_client(port).realtime.connect(model="embedded", extra_query={"duplex": "1"}) as connection:
        await connection.session.update(session={"type": "realtime", "instructions": instructions,
                                                 "output_modalities": ["audio"]})
        received = []

        async def stream() -> None:
            began = time.monotonic()
            pcm = (np.clip(samples, -1, 1) * 32767).round().astype("<i2").tobytes()
            for k, start in enumerate(range(0, len(pcm), 3200)):  # 100 ms pieces on a monotonic schedule
                await asyncio.sleep(max(0.0, began + k * 0.1 - time.monotonic()))
                await connection.input_audio_buffer.append(audio=base64.b64encode(pcm[start: start + 3200]).decode())
            await connection.input_audio_buffer.commit()  # the turn ends; the session stays open
            while sum(event.type in DECISIONS for event in received) < SECONDS:
                await asyncio.sleep(0.02)
            await connection.send({"type": "session.close"})

        return await events_until_closed(connection, stream, received)


def test_the_sdk_streams_audio_and_receives_the_reply_as_text_and_audio_deltas(port):
    session = next(s for s in load_manifest(resource_path("manifests/ticktock-mini/manifest.jsonl"),
                                            tasks=["llama_questions"]) if s.session_id == "llama_questions-eval-0-0008")
    samples = load_audio(session.audio_path)[: SECONDS * 16_000]
    events = asyncio.run(asyncio.wait_for(hold_session(port, samples, session.system_prompt or ""), 90))
    kinds = [event.type for event in events]
    assert kinds[0] == "session.created" and "session.updated" in kinds and "error" not in kinds
    assert "input_audio_buffer.committed" in kinds and kinds[-1] == "session.closed"
    assert events[-1].model_extra["reason"] == "client_close"
    transcript = "".join(e.delta for e in events if e.type == "response.output_audio_transcript.delta")
    assert "Mercury" in transcript
    audio = b"".join(base64.b64decode(e.delta) for e in events if e.type == "response.output_audio.delta")
    assert len(audio) // 2 > 22_050 * 0.5  # more than half a second of speech
    assert kinds.index("response.created") < kinds.index("response.output_audio.delta") < kinds.index("response.done")


async def refused_over_the_limit(port: int) -> list:
    """Fill the server's two sessions with plain clients, then connect with the SDK as its users do (connect, send
    ``session.update``, then read): every event the SDK yields before the connection ends, or what it raised."""
    import aiohttp

    async with aiohttp.ClientSession() as http:
        held = [await http.ws_connect(f"http://127.0.0.1:{port}/v1/realtime?duplex=1") for _ in range(2)]
        try:
            for ws in held:
                await ws.send_json({"type": "session.update", "session": {}})
                assert json.loads((await ws.receive(timeout=10)).data)["type"] == "session.created"
            seen = []
            try:
                async with sdk_client(port).realtime.connect(model="embedded",
                                                             extra_query={"duplex": "1"}) as connection:
                    # The application prepares its session first. A server that closed right after its error event
                    # has closed by now, and the SDK raises on this send: its user never reads the error (the refusal
                    # was only a 1008 close to SDK users). This server waits for the client's first frame.
                    await asyncio.sleep(0.5)
                    await connection.session.update(session={"type": "realtime"})
                    async for event in connection:
                        seen.append(event)
            except Exception as err:  # the close after the error: whatever the SDK raises for a 1008
                seen.append(err)
            return seen
        finally:
            for ws in held:
                await ws.close()


def test_a_session_over_the_limit_is_told_so_in_an_error_event_the_sdk_reads(port):
    seen = asyncio.run(asyncio.wait_for(refused_over_the_limit(port), 60))
    assert seen and getattr(seen[0], "type", None) == "error", seen
    assert seen[0].error.code == "resource_exhausted"
    assert "at most 2 sessions" in seen[0].error.message and "serve.max_sessions" in seen[0].error.message
