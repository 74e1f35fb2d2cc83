"""The dataset card (``README.md``) of an exported TickTock-Bench: the YAML header the Hub reads, then the composition,
the licences per source, the columns and how to load and replay the dataset.

The header names one config per task (split ``test``, files ``<task>/test-*``; the first is the default),
``license`` (the one licence of every session, or ``other`` with the table below when they differ or one is not
known), ``task_categories``, ``size_categories`` and ``pretty_name``. Licences come from each session's
``provenance.source`` (``LICENSES``; FDB v1's synthetic subsets are MIT, its Candor and ICC subsets CC BY-NC 4.0).

Example::

    >>> from ticktock.shipped import resource_path
    >>> from ticktock.sessions.manifest import load_manifest
    >>> sessions = load_manifest(resource_path("manifests/ticktock-mini/manifest.jsonl"))
    >>> [(row.task, row.sessions) for row in composition(sessions)][:2]
    [('llama_questions', 13), ('web_questions', 13)]
    >>> text = dataset_card("TickTock-Bench-mini", composition(sessions), None)
    >>> text.splitlines()[0], "license: apache-2.0" in text, "config_name: fdb_v3" in text
    ('---', True, True)
"""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass, field

from ticktock.sessions.manifest import TASK_TYPES, Session

SPLIT = "test"
LICENSES = {  # provenance.source -> (the Hub's licence id, or None when the source states none; note)
    "ticktock-synth": ("apache-2.0", "synthesized by TickTock (eSpeak NG speech); TickTock's own licence"),
    "openaudiobench": (None, "baichuan-inc/OpenAudioBench states no licence; ask its authors before redistributing"),
    "voicebench": ("apache-2.0", "hlt-lab/voicebench"),
    "big_bench_audio": ("mit", "ArtificialAnalysis/big_bench_audio"),
    "fdb_v1": ("cc-by-nc-4.0", "Full-Duplex-Bench v1.0, Candor and ICC subsets"),
    "fdb_v1_5": ("mit", "Full-Duplex-Bench v1.5"),
    "fdb_v3": (None, "Full-Duplex-Bench v3: no licence stated with its data release; ask its authors"),
}
FDB_V1_SYNTHETIC = ("mit", "Full-Duplex-Bench v1.0, synthetic subsets")
UNKNOWN = (None, "source not known to TickTock: check its licence")


@dataclass
class TaskRow:
    """One task of a corpus: its sessions, chunks, hours of audio, median length, expected tool calls, sources."""

    task: str
    sessions: int = 0
    chunks: int = 0
    seconds: float = 0.0
    lengths: list = field(default_factory=list)
    tool_calls: int = 0
    sources: Counter = field(default_factory=Counter)

    @property
    def median_s(self) -> float:
        return statistics.median(self.lengths) if self.lengths else 0.0


def task_order(tasks) -> list[str]:
    """The paper's task order first (``TASK_TYPES``), then any other task in name order."""
    known = [t for t in TASK_TYPES if t in tasks]
    return known + sorted(set(tasks) - set(known))


def composition(sessions: list[Session]) -> list[TaskRow]:
    """Per task (``task_order``), what its sessions hold."""
    rows: dict[str, TaskRow] = {}
    for session in sessions:
        row = rows.setdefault(session.task, TaskRow(session.task))
        row.sessions += 1
        row.chunks += len(session.chunk_spans())
        row.seconds += session.duration_s
        row.lengths.append(session.duration_s)
        row.tool_calls += len(session.expected.get("tool_calls") or [])
        row.sources[licence_key(session)] += 1
    return [rows[task] for task in task_order(rows)]


def licence_key(session: Session) -> tuple[str, tuple[str | None, str]]:
    """``(source, (licence id or None, note))`` of a session."""
    source = str(session.provenance.get("source") or "unknown")
    if source == "fdb_v1" and str(session.provenance.get("source_id", "")).startswith("synthetic"):
        return source, FDB_V1_SYNTHETIC
    return source, LICENSES.get(source, UNKNOWN)


def size_category(sessions: int) -> str:
    """The Hub's size bucket: ``size_category(760) == 'n<1K'``."""
    for limit, name in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K")):
        if sessions < limit:
            return name
    return "100K<n<1M"


