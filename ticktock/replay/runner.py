"""A replayed run: the units of a run come from a model replayed in process (``ReplayedUnits``), through the one
run lifecycle of every run (``ticktock.replay.lifecycle``): building the model adapter, decoder, clock and talker
from the config, replaying the sessions (one after another, or sharing one device: ``ticktock.replay.concurrency``)
and writing each one as it ends (``ticktock.results.writer``). The config's checks, the session choice and the run's
identity are ``ticktock.replay.config``; the folder's lock and resume are ``ticktock.replay.run_folder``.

``python -m ticktock.run`` is the command line for one run; ``ticktock.main_job``, ``ticktock.probe``,
``ticktock.calibrate`` and the benchmark scripts call ``run`` directly.

Example::

    cfg = compose_run("speclisten", "fixture", per_task=1, overrides=["limit.chunks=4"])
    summary = run(cfg, Path("results/runs/fixture-speclisten"))   # resumes if the folder holds the same run
    print(summary.line())
"""

from __future__ import annotations

from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from ticktock.replay.config import build, build_checked, build_speech, identity
from ticktock.replay.lifecycle import RunSummary, SessionOutcome, UnitSource, run_lifecycle
from ticktock.replay.watchdog import check_watchdog
from ticktock.sessions.audio import AudioError


def run(cfg: DictConfig, run_dir: Path) -> RunSummary:
    """Replay every session of ``cfg.task`` into ``run_dir`` (resuming completed sessions), holding the folder's
    lock (``ticktock.results.lock``) for the whole run: a second writer into the folder is refused, and so is a folder
    that cannot be written (``ticktock.results.writable``: read-only, full), in one line."""
    return run_lifecycle(cfg, run_dir, ReplayedUnits())


#: The identity keys of a replayed run that its built engine gives (``ReplayedUnits.identity``).
AFTER_BUILD = ("weights", "talker_cost")


class ReplayedUnits(UnitSource):
    """The units of a model replayed in process under the run's clock (``ticktock.replay.lifecycle.UnitSource``):
    the engine is built in ``prepare``; run.json records the clock, the machine, the decoder, the talker, the
    plug-ins used, the timing noise (wall clock) and what a shared device did."""

    def __init__(self):
        self.engine = None
        self.noise = None
        self.device: dict = {}  # what a shared device did (``DeviceStats.summary``)
        self.shared_device: dict | None = None  # run.json's record of it, a resumed run's included
        self.clock_name = ""

    def check(self, cfg: DictConfig) -> None:
        """Nothing beyond the run options (``check_run_options``), which every run checks."""

    def prepare(self, cfg: DictConfig, task, sessions: list) -> None:
        import torch

        from ticktock.results.fingerprint import profile_sha256

        if cfg.get("threads") is not None:
            torch.set_num_threads(cfg.threads)
        torch.manual_seed(cfg.seed)
        self.engine = build_engine(cfg, task)
        self.clock_name = str(cfg.clock.name)
        self.noise = noise_probe(cfg, self.engine)  # wall clock only; its record fills in as the run measures
        self.profile_digest = profile_sha256(self.engine.clock)

    def identity(self, cfg: DictConfig) -> dict:
        weights = self.engine.adapter.describe().get("weights_fingerprint")
        return {**identity(cfg), "weights": weights, **talker_identity(self.engine)}

    def identity_before_prepare(self, cfg: DictConfig) -> tuple[dict, tuple[str, ...]]:
        """The config's identity; the weights' fingerprint and the talker's cost are known once the model is built."""
        return identity(cfg), AFTER_BUILD

    def labels(self, cfg: DictConfig) -> dict:
        return {"model": cfg.model.name, "decoder": cfg.decoder.name, "clock": cfg.clock.name}

    def describe(self, cfg: DictConfig, labels: dict, previous: dict | None) -> dict:
        from ticktock.plugins import used_by
        from ticktock.replay.machine import environment
        from ticktock.results.runjson import accumulate_shared_device

        engine = self.engine
        self.shared_device = accumulate_shared_device((previous or {}).get("shared_device"), None)
        return {"config": OmegaConf.to_container(cfg, resolve=True),
                "clock": {**engine.clock.describe(), "profile_sha256": self.profile_digest},
                "environment": environment(engine.adapter),
                "decoder": {"lossless": engine.decoder.lossless, **engine.decoder.describe()},
                "talker": engine.speech.describe() if engine.speech is not None else None,
                "plugins": used_by(cfg), "timing_noise": self.noise.record if self.noise else None,
                "shared_device": self.shared_device}

    def hold(self, cfg, sessions, writer, labels, heartbeat, outcome: SessionOutcome) -> None:
        replay_sessions(cfg, self.engine, sessions, writer, labels, outcome, heartbeat, self.noise, self.device)

    def finished(self, run_dir: Path, outcome: SessionOutcome) -> dict:
        from ticktock.results.runjson import accumulate_shared_device

        return {"shared_device": accumulate_shared_device(self.shared_device, self.device)}

    def figures(self, run_dir: Path) -> str:
        s = chunk_stats(run_dir / "chunks.parquet")
        return (f"{s['chunks']} chunks | post-audio mean {s.get('post_audio_ms', 0):.1f} ms ({self.clock_name}) "
                f"| speak {s.get('speak_ms', 0):.1f} ms | #MAT {s.get('mat', 0):.2f} | deadline misses "
                f"{100 * s.get('miss_rate', 0):.1f}% | -> {run_dir}")


