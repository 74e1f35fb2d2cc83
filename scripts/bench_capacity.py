"""Capacity per device on the embedded model: for each decoder, with and without batching (of forwards, and of audio
encodings), the largest N sessions one device serves within the deadline criteria, and the ratio to AR's.

For each decoder, batching and batching of encodings (``--batch-encodings``: ``concurrency.batch_encodings``) it
searches N (``ticktock.tables.capacity.search_capacity``: N = 1, 2, 4, ... while the run passes, then bisection, up to
--limit): evaluating N replays the corpus with ``concurrency.sessions=N`` (modeled clock by default: a deterministic
simulation, so one run per N) into ``<out>/<decoder>-N<N>-b<0|1>`` (``-e1`` after it with batched encodings) and
judges its chunks.parquet (``verdict``: deadline misses <= 5% of chunks and the 95th-percentile response onset <= 500
ms). Then it prints one line per decoder and batching (the capacity, x AR and the N tried) and writes the capacity
table and figure from every run of the folder into ``<out>/tables``. Batching needs a cost profile with a batch
dimension, batched encodings one for encodings (the shipped profiles have both). Runs resume (rerun to continue; a
finished N is read back).

Run (about 30 minutes on 2 CPU cores with the defaults: 3 sessions per task, so that at least 30 onsets back each p95
onset (40 on the mini corpus), up to 16 sessions at once, every decoder with and without batching, each with and
without batched encodings)::

    python scripts/bench_capacity.py --out results/capacity
    python scripts/bench_capacity.py --decoders ar,speclisten --batching false --batch-encodings false --limit 8 clock=wall
    python scripts/bench_capacity.py --out results/capacity-published \
        clock.profile=configs/profiles/a100-8b-published-encoder.yaml

Against a running server (docs/endpoints.md), each N is a live run of ``concurrency.sessions=N`` sessions held at once;
the server's own decoder is measured (``--decoders`` only names the folders: one name per server)::

    python scripts/bench_capacity.py --model endpoint --decoders ar --batching false --limit 8 \
        model.url=ws://127.0.0.1:8099/v1/realtime
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import NamedTuple


from ticktock.corpus.arguments import whole_number
from ticktock.endpoints.run import is_endpoint, run_live
from ticktock.errors import ConfigError, user_errors
from ticktock.replay.config import build, check_run_options, compose_run, select_sessions
from ticktock.replay.runner import run
from ticktock.tables.build import FIGURE_TABLES
from ticktock.tables.capacity import (CapacitySearch, capacity_data, capacity_figure, capacity_ratio, capacity_table,
                                      run_verdict, search_capacity)
from ticktock.tables.load import load_results
from ticktock.tables.render import write_tables

BATCHING = {"false": False, "true": True}


class Sharing(NamedTuple):
    """How the sessions share the device besides N: batched forwards (``concurrency.batching``) and batched audio
    encodings (``concurrency.batch_encodings``)."""

    batching: bool = False
    encodings: bool = False

    def words(self) -> str:
        """As printed: ``batching=true encodings=false``."""
        return f"batching={str(self.batching).lower():5} encodings={str(self.encodings).lower():5}"

    def folder(self, decoder: str, n: int) -> str:
        """The run folder of N: ``<decoder>-N<N>-b<0|1>``, ``-e1`` after it with batched encodings (the folders of
        runs made before the option existed keep their names)."""
        return f"{decoder}-N{n}-b{int(self.batching)}" + ("-e1" if self.encodings else "")


def overrides(n: int, sharing: Sharing, args) -> list[str]:
    return [f"concurrency.sessions={n}", f"concurrency.batching={str(sharing.batching).lower()}",
            *(["concurrency.batch_encodings=true"] if sharing.encodings else []), f"draft_policy={args.policy}",
            *args.overrides]


def passes(decoder: str, sharing: Sharing, args):
    """``passes(N)`` for ``search_capacity``: replay N sessions at once (resuming the run folder), judge its chunks and
    its run.json (a refused, failed or partial session fails N: ``run_verdict``)."""
    def judge(n: int) -> bool:
        cfg = compose_run(decoder, args.model, args.per_task or None, overrides(n, sharing, args))
        replay = run_live if is_endpoint(cfg) else run  # a live endpoint (--model endpoint) or the model in process
        folder = replay(cfg, Path(args.out) / sharing.folder(decoder, n)).run_dir
        result = run_verdict(folder)
        onset = f"{result.p95_onset_ms:.0f} ms over {result.onsets} onsets" if result.onsets else "none (no onsets)"
        unserved = f", {result.failed} failed, {result.partial} partial" if result.failed or result.partial else ""
        print(f"  {decoder} N={n} {sharing.words()}: miss {result.miss_rate:.1%}, p95 onset {onset}{unserved}: "
              f"{'pass' if result.passes else 'fail'}", flush=True)
        return result.passes
    return judge


def session_count(args) -> int:
    """How many sessions a run of these options replays (N beyond it replays the same sessions, all at once)."""
    cfg = compose_run("ar", args.model, args.per_task or None, overrides(1, Sharing(), args))
    check_run_options(cfg)  # a bad override: one line before any work
    return len(select_sessions(cfg, build(cfg.task)))


def refusal(decoder: str, sharing: Sharing, limit: int, args) -> str | None:
    """Why a decoder cannot be searched with this batching (a shared device it cannot use, a profile without a batch
    dimension), checked before any work; None when it can."""
    try:
        check_run_options(compose_run(decoder, args.model, args.per_task or None, overrides(limit, sharing, args)))
    except ConfigError as err:
        return str(err)
    return None


def tried_text(search: CapacitySearch) -> str:
    return " ".join(f"{n}{'+' if ok else '-'}" for n, ok in search.tried.items())


def capacity_line(search: CapacitySearch, ar, is_ar: bool) -> str:
    """A line's capacity (``>= N`` at the limit: nothing above it was tried), its ratio to AR's (a bound when one of
    them is a lower bound: ``capacity_ratio``) and the N tried."""
    ar_capacity = ar.capacity if isinstance(ar, CapacitySearch) else float("nan")
    ratio, kind = capacity_ratio(search.capacity, ar_capacity, search.at_limit and not is_ar,
                                 isinstance(ar, CapacitySearch) and ar.at_limit and not is_ar)
    capacity = f">= {search.capacity}" if search.at_limit and search.capacity else f"{search.capacity}"
    return f"capacity {capacity:>5}  x AR {kind + ' ' if kind else ''}{ratio:.2f}  tried {tried_text(search)}"


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="results/capacity")
    parser.add_argument("--model", default="embedded")
    parser.add_argument("--per-task", type=whole_number(0), default=3,
                        help="sessions per task type (0: all; 3 gives the p95 onset at least 30 onsets)")
    parser.add_argument("--decoders", default="ar,speclisten,speclisten_stream", help="AR first: the ratios are to it")
    parser.add_argument("--batching", default="false,true", help="false, true or both (concurrency.batching)")
    parser.add_argument("--batch-encodings", default="false,true",
                        help="false, true or both (concurrency.batch_encodings: batched audio encodings)")
    parser.add_argument("--limit", type=whole_number(1, 1024), default=16, help="the largest N tried")
    parser.add_argument("--policy", default="expected_savings", help="the draft policy (configs/draft_policy/)")
    parser.add_argument("overrides", nargs="*", help="run config overrides, e.g. clock=wall")
    args = parser.parse_args(argv)
    for option, value in (("--batching", args.batching), ("--batch-encodings", args.batch_encodings)):
        if any(b not in BATCHING for b in value.split(",")):
            parser.error(f"argument {option}: expected false, true or false,true, got {value!r}")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    decoders = [d for d in args.decoders.split(",") if d]
    limit = min(args.limit, session_count(args))
    if limit < args.limit:
        print(f"--limit {args.limit} is above the {limit} sessions a run replays: N up to {limit} (more sessions at "
              "once than the run has cannot be measured; --per-task 0 replays them all)")
    lines = [(decoder, Sharing(BATCHING[b], BATCHING[e])) for b in args.batching.split(",")
             for e in args.batch_encodings.split(",") for decoder in decoders]
    found: dict[tuple[str, Sharing], CapacitySearch | str] = {}
    for decoder, sharing in lines:  # every line checked first: a refused one is said, the others still run
        why = refusal(decoder, sharing, max(limit, 2), args)
        if why:
            found[decoder, sharing] = f"refused: {why}"
            print(f"{decoder} {sharing.words()}: {found[decoder, sharing]}")
    for decoder, sharing in lines:
        if (decoder, sharing) not in found:
            found[decoder, sharing] = search_capacity(passes(decoder, sharing, args), limit)
    for (decoder, sharing), search in found.items():
        head = f"{decoder:18} {sharing.words()}"
        if isinstance(search, str):
            print(f"{head} {search}")
            continue
        print(f"{head} {capacity_line(search, found.get(('ar', sharing)), decoder == 'ar')}")
    write_capacity(Path(args.out))
    return 0


def write_capacity(out: Path) -> None:
    """The capacity table (md, csv) and figure of every run in ``out``, into ``out/tables``."""
    results = load_results([str(out)])
    data = capacity_data(results)
    tables = out / "tables"
    tables.mkdir(parents=True, exist_ok=True)
    written = write_tables([capacity_table(results, data=data)], tables, ("md", "csv"))
    figure = capacity_figure(data, tables / FIGURE_TABLES["capacity"])
    print("written: " + ", ".join(str(p) for p in [*written, *([figure] if figure else [])]))


if __name__ == "__main__":
    with user_errors(prog="bench_capacity"):
        raise SystemExit(main())
