"""OpenAudioBench (baichuan-inc/OpenAudioBench): Llama Questions, Web Questions and TriviaQA.

Published layout (``--src`` is the Hub id ``baichuan-inc/OpenAudioBench``, fetched into the Hub cache (only the
converted subsets' folders: ``hub_patterns``), or a local copy of the repository or of its ``eval_datas/`` folder)::

    eval_datas/<subset>/<subset>.csv
    eval_datas/<subset>/audios/<subset>_<i>.mp3

Each CSV row is one spoken question. The columns are found by name (first match, case-insensitive,
override with ``--column ROLE=NAME``); the names below follow third-party loaders of the real files and
are not verified here:

* question: ``Questions`` (llama_questions), ``question`` (web_questions, trivia_qa)
* answer: ``Answer`` (llama), ``answers`` (web: a list of alternatives), ``answer_normalized_value``
  (trivia), or another of ``COLUMNS["answer"]``; lists and ";"-separated alternatives become aliases
* aliases (optional): ``answer_normalized_aliases`` (trivia): a list, or one comma-separated string
  (split into one alias per part)
* audio: ``audio_filename``, relative to ``audios/``; without it, row i uses ``audios/<subset>_<i>.mp3``

Without ``--subsets``, every one of the three subsets whose CSV is there is converted. Each question
becomes a session of task ``<subset>`` (``ticktock.corpus.convert.utterance``), id ``<subset>-<row>``, with
the reference answer as ``expected.reference_answer`` and a ``speak`` script entry.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from ticktock.corpus.convert import CONVERTER_VERSION, ConvertError, Options, source_path
from ticktock.corpus.convert.answers import parse_aliases, parse_answers
from ticktock.corpus.convert.hub import HUB_IDS
from ticktock.corpus.convert.utterance import utterance_session
from ticktock.corpus.convert.writer import CorpusWriter
from ticktock.sessions.manifest import Session

SOURCE = "openaudiobench"
HUB_ID = HUB_IDS[SOURCE]
SUBSETS = ("llama_questions", "web_questions", "trivia_qa")
COLUMNS = {  # role -> candidate column names, first match wins
    "question": ("Questions", "question", "Question", "instruction", "prompt", "text"),
    "answer": ("Answer", "answers", "answer_normalized_value", "answer", "answer_value", "reference", "output"),
    "aliases": ("answer_normalized_aliases", "answer_aliases", "aliases"),
    "audio": ("audio_filename", "audio", "file_name", "filename", "audio_path"),
}
REQUIRED = ("question", "answer")


@dataclass(frozen=True)
class Item:
    subset: str
    row: int
    csv_path: Path
    audio_path: Path
    question: str
    answers: tuple[str, ...]


def hub_patterns(subsets) -> list[str]:
    """The files of the Hub repository a conversion of ``subsets`` (None: all three) reads: their CSVs and audio.

    >>> hub_patterns(["trivia_qa"])
    ['eval_datas/trivia_qa/*']
    """
    return [f"eval_datas/{subset}/*" for subset in (subsets or SUBSETS)]


def eval_datas(src: Path) -> Path:
    """The ``eval_datas`` folder of the local copy."""
    for candidate in (src / "eval_datas", src):
        if any((candidate / s / f"{s}.csv").is_file() for s in SUBSETS):
            return candidate
    return src / "eval_datas"


def find_columns(header: list[str], overrides: dict, where: Path) -> dict[str, str | None]:
    """Map roles to the CSV's column names; a missing required column raises ConvertError."""
    by_lower = {h.strip().lower(): h for h in header}
    columns: dict[str, str | None] = {}
    for role, candidates in COLUMNS.items():
        if role in overrides:
            if overrides[role] not in header:
                raise ConvertError(f"{where}: --column {role}={overrides[role]}: no such column "
                                   f"(columns: {', '.join(header)})")
            columns[role] = overrides[role]
            continue
        columns[role] = next((by_lower[c.lower()] for c in candidates if c.lower() in by_lower), None)
        if columns[role] is None and role in REQUIRED:
            raise ConvertError(f"{where}: no {role} column (looked for {', '.join(candidates)}; the file has "
                               f"{', '.join(header) or 'no header'}); name it with --column {role}=NAME")
    if columns["aliases"] == columns["answer"]:
        columns["aliases"] = None
    return columns


