"""``ticktock certify decoder=X``: prove a decoder lossless and honestly counted, on real replays.

For each model and setting, certify replays a few sessions with the real run machinery
(``ticktock.replay.runner.run``: modeled clock, fp32 eager attention) and checks the six properties of
``ticktock.conformance.decoder_checks`` on what the runs wrote and what the model really ran:

=======================  ==============================================================================
replay                   what it is for
=======================  ==============================================================================
AR                       the reference: the same sessions, options and seed, decoded by ``decoder=ar``
the decoder              tokens, forward log, counters and KV cache against AR and against the model
the decoder, again       the same config twice gives the same tables
the decoder, perturbed   the audio from a cut on replaced by silence, noise, another session's audio and the
                         session's own audio shifted (one replay each): nothing before the cut may change
=======================  ==============================================================================

Settings (``SETTINGS``): greedy and sampled, each with a session alone and with two sessions sharing the device
(``concurrency.sessions=2``; a decoder that waits for audio in its idle windows, early prefill or partial-audio
re-drafts, sleeps there while the device runs the other session). Sessions: by default one of each of
the first task types of the shipped mini corpus (``TASK_TYPES``: a tool call, spoken answers; on the fixture
model ``FIXTURE_TASK_TYPES``), ``chunks`` each; ``task=`` and ``limit.*`` overrides choose others. Every replay
runs on one torch thread unless ``threads=N`` (or ``OMP_NUM_THREADS``) says otherwise (``thread_overrides``).
"""

from __future__ import annotations

import copy
import math
import os
import re
from dataclasses import dataclass
from pathlib import Path

from omegaconf import DictConfig, OmegaConf, open_dict

from ticktock.conformance.checks import Check, Progress
from ticktock.conformance.decoder_checks import (CACHE, COUNTERS, DETERMINISTIC, LOGGED, NO_PEEKING, TOKENS,
                                                 cache_equals_ar, counters_agree, early_read, deterministic,
                                                 forwards_logged, no_early_audio, tokens_equal_ar)
from ticktock.conformance.perturbations import DESCRIPTIONS, PERTURBATIONS
from ticktock.conformance.replays import Replay, ReplayTimedOut, Timeline, cut_audio, replay
from ticktock.errors import ConfigError

TASK_TYPES = ("fdb_v3", "llama_questions", "fdb_v1_5", "alpaca_eval", "trivia_qa", "web_questions",
              "big_bench_audio", "fdb_v1")  # the mini corpus' task types, those that exercise drafts first
# The fixture model (random weights, a character tokenizer that spells the tool schemas into a 4,000-token prompt)
# never makes a meaningful tool call: it replays spoken sessions only, in seconds.
FIXTURE_TASK_TYPES = ("llama_questions", "fdb_v1_5", "alpaca_eval", "trivia_qa", "web_questions", "big_bench_audio",
                      "fdb_v1", "fdb_v3")
MODELS = ("fixture", "embedded")
QUICK_MODELS = ("fixture",)
SAMPLED = (("sampling.temperature", 0.7), ("seed", 3))


@dataclass(frozen=True)
class Setting:
    """Run options certify replays under (config keys and values, applied over the composed config), with a label
    for the table."""

    label: str
    options: tuple[tuple[str, object], ...] = ()

    @property
    def sampling(self) -> tuple[tuple[str, object], ...]:
        return tuple((key, value) for key, value in self.options if key.startswith("sampling.") or key == "seed")

    def apply(self, cfg: DictConfig) -> DictConfig:
        """A copy of ``cfg`` with this setting's options.

        >>> from omegaconf import OmegaConf
        >>> SETTINGS[3].apply(OmegaConf.create({"seed": 0, "sampling": {"temperature": 0.0}}))
        {'seed': 3, 'sampling': {'temperature': 0.7}, 'concurrency': {'sessions': 2}}
        """
        cfg = copy.deepcopy(cfg)
        with open_dict(cfg):
            for key, value in self.options:
                OmegaConf.update(cfg, key, value, force_add=True)
        return cfg


SETTINGS = (
    Setting("greedy"),
    Setting("sampled", SAMPLED),
    Setting("greedy, 2 sessions", (("concurrency.sessions", 2),)),
    Setting("sampled, 2 sessions", (*SAMPLED, ("concurrency.sessions", 2))),
)




