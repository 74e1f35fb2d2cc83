"""Replaying straight from a Hugging Face dataset: ``task=hf task.dataset=<Hub id or folder> [task.config=<task>]``.

A :class:`DatasetTask` reads the sessions of a dataset in the form ``ticktock bench export`` writes
(:mod:`ticktock.sessions.dataset_rows`: one config per task, split ``test``), with no manifest:

- ``dataset``: a Hub id, or a local folder: an export (or any folder ``datasets.load_dataset`` reads), or a folder
  written by ``save_to_disk`` (read with ``load_from_disk``: its splits are chosen with ``split``);
- ``config``: one config (a task); None: every config of the dataset, in its card's order;
- ``split``: ``test``; ``streaming``: read the rows as they come (``load_dataset(..., streaming=True)``, nothing
  prepared in the datasets cache first: for large datasets; a Hub id then needs network). A local folder is always
  read so (``DatasetTask.local_folder``): the datasets cache keys a prepared local folder by its name, so it would
  replay an earlier folder of the same name, or rows from before an edit;
- ``tasks``: keep only these task types (None: all); ``audio_cache``: where session audio is unpacked (None:
  ``<datasets cache>/ticktock-session-audio``).

Each row's manifest line is checked as a manifest line is (``manifest.parse_session``); its audio bytes are written,
unchanged, to ``<audio_cache>/<key of dataset, config and split>/<audio_file>`` (rewritten only when the bytes
differ), where the replay reads them. So a session replayed from a dataset has the id, the ``manifest_sha256`` and
the ``audio_sha256`` of its manifest twin (:mod:`ticktock.results.fingerprint`): its results are the same, and a run
resumes across the two (a session whose audio path leaves the folder, ``..`` or absolute, is unpacked to
``audio/<session id>`` instead, and its manifest digest differs). The session id is checked as a name
(:mod:`ticktock.results.names`: no ``/``, no ``..``) before any path is built from it, and every unpacked path is
confirmed to stay inside the folder once resolved. A row's times are checked against its audio here, whatever the
run's ``audio_duration`` says. The options (``check_dataset_options``) are checked before any work.

Errors are one line naming the dataset, config, split, row and field, e.g. ``mini-ds: config fdb_v3, split test,
row 2: field 'turns[0].end_s': 31 s is past the end of its audio (15.050 s)``; a missing column, a config that is
not there, or a Hub dataset that is neither cached nor reachable say so in one line too.

Example::

    >>> task = DatasetTask("mini-dataset", config="fdb_v3")          # doctest: +SKIP
    >>> [s.session_id for s in task.sessions()][:1]                  # doctest: +SKIP
    ['fdb_v3-eval-0-0000']
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import re
from dataclasses import replace
from pathlib import Path, PurePosixPath
from typing import Any, Iterator, Sequence

from ticktock.errors import ConfigError, InputDataError, shown
from ticktock.results.names import checked_name, inside, named_path
from ticktock.world.injection import ToolCallInjector, ToolExecutor
from ticktock.sessions.manifest import DURATION_TOLERANCE_S, Session, parse_session

AUDIO_CACHE = "ticktock-session-audio"


class DatasetError(InputDataError, ValueError):
    """A dataset that cannot be replayed (not there, no such config, a missing column, a bad row); names it."""


class DatasetTask:
    def __init__(self, dataset: str, config: str | None = None, split: str = "test", streaming: bool = False,
                 name: str = "hf", tasks: Sequence[str] | None = None, tool_executor: ToolExecutor | None = None,
                 audio_cache: str | None = None):
        check_dataset_options(dataset, streaming, audio_cache)
        self.dataset = str(dataset)
        self.config = config
        self.split = split
        self.streaming = streaming
        self.name = name
        self.tasks = list(tasks) if tasks is not None else None
        self.tool_executor = tool_executor
        self.audio_cache = audio_cache

    def sessions(self) -> list[Session]:
        """Every session of the chosen configs (the task filter applied), checked row by row; ids must be unique."""
        sessions: list[Session] = []
        first_row: dict[str, str] = {}
        claimed: dict[Path, tuple[str, str]] = {}  # an unpacked audio file: the digest of its bytes, the row
        for label, rows in self.parts():
            root = self.audio_root(label)
            for index, row in enumerate(rows):
                if self.tasks is not None and row.get("task") not in self.tasks:
                    continue  # filtered out before its audio is unpacked
                where = f"{label}, row {index}"
                session = row_session(row, where, root, claimed)
                if session.session_id in first_row:
                    raise DatasetError(f"{where}: field 'session_id': duplicate id {session.session_id!r} "
                                       f"(first in {first_row[session.session_id]})")
                first_row[session.session_id] = where
                sessions.append(session)
        if not sessions:
            raise DatasetError(f"task {self.name}: no sessions (task filter {self.tasks}) in {self.dataset}")
        return sessions

    def injector(self) -> ToolCallInjector:
        return ToolCallInjector(self.tool_executor)

    # ---------------------------------------------------------------------------------------------- reading

    def parts(self) -> Iterator[tuple[str, Any]]:
        """``(label, rows)`` per config read: the label names dataset, config and split for messages."""
        from ticktock.sessions.hub import hub_reads, quiet

        hub = [] if self.local_folder() else [self.dataset]  # a Hub id and no Hub: the cache at once, no retries
        with quiet(), hub_reads(hub):
            if self.saved_to_disk():
                yield f"{self.dataset}: split {self.split}", checked(self.from_disk(), f"{self.dataset}: split "
                                                                                       f"{self.split}")
                return
            for config in [self.config] if self.config is not None else self.config_names():
                label = f"{self.dataset}: config {config}, split {self.split}"
                yield label, checked(self.load(config), label)

    def local_folder(self) -> bool:
        """Whether the dataset is a folder here. Such a folder is always streamed from its files as they are now: the
        datasets cache keys a prepared local folder by the folder's name (not its path, not its content), so it
        would replay an earlier folder of the same name, or the rows from before an edit."""
        return Path(self.dataset).is_dir()

    def saved_to_disk(self) -> bool:
        folder = Path(self.dataset)
        return (folder / "dataset_dict.json").is_file() or (folder / "state.json").is_file()

    def from_disk(self):
        from datasets import DatasetDict, load_from_disk

        if self.config is not None:
            raise DatasetError(f"{self.dataset}: a folder written by save_to_disk has no configs (task.config="
                               f"{self.config}); choose its part with task.split")
        data = load_from_disk(self.dataset)
        if isinstance(data, DatasetDict):
            if self.split not in data:
                raise DatasetError(f"{self.dataset}: no split {self.split!r} (splits: {', '.join(data)})")
            data = data[self.split]
        return data

    def config_names(self) -> list[str]:
        import datasets

        try:
            return datasets.get_dataset_config_names(self.dataset)
        except Exception as err:  # datasets raises many kinds here (not found, offline, unreadable card)
            raise self.unavailable(err) from None

    def load(self, config: str):
        import datasets

        try:
            return datasets.load_dataset(self.dataset, config, split=self.split,
                                         streaming=self.streaming or self.local_folder())
        except ValueError as err:  # no such config, or no such split
            configs = self.config_names()
            if config not in configs:
                raise DatasetError(f"{self.dataset}: no config {config!r} (configs: {', '.join(configs)})") from None
            raise DatasetError(f"{self.dataset}: config {config}: no split {self.split!r} "
                               f"({str(err).splitlines()[0]})") from None
        except Exception as err:  # not found, offline and not cached, unreadable files
            raise self.unavailable(err) from None

    def unavailable(self, err: BaseException) -> DatasetError:
        """The one-line error for a dataset ``datasets`` could not open: a folder that is not there, a Hub dataset
        not cached while offline (with the command that fetches it), or what ``datasets`` said."""
        from ticktock.sessions.hub import is_hub_id, offline, offline_reason

        text = str(err).splitlines()[0] if str(err) else type(err).__name__
        if not is_hub_id(self.dataset) and not Path(self.dataset).exists():
            return DatasetError(f"{self.dataset}: no such folder (task.dataset is a folder or a Hub id owner/name)")
        if is_hub_id(self.dataset) and offline():
            return DatasetError(f"{self.dataset}: not a folder, and not in the local Hugging Face cache while "
                                f"{offline_reason()} ({text}); fetch it once online with: hf download {self.dataset} "
                                f"--repo-type dataset --local-dir DIR, then task.dataset=DIR")
        return DatasetError(f"{self.dataset}: cannot read the dataset ({type(err).__name__}: {text})")

    def audio_root(self, label: str) -> Path:
        """The folder this config's audio is unpacked into (one per dataset, config and split)."""
        import datasets

        base = Path(self.audio_cache) if self.audio_cache else Path(datasets.config.HF_DATASETS_CACHE) / AUDIO_CACHE
        where = str(Path(self.dataset).resolve()) if Path(self.dataset).exists() else self.dataset
        key = hashlib.sha256(f"{where}\n{label}".encode("utf-8")).hexdigest()[:24]
        return base / key


