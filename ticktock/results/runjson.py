"""run.json's shape: every key a reader uses, checked before any reader uses it; and what a resumed run carries over.

The runner writes run.json (``ticktock.replay.lifecycle.write_run``); the tables (``ticktock.tables.load``), the judge
and ``python -m ticktock.runs`` read it. A run.json edited by hand, written by another program or of another shape
(a list, a missing key, a number where a name belongs) must stop a reader with one line naming the key, never a
traceback deep inside a table: ``shape_problem`` checks every key in ``FIELDS`` (the keys the readers use, and
only those: a reader that starts to use another key adds it here), and a few rules between keys (``RULES``).

A key listed with ``required`` must be there whenever its parent is; any other key may be missing. Where a key is
there, its value must be of one of the kinds listed (``null`` only where ``NULL`` is one of them).

``shared_device`` (runs whose sessions share one device) sums what the device did over every invocation of a run
that was resumed (``accumulate_shared_device``), with each invocation's own record under ``invocations``.

Example::

    >>> good = {"status": "complete", "config": {"model": {"name": "m"}, "decoder": {"name": "ar"},
    ...                                          "clock": {"name": "modeled"}}}
    >>> shape_problem(good) is None
    True
    >>> shape_problem({**good, "config": {**good["config"], "decoder": {"name": 3}}})
    'config.decoder.name: must be a string, got 3'
    >>> shape_problem([good])
    'must be a JSON object, got a list'
    >>> shape_problem({**good, "shard": {"index": 4, "count": 4, "split": "ab12"}})
    'shard.index: must be an integer from 0 to shard.count - 1 = 3, got 4'
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

STRING, INTEGER, NUMBER, BOOLEAN, MAPPING, LIST, NULL = "a string", "an integer", "a number", "true or false", \
    "an object", "a list", "null"
STATUSES = ("complete", "running", "interrupted")  # and "failed: <why>"
LATEST_TIME_S = 1e11  # seconds since the epoch: any later heartbeat is not a time (the year 5138)
MOST_SHARDS = 100_000  # a shard.count above this is not a split of sessions (readers list every shard index)
DEVICE_TIMES = ("span_ms", "busy_ms", "post_audio_busy_ms", "draft_busy_ms", "talker_busy_ms", "idle_ms")  # shared_device
DEVICE_COUNTS = ("batched_encode_steps", "batched_encodings")  # shared_device: encodings batched across sessions
SOURCE_KINDS = ("measured", "published", "derived", "assumed")  # clock.profile_sources: where a profile's number is from


@dataclass(frozen=True)
class Field:
    """One key of run.json (``path``: dotted), the kinds its value may be, whether it must be there when its parent
    is, and a further check of its value (``allowed``: the problem in words, or None)."""

    path: str
    kinds: tuple[str, ...]
    required: bool = False
    allowed: Callable[[object], str | None] | None = None


def _at_least(least: int, most: int | None = None) -> Callable[[object], str | None]:
    def allowed(value) -> str | None:
        if value is None or (value >= least and (most is None or value <= most)):
            return None
        return f"must be >= {least}" + (f" and <= {most:_}" if most is not None else "") + f", got {_shown(value)}"
    return allowed


def _as_float(value) -> float:
    """A number as a float (an integer too large for one: infinity)."""
    try:
        return float(value)
    except OverflowError:
        return math.inf


def _finite(value) -> str | None:
    return None if value is None or math.isfinite(_as_float(value)) else f"must be a finite number, got {_shown(value)}"


def _positive(value) -> str | None:
    return None if value is None or (0 < _as_float(value) < math.inf) else f"must be a finite number > 0, got {_shown(value)}"


def _status(value) -> str | None:
    if value in STATUSES or value.startswith("failed"):
        return None
    return f"must be one of {', '.join(STATUSES)} or 'failed: <why>', got {value!r}"


def _sources(value) -> str | None:
    """What is wrong with run.json ``clock.profile_sources`` (the cost profile's per-field provenance): every entry
    one ``{kind: text}`` with kind one of ``SOURCE_KINDS`` and text a string.

    >>> _sources({"encode_ms": {"published": "vllm-omni PR 6117"}}) is None
    True
    >>> _sources({"encode_ms": {"guessed": "x"}})
    "entry 'encode_ms': must be one {kind: text} with kind measured, published, derived or assumed, got {'guessed': 'x'}"
    """
    for name, source in value.items():
        if not (isinstance(source, dict) and len(source) == 1 and next(iter(source)) in SOURCE_KINDS
                and isinstance(next(iter(source.values())), str)):
            return (f"entry {name!r}: must be one {{kind: text}} with kind {', '.join(SOURCE_KINDS[:-1])} or "
                    f"{SOURCE_KINDS[-1]}, got {_shown(source) if not isinstance(source, dict) else _entry(source)}")
    return None


def _entry(source: dict) -> str:
    """A profile_sources entry in an error message (cut at 60 characters)."""
    text = repr(source)
    return text if len(text) <= 60 else text[:57] + "..."


def _a_time(value) -> str | None:
    if value is None or 0 <= _as_float(value) <= LATEST_TIME_S:
        return None
    return f"must be a time in seconds since 1970, got {_shown(value)}"


FIELDS = (
    Field("run_id", (STRING,)),
    Field("schema_version", (INTEGER, NULL)),
    Field("status", (STRING,), required=True, allowed=_status),
    Field("config", (MAPPING,), required=True),
    *(Field(f"config.{group}", (MAPPING,), required=True) for group in ("model", "decoder", "clock")),
    *(Field(f"config.{group}.name", (STRING,), required=True) for group in ("model", "decoder", "clock")),
    Field("config.task", (MAPPING, NULL)),
    Field("config.task.name", (STRING, NULL)),
    Field("config.sampling", (MAPPING, NULL)),
    Field("config.sampling.temperature", (NUMBER,), allowed=_finite),
    Field("config.sampling.top_k", (INTEGER,)),
    Field("config.sampling.top_p", (NUMBER,), allowed=_finite),
    Field("config.seed", (INTEGER,)),
    Field("config.playback_delay_ms", (NUMBER, NULL), allowed=_at_least(0, 10_000)),
    Field("config.concurrency", (MAPPING, NULL)),
    Field("config.concurrency.sessions", (INTEGER, NULL), allowed=_at_least(1)),
    Field("config.concurrency.batching", (BOOLEAN,)),
    Field("config.concurrency.batch_encodings", (BOOLEAN,)),  # absent in runs written before it existed: false
    Field("config.concurrency.max_batch", (INTEGER, NULL)),
    Field("config.concurrency.stagger", (STRING, NUMBER, NULL)),
    Field("config.draft_policy", (MAPPING, NULL)),
    Field("config.draft_policy.name", (STRING, NULL)),
    Field("clock", (MAPPING, NULL)),
    *(Field(f"clock.{key}", (STRING, NULL)) for key in ("name", "profile", "profile_device", "profile_provenance",
                                                        "profile_sha256")),
    Field("clock.encode_scale", (NUMBER,), allowed=_positive),
    Field("clock.profile_sources", (MAPPING, NULL), allowed=_sources),  # absent in older runs
    Field("environment", (MAPPING, NULL)),
    *(Field(f"environment.{key}", (STRING, NULL)) for key in ("cpu", "cuda_device")),
    Field("environment.model", (MAPPING, NULL)),
    Field("environment.model.parameters", (INTEGER, NULL)),
    *(Field(f"environment.model.{key}", (BOOLEAN, NULL)) for key in ("random_weights", "miniature")),  # tables
    Field("decoder", (MAPPING, NULL)),
    Field("shard", (MAPPING, NULL)),
    Field("shard.index", (INTEGER,), required=True, allowed=_at_least(0)),
    Field("shard.count", (INTEGER,), required=True, allowed=_at_least(1, MOST_SHARDS)),
    Field("shard.split", (STRING,)),
    Field("shard.split_sessions", (INTEGER,), allowed=_at_least(0)),
    Field("heartbeat", (MAPPING, NULL)),
    Field("heartbeat.pid", (INTEGER, NULL)),
    Field("heartbeat.host", (STRING, NULL)),
    Field("heartbeat.pid_started", (INTEGER, NULL)),
    Field("heartbeat.updated", (NUMBER, NULL), allowed=_a_time),
    Field("sessions_total", (INTEGER, NULL), allowed=_at_least(0)),
    Field("row_counts", (MAPPING, NULL)),
    *(Field(f"row_counts.{table}", (INTEGER,), allowed=_at_least(0)) for table in ("chunks", "sessions", "forwards")),
    Field("timing_noise", (MAPPING, NULL)),
    *(Field(f"timing_noise.{key}", (NUMBER,)) for key in ("spread", "median_ms", "min_ms", "max_ms", "max_spread")),
    Field("shared_device", (MAPPING, NULL)),
    *(Field(f"shared_device.{key}", (NUMBER,), allowed=_finite) for key in DEVICE_TIMES),
    *(Field(f"shared_device.{key}", (INTEGER,), allowed=_at_least(0)) for key in DEVICE_COUNTS),
    Field("skipped_sessions", (LIST, NULL)),
    Field("failed_sessions", (LIST, NULL)),  # sessions the watchdog stopped: [{"session_id", "error"}]
)


def kind_of(value) -> str:
    """The JSON kind of a value (as ``Field.kinds`` names them).

    >>> [kind_of(v) for v in ("a", 1, 1.5, True, None, {}, [])]
    ['a string', 'an integer', 'a number', 'true or false', 'null', 'an object', 'a list']
    """
    if value is None:
        return NULL
    for kind, types in ((BOOLEAN, bool), (INTEGER, int), (NUMBER, float), (STRING, str), (MAPPING, dict), (LIST, list)):
        if isinstance(value, types):
            return kind
    return type(value).__name__


def _fits(value, kinds: tuple[str, ...]) -> bool:
    kind = kind_of(value)
    return kind in kinds or (kind == INTEGER and NUMBER in kinds)


def _shown(value) -> str:
    """A value in an error message: its kind for an object or a list, else its repr (cut at 60 characters)."""
    text = kind_of(value) if isinstance(value, (dict, list)) else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _lookup(data: dict, path: str) -> tuple[bool, object, bool]:
    """(parent there, value, key there) of a dotted path: the parent is there when every key above it holds an object."""
    keys = path.split(".")
    node = data
    for key in keys[:-1]:
        node = node.get(key) if isinstance(node, dict) else None
    if not isinstance(node, dict):
        return False, None, False
    return True, node.get(keys[-1]), keys[-1] in node


def field_problem(data: dict, spec: Field) -> str | None:
    """What is wrong with one key of a run.json (None: nothing)."""
    parent, value, there = _lookup(data, spec.path)
    if not parent:
        return None
    if not there:
        return f"{spec.path}: missing" if spec.required else None
    if not _fits(value, spec.kinds):
        return f"{spec.path}: must be {' or '.join(spec.kinds)}, got {_shown(value)}"
    if INTEGER not in spec.kinds and isinstance(value, int) and not isinstance(value, bool) and \
            math.isinf(_as_float(value)):
        return f"{spec.path}: must be a number (a float), got an integer of {len(str(abs(value)))} digits"
    problem = spec.allowed(value) if spec.allowed is not None and value is not None else None
    return f"{spec.path}: {problem}" if problem else None


def _shard_rule(data: dict) -> str | None:
    shard = data.get("shard")
    if not isinstance(shard, dict) or shard["count"] <= 1:
        return None
    if shard["index"] >= shard["count"]:
        return (f"shard.index: must be an integer from 0 to shard.count - 1 = {shard['count'] - 1}, "
                f"got {shard['index']}")
    return None if "split" in shard else "shard.split: missing (a shard of a sharded run names its split)"


def _noise_rule(data: dict) -> str | None:
    noise = data.get("timing_noise")
    if not isinstance(noise, dict) or "spread" not in noise:
        return None
    missing = [key for key in ("median_ms", "min_ms", "max_ms", "max_spread") if key not in noise]
    return f"timing_noise.{missing[0]}: missing (a measured timing noise records it)" if missing else None


RULES = (_shard_rule, _noise_rule)


def shape_problem(data) -> str | None:
    """The first thing wrong with a run.json's shape, as ``key: what is wrong`` (None: every key in ``FIELDS`` is
    there where required and of its kind, and the ``RULES`` hold)."""
    if not isinstance(data, dict):
        return f"must be a JSON object, got {kind_of(data)}"
    for spec in FIELDS:
        problem = field_problem(data, spec)
        if problem:
            return problem
    for rule in RULES:
        problem = rule(data)
        if problem:
            return problem
    return None


def accumulate_shared_device(previous: dict | None, current: dict | None) -> dict | None:
    """run.json's ``shared_device`` after one more invocation of a run: every count and time summed over the
    invocations, and each invocation's own record under ``invocations`` (oldest first). ``previous`` is what
    run.json held before this invocation (None: nothing; a record without ``invocations``: one invocation);
    ``current`` this invocation's ``DeviceStats.summary()`` (None or empty: the device was not shared).

    >>> first = accumulate_shared_device(None, {"steps": 10, "busy_ms": 2.5})
    >>> first
    {'steps': 10, 'busy_ms': 2.5, 'invocations': [{'steps': 10, 'busy_ms': 2.5}]}
    >>> both = accumulate_shared_device(first, {"steps": 4, "busy_ms": 1.0})
    >>> both["steps"], both["busy_ms"], len(both["invocations"])
    (14, 3.5, 2)
    """
    earlier = _invocations(previous)
    if not current:
        return previous if earlier else None
    invocations = [*earlier, dict(current)]
    totals: dict = {}
    for record in invocations:
        for key, value in record.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                totals[key] = totals.get(key, 0) + value
    return {**{key: round(value, 3) if isinstance(value, float) else value for key, value in totals.items()},
            "invocations": invocations}


def _invocations(record) -> list[dict]:
    if not isinstance(record, dict) or not record:
        return []
    listed = record.get("invocations")
    if isinstance(listed, list):
        return [r for r in listed if isinstance(r, dict)]
    return [{k: v for k, v in record.items() if k != "invocations"}]
