"""Where the files that ship with TickTock are (configs, cost profiles, the mini corpus, the embedded model).

They live in the package (``ticktock/configs``, ``ticktock/manifests``, ``ticktock/embedded/weights``; the
top-level ``configs/`` and ``manifests/`` of a checkout are links to them), so a non-editable install carries them
as package data. Any module may ask: this package imports nothing of TickTock's.

Example::

    >>> resource_path("configs/run.yaml").is_file()
    True
    >>> resource_path("configs/run.yaml").relative_to(PACKAGE_DIR).as_posix()
    'configs/run.yaml'
"""

from __future__ import annotations

from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent.parent


def resource_path(relative: str) -> Path:
    """Absolute path of a shipped file, e.g. ``configs/profiles/a100-8b-derived.yaml``."""
    top, _, rest = relative.partition("/")
    installed = PACKAGE_DIR / top
    if installed.is_dir():
        return installed / rest
    return PACKAGE_DIR.parent / top / rest
