"""``python -m ticktock.run``: replay a task's sessions through a model with a decoder, under a clock.

Examples::

    python -m ticktock.run                                      # embedded model, AR, mini corpus, modeled clock
    python -m ticktock.run decoder=speclisten clock=wall limit.sessions=4
    python -m ticktock.run -m decoder=ar,pld,recycling,lookahead,speclisten task=fdb_v3
    python -m ticktock.run hydra.run.dir=results/my_run         # resumes if it holds the same run

Each run writes chunks/sessions/forwards parquet tables and run.json into its Hydra run directory
(``ticktock.results.writer``) and prints a one-line summary. The run itself is ``ticktock.replay.runner.run``.
An expected error (a bad option, manifest line, audio file or profile; a run-folder clash) prints one line
``ticktock: error: ...`` and exits with its code; Ctrl-C says how many sessions were kept and exits 130
(``ticktock.errors``; ``TICKTOCK_DEBUG=1`` shows tracebacks); a run refused before it wrote anything leaves no run
folder behind, and a path written ``'model.path="~/ckpt/gander"'`` is expanded (``ticktock.replay.sweeps``). With ``model=endpoint`` the sessions are replayed into a
running server instead (``ticktock.endpoints.run.run_live``, docs/endpoints.md). A sweep (``-m``) checks every job's options before it
launches any, and a job that fails does not stop the others (``ticktock.replay.sweeps``).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import hydra
from omegaconf import DictConfig

from ticktock.endpoints.run import is_endpoint, run_live
from ticktock.errors import user_errors
from ticktock.plugins import register_selected
from ticktock.replay.resources import register_resolver, resource_path
from ticktock.replay.runner import interrupted_note, run

register_resolver()


@hydra.main(version_base=None, config_path=str(resource_path("configs")), config_name="run")
def main(cfg: DictConfig) -> None:
    from hydra.core.hydra_config import HydraConfig

    from ticktock.replay.sweeps import expand_home, job_errors, refused_run_removed

    run_dir = Path(HydraConfig.get().runtime.output_dir)
    with user_errors(interrupted=lambda: interrupted_note([run_dir])):  # inside Hydra: it would print a traceback
        with job_errors(HydraConfig.get()):  # in a sweep: one line, and the other jobs go on
            with refused_run_removed(run_dir):  # refused before writing anything: the folder Hydra made goes again
                expand_home(cfg)  # '~/...' paths (a sweep's jobs; a single run's were expanded before it started)
                replay = run_live if is_endpoint(cfg) else run  # a live endpoint (model=endpoint), or a model in process
                print(replay(cfg, run_dir).line())


HYDRA_FLAGS_WITHOUT_CHECK = ("-h", "--help", "--hydra-help", "--info", "-i", "-c", "--cfg", "-p", "--package", "-sc",
                             "--shell-completion", "-cn", "--config-name", "-cp", "--config-path", "-cd",
                             "--config-dir", "-m", "--multirun")


def check_composition(argv: list[str]) -> None:
    """Compose the run's config as Hydra is about to, so that an override Hydra cannot apply (an unknown config
    such as ``task=nope``, a key that does not exist) is one line with the configuration exit code (2) instead of
    Hydra's own report (exit 1). Flags that change what Hydra does (``--cfg``, ``--help``, another config), and
    sweeps (``-m``: every arm is checked by ``ticktock.replay.sweeps``), are left to Hydra. An override whose value
    holds an unquoted ``~`` (which Hydra's grammar refuses) is one line saying how to write it (``check_home``),
    with or without flags."""
    from ticktock.errors import ConfigError, one_line

    for override in argv:
        check_home(override)
    if any(arg.split("=", 1)[0] in HYDRA_FLAGS_WITHOUT_CHECK for arg in argv):
        return
    from hydra import compose, initialize_config_dir
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    with initialize_config_dir(config_dir=str(resource_path("configs")), version_base=None):
        try:
            compose("run", overrides=list(argv), return_hydra_config=True)
        except (HydraException, OmegaConfBaseException) as err:
            raise ConfigError(one_line(str(err).split("Config search path")[0])) from None


QUOTED_OR_INTERPOLATED = re.compile(r"\$\{[^}]*\}|'[^']*'|\"[^\"]*\"")  # where Hydra's grammar takes a ~


def check_home(override: str) -> None:
    """Refuse, in one line saying how to write it, an override whose value holds a ``~`` outside quotes and
    interpolations: the shell does not expand ``~`` after ``key=`` and Hydra's override grammar refuses it (a raw
    lexer error otherwise). Quoted, the path is expanded by the run (``ticktock.replay.sweeps.expand_home``).

    >>> check_home('model.path="~/ckpt/gander"'), check_home("~model.path"), check_home("decoder=ar")
    (None, None, None)
    >>> check_home("model.path=~/ckpt/gander")
    Traceback (most recent call last):
    ...
    ticktock.errors.ConfigError: model.path=~/ckpt/gander: Hydra does not take an unquoted ~ in a value (nor does the shell expand it after key=): quote it, 'model.path="~/ckpt/gander"' (TickTock expands ~ in a quoted path), or write model.path=$HOME/ckpt/gander
    """
    from ticktock.errors import ConfigError

    key, equals, value = override.partition("=")
    if not equals or key.startswith("-") or "~" not in QUOTED_OR_INTERPOLATED.sub("", value):
        return
    home = f", or write {key}=$HOME{value[1:]}" if value.startswith("~/") and value.count("~") == 1 else ""
    raise ConfigError(f"{override}: Hydra does not take an unquoted ~ in a value (nor does the shell expand it after "
                      f"key=): quote it, '{key}=\"{value}\"' (TickTock expands ~ in a quoted path){home}")


if __name__ == "__main__":
    with user_errors():  # Ctrl-C while Hydra starts up; plug-ins selected by name (ticktock.plugins), before Hydra
        register_selected(sys.argv[1:])
        check_composition(sys.argv[1:])
        main()
