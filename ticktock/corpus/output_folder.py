"""Where a corpus command writes: never over its input or another corpus; always able to finish its own output.

The commands that write a corpus (``synth``, ``augment``, ``convert``) record what they are in the output folder,
``OUT/made_by.json``: the command and every option that decides the output (for augment, the SHA-256 of the input
manifest too). ``synth`` and ``augment`` write it before their first audio file, ``convert`` when it commits. Before
any work, :func:`claim_output` decides whether ``OUT`` may be written:

- ``OUT`` is one of the command's inputs (the same folder once symlinks are resolved): refused, even with
  ``--overwrite`` (the output would replace the manifest being read);
- ``OUT`` holds the record of the same command with the same options: it is this command's own output, finished
  or interrupted; the run goes on (augment keeps the audio files already written: the resume);
- ``OUT`` holds a manifest, or the record of another command or other options, or audio files and no record:
  refused unless ``overwrite`` (``--overwrite``), naming the folder and the flag;
- anything else (a new or empty folder): written.

Example::

    >>> import tempfile
    >>> out = Path(tempfile.mkdtemp()) / "aug"
    >>> made_by = MadeBy("augment", {"--seed": 3})
    >>> claim_output(out, made_by, {"--in": Path("corpus")}, overwrite=False)   # a new folder
    False
    >>> write_record(out, made_by)
    >>> claim_output(out, made_by, {"--in": Path("corpus")}, overwrite=False)   # its own (partial) output
    True
    >>> _ = (out / "manifest.jsonl").write_text('{"session_id": "a"}\\n')
    >>> claim_output(out, MadeBy("augment", {"--seed": 4}), {}, overwrite=False)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ticktock.corpus.output_folder.OutputFolderError: .../aug: already holds a corpus (1 session in manifest.jsonl, made by augment --seed 3; here --seed 4); choose another --out, or pass --overwrite to replace it
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from ticktock.errors import RunFolderError
from ticktock.results.atomic import atomic_write

RECORD = "made_by.json"
MANIFEST = "manifest.jsonl"
FORMAT = 1


class OutputFolderError(RunFolderError):
    """An output folder a corpus command must not write: its input, or a corpus it did not make (exit code 4)."""


@dataclass(frozen=True)
class MadeBy:
    """The command (``augment``) and the options that decide its output (``{"--seed": 3, ...}``, JSON values)."""

    command: str
    options: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"format": FORMAT, "command": self.command, "options": json.loads(json.dumps(self.options))}

    def describe(self) -> str:
        """``augment --seed 3 --profile train``."""
        return " ".join([self.command, *(f"{key} {value}" for key, value in self.options.items())])


def same_folder(a: Path, b: Path) -> bool:
    """Whether two paths name one folder (symlinks and ``..`` resolved; the same inode when both exist)."""
    try:
        if a.exists() and b.exists():
            return os.path.samefile(a, b)
    except OSError:
        pass
    return a.resolve() == b.resolve()


def read_record(out: Path) -> MadeBy | None:
    """The record in ``out`` (None: there is none, or it is not one this module wrote)."""
    try:
        data = json.loads((out / RECORD).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return None
    if not (isinstance(data, dict) and isinstance(data.get("command"), str) and isinstance(data.get("options"), dict)):
        return None
    return MadeBy(data["command"], data["options"])


def write_record(out: Path, made_by: MadeBy) -> None:
    """Write ``out/made_by.json`` (atomically), creating ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    with atomic_write(out / RECORD) as tmp:
        tmp.write_text(json.dumps(made_by.to_json(), indent=2) + "\n", encoding="utf-8")


def sessions_in(manifest: Path) -> str:
    """``"104 sessions"``: the non-empty lines of a manifest."""
    try:
        with manifest.open("rb") as handle:
            count = sum(1 for line in handle if line.strip())
    except OSError:
        return "a manifest"
    return f"{count} session{'s' if count != 1 else ''}"


def differences(old: MadeBy, new: MadeBy) -> str:
    """How a record differs from this run: ``made by augment --seed 3; here --seed 4``."""
    if old.command != new.command:
        return f"made by {old.describe()}"
    theirs, ours = old.to_json()["options"], new.to_json()["options"]
    changed = [key for key in dict.fromkeys([*theirs, *ours]) if theirs.get(key) != ours.get(key)]
    return (f"made by {old.command} " + " ".join(f"{key} {theirs.get(key)}" for key in changed) + "; here "
            + " ".join(f"{key} {ours.get(key)}" for key in changed))


def claim_output(out: Path, made_by: MadeBy, inputs: dict[str, Path], overwrite: bool) -> bool:
    """Check that ``out`` may be written by ``made_by`` (see the module docstring); True when it holds this very
    command's own output (finished or interrupted), whose files may be kept. ``inputs``: option -> the folder or
    file it reads. Raises OutputFolderError naming the folder and ``--overwrite``."""
    out = Path(out)
    for option, source in inputs.items():
        if same_folder(out, Path(source)):
            raise OutputFolderError(f"{out}: the output folder is the input ({option} {source}); writing there would "
                                    f"replace what it reads, even with --overwrite; choose another --out")
    if out.exists() and not out.is_dir():
        raise OutputFolderError(f"{out}: not a folder; choose another --out")
    record = read_record(out)
    own = record is not None and (record.command, record.options) == (made_by.command, made_by.to_json()["options"])
    if own or overwrite:
        return own
    if (out / MANIFEST).exists():
        origin = differences(record, made_by) if record is not None else "not made by this command"
        raise OutputFolderError(f"{out}: already holds a corpus ({sessions_in(out / MANIFEST)} in {MANIFEST}, "
                                f"{origin}); choose another --out, or pass --overwrite to replace it")
    if record is not None:
        raise OutputFolderError(f"{out}: holds the unfinished output of another command "
                                f"({differences(record, made_by)}); rerun that command to finish it, choose another "
                                "--out, or pass --overwrite to start over")
    if (out / "audio").is_dir() and any((out / "audio").iterdir()):
        raise OutputFolderError(f"{out}: holds audio files but no {RECORD} (not this command's output); choose "
                                "another --out, or pass --overwrite to write there anyway")
    return False
