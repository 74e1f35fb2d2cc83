"""vLLM-Omni's real duplex server beside ``ticktock serve``, serving the same MiniCPM-o 4.5 miniature on this CPU.

Both servers load the checkpoint ``scripts/make_miniature.py --model minicpmo45`` writes (random weights): vLLM-Omni
0.30.0 through the project's peer script (``scripts/peers/vllm_omni.py serve``: its own venv, our CPU platform
plugin, ``duplex_session.max_sessions`` = the largest N tried), ``ticktock serve model=minicpmo45 decoder=ar`` in a
process of its own (``threads=1``). The client is the live run's (``ticktock.endpoints.client.hold_session``), the same
for both: N sessions of the mini corpus's ``fdb_v3`` task at once, ``--units`` units each, text output, with
``extra_body.force_listen_count`` (vLLM-Omni's MiniCPM-o 4.5 decides nothing with random weights unless listening is
forced; ``ticktock serve`` ignores the key and decides every unit with its model, so it does more work per unit: its
random model speaks text units too).

Printed, per server (wall clock, this CPU, loopback, miniature with random weights):

1. ``--runs`` runs of ``--sessions`` sessions at once, the servers alternating (A B, then B A, ...): per-unit response
   time p50 and p95 (a decision's arrival minus the end of its unit's audio, on the client's clock), deadline misses
   (a response past the next unit's 1000 ms), sessions that did not finish, and the response time minus the
   server's own measure of the unit where it reports one: ``ticktock serve``'s ``ticktock.post_audio_ms`` (from the
   unit's last sample arriving to its decision: what is left is the serving path and the client), vLLM-Omni's
   Thinker-stage ``vllm_ttft_ms`` (from the unit's step reaching the stage to its first token: what is left also
   holds vLLM-Omni's orchestration between its API server and the stage). The units each server listened
   through are shown apart, by their post-audio latency (the response time less the lag carried from the unit
   before): there both servers do alike work (the unit's prefill and one decision), where a speak unit of
   ``ticktock serve``'s random model also generates its text.
2. Capacity: the most sessions held at once by the criteria of docs/concurrency.md (every session finished, misses
   at or below 5% of units; the onset criterion needs spoken replies, which forced listening never gives), N = 1,
   2, ... up to ``--max-sessions``, one run each, stopping at the first N that fails.
3. Each server's processes: their memory (RSS) and their CPU use while idle (no session).

Run (about 10 minutes with the defaults; vLLM-Omni's environment is built first if missing)::

    python scripts/bench_vllm_omni.py --out results/bench_vllm_omni
"""

from __future__ import annotations

import argparse
import asyncio
import os
import selectors
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

from ticktock.corpus.arguments import whole_number
from ticktock.errors import user_errors

ROOT = Path(__file__).resolve().parents[1]
PEER = ROOT / "scripts" / "peers" / "vllm_omni.py"


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="bench_vllm_omni", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="results/bench_vllm_omni", help="the checkpoint and the servers' logs")
    parser.add_argument("--runs", type=whole_number(1, 20), default=3, help="runs of part 1 (default 3)")
    parser.add_argument("--sessions", type=whole_number(1, 8), default=2, help="part 1's sessions at once (2)")
    parser.add_argument("--units", type=whole_number(2, 60), default=8, help="units of each session (default 8)")
    parser.add_argument("--max-sessions", type=whole_number(1, 8), default=4,
                        help="the largest N of part 2, and vLLM-Omni's max_sessions (default 4)")
    return parser.parse_args(argv)


