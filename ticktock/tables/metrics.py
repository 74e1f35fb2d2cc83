"""Pure metric functions on result rows (pandas DataFrames with the columns of ``ticktock.results.schema``).

Each function implements one metric definition (its docstring states it) and nothing else; the table builders in
``compute.py`` call them per cell. Paired metrics (speedup, losslessness) take the baseline's chunk set
as the reference: the method's rows must contain every one of those chunks, or ``ChunkSetMismatch``
names the runs and the missing chunks (never a silent inner join).

Example::

    >>> import pandas as pd
    >>> ar = pd.DataFrame({"session_id": ["s", "s"], "chunk_index": [0, 1], "kind": ["speak", "speak"],
    ...                    "post_audio_ms": [300.0, 500.0], "num_output_tokens": [3, 5],
    ...                    "num_post_audio_forwards": [3, 5]})
    >>> sl = ar.assign(post_audio_ms=[100.0, 100.0], num_post_audio_forwards=[1, 1])
    >>> result = speedup(ar, sl, ar["kind"] == "speak")
    >>> result.speedup, result.mat
    (4.0, 4.0)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from ticktock.tables.load import TablesError

KEY = ["session_id", "chunk_index"]
TOOL_TASK = "fdb_v3"
LAGGING_MS = 1000.0
BUCKETS = [(1, 1, "1"), (2, 4, "2-4"), (5, 8, "5-8"), (9, 16, "9-16"), (17, 32, "17-32"), (33, 64, "33-64"),
           (65, 128, "65-128")]
OVERFLOW_BUCKET = ">128"
BUCKET_LABELS = [label for _, _, label in BUCKETS] + [OVERFLOW_BUCKET]


class ChunkSetMismatch(TablesError):
    """A method run lacks chunks that its baseline run has."""


@dataclass(frozen=True)
class Speedup:
    chunks: int
    baseline_ms: float
    method_ms: float
    speedup: float
    mat: float


def paired_rows(baseline: pd.DataFrame, method: pd.DataFrame, mask, names=("baseline", "method"), subset="") -> pd.DataFrame:
    """The method's rows for exactly the baseline's chunks selected by ``mask`` (same order).

    >>> base = pd.DataFrame({"session_id": ["s"], "chunk_index": [0], "x": [1]})
    >>> paired_rows(base, base.iloc[:0], base["x"] > 0, ("ar run", "sl run"))
    Traceback (most recent call last):
    ...
    ticktock.tables.metrics.ChunkSetMismatch: chunk sets differ: sl run lacks 1 of the 1 chunks of ar run: session s chunk 0
    """
    wanted = pd.MultiIndex.from_frame(baseline.loc[mask, KEY])
    have = method.set_index(KEY)
    missing = wanted.difference(have.index, sort=False)
    if len(missing):
        listed = ", ".join(f"session {s} chunk {c}" for s, c in list(missing)[:10])
        more = f" (and {len(missing) - 10} more)" if len(missing) > 10 else ""
        what = f"{subset} chunks" if subset else "chunks"
        raise ChunkSetMismatch(f"chunk sets differ: {names[1]} lacks {len(missing)} of the {len(wanted)} {what} of "
                               f"{names[0]}: {listed}{more}")
    return have.loc[wanted].reset_index()


def speedup(baseline: pd.DataFrame, method: pd.DataFrame, mask, names=("baseline", "method"), subset="") -> Speedup:
    """Mean baseline post-audio latency / mean method latency over the baseline's chunks in ``mask``;
    #MAT = method tokens committed / method post-audio forwards over the same chunks."""
    base = baseline.loc[mask]
    paired = paired_rows(baseline, method, mask, names, subset)
    if base.empty:
        return Speedup(0, math.nan, math.nan, math.nan, math.nan)
    base_ms, method_ms = float(base["post_audio_ms"].mean()), float(paired["post_audio_ms"].mean())
    forwards = int(paired["num_post_audio_forwards"].sum())
    mat = int(paired["num_output_tokens"].sum()) / forwards if forwards else math.nan
    return Speedup(len(base), base_ms, method_ms, base_ms / method_ms if method_ms > 0 else math.inf, mat)


def speak_mask(chunks: pd.DataFrame, tasks: list[str] | None = None) -> pd.Series:
    """Speak chunks (Table 2's subset), of ``tasks`` only when given."""
    mask = chunks["kind"] == "speak"
    return mask & chunks["task"].isin(tasks) if tasks else mask


