"""A live run: a task's sessions replayed into a running server, written as an ordinary run folder.

``python -m ticktock.run model=endpoint model.url=ws://HOST:PORT/v1/realtime task=fdb_v3`` comes here
(``is_endpoint``): the options are checked and the endpoint is asked once who it is (a session opened and closed:
``probe``; an endpoint that cannot be reached or refuses it stops the run here, exit 5, before any folder is
written), then the sessions are held live (``ticktock.endpoints.client``), N at once with ``concurrency.sessions=N``
(staggered as a replayed run's: ``ticktock.replay.concurrency.stagger_offset_ms``), and each completed one is
written as soon as it ends (``ticktock.endpoints.measure``) by the run writer of every run: resume, the folder's lock,
run.json's heartbeat and status work as for a replayed run. A session that fails (the server closes mid-session,
answers a unit twice, never answers, sends malformed JSON...) is one line on stderr and in run.json
``failed_sessions``; nothing of it is written, the other sessions go on, and the same command again replays it.

The run is labelled by the endpoint's identity, never by the config's names: the model as the server reports it
(``session.created``) at the host (``embedded@127.0.0.1:8099``), the decoder as ``ticktock serve`` reports it (else
``model.decoder``, else ``served``), and the clock ``live:<protocol>``, so the tables never merge a live run with an
in-process one. The URL's credentials are redacted in run.json; a token is recorded by its variable's name.

Example::

    cfg = compose_run("ar", "endpoint", per_task=1, overrides=["model.url=ws://127.0.0.1:8099/v1/realtime"])
    summary = run_live(cfg, Path("results/runs/live-ar"))
    print(summary.line())
"""

from __future__ import annotations

import asyncio
import itertools
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from statistics import median

from omegaconf import DictConfig, OmegaConf

from ticktock.endpoints.endpoint import Endpoint, EndpointOptionError
from ticktock.errors import SessionsUnfinished
from ticktock.endpoints.protocol import EndpointProtocol

CLOCK = "live"


def is_endpoint(cfg: DictConfig) -> bool:
    """Whether the run's model is a live endpoint (its ``_target_`` is ``Endpoint`` or a subclass; a target that cannot
    be imported is left to the run's own checks, which name it)."""
    from importlib import import_module

    module, _, name = str(cfg.model.get("_target_") if "model" in cfg else "").rpartition(".")
    try:
        target = getattr(import_module(module), name, None) if module else None
    except ImportError:
        return False
    return isinstance(target, type) and issubclass(target, Endpoint)


def build_endpoint(cfg: DictConfig) -> tuple[Endpoint, EndpointProtocol]:
    """The endpoint (its options checked) and its protocol; options that do not apply to a live run are refused."""
    from ticktock.replay.runner import build, build_checked

    endpoint = build(cfg.model)
    endpoint.check()
    protocol = build_checked(cfg.protocol, "protocol", EndpointProtocol)
    talker = (cfg.get("talker") or {}).get("_target_")
    if talker:
        raise EndpointOptionError(f"talker: {cfg.talker.name}: a live run hears the server's own speech; run it with "
                                  "talker=none (start the server with its talker, e.g. ticktock serve talker=espeak)")
    for key in ("batching", "batch_encodings"):
        if (cfg.get("concurrency") or {}).get(key):
            raise EndpointOptionError(f"concurrency.{key}: a live endpoint batches as its server does; leave it false")
    return endpoint, protocol


def run_live(cfg: DictConfig, run_dir: Path) -> "LiveRunSummary":
    """Replay every session of ``cfg.task`` into the endpoint, into ``run_dir`` (resuming completed sessions), holding
    the folder's lock as ``ticktock.replay.runner.run`` does."""
    from ticktock.replay.concurrency import ConcurrencySettings, check_sessions_replayed
    from ticktock.replay.runner import build, check_run_options, holding_lock, select_sessions, shard_sessions
    from ticktock.results.writable import check_writable

    endpoint, protocol = build_endpoint(cfg)
    check_run_options(cfg)
    check_writable(run_dir)
    task = build(cfg.task)
    sessions = select_sessions(cfg, task)  # a missing audio file: exit 3, before the endpoint is asked
    check_sessions_replayed(ConcurrencySettings.parse(cfg.get("concurrency")),  # N <= sessions: exit 2
                            len(shard_sessions(cfg, sessions, {})[0]))
    identity = asyncio.run(probe(endpoint, protocol))  # unreachable or refused: exit 5, before the folder is made
    return holding_lock(cfg, run_dir,
                        lambda: replay_live_run(cfg, run_dir, endpoint, protocol, identity, task, sessions))


