"""Atomic file writes: a reader of the target sees the old file or the complete new one, never a partial one.

Write to the temporary path that :func:`atomic_write` yields (in the target's folder, so the final rename
stays on one file system); when the block ends normally that file is made world-readable (0644) and
renamed over the target, and when the block raises it is removed and the target is left as it was.

Example::

    >>> import tempfile
    >>> target = Path(tempfile.mkdtemp()) / "notes.txt"
    >>> with atomic_write(target) as tmp:
    ...     _ = tmp.write_text("complete")
    >>> target.read_text(), oct(target.stat().st_mode & 0o777)
    ('complete', '0o644')
    >>> with atomic_write(target) as tmp:
    ...     _ = tmp.write_text("partial")
    ...     raise OSError("disk full")
    Traceback (most recent call last):
    OSError: disk full
    >>> target.read_text(), sorted(p.name for p in target.parent.iterdir())
    ('complete', ['notes.txt'])
"""

from __future__ import annotations

import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

FILE_MODE = 0o644  # mkstemp creates 0600; results, manifests and corpora are meant to be shared


@contextmanager
def atomic_write(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; rename it over ``path`` on success, remove it on any failure.

    The folder of ``path`` must exist. The temporary file exists (empty) when the block starts.
    """
    path = Path(path)
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        os.chmod(tmp, FILE_MODE)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
