"""What loading a model shows: nothing of transformers' own progress bars.

transformers draws a "Loading weights" bar (tqdm) for every model it loads, in every run and at every ``ticktock
serve`` start, with carriage returns and escape codes that a log file keeps. A run's progress is its own
(``ticktock.replay.progress``), so building a run's model (``ticktock.replay.config.build_checked``) turns
transformers' bars off for the process first, with its documented switch
(``transformers.utils.logging.disable_progress_bar``), which also covers a model that loads its weights later, on
first use. This module imports transformers only when that is called.
"""

from __future__ import annotations

import importlib.util


def transformers_bars_off() -> None:
    """Turn transformers' progress bars off for this process (nothing when transformers is not installed)."""
    if importlib.util.find_spec("transformers") is None:
        return
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()
