"""Full-Duplex-Bench v3: spoken multi-step tool-calling requests with real disfluencies.

Published layout (``--src`` is ``fdb_v3_data_released/``, the folder holding it, or a doubled
``fdb_v3_data_released/fdb_v3_data_released/`` as some unzip tools leave it)::

    fdb_v3_data_released/{example_id}_{speaker_id}/input.wav       human recording, 48 kHz (some 16 kHz)
    fdb_v3_data_released/{example_id}_{speaker_id}/metadata.json

``{example_id}`` is the scenario (``ecommerce_09``), ``{speaker_id}`` 24 hex digits. ``metadata.json`` (the
per-recording copy of the scenario, which the official scripts prefer over ``benchmark_data_v2.json``):
``id``, ``title``, ``domain``, ``difficulty``, ``num_expected_calls``, ``dialogue`` (a list of
``{"user", "ai"}`` entries: what the speaker read and the reference reply), ``expected_tool_calls``
(``[{"function": name, "args": {...}}]``), ``disfluency_features`` (upper case: ``FILLER``, ``PAUSE``,
``HESITATION``, ``FALSE_START``, ``SELF_CORRECTION``; a list, or absent; anything else is refused naming the file
and the field), ``state_rollback_test``, ``state_rollback_details``
(``{"original_param": {...}, "corrected_param": {...}}``), ``acting_notes``, ``latency_profile``.

The session is the whole recording (resampled to 16 kHz mono; its 20-40 s of trailing room tone leave room
for the reply). Like the official evaluator:

* the request is every ``dialogue`` entry's user text, joined (a self-correction may sit in a later entry);
  the reference reply is the last entry's ``ai`` (``dialogue[-1].ai``). The entries are kept in
  ``provenance.dialogue``; a dialogue of several entries is reported (``multi_entry_dialogue``);
* the request turn (no word timings) spans the speech the energy VAD finds up to the first silence longer
  than 2 s, not to the last speech in the recording: the room tone sometimes carries faint talk, which
  would move the end by more than 10 s. The last speech found is ``provenance.last_speech_s``; speech after
  the request end is reported (``request_end``).

``behaviour.scenario`` is the scenario ``id`` (``ecommerce_09``), with ``title`` and ``num_expected_calls``
beside it; disfluency names are lower case singular (``self_correction``, as in the synthetic corpus), the
source's spelling in ``provenance.source_disfluencies``. ``tools`` are the 12 mock tools
(``ticktock.world.mock_tools.TOOL_SCHEMAS``), which accept every call shape of the official agent tools.

Expected calls are kept in ``{"function", "args"}`` form. Arguments that refer to an earlier result
(``"$RESULT_0.products[0].product_id"``) are resolved by running the earlier expected calls on TickTock's
mock tools, the same tools that answer the model during a run; ``$RESULT_i.cheapest_<item>_<field>`` (in
the released data) reads the cheapest of the result's ``<item>s``. The source's calls are kept in
``provenance.source_tool_calls``. A placeholder that cannot be resolved stays as it is, and a call the mock
tools reject is reported (``unresolved``, ``mock_rejects``). The script is the calls, then
``speak_after_tools`` with the reference reply. Task ``fdb_v3``, id ``fdb_v3-<folder>``.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from ticktock.corpus.convert import CONVERTER_VERSION, ConvertError, Options, safe_id, source_path
from ticktock.corpus.convert.fdb_layout import (example_of, read_json, require, sample_folders, speaker_of,
                                                speech_until_gap, unnested)
from ticktock.corpus.convert.vad import speech_spans
from ticktock.corpus.convert.writer import CorpusWriter
from ticktock.sessions.manifest import Session, Turn
from ticktock.world.mock_tools import TOOL_SCHEMAS, execute

SOURCE = "fdb_v3"
TASK = "fdb_v3"
DATA_FOLDER = "fdb_v3_data_released"
PLACEHOLDER = re.compile(r"^\$RESULT_(\d+)((?:\.\w+|\[\d+\])*)$")
TOOL_NAMES = frozenset(t["name"] for t in TOOL_SCHEMAS)
MAX_REQUEST_GAP_S = 2.0  # the official end of the user's request: the speech before the first longer gap
DOMAINS = {"ecommerce": "ecommerce_support", "finance": "finance_billing", "housing": "housing_location",
           "travel": "travel_identity"}
DISFLUENCY_NAMES = {"fillers": "filler", "pauses": "pause", "hesitations": "hesitation",
                    "false_starts": "false_start", "self_corrections": "self_correction"}


@dataclass(frozen=True)
class Dialogue:
    """The ``dialogue`` entries of a recording: every user text, the reference reply (the last ``ai``)."""

    user_texts: tuple[str, ...]
    reply: str
    entries: tuple[dict, ...]

    @property
    def request_text(self) -> str:
        return " ".join(self.user_texts)


@dataclass(frozen=True)
class Item:
    folder: Path
    meta: dict
    calls: tuple[dict, ...]
    dialogue: Dialogue
    disfluencies: tuple[str, ...] = ()  # ``disfluency_features`` as the source spells them

    @property
    def example_id(self) -> str:
        return str(self.meta.get("id") or example_of(self.folder.name))


def data_folder(src: Path) -> Path:
    """The folder of recording folders: ``src/fdb_v3_data_released`` (doubled or not) or ``src`` itself."""
    for candidate in (src / DATA_FOLDER, src / "v3" / DATA_FOLDER):
        if candidate.is_dir():
            return unnested(candidate)
    return unnested(src)


def read_items(options: Options) -> list[Item]:
    folder = data_folder(options.src)
    samples = [s for s in sample_folders(folder) if (s / "metadata.json").exists() or (s / "input.wav").exists()]
    if not samples:
        raise ConvertError(f"{folder}: no FDB v3 example folders "
                           f"({{example_id}}_{{speaker_id}}/input.wav + metadata.json)")
    items = []
    for sample in samples[: options.limit]:
        require(sample / "input.wav")
        path = sample / "metadata.json"
        meta = read_json(path)
        if not isinstance(meta, dict):
            raise ConvertError(f"{path}: expected a JSON object")
        items.append(Item(sample, meta, tool_calls(meta.get("expected_tool_calls"), path),
                          read_dialogue(meta.get("dialogue"), path), disfluency_features(meta, path)))
    return items


def session_key(item: Item) -> tuple[str, str]:
    """(task type, session id) of the session an item becomes."""
    return TASK, f"{TASK}-{safe_id(item.folder.name)}"


def tool_calls(value: Any, path: Path) -> tuple[dict, ...]:
    """``expected_tool_calls`` as canonical calls; ``{"name", "arguments"}`` is accepted too."""
    if not isinstance(value, list):
        raise ConvertError(f"{path}: 'expected_tool_calls' must be a list of {{'function', 'args'}}")
    calls = []
    for i, call in enumerate(value):
        if isinstance(call, dict) and "function" not in call and "name" in call:
            call = {"function": call["name"], "args": call.get("arguments", {})}
        well_formed = isinstance(call, dict) and isinstance(call.get("function"), str)
        if not (well_formed and isinstance(call.get("args", {}), dict)):
            raise ConvertError(f"{path}: expected_tool_calls[{i}] is not {{'function': str, 'args': {{...}}}}")
        calls.append({"function": call["function"], "args": dict(call.get("args") or {})})
    return tuple(calls)


def disfluency_features(meta: dict, path: Path) -> tuple[str, ...]:
    """``disfluency_features``: a list of names (none when absent); anything else raises ConvertError naming the
    file and the field.

    >>> disfluency_features({"disfluency_features": ["FILLER", "PAUSE"]}, Path("metadata.json"))
    ('FILLER', 'PAUSE')
    >>> disfluency_features({"disfluency_features": "FILLER"}, Path("metadata.json"))
    Traceback (most recent call last):
    ...
    ticktock.corpus.convert.ConvertError: metadata.json: 'disfluency_features' must be a list of names (e.g. ["FILLER", "PAUSE"]), got 'FILLER'
    """
    value = meta.get("disfluency_features")
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(name, str) for name in value):
        raise ConvertError(f"{path}: 'disfluency_features' must be a list of names (e.g. [\"FILLER\", \"PAUSE\"]), "
                           f"got {value!r:.60}")
    return tuple(value)


def read_dialogue(value: Any, path: Path) -> Dialogue:
    """Every entry of ``dialogue``: the user texts in order and the last entry's ``ai`` as the reply.

    Example (a self-correction in the second entry)::

        >>> d = read_dialogue([{"user": "Track order B O B.", "ai": "Sure."},
        ...                    {"user": "Sorry, B O P.", "ai": "Order BOP is on its way."}], Path("metadata.json"))
        >>> d.request_text, d.reply
        ('Track order B O B. Sorry, B O P.', 'Order BOP is on its way.')
    """
    if not isinstance(value, list) or not value:
        raise ConvertError(f"{path}: 'dialogue' must be a non-empty list of {{'user', 'ai'}} entries")
    entries = []
    for i, entry in enumerate(value):
        if not isinstance(entry, dict):
            raise ConvertError(f"{path}: dialogue[{i}] is not an object with 'user' (and 'ai')")
        user, ai = entry.get("user"), entry.get("ai")
        if not isinstance(user or "", str) or not isinstance(ai or "", str):
            raise ConvertError(f"{path}: dialogue[{i}]: 'user' and 'ai' must be text")
        entries.append({"user": (user or "").strip(), "ai": (ai or "").strip()})
    users = tuple(e["user"] for e in entries if e["user"])
    if not users:
        raise ConvertError(f"{path}: no dialogue entry has user text (dialogue[i].user)")
    return Dialogue(users, entries[-1]["ai"], tuple(entries))


def resolve_calls(calls, warn, where: str) -> tuple[list[dict], list[dict]]:
    """Calls with ``$RESULT_i...`` arguments filled in from the mock results of earlier calls; and the
    mock results. Unknown tools, rejected calls and unresolvable placeholders are reported."""
    resolved, results = [], []
    for i, call in enumerate(calls):
        call = copy.deepcopy(call)
        for key, value in call["args"].items():
            match = PLACEHOLDER.match(value) if isinstance(value, str) else None
            if match is None:
                continue
            found = lookup(results, int(match.group(1)), match.group(2)) if int(match.group(1)) < i else None
            if found is None:
                warn("unresolved", f"{where}: call {i} ({call['function']}): "
                                   f"cannot resolve {value!r} on the mock tools")
            else:
                call["args"][key] = found
        if call["function"] not in TOOL_NAMES:
            warn("unknown_tool", f"{where}: call {i}: {call['function']!r} is not one of the 12 mock tools")
        result = execute(call)
        if "error" in result and call["function"] in TOOL_NAMES:
            warn("mock_rejects", f"{where}: call {i}: the mock tools answer {result['error']!r}")
        resolved.append(call)
        results.append(result)
    return resolved, results


def lookup(results: list[dict], index: int, path: str) -> Any:
    """``results[index]`` followed along ``.key`` / ``[n]`` steps; None when a step is missing. A
    ``.cheapest_<item>_<field>`` step reads ``<field>`` of the cheapest entry of the list ``<item>s``.

    >>> lookup([{"apartments": [{"address": "9 Elm Road", "rent": 900}, {"address": "1 Oak Avenue", "rent": 800}]}],
    ...        0, ".cheapest_apartment_address")
    '1 Oak Avenue'
    """
    value: Any = results[index]
    for key, number in re.findall(r"\.(\w+)|\[(\d+)\]", path):
        try:
            value = value[key] if key else value[int(number)]
        except (KeyError, IndexError, TypeError):
            value = cheapest_field(value, key) if key else None
            if value is None:
                return None
    return value if isinstance(value, (str, int, float, bool)) else None


def cheapest_field(result: Any, key: str) -> Any:
    """``cheapest_<item>_<field>``: ``<field>`` of the entry of ``result[<item>s]`` with the lowest price or
    rent; None when ``key`` is not of that form or the result has no such list."""
    match = re.fullmatch(r"cheapest_(\w+?)_(\w+)", key)
    if match is None or not isinstance(result, dict):
        return None
    entries = result.get(f"{match.group(1)}s")
    field = match.group(2)
    if not isinstance(entries, list) or not entries or not all(isinstance(e, dict) for e in entries):
        return None
    cheapest = min(entries, key=lambda e: e.get("price", e.get("rent", 0)))
    return cheapest.get(field, cheapest.get(f"{match.group(1)}_{field}"))


def rollback(meta: dict) -> dict | None:
    details = meta.get("state_rollback_details")
    if not isinstance(details, dict):
        return None
    return {"original": details.get("original_param", details.get("original")),
            "corrected": details.get("corrected_param", details.get("corrected"))}


def disfluency_names(features: Sequence[str]) -> list[str]:
    """Disfluency names as the synthetic corpus spells them: lower case, singular.

    >>> disfluency_names(["FILLER", "SELF_CORRECTION", "false starts", "Pauses"])
    ['filler', 'self_correction', 'false_start', 'pause']
    """
    names = []
    for feature in features:
        key = re.sub(r"[\s-]+", "_", feature.strip()).lower()
        names.append(DISFLUENCY_NAMES.get(key, key))
    return names


def domain_of(meta: dict, example_id: str) -> str | None:
    """``domain``, or the one the scenario id's prefix names (``ecommerce_09`` -> ecommerce_support)."""
    return meta.get("domain") or DOMAINS.get(example_id.split("_", 1)[0])


