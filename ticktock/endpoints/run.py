"""A live run: a task's sessions replayed into a running server, written as an ordinary run folder.

``python -m ticktock.run model=endpoint model.url=ws://HOST:PORT/v1/realtime task=fdb_v3`` comes here
(``is_endpoint``): the options are checked and the endpoint is asked once who it is (a session opened and closed:
``probe``; an endpoint that cannot be reached or refuses it stops the run here, exit 5, before any folder is
written), then the sessions are held live (``ticktock.endpoints.client``), N at once with ``concurrency.sessions=N``
(staggered as a replayed run's: ``ticktock.replay.concurrency.stagger_offset_ms``), and each one is written as soon
as it ends (``ticktock.endpoints.measure``). The run goes through the one lifecycle of every run
(``ticktock.replay.lifecycle``: ``LiveUnits`` is its unit source), so resume, the folder's lock, run.json's heartbeat
and status, the summary and the exit code work as for a replayed run. A session that ends early (the server closes
mid-session, answers a unit twice, stops answering, sends malformed JSON...) keeps the units decided before: it is
partial, written apart; one where nothing was decided is failed. Each is one line on stderr and in run.json; the
other sessions go on, and the same command again replays it.

The run is labelled by the endpoint's identity, never by the config's names: the model as the server reports it
(``session.created``) at the host (``embedded@127.0.0.1:8099``), the decoder as ``ticktock serve`` reports it (else
``model.decoder``, else ``served``), and the clock ``live:<protocol>``, so the tables never merge a live run with an
in-process one. A name the server reports must be a printable label of at most 64 characters (else exit 5: a label
from outside never reaches a terminal or a table raw). The client controls no sampling: ``sampling.*`` options other
than greedy are refused (exit 2); ``seed`` keys the sessions' staggered starts. The URL's credentials are redacted in
run.json; a token is recorded by its variable's name.

Example::

    cfg = compose_run("ar", "endpoint", per_task=1, overrides=["model.url=ws://127.0.0.1:8099/v1/realtime"])
    summary = run_live(cfg, Path("results/runs/live-ar"))
    print(summary.line()); summary.check_finished()   # exit 6 when a session did not finish
"""

from __future__ import annotations

import asyncio
import itertools
import re
import time
from dataclasses import dataclass
from pathlib import Path
from statistics import median

from omegaconf import DictConfig, OmegaConf

from ticktock.endpoints.endpoint import Endpoint, EndpointError, EndpointOptionError, redacted
from ticktock.endpoints.protocol import EndpointProtocol
from ticktock.replay.lifecycle import RunSummary, SessionOutcome, UnitSource, run_lifecycle

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
    from ticktock.replay.config import build, build_checked

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
    check_sampling(cfg.get("sampling") or {})
    return endpoint, protocol


#: The sampling a live run is composed with: the client controls none (the server samples), so any other is refused.
GREEDY = {"temperature": 0.0, "top_k": 0, "top_p": 1.0}


def check_sampling(sampling) -> None:
    """Refuse sampling options a live run cannot apply (the server samples as it was started), in one line.

    >>> check_sampling({"temperature": 0.0, "top_k": 0, "top_p": 1.0})
    >>> check_sampling({"temperature": 0.7, "top_k": 0, "top_p": 1.0})
    Traceback (most recent call last):
    ...
    ticktock.endpoints.endpoint.EndpointOptionError: sampling.temperature: 0.7: a live run cannot set the server's sampling (start the server with it, e.g. ticktock serve sampling.temperature=0.7); leave it at 0.0
    """
    for key, value in dict(sampling).items():
        if key in GREEDY and value != GREEDY[key]:
            raise EndpointOptionError(f"sampling.{key}: {value}: a live run cannot set the server's sampling (start "
                                      f"the server with it, e.g. ticktock serve sampling.{key}={value}); leave it at "
                                      f"{GREEDY[key]}")


