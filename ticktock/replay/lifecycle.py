"""One run's lifecycle, for every kind of run: a model replayed in process (``ticktock.replay.runner``) and a live
endpoint (``ticktock.endpoints.run``) go through the same steps, and differ only in where their units come from (a
``UnitSource``).

1. The options are checked (the run's and the source's own), the folder must be writable, the task's sessions are
   chosen (limits; a missing audio file stops here), a folder that holds a run of another configuration is refused
   as far as the source can tell before preparing (``identity_before_prepare``), and the source gets ready
   (``prepare``: a model is built, an endpoint is asked who it is): all before any folder is made, so a refused run
   leaves nothing behind. The source
   may then name the run's folder (``run_folder``: a live run's, from what its server said it is).
2. With the folder's lock held (``ticktock.replay.run_folder.holding_lock``): the run's identity (the source's),
   its shard, its writer (a folder holding another run is refused), its run id and labels; run.json says "running"
   with a heartbeat; a resumed run keeps what it completed (``sessions_to_replay``).
3. The source holds the sessions still to do and writes each one as it ends (``RunWriter``); what did not finish is
   recorded in one ``SessionOutcome`` (skipped, partial, failed, how they ended).
4. Whatever happens, the tables are consolidated and run.json gets its status, the outcome and the source's final
   figures; the summary (``RunSummary``) gives the one line the command prints, and exit 6 when a session did not
   finish (``RunSummary.check_finished``).

Example (what ``ticktock.replay.runner.run`` is)::

    summary = run_lifecycle(cfg, run_dir, ReplayedUnits())
    print(summary.line()); summary.check_finished()
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from omegaconf import DictConfig

from ticktock.errors import SessionsUnfinished


class UnitSource:
    """Where a run's units come from; the steps of ``run_lifecycle`` that differ by kind of run.

    ``check(cfg)``: the source's own options, one line each, before any work. ``prepare(cfg, task, sessions)``: get
    ready (build the model, ask the endpoint who it is), before the folder is made. ``run_folder(cfg, run_dir)``:
    the run's folder once ready (``run_dir``, or one the source names). ``identity(cfg)``: what makes two
    runs of this kind the same run. ``labels(cfg)``: the run's ``model``, ``decoder`` and ``clock`` names (and
    ``talker`` where the source knows it). ``describe(cfg, labels, previous)``: run.json's keys of this kind
    (``previous``: the run.json of the run resumed, or None). ``profile_digest``: the digest of the cost profile that
    charges the run (None: none). ``hold(cfg, sessions, writer, labels, heartbeat, outcome)``: replay and write the
    sessions, recording in ``outcome`` those that did not finish. ``finished(run_dir, outcome)``: run.json's keys
    once the run ends. ``figures(run_dir)``: the summary line's measured part (``8 chunks | post-audio ...``)."""

    profile_digest: str | None = None

    def check(self, cfg: DictConfig) -> None:
        raise NotImplementedError

    def prepare(self, cfg: DictConfig, task, sessions: list) -> None:
        raise NotImplementedError

    def run_folder(self, cfg: DictConfig, run_dir: Path) -> Path:
        """The run's folder once the source is ready: ``run_dir`` as given, unless the source names its own (a live
        run, from what its server said it is)."""
        return run_dir

    def identity(self, cfg: DictConfig) -> dict:
        raise NotImplementedError

    def identity_before_prepare(self, cfg: DictConfig) -> tuple[dict, tuple[str, ...]] | None:
        """The part of ``identity(cfg)`` known before ``prepare``, and the keys only ``prepare`` makes known; None
        (the default) when the folder is only known after ``prepare``. A folder holding a run of another
        configuration is then refused before the source prepares (a model of many GB is not loaded to be refused)."""
        return None

    def labels(self, cfg: DictConfig) -> dict:
        raise NotImplementedError

    def describe(self, cfg: DictConfig, labels: dict, previous: dict | None) -> dict:
        raise NotImplementedError

    def hold(self, cfg: DictConfig, sessions: list, writer, labels: dict, heartbeat, outcome: SessionOutcome) -> None:
        raise NotImplementedError

    def finished(self, run_dir: Path, outcome: SessionOutcome) -> dict:
        return {}

    def figures(self, run_dir: Path) -> str:
        raise NotImplementedError


