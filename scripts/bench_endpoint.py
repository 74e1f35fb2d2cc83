"""Live endpoints measured on this machine: TickTock-Bench replayed live into ``ticktock serve`` (a server process of
its own, loopback) against the same sessions replayed in process, the capacity of the server, and its voice.

Three parts, each printed as it ends (every figure is wall time on this CPU, loopback, the embedded model):

1. ``texts``: for each decoder (AR and Speculative Listening on streaming audio by default) and each of ``--runs``
   runs (the decoders alternate, A B A B, so a drift of the machine's speed reaches both), ``--per-task`` sessions of
   every task type of the mini corpus are replayed live (``model=endpoint``) into ``ticktock serve decoder=D
   threads=1`` and in process on the wall clock (``threads=1``). It prints: units whose decision, words or tool calls
   differ (live vs in process), the speak-unit speedup of each decoder over AR (mean response time of the units that
   speak in process, the same units live, per run, then the median over runs) live and in process and their ratio,
   and the median over units of the live response time minus the in-process one (the same unit paired).
2. ``capacity``: for AR and Speculative Listening (streaming), the most sessions at once the server keeps within the
   deadline criteria (``ticktock.tables.capacity``: misses <= 5% of units, 95th-percentile onset <= 500 ms), searched
   by doubling then bisecting N (``search_capacity``) with live runs of ``concurrency.sessions=N``, and the ratio.
3. ``speech``: with ``talker=espeak`` on the server, AR against ``speclisten_speak``: mean first audio, stalls and
   stall time per minute of speech, played with no jitter buffer and with ``--delay`` ms of one
   (``playback_delay_ms``).

Every run folder is kept under ``--out`` (a rerun resumes them; delete the folder for new figures), and the tables
are written from them into ``<out>/tables``.

Run (about 35 minutes on 2 CPU cores with the defaults)::

    python scripts/bench_endpoint.py --out results/bench_endpoint
    python scripts/bench_endpoint.py --parts texts --runs 1 --per-task 1 --chunks 6
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq

from ticktock.corpus.arguments import whole_number
from ticktock.errors import user_errors
from ticktock.serve.__main__ import serving_in_process

PARTS = ("texts", "capacity", "speech")


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="bench_endpoint", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="results/bench_endpoint", help="run folders and tables (kept; resumed)")
    parser.add_argument("--parts", default=",".join(PARTS), help=f"which parts: {', '.join(PARTS)} (comma-separated)")
    parser.add_argument("--runs", type=whole_number(1, 20), default=3, help="runs of part 1 (default 3)")
    parser.add_argument("--per-task", type=whole_number(1, 13), default=2, help="sessions per task type (default 2)")
    parser.add_argument("--chunks", type=whole_number(1, 600), default=10, help="units of each session (default 10)")
    parser.add_argument("--decoders", default="ar,speclisten_stream", help="part 1 and 2's decoders, AR first")
    parser.add_argument("--limit", type=whole_number(1, 64), default=16, help="the largest N part 2 tries")
    parser.add_argument("--capacity-per-task", type=whole_number(1, 13), default=1,
                        help="part 2's sessions per task type (default 1: 8 sessions, N up to 8)")
    parser.add_argument("--delay", type=whole_number(1, 10_000), default=1500,
                        help="part 3's jitter buffer, ms (default 1500: eSpeak's first pieces hold about a second)")
    args = parser.parse_args(argv)
    args.parts = [p for p in args.parts.split(",") if p]
    wrong = [p for p in args.parts if p not in PARTS]
    if wrong:
        parser.error(f"argument --parts: unknown part {wrong[0]!r} (parts: {', '.join(PARTS)})")
    args.decoders = [d for d in args.decoders.split(",") if d]
    return args


def free_port() -> int:
    """A loopback port free now: every server of the benchmark listens on it, one after another, so that their live
    runs share one endpoint identity (``model@host:port``) and the tables compare their decoders."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


PORT = free_port()


def server(*overrides: str):
    """``python -m ticktock.serve <overrides>`` in a process of its own on ``PORT`` (loopback); yields its URL."""
    return serving_in_process(*overrides, f"serve.port={PORT}", "serve.max_sessions=64")


def sessions_overrides(args, per_task: int | None = None) -> list[str]:
    return [f"limit.per_task={per_task or args.per_task}", f"limit.chunks={args.chunks}", "threads=1"]


