"""``python -m ticktock.serve``: a TickTock model and decoder behind the full-duplex serving contract.

Examples::

    python -m ticktock.serve                                       # embedded model, AR, on 127.0.0.1:8099
    python -m ticktock.serve decoder=speclisten_stream talker=espeak
    TICKTOCK_TOKEN=secret python -m ticktock.serve serve.token_env=TICKTOCK_TOKEN serve.port=9000

It takes the run's config groups and options (``configs/serve.yaml`` on top of ``configs/run.yaml``: ``model=``,
``decoder=``, ``talker=``, ``sampling.*``, ``seed``, ``device``, ``threads``) and ``serve.*``; every option is checked
and the model is built before it listens, so a bad option is one line with exit 2 and nothing is served. It prints the
address of the WebSocket endpoint and serves until Ctrl-C, which closes every open session with ``session.closed``.
"""

from __future__ import annotations

import contextlib
import sys

from ticktock.errors import user_errors


def compose_serve(argv: list[str]):
    """The serve config composed from ``argv`` (Hydra overrides), every option checked (one line, exit 2)."""
    from hydra import compose, initialize_config_dir
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    from ticktock.errors import ConfigError, one_line
    from ticktock.plugins import register_selected
    from ticktock.replay.resources import register_resolver, resource_path
    from ticktock.replay.runner import check_run_options
    from ticktock.serve.server import ServeOptions

    register_resolver()
    register_selected(argv)
    with initialize_config_dir(config_dir=str(resource_path("configs")), version_base=None):
        try:
            cfg = compose("serve", overrides=list(argv))
        except (HydraException, OmegaConfBaseException) as err:
            raise ConfigError(one_line(str(err).split("Config search path")[0])) from None
    check_run_options(cfg)
    ServeOptions.parse(cfg.serve).token()
    return cfg


#: How often Python may hand the interpreter lock to another thread (its default is 5 ms). The sessions' engine threads
#: run model code between the event loop's turns; with the default, an event the loop should send (a unit's decision)
#: or a frame it should read waits up to 5 ms for the lock, which is added to every live unit. 0.5 ms removes most of
#: that wait at no measurable cost to the model's own work (scripts/bench_endpoint.py measures the live overhead).
SWITCH_INTERVAL_S = 0.0005


def main(argv: list[str] | None = None) -> int:
    import asyncio

    from ticktock.serve.server import Server, ServeOptions
    from ticktock.serve.session import ServedModel

    cfg = compose_serve(sys.argv[1:] if argv is None else argv)
    if cfg.get("threads") is not None:
        import torch

        torch.set_num_threads(cfg.threads)
    server = Server(ServedModel(cfg), ServeOptions.parse(cfg.serve))
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    try:
        asyncio.run(serve(server, f"{cfg.model.name} with {cfg.decoder.name}"))
    except KeyboardInterrupt:
        pass
    return 0


async def serve(server, what: str, started=None) -> None:
    """Serve until cancelled (Ctrl-C); print the endpoint's address once listening (``started``: called with the
    port, for a caller that serves in a thread)."""
    from aiohttp import web

    runner = web.AppRunner(server.app(), handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, server.options.host, server.options.port)
    await site.start()
    port = runner.addresses[0][1]
    where = f"{server.options.host}:{port}"
    print(f"ticktock serve: {what} at ws://{where}/v1/realtime?duplex=1, the page at http://{where}/ (Ctrl-C stops "
          "it)", flush=True)
    if started is not None:
        started(port)
    try:
        await asyncio_forever()
    finally:
        await runner.cleanup()  # closes every open session with session.closed


@contextlib.contextmanager
def serving_in_thread(server, what: str = "ticktock serve"):
    """Serve ``server`` from a thread of its own (its own event loop) until the block ends; yields the port. For
    benchmarks and tests that drive the server from the same process (``scripts/bench_serve.py``)."""
    import asyncio
    import threading

    loop = asyncio.new_event_loop()
    ready, port = threading.Event(), []
    task = loop.create_task(serve(server, what, started=lambda p: (port.append(p), ready.set())))

    def run() -> None:
        try:
            loop.run_until_complete(task)
        except asyncio.CancelledError:  # stopped when the block ended
            pass

    thread = threading.Thread(target=run, name="ticktock-serve", daemon=True)
    thread.start()
    if not ready.wait(120):
        raise RuntimeError("the server did not start listening within 120 s")
    try:
        yield port[0]
    finally:
        loop.call_soon_threadsafe(task.cancel)
        thread.join(30)
        loop.close()


async def asyncio_forever() -> None:
    import asyncio

    await asyncio.Event().wait()


if __name__ == "__main__":
    with user_errors():
        sys.exit(main())
