"""Reading sessions and sources from the Hugging Face Hub: what names a Hub dataset, and ``datasets`` kept quiet.

A string is a Hub id (``owner/name``) when it reads that way and no local file or folder of that name exists, as
``datasets.load_dataset`` decides it too. ``quiet`` silences ``datasets``' progress bars and log lines inside a block:
the commands print their own summary, and an input they cannot read is one error line, not a logged error first.
``offline_when_unreachable`` switches Hub access off inside a block when one quick request finds the Hub unreachable,
so that a command reads the caches at once instead of retrying every request (``HF_HUB_ETAG_TIMEOUT`` bounds it).

Example::

    >>> is_hub_id("hlt-lab/voicebench"), is_hub_id("downloads"), is_hub_id("a/b/c")
    (True, False, False)
"""

from __future__ import annotations

import re
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import ContextManager, Iterable, Iterator

_HUB_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*")


def is_hub_id(src: str | Path) -> bool:
    """Whether ``src`` names a Hub dataset (``owner/name``, and no local file or folder of that name)."""
    return bool(_HUB_ID.fullmatch(str(src))) and not Path(src).exists()


def offline() -> bool:
    """Whether Hub access is switched off (``HF_HUB_OFFLINE=1``, or inside ``offline_when_unreachable``)."""
    from huggingface_hub import constants

    return bool(constants.HF_HUB_OFFLINE)


_UNREACHABLE: list[str] = []  # why the Hub could not be reached, while offline_when_unreachable switched it off


def offline_reason() -> str:
    """Why Hub access is off, for an error line: ``offline mode is on`` (the user's ``HF_HUB_OFFLINE=1``), or
    ``the Hub cannot be reached (ConnectError)`` inside ``offline_when_unreachable``."""
    return f"the Hub cannot be reached ({_UNREACHABLE[-1]})" if _UNREACHABLE else "offline mode is on"


def hub_unreachable() -> str | None:
    """Why the Hub cannot be reached (the error's name), or None when it answers (any status): one HEAD request to
    its endpoint through ``huggingface_hub``'s own session (its proxies), no retry, within ``HF_HUB_ETAG_TIMEOUT``
    seconds (10 unless set)."""
    import httpx2
    from huggingface_hub import constants
    from huggingface_hub.utils import get_session

    try:
        get_session().head(constants.ENDPOINT, timeout=constants.HF_HUB_ETAG_TIMEOUT)
    except (httpx2.TransportError, OSError) as err:
        return type(err).__name__
    return None


@contextmanager
def offline_when_unreachable() -> Iterator[str | None]:
    """Inside the block, Hub access is switched off (as ``HF_HUB_OFFLINE=1`` does) when the Hub cannot be reached,
    found by one quick request (``hub_unreachable``): the Hub libraries then read their caches at once, where
    without it each of their requests is retried with a warning line for about 25 s. Yields why the Hub cannot be
    reached (None: it answered, or offline mode was already on); restored after the block."""
    import datasets
    from huggingface_hub import constants

    why = None if offline() else hub_unreachable()
    if why is None:
        yield None
        return
    saved = constants.HF_HUB_OFFLINE, datasets.config.HF_HUB_OFFLINE
    constants.HF_HUB_OFFLINE = datasets.config.HF_HUB_OFFLINE = True
    _UNREACHABLE.append(why)
    try:
        yield why
    finally:
        _UNREACHABLE.pop()
        constants.HF_HUB_OFFLINE, datasets.config.HF_HUB_OFFLINE = saved


@contextmanager
def quiet() -> Iterator[None]:
    """No progress bars or log lines from ``datasets`` or ``huggingface_hub`` (its retry warnings) inside the block
    (restored after it)."""
    from datasets.utils import are_progress_bars_disabled, disable_progress_bars, enable_progress_bars
    from datasets.utils import logging as datasets_logging
    from huggingface_hub.utils import logging as hub_logging

    level, hub_level, bars_off = datasets_logging.get_verbosity(), hub_logging.get_verbosity(), \
        are_progress_bars_disabled()
    datasets_logging.set_verbosity(datasets_logging.CRITICAL + 10)
    hub_logging.set_verbosity(hub_logging.CRITICAL + 10)
    disable_progress_bars()
    try:
        yield
    finally:
        datasets_logging.set_verbosity(level)
        hub_logging.set_verbosity(hub_level)
        if not bars_off:
            enable_progress_bars()


def hub_reads(sources: Iterable) -> ContextManager:
    """Around reading ``sources`` (Hub ids or folders; None entries ignored): when one is a Hub id, the Hub is asked
    once whether it can be reached (``offline_when_unreachable``: when not, the caches are read at once, with no
    retries and no warning lines); a download from a reachable Hub keeps its progress bars. ``bench build``,
    ``convert`` and ``task=hf`` read through it."""
    if any(src is not None and is_hub_id(str(src)) for src in sources):
        return offline_when_unreachable()
    return nullcontext()
