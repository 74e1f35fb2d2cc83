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
launches any, and a job that fails does not stop the others (``ticktock.replay.sweeps``). Nothing the command prints
shows a URL's password, its secret query values or a token variable's value (``secrets_kept_out``; a bug's traceback
included, ``bugs_reported``), and an override Hydra's grammar cannot parse (a URL's query unquoted) is one line naming
its key and the quoted form that works (``check_grammar``).
"""

from __future__ import annotations

import os
import re
import sys
import traceback
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import hydra
from omegaconf import DictConfig

from ticktock.endpoints.endpoint import redacted, url_secrets
from ticktock.endpoints.run import is_endpoint, run_live
from ticktock.errors import user_errors
from ticktock.plugins import register_selected
from ticktock.replay.resources import register_resolver
from ticktock.shipped import resource_path
from ticktock.replay.run_folder import interrupted_note
from ticktock.replay.runner import run

register_resolver()


@hydra.main(version_base=None, config_path=str(resource_path("configs")), config_name="run")
def main(cfg: DictConfig) -> None:
    from hydra.core.hydra_config import HydraConfig

    from ticktock.replay.sweeps import expand_home, job_errors, refused_run_removed

    run_dir = Path(HydraConfig.get().runtime.output_dir)
    with secrets_kept_out(config_secrets(cfg)), bugs_reported():  # never Hydra's echo of the raw overrides
        with user_errors(interrupted=lambda: interrupted_note([run_dir])):  # inside Hydra: it would print a traceback
            with job_errors(HydraConfig.get()):  # in a sweep: one line, and the other jobs go on
                with refused_run_removed(run_dir):  # refused before writing anything: the folder Hydra made goes
                    expand_home(cfg)  # '~/...' paths (a sweep's jobs; a single run's were expanded before it started)
                    replay = run_live if is_endpoint(cfg) else run  # a live endpoint (model=endpoint), or in process
                    summary = replay(cfg, run_dir)
                print(summary.line())
                summary.check_finished()  # exit 6 when a session failed or ended early (its line said so)


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
        check_grammar(override)
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



def check_grammar(override: str) -> None:
    """Refuse, in one line naming its key and saying how to quote it, an override that Hydra's override grammar cannot
    parse: a value holding ``=`` or ``&`` (a URL's query) must be quoted inside the override, and the shell's quotes
    go around the whole override. A URL's credentials are shown as ``***`` (``redacted``).

    >>> check_grammar("model.url=ws://h/v1/realtime"), check_grammar("model.url='ws://h/v1/realtime?duplex=1&model=m'")
    (None, None)
    >>> check_grammar("model.url=ws://h/v1/realtime?duplex=1&model=m")
    Traceback (most recent call last):
    ...
    ticktock.errors.ConfigError: model.url: Hydra's override grammar takes '=' and '&' in a value only inside quotes: quote the value inside the override, "model.url='ws://h/v1/realtime?duplex=1&model=m'" (the outer quotes are the shell's)
    """
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    from ticktock.errors import ConfigError, one_line

    key, equals, value = override.partition("=")
    if not equals or key.startswith("-"):
        return
    try:
        OverridesParser.create().parse_overrides([override])
    except HydraException as err:
        shown = redacted(value) if "://" in value else value
        special = " and ".join(f"'{char}'" for char in "=&" if char in value)
        what = f"takes {special} in a value only inside quotes" if special else f"cannot parse it ({one_line(err)})"
        inner = f"{key}=\"{shown}\"" if "'" in value else f"{key}='{shown}'"
        outer = f"'{inner}'" if "'" in value else f'"{inner}"'
        raise ConfigError(f"{key}: Hydra's override grammar {what}: quote the value inside the override, {outer} "
                          f"(the outer quotes are the shell's)") from None


#: The run folder options Hydra reads before any run config exists (so ``expand_home`` never sees them).
HYDRA_FOLDERS = ("hydra.run.dir", "hydra.sweep.dir")


def folders_expanded(argv: list[str]) -> list[str]:
    """``argv`` with ``~`` expanded in a quoted home path given to ``hydra.run.dir`` or ``hydra.sweep.dir``, as every
    other path option of a run is (``ticktock.replay.sweeps.expand_home``); the rest as given.

    >>> import os
    >>> folders_expanded(['hydra.run.dir="~/runs/x"', "decoder=ar"]) == [
    ...     "hydra.run.dir=" + os.path.join(os.path.expanduser("~"), "runs/x"), "decoder=ar"]
    True
    """
    from ticktock.replay.sweeps import home_path

    expanded = []
    for override in argv:
        key, equals, value = override.partition("=")
        bare = value.strip("'\"")
        if equals and key.lstrip("+") in HYDRA_FOLDERS and bare.startswith("~") and home_path(bare) != bare:
            override = f"{key}={home_path(bare)}"
        expanded.append(override)
    return expanded


def check_sweep_secrets(argv: list[str]) -> None:
    """Refuse a sweep (``-m``) whose overrides carry a URL's secrets, in one line (the secret shown as ``***``):
    Hydra writes every override of a sweep, as given, into the sweep folder's ``multirun.yaml``. A bearer token named
    by ``model.token_env`` is never written anywhere, so that is the way to give a sweep its credentials.

    >>> check_sweep_secrets(["-m", "model=endpoint", "model.url=ws://h:1/v1/realtime"])
    >>> check_sweep_secrets(["-m", "model.url=ws://me:s3cret@h:1/v1/realtime"])
    Traceback (most recent call last):
    ...
    ticktock.errors.ConfigError: model.url: a sweep (-m) cannot take credentials in a URL ('ws://***@h:1/v1/realtime'): Hydra writes every override of a sweep into its folder's multirun.yaml; give the server's bearer token with model.token_env=NAME instead
    """
    from ticktock.endpoints.endpoint import redacted
    from ticktock.errors import ConfigError

    if not any(arg in ("-m", "--multirun") for arg in argv):
        return
    for override in argv:
        key, _, value = override.partition("=")
        value = value.strip("'\"")
        if "://" in value and url_secrets(value):
            raise ConfigError(f"{key}: a sweep (-m) cannot take credentials in a URL ({redacted(value)!r}): Hydra "
                              "writes every override of a sweep into its folder's multirun.yaml; give the server's "
                              "bearer token with model.token_env=NAME instead")


def override_secrets(argv: list[str]) -> list[str]:
    """The secrets the command line names: those of every value that is a URL (``url_secrets``), and the value of every
    environment variable a ``...token_env=NAME`` override names."""
    found = []
    for override in argv:
        key, _, value = override.partition("=")
        value = value.strip("'\"")
        found += url_secrets(value) if "://" in value else []
        if key.endswith("token_env") and os.environ.get(value):
            found.append(os.environ[value])
    return found


def config_secrets(cfg: DictConfig) -> list[str]:
    """The secrets of the run's endpoint, wherever they were set (the command line, a config file): the URL's
    (``url_secrets``) and the value of the variable ``model.token_env`` names."""
    model = cfg.get("model") or {}
    url, token_env = model.get("url"), model.get("token_env")
    found = url_secrets(url) if isinstance(url, str) else []
    if isinstance(token_env, str) and os.environ.get(token_env):
        found.append(os.environ[token_env])
    return found


def hydra_escaped(text: str) -> str:
    r"""``text`` as Hydra writes a value when it logs an override (its special characters backslash-escaped).

    >>> print(hydra_escaped("me:p=ss"))
    me\:p\=ss
    """
    return re.sub(r"([\\:=,()\[\]{}'\" ])", r"\\\1", text)


class Redacting:
    """A text stream that writes through to ``stream`` with every secret replaced by ``***`` (longest first).

    >>> import io; out = io.StringIO(); Redacting(out, ["s3cret"]).write("token s3cret!"); out.getvalue()
    13
    'token ***!'
    """

    def __init__(self, stream, secrets: list[str]):
        forms = {form for secret in secrets for form in (secret, hydra_escaped(secret))}  # as Hydra logs overrides too
        self.stream, self.secrets = stream, sorted(forms - {""}, key=len, reverse=True)

    def write(self, text: str) -> int:
        shown = text
        for secret in self.secrets:
            shown = shown.replace(secret, "***")
        self.stream.write(shown)
        return len(text)

    def __getattr__(self, name: str):
        return getattr(self.stream, name)


@contextmanager
def secrets_kept_out(secrets: list[str]) -> Iterator[None]:
    """While inside: whatever is printed to stdout or stderr (an error line, Hydra's own report, a traceback, a
    printed config) shows every secret of ``secrets`` as ``***``."""
    if not secrets:
        yield
        return
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = Redacting(sys.stdout, secrets), Redacting(sys.stderr, secrets)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved


@contextmanager
def bugs_reported() -> Iterator[None]:
    """Around the job: an exception that escapes (a bug, or any error under ``TICKTOCK_DEBUG=1``) is printed with its
    traceback here, through the redacting streams, and exits (1, or the error's code), instead of reaching Hydra,
    which would print ``Error executing job with overrides: [...]`` with the raw overrides (a URL's password)."""
    try:
        yield
    except Exception as err:
        traceback.print_exc(file=sys.stderr)
        sys.stderr.flush()
        raise SystemExit(getattr(err, "exit_code", 1)) from None

if __name__ == "__main__":
    with secrets_kept_out(override_secrets(sys.argv[1:])):  # no URL password or token value in anything printed
        with user_errors():  # Ctrl-C while Hydra starts up; plug-ins selected by name (ticktock.plugins), before Hydra
            sys.argv[1:] = folders_expanded(sys.argv[1:])  # before Hydra reads them: its run folder under ~ too
            register_selected(sys.argv[1:])
            check_sweep_secrets(sys.argv[1:])
            check_composition(sys.argv[1:])
            main()