class CertifyError(ConfigError):
    """Certify cannot run as asked (a clock other than modeled, nothing to certify); exit code 2."""


def settings_named(names: str) -> tuple[Setting, ...]:
    """The settings a comma-separated list names (their labels' slugs).

    >>> [s.label for s in settings_named("greedy,sampled-2-sessions")]
    ['greedy', 'sampled, 2 sessions']
    >>> settings_named("hot")
    Traceback (most recent call last):
    ...
    ticktock.conformance.decoder.CertifyError: --settings: unknown setting 'hot' (known: greedy, sampled, greedy-2-sessions, sampled-2-sessions)
    """
    known = {slug(s.label): s for s in SETTINGS}
    chosen = []
    for name in (n.strip() for n in names.split(",")):
        if name not in known:
            raise CertifyError(f"--settings: unknown setting {name!r} (known: {', '.join(known)})")
        chosen.append(known[name])
    return tuple(chosen)


def certify_decoder(decoder: str, models: tuple[str, ...] = MODELS, overrides: tuple[str, ...] = (),
                    out: Path | None = None, sessions: int = 2, chunks: int = 10,
                    settings: tuple[Setting, ...] = SETTINGS, cuts: int = 1,
                    references: dict | None = None, perturbations: tuple[str, ...] = PERTURBATIONS,
                    progress: Progress | None = None) -> list[Check]:
    """Check decoder ``decoder`` (a name of ``configs/decoder/`` or an installed plug-in) on each of ``models``.

    ``overrides``: Hydra overrides for every replay (``decoder.*`` ones for the decoder's replays only, e.g.
    ``decoder.num_pred=4``); ``out``: the folder the replays are written into (default: a temporary one, removed);
    ``sessions`` and ``chunks``: how many sessions and chunks of each are replayed; ``cuts``: replays with the
    audio cut, per setting (``plan_cuts``; 0: none, and the no-peeking check is skipped), each replayed once per
    perturbation of ``perturbations`` (``ticktock.conformance.perturbations``: default all); ``references``: a dict
    in which the AR replays are kept for later calls with the same model and options (certifying several
    decoders); ``progress``: where each check's start and end are said (default: nowhere). Returns one ``Check``
    per property, model and setting.

    Example (PLD on the fixture model, greedy, its sessions replayed one at a time)::

        >>> from ticktock.conformance.checks import all_passed, table
        >>> results = certify_decoder("pld", models=("fixture",), settings=SETTINGS[:1], chunks=6)  # doctest: +SKIP
        >>> print(table(results))  # doctest: +SKIP
        property                         setting          result  first counter-example
        -------------------------------  ---------------  ------  ---------------------
        tokens equal AR                  fixture, greedy  PASS
        forwards charged and logged      fixture, greedy  PASS
        counters agree with the log      fixture, greedy  PASS
        no audio read before it arrives  fixture, greedy  PASS
        KV cache equals AR               fixture, greedy  PASS
        same config, same results        fixture, greedy  PASS
        >>> all_passed(results)  # doctest: +SKIP
        True
    """
    import tempfile

    progress = progress or Progress()
    check_clock(overrides)
    check_settings_fit(settings, sessions)
    if not (isinstance(cuts, int) and cuts >= 0):
        raise CertifyError(f"--cuts: must be an integer >= 0, got {cuts!r}")
    ours = [o for o in overrides if is_decoder_override(o)]
    shared = [o for o in overrides if not is_decoder_override(o)]
    with tempfile.TemporaryDirectory(prefix="ticktock-certify-") as scratch:
        folder = Path(out) if out is not None else Path(scratch)
        results = []
        for model in models:
            common = [*selection_overrides(model, overrides, sessions, chunks), *thread_overrides(overrides),
                      *shared]
            bench = Bench(decoder, model, common, ours, folder / model, per_task(overrides, sessions), references,
                          perturbations)
            for setting in settings:
                try:
                    results += bench.certify(setting, cuts, progress)
                except ReplayTimedOut as err:  # a hang the watchdog stopped: one failed check naming the chunk
                    results.append(progress.ended(err.check(f"{model}, {setting.label}")))
        return results


