"""``ticktock serve`` measured on this machine: each unit's served latency, and the serving overhead.

For each decoder (AR and Speculative Listening on streaming audio by default) and each session (mini-corpus sessions
that speak within their first seconds), the script

1. replays the session in-process on the wall clock (``ReplayEngine`` with ``WallClock``): each unit's post-audio
   latency as the replay measures it. That replay runs its units back to back, so the CPU never rests between them;
2. replays it in-process at real-time pace: the served device and a ``ServedSession`` of this process, its audio
   appended by a thread in 100 ms pieces on the same schedule as the client below, with no socket and no protocol.
   Per unit, ``paced_ms`` is the session's served latency (``ServedUnit.served_ms``: from the unit's last sample
   arriving to its decision). Against (1) it measures what real-time pace costs by itself: between units the CPU
   idles for most of a second, and the next unit's work then runs slower (cold caches, a core that was resting);
3. serves it: ``python -m ticktock.serve`` (the same model and decoder, one thread) in a process of its own, as it is
   deployed, and this process as its WebSocket client on loopback, streaming the session's audio in real time
   (100 ms appends on a monotonic schedule, no drift). A client never shares the server's interpreter: in one
   process the two would contend for one interpreter lock, and the client's own work would count as the server's.
   Per unit, ``server_ms`` is what the server reports (``ticktock.post_audio_ms``: from the unit's last sample
   arriving to its decision), and ``client_ms`` the time from sending the append that completes the unit to
   receiving its decision (an upper bound of "until the decision left the server": it adds loopback and the
   client's own work).

It prints, per decoder, the medians over every unit of every session and run (runs alternate the decoders, A B A B,
so a drift of the machine's speed reaches both): served latency (client and server side), the in-process wall
latency of the same units, and the serving overhead (client_ms minus the in-process latency of the same unit, paired
unit by unit; its median), over all units and over the units that speak. The overhead then splits in two, each
paired unit by unit: **pace** (paced_ms minus the in-process latency: real-time pace with no server) and **serving**
(client_ms minus paced_ms: the socket, the protocol and the server's loop; "of it: server" is server_ms minus
paced_ms, what the server adds before the decision leaves it). Last, the speak-unit speedup of each decoder over AR:
served, at real-time pace in-process, back to back in-process, and the ratios of the served one to both. Every
figure is wall time on this machine's CPU, embedded model.

Run (about 5 minutes on 2 CPU cores)::

    python scripts/bench_serve.py
    python scripts/bench_serve.py --runs 5 --sessions 6 --seconds 10
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import statistics
import sys
import time

import numpy as np

from ticktock.errors import user_errors

DECODERS = ("ar", "speclisten_stream")
SESSION_IDS = ("llama_questions-eval-0-0008", "llama_questions-eval-0-0000", "web_questions-eval-0-0006",
               "trivia_qa-eval-0-0001", "llama_questions-eval-0-0004", "trivia_qa-eval-0-0009")
PIECE_S = 0.1


def positive(text: str) -> int:
    value = int(text) if text.isdigit() else 0
    if not 1 <= value <= 100:
        raise argparse.ArgumentTypeError(f"expected a whole number from 1 to 100, got {text!r}")
    return value


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="bench_serve", description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=positive, default=3, help="runs of every decoder on every session (default 3)")
    parser.add_argument("--sessions", type=positive, default=4, help=f"sessions (at most {len(SESSION_IDS)}; default 4)")
    parser.add_argument("--seconds", type=positive, default=8, help="seconds of each session streamed (default 8)")
    parser.add_argument("--decoders", default=",".join(DECODERS), help="decoders, comma-separated; the first is the "
                                                                       "baseline of the speedups (default ar,...)")
    args = parser.parse_args(argv)
    if args.sessions > len(SESSION_IDS):
        parser.error(f"argument --sessions: at most {len(SESSION_IDS)}")
    args.decoders = [d for d in args.decoders.split(",") if d]
    return args


def sessions(count: int):
    from ticktock.shipped import resource_path
    from ticktock.sessions.manifest import load_manifest

    by_id = {s.session_id: s for s in load_manifest(resource_path("manifests/ticktock-mini/manifest.jsonl"))}
    return [by_id[i] for i in SESSION_IDS[:count]]


def in_process(model, session, samples, units: int) -> dict[int, tuple[float, str]]:
    """Each unit's post-audio latency on the wall clock and its kind, replayed in this process."""
    from ticktock.clocks.wall import WallClock
    from ticktock.replay.engine import ReplayEngine
    from ticktock.world.injection import ToolCallInjector
    from ticktock.world.mock_tools import MockToolExecutor

    engine = ReplayEngine(model.adapter, model.decoder(), WallClock(model.adapter.synchronize),
                          model.sampling, ToolCallInjector(MockToolExecutor()), units)
    trace = engine.replay(session, samples)
    return {c.span.index: (c.timing.latency_ms, c.kind) for c in trace.chunks}


