"""Fingerprints of a session's inputs, kept with its results, so that a resumed run replays a session whose input changed.

A completed session's row in sessions.parquet carries three SHA-256 digests (hex):

- ``manifest_sha256``: its manifest line as canonical JSON (``Session.to_json()``, keys sorted, no spaces), so any
  edit of the line (a turn, a word timing, an expectation, the chunking, the audio path) changes it, and reformatting
  or reordering the manifest does not;
- ``audio_sha256``: the audio file's bytes. A content hash rather than size and modification time: a replaced file
  can keep both (``cp -p``, a re-encode to the same length, a restore from an archive), and hashing a session's
  audio (a few MB at most) costs milliseconds next to its replay. A missing file has no digest (None);
- ``profile_sha256``: the modeled clock's cost profile (``profile_sha256``: its costs as canonical JSON, so an edit
  of any cost changes it and a new name, provenance text or YAML layout does not); None under a clock without one
  (wall). A profile edited between a kill and a resume would otherwise give one run two sets of costs. The cost fields
  added later (``PROFILE_COSTS_IF_SET``) join the digest only where a profile has them.

run.json's ``clock.profile_sha256`` records the same digest for the run, and the tables key setups by it, not by
the profile's name (two profiles of one name are two setups).

Example::

    >>> recorded = {"manifest_sha256": "aa", "audio_sha256": "bb", "profile_sha256": "cc"}
    >>> changes(recorded, {**recorded, "audio_sha256": "dd"}), changes(recorded, {**recorded, "profile_sha256": None})
    (['audio file'], ['cost profile'])
    >>> changes(recorded, dict(recorded)), changes({}, recorded)
    ([], ['no input fingerprint recorded'])
    >>> canonical_sha256({"b": 1, "a": [1.5, "é"]}) == canonical_sha256({"a": [1.5, "é"], "b": 1})
    True
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

FIELDS = {"manifest_sha256": "manifest line", "audio_sha256": "audio file", "profile_sha256": "cost profile"}
PROFILE_COSTS = ("query_tokens", "context_tokens", "forward_table", "encode_ms", "encode_fixed_ms", "batch_sizes",
                 "batch_factor")  # the fields of a ``CostProfile`` that decide what a forward is charged
PROFILE_COSTS_IF_SET = ("encode_first_ms", "encode_batch_sizes", "encode_batch_factor")  # the same, digested only where
# a profile has them: a profile written before they existed keeps its digest (and its runs resume)


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


def profile_sha256(clock) -> str | None:
    """The digest of a clock's cost profile (its ``profile``: a ``ticktock.clocks.modeled.CostProfile``): its costs
    (``PROFILE_COSTS``) as canonical JSON; None for a clock without a profile.

    >>> from ticktock.clocks.modeled import CostProfile, ModeledClock
    >>> one, renamed = CostProfile.constant(10.0), CostProfile.constant(10.0)
    >>> renamed.name = "another name"
    >>> profile_sha256(ModeledClock(one)) == profile_sha256(ModeledClock(renamed)) != profile_sha256(
    ...     ModeledClock(CostProfile.constant(2.5)))
    True
    >>> profile_sha256(object()) is None
    True
    """
    profile = getattr(clock, "profile", None)
    if profile is None:
        return None
    costs = {name: getattr(profile, name, None) for name in PROFILE_COSTS}
    costs.update({name: getattr(profile, name) for name in PROFILE_COSTS_IF_SET if getattr(profile, name, None) is not None})
    return canonical_sha256(costs)


def session_fingerprint(session, profile_digest: str | None = None) -> dict:
    """The three digests of a ``ticktock.sessions.manifest.Session`` replayed under a cost profile of digest
    ``profile_digest`` (``profile_sha256``; None: no profile; see the module docstring)."""
    return {"manifest_sha256": canonical_sha256(session.to_json()), "audio_sha256": file_sha256(session.audio_path),
            "profile_sha256": profile_digest}


def changes(recorded: dict, current: dict) -> list[str]:
    """What differs between a recorded fingerprint and the current one, in words (empty: nothing)."""
    if not any(recorded.get(key) for key in ("manifest_sha256", "audio_sha256")):
        return ["no input fingerprint recorded"]
    return [name for key, name in FIELDS.items() if recorded.get(key) != current.get(key)]