def request_span(spans, duration: float, wav: Path, writer: CorpusWriter) -> tuple[float, float]:
    """The request: speech up to the first silence longer than ``MAX_REQUEST_GAP_S``; speech after it is
    reported. The whole recording, when the VAD finds no speech (reported as silent)."""
    span = speech_until_gap(spans, MAX_REQUEST_GAP_S)
    if span is None:
        return 0.0, duration
    last = spans[-1][1]
    if last - span[1] > MAX_REQUEST_GAP_S:
        writer.warn("request_end", f"{wav}: the request ends at {span[1]:.2f} s (the speech before the first "
                                   f"silence over {MAX_REQUEST_GAP_S:g} s); speech until {last:.2f} s is left out")
    return span[0], min(span[1], duration)


def check_metadata(item: Item, calls: list[dict], writer: CorpusWriter) -> None:
    """Report a dialogue of several entries and a call count that disagrees with ``num_expected_calls``."""
    path = item.folder / "metadata.json"
    if len(item.dialogue.entries) > 1:
        writer.warn("multi_entry_dialogue", f"{path}: dialogue has {len(item.dialogue.entries)} entries; the request "
                                            f"is every user entry, the reference reply the last 'ai'")
    wanted = item.meta.get("num_expected_calls")
    if isinstance(wanted, int) and wanted != len(calls):
        writer.warn("call_count", f"{path}: num_expected_calls is {wanted} but expected_tool_calls has {len(calls)}")


