"""TickTock's config resolvers for Hydra/OmegaConf (the shipped files themselves: ``ticktock.shipped``).

Example::

    >>> from omegaconf import OmegaConf
    >>> register_resolver()
    >>> OmegaConf.create({"p": "${ticktock_resource:configs/run.yaml}"}).p.endswith("run.yaml")
    True
"""

from __future__ import annotations

from ticktock.shipped import resource_path


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
