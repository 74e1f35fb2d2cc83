"""Losslessness and task quality per decoder.

- **Losslessness**: the share of the baseline's chunks whose ``output_token_ids`` each decoder reproduces
  exactly, in the same setup (same temperature and seed: the harness's keyed sampler makes even sampled
  outputs comparable token by token). Every decoder of the harness is lossless, so anything below 100%
  is a FAILURE: listed in ``Table.failures``, printed loudly, and fatal under ``--strict``.
- **Quality**: the task scores of ``ticktock.world.scoring.score_session`` pooled over each decoder's sessions.
  Under greedy decoding they must equal the baseline's exactly (a difference is a FAILURE); under sampling
  each rate gets a 95% Wilson interval.
- **Exact arithmetic only.** Token identity is guaranteed only in fp32 with eager attention
  (``exact_arithmetic``, from the model facts in run.json). In bf16, or with fused attention kernels, a tree
  forward and a chain forward round differently and outputs may diverge legitimately: there a divergence is
  reported (agreement, first divergence, and the quality metrics whose 95% Wilson intervals do not overlap the
  baseline's), never a FAILURE, so ``--strict`` fails only on divergence under exact arithmetic.
- **Judge scores** (``ticktock.judges``): where the runs carry judgement files (``python -m ticktock.judge``), a
  column per judge gives each decoder's mean score over its judged replies with a 95% Student-t interval over
  replies, and one its difference Δ to the baseline's mean, ✓ where |Δ| <= 0.1 on the 1-5 scale (the paper's
  criterion; scaled by the span on other scales). Reported only, never a FAILURE: under greedy decoding in exact
  arithmetic a lossless decoder's replies are the baseline's, so their scores are equal by construction. Only
  verdicts on the replies as they are now count (``Reply.digest``); a note names each judge and its fingerprint,
  or says that none is configured and how to run one.

Example::

    >>> [round(x, 3) for x in wilson(8, 10)]
    [0.49, 0.943]
    >>> mean_text([3.0, 4.0, 5.0], replies=4), delta_text(4.05, 4.0, (1, 5)), delta_text(3.8, 4.0, (1, 5))
    ('4.00 [1.52, 6.48] (3 of 4 replies)', '+0.05 ✓', '-0.20 ✗')
"""

from __future__ import annotations

import json
import math
from collections import Counter

import pandas as pd

from ticktock.judges.base import HOW_TO_JUDGE
from ticktock.judges.replies import run_replies
from ticktock.judges.store import judgement_files, no_judgements, read_judgements
from ticktock.world.scoring import score_session
from ticktock.tables import metrics
from ticktock.tables.common import (FAILED, NOT_CHECKED, PASSED, REPORTED, Check, Table, provenance_notes, run_names,
                                    setup_columns, setup_label, varying)
from ticktock.tables.load import Cell, Results, Setup

NOT_CHECKED_LIVE = "not checked: live"
LOSSY_DECODERS: frozenset[str] = frozenset()  # every decoder of the harness is lossless
QUALITY_METRICS = ["qa", "tool_strict", "tool_args", "tool_json", "respond", "false_speak", "pause", "stop", "keep", "ignore",
                   "backchannel", "backchannel_jsd"]
MEAN_METRICS = frozenset({"backchannel_jsd"})  # "hits" add up a distance per session: shown as a mean, lower is better
SCORE_COLUMNS = ["chunk_index", "start_s", "arrival_s", "kind", "output_text", "tool_calls_json"]
Z95 = 1.959963984540054
JUDGE_TOLERANCE = 0.1  # the paper's criterion on a judge's 1-5 scale: |mean - baseline mean| <= 0.1
JUDGE_SPAN = 4  # ... of that scale: on another scale the tolerance is scaled by its span


