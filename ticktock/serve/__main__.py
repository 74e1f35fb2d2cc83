"""``python -m ticktock.serve``: a TickTock model and decoder behind the full-duplex serving contract.

Examples::

    python -m ticktock.serve                                       # embedded model, AR, on 127.0.0.1:8099
    python -m ticktock.serve decoder=speclisten_stream talker=espeak
    TICKTOCK_TOKEN=secret python -m ticktock.serve serve.token_env=TICKTOCK_TOKEN serve.port=9000

It takes the run's config groups and options (``configs/serve.yaml`` on top of ``configs/run.yaml``: ``model=``,
``decoder=``, ``talker=``, ``sampling.*``, ``seed``, ``device``, ``threads``) and ``serve.*``; every option is checked,
and the port is checked free, before the model is built, so a bad option or a port in use is one line with exit 2 and
nothing is served. It prints the address of the WebSocket endpoint and serves until Ctrl-C or SIGTERM (handled from
before the address is printed, even when the shell started it with SIGINT ignored, as ``&`` does), which closes every
open session with ``session.closed`` (``server_shutdown``) and exits 0, in half a second on a busy 2-core machine
(docs/serving.md). A served device that stops on a fault of its own (never one session's: that session alone fails)
ends the server too: one line, ``ticktock: error: the served device has stopped (...)``, exit 1. ``--help`` prints
this usage.
"""

from __future__ import annotations

import contextlib
import errno
import signal
import socket
import sys

from ticktock.errors import ConfigError, user_errors

USAGE = """usage: python -m ticktock.serve [key=value ...]      (also: ticktock serve [key=value ...])

Serve a TickTock model and decoder over vLLM-Omni's full-duplex WebSocket contract (WS /v1/realtime?duplex=1; without
duplex=1, OpenAI Realtime's turn-based vocabulary), in real time, with a page to talk to it at http://HOST:PORT/.
Ctrl-C or SIGTERM closes every open session with session.closed (server_shutdown) and exits 0.

examples:
  python -m ticktock.serve                                       # embedded model, AR, on 127.0.0.1:8099
  python -m ticktock.serve decoder=speclisten_stream talker=espeak
  TICKTOCK_TOKEN=secret python -m ticktock.serve serve.token_env=TICKTOCK_TOKEN serve.port=9000

options (Hydra overrides): the run's config groups and options (model=, decoder=, talker=, sampling.*, seed, device,
threads: python -m ticktock.run --help lists them) and:
"""


def usage() -> str:
    """The ``--help`` text: ``USAGE`` and each ``serve.*`` option with its default and what it does, read from
    ``configs/serve.yaml`` (one source for both)."""
    from ticktock.shipped import resource_path

    lines, inside = [], False
    for line in resource_path("configs/serve.yaml").read_text().splitlines():
        if line.startswith("serve:"):
            inside = True
        elif inside and line.startswith("  "):
            lines.append(f"  serve.{line.strip()}" if not line.startswith("   ") else f"      {line}")
        elif inside and line.strip():
            break
    return USAGE + "\n".join(lines)


def check_port_free(host: str, port: int) -> None:
    """Bind ``host:port`` and let it go, before the model is built: a port in use is one line (``ConfigError``, exit
    2) naming the option, not a traceback after minutes of loading. Port 0 (any free one) is not checked.

    >>> check_port_free("127.0.0.1", 0)
    """
    if port == 0:
        return
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as err:
        raise ConfigError(f"serve.host: cannot listen on {host!r} ({err.strerror})") from None
    for family, kind, proto, _, address in infos:
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server binds it
            try:
                probe.bind(address)
            except OSError as err:
                raise port_error(host, port, err) from None


def port_error(host: str, port: int, err: OSError) -> ConfigError:
    """The one line for a failed bind: the port in use, or an address this machine cannot listen on."""
    if err.errno == errno.EADDRINUSE:
        return ConfigError(f"serve.port: {host}:{port} is in use (choose another with serve.port=...)")
    return ConfigError(f"serve.host: cannot listen on {host}:{port} ({err.strerror or err})")


