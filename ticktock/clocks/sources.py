"""Where each number of a cost profile comes from: the profile's ``sources`` block.

A modeled run is only as good as its cost profile, and a profile mixes numbers of very different standing: a forward
measured on the device, an encoder figure published by someone else, a batch factor derived from a bandwidth model, a
split of an encoding that is simply assumed. Each cost field of a profile may name its source, as a one-entry mapping
``{kind: text}``::

    sources:
      forward_ms: {derived: "bandwidth/compute model of an 8B bf16 forward on an A100 (scripts/derive_a100_profile.py)"}
      encode_ms: {published: "vllm-omni PR 6117: MiniCPM-o 4.5's audio encoder, 10.0 ms per later 1 s unit"}
      batch_factor: {measured: "python -m ticktock.calibrate model=gander (median of 9 after 3 warm-up)"}
      encode_fixed_ms: {assumed: "an eager encoder is launch-bound: a piece costs as much as a whole chunk"}
      talkers.espeak: {measured: "python -m ticktock.calibrate talker=espeak"}

The kinds (``KINDS``): ``measured`` (the text is the command that measured it, here), ``published`` (the reference),
``derived`` (the derivation) and ``assumed`` (why the value was chosen: a number with no measurement or derivation
behind it). The fields (``SOURCED_FIELDS``) are the profile's cost fields and ``talkers.<name>``; a source may only
name a field the profile has. The tables print a one-line summary of them (``summary``), and run.json records them
(``clock.profile_sources``). A profile without the block (every profile written before it existed) is still valid;
the shipped profiles name a source for every number they have (``unsourced`` is empty; a test checks it).

Example::

    >>> block = {"forward_ms": {"derived": "bandwidth model"}, "encode_ms": {"published": "vllm-omni PR 6117"}}
    >>> sources_problem(block, {"forward_ms", "encode_ms", "batch_factor"}) is None
    True
    >>> unsourced(block, {"forward_ms", "encode_ms", "batch_factor"})
    ['batch_factor']
    >>> summary(block)
    'published encode_ms (vllm-omni PR 6117); derived forward_ms'
"""

from __future__ import annotations

import difflib

from ticktock.errors import shown

KINDS = ("measured", "published", "derived", "assumed")
COST_FIELDS = ("forward_ms", "encode_ms", "encode_fixed_ms", "encode_first_ms", "batch_factor", "encode_batch_factor")
TALKER_PREFIX = "talkers."
SOURCED_FIELDS = (*COST_FIELDS, f"{TALKER_PREFIX}<name>")  # as written in messages
MAX_TEXT = 2000  # characters of one source's text: a reference or a derivation, not a document


def sources_problem(block, present: set[str]) -> tuple[tuple, str] | None:
    """The first problem of a ``sources`` block, as (field path, what is wrong), or None. ``present``: the fields the
    profile has (its cost fields with a value, and ``talkers.<name>`` for each talker).

    >>> sources_problem({"encode_ms": {"publshed": "PR 6117"}}, {"encode_ms"})
    (('sources', 'encode_ms'), "unknown kind 'publshed' (did you mean 'published'?)")
    >>> sources_problem({"encode_first_ms": {"derived": "x"}}, {"encode_ms"})
    (('sources', 'encode_first_ms'), 'the profile has no encode_first_ms to name a source for')
    >>> sources_problem({"encode_ms": {"measured": ""}}, {"encode_ms"})
    (('sources', 'encode_ms', 'measured'), 'must be non-empty text (the command that measured it), got an empty text')
    """
    if block is None:
        return None
    if not isinstance(block, dict):
        return ("sources",), f"must be a mapping of field name to {{kind: text}}, got {shown(block)}"
    for field, entry in block.items():
        problem = _field_problem(str(field), present) or _entry_problem(entry)
        if problem:
            keys, message = problem
            return ("sources", str(field), *keys), message
    return None


def _field_problem(field: str, present: set[str]) -> tuple[tuple, str] | None:
    known = field in COST_FIELDS or (field.startswith(TALKER_PREFIX) and len(field) > len(TALKER_PREFIX))
    if not known:
        close = difflib.get_close_matches(field, COST_FIELDS, n=1)
        hint = f"did you mean {close[0]!r}?" if close else f"known: {', '.join(SOURCED_FIELDS)}"
        return (), f"unknown field ({hint})"
    if field not in present:
        return (), f"the profile has no {field} to name a source for"
    return None