def check_settings_fit(settings, sessions: int) -> None:
    """Every setting that shares the device among N sessions needs at least N sessions replayed (a run refuses
    ``concurrency.sessions`` above the sessions it replays).

    >>> check_settings_fit(SETTINGS, 1)
    Traceback (most recent call last):
    ...
    ticktock.conformance.decoder.CertifyError: --sessions 1: the settings greedy-2-sessions, sampled-2-sessions replay 2 sessions at once; pass --sessions 2 or more, or --settings greedy,sampled
    """
    shared = {slug(s.label): dict(s.options).get("concurrency.sessions", 1) for s in settings}
    too_many = [name for name, n in shared.items() if n > sessions]
    if too_many:
        alone = [name for name, n in shared.items() if n <= sessions]
        instead = f", or --settings {','.join(alone)}" if alone else ""
        raise CertifyError(f"--sessions {sessions}: the settings {', '.join(too_many)} replay "
                           f"{max(shared[n] for n in too_many)} sessions at once; pass --sessions "
                           f"{max(shared[n] for n in too_many)} or more{instead}")


def is_decoder_override(override: str) -> bool:
    return override.lstrip("+~").startswith("decoder.")


def check_clock(overrides) -> None:
    for override in overrides:
        if override.startswith("clock=") and override != "clock=modeled":
            raise CertifyError(f"{override}: certify replays on the modeled clock (deterministic); leave clock unset")


def chooses_task(overrides) -> bool:
    return any(re.match(r"^[+~]*task(=|\.tasks=)", o) for o in overrides)


def per_task(overrides, sessions: int) -> int | None:
    """Sessions of each task type: one of each of the first task types (more when asking for more sessions than
    there are types); None (the limit alone) when the user chose the task."""
    return None if chooses_task(overrides) else math.ceil(sessions / len(TASK_TYPES))


def selection_overrides(model: str, overrides, sessions: int, chunks: int) -> list[str]:
    """Which sessions and chunks certify replays of ``model`` (the user's own ``task=`` / ``limit.*`` overrides come
    later and win), on the modeled clock, into folders it may overwrite."""
    if not (isinstance(sessions, int) and sessions >= 1 and isinstance(chunks, int) and chunks >= 1):
        raise CertifyError(f"--sessions and --chunks: must be integers >= 1, got {sessions!r} and {chunks!r}")
    kinds = FIXTURE_TASK_TYPES if model == "fixture" else TASK_TYPES
    types = [] if chooses_task(overrides) else [f"task.tasks=[{','.join(kinds[:sessions])}]"]
    return [*types, f"limit.sessions={sessions}", f"limit.chunks={chunks}", "clock=modeled", "overwrite=true"]


def thread_overrides(overrides, environ=os.environ) -> list[str]:
    """``threads=1`` unless the user chose the torch threads: a ``threads=`` override, or ``OMP_NUM_THREADS`` in
    ``environ``.

    Certify's models are small and its clock is modeled, so more threads buy nothing; on a machine whose cores are
    busy they cost much (a fixture forward measured 6.5 ms on one thread and 136 ms on two, on this project's 2-core
    machine under load: the threads wait on each other).

    >>> thread_overrides(["decoder.num_pred=4"], environ={})
    ['threads=1']
    >>> thread_overrides(["threads=4"], environ={}), thread_overrides([], environ={"OMP_NUM_THREADS": "2"})
    ([], [])
    """
    chosen = any(o.lstrip("+~").startswith("threads=") for o in overrides) or "OMP_NUM_THREADS" in environ
    return [] if chosen else ["threads=1"]