@dataclass(frozen=True)
class EndpointIdentity:
    """Who the endpoint says it is: the model it reports, and ``ticktock serve``'s served model, decoder and talker
    (the talker, when the server says it, is the run's talker in the tables: replies spoken by eSpeak are another
    setup than text alone)."""

    model: str | None
    served_model: str | None
    served_decoder: str | None
    served_talker: str | None = None

    def labels(self, endpoint: Endpoint, protocol: EndpointProtocol) -> dict:
        """The run's model, decoder and clock labels (see the module docstring)."""
        model = self.model or self.served_model or "endpoint"
        return {"model": f"{model}@{endpoint.host}", "decoder": endpoint.decoder or self.served_decoder or "served",
                "clock": f"{CLOCK}:{protocol.name}", "talker": self.served_talker or "none"}


async def probe(endpoint: Endpoint, protocol: EndpointProtocol) -> EndpointIdentity:
    """Open one session and close it before any audio: who the endpoint is (``EndpointError`` when it cannot be
    reached or refuses the session)."""
    from ticktock.endpoints.client import LiveRecord, LiveSession, client_session, connect, opening
    from ticktock.endpoints.playback import LivePlayer

    async with client_session(endpoint) as http:
        live = LiveSession(endpoint, protocol, LiveRecord("probe", 0), None, LivePlayer())
        live.ws = await connect(http, endpoint, protocol)
        try:
            await opening(live, _Probe())
        finally:
            await live.ws.close()
    info = live.record.info
    return EndpointIdentity(info.model, info.served_model, info.served_decoder, info.served_talker)


class _Probe:
    """The session ``probe`` opens: no instructions, no tools."""

    session_id = "probe"
    system_prompt = None
    tools = ()


def live_identity(cfg: DictConfig, endpoint: Endpoint, protocol: EndpointProtocol, labels: dict) -> dict:
    """What makes two live runs the same run (resume only into the same): the endpoint as it reported itself, the
    protocol, the task, the limits, the concurrency and the playback delay."""
    plain = OmegaConf.to_container(cfg, resolve=True)
    return {
        "model": {"name": labels["model"], **endpoint.describe()},
        "decoder": {"name": labels["decoder"]},
        "clock": {"name": labels["clock"], "protocol": protocol.describe()},
        **({"talker": {"name": labels["talker"]}} if labels.get("talker", "none") != "none" else {}),
        "task": plain["task"],
        "chunks_limit": plain["limit"]["chunks"],
        "concurrency": plain.get("concurrency"),
        "seed": plain["seed"],
        **({"playback_delay_ms": plain["playback_delay_ms"]} if plain.get("playback_delay_ms") else {}),
    }


def recorded_config(cfg: DictConfig, endpoint: Endpoint, labels: dict) -> dict:
    """run.json's config: the run's, with the URL redacted and the model, decoder and clock named by ``labels`` (the
    tables read the names there)."""
    plain = OmegaConf.to_container(cfg, resolve=True)
    plain["model"] = {**plain["model"], "name": labels["model"], "url": endpoint.shown_url}
    plain["decoder"] = {"name": labels["decoder"]}
    plain["clock"] = {"name": labels["clock"]}
    plain["talker"] = {"name": labels.get("talker", "none")}
    return plain


