"""Files that ship with TickTock (configs, cost profiles, the mini corpus, the embedded model).

They live in the package (``ticktock/configs``, ``ticktock/manifests``; the top-level ``configs/`` and
``manifests/`` of the checkout are links to them), so a non-editable install carries them as package data.

Example::

    >>> resource_path("configs/run.yaml").is_file()
    True
"""

from __future__ import annotations

from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent


def resource_path(relative: str) -> Path:
    """Absolute path of a shipped file, e.g. ``configs/profiles/a100-8b-derived.yaml``."""
    top, _, rest = relative.partition("/")
    installed = PACKAGE_DIR / top
    if installed.is_dir():
        return installed / rest
    return PACKAGE_DIR.parent / top / rest


def register_resolver() -> None:
    """Make TickTock's config resolvers available in Hydra/OmegaConf configs: ``${ticktock_resource:configs/...}``
    (a shipped file's path) and ``${ticktock_shard:${shard.index},${shard.count}}`` (a sharded run's folder
    suffix, ``ticktock.replay.shards.folder_suffix``)."""
    from omegaconf import OmegaConf

    from ticktock.replay.shards import folder_suffix

    if not OmegaConf.has_resolver("ticktock_resource"):
        OmegaConf.register_new_resolver("ticktock_resource", lambda relative: str(resource_path(relative)))
    if not OmegaConf.has_resolver("ticktock_shard"):
        OmegaConf.register_new_resolver("ticktock_shard", folder_suffix)
