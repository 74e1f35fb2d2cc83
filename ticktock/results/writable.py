"""Run folders that cannot be written: read-only, not ours to write, or full; one line, and nothing lost.

Every file of a run is written atomically (``ticktock.results.atomic``), so a write that fails (the disk is full,
the file would pass the process's size limit, the folder is read-only) leaves the files written before it as they
were: each completed session's parts stay, and the same command resumes from them once the folder can be written
again. What remains is to say so in one line, naming the file, instead of a traceback: ``results_written`` turns
the ``OSError`` of a write into a ``ResultsWriteError`` (a ``RunFolderError``, exit code 4), and
``check_writable`` refuses a folder that cannot be written before a run starts in it.

Example::

    >>> import errno
    >>> with results_written(Path("results/runs/x/parts/s1.chunks.parquet")):
    ...     raise OSError(errno.ENOSPC, "No space left on device")
    Traceback (most recent call last):
    ...
    ticktock.results.writable.ResultsWriteError: results/runs/x/parts/s1.chunks.parquet: cannot write (No space left on device); the sessions completed before are kept, and the same command resumes once there is room
"""

from __future__ import annotations

import errno
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from ticktock.errors import RunFolderError

FULL = (errno.ENOSPC, errno.EFBIG, errno.EDQUOT)  # no room: the disk, the process's file size limit, a quota


class ResultsWriteError(RunFolderError):
    """A run's results could not be written (exit code 4); the message names the file and why."""


@contextmanager
def results_written(path: Path) -> Iterator[None]:
    """Around a write of ``path`` (a file or a folder of a run): an ``OSError`` becomes a ``ResultsWriteError``."""
    try:
        yield
    except OSError as err:
        raise ResultsWriteError(f"{getattr(err, 'filename', None) or path}: cannot write ({reason(err)}); "
                                f"{resume_hint(err)}") from None


def reason(err: OSError) -> str:
    """Why a write failed, in the system's words (pyarrow's own messages carry the errno too).

    >>> reason(OSError(27, "Error writing bytes to file. Detail: [errno 27] File too large"))
    'File too large'
    """
    if err.errno:
        return os.strerror(err.errno)
    return str(err).splitlines()[0] if str(err).strip() else type(err).__name__


def resume_hint(err: OSError) -> str:
    """What the user can do: the sessions written so far are kept either way."""
    when = "once there is room" if err.errno in FULL else "once the folder can be written"
    return f"the sessions completed before are kept, and the same command resumes {when}"


def check_writable(folder: Path) -> None:
    """``folder`` (or, while it does not exist, the nearest folder above it) lets this process create and replace
    files, and the files a run reopens in it (``run.lock``, Hydra's ``*.log``) can be written; else a
    ``ResultsWriteError`` naming what and why (read-only file system, permission denied, not a folder).

    >>> import tempfile
    >>> a_file = Path(tempfile.mkdtemp()) / "notes.txt"
    >>> _ = a_file.write_text("not a folder")
    >>> check_writable(a_file / "run")
    Traceback (most recent call last):
    ...
    ticktock.results.writable.ResultsWriteError: .../notes.txt: cannot write a run folder here (not a folder)
    """
    folder = Path(folder)
    existing = folder
    while not existing.exists() and existing.parent != existing:
        existing = existing.parent
    if not existing.is_dir():
        raise ResultsWriteError(f"{existing}: cannot write a run folder here (not a folder)")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ResultsWriteError(f"{existing}: cannot write a run folder here ({_denied(existing)})")
    reopened = [*folder.glob("*.log"), folder / "run.lock"] if existing == folder else []
    for path in reopened:
        if path.exists() and not os.access(path, os.W_OK):
            raise ResultsWriteError(f"{path}: cannot write ({_denied(path)}); the run folder's files must be "
                                    "writable to resume")


def _denied(path: Path) -> str:
    try:
        read_only = bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        read_only = False
    return "read-only file system" if read_only else "permission denied"