def live(folder: Path, url: str, *overrides: str) -> Path:
    from ticktock.endpoints.run import run_live
    from ticktock.replay.config import compose_run

    run_live(compose_run("ar", "endpoint", None, [f"model.url={url}", *overrides]), folder)
    return folder


def in_process(folder: Path, decoder: str, *overrides: str) -> Path:
    from ticktock.replay.config import compose_run
    from ticktock.replay.runner import run

    run(compose_run(decoder, "embedded", None, ["clock=wall", *overrides]), folder)
    return folder


def chunks(folder: Path):
    frame = pq.read_table(folder / "chunks.parquet").to_pandas()
    return frame.sort_values(["session_id", "chunk_index"]).set_index(["session_id", "chunk_index"])


def lexical(text: str) -> str:
    """A unit's words, as a listener hears them (the in-process rows keep the model's structural tokens and tool-call
    markup; a live unit's text is the words the server sent)."""
    text = re.sub(r"<tool_call>.*?</tool_call>", " ", text or "", flags=re.DOTALL)
    return " ".join(re.sub(r"<\|[^|]*\|>|<[^>]*>", " ", text).split())


def decision(kind: str) -> str:
    """The duplex contract's decision of a unit: listen, or speak (a backchannel and a tool call are speak decisions
    on the wire; ``ticktock serve`` also says which, ``ticktock.kind``)."""
    return "listen" if kind in ("listen", "other") else "speak"


def calls(text: str) -> list:
    return json.loads(text) if text else []


def differing_units(both) -> tuple[int, int]:
    """Paired units whose decision, words or tool calls differ; and those whose kind differs at all."""
    differ = exact = 0
    for row in both.itertuples():
        same = (decision(row.kind_live) == decision(row.kind_replayed)
                and lexical(row.output_text_live) == lexical(row.output_text_replayed)
                and calls(row.tool_calls_json_live) == calls(row.tool_calls_json_replayed))
        differ += not same
        exact += row.kind_live != row.kind_replayed
    return differ, exact


# ------------------------------------------------------------------------------------------------- part 1


def part_texts(args, out: Path) -> None:
    speak_means: dict[tuple[str, str], list[float]] = {}
    deltas: dict[str, list[float]] = {d: [] for d in args.decoders}
    differing, kinds_differing, units = 0, 0, 0
    for run in range(args.runs):
        for decoder in args.decoders:
            with server(f"decoder={decoder}") as url:
                live_chunks = chunks(live(out / "texts" / f"live-{decoder}-r{run}", url, *sessions_overrides(args)))
            replayed = chunks(in_process(out / "texts" / f"replayed-{decoder}-r{run}", decoder,
                                         *sessions_overrides(args)))
            both = live_chunks.add_suffix("_live").join(replayed.add_suffix("_replayed"), how="inner")
            units += len(both)
            differ, kinds = differing_units(both)
            differing, kinds_differing = differing + differ, kinds_differing + kinds
            deltas[decoder] += list(both["response_ms_live"] - both["response_ms_replayed"])
            speak = both[both["kind_replayed"] == "speak"]  # the same units on both sides
            for where, column in (("live", "response_ms_live"), ("in process", "response_ms_replayed")):
                speak_means.setdefault((decoder, where), []).append(float(speak[column].mean()))
            print(f"run {run + 1}/{args.runs} {decoder}: {len(both)} units paired", flush=True)
    print(f"\nPart 1: live vs in process (wall clock, loopback, this CPU, embedded model; {args.per_task} sessions per "
          f"task x {args.chunks} units, {args.runs} runs)")
    print(f"  units whose decision, words or tool calls differ: {differing} of {units} (kind differs: "
          f"{kinds_differing}: backchannels are speak decisions on the wire)")
    base = args.decoders[0]
    for decoder in args.decoders:
        live_ms = statistics.median(speak_means[decoder, "live"])
        local_ms = statistics.median(speak_means[decoder, "in process"])
        print(f"  {decoder:<20} speak response live {live_ms:7.1f} ms, in process {local_ms:7.1f} ms; live minus in "
              f"process per unit: median {statistics.median(deltas[decoder]):5.1f} ms")
    for decoder in args.decoders[1:]:
        live_x = statistics.median(speak_means[base, "live"]) / statistics.median(speak_means[decoder, "live"])
        local_x = (statistics.median(speak_means[base, "in process"])
                   / statistics.median(speak_means[decoder, "in process"]))
        print(f"  speak speedup of {decoder} over {base}: live {live_x:.2f}x, in process {local_x:.2f}x "
              f"(live / in process {live_x / local_x:.3f})")


