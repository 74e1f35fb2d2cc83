"""A ``ticktock serve`` server on loopback for the serve tests (a helper module, not a conftest): composed and built
like the command, listening on a free port in a thread of its own (``ticktock.serve.__main__.serving_in_thread``),
stopped (every session closed) when the test ends; and a client streaming audio in real time (``stream``)."""

from __future__ import annotations

import contextlib
import threading
import time

from ticktock.replay.audio_source import AudioEnded


@contextlib.contextmanager
def serving(*overrides: str):
    """Serve ``python -m ticktock.serve <overrides> serve.port=0``; yields ``(server, "ws://127.0.0.1:PORT")``."""
    from ticktock.serve.__main__ import compose_serve, serving_in_thread
    from ticktock.serve.server import Server, ServeOptions
    from ticktock.serve.session import ServedModel

    cfg = compose_serve([*overrides, "serve.port=0", "progress=false"])
    server = Server(ServedModel(cfg), ServeOptions.parse(cfg.serve))
    with serving_in_thread(server, "test") as port:
        yield server, f"ws://127.0.0.1:{port}"


async def events_until_closed(connection, stream, received: list | None = None) -> list:
    """Run the coroutine ``stream()`` (the client sending) while collecting every server event of an OpenAI SDK
    realtime ``connection`` until ``session.closed`` into ``received`` (which ``stream`` may watch); the events, in
    order."""
    import asyncio

    received = [] if received is None else received
    sending = asyncio.ensure_future(stream())
    async for event in connection:
        received.append(event)
        if event.type == "session.closed":
            break
    await sending
    return received


PIECE_MS = 100  # a streaming client's appends


def stream(audio, samples, seconds: float, piece_ms: int = PIECE_MS) -> threading.Thread:
    """A client streaming the first ``seconds`` of ``samples`` in real time, one piece every ``piece_ms`` scheduled on
    a monotonic deadline from its start (no drift), then ending the stream."""
    return stream_in_step([(audio, samples)], seconds, piece_ms)


def stream_in_step(streams: list, seconds: float, piece_ms: int = PIECE_MS,
                   began: float | None = None) -> threading.Thread:
    """Clients streaming in step: one thread sends each piece of every ``(audio, samples)`` of ``streams`` back to
    back, so their units complete together (within microseconds, not a thread's scheduling jitter apart); from
    ``began`` (``time.monotonic()``; now when None), in real time as ``stream`` does. A client whose session was
    closed stops; the others go on."""
    piece = 16 * piece_ms
    start_at = began

    def send():
        began = time.monotonic() if start_at is None else start_at
        sending = dict(enumerate(streams))
        for k, start in enumerate(range(0, int(seconds * 16_000), piece)):
            time.sleep(max(0.0, began + k * piece_ms / 1000.0 - time.monotonic()))
            for client, (audio, samples) in list(sending.items()):
                try:
                    audio.append(samples[start: start + piece])
                except AudioEnded:  # the session was closed: this client stops
                    del sending[client]
        for audio, _ in sending.values():
            audio.end()

    sender = threading.Thread(target=send, daemon=True)
    sender.start()
    return sender


def serve_together(model, sessions, units: int) -> list:
    """Serve ``sessions`` at once on ``model`` (a ``ServedModel``), streamed in step in real time for ``units``
    seconds; each one's (units, every error its ``on_end`` was called with: ``[None]`` for a session that ended well,
    ``[]`` for one still running)."""
    from ticktock.serve.session import ServedSession
    from ticktock.sessions.audio import load_audio

    ended, served = {}, []
    for session in sessions:
        one = ServedSession(model, session.session_id, on_unit=lambda unit: None, on_call=lambda *call: None,
                            on_end=lambda error, sid=session.session_id: ended.setdefault(sid, []).append(error),
                            system_prompt=session.system_prompt, tools=session.tools)
        one.start()
        served.append(one)
    streams = [(one.audio, load_audio(session.audio_path)) for one, session in zip(served, sessions)]
    # One sender: every client's units complete together, so their work waits for the device together.
    sender = stream_in_step(streams, units, began=time.monotonic() + 0.05)
    sender.join(timeout=60)
    for one in served:
        one.join(timeout_s=60)
    return [(one.units, ended.get(session.session_id, [])) for one, session in zip(served, sessions)]
