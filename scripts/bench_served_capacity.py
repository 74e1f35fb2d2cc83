"""Served capacity on this machine: ``ticktock serve`` holding N live sessions at once, per decoder, with and without
batching, against AR served the same way; and the served speak latency at N = 1, 4, 8, 12.

For each decoder (``--decoders``, AR first) and sharing (``--batching``: ``false`` serves with
``concurrency.batching=false concurrency.batch_encodings=false``, ``true`` with both true), the script starts
``python -m ticktock.serve decoder=D ...`` in a process of its own (one thread, loopback) and replays the task into
it with TickTock's live client (``python -m ticktock.run model=endpoint``), which streams every session in real time:

1. **Capacity.** For each N of ``--ns`` in order, every session of the task (``task=fdb_v3`` by default: 13 sessions,
   13 onsets behind each p95, so the p95 is nearly the largest onset; ``task=ticktock_mini
   'task.tasks=[fdb_v3,llama_questions,trivia_qa]'``: 39 sessions, 65 onsets) is replayed N at a time
   (``concurrency.sessions=N``), and the run is judged by
   the capacity criteria (``ticktock.tables.capacity.run_verdict``: deadline misses <= 5% of units and the
   95th-percentile response onset <= 500 ms, on the client's clock; a failed or partial session fails N). The scan
   stops at the first N that fails: the capacity is the last N that passed (``< first`` when the first fails).
2. **Speak latency.** For each N of ``--speak-ns``, the task's first N sessions at once (``limit.sessions=N``): the
   median post-audio latency of the units that speak.

Then one line per decoder and sharing: the capacity, x AR (AR served with the same sharing), the N tried (``+``
passed, ``-`` failed), and the speak medians with their speedup over AR's at each N. Every figure is wall time on
this machine (the server's CPU and loopback), embedded model unless overrides say otherwise. Each run is a run folder
under ``--out`` (``<decoder>-b<0|1>-N<N>`` and ``...-speak-N<N>``), so a rerun on the same ``--port`` resumes and a
finished N is read back.

Run (about 40 minutes on 2 CPU cores with the defaults; alone: another process on the machine slows the server)::

    python scripts/bench_served_capacity.py --out results/served-capacity
    python scripts/bench_served_capacity.py --decoders ar,speclisten_stream --batching false --ns 6,8,10 --speak-ns 4
    python scripts/bench_served_capacity.py --decoders ar,speclisten_stream --batching false --ns 7,8,9,10,12,13,14 \
        --speak-ns 8 task=ticktock_mini 'task.tasks=[fdb_v3,llama_questions,trivia_qa]'   # 65 onsets per p95
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from ticktock.corpus.arguments import whole_number
from ticktock.errors import user_errors

SHARING = {"false": False, "true": True}


def numbers(text: str) -> list[int]:
    """A comma-separated list of whole numbers from 1 to 64, none twice, e.g. ``4,6,8``."""
    values = []
    for part in text.split(","):
        try:
            value = whole_number(1, 64)(part)
        except argparse.ArgumentTypeError:
            raise argparse.ArgumentTypeError(f"expected whole numbers from 1 to 64, comma-separated, got {text!r} "
                                             f"({part!r} is not one)") from None
        if value in values:
            raise argparse.ArgumentTypeError(f"N={value} given twice in {text!r}")
        values.append(value)
    return values


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="bench_served_capacity", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="results/served-capacity")
    parser.add_argument("--decoders", default="ar,speclisten,speclisten_stream",
                        help="the ratios are to AR's line with the same batching (none without it)")
    parser.add_argument("--port", type=whole_number(1024, 65535), default=8199,
                        help="the server's port (a run folder records it: a rerun resumes on the same port)")
    parser.add_argument("--batching", default="false,true",
                        help="false, true or both: concurrency.batching and concurrency.batch_encodings of the server")
    parser.add_argument("--ns", type=numbers, default=numbers("4,6,7,8,9,10,11,12,13"),
                        help="the N of the capacity scan, in order (it stops at the first N that fails)")
    parser.add_argument("--speak-ns", type=numbers, default=numbers("1,4,8,12"),
                        help="the N of the speak latencies (the task's first N sessions at once)")
    parser.add_argument("--policy", default="expected_savings", help="the server's draft policy")
    parser.add_argument("overrides", nargs="*", help="live run overrides (default task=fdb_v3), e.g. task=llama_questions")
    args = parser.parse_args(argv)
    if any(b not in SHARING for b in args.batching.split(",")):
        parser.error(f"argument --batching: expected false, true or false,true, got {args.batching!r}")
    return args


def run_overrides(url: str, args, *extra: str) -> list[str]:
    """The live run's overrides: the user's (``task=fdb_v3`` unless they name a task), then the script's own N (which
    replace any the user gave for the same key)."""
    task = [] if any(o.startswith("task=") for o in args.overrides) else ["task=fdb_v3"]
    own = {o.split("=", 1)[0] for o in extra}
    return [f"model.url={url}", *task, "progress=false", *[o for o in args.overrides if o.split("=", 1)[0] not in own],
            *extra]


def live_run(url: str, folder: Path, args, *extra: str) -> Path:
    """One live run into ``folder`` (resumed when it exists): the run folder."""
    from ticktock.endpoints.run import run_live
    from ticktock.replay.config import compose_run

    return run_live(compose_run("ar", "endpoint", None, run_overrides(url, args, *extra)), folder).run_dir


def speak_median_ms(folder: Path) -> float:
    """The median post-audio latency of the run's units that speak (nan when none speaks)."""
    import pyarrow.parquet as pq

    rows = pq.read_table(folder / "chunks.parquet", columns=["kind", "post_audio_ms"]).to_pylist()
    speaking = [row["post_audio_ms"] for row in rows if row["kind"] == "speak" and row["post_audio_ms"] is not None]
    return statistics.median(speaking) if speaking else float("nan")