def build_engine(cfg: DictConfig, task):
    """The model adapter, decoder, clock and token selector of a run, wired into one replay engine."""
    from ticktock.adapters.base import ModelAdapter
    from ticktock.decoders.contract import Decoder
    from ticktock.decoders.selection import Sampling
    from ticktock.replay.engine import ReplayEngine

    adapter = build_checked(cfg.model, "model", ModelAdapter)
    decoder = build_checked(cfg.decoder, "decoder", Decoder)
    clock = build(cfg.clock, synchronize=adapter.synchronize)
    sampling = Sampling(seed=cfg.seed, **cfg.sampling)
    return ReplayEngine(adapter, decoder, clock, sampling, task.injector(), cfg.limit.chunks, build_speech(cfg, clock))


def replay_sessions(cfg, engine, sessions, writer, labels: dict, outcome, heartbeat=None, noise=None,
                    device_stats: dict | None = None) -> None:
    """Replay and write every session (with its input fingerprint); ``outcome`` (a ``SessionOutcome``) receives the
    sessions skipped for bad audio, and those whose chunk ran past ``watchdog.chunk_s``
    (``ticktock.replay.watchdog``): such a session ends as failed, nothing of it is written, one line on stderr names
    it, and the run goes on with the next session.
    ``heartbeat`` (a ``liveness.Heartbeat``) is offered a beat after every chunk and every session; ``noise`` (a
    ``clocks.noise.NoiseProbe``, wall-clock runs) measures before sessions and at the end. With
    ``concurrency.sessions`` > 1 (or batching) the sessions share one device (``ticktock.replay.concurrency``) and
    ``device_stats`` (a dict, when given) receives what the device did (``ticktock.replay.device.DeviceStats``).
    Progress (``progress=true``) goes to stderr as every run's does (``ticktock.replay.progress``): bars on a terminal,
    a plain line per session anywhere else."""
    from ticktock.replay.progress import RunProgress
    from ticktock.sessions.audio import load_audio
    from ticktock.replay.concurrency import ConcurrencySettings
    from ticktock.results.fingerprint import profile_sha256, session_fingerprint
    from ticktock.results.rows import chunk_rows, forward_rows, session_row
    from ticktock.replay.watchdog import ChunkTimeout, Watchdog

    fingerprints, profile_digest = {}, profile_sha256(engine.clock)
    delay_ms = float(cfg.get("playback_delay_ms", 0))  # the jitter buffer of the speech's playback (0: none)
    watchdog = Watchdog(check_watchdog(cfg.get("watchdog")))
    engine.watchdog = watchdog

    def load(session):
        fingerprints[session.session_id] = session_fingerprint(session, profile_digest)  # before reading: at most this new
        return load_audio(session.audio_path)

    def skip(session, err) -> None:
        if not cfg.skip_bad_sessions:
            raise err
        outcome.skipped.append({"session_id": session.session_id, "error": str(err)})
        progress.session_ended(session.session_id, "skipped", units=len(session.chunk_spans()[: cfg.limit.chunks]))

    def write(trace) -> None:
        session_id = trace.session.session_id
        chunks = chunk_rows(trace, labels, engine.adapter, playback_delay_ms=delay_ms)
        writer.write_session(session_id, chunks, {**session_row(trace, labels, chunks, engine.adapter,
                                                                playback_delay_ms=delay_ms),
                                                  **fingerprints.pop(session_id)}, forward_rows(trace, labels["run_id"]))
        progress.session_ended(session_id, "done")
        if heartbeat is not None:
            heartbeat.session_done()

    def chunk_done(chunk=None):
        progress.unit_done()
        if heartbeat is not None:
            heartbeat.beat()

    def fail(session, reason: str) -> None:
        fingerprints.pop(session.session_id, None)
        outcome.fail(session.session_id, reason, "watchdog")
        progress.session_ended(session.session_id, "failed")
        if heartbeat is not None:
            heartbeat.beat()

    chunks_total = sum(len(s.chunk_spans()[: cfg.limit.chunks]) for s in sessions)
    progress = RunProgress(str(cfg.decoder.name), len(sessions), chunks_total, "chunk", enabled=cfg.progress)
    settings = ConcurrencySettings.parse(cfg.get("concurrency"))
    with progress, watchdog.running():
        if settings.shares_device:
            replay = concurrent_replay(cfg, engine, settings)
            replay.device.watchdog = watchdog
            try:
                replay.replay(sessions, load, write, skip, chunk_done, noise.before_session if noise else None, fail)
            finally:
                if device_stats is not None:
                    device_stats.update(replay.device.stats.summary())
        else:
            for session in sessions:
                if noise is not None:
                    noise.before_session()
                try:
                    audio = load(session)
                except AudioError as err:
                    skip(session, err)
                    continue
                try:
                    trace = engine.replay(session, audio, on_chunk=chunk_done)
                except ChunkTimeout as err:
                    fail(session, watchdog.reason_of(err))
                    continue
                write(trace)
    if noise is not None:
        noise.finish()