def client_environment(endpoint: Endpoint, protocol: EndpointProtocol, identity: EndpointIdentity) -> dict:
    """The client machine and the endpoint, for run.json (no torch: a live run never loads a model)."""
    import platform
    from importlib.metadata import PackageNotFoundError, version

    from ticktock.replay.runner import _cpu_name, _git_sha

    versions = {}
    for package in ("ticktock", "aiohttp", "numpy", "pyarrow", "hydra-core"):
        try:
            versions[package] = version(package)
        except PackageNotFoundError:
            versions[package] = None
    return {"python": sys.version.split()[0], "platform": platform.platform(), "cpu": _cpu_name(), "cuda_device": None,
            "git_sha": _git_sha(), "versions": versions,
            "endpoint": {**endpoint.describe(), "protocol": protocol.describe(), "reported_model": identity.model,
                         "served_model": identity.served_model, "served_decoder": identity.served_decoder}}


def replay_live_run(cfg: DictConfig, run_dir: Path, endpoint: Endpoint, protocol: EndpointProtocol,
                    identity: EndpointIdentity, task, sessions: list) -> "LiveRunSummary":
    """The live run under the folder's lock: ``sessions`` of ``task`` (as ``run_live`` selected them) held and
    written (see the module docstring)."""
    from ticktock.replay.concurrency import ConcurrencySettings
    from ticktock.replay.runner import run_id_for, shard_sessions, sessions_to_replay
    from ticktock.results.liveness import Heartbeat, heartbeat
    from ticktock.results.schema import SCHEMA_VERSION
    from ticktock.results.writer import RunWriter

    settings = ConcurrencySettings.parse(cfg.get("concurrency"))
    labels = identity.labels(endpoint, protocol)
    ident = live_identity(cfg, endpoint, protocol, labels)
    sessions, shard = shard_sessions(cfg, sessions, ident)
    writer = RunWriter(run_dir, ident, overwrite=cfg.overwrite)
    labels = {"run_id": run_id_for(ident, run_dir), **labels}
    meta = {"run_id": labels["run_id"], "schema_version": SCHEMA_VERSION,
            "config": recorded_config(cfg, endpoint, labels),
            "clock": {"name": labels["clock"], "kind": "live", "protocol": protocol.describe(),
                      "per_unit": protocol.per_unit, "profile_sha256": None,
                      "profile_device": f"endpoint {endpoint.host}"},
            "environment": client_environment(endpoint, protocol, identity),
            "decoder": {"lossless": None, "name": labels["decoder"]}, "started": time.time(),
            "talker": {"name": labels["talker"], "engine": "the server's own", "charged": "measured live"}
            if labels["talker"] != "none" else None,
            "plugins": {}, "sessions_total": len(sessions), "shard": shard, "timing_noise": None}
    todo = sessions_to_replay(sessions, writer)
    beat = Heartbeat(lambda record: writer.write_run_json({**meta, "status": "running", "heartbeat": record}),
                     sessions_done=len(sessions) - len(todo))
    beat.beat(force=True)
    status, outcome = "interrupted", LiveOutcome()
    try:
        row_labels = {key: labels[key] for key in ("run_id", "model", "decoder", "clock")}  # every row's identity
        asyncio.run(hold_sessions(cfg, endpoint, protocol, task, todo, writer, row_labels, settings, beat, outcome))
        status = "complete"
    except Exception as err:
        status = f"failed: {type(err).__name__}: {err}"
        raise
    finally:
        counts = writer.consolidate()
        writer.write_run_json({**meta, "status": status, "finished": time.time(), "skipped_sessions": outcome.skipped,
                               "failed_sessions": outcome.failed, "partial_sessions": outcome.partial,
                               "session_endings": outcome.endings,
                               "send_lag": send_lag(run_dir / "chunks.parquet", endpoint.send_lag_bound_ms),
                               "row_counts": counts, "heartbeat": heartbeat(counts.get("sessions", 0))})
    return LiveRunSummary(run_dir, labels["run_id"], counts.get("sessions", 0), len(outcome.skipped),
                          len(outcome.failed), counts, live_stats(run_dir / "chunks.parquet"), labels["clock"],
                          protocol.per_unit, len(outcome.partial))