def run_live(cfg: DictConfig, run_dir: Path) -> RunSummary:
    """Replay every session of ``cfg.task`` into the endpoint, into ``run_dir`` (resuming completed sessions), through
    the lifecycle of every run (``ticktock.replay.lifecycle``): an endpoint that cannot be used stops the run (exit 5)
    before the folder is made."""
    return run_lifecycle(cfg, run_dir, LiveUnits())


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
        """The run's model, decoder and clock labels (see the module docstring).

        >>> EndpointIdentity("m", None, "ar").labels(Endpoint("ws://h:1/v1/realtime"), EndpointProtocol())["model"]
        'm@h:1'
        """
        model = self.model or self.served_model or "endpoint"
        return {"model": f"{model}@{endpoint.host}", "decoder": endpoint.decoder or self.served_decoder or "served",
                "clock": f"{CLOCK}:{protocol.name}", "talker": self.served_talker or "none"}


async def probe(endpoint: Endpoint, protocol: EndpointProtocol) -> EndpointIdentity:
    """Open one session and close it before any audio: who the endpoint is (``EndpointError`` when it cannot be
    reached or refuses the session). The probe closes its session as every session ends (``session.close``, then the
    wait for ``session.closed`` or the socket's close, ``model.close_timeout_s``), so a server that counts its
    sessions (vLLM-Omni's ``duplex_session.max_sessions``) has its slot back before the run's sessions open: a socket
    merely dropped is a detach there, whose slot stays held for a resume."""
    from ticktock.endpoints.client import LiveRecord, LiveSession, client_session, open_session
    from ticktock.endpoints.playback import LivePlayer

    async with client_session(endpoint) as http:
        live = LiveSession(endpoint, protocol, LiveRecord("probe", 0), None, LivePlayer())
        try:
            await open_session(http, live, _Probe())
            await live.close()
        finally:
            if live.ws is not None and not live.ws.closed:
                await live.ws.close()
    info = live.record.info
    url = redacted(protocol.url(endpoint.url))
    return EndpointIdentity(*(outside_label(getattr(info, key), what, url) for key, what in (
        ("model", "model"), ("served_model", "ticktock.model"), ("served_decoder", "ticktock.decoder"),
        ("served_talker", "ticktock.talker"))))


#: The longest label a server may report (a model, decoder or talker name).
LABEL_CHARS = 64


def outside_label(value: str | None, what: str, url: str) -> str | None:
    """A name the server reported, checked before it labels anything: 1 to ``LABEL_CHARS`` printable characters, or
    ``EndpointError`` (exit 5) naming the field, with the value shown escaped and cut short.

    >>> outside_label("embedded", "model", "ws://h/v1/realtime"), outside_label(None, "model", "ws://h/v1/realtime")
    ('embedded', None)
    >>> outside_label("ar\\nrun x: 9 sessions", "ticktock.decoder", "ws://h/v1/realtime")
    Traceback (most recent call last):
    ...
    ticktock.endpoints.endpoint.EndpointError: endpoint ws://h/v1/realtime: session.created's ticktock.decoder is not a label (1 to 64 printable characters): 'ar\\nrun x: 9 sessions'
    """
    if value is None:
        return None
    if isinstance(value, str) and 0 < len(value) <= LABEL_CHARS and value.isprintable():
        return value
    raise EndpointError(f"endpoint {url}: session.created's {what} is not a label (1 to {LABEL_CHARS} printable "
                        f"characters): {str(value)[:LABEL_CHARS]!r}")


#: The longest part a server's name (its model's, its decoder's) makes of a run folder's name.
FOLDER_LABEL_CHARS = 40


