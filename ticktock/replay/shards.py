"""Sharded runs: one run's sessions split over ``shard.count`` jobs (GPUs, cluster tasks), one run folder each.

``shard.index=i shard.count=n`` replays only shard ``i`` of the run's sessions (after the task's filters and the
``limit.*`` options). The split is a pure function of the sessions and ``n``, so every job computes the same
one on its own, whatever order the manifest lists them in and whichever job starts first:

- sessions are taken longest first (chunk count), ties broken by a stable hash of the session id (SHA-256,
  not Python's salted ``hash``), and each goes to the shard with the fewest chunks so far (then the fewest
  sessions, then the lowest index): shards end up balanced by replay work, not by session count;
- a session always lands in the same shard for the same sessions and ``n``, so a requeued job resumes its
  own sessions from its run folder.

Each shard's run.json records ``shard`` (``ShardPlan.record``): its index and count, the ``split`` id that
all shards of one sharded run share (a digest of the run's identity without the shard and of every session
in the split), and the sessions and chunks of the whole split. ``python -m ticktock.tables`` combines the
shards of one split and refuses a split with a shard missing, twice, or failed; ``python -m ticktock.runs``
lists which shards of a split are present. Both read the shards of a split from their run.json files with
``group_splits`` (nothing here imports torch or pandas).

Example::

    >>> work = {"a": 10, "b": 9, "c": 4, "d": 3, "e": 2}          # session id -> chunks
    >>> split = assign_shards(work, 2)
    >>> sorted(s for s, i in split.items() if i == 0), sorted(s for s, i in split.items() if i == 1)
    (['a', 'd', 'e'], ['b', 'c'])
    >>> ShardSpec.parse({"index": 1, "count": 2}).label
    'shard 1 of 2'
    >>> ShardSpec.parse({"index": 2, "count": 2})
    Traceback (most recent call last):
    ...
    ticktock.replay.shards.ShardError: shard.index: must be an integer from 0 to shard.count - 1 = 1, got 2
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from ticktock.errors import ConfigError


class ShardError(ConfigError):
    """``shard.index`` / ``shard.count`` are not a valid shard of a run."""


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True)
class ShardSpec:
    """Which shard of its run a job replays: ``index`` in 0 .. ``count`` - 1 (``count`` 1: the whole run)."""

    index: int = 0
    count: int = 1

    @classmethod
    def parse(cls, node) -> "ShardSpec":
        """From the ``shard`` run options (a mapping with ``index`` and ``count``, or None for the whole run)."""
        node = node or {}
        count, index = node.get("count", 1), node.get("index", 0)
        if not _is_int(count) or count < 1:
            raise ShardError(f"shard.count: must be an integer >= 1 (1: no sharding), got {count!r}")
        if not _is_int(index) or not 0 <= index < count:
            raise ShardError(f"shard.index: must be an integer from 0 to shard.count - 1 = {count - 1}, got {index!r}")
        return cls(index, count)

    @property
    def sharded(self) -> bool:
        return self.count > 1

    @property
    def label(self) -> str:
        return f"shard {self.index} of {self.count}"


def stable_hash(session_id: str) -> str:
    """The hash that orders sessions of equal length: the same on every machine and Python process."""
    return hashlib.sha256(session_id.encode()).hexdigest()


def assign_shards(chunks_by_session: dict[str, int], count: int) -> dict[str, int]:
    """Shard index of every session, balanced by chunk count (see the module docstring)."""
    loads = [(0, 0, index) for index in range(count)]  # (chunks, sessions, index) per shard
    assignment = {}
    for session_id in sorted(chunks_by_session, key=lambda s: (-chunks_by_session[s], stable_hash(s))):
        chunks, sessions, index = min(loads)
        assignment[session_id] = index
        loads[index] = (chunks + chunks_by_session[session_id], sessions + 1, index)
    return assignment


@dataclass(frozen=True)
class ShardPlan:
    """A run's split over its shards and this job's part of it."""

    spec: ShardSpec
    split: str  # what every shard of this sharded run shares (``split_id``)
    assignment: dict  # session id -> shard index, for every session of the split
    chunks_by_session: dict

    @classmethod
    def make(cls, spec: ShardSpec, identity: dict, chunks_by_session: dict[str, int]) -> "ShardPlan":
        return cls(spec, split_id(identity, chunks_by_session), assign_shards(chunks_by_session, spec.count),
                   dict(chunks_by_session))

    def keeps(self, session_id: str) -> bool:
        return self.assignment[session_id] == self.spec.index

    def record(self) -> dict:
        """run.json's ``shard``: this shard, the split it belongs to, and the size of the whole split and this part."""
        mine = [s for s in self.assignment if self.keeps(s)]
        return {"index": self.spec.index, "count": self.spec.count, "split": self.split,
                "split_sessions": len(self.assignment), "split_chunks": sum(self.chunks_by_session.values()),
                "sessions": len(mine), "chunks": sum(self.chunks_by_session[s] for s in mine)}