class Bench:
    """Certify's replays of one decoder on one model, with the AR references shared between settings (a session's
    AR tokens and KV cache never depend on the device being shared: ``ticktock.replay.concurrency``)."""

    def __init__(self, decoder: str, model: str, common: list[str], ours: list[str], folder: Path,
                 per_task: int | None, references: dict | None = None,
                 perturbations: tuple[str, ...] = PERTURBATIONS):
        self.decoder, self.model, self.common, self.ours = decoder, model, common, ours
        self.perturbations = perturbations
        self.folder, self.per_task = folder, per_task
        self._references = {} if references is None else references
        self._composed: dict[bool, DictConfig] = {}

    def config(self, setting: Setting, reference: bool = False) -> DictConfig:
        """The run config of the decoder (of AR for the ``reference``) in ``setting``: fp32 and eager attention
        where the model has these settings. Composed once per Bench, its run options checked then (a bad one is its
        one line before any check starts); settings are applied over it."""
        from ticktock.replay.config import check_run_options, compose_run

        if reference not in self._composed:
            decoder, ours = ("ar", []) if reference else (self.decoder, self.ours)
            cfg = compose_run(decoder, self.model, self.per_task, [*self.common, *ours])
            check_run_options(cfg)
            with open_dict(cfg):
                if "dtype" in cfg.model:
                    cfg.model.dtype = "float32"
                if "attn_implementation" in cfg.model:
                    cfg.model.attn_implementation = "eager"
            self._composed[reference] = cfg
        return setting.apply(self._composed[reference])

    def certify(self, setting: Setting, cuts: int, progress: Progress | None = None) -> list[Check]:
        """The six checks in ``setting``, in ``PROPERTIES``' order, each said to ``progress`` as it starts and
        ends. A replay the watchdog stopped raises ``ReplayTimedOut``."""
        progress = progress or Progress()
        label = f"{self.model}, {setting.label}"
        cfg = self.config(setting)
        folder = self.folder / slug(setting.label)
        progress.started(TOKENS, label, "replays the decoder, then AR" if self.needs_reference(setting)
                         else "replays the decoder; AR's replay of this sampling is reused")
        subject = replay(cfg, folder / "decoder")
        reference = self.reference(setting)
        tokens = progress.ended(tokens_equal_ar(subject, reference, label))
        logged = progress.checked(LOGGED, label, lambda: forwards_logged(subject, label))
        counters = progress.checked(COUNTERS, label, lambda: counters_agree(subject, label))
        cut_replays = cuts * len(self.perturbations) if "manifest" in cfg.task else 0
        progress.started(NO_PEEKING, label, f"up to {cut_replays} replays of the decoder with the audio after a cut "
                                            "replaced" if cut_replays else "")
        peeking = progress.ended(self.no_peeking(cfg, subject, cuts, folder, label))
        cache = progress.checked(CACHE, label, lambda: cache_equals_ar(subject, reference, label))
        progress.started(DETERMINISTIC, label, "replays the decoder again")
        again = replay(cfg, folder / "decoder-again", capture_caches=False)
        same = progress.ended(deterministic(subject, again, label))
        return [tokens, logged, counters, peeking, cache, same]

    def no_peeking(self, cfg: DictConfig, subject: Replay, cuts: int, folder: Path, label: str) -> Check:
        """The no-peeking check: no read of audio that had not arrived, whatever it changed (``early_read``), then
        nothing before a cut changed when the audio after it is replaced (``no_early_audio``)."""
        peeking = early_read(subject, label)
        if peeking is not None:
            return peeking
        if "manifest" not in cfg.task:
            return Check(NO_PEEKING, label, None, detail=f"task {cfg.task.get('name')} has no manifest to cut")
        return no_early_audio(subject, self.cut_replays(cfg, subject, cuts, folder), label)

    def cut_replays(self, cfg: DictConfig, subject: Replay, cuts: int, folder: Path) -> list:
        """The decoder's replays with the audio after each of ``cuts`` cuts (``plan_cuts``) replaced in each of the
        bench's perturbations (``ticktock.conformance.perturbations``): (cut, the cut in words, what replaced the
        audio, the replay) each."""
        order = replay_order(cfg, subject)
        made = []
        for k, (cut_ms, described) in enumerate(plan_cuts(subject, cuts, order, shared=_shares_device(cfg))):
            cut_s = {sid: (ms - Timeline(subject, sid).start_ms) / 1000.0 for sid, ms in cut_ms.items()}
            for kind in self.perturbations:
                perturbed = copy.deepcopy(cfg)
                perturbed.task.manifest = str(cut_audio(cfg, cut_s, folder / f"cut-{k}-{kind}-audio", seed=k,
                                                        perturbation=kind))
                made.append((cut_ms, described, DESCRIPTIONS[kind],
                             replay(perturbed, folder / f"cut-{k}-{kind}", capture_caches=False)))
        return made

    def reference_key(self, setting: Setting) -> tuple:
        return self.model, tuple(self.common), self.per_task, setting.sampling

    def needs_reference(self, setting: Setting) -> bool:
        """Whether ``reference(setting)`` has still to replay AR (it is replayed once per sampling)."""
        return self.reference_key(setting) not in self._references

    def reference(self, setting: Setting) -> Replay:
        """AR on the same sessions with the same sampling and seed, a session alone (replayed once per sampling)."""
        key = self.reference_key(setting)
        if key not in self._references:
            alone = Setting(setting.label, setting.sampling)
            folder = self.folder / f"ar-{slug(setting.label)}"
            self._references[key] = replay(self.config(alone, reference=True), folder)
        return self._references[key]