class DatasetOptionError(ConfigError):
    """An option of ``task=hf`` that cannot work (exit code 2), found before any work; names the key."""


def check_dataset_options(dataset, streaming=False, audio_cache=None) -> None:
    """The options of ``task=hf`` that can be checked before any work, each problem a one-line
    ``DatasetOptionError`` naming the key: ``dataset`` given, ``streaming`` true or false, ``audio_cache`` null or a
    folder (or a path where one can be made: no file on the way).

    >>> check_dataset_options("mini-ds", streaming="maybe")
    Traceback (most recent call last):
    ...
    ticktock.sessions.dataset_task.DatasetOptionError: task.streaming: must be true or false, got 'maybe'
    """
    if dataset is None or not str(dataset).strip():
        raise DatasetOptionError("task.dataset: the Hub id or folder of a dataset is needed (task=hf "
                                 "task.dataset=...)")
    if not isinstance(streaming, bool):
        raise DatasetOptionError(f"task.streaming: must be true or false, got {shown(streaming)}")
    if audio_cache is not None:
        check_audio_cache(Path(str(audio_cache)))


def check_audio_cache(folder: Path) -> None:
    """``folder`` is a folder, or can be made: the nearest part of it that exists is a folder."""
    for part in (folder, *folder.parents):
        if part.exists() or part.is_symlink():
            if not part.is_dir():
                what = "is a file" if part == folder else f"is under {part}, which is a file"
                raise DatasetOptionError(f"task.audio_cache: {folder} {what}, not a folder (it is where session "
                                         "audio is unpacked: name a folder, or null for the datasets cache)")
            return