@dataclass
class LiveOutcome:
    """What a live run's sessions did beyond their rows: skipped (bad audio), failed (nothing decided: one line
    each), partial (ended early: the units decided before are written apart, ``RunWriter.write_partial``)."""

    skipped: list = None
    failed: list = None
    partial: list = None
    endings: dict = None  # how the sessions ended (``LiveRecord.ended_by``) -> how many

    def __post_init__(self):
        self.skipped, self.failed, self.partial, self.endings = [], [], [], {}


def send_lag(chunks_path: Path, bound_ms: float) -> dict:
    """run.json ``send_lag``, from every written unit (so a resumed run counts all of them): how late each unit's
    latest frame left the client (median, 99th percentile, max) and how many units had a frame later than
    ``model.send_lag_bound_ms`` (``late_units``: the client machine could not keep real time)."""
    import pyarrow.parquet as pq

    lags = []
    if chunks_path.is_file():
        lags = sorted(v for v in pq.read_table(chunks_path, columns=["send_lag_ms"]).column(0).to_pylist()
                      if v is not None)
    if not lags:
        return {"units": 0, "bound_ms": bound_ms, "late_units": 0}
    return {"units": len(lags), "median_ms": round(median(lags), 3),
            "p99_ms": round(lags[min(len(lags) - 1, int(0.99 * len(lags)))], 3), "max_ms": round(lags[-1], 3),
            "bound_ms": bound_ms, "late_units": sum(lag > bound_ms for lag in lags)}


async def hold_sessions(cfg, endpoint, protocol, task, sessions, writer, labels, settings, beat,
                        outcome: LiveOutcome) -> None:
    """Hold the sessions, ``settings.sessions`` at once, each written when it ends."""
    from ticktock.replay.concurrency import stagger_offset_ms

    queue = list(reversed(sessions))
    admitted = itertools.count()
    began = time.monotonic()
    lock = asyncio.Lock()
    tools = task.injector().executor
    delay_ms = float(cfg.get("playback_delay_ms") or 0.0)

    async def slot(index: int) -> None:
        while queue:
            session = queue.pop()
            order = next(admitted)
            if settings.sessions > 1:
                await asyncio.sleep(stagger_offset_ms(settings.stagger, order, index, 1000.0, cfg.seed) / 1000.0)
            record = await hold_one(cfg, endpoint, protocol, session, tools, delay_ms, outcome)
            if record is None:
                continue
            start_ms = 1000.0 * (record.started_at - began) if record.started_at else 0.0
            async with lock:
                await asyncio.to_thread(finish_session, cfg, protocol, session, record, writer, labels, settings,
                                        index, start_ms, outcome)
            beat.session_done()

    async def ticking() -> None:
        while True:
            await asyncio.sleep(1.0)
            beat.beat()

    ticker = asyncio.ensure_future(ticking())
    try:
        await asyncio.gather(*(slot(i) for i in range(min(settings.sessions, max(1, len(sessions))))))
    finally:
        ticker.cancel()


async def hold_one(cfg, endpoint, protocol, session, tools, delay_ms, outcome: LiveOutcome):
    """One session held; None when it could not be (bad audio skipped, or refused: recorded as failed)."""
    from ticktock.endpoints.client import hold_session
    from ticktock.endpoints.endpoint import EndpointError
    from ticktock.sessions.audio import AudioError, load_audio

    try:
        samples = load_audio(session.audio_path)
    except AudioError as err:
        if not cfg.skip_bad_sessions:
            raise
        outcome.skipped.append({"session_id": session.session_id, "error": str(err)})
        return None
    units = len(session.chunk_spans()[: cfg.limit.chunks])
    try:
        return await hold_session(endpoint, protocol, session, samples, units, tools, delay_ms)
    except EndpointError as err:
        fail(outcome, session.session_id, f"session {session.session_id}: {err}")
        return None


def fail(outcome: LiveOutcome, session_id: str, reason: str) -> None:
    outcome.failed.append({"session_id": session_id, "error": reason})
    print(f"endpoint: {reason}: session failed, nothing of it decided (a rerun replays it); the run goes on",
          file=sys.stderr)


