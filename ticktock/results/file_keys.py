"""How a run's identity names the files its config points at: never by where they lie, so that one config is one run
in a git checkout and in an installed wheel, and on every machine (the jobs of a sharded run share one split id, a
run folder moved or copied elsewhere resumes there).

Every value of an identity that is the absolute path of an existing file or folder is replaced by its key
(``file_key``):

- a file shipped with TickTock (``ticktock.shipped.shipped_name``): ``shipped:`` and its name in the package,
  ``shipped:configs/profiles/a100-8b-derived.yaml`` (its content is this TickTock's);
- another file: its name and its content, ``voice.wav sha256:0123456789abcdef`` (the first 16 hex digits of the
  SHA-256 of its bytes; a file over ``DIGESTED_BYTES`` by its size instead: hashing it on every start would cost more
  than the run's setup);
- a folder (a model's weights, an audio cache): its name; what a model's weights hold is the adapter's
  ``weights_fingerprint``;
- the run's inputs whose content every session's fingerprint already records (``BY_NAME``: the manifest and the cost
  profiles; ``ticktock.results.fingerprint``): their name alone, so that a manifest line or a cost edited between a
  kill and a resume still resumes, replaying just the sessions whose inputs changed.

Any other value (a name, a URL, a relative path as it was written) is kept as it is. An identity written when
identities held absolute paths is read through ``location_free`` too: it matches its run's new identity as long as
its files are still where it says, so such a run resumes.

Example::

    >>> from ticktock.shipped import resource_path
    >>> location_free({"clock": {"profile": str(resource_path("configs/profiles/free.yaml"))}, "seed": 0})
    {'clock': {'profile': 'shipped:configs/profiles/free.yaml'}, 'seed': 0}
    >>> import tempfile; from pathlib import Path
    >>> voice = Path(tempfile.mkdtemp()) / "voice.wav"; _ = voice.write_bytes(b"RIFF")
    >>> file_key(str(voice)), file_key(str(voice), by_content=False)
    ('voice.wav sha256:a40ff3d5900fb769', 'voice.wav')
    >>> location_free({"model": {"url": "ws://h:1/v1/realtime", "path": "weights/mine"}})["model"]["path"]
    'weights/mine'
"""

from __future__ import annotations

import os
from pathlib import Path

from ticktock.shipped import shipped_name

#: (group, key) of the identity whose files are named alone: the sessions' fingerprints key their content.
BY_NAME = frozenset({("task", "manifest"), ("clock", "profile"), ("talker", "profile")})

#: Files larger than this are keyed by their size, not hashed on every run's start.
DIGESTED_BYTES = 256 * 2**20


def file_key(path: str, by_content: bool = True) -> str:
    """The key of an existing absolute ``path`` (see the module docstring); ``by_content=False``: its name alone."""
    from ticktock.results.fingerprint import file_sha256

    shipped = shipped_name(path)
    if shipped is not None:
        return f"shipped:{shipped}"
    name = Path(path).name
    if not by_content or not os.path.isfile(path):
        return name
    size = os.path.getsize(path)
    if size > DIGESTED_BYTES:
        return f"{name} {size} bytes"
    return f"{name} sha256:{(file_sha256(Path(path)) or 'unreadable')[:16]}"


def is_located(value) -> bool:
    """Whether ``value`` is the absolute path of something that exists here (what ``location_free`` replaces)."""
    return isinstance(value, str) and len(value) > 1 and os.path.isabs(value) and os.path.exists(value)


def location_free(identity: dict) -> dict:
    """``identity`` (a run's, as run.json records it) with every absolute path replaced by its ``file_key``."""
    return {group: _keyed(value, (group,)) for group, value in identity.items()}


def _keyed(value, where: tuple):
    if isinstance(value, dict):
        return {key: _keyed(item, (*where, key)) for key, item in value.items()}
    if isinstance(value, list):
        return [_keyed(item, where) for item in value]
    if is_located(value):
        return file_key(value, by_content=where[:2] not in BY_NAME)
    return value
