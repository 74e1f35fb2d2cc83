"""Checks before Hydra launches ``python -m ticktock.run``, and sweeps (``-m``) that keep what is valid.

``LaunchChecks`` is a Hydra callback (named in ``configs/run.yaml`` under ``hydra.callbacks``). Before a run it
checks the run options (``check_run_options``: a bad one leaves no folder behind) and that the run folder can be
written (``ticktock.results.writable.check_writable``: a read-only folder is one line and exit code 4, not Hydra's
traceback from creating the folder or its log file); before a sweep, that the sweep folder can be written. Paths
under ``~`` in the config are expanded first (``expand_home``), and a run refused later, before it wrote anything,
has the folder Hydra made for it removed again (``refused_run_removed``): a refused run leaves no folder behind.

Hydra launches a sweep's jobs (its *arms*: one per combination of the swept values) one after another or, with a
launcher plugin (joblib, submitit, Ray), several at once. Two rules hold here, whatever the launcher:

- **Every arm is checked before any is launched.** ``LaunchChecks.on_multirun_start`` composes each arm's config
  exactly as its launcher will (``ConfigLoader.load_sweep_config``) and runs ``check_run_options`` on it. One bad
  arm stops the sweep before anything is created, in one line naming the arm by its job number and the overrides
  that set it apart::

      ticktock: error: sweep job 1 (limit.sessions=-1): limit.sessions: must be null or an integer >= 1, got -1 (1 of 2 jobs bad; none was launched)

  What the arm's machine holds (a GPU for ``device=cuda``, under a cluster launcher) is left to the job itself.
- **A job that fails never stops another.** A job's expected error (``TickTockError``: bad input data, a locked
  run folder, ...) is printed as one line naming the job and recorded in the sweep folder (``FAILED``: one small
  JSON file per job; the job's run folder is removed if the job left nothing in it), and the job returns, so the
  launcher carries on with the others (a ``SystemExit`` inside a job ended a sequential sweep there, and made
  joblib cancel the jobs still running). When the sweep ends, ``on_multirun_end`` prints one line counting the
  failed jobs and exits with the first one's code.

Example::

    >>> sorted(varying([["decoder=ar", "limit.sessions=1"], ["decoder=ar", "limit.sessions=-1"]]))
    ['limit.sessions']
"""

from __future__ import annotations

import json
import os
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, ListConfig

from ticktock.errors import TickTockError, debugging, one_line

FAILED = ".failed-jobs"  # in the sweep folder: <job num>.json for each job that stopped with an expected error
BASIC_SWEEPER = "hydra._internal.core_plugins.basic_sweeper.BasicSweeper"
LAUNCHERS_HERE = ("hydra._internal.core_plugins.basic_launcher.BasicLauncher",
                  "hydra_plugins.hydra_joblib_launcher.joblib_launcher.JoblibLauncher")


class SweepError(TickTockError):
    """A sweep arm cannot run (checked before launch), or some jobs failed; the exit code is the first one's."""

    def __init__(self, message: str, exit_code: int):
        super().__init__(message)
        self.exit_code = exit_code


class LaunchChecks(Callback):
    """The Hydra callback of ``python -m ticktock.run``: the run folder can be written; at the start of a sweep, its
    folder can be written and every arm is valid; at its end, the jobs that failed (module docstring)."""

    def on_run_start(self, config: DictConfig, **kwargs) -> None:
        from ticktock.errors import user_errors
        from ticktock.replay.config import check_run_options
        from ticktock.results.writable import check_writable

        with user_errors():  # before Hydra makes the run folder and its log file
            expand_home(config)  # a quoted '~/...' path: the run (the same config object) gets it expanded too
            check_run_options(config)
            check_writable(Path(config.hydra.run.dir))
        note_folders_to_make(Path(config.hydra.run.dir))  # removed again if the run is refused (refused_run_removed)

    def on_multirun_start(self, config: DictConfig, **kwargs) -> None:
        from ticktock.errors import user_errors
        from ticktock.results.writable import check_writable

        with user_errors():
            check_writable(Path(config.hydra.sweep.dir))
            check_arms(config)
        clear_failures(Path(config.hydra.sweep.dir))

    def on_multirun_end(self, config: DictConfig, **kwargs) -> None:
        from ticktock.errors import user_errors

        with user_errors():
            report_failures(Path(config.hydra.sweep.dir))