def open_warning(options) -> str | None:
    """The warning printed at start when the server listens beyond loopback with no token (``serve.host`` other than
    a loopback address and no ``serve.token_env``): anyone who can reach the machine can use the model. None
    otherwise.

    >>> from ticktock.serve.server import ServeOptions
    >>> open_warning(ServeOptions(host="127.0.0.1")), open_warning(ServeOptions(host="0.0.0.0", token_env="T"))
    (None, None)
    >>> open_warning(ServeOptions(host="0.0.0.0"))[:75]
    'ticktock serve: warning: serve.host=0.0.0.0 without serve.token_env: the mo'
    """
    from ticktock.serve.server import loopback

    if loopback(options.host) or options.token_env is not None:
        return None
    where = "every interface" if options.host.strip() in ("0.0.0.0", "::", "[::]") else f"{options.host}"
    return (f"ticktock serve: warning: serve.host={options.host} without serve.token_env: the model is open on {where} "
            "to anyone who can reach this machine (set serve.token_env, or serve on 127.0.0.1)")


def compose_serve(argv: list[str]):
    """The serve config composed from ``argv`` (Hydra overrides), every option checked (one line, exit 2)."""
    from hydra import compose, initialize_config_dir
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    from ticktock.errors import ConfigError, one_line
    from ticktock.plugins import register_selected
    from ticktock.replay.resources import register_resolver
    from ticktock.shipped import resource_path
    from ticktock.replay.config import check_run_options
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

    argv = sys.argv[1:] if argv is None else argv
    if any(arg in ("-h", "--help") for arg in argv):
        print(usage())
        return 0
    cfg = compose_serve(argv)
    options = ServeOptions.parse(cfg.serve)
    warning = open_warning(options)
    if warning:
        print(warning, file=sys.stderr, flush=True)
    check_port_free(options.host, options.port)
    if cfg.get("threads") is not None:
        import torch

        torch.set_num_threads(cfg.threads)
    server = Server(ServedModel(cfg), options)
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    asyncio.run(serve(server, f"{cfg.model.name} with {cfg.decoder.name}", handle_signals=True))
    return 0


#: How long the server's shutdown may take at most: every open session is sent ``session.closed`` and closed, and
#: handlers still running after this are cancelled (``ticktock.serve.server.SHUTDOWN_S`` waits for the sessions).
SHUTDOWN_TIMEOUT_S = 1.0
#: How long the shutdown then waits for the sessions' threads to leave the model (each stops after its current step).
SESSIONS_STOP_S = 1.5


async def serve(server, what: str, started=None, handle_signals: bool = False) -> None:
    """Serve until cancelled, or, with ``handle_signals``, until SIGINT or SIGTERM (handlers installed on the loop
    whatever the process inherited: a shell's ``&`` starts it with SIGINT ignored), or until the served device stops
    on a fault (then ``DeviceStopped`` is raised once the server has closed); print the endpoint's address once
    listening (``started``: called with the port, for a caller that serves in a thread). On the way out every open
    session is closed with ``session.closed`` (``server_shutdown``)."""
    import asyncio

    from aiohttp import web

    from ticktock.serve.live import DeviceStopped

    runner = web.AppRunner(server.app(), handle_signals=False, shutdown_timeout=SHUTDOWN_TIMEOUT_S)
    await runner.setup()
    site = web.TCPSite(runner, server.options.host, server.options.port)
    try:
        await site.start()
    except OSError as err:  # taken between the check and now
        await runner.cleanup()
        raise port_error(server.options.host, server.options.port, err) from None
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    if handle_signals:  # before the address is printed: a signal from then on is a clean stop
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
    server.model.device.on_fault(lambda error: wake(loop, stop))
    port = runner.addresses[0][1]
    where = f"{server.options.host}:{port}"
    print(f"ticktock serve: {what} at ws://{where}/v1/realtime?duplex=1, the page at http://{where}/ (Ctrl-C stops "
          "it)", flush=True)
    if started is not None:
        started(port)
    try:
        await stop.wait()
    finally:
        await runner.cleanup()  # closes every open session with session.closed
        await asyncio.get_running_loop().run_in_executor(None, server.stop_sessions, SESSIONS_STOP_S)
        fault = server.model.device.error
        if fault is None:
            print(f"ticktock serve: stopped; the device {device_words(server.model.device.shared.stats)}", flush=True)
    if fault is not None:
        raise DeviceStopped.of(fault)


