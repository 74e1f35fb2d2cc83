"""Reading sessions and sources from the Hugging Face Hub: what names a Hub dataset, and ``datasets`` kept quiet.

A string is a Hub id (``owner/name``) when it reads that way and no local file or folder of that name exists, as
``datasets.load_dataset`` decides it too. ``quiet`` silences ``datasets``' progress bars and log lines inside a block:
the commands print their own summary, and an input they cannot read is one error line, not a logged error first.

Example::

    >>> is_hub_id("hlt-lab/voicebench"), is_hub_id("downloads"), is_hub_id("a/b/c")
    (True, False, False)
"""

from __future__ import annotations

import re
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

_HUB_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*")


def is_hub_id(src: str | Path) -> bool:
    """Whether ``src`` names a Hub dataset (``owner/name``, and no local file or folder of that name)."""
    return bool(_HUB_ID.fullmatch(str(src))) and not Path(src).exists()


def offline() -> bool:
    """Whether Hub access is switched off (``HF_HUB_OFFLINE=1``)."""
    from huggingface_hub import constants

    return bool(constants.HF_HUB_OFFLINE)


@contextmanager
def quiet() -> Iterator[None]:
    """No progress bars or log lines from ``datasets`` inside the block (restored after it)."""
    from datasets.utils import are_progress_bars_disabled, disable_progress_bars, enable_progress_bars
    from datasets.utils import logging as datasets_logging

    level, bars_off = datasets_logging.get_verbosity(), are_progress_bars_disabled()
    datasets_logging.set_verbosity(datasets_logging.CRITICAL + 10)
    disable_progress_bars()
    try:
        yield
    finally:
        datasets_logging.set_verbosity(level)
        if not bars_off:
            enable_progress_bars()