class Served:
    """A server in a process group of its own, started by ``command``; ready once a line of its output holds
    ``ws://``: its URL. Leaving the ``with`` stops the group (SIGINT, as Ctrl-C, then SIGKILL)."""

    def __init__(self, name: str, command: list[str], ready_s: float = 900.0):
        self.name, self.command, self.ready_s = name, command, ready_s

    def __enter__(self) -> Served:
        self.process = subprocess.Popen(self.command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                        text=True, start_new_session=True)
        watch = selectors.DefaultSelector()
        watch.register(self.process.stdout, selectors.EVENT_READ)
        deadline = time.monotonic() + self.ready_s
        while time.monotonic() < deadline and watch.select(timeout=max(0.0, deadline - time.monotonic())):
            line = self.process.stdout.readline()
            if not line:
                break
            url = next((word for word in line.split() if word.startswith("ws://")), None)
            if url:
                self.url = url.split("?")[0]
                return self
        self.stop()
        raise SystemExit(f"bench_vllm_omni: {self.name} did not start (its last output: {line.strip()!r})")

    def pids(self) -> list[int]:
        """Every live process the server started: its descendants, and every process in their sessions (vLLM-Omni's
        server runs in a session of its own, where its stage processes may be reparented)."""
        table = {}
        for entry in Path("/proc").iterdir():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if entry.name.isdigit() and fields[0] != "Z":
                table[int(entry.name)] = (int(fields[1]), int(fields[3]))  # parent, session
        ours, grew = {self.process.pid}, True
        while grew:
            more = {pid for pid, (parent, _) in table.items() if parent in ours} - ours
            grew, ours = bool(more), ours | more
        sessions = {table[pid][1] for pid in ours if pid in table} - {os.getsid(0)}
        return sorted(ours | {pid for pid, (_, session) in table.items() if session in sessions})

    def rss_gib(self) -> float:
        total = 0
        for pid in self.pids():
            try:
                total += int((Path(f"/proc/{pid}/statm")).read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")
            except (OSError, IndexError):
                pass
        return total / 2 ** 30

    def cpu_s(self) -> float:
        """CPU seconds its processes have used so far (user + system)."""
        ticks = 0
        for pid in self.pids():
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                ticks += int(fields[11]) + int(fields[12])
            except (OSError, IndexError):
                pass
        return ticks / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGINT)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=30)

    def __exit__(self, *exc) -> None:
        self.stop()


def checkpoint(out: Path) -> Path:
    """The miniature both servers load, written once into ``out``."""
    folder = out / "checkpoint"
    if not (folder / "config.json").is_file():
        subprocess.run([sys.executable, str(ROOT / "scripts" / "make_miniature.py"), "--model", "minicpmo45",
                        "--out", str(folder)], check=True, cwd=ROOT)
    return folder


def sessions(count: int) -> list:
    from ticktock.replay.config import build, compose_run, select_sessions

    cfg = compose_run("ar", "embedded", None, ["task.tasks=[fdb_v3]", f"limit.sessions={count}"])
    return select_sessions(cfg, build(cfg.task))


async def hold_many(url: str, chosen: list, units: int):
    """Every session held at once, text output, listening forced: their records."""
    from ticktock.endpoints.client import hold_session
    from ticktock.endpoints.endpoint import Endpoint, EndpointError
    from ticktock.endpoints.vllm_omni_duplex import VllmOmniDuplex
    from ticktock.sessions.audio import load_audio

    endpoint = Endpoint(url=url, modalities=("text",), extra_body={"force_listen_count": units + 2},
                        unit_timeout_s=20.0, capacity_wait_s=5.0)

    async def one(session):
        try:
            return await hold_session(endpoint, VllmOmniDuplex(), session, load_audio(session.audio_path), units)
        except EndpointError as err:
            return str(err)

    return await asyncio.gather(*(one(s) for s in chosen))