def wilson(hits: int, trials: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a binomial rate (95% by default)."""
    if trials == 0:
        return (math.nan, math.nan)
    p, n = hits / trials, trials
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return (max(0.0, centre - half), min(1.0, centre + half))


def exact_arithmetic(cell: Cell) -> tuple[bool, str]:
    """Whether a cell's runs computed in exact arithmetic for token identity (fp32 with eager attention), and its
    label, from run.json's model facts (a run that records neither is taken as exact: the strict reading; a live run
    is not: the client cannot know the server's arithmetic).

    >>> exact_arithmetic(type("C", (), {"runs": []})())
    (True, 'float32/eager')
    """
    if any(run.live for run in cell.runs):  # the server's arithmetic is not seen by the client: never a FAILURE
        return False, "not known (live endpoint)"
    labels = set()
    for run in cell.runs:
        model = (run.meta.get("environment") or {}).get("model") or {}
        labels.add((str(model.get("dtype") or "float32"), str(model.get("attn_implementation") or "eager")))
    labels = labels or {("float32", "eager")}
    exact = all(dtype == "float32" and attn == "eager" for dtype, attn in labels)
    return exact, ", ".join(sorted(f"{dtype}/{attn}" for dtype, attn in labels))


def quality_differences(base: Counter, counts: Counter) -> list[str]:
    """The quality metrics whose 95% Wilson intervals of the two cells do not overlap (as 'qa 40.0% vs 80.0%')."""
    found = []
    for m in QUALITY_METRICS:
        if m in MEAN_METRICS or not (base[f"{m}_trials"] and counts[f"{m}_trials"]):
            continue
        low, high = wilson(counts[f"{m}_hits"], counts[f"{m}_trials"])
        base_low, base_high = wilson(base[f"{m}_hits"], base[f"{m}_trials"])
        if high < base_low or low > base_high:
            found.append(f"{m} {counts[f'{m}_hits'] / counts[f'{m}_trials']:.1%} vs "
                         f"{base[f'{m}_hits'] / base[f'{m}_trials']:.1%}")
    return found


LOSSLESSNESS, GREEDY_QUALITY = "Losslessness", "Greedy quality"  # the checks' names in the report's banner
STATUS_OUTCOMES = {"ok": PASSED, "FAILURE": FAILED, "lossy by design": REPORTED,
                   "diverged (inexact arithmetic)": REPORTED}  # a losslessness row's status -> its check's outcome


def no_baseline_check(name: str, setup: Setup, cells: list[Cell], baseline: str) -> Check:
    """The check ``name`` not done in a setup without a run of the baseline (``cells``: the runs there)."""
    decoders = ", ".join(cell.decoder for cell in cells)
    return Check(name, NOT_CHECKED, setup_label(setup),
                 f"no {baseline} run of the same model, clock, device, sampling and seed beside these runs ({decoders}): "
                 f"nothing to compare them with (no speedup either)")


def baseline_alone_check(name: str, setup: Setup, baseline: str) -> Check:
    """The check ``name`` not done in a setup that holds only the baseline's run."""
    return Check(name, NOT_CHECKED, setup_label(setup), f"no decoder other than {baseline} in this setup: nothing to "
                                                        f"compare with {baseline}")


def shared_device_checks(results: Results, name: str) -> list[Check]:
    """The check ``name`` not done on concurrency runs: the checks compare the runs of one session alone on the
    device (``Results.single_session``), so concurrency runs beside such runs are not checked."""
    kept = {id(cell) for cell in results.single_session().cells}
    setups = dict.fromkeys(c.setup for c in results.cells if id(c) not in kept)
    return [Check(name, NOT_CHECKED, setup_label(setup), "a concurrency run (sessions sharing the device): the checks "
                                                         "compare runs of one session alone on the device")
            for setup in setups]


def grouped_checks(name: str, setup: Setup, outcomes: list[tuple[str, str]]) -> list[Check]:
    """One ``Check`` per outcome of the (outcome, what) pairs of a setup's decoders, their whats joined."""
    grouped: dict[str, list[str]] = {}
    for outcome, what in outcomes:
        grouped.setdefault(outcome, []).append(what)
    return [Check(name, outcome, setup_label(setup), "; ".join(whats)) for outcome, whats in grouped.items()]


def lossless_what(decoder: str, status: str, check: dict, arithmetic: str, baseline: str) -> str:
    """What a losslessness row says, for its check in the banner."""
    if status == "ok":
        return f"{decoder} token-identical to {baseline} on all {check['chunks']} chunks"
    if status == "FAILURE":
        return f"{decoder}: {check['share']:.1%} of {check['chunks']} chunks token-identical to {baseline}"
    if status == "lossy by design":
        return f"{decoder} is lossy by design: {check['share']:.1%} of {check['chunks']} chunks token-identical"
    return (f"{decoder}: {check['share']:.1%} of {check['chunks']} chunks token-identical to {baseline} in {arithmetic} "
            "arithmetic (token identity is guaranteed only in fp32 with eager attention)")


def losslessness_table(results: Results, baseline: str = "ar") -> Table:
    """Per decoder: the share of chunks token-identical to the baseline's in the same setup; a divergence is a
    FAILURE under exact arithmetic and is reported with its quality effect otherwise (module docstring). Its
    ``checks`` say per setup what was checked and what was not, and why (the report's banner). Like every table of
    one session at a time it uses ``Results.single_session``; the concurrency runs left out are said in ``checks``."""
    checks = shared_device_checks(results, LOSSLESSNESS)
    results = results.single_session()
    shown, rows, failures, notes = varying(results), [], [], []
    for setup in results.setups():
        base = results.cell(setup, baseline)
        if base is None:
            notes.append(f"no {baseline} run for setup {setup_label(setup)}: losslessness not checked there")
            checks.append(no_baseline_check(LOSSLESSNESS, setup, results.in_setup(setup), baseline))
            continue
        if len(results.in_setup(setup)) == 1:
            checks.append(baseline_alone_check(LOSSLESSNESS, setup, baseline))
            continue
        if setup.live:
            rows += [{**setup_columns(setup, shown), "decoder": cell.decoder, "status": NOT_CHECKED_LIVE}
                     for cell in results.in_setup(setup) if cell is not base]
            checks.append(Check(LOSSLESSNESS, NOT_CHECKED, setup_label(setup),
                                "live runs hold no token ids (the client sees text and audio, not tokens)"))
            continue
        outcomes = []
        for cell in results.in_setup(setup):
            if cell is base:
                continue
            check = metrics.losslessness(base.chunks, cell.chunks, (run_names(base), run_names(cell)))
            lossless = cell.decoder not in LOSSY_DECODERS
            exact, arithmetic = _pair_arithmetic(base, cell)
            diverged = check["identical"] < check["chunks"]
            failed = lossless and diverged and exact
            status = "FAILURE" if failed else ("ok" if lossless and not diverged else
                                               "lossy by design" if not lossless else "diverged (inexact arithmetic)")
            quality = ""
            if diverged and not failed:
                quality = "; ".join(quality_differences(quality_counts(base), quality_counts(cell))) or "no difference"
            rows.append({**setup_columns(setup, shown), "decoder": cell.decoder, "arithmetic": arithmetic,
                         "chunks": check["chunks"], "identical": check["identical"], f"identical to {baseline}": check["share"],
                         "first difference (session/chunk)": check["first_difference"] or "",
                         "quality vs baseline (95% CI)": quality, "status": status})
            outcomes.append((STATUS_OUTCOMES[status], lossless_what(cell.decoder, status, check, arithmetic, baseline)))
            if failed:
                failures.append(f"FAILURE: {cell.decoder} is lossless by design but only {check['share']:.1%} of "
                                f"{check['chunks']} chunks are token-identical to {baseline} in setup {setup_label(setup)} "
                                f"(first difference: {check['first_difference']}; runs {cell.names})")
        checks += grouped_checks(LOSSLESSNESS, setup, outcomes)
    if any(setup.live for setup in results.setups()):
        notes.append(f"{NOT_CHECKED_LIVE}: a live run's rows hold no token ids (the client sees the server's text and "
                     "audio, not its tokens), so token identity is not checked there; its task scores are in the "
                     "quality table")
    notes.append(f"every decoder here is lossless: in fp32 with eager attention anything below 100% token identity "
                 f"with {baseline} is a FAILURE; in other arithmetic (bf16, fused attention) a divergence is reported "
                 "with the quality metrics whose 95% Wilson intervals do not overlap the baseline's")
    title = f"Losslessness: chunks whose output tokens equal {baseline}'s (same session, chunk, temperature and seed)"
    return Table("losslessness", title, pd.DataFrame(rows), {f"identical to {baseline}": ".1%"},
                 notes, failures, provenance_notes(results), checks)


def _pair_arithmetic(base: Cell, cell: Cell) -> tuple[bool, str]:
    base_exact, base_label = exact_arithmetic(base)
    exact, label = exact_arithmetic(cell)
    return base_exact and exact, label if label == base_label else f"{label} (baseline {base_label})"


def quality_counts(cell: Cell) -> Counter:
    """The pooled score counts (``<metric>_hits``, ``<metric>_trials``) of a cell's sessions."""
    total = Counter()
    by_session = {sid: group for sid, group in cell.chunks.groupby("session_id", sort=False)}
    for session in cell.sessions.itertuples(index=False):
        group = by_session.get(session.session_id)
        if group is None:
            continue
        rows = group[SCORE_COLUMNS].to_dict("records")
        total += score_session(rows, json.loads(session.expected_json or "{}"), json.loads(session.turns_json or "[]"))
    return total


def _rate_text(counts: Counter, name: str, interval: bool) -> str:
    hits, trials = counts[f"{name}_hits"], counts[f"{name}_trials"]
    if not trials:
        return "–"
    if name in MEAN_METRICS:
        return f"{hits / trials:.3f} (mean of {trials})"
    text = f"{hits / trials:.1%} ({hits}/{trials})"
    if interval:
        low, high = wilson(hits, trials)
        text += f" [{100 * low:.1f}, {100 * high:.1f}]"
    return text


def score_differences(counts: Counter, base: Counter | None, present: list[str]) -> list[str]:
    """The metrics of ``present`` whose pooled hits or trials differ from the baseline's counts (none without one)."""
    if base is None:
        return []
    return [m for m in present if (counts[f"{m}_hits"], counts[f"{m}_trials"]) != (base[f"{m}_hits"], base[f"{m}_trials"])]


def greedy_quality_checks(results: Results, counted: dict, present: list[str], baseline: str) -> list[Check]:
    """Per setup, what the greedy quality check did: each decoder's task scores equal to the baseline's (passed),
    different in exact arithmetic (failed) or in other arithmetic (reported), or why it was not checked (sampled
    decoding, no baseline run, only the baseline's run, no scored trials)."""
    checks = []
    for setup in results.setups():
        cells, base = results.in_setup(setup), results.cell(setup, baseline)
        if base is None:
            checks.append(no_baseline_check(GREEDY_QUALITY, setup, cells, baseline))
        elif len(cells) == 1:
            checks.append(baseline_alone_check(GREEDY_QUALITY, setup, baseline))
        elif setup.temperature != 0:
            checks.append(Check(GREEDY_QUALITY, NOT_CHECKED, setup_label(setup),
                                f"sampled decoding (T={setup.temperature:g}): task scores are shown with 95% intervals, "
                                f"not required to equal {baseline}'s"))
        elif not present:
            checks.append(Check(GREEDY_QUALITY, NOT_CHECKED, setup_label(setup), "no scored trials in these sessions"))
        else:
            checks += grouped_checks(GREEDY_QUALITY, setup, [
                _quality_outcome(cell, base, counted, present, baseline) for cell in cells if cell is not base])
    return checks


def _quality_outcome(cell: Cell, base: Cell, counted: dict, present: list[str], baseline: str) -> tuple[str, str]:
    differs = score_differences(counted[(cell.setup, cell.decoder)], counted[(base.setup, base.decoder)], present)
    if not differs:
        return PASSED, f"{cell.decoder}'s task scores equal {baseline}'s ({', '.join(present)})"
    exact = exact_arithmetic(cell)[0] and exact_arithmetic(base)[0]
    return (FAILED if exact else REPORTED), (f"{cell.decoder}'s {', '.join(differs)} differ from {baseline}'s"
                                             + ("" if exact else " outside exact arithmetic (fp32, eager attention)"))


def quality_table(results: Results, baseline: str = "ar") -> Table:
    """Per decoder: pooled task-score rates; greedy must equal the baseline, sampling shows 95% CIs. Its ``checks``
    say per setup what the greedy check did and did not do (the report's banner). Like every table of one session at
    a time it uses ``Results.single_session``; the concurrency runs left out are said in ``checks``."""
    checks = shared_device_checks(results, GREEDY_QUALITY)
    results = results.single_session()
    shown, rows, failures = varying(results), [], []
    counted = {(c.setup, c.decoder): quality_counts(c) for c in results.cells}
    present = [m for m in QUALITY_METRICS if any(c[f"{m}_trials"] for c in counted.values())]
    for cell in results.cells:
        counts, greedy = counted[(cell.setup, cell.decoder)], cell.setup.temperature == 0
        base = counted.get((cell.setup, baseline))
        row = {**setup_columns(cell.setup, shown), "decoder": cell.decoder, "sessions": len(cell.sessions)}
        differs = score_differences(counts, base, present) if cell.decoder != baseline else []
        for m in present:
            row[m] = _rate_text(counts, m, interval=not greedy) + (f" ≠{baseline}" if m in differs else "")
        rows.append(row)
        if differs and greedy and exact_arithmetic(cell)[0] and (base_cell := results.cell(cell.setup, baseline)) \
                and exact_arithmetic(base_cell)[0]:
            detail = "; ".join(f"{m} {counts[f'{m}_hits']}/{counts[f'{m}_trials']} vs "
                               f"{base[f'{m}_hits']}/{base[f'{m}_trials']}" for m in differs)
            failures.append(f"FAILURE: {cell.decoder} task scores differ from {baseline} under greedy decoding in setup "
                            f"{setup_label(cell.setup)}: {detail}")
    checks += greedy_quality_checks(results, counted, present, baseline)
    notes = ["rates pooled over sessions: hits/trials of ticktock.world.scoring.score_session; greedy setups must equal "
             f"{baseline} exactly in fp32 with eager attention (≠ marks a difference; a FAILURE only in exact "
             "arithmetic); sampled setups show a 95% Wilson interval [low, high] in %",
             "backchannel_jsd: the official Jensen-Shannon distance between the model's backchannel timing and the "
             "ground-truth distribution (FDB v1, where the source ships it), mean over sessions; lower is better"]
    if not present:
        notes.insert(0, "no scored trials in these sessions")
    notes += add_judge_columns(results, rows, baseline)
    title = "Quality: task scores per decoder (lossless decoding must not change them)"
    return Table("quality", title, pd.DataFrame(rows), {}, notes, failures, provenance_notes(results), checks)


def cell_verdicts(cell: Cell) -> tuple[pd.DataFrame, int, int]:
    """(the stored judge verdicts on a cell's replies as they are now, how many replies the cell has, how many
    stored verdicts are stale: judged on a reply text that has changed since)."""
    frames, replies, stale = [], 0, 0
    for run in cell.runs:
        digests = {r.key: r.digest() for r in run_replies(run)}
        replies += len(digests)
        for path in judgement_files(run.path):
            stored = read_judgements(path)
            fresh = [digests.get((s, t)) == d for s, t, d in zip(stored.session_id, stored.turn_index, stored.input_sha256)]
            frames += [stored[fresh]] if any(fresh) else []
            stale += len(stored) - sum(fresh)
    return (pd.concat(frames, ignore_index=True) if frames else no_judgements()), replies, stale


def t_interval(scores: list[float]) -> tuple[float, float]:
    """The 95% Student-t interval of the mean of ``scores`` (NaN for fewer than two)."""
    from scipy.stats import t

    n = len(scores)
    if n < 2:
        return (math.nan, math.nan)
    mean = sum(scores) / n
    spread = math.sqrt(sum((x - mean) ** 2 for x in scores) / (n - 1)) / math.sqrt(n)
    half = float(t.ppf(0.975, n - 1)) * spread
    return (mean - half, mean + half)


def mean_text(scores: list[float], replies: int) -> str:
    """'mean [low, high] (n replies)': the mean score, its 95% t interval, and how many of the replies were judged."""
    if not scores:
        return "–"
    low, high = t_interval(scores)
    interval = f" [{low:.2f}, {high:.2f}]" if not math.isnan(low) else ""
    counted = f"{len(scores)} replies" if len(scores) == replies else f"{len(scores)} of {replies} replies"
    return f"{sum(scores) / len(scores):.2f}{interval} ({counted})"


def delta_text(mean: float, base_mean: float, scale: tuple[float, float]) -> str:
    """The difference to the baseline's mean, ✓ within the paper's tolerance (0.1 on 1-5), ✗ beyond."""
    delta = mean - base_mean
    return f"{delta:+.2f} {'✓' if abs(delta) <= tolerance(scale) + 1e-9 else '✗'}"


def tolerance(scale: tuple[float, float]) -> float:
    """The paper's criterion on a judge's scale: 0.1 on 1-5, scaled by the span on another."""
    return JUDGE_TOLERANCE * (scale[1] - scale[0]) / JUDGE_SPAN


def judge_column_names(verdicts: pd.DataFrame) -> dict[tuple[str, str], str]:
    """(judge, fingerprint) -> its column: 'judge <name>', with the fingerprint's start when a name has several."""
    pairs = sorted(set(zip(verdicts["judge"], verdicts["judge_fingerprint"])))
    names = [name for name, _ in pairs]
    return {(name, fp): f"judge {name}" if names.count(name) == 1 else f"judge {name} {fp[:8]}" for name, fp in pairs}


def add_judge_columns(results: Results, rows: list[dict], baseline: str) -> list[str]:
    """Add the judge columns to the quality table's ``rows`` (one per cell, in ``results.cells`` order); the notes."""
    none = [f"reply quality judge: none configured (the scores above are the rule-based task scores of "
            f"ticktock.world.scoring; to add each decoder's mean 1-5 grade from a local judge model, run: {HOW_TO_JUDGE})"]
    if not any(judgement_files(run.path) for cell in results.cells for run in cell.runs):
        return none  # (no reply is extracted when no run has been judged)
    judged = {(c.setup, c.decoder): cell_verdicts(c) for c in results.cells}
    found = [verdicts for verdicts, _, _ in judged.values() if not verdicts.empty]
    if not found:
        return stale_note(sum(stale for _, _, stale in judged.values())) or none
    every = pd.concat(found, ignore_index=True)
    columns = judge_column_names(every)
    for cell, row in zip(results.cells, rows):
        verdicts, replies, _ = judged[(cell.setup, cell.decoder)]
        base = judged.get((cell.setup, baseline), (no_judgements(), 0, 0))[0]
        for judge, column in columns.items():
            mine, theirs = of_judge(verdicts, judge), of_judge(base, judge)
            row[column] = mean_text(mine["score"].tolist(), replies)
            compared = cell.decoder != baseline and not mine.empty and not theirs.empty
            row[f"Δ {column} vs {baseline}"] = (delta_text(mine["score"].mean(), theirs["score"].mean(), scale_of(mine))
                                                if compared else "–")
    return judge_notes(every, columns, baseline) + stale_note(sum(stale for _, _, stale in judged.values()))


def of_judge(verdicts: pd.DataFrame, judge: tuple[str, str]) -> pd.DataFrame:
    """The verdicts of one judge configuration: (name, fingerprint)."""
    return verdicts[(verdicts["judge"] == judge[0]) & (verdicts["judge_fingerprint"] == judge[1])]


def scale_of(verdicts: pd.DataFrame) -> tuple[float, float]:
    """The (lowest, highest) score of a judge's verdicts (non-empty, one judge configuration)."""
    return float(verdicts["scale_min"].iloc[0]), float(verdicts["scale_max"].iloc[0])


def judge_notes(verdicts: pd.DataFrame, columns: dict[tuple[str, str], str], baseline: str) -> list[str]:
    notes = []
    for judge, column in columns.items():
        mine = of_judge(verdicts, judge)
        (low, high), fp = scale_of(mine), judge[1]
        notes.append(f"{column}: {mine['judge_description'].iloc[0]} (fingerprint {fp[:12]}); the mean score on its "
                     f"{low:g}-{high:g} scale over each decoder's judged replies, [low, high] its 95% Student-t interval "
                     f"over replies; Δ: the mean minus {baseline}'s, ✓ where |Δ| <= {tolerance((low, high)):g} (the paper's criterion, "
                     "0.1 on 1-5), ✗ beyond; reported only, never a FAILURE (greedy decoding in exact arithmetic gives "
                     "lossless decoders the baseline's replies, hence its scores)")
    return notes


def stale_note(stale: int) -> list[str]:
    if not stale:
        return []
    return [f"{stale} stored judge verdicts left out: the replies they judged have changed since (judge these runs "
            "again: python -m ticktock.judge)"]