@dataclass
class SessionOutcome:
    """What a run's sessions did beyond their rows (run.json): ``skipped`` (bad audio, with ``skip_bad_sessions``),
    ``failed`` (nothing of them written), ``partial`` (ended early: the units decided before are written apart,
    ``RunWriter.write_partial``), each ``{"session_id", ...}``; ``endings``: how live sessions ended -> how many.

    >>> outcome = SessionOutcome()
    >>> outcome.fail("s1", "session s1: the server closed the connection", "endpoint")   # one line on stderr
    >>> outcome.failed
    [{'session_id': 's1', 'error': 'session s1: the server closed the connection'}]
    """

    skipped: list = field(default_factory=list)
    failed: list = field(default_factory=list)
    partial: list = field(default_factory=list)
    endings: dict = field(default_factory=dict)
    not_decisions: dict = field(default_factory=dict)

    def fail(self, session_id: str, reason: str, who: str) -> None:
        """A session of which nothing is written; one line on stderr (``who``: what saw it, e.g. ``watchdog``)."""
        self.failed.append({"session_id": session_id, "error": reason})
        print(f"{who}: {reason}: session failed, nothing of it written (a rerun replays it); the run goes on",
              file=sys.stderr)

    def cut_short(self, session_id: str, reason: str, failed_at_unit: int, decided: int, units: int) -> None:
        """A session that ended early with ``decided`` of its ``units`` decided (written apart); one line."""
        self.partial.append({"session_id": session_id, "reason": reason, "failed_at_unit": failed_at_unit,
                             "units_decided": decided, "units": units})
        print(f"endpoint: {reason}: session partial, its {decided} decided units of {units} written apart "
              "(partial/; in no table; a rerun replays it); the run goes on", file=sys.stderr)

    def ended(self, how: str) -> None:
        self.endings[how] = self.endings.get(how, 0) + 1

    def how(self, session_id: str) -> str:
        """How a session this outcome saw end: ``skipped``, ``failed`` or ``partial`` where recorded so, else ``done``
        (what a run's progress line says, ``ticktock.replay.progress``).

        >>> SessionOutcome(skipped=[{"session_id": "s1"}]).how("s1"), SessionOutcome().how("s2")
        ('skipped', 'done')
        """
        for how, records in (("skipped", self.skipped), ("failed", self.failed), ("partial", self.partial)):
            if any(record.get("session_id") == session_id for record in records):
                return how
        return "done"

    def listened_apart(self, counts: dict) -> None:
        """Count a live session's ``response.listen`` events that decided no unit, by what they were."""
        for what, count in counts.items():
            self.not_decisions[what] = self.not_decisions.get(what, 0) + count

    def record(self) -> dict:
        """run.json's keys: ``skipped_sessions``, ``failed_sessions``, ``partial_sessions`` (and ``session_endings``
        when sessions said how they ended, ``listens_not_decisions`` when a server sent listens that decided no
        unit)."""
        return {"skipped_sessions": self.skipped, "failed_sessions": self.failed, "partial_sessions": self.partial,
                **({"session_endings": self.endings} if self.endings else {}),
                **({"listens_not_decisions": self.not_decisions} if self.not_decisions else {})}


@dataclass
class RunSummary:
    """What a run did: the sessions complete (``sessions``), skipped, partial and failed, the row counts and the
    measured figures of its summary line.

    >>> summary = RunSummary(Path("r"), "m-ar-modeled-1234abcd", 2, 0, {"chunks": 8}, "8 chunks | ...", failed=1)
    >>> summary.line()
    'run m-ar-modeled-1234abcd: 2 sessions (0 skipped, 1 failed), 8 chunks | ...'
    """

    run_dir: Path
    run_id: str
    sessions: int
    skipped: int
    counts: dict
    figures: str
    failed: int = 0
    partial: int = 0

    def line(self) -> str:
        """One line: the sessions complete (skipped, partial and failed ones counted when there are any) and the
        figures the run measured."""
        ended = "".join(f", {n} {what}" for n, what in ((self.partial, "partial"), (self.failed, "failed")) if n)
        return f"run {self.run_id}: {self.sessions} sessions ({self.skipped} skipped{ended}), {self.figures}"

    def check_finished(self) -> None:
        """``SessionsUnfinished`` (exit 6) when a session failed or ended early: the run wrote the others, and the same
        command again replays them."""
        if self.failed or self.partial:
            kinds = f"{self.partial} partial, {self.failed} failed; " if self.partial else ""
            raise SessionsUnfinished(f"{self.partial + self.failed} of {self.sessions + self.partial + self.failed} "
                                     f"sessions did not finish ({kinds}run.json of {self.run_dir} says why); the same "
                                     "command again replays them")