def folder_label(label: str | None, fallback: str) -> str:
    """A name the server reported as a part of a folder's name: ASCII letters, digits, ``.``, ``_``, ``+`` and ``-``
    kept, any other run of characters one ``-``, at most ``FOLDER_LABEL_CHARS``, no leading or trailing ``.`` or
    ``-``; ``fallback`` when nothing is left (no name, or none of those characters).

    >>> folder_label("openbmb/MiniCPM-o-4_5", "endpoint"), folder_label("../..", "endpoint")
    ('openbmb-MiniCPM-o-4_5', 'endpoint')
    """
    safe = re.sub(r"[^A-Za-z0-9._+-]+", "-", label or "")[:FOLDER_LABEL_CHARS].strip("-.")
    return safe or fallback


def server_named(run_dir: Path, config_names: list[str], server_names: list[str], shard_suffix: str = "") -> Path:
    """``run_dir`` named from the server: where its folder's name ends with the config's names as configs/run.yaml
    puts them (a single run's ``<time>_<model>_<decoder>_<clock>``, a sweep job's
    ``<num>-<model>-<decoder>-<clock><shard_suffix>``), those names replaced by ``server_names``; a folder named
    otherwise (``hydra.run.dir=...``, a folder passed to ``run_live``) as it is.

    >>> server_named(Path("runs/2026-01-02_03-04-05_endpoint_ar_modeled"), ["endpoint", "ar", "modeled"],
    ...              ["embedded", "ar", "live"]).name
    '2026-01-02_03-04-05_embedded_ar_live'
    """
    leaf = run_dir.name
    for separator, suffix in (("_", ""), ("-", shard_suffix)):  # hydra.run.dir, hydra.sweep.subdir
        tail = separator.join(config_names) + suffix
        if leaf.endswith(separator + tail):
            return run_dir.with_name(leaf[: -len(tail)] + separator.join(server_names) + suffix)
    return run_dir


