"""A run's configuration: building plug-ins from their config nodes, every run option checked before any work, the
sessions a run replays (limits, shards) and the run's identity (what makes two runs the same run).

Every check here is one line naming the key (``RunOptionError``, exit 2), raised before the model is built, so a bad
option costs nothing. ``compose_run`` composes ``configs/run.yaml`` as ``python -m ticktock.run`` does.

Example::

    cfg = compose_run("speclisten", "fixture", per_task=1, overrides=["limit.chunks=4"])
    check_run_options(cfg)                 # RunOptionError: one line naming the key, before any work
    sessions = select_sessions(cfg, build(cfg.task))
    identity(cfg)["decoder"]["name"]       # 'speclisten'
"""

from __future__ import annotations

from omegaconf import DictConfig, OmegaConf

from ticktock.adapters.checkpoint import check_weights
from ticktock.errors import ConfigError
from ticktock.replay.resources import register_resolver
from ticktock.shipped import resource_path
from ticktock.replay.shards import ShardPlan, ShardSpec
from ticktock.replay.watchdog import check_watchdog
from ticktock.sessions.manifest import AUDIO_DURATION_POLICIES, check_audio_durations
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


#: The config groups whose plug-ins load model weights: transformers' progress bars go off before one is built
#: (``ticktock.adapters.loading``), so no run and no ``ticktock serve`` start shows its "Loading weights" bar.
LOADS_WEIGHTS = frozenset({"model"})


def build_checked(node: DictConfig, group: str, contract: type):
    """``build`` a model or decoder, refusing an object that does not implement its contract (a plug-in selected by
    ``_target_`` that returns something else) in one line naming the target. Building a model (``LOADS_WEIGHTS``)
    turns transformers' progress bars off first."""
    if group in LOADS_WEIGHTS:
        from ticktock.adapters.loading import transformers_bars_off

        transformers_bars_off()
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
        ticktock.replay.config.RunOptionError: limit.sessions: must be null or an integer >= 1, got -1
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
    check_concurrency(cfg, clock)


def build_speech(cfg: DictConfig, clock):
    """The run's talker on its clock (``ticktock.replay.speech_out.SpeechOut``), or None for ``talker=none``."""
    node = cfg.get("talker")
    if node is None or node.get("_target_") is None:
        return None
    from ticktock.replay.speech_out import SpeechOut
    from ticktock.talkers.base import Talker

    return SpeechOut.for_clock(build_checked(node, "talker", Talker), clock)


def check_concurrency(cfg: DictConfig, clock) -> None:
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
    ticktock.replay.config.RunOptionError: model.device: must be null, auto, cpu, cuda or cuda:K (K an integer), got 'gpu'
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
    ticktock.replay.config.RunOptionError: playback_delay_ms: must be a number of milliseconds from 0 to 10000 (0: play as soon as ready), got -5
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


def identity(cfg: DictConfig) -> dict:
    """What makes two runs the same run (resume is allowed only into a run with the same identity): the configs, and
    under ``plugins`` the plug-ins the run uses (``ticktock.plugins.used_by``: distribution, version, target and a
    digest of their code; only where a plug-in is used, so the identity of a run without one is as before), and the
    playback's jitter buffer ``playback_delay_ms`` where it is not 0 (runs from before it existed keep theirs). Files
    are named wherever they lie (``ticktock.results.file_keys``: a shipped one by its name in the package, another
    by its name and content), never by an absolute path: one config is one run in a checkout, in an installed wheel
    and on every machine."""
    from ticktock.plugins import identity_of, used_by
    from ticktock.results.file_keys import location_free

    plain = OmegaConf.to_container(cfg, resolve=True)
    plugins = identity_of(used_by(cfg))
    return location_free({
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
    })


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
