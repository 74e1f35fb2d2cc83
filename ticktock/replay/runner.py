"""One replay run, from its config to its run directory: building the model adapter, decoder, clock and task
from the config, choosing the sessions, replaying them and writing the results (``ticktock.results.writer``).

``python -m ticktock.run`` is the command line for one run; ``ticktock.main_job``, ``ticktock.probe``,
``ticktock.calibrate`` and the benchmark scripts use these functions directly.

Example::

    cfg = compose_run("speclisten", "fixture", per_task=1, overrides=["limit.chunks=4"])
    summary = run(cfg, Path("results/runs/fixture-speclisten"))   # resumes if the folder holds the same run
    print(summary.line())
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from ticktock.adapters.checkpoint import check_weights
from ticktock.sessions.audio import AudioError
from ticktock.errors import ConfigError, SessionsUnfinished
from ticktock.sessions.manifest import AUDIO_DURATION_POLICIES, check_audio_durations
from ticktock.replay.resources import register_resolver, resource_path
from ticktock.replay.shards import ShardPlan, ShardSpec
from ticktock.replay.watchdog import check_watchdog
from ticktock.sessions.tasks import check_task_options

register_resolver()


def build(node: DictConfig, **kwargs):
    """Instantiate a plug-in config (its ``name`` is a label kept by the harness, not an argument)."""
    from hydra.utils import instantiate

    from ticktock.replay.targets import check_target

    spec = OmegaConf.to_container(node, resolve=True)
    name = spec.pop("name", None)
    check_target(node, spec, kwargs)  # an unknown _target_ or key: one line naming it, not Hydra's traceback
    try:
        obj = instantiate(spec, **kwargs)
    except Exception as err:  # Hydra wraps what the target raised: let an expected error through as it is
        expected = _expected_cause(err)
        if expected is None:
            raise
        raise expected from None
    if name is not None and hasattr(obj, "name"):
        obj.name = name
    return obj


def build_checked(node: DictConfig, group: str, contract: type):
    """``build`` a model or decoder, refusing an object that does not implement its contract (a plug-in selected by
    ``_target_`` that returns something else) in one line naming the target."""
    obj = build(node)
    if not isinstance(obj, contract):
        raise ConfigError(f"{group}._target_: {node.get('_target_')} made a {type(obj).__qualname__}, not a "
                          f"ticktock.api.{contract.__name__} (see docs/extending.md)")
    return obj


def _expected_cause(err: BaseException):
    """The ``TickTockError`` behind ``err`` (itself or a cause Hydra wrapped it in), or None."""
    from ticktock.errors import TickTockError

    while err is not None and not isinstance(err, TickTockError):
        err = err.__cause__
    return err


# ------------------------------------------------------------------------------ run options, checked first

class RunOptionError(ConfigError):
    """A run option is not allowed; the message names the key, the value and what is allowed."""


LIMITS = ("per_task", "sessions", "chunks")
FLAGS = ("overwrite", "skip_bad_sessions", "progress")


def check_run_options(cfg: DictConfig, on_this_machine: bool = True) -> None:
    """Validate every run option before any work (before the manifest is read and the model is built).

    ``limit.per_task`` / ``sessions`` / ``chunks``: null or an integer >= 1; ``overwrite``,
    ``skip_bad_sessions``, ``progress``: true or false; ``audio_duration``: ``check`` or ``trust_audio``;
    ``playback_delay_ms``: 0 to 10000 (``check_playback_delay``);
    ``timing_noise.*`` (see ``configs/run.yaml``); ``seed`` and ``sampling.*`` (``Sampling``); the decoder's
    settings and the clock (a modeled clock's cost profile) by building them. Each problem is one
    ``ConfigError`` line naming the key, the value and what is allowed. Every number is finite and in a sane
    range. ``on_this_machine=False`` (a sweep's arms, checked before they are launched, maybe on other machines)
    leaves out what depends on the machine the run will use (whether its GPU is there).

    Example::

        >>> check_run_options(compose_run("ar", "fixture", None, ["limit.sessions=-1"]))
        Traceback (most recent call last):
        ...
        ticktock.replay.runner.RunOptionError: limit.sessions: must be null or an integer >= 1, got -1
        >>> check_run_options(compose_run("ar", "fixture", None, ["seed=abc"]))
        Traceback (most recent call last):
        ...
        ticktock.decoders.selection.SamplingError: seed: must be an integer, got 'abc'
    """
    for key in LIMITS:
        value = cfg.limit.get(key)
        if value is not None and not _is_int(value, least=1):
            raise RunOptionError(f"limit.{key}: must be null or an integer >= 1, got {value!r}")
    for key in FLAGS:
        if not isinstance(cfg.get(key), bool):
            raise RunOptionError(f"{key}: must be true or false, got {cfg.get(key)!r}")
    policy = cfg.get("audio_duration", "check")
    if policy not in AUDIO_DURATION_POLICIES:
        raise RunOptionError(f"audio_duration: must be one of {', '.join(AUDIO_DURATION_POLICIES)}, got {policy!r}")
    _check_timing_noise(cfg.get("timing_noise") or {})
    check_playback_delay(cfg.get("playback_delay_ms", 0))
    _check_sampling(cfg)
    ShardSpec.parse(cfg.get("shard"))
    _check_model_context(cfg.model)
    check_threads(cfg.get("threads"))
    for key, device in device_settings(cfg):  # `device`, and `model.device` where it is set apart from it
        check_device(device, available=on_this_machine, key=key)
    check_watchdog(cfg.get("watchdog"))  # watchdog.chunk_s: null or a number of seconds > 0
    check_task_options(cfg.get("task"))  # task=hf: task.dataset given, task.streaming a flag, task.audio_cache a folder
    from ticktock.plugins import check_used

    check_used(cfg)  # a name both shipped and a plug-in's (or two plug-ins'), defaults included: one line
    build(cfg.decoder)  # a bad setting is a DecoderConfigError naming the key
    check_weights(cfg.model)  # a real model without local weights: one line naming the repo and `hf download`
    clock = build(cfg.clock)  # a modeled clock reads its cost profile: a ProfileError names the file and line
    build_speech(cfg, clock)  # a bad talker option, a missing extra, a profile without its cost: one line
    _check_concurrency(cfg, clock)


def build_speech(cfg: DictConfig, clock):
    """The run's talker on its clock (``ticktock.replay.speech_out.SpeechOut``), or None for ``talker=none``."""
    node = cfg.get("talker")
    if node is None or node.get("_target_") is None:
        return None
    from ticktock.replay.speech_out import SpeechOut
    from ticktock.talkers.base import Talker

    return SpeechOut.for_clock(build_checked(node, "talker", Talker), clock)


def _check_concurrency(cfg: DictConfig, clock) -> None:
    """``concurrency.*`` (``ConcurrencySettings``), the draft policy, and a profile that can charge batched steps."""
    from ticktock.replay.concurrency import ConcurrencyError, ConcurrencySettings

    settings = ConcurrencySettings.parse(cfg.get("concurrency"))
    build(cfg.draft_policy)
    profile = getattr(clock, "profile", None)
    if settings.batching and profile is not None and not profile.batches:
        raise ConcurrencyError(f"concurrency.batching: the cost profile {profile.name} has no batch dimension "
                               "(batch_sizes, batch_factor); measure one with `python -m ticktock.calibrate`, or use "
                               "concurrency.batching=false")
    if settings.batch_encodings and profile is not None and not profile.encode_batches:
        raise ConcurrencyError(f"concurrency.batch_encodings: the cost profile {profile.name} has no batch dimension for "
                               "audio encodings (encode_batch_sizes, encode_batch_factor); measure one with `python -m "
                               "ticktock.calibrate`, or use concurrency.batch_encodings=false")


def check_threads(threads) -> None:
    """``threads``: null (torch's default: ``OMP_NUM_THREADS`` where set, else the cores this process may use) or
    an integer >= 1."""
    if threads is not None and not _is_int(threads, least=1):
        raise RunOptionError(f"threads: must be null (torch's default) or an integer >= 1, got {threads!r}")


RUN_DEVICE = "${device}"  # what a shipped model config's `device` is: the run option `device`, interpolated


def device_settings(cfg: DictConfig) -> list[tuple[str, object]]:
    """The device keys of a run config worth checking, with their values: the run option ``device`` (the one
    documented key), and ``model.device`` when it is not the shipped ``${device}`` (set directly, e.g.
    ``model.device=cuda``), so that a refusal names the key the user set.

    Example::

        >>> device_settings(compose_run("ar", "fixture", None, ["device=cuda"]))
        [('device', 'cuda')]
        >>> device_settings(compose_run("ar", "fixture", None, ["model.device=cuda:1"]))
        [('device', None), ('model.device', 'cuda:1')]
    """
    settings = [("device", cfg.get("device"))]
    model = cfg.get("model")
    if isinstance(model, DictConfig) and "device" in model:
        written = OmegaConf.to_container(model, resolve=False).get("device")
        if written != RUN_DEVICE:
            settings.append(("model.device", model.get("device")))
    return settings


def check_device(device, available: bool = True, key: str = "device") -> None:
    """``device`` (the value of ``key``: the run option ``device``, or ``model.device`` set directly): null (each
    model's default), ``auto``, ``cpu``, ``cuda`` (the first GPU this process sees: the one a scheduler assigned
    through CUDA_VISIBLE_DEVICES) or ``cuda:K``; a GPU that is not there is refused here, naming ``key`` and what is
    visible (unless ``available=False``: the form only).

    >>> check_device("cpu")
    >>> check_device("gpu", key="model.device")
    Traceback (most recent call last):
    ...
    ticktock.replay.runner.RunOptionError: model.device: must be null, auto, cpu, cuda or cuda:K (K an integer), got 'gpu'
    """
    import os

    if device is None or device in ("auto", "cpu"):
        return
    kind, _, index = str(device).partition(":")
    if kind != "cuda" or (index and not index.isdigit()):
        raise RunOptionError(f"{key}: must be null, auto, cpu, cuda or cuda:K (K an integer), got {device!r}")
    if not available:
        return
    import torch

    visible = torch.cuda.device_count() if torch.cuda.is_available() else 0
    seen = f"CUDA_VISIBLE_DEVICES={os.environ['CUDA_VISIBLE_DEVICES']!r}" if "CUDA_VISIBLE_DEVICES" in os.environ else \
        "CUDA_VISIBLE_DEVICES not set"
    if visible == 0:
        build = "" if torch.version.cuda else \
            f"; torch {torch.__version__} is a CPU build: install a CUDA build, see docs/gpu.md"
        raise RunOptionError(f"{key}: {device} asked for, but this process sees no CUDA device ({seen}{build})")
    if index and int(index) >= visible:
        raise RunOptionError(f"{key}: {device} asked for, but this process sees {visible} CUDA device(s) "
                             f"(cuda:0 .. cuda:{visible - 1}; {seen})")


def _is_int(value, least: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= least


def _check_model_context(model) -> None:
    """A model's context options, where its config has them: ``context_limit`` null or an integer >= 1,
    ``context_reserve`` an integer >= 0 below it, ``context_evict_to`` a share strictly between 0 and 1."""
    limit, reserve, evict = (model.get(key) for key in ("context_limit", "context_reserve", "context_evict_to"))
    if limit is not None and not _is_int(limit, least=1):
        raise RunOptionError(f"model.context_limit: must be null (the model's own) or an integer >= 1, got {limit!r}")
    if "context_reserve" in model and not (_is_int(reserve, least=0) and (limit is None or reserve < limit)):
        below = f" below model.context_limit ({limit})" if limit is not None else ""
        raise RunOptionError(f"model.context_reserve: must be an integer >= 0{below}, got {reserve!r}")
    number = isinstance(evict, (int, float)) and not isinstance(evict, bool)
    if "context_evict_to" in model and not (number and 0 < evict < 1):
        raise RunOptionError(f"model.context_evict_to: must be a number between 0 and 1 (the share of the context kept "
                             f"after an eviction), got {evict!r}")


MAX_PLAYBACK_DELAY_MS = 10_000


def check_playback_delay(delay) -> None:
    """``playback_delay_ms``: the jitter buffer of the assistant's speech (``ticktock.results.playback``), a number of
    milliseconds from 0 (play each reply as soon as its first piece is ready) to 10000.

    >>> check_playback_delay(200)
    >>> check_playback_delay(-5)
    Traceback (most recent call last):
    ...
    ticktock.replay.runner.RunOptionError: playback_delay_ms: must be a number of milliseconds from 0 to 10000 (0: play as soon as ready), got -5
    """
    number = isinstance(delay, (int, float)) and not isinstance(delay, bool)
    if not (number and 0 <= delay <= MAX_PLAYBACK_DELAY_MS):  # (NaN fails the comparison)
        raise RunOptionError(f"playback_delay_ms: must be a number of milliseconds from 0 to {MAX_PLAYBACK_DELAY_MS} "
                             f"(0: play as soon as ready), got {delay!r}")


def _check_timing_noise(options) -> None:
    for key, least, allowed in (("repeats", 0, "an integer >= 0 (0: no probe)"), ("every", 1, "an integer >= 1")):
        if not _is_int(options.get(key, least), least):
            raise RunOptionError(f"timing_noise.{key}: must be {allowed}, got {options.get(key)!r}")
    spread = options.get("max_spread", 1.5)
    if isinstance(spread, bool) or not isinstance(spread, (int, float)) or not 1 <= spread <= 100:
        raise RunOptionError(f"timing_noise.max_spread: must be a number from 1 to 100 (slowest / fastest probe), "
                             f"got {spread!r}")


def _check_sampling(cfg: DictConfig) -> None:
    from dataclasses import fields

    from ticktock.decoders.selection import Sampling, SamplingError

    known = [f.name for f in fields(Sampling) if f.name != "seed"]
    for key in cfg.sampling:
        if key not in known:
            raise SamplingError(f"sampling.{key}: unknown setting (known: {', '.join(known)})")
    Sampling(seed=cfg.seed, **cfg.sampling)


def noise_probe(cfg: DictConfig, engine):
    """The run's timing-noise probe (``ticktock.clocks.noise``): only under a wall clock, unless
    ``timing_noise.repeats=0``; None otherwise."""
    from ticktock.clocks.noise import NoiseProbe
    from ticktock.clocks.wall import WallClock

    options = cfg.get("timing_noise") or {}
    if not isinstance(engine.clock, WallClock) or not options.get("repeats", 0):
        return None
    return NoiseProbe(engine.adapter, options["repeats"], options.get("every", 10), options.get("max_spread", 1.5))


def interrupted_note(run_dirs: list[Path]) -> str:
    """What interrupted runs kept and how to resume, from their run.json files, e.g.
    ``3 of 12 sessions kept in results/runs/x; run the same command again to resume``."""
    kept = total = 0
    for run_dir in run_dirs:
        try:
            meta = json.loads((Path(run_dir) / "run.json").read_text())
        except (OSError, ValueError):
            continue
        kept += (meta.get("row_counts") or {}).get("sessions", 0)
        total += meta.get("sessions_total") or 0
    where = str(run_dirs[0]) if len(run_dirs) == 1 else f"{len(run_dirs)} run folders"
    return f"{kept} of {total} sessions kept in {where}; run the same command again to resume"


def identity(cfg: DictConfig) -> dict:
    """What makes two runs the same run (resume is allowed only into a run with the same identity): the configs, and
    under ``plugins`` the plug-ins the run uses (``ticktock.plugins.used_by``: distribution, version, target and a
    digest of their code; only where a plug-in is used, so the identity of a run without one is as before), and the
    playback's jitter buffer ``playback_delay_ms`` where it is not 0 (runs from before it existed keep theirs)."""
    from ticktock.plugins import identity_of, used_by

    plain = OmegaConf.to_container(cfg, resolve=True)
    plugins = identity_of(used_by(cfg))
    return {
        "model": plain["model"],
        "decoder": plain["decoder"],
        "task": plain["task"],
        "clock": _inert_removed(plain["clock"], {"encode_scale": 1.0}),
        "sampling": plain["sampling"],
        "seed": plain["seed"],
        "chunks_limit": plain["limit"]["chunks"],
        "concurrency": _inert_removed(plain.get("concurrency"), {"batch_encodings": False}),
        "draft_policy": _draft_policy_identity(plain),
        **({"playback_delay_ms": float(plain["playback_delay_ms"])} if plain.get("playback_delay_ms") else {}),
        **({"talker": plain["talker"]} if (plain.get("talker") or {}).get("_target_") else {}),
        **({"shard": plain["shard"]} if ShardSpec.parse(plain.get("shard")).sharded else {}),
        **({"plugins": plugins} if plugins else {}),
    }


def _inert_removed(node, inert: dict):
    """``node`` without the settings that sit at a value where they change nothing, so that runs written before those
    settings existed keep their identity (and resume).

    >>> _inert_removed({"name": "modeled", "encode_scale": 1.0}, {"encode_scale": 1.0})
    {'name': 'modeled'}
    """
    if not isinstance(node, dict):
        return node
    return {k: v for k, v in node.items() if not (k in inert and v == inert[k])}


def _draft_policy_identity(plain: dict):
    """The draft policy's settings; without those that only act on batched steps when the run does not batch (neither
    forwards nor encodings)."""
    policy = plain.get("draft_policy")
    concurrency = plain.get("concurrency") or {}
    if isinstance(policy, dict) and not (concurrency.get("batching") or concurrency.get("batch_encodings")):
        policy = {k: v for k, v in policy.items() if k not in ("batch_drafts", "carry_slowdown")}
    return policy


def first_per_task(sessions: list, per_task: int | None) -> list:
    """Keep the first ``per_task`` sessions of every task type (all when None), in manifest order."""
    if per_task is None:
        return sessions
    seen: dict[str, int] = {}
    kept = []
    for session in sessions:
        seen[session.task] = seen.get(session.task, 0) + 1
        if seen[session.task] <= per_task:
            kept.append(session)
    return kept


def run_id_for(ident: dict, run_dir: Path) -> str:
    digest = hashlib.sha256(json.dumps([ident, str(run_dir.resolve())], sort_keys=True).encode()).hexdigest()
    return f"{ident['model']['name']}-{ident['decoder']['name']}-{ident['clock']['name']}-{digest[:8]}"


def environment(adapter) -> dict:
    import torch

    versions = {}
    for package in ("ticktock", "torch", "transformers", "numpy", "pyarrow", "hydra-core", "tokenizers"):
        try:
            from importlib.metadata import version

            versions[package] = version(package)
        except Exception:
            versions[package] = None
    return {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpu": _cpu_name(),
        "torch_threads": torch.get_num_threads(),
        "cuda_device": _cuda_name(getattr(adapter, "device", None)),
        "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "git_sha": _git_sha(),
        "versions": versions,
        "model": adapter.describe(),
    }


def _cuda_name(device) -> str | None:
    """The name of the GPU the model runs on (None for a model on the CPU)."""
    import torch

    if device is None or torch.device(device).type != "cuda":
        return None
    return torch.cuda.get_device_name(torch.device(device))


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def _git_sha() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=resource_path("configs").parent,
                             capture_output=True, text=True, timeout=5)
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


@dataclass
class RunSummary:
    run_dir: Path
    run_id: str
    sessions: int
    skipped: int
    counts: dict
    stats: dict
    failed: int = 0  # sessions the watchdog stopped (run.json ``failed_sessions``)

    def line(self) -> str:
        s = self.stats
        failed = f", {self.failed} failed" if self.failed else ""
        return (
            f"run {self.run_id}: {self.sessions} sessions ({self.skipped} skipped{failed}), {self.counts.get('chunks', 0)} chunks | "
            f"post-audio mean {s.get('post_audio_ms', 0):.1f} ms ({s.get('clock')}) | speak {s.get('speak_ms', 0):.1f} ms | "
            f"#MAT {s.get('mat', 0):.2f} | deadline misses {100 * s.get('miss_rate', 0):.1f}% | -> {self.run_dir}"
        )

    def check_finished(self) -> None:
        """``SessionsUnfinished`` (exit 6) when a session failed (the watchdog stopped it): the run wrote the others,
        and the same command again replays it."""
        if self.failed:
            raise SessionsUnfinished(f"{self.failed} of {self.sessions + self.failed} sessions did not finish "
                                     f"(run.json of {self.run_dir} says why); the same command again replays them")


def chunk_stats(path: Path, clock: str) -> dict:
    import pyarrow.parquet as pq

    table = pq.read_table(path, columns=["kind", "post_audio_ms", "num_output_tokens", "num_post_audio_forwards", "missed_deadline"])
    rows = table.to_pydict()
    n = len(rows["kind"])
    if not n:
        return {"clock": clock}
    speak = [ms for ms, kind in zip(rows["post_audio_ms"], rows["kind"]) if kind == "speak"]
    forwards = sum(rows["num_post_audio_forwards"])
    return {
        "clock": clock,
        "post_audio_ms": sum(rows["post_audio_ms"]) / n,
        "speak_ms": sum(speak) / len(speak) if speak else 0.0,
        "mat": sum(rows["num_output_tokens"]) / forwards if forwards else 0.0,
        "miss_rate": sum(rows["missed_deadline"]) / n,
    }


def select_sessions(cfg: DictConfig, task) -> list:
    """The task's sessions after the limits; a missing audio file stops the run here unless skipped, and so does
    a ``duration_s`` that disagrees with its audio's header unless ``audio_duration=trust_audio``."""
    from ticktock.sessions.audio import AudioError

    sessions = first_per_task(task.sessions(), cfg.limit.get("per_task"))[: cfg.limit.sessions]
    missing = [s for s in sessions if not s.audio_path.is_file()]
    if missing and not cfg.skip_bad_sessions:
        raise AudioError(f"{missing[0].audio_path}: audio file not found (session {missing[0].session_id}; "
                         f"{len(missing)} sessions affected; skip_bad_sessions=true skips them)")
    return check_audio_durations(sessions, cfg.get("audio_duration", "check"), skip_unreadable=cfg.skip_bad_sessions)


def shard_sessions(cfg: DictConfig, sessions: list, ident: dict) -> tuple[list, dict]:
    """This job's sessions of a sharded run (``shard.index`` of ``shard.count``; all of them when unsharded) and
    run.json's ``shard`` record (``ticktock.replay.shards``). ``ident`` is the run's identity; its shard is left out of the
    split id, which all shards share."""
    spec = ShardSpec.parse(cfg.get("shard"))
    chunks = {s.session_id: len(s.chunk_spans()[: cfg.limit.chunks]) for s in sessions}
    plan = ShardPlan.make(spec, {k: v for k, v in ident.items() if k != "shard"}, chunks)
    return [s for s in sessions if plan.keeps(s.session_id)], plan.record()


def talker_identity(engine) -> dict:
    """With a talker whose work is priced, its cost (a cost entry edited since makes a resumed run a different run)."""
    cost = getattr(engine.speech, "cost", None)
    if cost is None:
        return {}
    return {"talker_cost": {k: v for k, v in cost.to_json().items() if k in ("first_packet_ms", "ms_per_audio_s", "streams")}}


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


def sessions_to_replay(sessions: list, writer, out=None, profile_digest: str | None = None) -> list:
    """The sessions a (resumed) run still has to replay: those not completed yet, and completed ones whose
    manifest line, audio or cost profile (``profile_digest``: the run's clock's, ``fingerprint.profile_sha256``)
    changed since (``ticktock.results.fingerprint``). A changed session's parts are removed and one line names it
    and what changed (on ``out``, default stderr), e.g.
    ``resume: session s1: audio file changed since its results were written; replaying it``; a resumed run (the
    folder held this run) then says how many it keeps: ``resumed 2 of 3 sessions``."""
    from ticktock.results.fingerprint import changes, session_fingerprint

    recorded, todo = writer.fingerprints(), []
    for session in sessions:
        if session.session_id in recorded:
            changed = changes(recorded[session.session_id], session_fingerprint(session, profile_digest))
            if not changed:
                continue
            print(f"resume: session {session.session_id}: {' and '.join(changed)} changed since its results were "
                  "written; replaying it", file=out or sys.stderr)
            writer.forget(session.session_id)
        todo.append(session)
    if writer.previous is not None:
        print(f"resumed {len(sessions) - len(todo)} of {len(sessions)} sessions", file=out or sys.stderr)
    return todo


def replay_sessions(cfg, engine, sessions, writer, labels: dict, heartbeat=None, noise=None,
                    device_stats: dict | None = None, failed: list | None = None) -> list[dict]:
    """Replay and write every session (with its input fingerprint); returns the sessions skipped for bad audio.
    A session whose chunk runs past ``watchdog.chunk_s`` (``ticktock.replay.watchdog``) ends as failed: nothing of it
    is written, one line on stderr names it, ``failed`` (a list, when given) receives ``{"session_id", "error"}``, and
    the run goes on with the next session.
    ``heartbeat`` (a ``liveness.Heartbeat``) is offered a beat after every chunk and every session; ``noise`` (a
    ``clocks.noise.NoiseProbe``, wall-clock runs) measures before sessions and at the end. With
    ``concurrency.sessions`` > 1 (or batching) the sessions share one device (``ticktock.replay.concurrency``) and
    ``device_stats`` (a dict, when given) receives what the device did (``ticktock.replay.device.DeviceStats``)."""
    from tqdm.auto import tqdm

    from ticktock.sessions.audio import load_audio
    from ticktock.replay.concurrency import ConcurrencySettings
    from ticktock.results.fingerprint import profile_sha256, session_fingerprint
    from ticktock.results.rows import chunk_rows, forward_rows, session_row
    from ticktock.replay.watchdog import ChunkTimeout, Watchdog

    skipped, fingerprints, profile_digest = [], {}, profile_sha256(engine.clock)
    delay_ms = float(cfg.get("playback_delay_ms", 0))  # the jitter buffer of the speech's playback (0: none)
    failed = [] if failed is None else failed
    watchdog = Watchdog(check_watchdog(cfg.get("watchdog")))
    engine.watchdog = watchdog

    def load(session):
        fingerprints[session.session_id] = session_fingerprint(session, profile_digest)  # before reading: at most this new
        return load_audio(session.audio_path)

    def skip(session, err) -> None:
        if not cfg.skip_bad_sessions:
            raise err
        skipped.append({"session_id": session.session_id, "error": str(err)})
        bar.update(len(session.chunk_spans()[: cfg.limit.chunks]))

    def write(trace) -> None:
        session_id = trace.session.session_id
        chunks = chunk_rows(trace, labels, engine.adapter, playback_delay_ms=delay_ms)
        writer.write_session(session_id, chunks, {**session_row(trace, labels, chunks, engine.adapter,
                                                                playback_delay_ms=delay_ms),
                                                  **fingerprints.pop(session_id)}, forward_rows(trace, labels["run_id"]))
        if heartbeat is not None:
            heartbeat.session_done()

    def chunk_done(chunk=None):
        bar.update(1)
        if heartbeat is not None:
            heartbeat.beat()

    def fail(session, reason: str) -> None:
        fingerprints.pop(session.session_id, None)
        failed.append({"session_id": session.session_id, "error": reason})
        print(f"watchdog: {reason}: session failed, nothing of it written (a rerun replays it); the run goes on",
              file=sys.stderr)
        if heartbeat is not None:
            heartbeat.beat()

    chunks_total = sum(len(s.chunk_spans()[: cfg.limit.chunks]) for s in sessions)
    bar = tqdm(total=chunks_total, desc=f"{cfg.decoder.name} chunks", unit="chunk", disable=not cfg.progress, file=sys.stderr)
    settings = ConcurrencySettings.parse(cfg.get("concurrency"))
    with bar, watchdog.running():
        if settings.shares_device:
            replay = concurrent_replay(cfg, engine, settings)
            replay.device.watchdog = watchdog
            try:
                replay.replay(sessions, load, write, skip, chunk_done, noise.before_session if noise else None, fail)
            finally:
                if device_stats is not None:
                    device_stats.update(replay.device.stats.summary())
        else:
            for session in tqdm(sessions, desc="sessions", unit="session", disable=not cfg.progress, file=sys.stderr,
                                position=1):
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
    return skipped


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


def run(cfg: DictConfig, run_dir: Path) -> RunSummary:
    """Replay every session of ``cfg.task`` into ``run_dir`` (resuming completed sessions), holding the folder's
    lock (``ticktock.results.lock``) for the whole run: a second writer into the folder is refused, and so is a folder
    that cannot be written (``ticktock.results.writable``: read-only, full), in one line."""
    from ticktock.results.writable import check_writable

    check_run_options(cfg)
    check_writable(run_dir)  # a read-only folder: one line before any work
    return holding_lock(cfg, run_dir, lambda: replay_run(cfg, run_dir))


def holding_lock(cfg: DictConfig, run_dir: Path, work):
    """``work()``'s result, called with the run folder made and its lock held (``ticktock.results.lock``: a second
    writer is refused in one line; a stale lock of a process that died is taken over, said on stderr), the lock released
    after it, also on an error or Ctrl-C."""
    from ticktock.results.lock import RunLock
    from ticktock.results.writable import results_written

    lock = RunLock(run_dir, lock_about(cfg))
    try:
        with results_written(run_dir):
            run_dir.mkdir(parents=True, exist_ok=True)
            lock.acquire()
        if lock.stale_note():
            print(lock.stale_note(), file=sys.stderr)
        return work()
    finally:
        lock.release()


def lock_about(cfg: DictConfig) -> dict:
    """What the run folder's lock says about its holder (shown to a refused second writer)."""
    return {"decoder": cfg.decoder.name, "model": cfg.model.name, "clock": cfg.clock.name, "task": cfg.task.get("name")}


def replay_run(cfg: DictConfig, run_dir: Path) -> RunSummary:
    """The run under the folder's lock: build, select the sessions still to replay, replay them, write.

    run.json says "running" with a heartbeat (``ticktock.results.liveness``) until the run ends, then its status.
    """
    import torch

    from ticktock.plugins import used_by
    from ticktock.replay.concurrency import ConcurrencySettings, check_sessions_replayed
    from ticktock.results.fingerprint import profile_sha256
    from ticktock.results.liveness import Heartbeat, heartbeat
    from ticktock.results.runjson import accumulate_shared_device
    from ticktock.results.schema import SCHEMA_VERSION
    from ticktock.results.writer import RunWriter

    if cfg.get("threads") is not None:
        torch.set_num_threads(cfg.threads)
    torch.manual_seed(cfg.seed)
    task = build(cfg.task)
    sessions = select_sessions(cfg, task)
    check_sessions_replayed(ConcurrencySettings.parse(cfg.get("concurrency")),  # N <= sessions, before the model
                            len(shard_sessions(cfg, sessions, {})[0]))  # (which shard keeps a session: not the identity)
    engine = build_engine(cfg, task)
    ident = {**identity(cfg), "weights": engine.adapter.describe().get("weights_fingerprint"), **talker_identity(engine)}
    sessions, shard = shard_sessions(cfg, sessions, ident)
    writer = RunWriter(run_dir, ident, overwrite=cfg.overwrite)
    run_id = run_id_for(ident, run_dir)
    labels = {"run_id": run_id, "model": cfg.model.name, "decoder": cfg.decoder.name, "clock": cfg.clock.name}
    noise = noise_probe(cfg, engine)  # wall clock only; its record fills in as the run measures
    meta = {"run_id": run_id, "schema_version": SCHEMA_VERSION, "config": OmegaConf.to_container(cfg, resolve=True),
            "clock": {**engine.clock.describe(), "profile_sha256": profile_sha256(engine.clock)},
            "environment": environment(engine.adapter),
            "decoder": {"lossless": engine.decoder.lossless, **engine.decoder.describe()}, "started": time.time(),
            "talker": engine.speech.describe() if engine.speech is not None else None,
            "plugins": used_by(cfg),
            "sessions_total": len(sessions), "shard": shard, "timing_noise": noise.record if noise else None,
            "shared_device": accumulate_shared_device((writer.previous or {}).get("shared_device"), None)}
    todo = sessions_to_replay(sessions, writer, profile_digest=meta["clock"]["profile_sha256"])
    beat = Heartbeat(lambda record: writer.write_run_json({**meta, "status": "running", "heartbeat": record}),
                     sessions_done=len(sessions) - len(todo))
    beat.beat(force=True)
    status, skipped, device, failed = "interrupted", [], {}, []
    try:
        skipped = replay_sessions(cfg, engine, todo, writer, labels, beat, noise, device, failed)
        status = "complete"
    except Exception as err:
        status = f"failed: {type(err).__name__}: {err}"
        raise
    finally:  # also on Ctrl-C: every completed session stays in the consolidated tables
        counts = writer.consolidate()
        writer.write_run_json({**meta, "status": status, "finished": time.time(), "skipped_sessions": skipped,
                               "failed_sessions": failed,  # stopped by the watchdog: not written, a rerun retries them
                               "shared_device": accumulate_shared_device(meta["shared_device"], device),
                               "row_counts": counts, "heartbeat": heartbeat(counts.get("sessions", 0))})
    stats = chunk_stats(run_dir / "chunks.parquet", cfg.clock.name)
    return RunSummary(run_dir, run_id, counts.get("sessions", 0), len(skipped), counts, stats, len(failed))


def compose_run(decoder: str, model: str, per_task: int | None, overrides: list[str]) -> DictConfig:
    """The run config of ``configs/run.yaml`` for one decoder and model, ``per_task`` sessions of each task type
    (all when None), no progress bars, then ``overrides`` (e.g. ``["clock=wall"]``). An override Hydra cannot
    apply (an unknown config, a key that does not exist) is a ``RunOptionError``."""
    from hydra import compose, initialize_config_dir
    from hydra.errors import HydraException

    from ticktock.errors import one_line
    from ticktock.plugins import register_selected

    register_resolver()
    register_selected([f"decoder={decoder}", f"model={model}", *overrides])
    with initialize_config_dir(config_dir=str(resource_path("configs")), version_base=None):
        limit = "null" if per_task is None else str(per_task)
        try:
            return compose("run", overrides=[f"decoder={decoder}", f"model={model}", f"limit.per_task={limit}",
                                             "progress=false", *overrides])
        except HydraException as err:
            raise RunOptionError(one_line(err)) from None