def paced(model, session, samples: np.ndarray, units: int) -> dict[int, float]:
    """Each unit's served latency (ms) in this process at real-time pace: a ``ServedSession`` on the served device,
    its audio appended by a thread in ``PIECE_S`` pieces on a monotonic schedule (the client's), then ended."""
    import threading

    from ticktock.serve.session import ServedSession

    ended = threading.Event()
    reports: dict[int, float] = {}
    live = ServedSession(model, session.session_id, on_unit=lambda u: reports.__setitem__(u.index, u.served_ms),
                         on_call=lambda call_id, call: None, on_end=lambda error: ended.set(),
                         system_prompt=session.system_prompt)
    piece = int(PIECE_S * 16_000)
    began = time.monotonic()
    for k, start in enumerate(range(0, len(samples), piece)):
        time.sleep(max(0.0, began + k * PIECE_S - time.monotonic()))
        if k == 0:
            live.start()
        live.audio.append(samples[start: start + piece])
    live.audio.end()
    if not ended.wait(60.0):
        raise RuntimeError(f"{session.session_id}: the paced replay did not end within 60 s of its audio")
    return {u: ms for u, ms in reports.items() if u < units}


async def served(url: str, samples: np.ndarray, instructions: str | None, units: int) -> dict[int, tuple]:
    """Stream ``samples`` into the server in real time; per unit (client_ms, server_ms, decision)."""
    import websockets

    pcm = (np.clip(samples, -1, 1) * 32767).round().astype("<i2").tobytes()
    piece = int(PIECE_S * 16_000) * 2
    completed_at: dict[int, float] = {}
    decided: dict[int, tuple] = {}
    async with websockets.connect(f"{url}?duplex=1", max_size=None) as ws:
        await ws.send(json.dumps({"type": "session.update", "session": {"instructions": instructions or ""}}))

        async def send() -> None:
            began = time.monotonic()
            for k, start in enumerate(range(0, len(pcm), piece)):
                await asyncio.sleep(max(0.0, began + k * PIECE_S - time.monotonic()))
                await ws.send(json.dumps({"type": "input_audio_buffer.append",
                                          "audio": base64.b64encode(pcm[start: start + piece]).decode()}))
                end = (start + piece) // 2
                if end % 16_000 == 0:
                    completed_at[end // 16_000 - 1] = time.perf_counter()
            await ws.send(json.dumps({"type": "input_audio_buffer.commit"}))  # a turn commit: closes the last unit

        sending = asyncio.ensure_future(send())
        total = -(-(len(pcm) // 2) // 16_000)  # units, the last partial one included
        async for frame in ws:
            event, now = json.loads(frame), time.perf_counter()
            if event["type"] in ("response.listen", "response.speak"):
                unit = event["ticktock"]["unit"]
                decided[unit] = ((now - completed_at[unit]) * 1000.0 if unit in completed_at else float("nan"),
                                 event["ticktock"]["post_audio_ms"], event["type"].split(".")[1])
                if len(decided) == total:  # every unit decided (the commit closed the last, partial one): end it
                    await ws.send(json.dumps({"type": "session.close"}))
            if event["type"] in ("session.closed", "session.expired"):
                break
        await sending
    return {u: v for u, v in decided.items() if u < units}


def median(values) -> float:
    values = list(values)
    return statistics.median(values) if values else float("nan")


def main(argv=None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    from ticktock.serve.__main__ import compose_serve, serving_in_process
    from ticktock.serve.session import ServedModel
    from ticktock.sessions.audio import load_audio

    import torch

    torch.set_num_threads(1)  # the server's sessions and this client share the machine: one thread each, measured alone
    chosen = sessions(args.sessions)
    rows = {d: [] for d in args.decoders}  # (client_ms, server_ms, in-process ms, kind, paced ms)
    for run in range(args.runs):
        for decoder in args.decoders:
            cfg = compose_serve([f"decoder={decoder}", "serve.port=0", "progress=false"])
            model = ServedModel(cfg)
            with serving_in_process(f"decoder={decoder}") as url:
                for session in chosen:
                    samples = load_audio(session.audio_path)[: args.seconds * 16_000]
                    alone = in_process(model, session, samples, args.seconds)
                    pace = paced(model, session, samples, args.seconds)
                    live = asyncio.run(served(url, samples, session.system_prompt, args.seconds))
                    for unit, (client_ms, server_ms, decision) in sorted(live.items()):
                        rows[decoder].append((client_ms, server_ms, alone[unit][0], alone[unit][1], pace[unit]))
            print(f"run {run + 1}/{args.runs} {decoder}: {len(rows[decoder])} units so far", flush=True)
    report(rows, args)
    return 0


def report(rows: dict, args) -> None:
    """Two tables: the latencies (all units, and the units that speak), then the overhead split pair by pair; last,
    the speak-unit speedups over the first decoder, against both in-process replays."""
    print(f"\nticktock serve on this CPU (wall clock, loopback, embedded model, {args.sessions} sessions x "
          f"{args.seconds} s, {args.runs} runs; medians over units; client in a process of its own)")
    print(f"{'decoder':<20} {'units':>5} {'served client ms':>16} {'served server ms':>16} {'paced ms':>8} "
          f"{'in-process ms':>13} {'speak units':>11} {'speak served ms':>15} {'speak paced ms':>14} "
          f"{'speak in-proc ms':>16}")
    speak = {}
    for decoder, units in rows.items():
        spoken = [u for u in units if u[3] in ("speak", "tool")]
        speak[decoder] = (median(u[0] for u in spoken), median(u[4] for u in spoken), median(u[2] for u in spoken))
        print(f"{decoder:<20} {len(units):>5} {median(u[0] for u in units):>16.1f} {median(u[1] for u in units):>16.1f} "
              f"{median(u[4] for u in units):>8.1f} {median(u[2] for u in units):>13.1f} {len(spoken):>11} "
              f"{speak[decoder][0]:>15.1f} {speak[decoder][1]:>14.1f} {speak[decoder][2]:>16.1f}")
    print("\noverhead, paired unit by unit (medians; ms): served (client) minus in-process = pace + serving")
    print(f"{'decoder':<20} {'overhead':>8} {'speak':>6} {'pace':>6} {'serving':>8} {'speak':>6} {'of it: server':>13}")
    for decoder, units in rows.items():
        spoken = [u for u in units if u[3] in ("speak", "tool")]
        print(f"{decoder:<20} {median(u[0] - u[2] for u in units):>8.1f} {median(u[0] - u[2] for u in spoken):>6.1f} "
              f"{median(u[4] - u[2] for u in units):>6.1f} {median(u[0] - u[4] for u in units):>8.1f} "
              f"{median(u[0] - u[4] for u in spoken):>6.1f} {median(u[1] - u[4] for u in units):>13.1f}")
    base = args.decoders[0]
    for decoder in args.decoders[1:]:
        live, pace, alone = (speak[base][k] / speak[decoder][k] for k in range(3))
        print(f"speak-unit speedup of {decoder} over {base}: served {live:.2f}x; in-process at real-time pace "
              f"{pace:.2f}x (served / paced {live / pace:.2f}); back to back {alone:.2f}x (served / back to back "
              f"{live / alone:.2f})")


if __name__ == "__main__":
    with user_errors(prog="bench_serve"):
        sys.exit(main())