def split_id(identity: dict, chunks_by_session: dict[str, int]) -> str:
    """A short digest of the run's identity (without the shard) and of the sessions split: equal for every shard
    of one sharded run, different for another decoder, setup or session selection."""
    text = json.dumps([identity, sorted(chunks_by_session.items())], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def folder_suffix(index, count) -> str:
    """The suffix of a shard's run folder in a sweep (``hydra.sweep.subdir``): none for a whole run.

    >>> folder_suffix(0, 1), folder_suffix(3, 8)
    ('', '-shard3of8')
    """
    return f"-shard{index}of{count}" if count != 1 else ""


class FoundShard(NamedTuple):
    """One shard of a split as its run.json tells it."""

    index: int
    count: int
    path: Path
    status: str  # complete, running, interrupted, or failed: ...
    done: int  # sessions done


@dataclass
class Split:
    """The shards found of one sharded run (one ``split`` id), read from their run.json files."""

    split: str
    count: int  # shard.count of the first shard found
    what: str  # model/decoder/clock/task
    split_sessions: int
    shards: list[FoundShard] = field(default_factory=list)

    def missing(self) -> list[int]:
        present = {s.index for s in self.shards}
        return [i for i in range(self.count) if i not in present]

    def twice(self) -> dict[int, list[Path]]:
        """Shards present more than once (overlapping: the same sessions in two run folders)."""
        paths: dict[int, list[Path]] = {}
        for shard in self.shards:
            paths.setdefault(shard.index, []).append(shard.path)
        return {i: p for i, p in sorted(paths.items()) if len(p) > 1}

    def counts(self) -> list[int]:
        return sorted({s.count for s in self.shards})

    def in_order(self) -> list[FoundShard]:
        return sorted(self.shards, key=lambda s: s.index)

    def problems(self) -> list[tuple[str, str]]:
        """What keeps this split from being one whole run, as (kind, message): ``counts`` (shards of different
        shard.count), ``twice`` (a shard in two run folders), ``missing``, and a shard not complete under its status
        (``failed``, ``interrupted``, ``running``). Empty: every shard there, once, complete."""
        found = []
        if len(self.counts()) > 1:
            found.append(("counts", f"{self.label()}: shards of different shard.count (" + ", ".join(
                f"{s.path} is shard {s.index} of {s.count}" for s in self.shards) + "); pass one split only"))
        for index, paths in self.twice().items():
            found.append(("twice", f"{self.label()}: shard {index} of {self.count} appears {len(paths)} times "
                                   f"(overlapping: {', '.join(map(str, paths))}); pass only one of them"))
        if self.missing():
            found.append(("missing", f"{self.label()}: shard(s) {', '.join(map(str, self.missing()))} of {self.count} "
                                     f"missing ({len(self.shards)} found: {', '.join(str(s.path) for s in self.shards)})"))
        for shard in self.in_order():
            if shard.status != "complete":
                found.append((shard.status.split(":")[0], f"{self.label()}: shard {shard.index} of {self.count} "
                              f"({shard.path}) is {shard.status}; rerun it into the same folder to resume it"))
        return found

    def label(self) -> str:
        return f"sharded run {self.what} (split {self.split})"

    def summary(self) -> str:
        """One line: which shards are there and where they stand, e.g. ``sharded run m/ar/modeled/mini (split
        3f2a...): 3 of 4 shards (missing: 2), 2 complete, 1 failed (shard 1); sessions 140/190``."""
        states: dict[str, list[int]] = {}
        for shard in self.in_order():
            states.setdefault(shard.status.split(":")[0], []).append(shard.index)
        present = len({s.index for s in self.shards})
        parts = [f"{present} of {self.count} shards" + (f" (missing: {', '.join(map(str, self.missing()))})"
                                                         if self.missing() else "")]
        parts += [f"{len(indices)} {state}" + ("" if state == "complete" else
                                                f" (shard {', '.join(map(str, indices))})")
                  for state, indices in sorted(states.items())]
        parts += [f"shard {i} twice" for i in self.twice()]
        done = sum(s.done for s in self.shards)
        return f"{self.label()}: {', '.join(parts)}; sessions {done}/{self.split_sessions}"


def group_splits(runs: list[tuple[Path, dict, str, int]]) -> list[Split]:
    """The sharded runs among ``runs`` ((path, run.json, status, sessions done) each; status as
    ``liveness.run_state`` says), one ``Split`` per split id, in order of first appearance. Unsharded runs
    (no ``shard`` record, or ``count`` 1) are not in any split."""
    splits: dict[str, Split] = {}
    for path, meta, status, done in runs:
        shard = meta.get("shard") or {}
        if int(shard.get("count", 1)) <= 1:
            continue
        config = meta.get("config") or {}
        names = [(config.get(k) or {}).get("name", "?") for k in ("model", "decoder", "clock", "task")]
        split = splits.setdefault(shard["split"], Split(shard["split"], int(shard["count"]), "/".join(map(str, names)),
                                                        int(shard.get("split_sessions", 0))))
        split.shards.append(FoundShard(int(shard["index"]), int(shard["count"]), Path(path), status, done))
    return list(splits.values())