def about(seconds: float) -> str:
    """A duration, roughly: ``about(4.2)``, ``about(600)``, ``about(9000)`` are ``4 s``, ``10 min``, ``2.5 h``."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


class _Probe:
    """The session ``probe`` opens: no instructions, no tools."""

    session_id = "probe"
    system_prompt = None
    tools = ()


def live_identity(cfg: DictConfig, endpoint: Endpoint, protocol: EndpointProtocol, labels: dict) -> dict:
    """What makes two live runs the same run (resume only into the same): the endpoint as it reported itself, the
    protocol, the task, the limits, the concurrency and the playback delay; files named wherever they lie
    (``ticktock.results.file_keys``)."""
    from ticktock.results.file_keys import location_free

    plain = OmegaConf.to_container(cfg, resolve=True)
    return location_free({
        "model": {"name": labels["model"], **endpoint.describe()},
        "decoder": {"name": labels["decoder"]},
        "clock": {"name": labels["clock"], "protocol": protocol.describe()},
        **({"talker": {"name": labels["talker"]}} if labels.get("talker", "none") != "none" else {}),
        "task": plain["task"],
        "chunks_limit": plain["limit"]["chunks"],
        "concurrency": plain.get("concurrency"),
        "seed": plain["seed"],
        **({"playback_delay_ms": plain["playback_delay_ms"]} if plain.get("playback_delay_ms") else {}),
    })


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
    """The client machine (``ticktock.replay.machine``, as a replayed run records its machine; no torch: a live run
    never loads a model) and the endpoint, for run.json."""
    from ticktock.replay.machine import machine

    return {**machine(("ticktock", "aiohttp", "numpy", "pyarrow", "hydra-core")), "cuda_device": None,
            "endpoint": {**endpoint.describe(), "protocol": protocol.describe(), "reported_model": identity.model,
                         "served_model": identity.served_model, "served_decoder": identity.served_decoder}}


class LiveUnits(UnitSource):
    """The units of a live endpoint (``ticktock.replay.lifecycle.UnitSource``): its options checked, then in
    ``prepare`` the endpoint asked who it is (``probe``: exit 5 before any folder); the run's identity, labels and
    run.json from what it reported (see the module docstring); the sessions held ``concurrency.sessions`` at once."""

    def check(self, cfg: DictConfig) -> None:
        self.endpoint, self.protocol = build_endpoint(cfg)

    def prepare(self, cfg: DictConfig, task, sessions: list) -> None:
        self.task = task
        self.reported = asyncio.run(probe(self.endpoint, self.protocol))  # unreachable or refused: exit 5
        self.names = self.reported.labels(self.endpoint, self.protocol)  # what the run (and its lock) is labelled

    def run_folder(self, cfg: DictConfig, run_dir: Path) -> Path:
        """The folder named from the server (``server_named``): the model it reports, the decoder it says it runs
        (``served`` when it says none) and the live clock, in place of the config's names (``endpoint``, the
        client's default decoder, ``modeled``). A rerun against the same server names the same folder."""
        from ticktock.replay.shards import ShardSpec, folder_suffix

        reported, shard = self.reported, ShardSpec.parse(cfg.get("shard"))
        server = [folder_label(reported.model or reported.served_model, "endpoint"),
                  folder_label(self.names["decoder"], "served"), CLOCK]
        config = [str(cfg.model.name), str(cfg.decoder.name), str(cfg.clock.name)]
        return server_named(run_dir, config, server, folder_suffix(shard.index, shard.count))

    def identity(self, cfg: DictConfig) -> dict:
        return live_identity(cfg, self.endpoint, self.protocol, self.names)

    def labels(self, cfg: DictConfig) -> dict:
        return dict(self.names)

    def describe(self, cfg: DictConfig, labels: dict, previous: dict | None) -> dict:
        endpoint, protocol = self.endpoint, self.protocol
        return {"config": recorded_config(cfg, endpoint, labels),
                "clock": {"name": labels["clock"], "kind": "live", "protocol": protocol.describe(),
                          "per_unit": protocol.per_unit, "profile_sha256": None,
                          "profile_device": f"endpoint {endpoint.host}"},
                "environment": client_environment(endpoint, protocol, self.reported),
                "decoder": {"lossless": None, "name": labels["decoder"]},
                "talker": {"name": labels["talker"], "engine": "the server's own", "charged": "measured live"}
                if labels["talker"] != "none" else None,
                "plugins": {}, "timing_noise": None}

    def hold(self, cfg, sessions, writer, labels, heartbeat, outcome: SessionOutcome) -> None:
        """Hold the sessions; progress as every run's (``ticktock.replay.progress``): a line saying what starts, then
        a bar, or a line per session that ends."""
        from ticktock.replay.concurrency import ConcurrencySettings
        from ticktock.replay.progress import RunProgress

        settings = ConcurrencySettings.parse(cfg.get("concurrency"))
        units = sum(len(session.chunk_spans()[: cfg.limit.chunks]) for session in sessions)
        with RunProgress(CLOCK, len(sessions), units, "unit", enabled=cfg.progress) as progress:
            progress.say(self.start_line(len(sessions), units, settings.sessions))
            asyncio.run(hold_sessions(cfg, self.endpoint, self.protocol, self.task, sessions, writer, labels, settings,
                                      heartbeat, outcome, progress))

    def start_line(self, sessions: int, units: int, at_once: int) -> str:
        """What a live run says as it starts: the server, the sessions to hold and about how long real time takes
        (their units' audio, ``at_once`` sessions at a time), e.g. ``live run: 2 sessions into
        ws://127.0.0.1:8099/v1/realtime (model embedded, decoder ar, live:vllm_omni_duplex), held in real time:
        about 12 s``."""
        from ticktock.endpoints.client import UNIT_MS

        seconds = units * UNIT_MS / 1000 / max(1, min(at_once, sessions))
        model = self.reported.model or self.reported.served_model or "not reported"
        return (f"live run: {sessions} session{'s' if sessions != 1 else ''} into {self.endpoint.shown_url} (model "
                f"{model}, decoder {self.names['decoder']}, {self.names['clock']}), held in real time: about "
                f"{about(seconds)}")

    def finished(self, run_dir: Path, outcome: SessionOutcome) -> dict:
        return {"send_lag": send_lag(run_dir / "chunks.parquet", self.endpoint.send_lag_bound_ms)}

    def figures(self, run_dir: Path) -> str:
        """The units, the response time's median, the speak units' mean, and the deadline misses where the protocol
        measures them (per-unit protocols); a turn-based protocol says it measures none."""
        s = live_stats(run_dir / "chunks.parquet")
        if s.get("miss_rate") is not None:
            misses = f"deadline misses {100 * s['miss_rate']:.1f}%"
        elif self.protocol.per_unit:
            misses = "deadline misses: no unit measured"
        else:
            misses = "deadline misses not measured (turn-based protocol: no per-unit decisions)"
        return (f"{s.get('units', 0)} units | response p50 {s.get('response_p50_ms', float('nan')):.1f} ms "
                f"({self.names['clock']}) | speak {s.get('speak_ms', float('nan')):.1f} ms | {misses} | -> {run_dir}")


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
                        outcome: SessionOutcome, progress=None) -> None:
    """Hold the sessions, ``settings.sessions`` at once, each written when it ends and told to ``progress`` (a
    ``ticktock.replay.progress.RunProgress``, when given) with how it ended."""
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
            if record is not None:
                start_ms = 1000.0 * (record.started_at - began) if record.started_at else 0.0
                async with lock:
                    await asyncio.to_thread(finish_session, cfg, protocol, session, record, writer, labels, settings,
                                            index, start_ms, outcome)
                beat.session_done()
            if progress is not None:
                progress.session_ended(session.session_id, outcome.how(session.session_id),
                                       units=len(session.chunk_spans()[: cfg.limit.chunks]))

    async def ticking() -> None:
        while True:
            await asyncio.sleep(1.0)
            beat.beat()

    ticker = asyncio.ensure_future(ticking())
    try:
        await asyncio.gather(*(slot(i) for i in range(min(settings.sessions, max(1, len(sessions))))))
    finally:
        ticker.cancel()