def figures(records: list) -> dict:
    """Per-unit response times, misses, unfinished sessions and the client-minus-server error over ``records``."""
    from ticktock.endpoints.measure import measure_units
    from ticktock.wire import UnitDecision

    responses, misses, errors, unfinished, listens = [], 0, [], 0, []
    for record in records:
        if isinstance(record, str) or record.failure is not None:
            unfinished += 1
            if isinstance(record, str):
                continue
        units = measure_units(record, per_unit=True)[: record.decided]
        server = [s.event.server_ms if s.event.server_ms is not None else getattr(s.event, "stage_ttft_ms", None)
                  for s in record.events if isinstance(s.event, UnitDecision)]
        for unit, server_ms in zip(units, server + [None] * len(units)):
            if unit.response_ms is None:
                continue
            responses.append(unit.response_ms)
            misses += bool(unit.missed)
            if unit.kind == "listen" and unit.post_audio_ms is not None:
                listens.append(unit.post_audio_ms)
            if server_ms is not None:
                errors.append(unit.response_ms - server_ms)
    return {"responses": responses, "misses": misses, "errors": errors, "unfinished": unfinished,
            "sessions": len(records), "listens": listens}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def show(name: str, f: dict) -> str:
    units = len(f["responses"])
    error = (f"{percentile(f['errors'], 0.5):.1f} / {percentile(f['errors'], 0.95):.1f}" if f["errors"]
             else "not reported by the server")
    return (f"| {name} | {units} | {percentile(f['responses'], 0.5):.1f} | {percentile(f['responses'], 0.95):.1f} | "
            f"{100 * f['misses'] / units if units else float('nan'):.1f}% | {f['unfinished']} of {f['sessions']} | "
            f"{len(f['listens'])}: {percentile(f['listens'], 0.5):.1f} / {percentile(f['listens'], 0.95):.1f} | "
            f"{error} |")


def capacity(server: Served, units: int, most: int) -> tuple[int, list[str]]:
    """The most sessions held within the criteria, N = 1, 2, ... (stopping at the first that fails), and what each N
    gave."""
    held, notes = 0, []
    for n in range(1, most + 1):
        f = figures(asyncio.run(hold_many(server.url, sessions(n), units)))
        rate = f["misses"] / max(1, len(f["responses"]))
        ok = f["unfinished"] == 0 and rate <= 0.05
        notes.append(f"N={n}: {'held' if ok else 'not held'} (misses {100 * rate:.1f}%, unfinished {f['unfinished']})")
        if not ok:
            break
        held = n
    return held, notes


def main(argv=None) -> int:
    args = parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with user_errors():
        folder = checkpoint(out)
        vllm = Served("vLLM-Omni", [sys.executable, str(PEER), "serve", "--checkpoint", str(folder), "--max-sessions",
                                    str(args.max_sessions), "--log", str((out / "vllm-omni.log").resolve())])
        ours = Served("ticktock serve", [sys.executable, "-m", "ticktock.serve", "model=minicpmo45",
                                         f"model.path={folder.resolve()}", "decoder=ar", "threads=1", "serve.port=0",
                                         f"serve.max_sessions={args.max_sessions}"])
        print(f"vLLM-Omni 0.30.0 (its scheduler, AR, listening forced) and ticktock serve (decoder=ar) on the same "
              f"MiniCPM-o 4.5 miniature ({folder}); wall clock, this CPU ({os.cpu_count()} cores), loopback, random "
              f"weights; {args.sessions} sessions at once, {args.units} units each, text output", flush=True)
        with vllm, ours:
            idle = {}
            for server in (vllm, ours):
                before = server.cpu_s()
                time.sleep(5.0)
                idle[server.name] = (server.cpu_s() - before) / 5.0
            per_server = {vllm.name: [], ours.name: []}
            for run in range(args.runs):
                for server in ((vllm, ours) if run % 2 == 0 else (ours, vllm)):
                    per_server[server.name] += asyncio.run(hold_many(server.url, sessions(args.sessions),
                                                                     args.units))
            print("\n| server | units | response p50 ms | p95 ms | misses | unfinished | listen units: post-audio p50 "
                  "/ p95 ms | client - server p50 / p95 ms |\n|---|---|---|---|---|---|---|---|")
            for server in (vllm, ours):
                print(show(server.name, figures(per_server[server.name])), flush=True)
            print("\n| server | sessions held (capacity) | by N |\n|---|---|---|")
            for server in (vllm, ours):
                held, notes = capacity(server, args.units, args.max_sessions)
                print(f"| {server.name} | {held} | {'; '.join(notes)} |", flush=True)
            print("\n| server | processes | RSS GiB | CPU while idle (cores) |\n|---|---|---|---|")
            for server in (vllm, ours):
                print(f"| {server.name} | {len(server.pids())} | {server.rss_gib():.1f} | {idle[server.name]:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