def checked(rows, label: str):
    """The rows with every column of the dataset form (``dataset_rows.COLUMNS``) and the audio left undecoded."""
    from datasets import Audio, IterableDataset

    from ticktock.sessions.dataset_rows import COLUMNS

    names = list(rows.column_names or []) if rows.column_names is not None else list((rows.features or {}).keys())
    missing = [c for c in COLUMNS if c not in names]
    if missing and names:
        raise DatasetError(f"{label}: missing column(s) {', '.join(missing)} (columns: {', '.join(names)}); not a "
                           "dataset written by ticktock bench export")
    if isinstance(rows, IterableDataset):
        return rows.decode(False)
    if isinstance(rows.features.get("audio"), Audio):
        return rows.cast_column("audio", Audio(decode=False))
    return rows


def row_session(row: dict, where: str, root: Path, claimed: dict | None = None) -> Session:
    """The session of one row, its audio unpacked under ``root``; errors name ``where`` and the field.
    ``claimed`` (the rows read so far: unpacked path -> (digest of its bytes, row)) refuses a row whose audio file
    is another row's with other bytes: unpacked, one would replace the other's audio."""
    from ticktock.sessions.dataset_rows import RowError, manifest_line

    missing = [c for c in ("session_id", "audio", "duration_s", "turns") if c not in row]
    if missing:
        raise DatasetError(f"{where}: field {missing[0]!r}: missing")
    try:
        line = manifest_line(row)
    except RowError as err:
        raise DatasetError(f"{where}: {err}") from None
    audio = line.get("audio")
    checked_name(line.get("session_id"), "session_id", where, DatasetError)
    session = parse_session(line, where, root)
    data = audio_bytes(row.get("audio"), where)
    check_times(session, audio_seconds(data, where), where)
    path = unpacked_path(root, audio, session.session_id, where)
    if claimed is not None:
        claim(claimed, path, data, where)
    unpack(path, data, where)
    return replace(session, audio_path=path, manifest_path=root / "manifest.jsonl")