async def hold_one(cfg, endpoint, protocol, session, tools, delay_ms, outcome: SessionOutcome):
    """One session held; None when it could not be (bad audio skipped, or refused: recorded as failed)."""
    from ticktock.endpoints.client import hold_session
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
        outcome.fail(session.session_id, f"session {session.session_id}: {err}", "endpoint")
        return None


def finish_session(cfg, protocol, session, record, writer, labels, settings, slot, start_ms,
                   outcome: SessionOutcome) -> None:
    """Write a held session's rows: all of them when it finished; when it failed, the units decided before the
    failure, apart (a partial session), or nothing when none was (a failed session)."""
    from ticktock.endpoints.measure import chunk_rows, measure_units, session_row
    from ticktock.results.fingerprint import session_fingerprint

    outcome.ended(record.ended_by or "not ended")
    outcome.listened_apart(record.not_decisions)
    if record.failure is not None and record.decided == 0:
        outcome.fail(session.session_id, record.failure, "endpoint")
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
    outcome.cut_short(session.session_id, record.failure, record.failed_at_unit, record.decided, record.units)


def live_stats(path: Path) -> dict:
    """The summary line's figures from a live run's chunks (medians and means over the measured units)."""
    import pyarrow.parquet as pq

    if not path.is_file():
        return {}
    rows = pq.read_table(path, columns=["kind", "response_ms", "missed_deadline"]).to_pydict()
    responses = [r for r in rows["response_ms"] if r is not None]
    units = len(rows["kind"])
    speak = [r for r, kind in zip(rows["response_ms"], rows["kind"]) if r is not None and kind == "speak"]
    misses = [m for m in rows["missed_deadline"] if m is not None]
    return {"units": units, "response_p50_ms": median(responses) if responses else float("nan"),
            "speak_ms": sum(speak) / len(speak) if speak else float("nan"),
            "miss_rate": sum(misses) / len(misses) if misses else None}