def build_session(item: Item, writer: CorpusWriter, options: Options) -> Session:
    wav = item.folder / "input.wav"
    clip = writer.read_audio(wav, str(wav))
    spans = speech_spans(clip.samples)
    writer.warn_if_silent(clip, spans, str(wav))
    duration = round(clip.duration_s, 6)
    turn = Turn("user", "request", item.dialogue.request_text, *request_span(spans, duration, wav, writer), (), True)
    calls, results = resolve_calls(item.calls, writer.warn, str(item.folder / "metadata.json"))
    check_metadata(item, calls, writer)
    script: list[dict] = [{"turn": 0, "action": "tool_call", "call": c} for c in calls]
    if item.dialogue.reply:
        script.append({"turn": 0, "action": "speak_after_tools", "text": item.dialogue.reply, "tool_results": results})
    meta, example = item.meta, item.example_id
    behaviour = {
        "type": "tool_calling",
        "scenario": example,
        "title": meta.get("title"),
        "num_expected_calls": meta.get("num_expected_calls"),
        "domain": domain_of(meta, example),
        "difficulty": meta.get("difficulty"),
        "disfluencies": disfluency_names(item.disfluencies),
        "state_rollback": rollback(meta) if meta.get("state_rollback_test", True) else None,
        "respond_after_s": [turn.end_s],
    }
    _, sid = session_key(item)
    return Session(
        session_id=sid,
        task=TASK,
        audio_path=writer.write_audio(sid, clip.samples),
        duration_s=duration,
        tools=tuple(TOOL_SCHEMAS),
        turns=(turn,),
        expected={"reference_answer": None, "answer_aliases": [], "tool_calls": calls, "script": script,
                  "behaviour": behaviour},
        provenance=provenance(item, clip, spans, calls, options),
    )


def provenance(item: Item, clip, spans, calls: list[dict], options: Options) -> dict:
    """Where the session came from, and the source's own spellings of what the session normalised."""
    meta = item.meta
    found = {
        "source": SOURCE, "source_id": str(meta.get("id", item.folder.name)),
        "source_path": source_path(item.folder, options.src),
        "speaker_id": speaker_of(item.folder.name, item.example_id),
        "source_sample_rate": clip.source_rate, "source_channels": clip.channels,
        "dialogue": [dict(e) for e in item.dialogue.entries],
        "last_speech_s": spans[-1][1] if spans else None,
        "converter_version": CONVERTER_VERSION,
    }
    for key in ("acting_notes", "latency_profile", "state_rollback_test"):
        if key in meta:
            found[key] = meta[key]
    if disfluency_names(item.disfluencies) != list(item.disfluencies):
        found["source_disfluencies"] = list(item.disfluencies)
    if calls != list(item.calls):
        found["source_tool_calls"] = list(item.calls)
    return found
