"""Tasks: which sessions a run replays, and who answers the model's tool calls.

A task config names one or more session manifests, an optional filter on task types, and an optional
tool executor (``_target_`` of a class with ``respond(call) -> str``). Example ``configs/task/fdb_v3.yaml``::

    name: fdb_v3
    _target_: ticktock.sessions.tasks.ManifestTask
    manifest: ${ticktock_resource:manifests/ticktock-mini/manifest.jsonl}
    tasks: [fdb_v3]
    tool_executor: {_target_: ticktock.world.mock_tools.MockToolExecutor}
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from ticktock.world.injection import ToolCallInjector, ToolExecutor
from ticktock.sessions.manifest import ManifestError, Session, load_manifest


class ManifestTask:
    def __init__(
        self,
        manifest: str | Sequence[str],
        name: str = "task",
        tasks: Sequence[str] | None = None,
        tool_executor: ToolExecutor | None = None,
    ):
        self.name = name
        self.manifests = [Path(manifest)] if isinstance(manifest, (str, Path)) else [Path(m) for m in manifest]
        self.tasks = list(tasks) if tasks is not None else None
        self.tool_executor = tool_executor

    def sessions(self) -> list[Session]:
        """All sessions of all manifests, validated before any work starts; ids must be unique."""
        sessions: list[Session] = []
        for manifest in self.manifests:
            sessions += load_manifest(manifest, self.tasks)
        ids = [s.session_id for s in sessions]
        if len(set(ids)) != len(ids):
            duplicate = next(i for i in ids if ids.count(i) > 1)
            raise ManifestError(f"task {self.name}: session id {duplicate!r} appears in more than one manifest")
        if not sessions:
            raise ManifestError(f"task {self.name}: no sessions (task filter {self.tasks}) in {[str(m) for m in self.manifests]}")
        return sessions

    def injector(self) -> ToolCallInjector:
        return ToolCallInjector(self.tool_executor)


def check_task_options(task) -> None:
    """A task config's options that can be checked before any work (a ``ConfigError`` line naming the key): today
    those of ``task=hf`` (``dataset_task.check_dataset_options``); ``task`` is the config (a mapping)."""
    from ticktock.sessions.dataset_task import DatasetTask, check_dataset_options

    target = task.get("_target_") if task is not None else None
    if target == f"{DatasetTask.__module__}.{DatasetTask.__qualname__}":
        check_dataset_options(task.get("dataset"), task.get("streaming", False), task.get("audio_cache"))