def header(name: str, rows: list[TaskRow]) -> dict:
    """The YAML header's fields."""
    licences = {licence for row in rows for (_, (licence, _)) in row.sources}
    data = {"pretty_name": name, "language": ["en"], "task_categories": ["audio-to-audio"],
            "tags": ["full-duplex", "speech", "spoken-dialogue", "benchmark", "ticktock"],
            "size_categories": [size_category(sum(row.sessions for row in rows))]}
    if len(licences) == 1 and None not in licences:
        data["license"] = licences.pop()
    else:
        data.update({"license": "other", "license_name": "per-source"})  # the card's licence table
    data["configs"] = [{"config_name": row.task, "data_files": [{"split": SPLIT, "path": f"{row.task}/{SPLIT}-*"}],
                        **({"default": True} if i == 0 else {})} for i, row in enumerate(rows)]
    return data


def composition_table(rows: list[TaskRow]) -> list[str]:
    lines = ["| task (config) | sessions | 1 s chunks | hours | median s | expected tool calls |",
             "|---|---:|---:|---:|---:|---:|"]
    for row in rows:
        lines.append(f"| {row.task} | {row.sessions} | {row.chunks} | {row.seconds / 3600:.2f} | {row.median_s:.1f} | "
                     f"{row.tool_calls} |")
    total = TaskRow("total", lengths=[s for row in rows for s in row.lengths])
    lines.append(f"| **total** | {sum(r.sessions for r in rows)} | {sum(r.chunks for r in rows)} | "
                 f"{sum(r.seconds for r in rows) / 3600:.2f} | {total.median_s:.1f} | "
                 f"{sum(r.tool_calls for r in rows)} |")
    return lines


def licence_table(rows: list[TaskRow]) -> list[str]:
    counts: Counter = Counter()
    for row in rows:
        counts.update(row.sources)
    lines = ["| source | sessions | licence | note |", "|---|---:|---|---|"]
    for (source, (licence, note)), n in sorted(counts.items(), key=lambda item: (item[0][0], item[0][1][1])):
        lines.append(f"| {source} | {n} | {licence or 'not stated'} | {note} |")
    return lines


def dataset_card(name: str, rows: list[TaskRow], repo: str | None) -> str:
    """The whole ``README.md``: the YAML header, then the body."""
    import yaml

    where = repo or "path/to/this/folder"
    first = rows[0].task if rows else "fdb_v3"
    body = [
        f"# {name}",
        "",
        "Recorded spoken sessions for replaying chunk-interleaved full-duplex speech language models with TickTock: "
        "each session is cut into 1 s chunks and streamed into the model under a deadline clock. One config per task, "
        "one `test` split each; one row per session: its audio, its turns with word timings, the tools it offers, the "
        "replies, answers and tool calls expected of the model, and where it comes from.",
        "",
        "## Composition",
        "",
        *composition_table(rows),
        "",
        "## Licences",
        "",
        "Each session keeps the licence of the source it was converted from:",
        "",
        *licence_table(rows),
        "",
        "## Columns",
        "",
        "`session_id`, `task`, `audio` (the session's 16 kHz FLAC file), `audio_file` (its path in the manifest), "
        "`duration_s`, `chunk_s`, `first_chunk_s`, `system_prompt`, `tools` (name, description, `parameters` as JSON "
        "text), `turns` (speaker, role, text, start and end in seconds, words with their times), `expected` "
        "(reference answer and aliases, `tool_calls` with `args` as JSON text, `script`: the reference replies, "
        "`behaviour` as JSON text), `provenance` (source, source id, source path). Fields of these objects that "
        "have no column of their own are kept as JSON text in `extra`, so every row gives back its TickTock manifest "
        "line exactly.",
        "",
        "## Load",
        "",
        "```python",
        "from datasets import Audio, load_dataset",
        "",
        f'sessions = load_dataset("{where}", "{first}", split="test")',
        'sessions = sessions.cast_column("audio", Audio(decode=False))  # bytes; decode with soundfile',
        "```",
        "",
        "## Replay with TickTock",
        "",
        "```bash",
        f"ticktock run task=hf task.dataset={where} task.config={first}",
        "```",
        "",
        "Without `task.config`, every config is replayed. Session ids, input fingerprints and resume behave as "
        "with the corpus's manifest.",
        "",
    ]
    head = yaml.safe_dump(header(name, rows), sort_keys=False, allow_unicode=True)
    return "---\n" + head + "---\n\n" + "\n".join(body)