# ------------------------------------------------------------------------------------------------- part 2


def part_capacity(args, out: Path) -> None:
    from ticktock.tables.capacity import capacity_ratio, run_verdict, search_capacity

    found = {}
    for decoder in args.decoders:
        with server(f"decoder={decoder}") as url:
            def passes(n: int) -> bool:
                folder = live(out / "capacity" / f"{decoder}-N{n}", url,
                              *sessions_overrides(args, args.capacity_per_task), f"concurrency.sessions={n}")
                result = run_verdict(folder)  # a refused, failed or partial session fails its N
                unserved = f", {result.failed} failed, {result.partial} partial" if result.failed or result.partial else ""
                print(f"  {decoder} N={n}: miss {result.miss_rate:.1%}, p95 onset {result.p95_onset_ms:.0f} ms"
                      f"{unserved}: {'pass' if result.passes else 'fail'}", flush=True)
                return result.passes
            found[decoder] = search_capacity(passes, min(args.limit, 8 * args.capacity_per_task))
    print("\nPart 2: capacity of ticktock serve (live, wall clock, loopback, this CPU, embedded model, threads=1; "
          "misses <= 5% of units and p95 onset <= 500 ms)")
    base = found[args.decoders[0]]
    for decoder, search in found.items():
        ratio, kind = capacity_ratio(search.capacity, base.capacity, search.at_limit, base.at_limit)
        bound = ">= " if search.at_limit else ""
        print(f"  {decoder:<20} capacity {bound}{search.capacity}  x {args.decoders[0]} {kind} {ratio:.2f}  tried "
              + " ".join(f"{n}{'+' if ok else '-'}" for n, ok in search.tried.items()))


# ------------------------------------------------------------------------------------------------- part 3


def part_speech(args, out: Path) -> None:
    rows = []
    for decoder in ("ar", "speclisten_speak"):
        with server(f"decoder={decoder}", "talker=espeak") as url:
            for delay in (0, args.delay):
                folder = live(out / "speech" / f"{decoder}-delay{delay}", url, *sessions_overrides(args),
                              "task.tasks=[llama_questions,web_questions,trivia_qa,alpaca_eval]",
                              f"playback_delay_ms={delay}")
                sessions = pq.read_table(folder / "sessions.parquet").to_pandas()
                first = [ms for row in sessions["first_audio_latencies_ms"] if row is not None for ms in row]
                speech_s = float(sessions["assistant_speech_s"].fillna(0).sum())
                stalls = int(sessions["num_stalls"].fillna(0).sum())
                rows.append((decoder, delay, statistics.mean(first) if first else float("nan"), len(first), stalls,
                             float(sessions["total_stall_ms"].fillna(0).sum()), speech_s))
    print("\nPart 3: first audio and stalls, talker=espeak on the server (live, wall clock, loopback, this CPU)")
    print(f"  {'decoder':<18} {'buffer ms':>9} {'first audio ms':>14} {'replies':>7} {'stalls':>6} {'stall ms':>9} "
          f"{'stall ms / min':>14}")
    for decoder, delay, first, replies, stalls, stall_ms, speech_s in rows:
        per_min = 60.0 * stall_ms / speech_s if speech_s else float("nan")
        print(f"  {decoder:<18} {delay:>9} {first:>14.1f} {replies:>7} {stalls:>6} {stall_ms:>9.1f} {per_min:>14.1f}")


def write_tables(out: Path, parts: list[str]) -> None:
    """Each part's tables from its run folders, into ``<out>/tables/<part>`` (part 1: its first run's folders; its
    other runs repeat the same sessions, which the tables refuse to merge)."""
    from ticktock.tables.__main__ import main as tables

    folders = {"texts": sorted(str(p) for p in (out / "texts").glob("*-r0")), "capacity": [str(out / "capacity")],
               "speech": [str(out / "speech")]}
    for part in parts:
        tables([*folders[part], "--out", str(out / "tables" / part)])


def main(argv=None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    out = Path(args.out)
    began = time.monotonic()
    for part in args.parts:
        {"texts": part_texts, "capacity": part_capacity, "speech": part_speech}[part](args, out)
    write_tables(out, args.parts)
    print(f"\n(all parts: {(time.monotonic() - began) / 60:.1f} min)")
    return 0


if __name__ == "__main__":
    with user_errors(prog="bench_endpoint"):
        sys.exit(main())