def tool_mask(chunks: pd.DataFrame) -> pd.Series:
    """FDB v3 tool-call chunks (the tool table's subset)."""
    return (chunks["kind"] == "tool") & (chunks["task"] == TOOL_TASK)


def chunk_outputs(chunks: pd.DataFrame, mask) -> dict[tuple[str, int], tuple[int, ...]]:
    """The output tokens of the chunks ``mask`` selects, by (session, chunk).

    >>> rows = pd.DataFrame({"session_id": ["s", "s"], "chunk_index": [0, 1], "output_token_ids": [[1, 2], [3]]})
    >>> chunk_outputs(rows, rows["chunk_index"] > 0)
    {('s', 1): (3,)}
    """
    rows = chunks.loc[mask]
    return {(str(s), int(c)): tuple(int(t) for t in ids)
            for s, c, ids in zip(rows["session_id"], rows["chunk_index"], rows["output_token_ids"])}


def max_lag(sessions: pd.DataFrame) -> dict:
    """Per-session max lag on FDB v3: mean and max over sessions, share of sessions above 1 s.

    >>> max_lag(pd.DataFrame({"task": ["fdb_v3"] * 4, "max_lag_ms": [0.0, 500.0, 1000.0, 2500.0]}))
    {'sessions': 4, 'mean_ms': 1000.0, 'max_ms': 2500.0, 'lagging': 0.25}
    """
    lags = sessions.loc[sessions["task"] == TOOL_TASK, "max_lag_ms"]
    if lags.empty:
        return {"sessions": 0, "mean_ms": math.nan, "max_ms": math.nan, "lagging": math.nan}
    return {"sessions": len(lags), "mean_ms": float(lags.mean()), "max_ms": float(lags.max()),
            "lagging": float((lags > LAGGING_MS).mean())}


def onset_latency(chunks: pd.DataFrame) -> dict:
    """Response onset latency: the mean over tasks of each task's mean ``response_ms`` of onset chunks.

    >>> rows = pd.DataFrame({"task": ["a", "a", "b"], "is_onset": [True, True, True], "response_ms": [100.0, 300.0, 50.0]})
    >>> onset_latency(rows)
    {'onset_ms': 125.0, 'tasks': 2, 'onsets': 3}
    """
    onsets = chunks[chunks["is_onset"].astype(bool)]
    if onsets.empty:
        return {"onset_ms": math.nan, "tasks": 0, "onsets": 0}
    per_task = onsets.groupby("task")["response_ms"].mean()
    return {"onset_ms": float(per_task.mean()), "tasks": len(per_task), "onsets": len(onsets)}


def first_audio_latency(sessions: pd.DataFrame) -> dict:
    """Onset to first audio (runs with a talker): the mean over tasks of each task's mean first-audio latency of its
    replies (sessions' ``first_audio_latencies_ms``: from a reply's first chunk's arrival until its first audio plays),
    as ``onset_latency`` averages the text onsets.

    >>> rows = pd.DataFrame({"task": ["a", "a", "b"], "first_audio_latencies_ms": [[100.0], [300.0, 200.0], [50.0]]})
    >>> first_audio_latency(rows)
    {'first_audio_ms': 125.0, 'replies': 4}
    """
    replies = sessions[["task", "first_audio_latencies_ms"]].explode("first_audio_latencies_ms").dropna()
    if replies.empty:
        return {"first_audio_ms": math.nan, "replies": 0}
    per_task = replies["first_audio_latencies_ms"].astype(float).groupby(replies["task"]).mean()
    return {"first_audio_ms": float(per_task.mean()), "replies": len(replies)}


def stalls(sessions: pd.DataFrame) -> dict:
    """Stalls of the assistant's voice inside its replies (runs with a talker), over all sessions: their count, their
    total ms, and the count per minute of the assistant's speech (``assistant_speech_s``; NaN without speech).

    >>> rows = pd.DataFrame({"num_stalls": [2, 1], "total_stall_ms": [150.0, 40.0], "assistant_speech_s": [20.0, 10.0]})
    >>> stalls(rows)
    {'stalls': 3, 'stall_ms': 190.0, 'per_min': 6.0, 'speech_s': 30.0}
    """
    count, speech_s = int(sessions["num_stalls"].fillna(0).sum()), float(sessions["assistant_speech_s"].fillna(0).sum())
    return {"stalls": count, "stall_ms": float(sessions["total_stall_ms"].fillna(0).sum()),
            "per_min": 60.0 * count / speech_s if speech_s > 0 else math.nan, "speech_s": speech_s}


