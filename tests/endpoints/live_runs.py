"""Live runs for the endpoint tests (a helper module): ``ticktock serve`` in a thread on loopback, and
``run_live`` replaying mini-corpus sessions into it, as ``python -m ticktock.run model=endpoint`` does."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1] / "serve"))

from served import serving  # noqa: E402  (the serve tests' server helper)

#: The first two llama_questions sessions of the mini corpus, six units each: the model answers the first in units 3-4.
TWO_SESSIONS = ("task.tasks=[llama_questions]", "limit.sessions=2", "limit.chunks=6")


def live_config(url: str, *overrides: str):
    """The run config of ``python -m ticktock.run model=endpoint model.url=URL <overrides>`` (no progress bars)."""
    from ticktock.replay.config import compose_run

    return compose_run("ar", "endpoint", None, [f"model.url='{url}'", *overrides])  # quoted: a query's '=' and '&'


def live_run(run_dir: Path, url: str, *overrides: str):
    """A live run into ``run_dir``; its summary."""
    from ticktock.endpoints.run import run_live

    return run_live(live_config(url, *overrides), run_dir)


@contextlib.contextmanager
def served(*overrides: str):
    """``ticktock serve <overrides>`` on a free loopback port; yields its URL (``ws://127.0.0.1:PORT``)."""
    with serving(*overrides) as (_, url):
        yield url
