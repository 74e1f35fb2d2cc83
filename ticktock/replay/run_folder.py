"""A run's folder: its lock, its run id, and what a resumed run still has to do.

Every run, replayed or live, holds its folder's lock from start to end (``holding_lock``; a second writer is refused
in one line), is named by a run id made from its identity and folder (``run_id_for``; a resumed run keeps its own:
``run_id_of``), and replays only the sessions not completed yet, or whose inputs changed (``sessions_to_replay``).
``interrupted_note`` is what Ctrl-C says.

A live run names its folder from its server once it has heard it; the folder made for it under the config's names
moves there (``settled_folder``).

Example::

    holding_lock(cfg, run_dir, lambda: work())     # the folder made, its lock held while work() runs
    todo = sessions_to_replay(sessions, writer)    # 'resumed 2 of 3 sessions' on stderr when resuming
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

from omegaconf import DictConfig


def interrupted_note(run_dirs: list[Path]) -> str:
    """What interrupted runs kept and how to resume, from their run.json files, e.g.
    ``3 of 12 sessions kept in results/runs/x; run the same command again to resume`` (a folder the run went on in
    under another name, ``settled_folder``, by that name)."""
    from ticktock.replay.sweeps import where_now

    run_dirs = [where_now(run_dir) for run_dir in run_dirs]
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


def settled_folder(made: Path, named: Path) -> Path:
    """Where a run goes on once its unit source has named its folder (``UnitSource.run_folder``: a live run names it
    from its server): ``named``, with the folder made for the run under another name (``made``, by Hydra: nothing in
    it but its log) renamed to it, or removed when ``named`` is there already (a rerun, resuming it). A ``made``
    folder that holds a run already (one named before its source named folders) stays the run's folder: the rerun
    resumes it there. Said to the refusal clean-up and the Ctrl-C note (``ticktock.replay.sweeps.folder_moved``)."""
    from ticktock.replay.sweeps import folder_moved, holds_no_results, remove_unwritten

    if Path(os.path.abspath(named)) == Path(os.path.abspath(made)):
        return made
    unwritten = made.is_dir() and holds_no_results(made)
    if made.exists() and not unwritten:
        return made
    renamed = made.is_dir() and not named.exists()
    if renamed:
        made.rename(named)  # its log goes along (a handle open on it writes on)
    elif made.is_dir():
        remove_unwritten(made, made)
    folder_moved(made, named, renamed)
    return named


def run_id_for(ident: dict, run_dir: Path) -> str:
    """A new run's id: its model, decoder and clock names and a digest of its identity and folder, e.g.
    ``fixture-ar-modeled-5667ce2b``."""
    digest = hashlib.sha256(json.dumps([ident, str(run_dir.resolve())], sort_keys=True).encode()).hexdigest()
    return f"{ident['model']['name']}-{ident['decoder']['name']}-{ident['clock']['name']}-{digest[:8]}"


def run_id_of(previous: dict | None, ident: dict, run_dir: Path) -> str:
    """The run id of a run into ``run_dir``: a resumed run keeps the one its run.json (``previous``) records, so that
    every row of the run carries one id (also for a run whose identity was recorded in an earlier form); a new run
    gets ``run_id_for``.

    >>> run_id_of({"run_id": "m-ar-modeled-0e1d0e1d"}, {}, Path("r"))
    'm-ar-modeled-0e1d0e1d'
    """
    kept = (previous or {}).get("run_id")
    return kept if isinstance(kept, str) and kept else run_id_for(ident, run_dir)


def sessions_to_replay(sessions: list, writer, out=None, profile_digest: str | None = None) -> list:
    """The sessions a (resumed) run still has to replay: those not completed yet, and completed ones whose
    manifest line, audio or cost profile (``profile_digest``: the run's clock's, ``fingerprint.profile_sha256``)
    changed since (``ticktock.results.fingerprint``). A changed session's parts are removed and one line names it
    and what changed (on ``out``, default stderr), e.g.
    ``resume: session s1: audio file changed since its results were written; replaying it``; a resumed run (the
    folder held this run) then says how many it keeps: ``resumed 2 of 3 sessions``. A session with a part that
    cannot be read back is replayed too, its parts set aside first (``set_aside_unreadable``)."""
    from ticktock.results.fingerprint import changes, session_fingerprint

    set_aside_unreadable(sessions, writer, out)
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


def set_aside_unreadable(sessions: list, writer, out=None) -> None:
    """Set aside (``RunWriter.set_aside``: into ``parts/unreadable/``) the parts of every session with a part that
    cannot be read back, one line each on ``out`` (default stderr), so that it is replayed, never met by the merge,
    e.g. ``resume: session s1: <run>/parts/s1-640d87e7.chunks.parquet cannot be read (Parquet magic bytes not found
    in footer...); replaying it (its parts moved to <run>/parts/unreadable)``. A part of a session this run does not
    hold is set aside the same way, out of the tables."""
    from ticktock.results.writer import part_key

    ids = {part_key(session.session_id): session.session_id for session in sessions}
    for key, (path, reason) in writer.unreadable_parts().items():
        aside = writer.set_aside(key)
        if key in ids:
            said = f"session {ids[key]}: {path} cannot be read ({reason}); replaying it (its parts moved to {aside})"
        else:
            said = f"{path} cannot be read ({reason}); its session's parts moved to {aside}, out of the tables"
        print(f"resume: {said}", file=out or sys.stderr)


def holding_lock(cfg: DictConfig, run_dir: Path, work, labels: dict | None = None):
    """``work()``'s result, called with the run folder made and its lock held (``ticktock.results.lock``: a second
    writer is refused in one line; a stale lock of a process that died is taken over, said on stderr), the lock released
    after it, also on an error or Ctrl-C. ``labels``: the run's model, decoder and clock names as its unit source
    gives them (``UnitSource.labels``), which the lock shows (``lock_about``)."""
    from ticktock.results.lock import RunLock
    from ticktock.results.writable import results_written

    lock = RunLock(run_dir, lock_about(cfg, labels))
    try:
        with results_written(run_dir):
            run_dir.mkdir(parents=True, exist_ok=True)
            lock.acquire()
        if lock.stale_note():
            print(lock.stale_note(), file=sys.stderr)
        return work()
    finally:
        lock.release()


def lock_about(cfg: DictConfig, labels: dict | None = None) -> dict:
    """What the run folder's lock says about its holder (shown to a refused second writer): the run's ``labels``
    (a live run's are the endpoint's: ``embedded@127.0.0.1:8099``, ``served``, ``live:vllm_omni_duplex``), else the
    config's names, and the task.

    >>> from omegaconf import OmegaConf
    >>> cfg = OmegaConf.create({"decoder": {"name": "ar"}, "model": {"name": "endpoint"}, "clock": {"name": "modeled"},
    ...                         "task": {"name": "t"}})
    >>> lock_about(cfg, {"model": "m@h:1", "decoder": "served", "clock": "live:vllm_omni_duplex"})["clock"]
    'live:vllm_omni_duplex'
    """
    named = {"decoder": cfg.decoder.name, "model": cfg.model.name, "clock": cfg.clock.name, **(labels or {})}
    return {key: named[key] for key in ("decoder", "model", "clock")} | {"task": cfg.task.get("name")}