def sweep_arms(config: DictConfig) -> list[list[str]]:
    """Every arm's task overrides, in the basic sweeper's order (the order of ``hydra.job.num``)."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.override_parser.overrides_parser import OverridesParser

    params = [f"{key}={value}" for key, value in (config.hydra.sweeper.get("params") or {}).items()]
    overrides = OverridesParser.create().parse_overrides([*params, *config.hydra.overrides.task])
    return [list(arm) for batch in BasicSweeper.split_arguments(overrides, None) for arm in batch]


def check_arms(config: DictConfig) -> None:
    """Compose every arm's config as its launcher will and check its run options; the first bad arm is a
    ``SweepError`` naming it (job number and distinguishing overrides) and how many arms are bad."""
    from hydra.core.global_hydra import GlobalHydra
    from hydra.errors import HydraException

    from ticktock.errors import EXIT_CONFIG
    from ticktock.replay.config import check_run_options

    if config.hydra.sweeper.get("_target_") != BASIC_SWEEPER:
        return  # another sweeper chooses its arms as it goes
    arms = sweep_arms(config)
    loader = GlobalHydra.instance().config_loader()
    here = config.hydra.launcher.get("_target_") in LAUNCHERS_HERE
    problems = []
    for number, arm in enumerate(arms):
        try:
            arm_config = loader.load_sweep_config(config, arm)
            expand_home(arm_config)
            check_run_options(arm_config, on_this_machine=here)
        except TickTockError as err:
            problems.append((number, arm, one_line(err), err.exit_code))
        except HydraException as err:  # an arm Hydra cannot compose (e.g. decoder=ar,nope)
            problems.append((number, arm, one_line(err), EXIT_CONFIG))
    if problems:
        number, arm, message, code = problems[0]
        raise SweepError(f"sweep job {number} ({describe(arm, arms)}): {message} ({len(problems)} of {len(arms)} jobs "
                         "bad; none was launched)", code)


def varying(arms: list[list[str]]) -> set[str]:
    """The keys whose values differ between arms (or that some arms do not set)."""
    values: dict[str, list[str]] = {}
    for arm in arms:
        for override in arm:
            key, _, value = override.partition("=")
            values.setdefault(key, []).append(value)
    return {key for key, seen in values.items() if len(set(seen)) > 1 or len(seen) < len(arms)}


def describe(arm: list[str], arms: list[list[str]]) -> str:
    """An arm by the overrides that set it apart from the others (all of them for a sweep of one arm).

    >>> describe(["decoder=ar", "limit.sessions=-1"], [["decoder=ar", "limit.sessions=1"], ["decoder=ar", "limit.sessions=-1"]])
    'limit.sessions=-1'
    """
    keys = varying(arms)
    apart = [override for override in arm if override.partition("=")[0] in keys]
    return " ".join(apart or arm) or "no overrides"


# ------------------------------------------------------------------------------------ paths under ~


def home_path(value):
    """``value`` with a leading ``~`` expanded to the user's home folder when it is a path there (``~`` or
    ``~/...``); any other value as it is.

    >>> home_path("~/ckpt/gander") == os.path.join(os.path.expanduser("~"), "ckpt/gander")
    True
    >>> home_path("results/~x"), home_path(3)
    ('results/~x', 3)
    """
    if isinstance(value, str) and (value == "~" or value.startswith("~/")):
        return os.path.expanduser(value)
    return value


def expand_home(node) -> None:
    """Expand ``~`` in every value of a run config (the ``hydra`` node left out) that is a path in the home folder
    (``home_path``), in place: Hydra takes ``'model.path="~/ckpt/gander"'`` quoted, and the shell does not expand
    ``~`` after ``key=``, so ``model.path``, ``model.base_path``, ``clock.profile``, ``task.manifest``, ... would
    otherwise name a folder called ``~``. A value that cannot be read yet (missing, an interpolation that does not
    resolve) is left to the run's checks.

    Example::

        >>> from omegaconf import OmegaConf
        >>> cfg = OmegaConf.create({"model": {"path": "~/ckpt/gander", "name": "gander"}, "tags": ["~/a", "b"]})
        >>> expand_home(cfg)
        >>> cfg.model.path == home_path("~/ckpt/gander"), cfg.tags[0] == home_path("~/a"), cfg.model.name
        (True, True, 'gander')
    """
    from omegaconf import read_write
    from omegaconf.errors import OmegaConfBaseException

    keys = [key for key in node.keys() if key != "hydra"] if isinstance(node, DictConfig) else range(len(node))
    for key in keys:
        try:
            value = node[key]
        except OmegaConfBaseException:
            continue
        if isinstance(value, (DictConfig, ListConfig)):
            expand_home(value)
        elif home_path(value) != value:
            with read_write(node):
                node[key] = home_path(value)


# ------------------------------------------------------------------------------------ refused runs


FOLDERS_TO_MAKE: dict[str, Path] = {}  # run folder -> the topmost folder Hydra will make for it (absent before)


def note_folders_to_make(run_dir: Path) -> None:
    """Before Hydra makes a single run's folder: remember it (and its parents that do not exist yet), when it does not
    exist, so that a refused run can remove what this process made (``refused_run_removed``). A folder that exists
    (a run to resume, another run's) is never noted, so never removed."""
    folder = Path(os.path.abspath(run_dir))
    if folder.exists():
        return
    top = folder
    while not top.parent.exists() and top.parent != top:
        top = top.parent
    FOLDERS_TO_MAKE[str(folder)] = top


MOVED: dict[str, Path] = {}  # a run folder Hydra made -> the folder its run went on in (``folder_moved``)


def folder_moved(made: Path, now: Path, renamed: bool) -> None:
    """The run that Hydra made ``made`` for goes on in ``now`` (a live run is named from its server once it has heard
    it: ``ticktock.replay.run_folder.settled_folder``); ``renamed``: ``made`` itself became ``now``, else ``now``
    was there before (a rerun resuming it). The clean-up of a refused run and the Ctrl-C note follow it
    (``where_now``)."""
    old, new = os.path.abspath(made), Path(os.path.abspath(now))
    MOVED[old] = new
    top = FOLDERS_TO_MAKE.pop(old, None)
    if top is not None and renamed:  # made by this process, under its new name: still removed if the run is refused
        FOLDERS_TO_MAKE[str(new)] = new if top == Path(old) else top


def where_now(run_dir: Path) -> Path:
    """Where the run Hydra made ``run_dir`` for is (``folder_moved``): ``run_dir`` unless it moved."""
    return MOVED.get(os.path.abspath(run_dir), Path(run_dir))


@contextmanager
def refused_run_removed(run_dir: Path) -> Iterator[None]:
    """Around a single run: when it stops with an expected error (``TickTockError``: a bad option, no GPU, missing
    weights or audio, an endpoint that cannot be reached) before it wrote anything, the run folder Hydra made for it
    (where it is now: ``where_now``) is removed, and the parents made with it, so that a refused run leaves no folder
    behind. Only a folder this process made (``note_folders_to_make``) that holds nothing but Hydra's log and an empty
    ``run.lock`` goes; the error passes on unchanged."""
    try:
        yield
    except TickTockError:
        folder = os.path.abspath(where_now(run_dir))
        top = FOLDERS_TO_MAKE.pop(folder, None)
        if top is not None:
            remove_unwritten(Path(folder), top)
        raise


def holds_no_results(folder: Path) -> bool:
    """Whether a run folder holds nothing a run wrote: only Hydra's ``*.log`` files and an empty (released)
    ``run.lock``."""
    from ticktock.results.lock import LOCK_FILE

    for entry in folder.iterdir():
        if not entry.is_file() or entry.is_symlink():
            return False
        if entry.suffix != ".log" and not (entry.name == LOCK_FILE and entry.stat().st_size == 0):
            return False
    return True


def remove_unwritten(folder: Path, top: Path) -> None:
    """Remove ``folder`` when it holds no results (``holds_no_results``), then its empty parents up to ``top``
    (best effort: a folder that another process wrote into meanwhile stays)."""
    try:
        if not folder.is_dir() or not holds_no_results(folder):
            return
        for entry in folder.iterdir():
            entry.unlink()
        folder.rmdir()
        while folder != top:
            folder = folder.parent
            folder.rmdir()  # fails (and stops) on a folder that is not empty
    except OSError:
        pass


# ------------------------------------------------------------------------------------ jobs that fail


@contextmanager
def job_errors(hydra_config) -> Iterator[None]:
    """Around one job of ``python -m ticktock.run``: in a sweep, an expected error is printed as one line naming
    the job, recorded for ``report_failures``, and swallowed so that the launcher goes on with the other jobs. In
    a single run (or under ``TICKTOCK_DEBUG=1``) errors pass through unchanged."""
    from hydra.types import RunMode

    if hydra_config.mode != RunMode.MULTIRUN:
        yield
        return
    try:
        yield
    except TickTockError as err:
        if debugging():
            raise
        job = f"sweep job {hydra_config.job.num} ({' '.join(hydra_config.overrides.task) or 'no overrides'})"
        print(f"ticktock: error: {job}: {one_line(err)}", file=sys.stderr, flush=True)
        record_failure(Path(hydra_config.sweep.dir), hydra_config.job.num, job, one_line(err), err.exit_code)
        _remove_if_empty(where_now(Path(hydra_config.runtime.output_dir)))


def _remove_if_empty(folder: Path) -> None:
    """The job's run folder, which Hydra made before the job started, when the job left nothing in it but empty
    files (Hydra's log, a released ``run.lock``); a folder that holds anything else (another run's) stays as it is."""
    try:
        entries = list(folder.iterdir())
        if all((entry.suffix == ".log" or entry.name == "run.lock") and entry.is_file() and entry.stat().st_size == 0
               for entry in entries):
            for entry in entries:
                entry.unlink()
            folder.rmdir()
    except OSError:
        pass


def record_failure(sweep_dir: Path, number: int, job: str, message: str, exit_code: int) -> None:
    """Leave a note of a failed job in the sweep folder (best effort: a folder that cannot be written leaves the
    job's own line as the only report)."""
    folder = sweep_dir / FAILED
    try:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{number}.json").write_text(json.dumps({"job": job, "error": message, "exit_code": exit_code}))
    except OSError:
        pass


def clear_failures(sweep_dir: Path) -> None:
    """Forget the failures an earlier sweep into the same folder recorded (this sweep runs those jobs again)."""
    folder = sweep_dir / FAILED
    for note in folder.glob("*.json") if folder.is_dir() else ():
        note.unlink(missing_ok=True)


def report_failures(sweep_dir: Path) -> None:
    """After the sweep: the jobs that failed, as one ``SweepError`` line with the first one's exit code."""
    notes = []
    folder = sweep_dir / FAILED
    for path in sorted(folder.glob("*.json") if folder.is_dir() else (), key=lambda p: int(p.stem)):
        try:
            notes.append(json.loads(path.read_text()))
        except (OSError, ValueError):
            continue
    if notes:
        first = notes[0]
        more = f"; also failed: {', '.join(n['job'] for n in notes[1:])}" if len(notes) > 1 else ""
        raise SweepError(f"{len(notes)} sweep job(s) failed, the others ran to their end: {first['job']}: "
                         f"{first['error']}{more}", int(first["exit_code"]))
