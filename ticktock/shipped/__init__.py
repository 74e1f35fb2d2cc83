"""Where the files that ship with TickTock are (configs, cost profiles, the mini corpus, the embedded model).

They live in the package (``ticktock/configs``, ``ticktock/manifests``, ``ticktock/embedded/weights``; the
top-level ``configs/`` and ``manifests/`` of a checkout are links to them), so a non-editable install carries them
as package data. Any module may ask: this package imports nothing of TickTock's. A shipped file is named the same
in every install by its name in the package (``shipped_name``), which is how a run's identity names it.

Example::

    >>> resource_path("configs/run.yaml").is_file()
    True
    >>> resource_path("configs/run.yaml").relative_to(PACKAGE_DIR).as_posix()
    'configs/run.yaml'
    >>> shipped_name(resource_path("configs/run.yaml")), shipped_name("/elsewhere/run.yaml")
    ('configs/run.yaml', None)
"""

from __future__ import annotations

import os
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent.parent
CHECKOUT_LINKS = ("configs", "manifests")  # shipped folders a checkout also shows at its top level


def resource_path(relative: str) -> Path:
    """Absolute path of a shipped file, e.g. ``configs/profiles/a100-8b-derived.yaml``."""
    top, _, rest = relative.partition("/")
    installed = PACKAGE_DIR / top
    if installed.is_dir():
        return installed / rest
    return PACKAGE_DIR.parent / top / rest


def shipped_name(path: str | os.PathLike) -> str | None:
    """The name of a shipped file in the package (``configs/profiles/a100-8b-derived.yaml``), the same in a checkout
    and in an installed wheel, links followed (a checkout's top-level ``configs/``); None for a file elsewhere."""
    resolved = Path(path).resolve()
    for root in (PACKAGE_DIR, PACKAGE_DIR.parent):
        try:
            relative = resolved.relative_to(root).as_posix()
        except ValueError:
            continue
        top = relative.split("/")[0]
        if root == PACKAGE_DIR and relative != "." or top in CHECKOUT_LINKS and resource_path(relative) == resolved:
            return relative
    return None