def served_line(decoder: str, batching: bool, args) -> dict:
    """Serve ``decoder`` with this sharing and measure its capacity scan and speak medians."""
    from ticktock.serve.__main__ import serving_in_process
    from ticktock.tables.capacity import run_verdict

    flag = str(batching).lower()
    server = [f"decoder={decoder}", f"concurrency.batching={flag}", f"concurrency.batch_encodings={flag}",
              f"draft_policy={args.policy}", f"serve.max_sessions={max(args.ns + args.speak_ns)}",
              f"serve.port={args.port}"]
    name = f"{decoder}-b{int(batching)}"
    tried, capacity, speak = {}, 0, {}
    with serving_in_process(*server) as url:
        for n in args.ns:
            verdict = run_verdict(live_run(url, Path(args.out) / f"{name}-N{n}", args, f"concurrency.sessions={n}"))
            tried[n] = verdict.passes
            print(f"  {name} N={n}: miss {verdict.miss_rate:.1%}, p95 onset {verdict.p95_onset_ms:.0f} ms over "
                  f"{verdict.onsets} onsets: {'pass' if verdict.passes else 'fail'}", flush=True)
            if not verdict.passes:
                break
            capacity = n
        for n in args.speak_ns:
            folder = live_run(url, Path(args.out) / f"{name}-speak-N{n}", args, f"limit.sessions={n}",
                              f"concurrency.sessions={n}")
            speak[n] = speak_median_ms(folder)
            print(f"  {name} speak N={n}: median {speak[n]:.0f} ms", flush=True)
    return {"capacity": capacity, "tried": tried, "speak": speak}


def line_text(decoder: str, batching: bool, found: dict, ar: dict | None, first_n: int) -> str:
    capacity = found["capacity"]
    shown = f"< {first_n}" if capacity == 0 else str(capacity)
    ratio = f"{capacity / ar['capacity']:.2f}" if ar and ar["capacity"] and capacity else "-"
    tried = " ".join(f"{n}{'+' if ok else '-'}" for n, ok in found["tried"].items())
    speaks = "  ".join(f"N={n} {ms:.0f} ms" + (f" ({ar['speak'][n] / ms:.2f}x AR)" if ar and n in ar["speak"] else "")
                       for n, ms in found["speak"].items())
    return f"{decoder:18} batching={str(batching).lower():5} capacity {shown:>4}  x AR {ratio:>5}  tried {tried}  " \
           f"speak {speaks}"


def main(argv=None) -> int:
    args = parse_args(argv)
    from ticktock.replay.config import check_run_options, compose_run

    # a bad override or decoder: one line before anything is served
    check_run_options(compose_run("ar", "endpoint", None, run_overrides("ws://127.0.0.1:1/v1/realtime", args)))
    for decoder in args.decoders.split(","):
        compose_run(decoder, "embedded", None, [])
    found = {}
    for flag in args.batching.split(","):
        for decoder in args.decoders.split(","):
            found[decoder, SHARING[flag]] = served_line(decoder, SHARING[flag], args)
    print("served capacity (wall clock, this machine's CPU, loopback; misses <= 5%, p95 onset <= 500 ms):")
    for (decoder, batching), line in found.items():
        print(line_text(decoder, batching, line, found.get(("ar", batching)), args.ns[0]))
    return 0


if __name__ == "__main__":
    with user_errors(prog="bench_served_capacity"):
        raise SystemExit(main())