def tool_latency(chunks: pd.DataFrame) -> dict:
    """Tool-call latency: mean ``response_ms`` of FDB v3 tool chunks."""
    tools = chunks.loc[tool_mask(chunks), "response_ms"]
    return {"tool_ms": float(tools.mean()) if len(tools) else math.nan, "tool_chunks": len(tools)}


def acceptance(chunks: pd.DataFrame) -> dict[str, tuple[float, int]]:
    """Share of chunks with ``draft_full_match`` True among those where it is not null: overall, by the
    output's chunk kind and by whether the user was speaking. Values are (share, chunks).

    >>> rows = pd.DataFrame({"kind": ["listen", "listen", "speak"], "user_speaking": [True, False, False],
    ...                      "draft_full_match": [True, False, None]})
    >>> acceptance(rows)
    {'all': (0.5, 2), 'listen': (0.5, 2), 'user silent': (0.0, 1), 'user speaking': (1.0, 1)}
    """
    data = chunks[chunks["draft_full_match"].notna()]
    match = data["draft_full_match"].astype(bool)
    out = {"all": _share(match)}
    for kind in sorted(data["kind"].unique()):
        out[str(kind)] = _share(match[data["kind"] == kind])
    speaking = data["user_speaking"].astype(bool)
    for label, flag in (("user silent", False), ("user speaking", True)):
        if (speaking == flag).any():
            out[label] = _share(match[speaking == flag])
    return out


def _share(values: pd.Series) -> tuple[float, int]:
    return (float(values.mean()) if len(values) else math.nan, len(values))


def bucket(tokens: int) -> str | None:
    """The output-length bucket of Figure 4a (None for a chunk without output).

    >>> [bucket(n) for n in (0, 1, 2, 4, 5, 64, 65, 128, 129)]
    [None, '1', '2-4', '2-4', '5-8', '33-64', '65-128', '65-128', '>128']
    """
    for low, high, label in BUCKETS:
        if low <= tokens <= high:
            return label
    return OVERFLOW_BUCKET if tokens > BUCKETS[-1][1] else None


def forwards_by_bucket(chunks: pd.DataFrame) -> pd.DataFrame:
    """Mean post-audio forwards per chunk and chunk counts, by output-length bucket (non-empty buckets).

    >>> rows = pd.DataFrame({"num_output_tokens": [1, 3, 4], "num_post_audio_forwards": [2, 3, 5]})
    >>> forwards_by_bucket(rows).to_dict("index")
    {'1': {'forwards': 2.0, 'chunks': 1}, '2-4': {'forwards': 4.0, 'chunks': 2}}
    """
    labels = chunks["num_output_tokens"].map(bucket)
    data = chunks.assign(bucket=labels).dropna(subset=["bucket"])
    grouped = data.groupby("bucket")["num_post_audio_forwards"].agg(["mean", "size"])
    grouped = grouped.reindex([b for b in BUCKET_LABELS if b in grouped.index])
    return pd.DataFrame({"forwards": grouped["mean"].astype(float), "chunks": grouped["size"].astype(int)})


def losslessness(baseline: pd.DataFrame, method: pd.DataFrame, names=("baseline", "method")) -> dict:
    """Share of the baseline's chunks whose ``output_token_ids`` the method reproduces exactly, and the
    first differing (session, chunk) in session order.

    >>> base = pd.DataFrame({"session_id": ["s", "s"], "chunk_index": [0, 1], "output_token_ids": [[1, 2], [3]]})
    >>> losslessness(base, base.assign(output_token_ids=[[1, 2], [4]]))
    {'chunks': 2, 'identical': 1, 'share': 0.5, 'first_difference': 's/1'}
    """
    paired = paired_rows(baseline, method, pd.Series(True, index=baseline.index), names)
    same = [list(a) == list(b) for a, b in zip(baseline["output_token_ids"], paired["output_token_ids"])]
    first = next((f"{s}/{c}" for (s, c), ok in sorted(zip(zip(baseline["session_id"], baseline["chunk_index"]), same))
                  if not ok), None)
    n = len(same)
    return {"chunks": n, "identical": sum(same), "share": sum(same) / n if n else math.nan, "first_difference": first}