def read_items(options: Options) -> list[Item]:
    root = eval_datas(options.src)
    subsets = options.subsets or [s for s in SUBSETS if (root / s / f"{s}.csv").is_file()]
    if not subsets:
        raise ConvertError(f"{root}: no OpenAudioBench CSV (expected eval_datas/<subset>/<subset>.csv for "
                           f"{', '.join(SUBSETS)} under --src)")
    unknown = [s for s in subsets if s not in SUBSETS]
    if unknown:
        raise ConvertError(f"--subsets: unknown OpenAudioBench subset(s) {unknown}; choose from {', '.join(SUBSETS)}")
    items: list[Item] = []
    for subset in subsets:
        items += read_subset(root / subset / f"{subset}.csv", subset, options)
    return items


def read_subset(csv_path: Path, subset: str, options: Options) -> list[Item]:
    if not csv_path.is_file():
        raise ConvertError(f"{csv_path}: OpenAudioBench CSV not found "
                           f"(expected eval_datas/{subset}/{subset}.csv under --src)")
    try:
        with csv_path.open(encoding="utf-8-sig", newline="") as handle:
            reader = csv.DictReader(handle)
            columns = find_columns(list(reader.fieldnames or []), options.columns, csv_path)
            rows = list(reader)
    except (UnicodeDecodeError, csv.Error) as err:
        raise ConvertError(f"{csv_path}: cannot read the CSV ({err})") from None
    items = []
    for row_number, row in enumerate(rows):
        if options.limit is not None and len(items) >= options.limit:
            break
        where = f"{csv_path}:{row_number + 2}"  # line 1 is the header
        question = (row.get(columns["question"]) or "").strip()
        if not question:
            raise ConvertError(f"{where}: empty {columns['question']!r}")
        answers = parse_answers(row.get(columns["answer"]))
        if columns["aliases"]:
            known = {a.lower() for a in answers}
            answers += [a for a in parse_aliases(row.get(columns["aliases"])) if a.lower() not in known]
        name = (row.get(columns["audio"]) or "").strip() if columns["audio"] else f"{subset}_{row_number}.mp3"
        if not name:
            raise ConvertError(f"{where}: empty {columns['audio']!r}")
        items.append(Item(subset, row_number, csv_path, audio_file(csv_path.parent, name), question, tuple(answers)))
    return items


def audio_file(folder: Path, name: str) -> Path:
    """``audios/<name>``, or ``<name>`` relative to the subset folder when that is where it is."""
    name = name.replace("\\", "/")
    in_audios = folder / "audios" / name
    return in_audios if in_audios.is_file() or not (folder / name).is_file() else folder / name


def session_key(item: Item) -> tuple[str, str]:
    """(task type, session id) of the session an item becomes."""
    return item.subset, f"{item.subset}-{item.row:04d}"


def build_session(item: Item, writer: CorpusWriter, options: Options) -> Session:
    label = str(item.audio_path)
    clip = writer.read_audio(item.audio_path, label)
    reference = item.answers[0] if item.answers else None
    if reference is None:
        writer.warn("no_answer", f"{item.csv_path}:{item.row + 2}: no reference answer")
    return utterance_session(
        writer, clip, label,
        session_id=session_key(item)[1],
        task=item.subset,
        text=item.question,
        lead_s=options.lead_s,
        tail_unknown_s=options.tail_unknown_s,
        reference_answer=reference,
        answer_aliases=list(item.answers[1:]),
        behaviour={"type": "question_answering"},
        script=[{"turn": 0, "action": "speak", "text": reference}] if reference else [],
        provenance={
            "source": SOURCE,
            "source_id": f"{item.subset}/{item.row}",
            "source_path": source_path(item.audio_path, options.src),
            "metadata_path": source_path(item.csv_path, options.src),
            "converter_version": CONVERTER_VERSION,
        },
    )

