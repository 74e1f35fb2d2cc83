"""Fingerprints of a session's inputs, kept with its results, so that a resumed run replays a session whose input changed.

A completed session's row in sessions.parquet carries two SHA-256 digests (hex):

- ``manifest_sha256``: its manifest line as canonical JSON (``Session.to_json()``, keys sorted, no spaces), so any
  edit of the line (a turn, a word timing, an expectation, the chunking, the audio path) changes it, and reformatting
  or reordering the manifest does not;
- ``audio_sha256``: the audio file's bytes. A content hash rather than size and modification time: a replaced file
  can keep both (``cp -p``, a re-encode to the same length, a restore from an archive), and hashing a session's
  audio (a few MB at most) costs milliseconds next to its replay. A missing file has no digest (None).

Example::

    >>> recorded = {"manifest_sha256": "aa", "audio_sha256": "bb"}
    >>> changes(recorded, {"manifest_sha256": "aa", "audio_sha256": "cc"})
    ['audio file']
    >>> changes(recorded, dict(recorded)), changes({}, recorded)
    ([], ['no input fingerprint recorded'])
    >>> canonical_sha256({"b": 1, "a": [1.5, "é"]}) == canonical_sha256({"a": [1.5, "é"], "b": 1})
    True
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

FIELDS = {"manifest_sha256": "manifest line", "audio_sha256": "audio file"}


def canonical_sha256(data) -> str:
    """SHA-256 of ``data`` as canonical JSON (sorted keys, no spaces, UTF-8)."""
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def file_sha256(path: Path, block: int = 1 << 20) -> str | None:
    """SHA-256 of a file's bytes; None when it is not a readable file."""
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as handle:
            while chunk := handle.read(block):
                digest.update(chunk)
    except OSError:
        return None
    return digest.hexdigest()


def session_fingerprint(session) -> dict:
    """The two digests of a ``ticktock.sessions.manifest.Session`` (see the module docstring)."""
    return {"manifest_sha256": canonical_sha256(session.to_json()), "audio_sha256": file_sha256(session.audio_path)}


def changes(recorded: dict, current: dict) -> list[str]:
    """What differs between a recorded fingerprint and the current one, in words (empty: nothing)."""
    if not any(recorded.get(key) for key in FIELDS):
        return ["no input fingerprint recorded"]
    return [name for key, name in FIELDS.items() if recorded.get(key) != current.get(key)]
