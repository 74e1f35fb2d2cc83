"""The OpenAI Python SDK's realtime client holds a session with ``ticktock serve``: it connects, updates the session,
streams a mini-corpus session's audio in real time, commits, and receives the model's reply as transcript and audio
deltas (the embedded model with the eSpeak talker)."""

from __future__ import annotations

import asyncio
import base64
import time

import numpy as np

from ticktock.replay.resources import resource_path
from ticktock.sessions.audio import load_audio
from ticktock.sessions.manifest import load_manifest

from served import events_until_closed, serving

SECONDS = 8  # llama_questions-eval-0-0008 speaks in units 3 to 6


async def hold_session(port: int, samples: np.ndarray, instructions: str) -> list:
    from openai import AsyncOpenAI

    client = AsyncOpenAI(api_key="not-needed", base_url=f"http://127.0.0.1:{port}/v1",
                         websocket_base_url=f"ws://127.0.0.1:{port}/v1")
    async with client.realtime.connect(model="embedded", extra_query={"duplex": "1"}) as connection:
        await connection.session.update(session={"type": "realtime", "instructions": instructions,
                                                 "output_modalities": ["audio"]})

        async def stream() -> None:
            began = time.monotonic()
            pcm = (np.clip(samples, -1, 1) * 32767).round().astype("<i2").tobytes()
            for k, start in enumerate(range(0, len(pcm), 3200)):  # 100 ms pieces on a monotonic schedule
                await asyncio.sleep(max(0.0, began + k * 0.1 - time.monotonic()))
                await connection.input_audio_buffer.append(audio=base64.b64encode(pcm[start: start + 3200]).decode())
            await connection.input_audio_buffer.commit()

        return await events_until_closed(connection, stream)


def test_the_sdk_streams_audio_and_receives_the_reply_as_text_and_audio_deltas():
    session = next(s for s in load_manifest(resource_path("manifests/ticktock-mini/manifest.jsonl"),
                                            tasks=["llama_questions"]) if s.session_id == "llama_questions-eval-0-0008")
    samples = load_audio(session.audio_path)[: SECONDS * 16_000]
    with serving("decoder=speclisten_stream", "talker=espeak") as (server, url):
        port = int(url.rsplit(":", 1)[1])
        events = asyncio.run(asyncio.wait_for(hold_session(port, samples, session.system_prompt or ""), 90))
    kinds = [event.type for event in events]
    assert kinds[0] == "session.created" and "session.updated" in kinds and "error" not in kinds
    transcript = "".join(e.delta for e in events if e.type == "response.output_audio_transcript.delta")
    assert "Mercury" in transcript
    audio = b"".join(base64.b64decode(e.delta) for e in events if e.type == "response.output_audio.delta")
    assert len(audio) // 2 > 22_050 * 0.5  # more than half a second of speech
    assert kinds.index("response.created") < kinds.index("response.output_audio.delta") < kinds.index("response.done")