def _shares_device(cfg: DictConfig) -> bool:
    from ticktock.replay.concurrency import ConcurrencySettings

    return ConcurrencySettings.parse(cfg.get("concurrency")).shares_device


def slug(label: str) -> str:
    """A folder name for a label: ``greedy, 2 sessions`` -> ``greedy-2-sessions``."""
    return re.sub(r"[^a-z0-9]+", "-", label.lower()).strip("-")


# ------------------------------------------------------------------------------------------- cut points


def replay_order(cfg: DictConfig, subject: Replay) -> list[str]:
    """The replay's sessions in the order the run took them (the task's order)."""
    from ticktock.replay.config import build

    ids = set(subject.session_ids())
    return [s.session_id for s in build(cfg.task).sessions() if s.session_id in ids]


def plan_cuts(subject: Replay, count: int, order: list[str], shared: bool) -> list[tuple[dict[str, float], str]]:
    """``count`` cuts: each a time per session on the run's clock (ms) from which its audio is replaced (perturbed),
    and what it is in words. A cut lies inside an idle window that drafted a chunk (the middle of a gap between
    forwards, so that no forward starts at it).

    On a shared device every session is cut at the same device time (the device's work is causal in its time).
    Sessions replayed one after another form one timeline too (a decoder may carry state from a session to the
    next): a cut inside one session leaves the sessions before it whole (cut at +inf) and replaces all of every
    later one (-inf); successive cuts take the sessions from the last one back."""
    plans = []
    for k in range(count):
        if shared:
            at = cut_point(subject, order[0], k, count, everyone=True)
            plans.append(({sid: at for sid in order}, f"the audio of every session from {at / 1000:.3f} s of the "
                                                      "shared device's time on"))
            continue
        j = len(order) - 1 - k % len(order)
        at = cut_point(subject, order[j], k // len(order), math.ceil(count / len(order)))
        cut = {sid: math.inf if i < j else at if i == j else -math.inf for i, sid in enumerate(order)}
        later = " and every later session" if j + 1 < len(order) else ""
        plans.append((cut, f"the audio of session {order[j]} from {at / 1000:.3f} s on{later}"))
    return plans


def cut_point(subject: Replay, session_id: str, k: int, count: int, everyone: bool = False) -> float:
    """The ``k``-th of ``count`` cuts of a session: in the idle window of a chunk (one the decoder drafted in, when
    there is one), away from the start of every forward (of every session when ``everyone``)."""
    timeline = Timeline(subject, session_id)
    chunks = subject.chunks_of(session_id)[1:]
    windows = [c for c in chunks if c["window_budget_ms"] > 0] or chunks
    drafted = [c for c in windows if c["window_forwards"] > 0] or windows
    chunk = drafted[(k + 1) * len(drafted) // (count + 1)] if drafted else subject.chunks_of(session_id)[0]
    opens, closes = timeline.window_ms(chunk["chunk_index"])
    starts = sorted(Timeline(subject, sid).forward_start_ms(row) for sid in
                    (subject.session_ids() if everyone else [session_id]) for row in subject.forwards_of(sid))
    return quiet_point(opens, closes, starts)


def quiet_point(opens: float, closes: float, starts: list[float]) -> float:
    """The middle of the widest gap between forward starts inside [opens, closes] (its middle when none starts).

    >>> quiet_point(100.0, 900.0, [100.0, 110.0, 120.0, 700.0])
    410.0
    """
    marks = sorted({opens, closes, *(s for s in starts if opens <= s <= closes)})
    gaps = [(b - a, (a + b) / 2) for a, b in zip(marks, marks[1:])]
    return max(gaps)[1] if gaps else opens