def finish_session(cfg, protocol, session, record, writer, labels, settings, slot, start_ms,
                   outcome: LiveOutcome) -> None:
    """Write a held session's rows: all of them when it finished; when it failed, the units decided before the
    failure, apart (a partial session), or nothing when none was (a failed session)."""
    from ticktock.endpoints.measure import chunk_rows, measure_units, session_row
    from ticktock.results.fingerprint import session_fingerprint

    ending = record.ended_by or "not ended"
    outcome.endings[ending] = outcome.endings.get(ending, 0) + 1
    if record.failure is not None and record.decided == 0:
        fail(outcome, session.session_id, record.failure)
        return
    delay_ms = float(cfg.get("playback_delay_ms") or 0.0)
    units = measure_units(record, protocol.per_unit)[: record.decided]
    chunks = chunk_rows(record, units, session, labels, protocol.per_unit, settings.sessions, slot, delay_ms)
    row = session_row(record, units, session, labels, chunks, protocol.per_unit, settings.sessions, slot, start_ms,
                      delay_ms)
    row = {**row, **session_fingerprint(session, None)}
    if record.failure is None:
        writer.write_session(session.session_id, chunks, row, [])
        return
    writer.write_partial(session.session_id, chunks, row)
    outcome.partial.append({"session_id": session.session_id, "reason": record.failure,
                            "failed_at_unit": record.failed_at_unit, "units_decided": record.decided,
                            "units": record.units})
    print(f"endpoint: {record.failure}: session partial, its {record.decided} decided units of {record.units} "
          "written apart (partial/; in no table; a rerun replays it); the run goes on", file=sys.stderr)


@dataclass
class LiveRunSummary:
    """What a live run did, for its summary line (``line``) and its exit code (``check_finished``)."""

    run_dir: Path
    run_id: str
    sessions: int
    skipped: int
    failed: int
    counts: dict
    stats: dict
    clock: str
    per_unit: bool = True
    partial: int = 0

    def line(self) -> str:
        """One line: the sessions complete, partial and failed, the units, and the figures the protocol measures
        (per-unit protocols: response time, speak time and deadline misses; turn-based: reply times only)."""
        s = self.stats
        misses = (f" | deadline misses {100 * s['miss_rate']:.1f}%" if s.get("miss_rate") is not None
                  else " | deadline misses: none measured" if self.per_unit
                  else " | deadline misses not measured (turn-based protocol: no per-unit decisions)")
        return (f"run {self.run_id}: {self.sessions} sessions complete, {self.partial} partial, {self.failed} failed "
                f"({self.skipped} skipped), "
                f"{self.counts.get('chunks', 0)} units | response p50 {s.get('response_p50_ms', float('nan')):.1f} ms "
                f"({self.clock}) | speak {s.get('speak_ms', float('nan')):.1f} ms{misses} | -> {self.run_dir}")

    def check_finished(self) -> None:
        """``SessionsUnfinished`` (exit 6) when a session failed or ended early."""
        if self.failed or self.partial:
            raise SessionsUnfinished(f"{self.partial + self.failed} of {self.sessions + self.partial + self.failed} "
                                     f"sessions did not finish ({self.partial} partial, {self.failed} failed; "
                                     f"run.json of {self.run_dir} says why); the same command again replays them")


def live_stats(path: Path) -> dict:
    """The summary line's figures from a live run's chunks (medians and means over the measured units)."""
    import pyarrow.parquet as pq

    if not path.is_file():
        return {}
    rows = pq.read_table(path, columns=["kind", "response_ms", "missed_deadline"]).to_pydict()
    responses = [r for r in rows["response_ms"] if r is not None]
    speak = [r for r, kind in zip(rows["response_ms"], rows["kind"]) if r is not None and kind == "speak"]
    misses = [m for m in rows["missed_deadline"] if m is not None]
    return {"response_p50_ms": median(responses) if responses else float("nan"),
            "speak_ms": sum(speak) / len(speak) if speak else float("nan"),
            "miss_rate": sum(misses) / len(misses) if misses else None}
