"""The ``Table`` record every builder returns, and the setup columns and provenance notes they share.

Every table says which model, clock (with the cost profile and its provenance) and device produced it:
rows carry the setup columns that vary across the results (always the model, named ``<model> (miniature, random
weights)`` when its weights were random, ``Setup.model_label``; the clock, its encode scale, device,
temperature, seed, the concurrency fields and the talker only when several are present), and the notes carry the
full provenance (a talker setup's talker included). The tables of one session at a time are built with
``@single_session``: from the runs of one session alone on the device (``Results.single_session``), never from
concurrency runs.

Example::

    >>> import pandas as pd
    >>> t = Table("demo", "Demo", pd.DataFrame({"decoder": ["ar"], "speedup": [1.0]}), {"speedup": ".2f"})
    >>> t.formatted().to_dict("records")
    [{'decoder': 'ar', 'speedup': '1.00'}]
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

import pandas as pd

from ticktock.clocks.sources import COST_FIELDS
from ticktock.clocks.sources import summary as sources_summary
from ticktock.tables.load import Results, Setup
from ticktock.tables.paper import not_measured_note

MISSING = "–"
NOT_SEEN = "n/a"  # a live run's cell the client cannot see (the server's #MAT, forwards, drafts, token ids)
NOT_PER_UNIT = "not measured (per-turn protocol)"  # lag, post-audio latency, deadlines of a turn-based live run
LIVE_NOTE = ("live endpoint: measured from the client's event stamps; #MAT and draft counters are the server's own "
             "and not seen by the client (shown as n/a), and so are the output token ids: losslessness is not "
             "checked on live runs; a live run is its own setup (model <served model>@<host>, clock live:<protocol>, "
             "device the endpoint), compared only with live runs of that setup")
PER_TURN_NOTE = ("per-turn protocol (run.json clock.per_unit false): the server does not say when it decided a unit "
                 "it listened through, so lag, post-audio latency, speedup and deadline misses are "
                 "not measured there; its onset, first audio, stalls and tool-call latency are")


PASSED, FAILED, REPORTED, NOT_CHECKED = "passed", "failed", "reported, not failed", "not checked"
OUTCOMES = (FAILED, PASSED, REPORTED, NOT_CHECKED)


@dataclass(frozen=True)
class Check:
    """What one check of a table did in one setup, for the report's banner: ``name`` (e.g. "Losslessness"),
    ``outcome`` (``FAILED``, ``PASSED``, ``REPORTED``: a difference shown that is by rule no failure, or
    ``NOT_CHECKED``), ``where`` (the setup's label) and ``detail`` (what was compared, or why nothing was).

    >>> Check("Losslessness", NOT_CHECKED, "m / wall / cpu / T=0 / seed 0", "no ar run beside these runs").line
    'Losslessness not checked in m / wall / cpu / T=0 / seed 0: no ar run beside these runs'
    """

    name: str
    outcome: str
    where: str
    detail: str

    @property
    def line(self) -> str:
        return f"{self.name} {self.outcome} in {self.where}: {self.detail}"


@dataclass
class Table:
    """A display-ready table: ``frame`` holds numbers (formatted by ``formats``) or strings; ``notes``
    explain it, ``failures`` are check failures to print loudly, ``provenance`` says what produced it, ``checks``
    what the table's checks did and did not do in each setup (the report's banner: ``Check``)."""

    key: str
    title: str
    frame: pd.DataFrame
    formats: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    provenance: list[str] = field(default_factory=list)  # model, clock (profile, provenance), device, sampling
    checks: list[Check] = field(default_factory=list)

    def formatted(self) -> pd.DataFrame:
        """Every cell as text: numbers by their column format, missing values as a dash."""
        out = self.frame.astype(object).copy()
        for column in out.columns:
            spec = self.formats.get(column)
            out[column] = [format_cell(v, spec) for v in self.frame[column]]
        return out


def format_cell(value, spec: str | None = None) -> str:
    """One cell as text.

    >>> format_cell(0.5, ".1%"), format_cell(float("nan"), ".2f"), format_cell(3), format_cell(None)
    ('50.0%', '–', '3', '–')
    """
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return MISSING
    if isinstance(value, float) and math.isinf(value):
        return "inf"
    if spec and isinstance(value, (int, float)) and not isinstance(value, bool):
        return format(value, spec)
    return str(value)


PAPER_PREFIX = "paper "  # the paper's columns beside ours: "paper speedup", "paper #MAT", "paper onset ms", ...


def paper_columns_kept(frame: pd.DataFrame, notes: list[str], paper_notes: list[str]) -> tuple[pd.DataFrame, list[str]]:
    """``frame`` without the paper's columns that hold no value in any row (every setup shown is of another kind
    than the paper's: ``Setup.compares_with_paper``), and ``notes`` with ``paper_notes`` (what the paper's columns
    are) added only when a paper column is left.

    >>> frame = pd.DataFrame({"decoder": ["ar"], "ms": [90.0], "paper speedup": [""], "paper #MAT": [""]})
    >>> kept, notes = paper_columns_kept(frame, ["ours"], ["paper columns: ..."])
    >>> list(kept.columns), notes
    (['decoder', 'ms'], ['ours'])
    """
    empty = [c for c in frame.columns
             if str(c).startswith(PAPER_PREFIX) and not (frame[c].astype(str).str.strip() != "").any()]
    kept = frame.drop(columns=empty)
    shown = any(str(c).startswith(PAPER_PREFIX) for c in kept.columns)
    return kept, [*notes, *(paper_notes if shown else [])]


def single_session(builder):
    """Decorate a table builder ``builder(results, ...)`` so that it sees only ``results.single_session()``: the runs
    of one session alone on the device (concurrency runs appear in Figure 4c only)."""
    @functools.wraps(builder)
    def build(results: Results, *args, **kwargs):
        return builder(results.single_session(), *args, **kwargs)
    return build


SHARING_FIELDS = ("concurrency", "batching", "max_batch", "batch_encodings", "stagger", "draft_policy",
                  "draft_policy_args")
TALKER_FIELDS = ("talker", "talker_args", "playback_delay_ms")  # what spoke, and how its speech was played


def varying(results: Results, candidates: tuple[str, ...] | None = None) -> list[str]:
    """Setup fields shown as row columns: the model always, the others when they take several values."""
    setups = results.setups()
    shown = ["model"]
    for name in candidates or ("clock", "encode_scale", "device", "temperature", "seed", "top_k", "top_p",
                               *SHARING_FIELDS, *TALKER_FIELDS):
        if len({getattr(s, name) for s in setups}) > 1 and (name != "talker_args" or _talker_settings_vary(setups)):
            shown.append(name)
    return shown


def _talker_settings_vary(setups: list[Setup]) -> bool:
    """Whether one talker runs with several settings (a talker's name alone tells the others apart)."""
    return len({(s.talker, s.talker_args) for s in setups}) > len({s.talker for s in setups})


COLUMN_NAMES = {"temperature": "T", "concurrency": "N", "max_batch": "max batch", "draft_policy": "draft policy",
                "draft_policy_args": "draft policy settings", "talker_args": "talker settings",
                "encode_scale": "encode scale", "playback_delay_ms": "playback delay ms",
                "batch_encodings": "batched encodings"}


def setup_columns(setup: Setup, shown: list[str]) -> dict:
    """A row's setup columns: the fields in ``shown``, the model by its label (random weights said: ``model_label``).

    >>> setup_columns(Setup("gander", "wall", "cpu", 0.0, 0, 1.0, 0, random_weights=True, miniature=True), ["model"])
    {'model': 'gander (miniature, random weights)'}
    """
    return {COLUMN_NAMES.get(name, name): setup.model_label if name == "model" else getattr(setup, name)
            for name in shown}


def random_weights_note(setup: Setup) -> str:
    """The provenance line of a setup whose model had random weights ('' for real weights).

    >>> random_weights_note(Setup("gander", "wall", "cpu", 0.0, 0, 1.0, 0, random_weights=True, miniature=True))[:69]
    'model gander (miniature, random weights): its weights are random (run'
    """
    if not setup.random_weights:
        return ""
    what = "a miniature checkpoint (ticktock.miniatures)" if setup.miniature else "random_init"
    return (f"model {setup.model_label}: its weights are random (run.json environment.model.random_weights: "
            f"{what}): it measures the harness, not the model; its speedups and latencies say nothing about the "
            f"real {setup.model}, so no paper value is shown for it")


def paper_model_note(setup: Setup) -> str:
    """The provenance line of an in-process setup whose model the paper did not measure (``paper.not_measured_note``;
    '' for one it did, and for a live run: its model is what a server reports, never set beside the paper's).

    >>> paper_model_note(Setup("fixture", "wall", "cpu", 0.0, 0, 1.0, 0))[:42]
    'model fixture: not one the paper measured '
    >>> paper_model_note(Setup("gander", "wall", "cpu", 0.0, 0, 1.0, 0))
    ''
    """
    return "" if setup.live else not_measured_note(setup.model)


def describe_model(meta: dict) -> str:
    endpoint = (meta.get("environment") or {}).get("endpoint")
    if isinstance(endpoint, dict):
        return describe_endpoint(endpoint)
    model = (meta.get("environment") or {}).get("model") or {}
    parts = [str(model[k]) for k in ("architecture",) if model.get(k)]
    if model.get("parameters"):
        parts.append(f"{int(model['parameters']):,} parameters")
    parts += [f"{model[k]}" for k in ("dtype",) if model.get(k)]
    if model.get("device"):
        parts.append(f"run on {model['device']}")
    return ", ".join(parts) or "no description recorded"


def describe_endpoint(endpoint: dict) -> str:
    """A live run's model line: what the server at the endpoint reported (run.json ``environment.endpoint``).

    >>> describe_endpoint({"host": "127.0.0.1:8000", "reported_model": "embedded", "served_decoder": "ar"})
    'served live at 127.0.0.1:8000: model embedded (as the server reports it), decoder ar'
    """
    parts = [f"model {endpoint.get('reported_model') or endpoint.get('served_model') or 'not reported'} (as the "
             "server reports it)"]
    if endpoint.get("served_decoder"):
        parts.append(f"decoder {endpoint['served_decoder']}")
    return f"served live at {endpoint.get('host') or 'an endpoint'}: {', '.join(parts)}"


def describe_clock(meta: dict, setup: Setup) -> str:
    """The provenance line of a setup's clock: its cost profile (with its provenance) or the measuring device, and
    the audio-encoding what-if (``clock.encode_scale``) when there is one.

    >>> meta = {"clock": {"name": "modeled", "profile": "p", "profile_provenance": "derived", "encode_scale": 0.25}}
    >>> print(describe_clock(meta, Setup("m", "modeled:p", "A100", 0.0, 0, 1.0, 0, encode_scale=0.25)))
    clock modeled:p (encode cost x0.25): modeled from cost profile p for device A100, every audio encoding charged 0.25 times the profile's cost (clock.encode_scale, a what-if); provenance: derived
    """
    clock = meta.get("clock") or {}
    if clock.get("kind") == "live":
        decides = "every unit decided by the server" if clock.get("per_unit") is not False else "replies, per turn"
        return (f"clock {clock_label(setup)}: live, in real time on the client's monotonic clock, against "
                f"{setup.device} ({decides})")
    if clock.get("profile"):
        provenance = clock.get("profile_provenance") or "no provenance recorded"
        scaled = encode_scale_note(setup)
        sources = sources_summary(clock.get("profile_sources"))
        return (f"clock {clock_label(setup)}: modeled from cost profile {clock['profile']} for device {setup.device}"
                f"{scaled}; provenance: {provenance}" + (f"; sources: {sources}" if sources else ""))
    return f"clock {clock_label(setup)}: measured on device {setup.device}"


def clock_headline(meta: dict, setup: Setup) -> str:
    """A setup's clock as the report's first lines say it: live, modeled (by which cost profile, for which device,
    and whether the profile's costs were measured: ``profile_standing``) or measured on which device.

    >>> meta = {"clock": {"name": "modeled", "profile": "p", "profile_sources": {"forward_ms": {"derived": "x"}}}}
    >>> print(clock_headline(meta, Setup("m", "modeled:p", "A100 (derived)", 0.0, 0, 1.0, 0)))
    modeled clock modeled:p: every latency is charged by cost profile p for A100 (derived), not timed on the machine that ran it; a derived profile, not measured: derived forward_ms
    >>> clock_headline({"clock": {"name": "wall"}}, Setup("m", "wall", "Test CPU", 0.0, 0, 1.0, 0))
    'wall clock: measured on Test CPU'
    """
    clock = meta.get("clock") or {}
    if clock.get("kind") == "live":
        return f"live clock {clock_label(setup)}: measured in real time on the client's clock against {setup.device}"
    if clock.get("profile"):
        return (f"modeled clock {clock_label(setup)}: every latency is charged by cost profile {clock['profile']} for "
                f"{setup.device}{encode_scale_note(setup)}, not timed on the machine that ran it; "
                f"{profile_standing(clock)}")
    return f"{clock_label(setup)} clock: measured on {setup.device}"


def profile_standing(clock: dict) -> str:
    """Whether a modeled clock's cost profile was measured, from the sources its cost fields name (run.json
    ``clock.profile_sources``; a talker's cost is left out: it charges only runs with a talker), or its provenance
    when it names none.

    >>> profile_standing({"profile_sources": {"forward_ms": {"measured": "calibrate"}, "encode_ms": {"derived": "x"}}})
    'a partly measured profile: measured forward_ms; derived encode_ms'
    >>> profile_standing({"profile_provenance": "DERIVED for tests"})
    'profile provenance: DERIVED for tests'
    """
    sources = clock.get("profile_sources") if isinstance(clock.get("profile_sources"), dict) else {}
    costs = {name: entry for name, entry in sources.items()
             if name in COST_FIELDS and isinstance(entry, dict) and len(entry) == 1}
    if not costs:
        return f"profile provenance: {clock.get('profile_provenance') or 'none recorded'}"
    kinds = {kind for entry in costs.values() for kind in entry}
    if kinds == {"measured"}:
        standing = "a measured profile"
    elif "measured" in kinds:
        standing = "a partly measured profile"
    else:
        standing = "a derived profile, not measured" if "derived" in kinds else "a profile not measured"
    return f"{standing}: {sources_summary(costs)}"


def clock_lines(results: Results) -> list[str]:
    """One line per clock the results' figures are on (``clock_headline``), with its runs and models when the
    results hold several clocks."""
    groups: dict[str, list] = {}
    for cell in results.cells:
        groups.setdefault(clock_headline(cell.meta, cell.setup), []).append(cell)
    if len(groups) == 1:
        return list(groups)
    lines = []
    for line, cells in groups.items():
        runs = len({run.path for cell in cells for run in cell.runs})
        models = ", ".join(dict.fromkeys(cell.setup.model_label for cell in cells))
        lines.append(f"{line} ({runs} run{'s' if runs != 1 else ''}: model {models})")
    return lines


def encode_scale_note(setup: Setup) -> str:
    """The audio-encoding what-if of a modeled setup in words (empty at scale 1).

    >>> encode_scale_note(Setup("m", "modeled:p", "A100", 0.0, 0, 1.0, 0, encode_scale=0.25))
    ", every audio encoding charged 0.25 times the profile's cost (clock.encode_scale, a what-if)"
    """
    if setup.encode_scale == 1.0:
        return ""
    return f", every audio encoding charged {setup.encode_scale:g} times the profile's cost (clock.encode_scale, a what-if)"


def clock_label(setup: Setup) -> str:
    """A setup's clock with its audio-encoding what-if, when it has one.

    >>> clock_label(Setup("m", "modeled:p", "A100", 0.0, 0, 1.0, 0)), clock_label(Setup("m", "modeled:p", "A100", 0.0,
    ...                                                                                0, 1.0, 0, encode_scale=0.5))
    ('modeled:p', 'modeled:p (encode cost x0.5)')
    """
    return setup.clock if setup.encode_scale == 1.0 else f"{setup.clock} (encode cost x{setup.encode_scale:g})"


def noisy(meta: dict) -> bool:
    """Whether a run's wall-clock timing noise (run.json ``timing_noise``, ``ticktock.clocks.noise``) exceeds
    the threshold recorded with it.

    >>> noisy({"timing_noise": {"spread": 3.2, "max_spread": 1.5}}), noisy({"timing_noise": None}), noisy({})
    (True, False, False)
    """
    noise = meta.get("timing_noise") or {}
    return "spread" in noise and float(noise["spread"]) > float(noise.get("max_spread", 1.5))


def describe_noise(results: Results, setup: Setup) -> list[str]:
    """The provenance line on the timing noise of a setup's wall-clock runs (none when nothing was measured):
    each decoder's probe spread (slowest / fastest), the noisy ones flagged."""
    parts, flagged = [], False
    for cell in results.in_setup(setup):
        for run in cell.runs:
            noise = run.meta.get("timing_noise") or {}
            if "spread" in noise:
                flag = noisy(run.meta)
                flagged |= flag
                parts.append(f"{cell.decoder} {noise['spread']:.2f} (median {noise['median_ms']:.1f} ms)"
                             + (" NOISY" if flag else ""))
    if not parts:
        return []
    head = "WARNING: noisy timings; " if flagged else ""
    return [f"{head}timing noise of clock {clock_label(setup)} (a fixed probe forward, slowest / fastest): "
            + ", ".join(parts)]


def noise_warnings(results: Results) -> list[str]:
    """One warning per run whose wall-clock timings were noisy (to print beside the tables)."""
    warnings = []
    for run in results.runs:
        if noisy(run.meta):
            noise = run.meta["timing_noise"]
            warnings.append(f"run {run.path}: wall-clock timings are noisy: the same probe forward took "
                            f"{noise['min_ms']:.1f} to {noise['max_ms']:.1f} ms (spread {noise['spread']:.2f} > "
                            f"{noise['max_spread']}); see the README on stable wall-clock figures")
    return warnings


def provenance_notes(results: Results, setups: list[Setup] | None = None) -> list[str]:
    """One line per model and per clock (with its device and profile provenance) behind the table, then the
    interrupted runs used and the runs skipped (``Results.provenance``)."""
    setups = setups if setups is not None else results.setups()
    lines, seen = [], set()
    for setup in setups:
        cell = next(c for c in results.cells if c.setup == setup)
        noise = describe_noise(results, setup)
        weights = [note for note in (random_weights_note(setup), paper_model_note(setup)) if note]
        model = f"model {setup.model_label}: {describe_model(cell.meta)}"
        for line in (model, *weights, describe_clock(cell.meta, setup), *noise):
            if line not in seen:
                seen.add(line)
                lines.append(line)
        sampling = f"T={setup.temperature:g}, seed {setup.seed}"
        if setup.top_k or setup.top_p != 1.0:
            sampling += f", top_k {setup.top_k}, top_p {setup.top_p:g}"
        if sampling not in seen:
            seen.add(sampling)
            lines.append(f"sampling: {sampling}" + (" (greedy)" if setup.temperature == 0 else ""))
        if setup.shares_device:
            line = f"concurrency: {describe_sharing(setup)}"
            if line not in seen:
                seen.add(line)
                lines.append(line)
        if setup.speaks:
            line = describe_speech(cell.meta, setup)
            if line not in seen:
                seen.add(line)
                lines.append(line)
        if setup.live:
            for line in live_notes(results, setup):
                if line not in seen:
                    seen.add(line)
                    lines.append(line)
    return lines + results.provenance()


def live_notes(results: Results, setup: Setup) -> list[str]:
    """What the tables must say about a live setup: how it was measured (``LIVE_NOTE``), that a turn-based protocol
    measures no lag (``PER_TURN_NOTE``), and frames sent late (``send_lag_note``)."""
    cells = results.in_setup(setup)
    notes = [LIVE_NOTE] + ([PER_TURN_NOTE] if not all(c.per_unit for c in cells) else [])
    late = send_lag_note([run.meta for cell in cells for run in cell.runs], setup_label(setup))
    return notes + ([late] if late else [])


def send_lag_note(metas: list[dict], label: str) -> str | None:
    """The note on a live setup whose client did not keep real time: run.json ``send_lag.late_units`` > 0 (units
    with an audio frame sent later than ``send_lag.bound_ms``), over its runs; None when every frame left on time.

    >>> send_lag_note([{"send_lag": {"units": 240, "late_units": 12, "bound_ms": 20}},
    ...                {"send_lag": {"units": 240, "late_units": 0, "bound_ms": 20}}], "live setup")
    'live setup: 12 of 480 units had audio frames sent later than 20 ms: the client machine did not keep real time; its latencies include that (run.json send_lag)'
    >>> send_lag_note([{"send_lag": {"units": 12, "late_units": 0, "bound_ms": 20}}], "x") is None
    True
    """
    lags = [m["send_lag"] for m in metas if isinstance(m.get("send_lag"), dict)]
    late = sum(int(lag.get("late_units") or 0) for lag in lags)
    if not late:
        return None
    units = sum(int(lag.get("units") or 0) for lag in lags)
    bounds = "/".join(f"{float(b):g}" for b in sorted({lag.get("bound_ms") for lag in lags if lag.get("bound_ms") is not None}))
    return (f"{label}: {late} of {units} units had audio frames sent later than {bounds or '?'} ms: the client machine "
            "did not keep real time; its latencies include that (run.json send_lag)")


def describe_speech(meta: dict, setup: Setup) -> str:
    """The provenance line of a talker setup: the talker (run.json ``talker``: its engine, rate and how its work was
    charged), as a run of that setup recorded it.

    >>> meta = {"talker": {"name": "espeak", "sample_rate": 22050, "engine": "espeak-ng", "charged": "measured"}}
    >>> print(describe_speech(meta, Setup("m", "wall", "cpu", 0.0, 0, 1.0, 0, talker="espeak", talker_args='{"v": 1}')))
    talker espeak {"v": 1}: espeak-ng, 22050 Hz, its work measured on the run's clock
    """
    talker = meta.get("talker") if isinstance(meta.get("talker"), dict) else {}
    parts = [str(talker["engine"])] if talker.get("engine") else []
    if talker.get("sample_rate"):
        parts.append(f"{talker['sample_rate']} Hz")
    charged = talker.get("charged")
    if isinstance(charged, dict):
        streams = "streaming" if charged.get("streams") else "not streaming"
        parts.append(f"its work charged {charged.get('first_packet_ms')} ms to the first audio + "
                     f"{charged.get('ms_per_audio_s')} ms per second of audio ({streams}"
                     + (f"; {charged['provenance']}" if charged.get("provenance") else "") + ")")
    elif charged:
        parts.append(f"its work {charged} on the run's clock")
    return f"{describe_talker(setup)}: {', '.join(parts) or 'no description recorded'}"


def describe_talker(setup: Setup) -> str:
    """The talker of a setup in words ('' without one).

    >>> describe_talker(Setup("m", "wall", "cpu", 0.0, 0, 1.0, 0, talker="espeak", talker_args='{"rate_wpm": 175}'))
    'talker espeak {"rate_wpm": 175}'
    """
    if not setup.speaks:
        return ""
    return f"talker {setup.talker}" + (f" {setup.talker_args}" if setup.talker_args else "")


def describe_sharing(setup: Setup) -> str:
    """How a concurrency run shared the device, in words ('' for one session alone).

    >>> describe_sharing(Setup("m", "wall", "cpu", 0.0, 0, 1.0, 0, 4, True, 2, "random", "round_robin"))
    'N=4 sessions on one device, batching (max 2), stagger random, draft policy round_robin'
    >>> describe_sharing(Setup("m", "wall", "cpu", 0.0, 0, 1.0, 0, 4, True, None, "random", "round_robin",
    ...                        batch_encodings=True))
    'N=4 sessions on one device, batching, batched encodings, stagger random, draft policy round_robin'
    >>> describe_sharing(Setup("m", "wall", "cpu", 0.0, 0, 1.0, 0, 4, False, None, "random", "round_robin",
    ...                        batch_encodings=True))
    'N=4 sessions on one device, no batching of forwards, batched encodings, stagger random, draft policy round_robin'
    """
    if not setup.shares_device:
        return ""
    batching = (f"batching (max {setup.max_batch})" if setup.max_batch else "batching") if setup.batching else "no batching"
    if setup.batch_encodings:
        batching = f"{batching if setup.batching else 'no batching of forwards'}, batched encodings"
    stagger = setup.stagger if setup.stagger in ("", "random") else f"{setup.stagger} ms per slot"
    policy = f"draft policy {setup.draft_policy or 'unnamed'}"
    policy += f" {setup.draft_policy_args}" if setup.draft_policy_args else ""
    return f"N={setup.concurrency} sessions on one device, {batching}, stagger {stagger}, {policy}"


def setup_label(setup: Setup) -> str:
    """A one-line name of a setup (for notes, errors and figure panels).

    >>> setup_label(Setup("m", "wall", "cpu", 0.3, 0, 1.0, 0))
    'm / wall / cpu / T=0.3 / seed 0'
    >>> setup_label(Setup("m", "wall", "cpu", 0.3, 0, 1.0, 0, concurrency=4, stagger="random", draft_policy="round_robin"))
    'm / wall / cpu / T=0.3 / seed 0 / N=4 sessions on one device, no batching, stagger random, draft policy round_robin'
    >>> setup_label(Setup("m", "wall", "cpu", 0.0, 0, 1.0, 0, talker="espeak"))
    'm / wall / cpu / T=0 / seed 0 / talker espeak'
    >>> setup_label(Setup("m", "modeled:p", "A100", 0.0, 0, 1.0, 0, encode_scale=0.25))
    'm / modeled:p (encode cost x0.25) / A100 / T=0 / seed 0'
    >>> setup_label(Setup("m", "wall", "cpu", 0.0, 0, 1.0, 0, talker="espeak", playback_delay_ms=200.0))
    'm / wall / cpu / T=0 / seed 0 / talker espeak / playback delay 200 ms'
    >>> setup_label(Setup("m", "wall", "cpu", 0.0, 0, 1.0, 0, random_weights=True))
    'm (random weights) / wall / cpu / T=0 / seed 0'
    """
    label = f"{setup.model_label} / {clock_label(setup)} / {setup.device} / T={setup.temperature:g} / seed {setup.seed}"
    label = f"{label} / {describe_sharing(setup)}" if setup.shares_device else label
    label = f"{label} / {describe_talker(setup)}" if setup.speaks else label
    return f"{label} / playback delay {setup.playback_delay_ms:g} ms" if setup.playback_delay_ms else label


def run_names(cell) -> str:
    return f"{cell.decoder} run(s) {cell.names}"
