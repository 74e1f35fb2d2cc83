"""Big Bench Audio (ArtificialAnalysis/big_bench_audio): 1,000 spoken Big-Bench-Hard questions.

Published layout (Hugging Face audiofolder; ``--src`` is the Hub id ``ArtificialAnalysis/big_bench_audio``, fetched
into the Hub cache, or a local copy of the repository folder)::

    metadata.jsonl        one JSON object per question
    data/question_<i>.mp3

The fields, as the loaders of the real file read them (override with ``--column ROLE=NAME``): ``id``,
``category`` (formal_fallacies, navigate, object_counting, web_of_lies), ``official_answer`` (e.g.
"valid", "Yes", "7") and ``file_name`` (relative to the folder, or to ``data/``). The real file has no
question text, so the turn text is empty; a copy that adds one (``transcript``, ``question`` or ``text``)
has it used. Task ``big_bench_audio``, id ``big_bench_audio-<id>``; the official answer is the reference
answer (a small number also counts spelled out: "7" / "seven").
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ticktock.corpus.convert import CONVERTER_VERSION, ConvertError, Options, parse_json, safe_id, source_path
from ticktock.corpus.convert.answers import number_aliases
from ticktock.corpus.convert.hub import HUB_IDS
from ticktock.corpus.convert.utterance import utterance_session
from ticktock.corpus.convert.writer import CorpusWriter
from ticktock.sessions.manifest import Session

SOURCE = "big_bench_audio"
HUB_ID = HUB_IDS[SOURCE]
HUB_FILES = ("metadata.jsonl", "data/*")  # what a conversion reads of the Hub repository
TASK = "big_bench_audio"
COLUMNS = {  # role -> candidate field names, first present wins
    "id": ("id", "question_id"),
    "category": ("category",),
    "answer": ("official_answer", "answer", "target"),
    "file": ("file_name", "audio", "path"),
    "text": ("transcript", "question", "text"),
}
REQUIRED = ("id", "answer", "file")


@dataclass(frozen=True)
class Item:
    line: int
    source_id: str
    category: str
    answer: str
    audio_path: Path
    text: str


def hub_patterns(subsets) -> list[str]:
    """The files of the Hub repository a conversion reads (Big Bench Audio has no subsets)."""
    return list(HUB_FILES)


def read_items(options: Options) -> list[Item]:
    metadata = options.src / "metadata.jsonl"
    if not metadata.is_file():
        raise ConvertError(f"{metadata}: Big Bench Audio metadata not found "
                           f"(expected metadata.jsonl + data/ under --src)")
    items: list[Item] = []
    seen: set[str] = set()
    with metadata.open(encoding="utf-8") as handle:
        for number, text in enumerate(handle, start=1):
            if options.limit is not None and len(items) >= options.limit:
                break
            if not text.strip():
                continue
            where = f"{metadata}:{number}"
            row = parse_json(text, where)
            if not isinstance(row, dict):
                raise ConvertError(f"{where}: expected a JSON object")
            fields = {role: field(row, role, options.columns, where) for role in COLUMNS}
            source_id = str(fields["id"])
            if source_id in seen:
                raise ConvertError(f"{where}: duplicate id {source_id!r}")
            seen.add(source_id)
            name = str(fields["file"]).replace("\\/", "/").replace("\\", "/")
            path = options.src / name
            if not path.is_file() and (options.src / "data" / name).is_file():
                path = options.src / "data" / name
            items.append(Item(number, source_id, str(fields["category"] or ""), str(fields["answer"]).strip(),
                              path, str(fields["text"] or "").strip()))
    return items


def field(row: dict, role: str, overrides: dict, where: str):
    names = (overrides[role],) if role in overrides else COLUMNS[role]
    for name in names:
        if row.get(name) not in (None, ""):
            return row[name]
    if role in REQUIRED:
        raise ConvertError(f"{where}: no {role} field (looked for {', '.join(names)}; the line has "
                           f"{', '.join(row) or 'no fields'}); name it with --column {role}=NAME")
    return None


def session_key(item: Item) -> tuple[str, str]:
    """(task type, session id) of the session an item becomes: ``big_bench_audio-0007`` for id 7."""
    if item.source_id.isdigit():
        return TASK, f"{TASK}-{int(item.source_id):04d}"
    return TASK, f"{TASK}-{safe_id(item.source_id)}"


def build_session(item: Item, writer: CorpusWriter, options: Options) -> Session:
    label = str(item.audio_path)
    clip = writer.read_audio(item.audio_path, label)
    return utterance_session(
        writer, clip, label,
        session_id=session_key(item)[1],
        task=TASK,
        text=item.text,
        lead_s=options.lead_s,
        tail_unknown_s=options.tail_unknown_s,
        reference_answer=item.answer,
        answer_aliases=number_aliases(item.answer),
        behaviour={"type": "reasoning", "categories": [item.category] if item.category else []},
        script=[{"turn": 0, "action": "speak", "text": item.answer}],
        provenance={
            "source": SOURCE,
            "source_id": item.source_id,
            "source_path": source_path(item.audio_path, options.src),
            "metadata_path": f"metadata.jsonl:{item.line}",
            "category": item.category,
            "converter_version": CONVERTER_VERSION,
        },
    )