def wake(loop, stop) -> None:
    """Set the asyncio event ``stop`` of ``loop`` from any thread (nothing when the loop has closed)."""
    try:
        loop.call_soon_threadsafe(stop.set)
    except RuntimeError:
        pass


def device_words(stats) -> str:
    """What the served device did, in one line (``DeviceStats``: its steps and where its time went, wall clock).

    >>> from ticktock.replay.device import DeviceStats
    >>> device_words(DeviceStats(steps=10, post_audio_steps=6, batched_steps=2, batched_forwards=5, busy_ms=900.0,
    ...                          post_audio_busy_ms=700.0, draft_busy_ms=200.0, dropped_drafts=1))
    'ran 10 steps (6 post-audio, 2 batched of 5 forwards, 0 batched encodings), busy 0.9 s (post-audio 0.7 s, idle work 0.2 s, talker 0.0 s), 1 idle-window piece dropped'
    """
    return (f"ran {stats.steps} steps ({stats.post_audio_steps} post-audio, {stats.batched_steps} batched of "
            f"{stats.batched_forwards} forwards, {stats.batched_encode_steps} batched encodings), busy "
            f"{stats.busy_ms / 1000:.1f} s (post-audio {stats.post_audio_busy_ms / 1000:.1f} s, idle work "
            f"{stats.draft_busy_ms / 1000:.1f} s, talker {stats.talker_busy_ms / 1000:.1f} s), {stats.dropped_drafts} "
            f"idle-window piece{'' if stats.dropped_drafts == 1 else 's'} dropped")


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


@contextlib.contextmanager
def serving_in_process(*overrides: str):
    """``python -m ticktock.serve <overrides>`` in a process of its own (one thread, ``threads=1``, no progress bars;
    on a free loopback port unless ``overrides`` name ``serve.port``) until the block ends; yields its duplex URL,
    ``ws://127.0.0.1:PORT/v1/realtime``. Ctrl-C stops it when the block ends (killed if it has not stopped in 30 s).
    For benchmarks that measure the server as a client sees it (``scripts/bench_endpoint.py``,
    ``scripts/bench_live_client.py``).

    Example::

        with serving_in_process("decoder=ar", "serve.max_sessions=8") as url:
            ...   # python -m ticktock.run model=endpoint model.url=URL
    """
    import os
    import re
    import subprocess

    port = [] if any(o.startswith("serve.port=") for o in overrides) else ["serve.port=0"]
    command = [sys.executable, "-m", "ticktock.serve", *overrides, *port, "threads=1", "progress=false"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                               env={**os.environ, "OMP_NUM_THREADS": "1"})
    try:
        line = process.stdout.readline()
        found = re.search(r"ws://127\.0\.0\.1:(\d+)/", line)
        if not found:
            raise RuntimeError(f"ticktock serve did not start: {line!r}")
        yield f"ws://127.0.0.1:{found.group(1)}/v1/realtime"
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


def freeze_for_exit() -> None:
    """Let the process leave promptly: every object is moved to the collector's permanent generation
    (``gc.freeze``), so the interpreter's exit tears down the modules torch and transformers imported (about 400,000
    objects) without the collector's full passes over them. Those passes were most of the shutdown: on this project's
    2-core machine under load, 2.1 to 2.6 s of CPU from the server's last line to the process's end; frozen, the
    whole shutdown took 0.4 to 0.5 s from the signal. Everything else of an exit stays (``atexit`` handlers, flushed
    streams, objects freed as their modules go); objects in a reference cycle are left to the OS, as Python may leave
    whatever still exists at exit."""
    import gc

    gc.freeze()


if __name__ == "__main__":
    try:
        with user_errors():
            sys.exit(main())
    finally:
        freeze_for_exit()