def finished_status(status: str, completed: int, outcome: SessionOutcome) -> str:
    """run.json's status once the sessions were held: ``status`` as the run ended, except a run that ended in order
    with no session finished (every one partial or failed: it exits 6) is ``failed: no session finished (...)``, never
    ``complete``. A run with some sessions finished stays ``complete`` (run.json lists the others; it exits 6 too).

    >>> outcome = SessionOutcome(partial=[{"session_id": "s0"}, {"session_id": "s1"}])
    >>> finished_status("complete", 0, outcome)[:49], finished_status("complete", 1, outcome)
    ('failed: no session finished (2 partial, 0 failed;', 'complete')
    """
    if status != "complete" or completed or not (outcome.partial or outcome.failed):
        return status
    return (f"failed: no session finished ({len(outcome.partial)} partial, {len(outcome.failed)} failed; "
            "partial_sessions and failed_sessions say why); the same command again replays them")


def run_lifecycle(cfg: DictConfig, run_dir: Path, source: UnitSource) -> RunSummary:
    """Run ``cfg`` into ``run_dir`` with units from ``source`` (see the module docstring)."""
    from ticktock.replay.concurrency import ConcurrencySettings, check_sessions_replayed
    from ticktock.replay.config import build, check_run_options, select_sessions, shard_sessions
    from ticktock.replay.run_folder import holding_lock, settled_folder
    from ticktock.results.writable import check_writable
    from ticktock.results.writer import refuse_another_run_early

    source.check(cfg)
    check_run_options(cfg)
    check_writable(run_dir)  # a read-only folder: one line before any work
    task = build(cfg.task)
    sessions = select_sessions(cfg, task)  # a missing audio file: exit 3, before any work
    check_sessions_replayed(ConcurrencySettings.parse(cfg.get("concurrency")),  # N <= sessions (which shard keeps a
                            len(shard_sessions(cfg, sessions, {})[0]))         # session: not the identity)
    early = None if cfg.overwrite else source.identity_before_prepare(cfg)
    if early is not None:
        refuse_another_run_early(run_dir, *early)
    source.prepare(cfg, task, sessions)
    run_dir = settled_folder(run_dir, source.run_folder(cfg, run_dir))  # a live run: named from its server
    return holding_lock(cfg, run_dir, lambda: write_run(cfg, run_dir, source, sessions), source.labels(cfg))


def write_run(cfg: DictConfig, run_dir: Path, source: UnitSource, sessions: list) -> RunSummary:
    """Steps 2 to 4 of the module docstring, under the folder's lock."""
    from ticktock.replay.config import shard_sessions
    from ticktock.replay.run_folder import run_id_of, sessions_to_replay
    from ticktock.results.liveness import Heartbeat, heartbeat
    from ticktock.results.schema import SCHEMA_VERSION
    from ticktock.results.writer import RunWriter

    ident = source.identity(cfg)
    sessions, shard = shard_sessions(cfg, sessions, ident)
    writer = RunWriter(run_dir, ident, overwrite=cfg.overwrite)
    labels = {"run_id": run_id_of(writer.previous, ident, run_dir), **source.labels(cfg)}
    meta = {"run_id": labels["run_id"], "schema_version": SCHEMA_VERSION, **source.describe(cfg, labels, writer.previous),
            "started": time.time(), "sessions_total": len(sessions), "shard": shard}
    todo = sessions_to_replay(sessions, writer, profile_digest=source.profile_digest)
    beat = Heartbeat(lambda record: writer.write_run_json({**meta, "status": "running", "heartbeat": record}),
                     sessions_done=len(sessions) - len(todo))
    beat.beat(force=True)
    status, outcome = "interrupted", SessionOutcome()
    row_labels = {key: labels[key] for key in ("run_id", "model", "decoder", "clock")}  # every row's identity
    try:
        source.hold(cfg, todo, writer, row_labels, beat, outcome)
        status = "complete"
    except Exception as err:
        status = f"failed: {type(err).__name__}: {err}"
        raise
    finally:  # also on Ctrl-C: every completed session stays in the consolidated tables
        counts = writer.consolidate()
        status = finished_status(status, counts.get("sessions", 0), outcome)
        writer.write_run_json({**meta, "status": status, "finished": time.time(), **outcome.record(),
                               **source.finished(run_dir, outcome), "row_counts": counts,
                               "heartbeat": heartbeat(counts.get("sessions", 0))})
    return RunSummary(run_dir, labels["run_id"], counts.get("sessions", 0), len(outcome.skipped), counts,
                      source.figures(run_dir), len(outcome.failed), len(outcome.partial))
