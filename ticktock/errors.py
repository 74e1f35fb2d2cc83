"""Expected errors: what a user can fix, reported as one line and an exit code that says which kind.

Library code raises a subclass of :class:`TickTockError`; only the entry points (``python -m ticktock.run``,
the ``ticktock`` command, ``ticktock.main_job``, ``ticktock.tables``) catch it, with :func:`user_errors`, and
print ``ticktock: error: <message>`` to stderr. Anything else is a bug and keeps its traceback.

Exit codes:

==== =============================================================================================
2    bad configuration or run option (``ConfigError``: run options, sampling, decoder settings, cost
     profiles)
3    bad input data (``InputDataError``: a manifest line, unreadable audio, a manifest duration that
     disagrees with its audio, a session longer than a model's context that has no eviction policy)
4    run-folder problem (``RunFolderError``: the folder holds a different run, ...)
130  interrupted (Ctrl-C); completed sessions are kept and the same command resumes
==== =============================================================================================

``TICKTOCK_DEBUG=1`` in the environment lets every error through with its traceback.

Example::

    >>> import contextlib, sys
    >>> class BadKnob(ConfigError): ...
    >>> with contextlib.redirect_stderr(sys.stdout):     # (stderr shown here)
    ...     try:
    ...         with user_errors():
    ...             raise BadKnob("decoder.width: must be an integer >= 1, got 0")
    ...     except SystemExit as done:
    ...         print("exit", done.code)
    ticktock: error: decoder.width: must be an integer >= 1, got 0
    exit 2
"""

from __future__ import annotations

import os
import reprlib
import sys
from contextlib import contextmanager
from typing import Callable, Iterator

EXIT_CONFIG = 2
EXIT_INPUT_DATA = 3
EXIT_RUN_FOLDER = 4
EXIT_ENDPOINT = 5  # a live endpoint cannot be reached, or refuses the session (ticktock.endpoints)
EXIT_SESSIONS_UNFINISHED = 6  # the run ended, but some of its sessions failed or ended early (their rows say why)
EXIT_INTERRUPTED = 130
DEBUG_VARIABLE = "TICKTOCK_DEBUG"


class TickTockError(Exception):
    """An expected error: its message alone (one line naming the file, line or key) tells what to fix."""

    exit_code = 1


class ConfigError(TickTockError):
    """A configuration value or run option is not allowed (exit code 2)."""

    exit_code = EXIT_CONFIG


class InputDataError(TickTockError):
    """The data a run reads (manifests, audio) is malformed or inconsistent (exit code 3)."""

    exit_code = EXIT_INPUT_DATA


class RunFolderError(TickTockError):
    """A run folder cannot be used as asked (exit code 4)."""

    exit_code = EXIT_RUN_FOLDER


class SessionsUnfinished(TickTockError):
    """The run ended and wrote what it could, but some sessions failed or ended early (exit code 6): run.json's
    ``failed_sessions`` and ``partial_sessions`` say which and why; the same command again replays them."""

    exit_code = EXIT_SESSIONS_UNFINISHED


def debugging() -> bool:
    """Whether ``TICKTOCK_DEBUG`` asks for tracebacks (any value but empty, ``0``, ``false`` or ``no``)."""
    return os.environ.get(DEBUG_VARIABLE, "").strip().lower() not in ("", "0", "false", "no")


@contextmanager
def user_errors(interrupted: Callable[[], str] | None = None, prog: str = "ticktock") -> Iterator[None]:
    """Turn an expected error into one stderr line and ``SystemExit`` with its code; Ctrl-C into exit 130,
    printing ``interrupted()`` (e.g. what was kept and how to resume). Under ``TICKTOCK_DEBUG=1`` both pass
    through unchanged, with their tracebacks."""
    try:
        yield
    except TickTockError as err:
        if debugging():
            raise
        print(f"{prog}: error: {one_line(err)}", file=sys.stderr, flush=True)
        raise SystemExit(err.exit_code) from None
    except KeyboardInterrupt:
        if debugging():
            raise
        detail = _safely(interrupted) if interrupted is not None else ""
        print(f"{prog}: interrupted" + (f": {detail}" if detail else ""), file=sys.stderr, flush=True)
        raise SystemExit(EXIT_INTERRUPTED) from None


def one_line(err: BaseException) -> str:
    """The error's message on one line (newlines become ``; ``).

    >>> one_line(ValueError("a.yaml:3:1: not valid YAML\\n  (mapping values are not allowed here)"))
    'a.yaml:3:1: not valid YAML; (mapping values are not allowed here)'
    """
    return "; ".join(part.strip() for part in str(err).splitlines() if part.strip()) or type(err).__name__


def shown(value) -> str:
    """A value as an error message shows it: its ``repr`` with nesting, long lists and long texts cut short, so that
    no input (a 900-level list, a megabyte string) makes the message long, or deep to build.

    >>> shown(2.5), shown(float("nan")), shown([[[[[1]]]]]), shown("x" * 100)
    ('2.5', 'nan', '[[[[...]]]]', "'xxxxxxxxxxxxxxxxx...xxxxxxxxxxxxxxxxxx'")
    """
    return _SHORT.repr(value)


def _short_repr() -> reprlib.Repr:
    short = reprlib.Repr()
    short.maxlevel, short.maxstring, short.maxother, short.maxlist, short.maxdict = 3, 40, 40, 6, 4
    return short


_SHORT = _short_repr()


def _safely(describe: Callable[[], str]) -> str:
    try:
        return describe()
    except Exception:  # the interrupt message must never hide the interrupt itself
        return ""