WHAT = {"measured": "the command that measured it", "published": "the reference", "derived": "the derivation",
        "assumed": "why it was chosen"}


def _entry_problem(entry) -> tuple[tuple, str] | None:
    if not isinstance(entry, dict) or len(entry) != 1:
        return (), f"must be one entry {{kind: text}}, kind one of {', '.join(KINDS)}, got {shown(entry)}"
    (kind, text), = entry.items()
    if kind not in KINDS:
        close = difflib.get_close_matches(str(kind), KINDS, n=1)
        hint = f"did you mean {close[0]!r}?" if close else f"known: {', '.join(KINDS)}"
        return (), f"unknown kind {str(kind)!r} ({hint})"
    if not isinstance(text, str) or not text.strip() or len(text) > MAX_TEXT:
        got = "an empty text" if isinstance(text, str) and not text.strip() else shown(text)
        return (kind,), f"must be non-empty text ({WHAT[kind]}), got {got}"
    return None


def present_fields(values: dict, talkers) -> set[str]:
    """The fields of a profile a source may name: its cost fields with a value, and ``talkers.<name>`` per talker.

    >>> sorted(present_fields({"forward_ms": [[1.0]], "encode_ms": 3.0, "encode_fixed_ms": None}, {"espeak": {}}))
    ['encode_ms', 'forward_ms', 'talkers.espeak']
    """
    fields = {name for name in COST_FIELDS if values.get(name) is not None}
    return fields | {f"{TALKER_PREFIX}{name}" for name in (talkers or {})}


def unsourced(block, present: set[str]) -> list[str]:
    """The fields of ``present`` that name no source, in the order of ``COST_FIELDS`` then the talkers."""
    named = set(block or {})
    order = [*COST_FIELDS, *sorted(f for f in present if f.startswith(TALKER_PREFIX))]
    return [field for field in order if field in present and field not in named]


def summary(block) -> str:
    """The sources in one line (the tables' provenance line): the fields grouped by kind (measured, published, derived,
    assumed), in the profile's order (``COST_FIELDS``, then ``talkers.<name>`` by name); a published source quotes its
    reference after its fields (each distinct one once), the other kinds only name their fields (their texts are in the
    profile and run.json). '' when there are none (a run written before profiles named their sources); entries that
    are not one ``{kind: text}`` are left out (run.json is checked when it is read).

    >>> print(summary({"encode_first_ms": {"published": "PR 6117"}, "forward_ms": {"derived": "fitted"},
    ...                "encode_ms": {"published": "PR 6117"}, "encode_fixed_ms": {"assumed": "why"},
    ...                "talkers.espeak": {"measured": "ticktock calibrate"}}))
    measured talkers.espeak; published encode_ms, encode_first_ms (PR 6117); derived forward_ms; assumed encode_fixed_ms
    >>> summary(None), summary({})
    ('', '')
    """
    if not isinstance(block, dict):
        return ""
    by_kind: dict[str, dict[str, list[str]]] = {}  # kind -> text -> fields
    order = {name: i for i, name in enumerate(COST_FIELDS)}
    for name, source in sorted(block.items(), key=lambda item: (order.get(item[0], len(order)), str(item[0]))):
        if isinstance(source, dict) and len(source) == 1:
            (kind, text), = source.items()
            by_kind.setdefault(kind, {}).setdefault(str(text), []).append(str(name))
    parts = []
    for kind in [k for k in KINDS if k in by_kind] + sorted(set(by_kind) - set(KINDS)):
        if kind == "published":
            groups = [f"{', '.join(fields)} ({text})" for text, fields in by_kind[kind].items()]
        else:
            groups = [", ".join(name for fields in by_kind[kind].values() for name in fields)]
        parts.append(f"{kind} {', '.join(groups)}")
    return "; ".join(parts)


def as_texts(block) -> dict | None:
    """A checked ``sources`` block as plain ``{field: {kind: text}}`` (for run.json), None when there is none."""
    if not block:
        return None
    return {str(field): {str(kind): str(text) for kind, text in entry.items()} for field, entry in block.items()}