def unpacked_path(root: Path, audio: str, session_id: str, where: str) -> Path:
    """Where a row's audio is unpacked: ``root/<audio_file>`` when that path stays inside ``root`` (relative, no
    ``..``, not ``root`` itself, and inside once resolved), else ``root/audio/<session id><suffix>`` built from the
    checked id (``ticktock.results.names``); a path that would leave ``root`` anyway is a ``DatasetError``."""
    if safe_relative(audio) and PurePosixPath(audio).name not in ("", "."):
        return inside(root, root / audio, "audio_file", where, DatasetError)
    return named_path(root / "audio", session_id, suffix(audio), "session_id", where, DatasetError)


def claim(claimed: dict, path: Path, data: bytes, where: str) -> None:
    """Record that the row at ``where`` unpacks ``data`` to ``path``; another row's different bytes there are a
    ``DatasetError`` naming both rows (the same bytes are fine: two sessions may share one recording)."""
    digest = hashlib.sha256(data).hexdigest()
    first = claimed.setdefault(path, (digest, where))
    if first[0] != digest:
        raise DatasetError(f"{where}: field 'audio_file': {path.name} is also the audio file of {first[1]}, with other "
                           "bytes; give each recording its own audio_file")


def audio_bytes(cell: Any, where: str) -> bytes:
    if not isinstance(cell, dict) or not cell.get("bytes"):
        raise DatasetError(f"{where}: field 'audio': no audio bytes (expected the Audio feature's {{bytes, path}})")
    return bytes(cell["bytes"])


def audio_seconds(data: bytes, where: str) -> float:
    """The length of encoded audio, from its header; audio soundfile cannot read is a ``DatasetError``."""
    import soundfile

    try:
        info = soundfile.info(io.BytesIO(data))
    except Exception as err:  # soundfile raises LibsndfileError, RuntimeError or TypeError on bad input
        raise DatasetError(f"{where}: field 'audio': cannot read audio ({err})") from None
    if info.frames <= 0 or info.samplerate <= 0:
        raise DatasetError(f"{where}: field 'audio': audio is empty")
    return info.frames / info.samplerate


def check_times(session: Session, seconds: float, where: str) -> None:
    """Every turn and word inside the audio, and ``duration_s`` its length (within ``DURATION_TOLERANCE_S``)."""
    tolerance = DURATION_TOLERANCE_S
    for i, turn in enumerate(session.turns):
        if turn.end_s > seconds + tolerance:
            raise DatasetError(f"{where}: field 'turns[{i}].end_s': {turn.end_s:g} s is past the end of its audio "
                               f"({seconds:.3f} s)")
    if abs(session.duration_s - seconds) > tolerance:
        raise DatasetError(f"{where}: field 'duration_s': {session.duration_s:g} s but its audio lasts {seconds:.3f} s "
                           f"(tolerance {tolerance:g} s)")


def safe_relative(audio: str) -> bool:
    """Whether a manifest audio path stays inside its folder (relative, no ``..``)."""
    path = PurePosixPath(audio)
    return bool(audio) and not path.is_absolute() and ".." not in path.parts and "\\" not in audio


def suffix(audio: str) -> str:
    """The audio file's suffix (``.flac`` when it has none, or one that is not a plain ``.`` + letters/digits)."""
    found = PurePosixPath(audio).suffix
    return found if re.fullmatch(r"\.[A-Za-z0-9]{1,16}", found) else ".flac"


def unpack(path: Path, data: bytes, where: str = "audio") -> None:
    """Write ``data`` to ``path`` unless it holds exactly that already (atomically: shards may share the folder); a
    path that cannot be written is a ``DatasetError`` naming ``where``."""
    try:
        if path.is_file() and path.stat().st_size == len(data) and path.read_bytes() == data:
            return
    except OSError:
        pass
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary.write_bytes(data)
        os.replace(temporary, path)
    except OSError as err:
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise DatasetError(f"{where}: field 'audio': cannot unpack its audio to {path} ({err.strerror or err})") \
            from None