def concurrent_replay(cfg, engine, settings):
    """The run's sessions sharing one device: one engine per slot (a replica of the run's adapter, a decoder of
    its own), the run's clock and ``cfg.draft_policy``."""
    from ticktock.replay.concurrency import ConcurrentReplay
    from ticktock.replay.device import SharedDevice
    from ticktock.replay.engine import ReplayEngine

    engines = [ReplayEngine(engine.adapter.replica(), build(cfg.decoder), engine.clock, engine.sampling, engine.injector,
                            engine.max_chunks, engine.speech) for _ in range(settings.sessions)]
    device = SharedDevice(engine.clock, build(cfg.draft_policy), settings.batching, settings.max_batch,
                          batch_encodings=settings.batch_encodings)
    return ConcurrentReplay(engines, device, settings, seed=cfg.seed)


def noise_probe(cfg: DictConfig, engine):
    """The run's timing-noise probe (``ticktock.clocks.noise``): only under a wall clock, unless
    ``timing_noise.repeats=0``; None otherwise."""
    from ticktock.clocks.noise import NoiseProbe
    from ticktock.clocks.wall import WallClock

    options = cfg.get("timing_noise") or {}
    if not isinstance(engine.clock, WallClock) or not options.get("repeats", 0):
        return None
    return NoiseProbe(engine.adapter, options["repeats"], options.get("every", 10), options.get("max_spread", 1.5))


def talker_identity(engine) -> dict:
    """With a talker whose work is priced, its cost (a cost entry edited since makes a resumed run a different run)."""
    cost = getattr(engine.speech, "cost", None)
    if cost is None:
        return {}
    return {"talker_cost": {k: v for k, v in cost.to_json().items() if k in ("first_packet_ms", "ms_per_audio_s", "streams")}}


def chunk_stats(path: Path) -> dict:
    """The summary line's figures from a replayed run's chunks: means over every chunk written."""
    import pyarrow.parquet as pq

    table = pq.read_table(path, columns=["kind", "post_audio_ms", "num_output_tokens", "num_post_audio_forwards", "missed_deadline"])
    rows = table.to_pydict()
    n = len(rows["kind"])
    if not n:
        return {"chunks": 0}
    speak = [ms for ms, kind in zip(rows["post_audio_ms"], rows["kind"]) if kind == "speak"]
    forwards = sum(rows["num_post_audio_forwards"])
    return {
        "chunks": n,
        "post_audio_ms": sum(rows["post_audio_ms"]) / n,
        "speak_ms": sum(speak) / len(speak) if speak else 0.0,
        "mat": sum(rows["num_output_tokens"]) / forwards if forwards else 0.0,
        "miss_rate": sum(rows["missed_deadline"]) / n,
    }
