"""The live client against a server with vLLM-Omni's duplex semantics: does every session end by itself, how long
does a run take beside the audio it sends, and how far is each unit's response time, as the client measures it,
from the server's own measure of the same unit?

``ticktock serve`` (a process of its own on loopback, the embedded model, AR, ``threads=1``) holds sessions as
vLLM-Omni's duplex runner does: a commit is a turn commit, only ``session.close`` ends a session, the socket pings
(every ``--ping`` s here, 20 s by default in a deployment). The client (``ticktock.endpoints.client.hold_session``,
what ``python -m ticktock.run model=endpoint`` runs) holds N sessions of the mini corpus at once, for N in ``--sessions``
(each N ``--runs`` times, a fresh set of connections each time). Printed per N (medians over the runs):

- sessions complete / partial / failed, and how they ended (``session.closed`` confirms the client's
  ``session.close``);
- the run's wall time beside the longest session's audio (the client streams in real time: the difference is the
  time to the last decision, the grace for the reply in flight and the close);
- per unit: the client's response time ``r_t`` (its decision's arrival minus the end of its audio, on the client's
  monotonic clock) minus the server's own (``ticktock.post_audio_ms`` of the decision: from the unit's last sample
  arriving to the decision, on the server's clock), p50 and p95 over every unit: the serving path's network and
  event overhead, and the client's own lag.

Wall clock, this machine, loopback, the embedded model. Run (about 2 minutes with the defaults)::

    python scripts/bench_live_client.py
    python scripts/bench_live_client.py --sessions 1,4,8 --runs 3 --chunks 8
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time

from ticktock.corpus.arguments import whole_number
from ticktock.errors import user_errors
from ticktock.serve.__main__ import serving_in_process


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="bench_live_client", description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", default="1,4,8", help="how many sessions at once, comma-separated (1,4,8)")
    parser.add_argument("--runs", type=whole_number(1, 20), default=3, help="runs of each N (default 3)")
    parser.add_argument("--chunks", type=whole_number(1, 60), default=6, help="units of each session (default 6)")
    parser.add_argument("--ping", type=float, default=1.0, help="the server's ping interval, s (default 1)")
    parser.add_argument("--decoder", default="ar", help="the served decoder (default ar)")
    args = parser.parse_args(argv)
    try:
        args.sessions = [int(n) for n in args.sessions.split(",")]
    except ValueError:
        parser.error(f"--sessions: a comma-separated list of whole numbers, got {args.sessions!r}")
    if not args.sessions or min(args.sessions) < 1 or max(args.sessions) > 32:
        parser.error(f"--sessions: each from 1 to 32, got {args.sessions}")
    if not 0.05 <= args.ping <= 60:
        parser.error(f"--ping: seconds from 0.05 to 60, got {args.ping}")
    return args


def mini_sessions(count: int) -> list:
    """The first ``count`` sessions of the mini corpus, one per task type in turn."""
    from ticktock.replay.config import build, compose_run, select_sessions

    cfg = compose_run("ar", "embedded", None, ["limit.per_task=3"])
    sessions = select_sessions(cfg, build(cfg.task))
    by_task: dict[str, list] = {}
    for session in sessions:
        by_task.setdefault(session.task, []).append(session)
    interleaved = [s for group in zip(*by_task.values()) for s in group]
    return interleaved[:count]


async def hold_many(url: str, sessions: list, units: int):
    """Hold every session at once; the records and the run's wall time."""
    from ticktock.endpoints.client import hold_session
    from ticktock.endpoints.endpoint import Endpoint
    from ticktock.endpoints.vllm_omni_duplex import VllmOmniDuplex
    from ticktock.sessions.audio import load_audio

    endpoint = Endpoint(url=url, unit_timeout_s=20.0)
    began = time.monotonic()
    records = await asyncio.gather(*(hold_session(endpoint, VllmOmniDuplex(), s, load_audio(s.audio_path), units)
                                     for s in sessions))
    return records, time.monotonic() - began


def unit_errors(record) -> list[float]:
    """Per decided unit: the client's response time minus the server's own measure of it (ms)."""
    from ticktock.endpoints.measure import measure_units
    from ticktock.wire import UnitDecision

    server_ms = [s.event.server_ms for s in record.events if isinstance(s.event, UnitDecision)]
    units = measure_units(record, per_unit=True)[: record.decided]
    return [u.response_ms - ms for u, ms in zip(units, server_ms) if u.response_ms is not None and ms is not None]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def measure(url: str, n: int, args) -> dict:
    sessions = mini_sessions(n)
    walls, errors, endings, outcomes = [], [], {}, {"complete": 0, "partial": 0, "failed": 0}
    for _ in range(args.runs):
        records, wall = asyncio.run(hold_many(url, sessions, args.chunks))
        walls.append(wall)
        for record in records:
            endings[record.ended_by] = endings.get(record.ended_by, 0) + 1
            kind = "complete" if record.failure is None else "partial" if record.decided else "failed"
            outcomes[kind] += 1
            errors += unit_errors(record)
    return {"n": n, "wall_s": statistics.median(walls), "audio_s": float(args.chunks), "outcomes": outcomes,
            "endings": endings, "err_p50": percentile(errors, 0.5), "err_p95": percentile(errors, 0.95),
            "units": len(errors)}


def main(argv=None) -> int:
    args = parse_args(argv)
    with user_errors():
        print(f"live client against ticktock serve (vLLM-Omni duplex semantics, pings every {args.ping:g} s), "
              f"decoder {args.decoder}, {args.chunks} units a session, {args.runs} runs per N; wall clock, this "
              "machine, loopback, the embedded model", flush=True)
        print("| N | complete / partial / failed | endings | run wall s (median) | audio s | client - server "
              "per unit p50 ms | p95 ms | units |", flush=True)
        print("|---|---|---|---|---|---|---|---|", flush=True)
        with serving_in_process(f"decoder={args.decoder}", f"serve.max_sessions={max(args.sessions)}",
                                f"serve.ping_interval_s={args.ping}") as url:
            for n in args.sessions:
                r = measure(url, n, args)
                o = r["outcomes"]
                endings = ", ".join(f"{k}: {v}" for k, v in sorted(r["endings"].items()))
                print(f"| {n} | {o['complete']} / {o['partial']} / {o['failed']} | {endings} | {r['wall_s']:.2f} | "
                      f"{r['audio_s']:.0f} | {r['err_p50']:.2f} | {r['err_p95']:.2f} | {r['units']} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
