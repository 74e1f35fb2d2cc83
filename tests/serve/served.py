"""A ``ticktock serve`` server on loopback for the serve tests (a helper module, not a conftest): composed and built
like the command, listening on a free port in a thread of its own (``ticktock.serve.__main__.serving_in_thread``), stopped (every session closed) when
the test ends."""

from __future__ import annotations

import contextlib


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
