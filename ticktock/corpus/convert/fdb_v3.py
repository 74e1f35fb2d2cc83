"""Full-Duplex-Bench v3: spoken multi-step tool-calling requests with real disfluencies.

Published layout (``--src`` is ``fdb_v3_data_released/`` or the folder holding it)::

    fdb_v3_data_released/{example_id}_{speaker_id}/input.wav       human recording, 48 kHz
    fdb_v3_data_released/{example_id}_{speaker_id}/metadata.json

``metadata.json`` fields as described by a third-party loader (no real file checked): ``id``,
``dialogue[0].user`` (the script the speaker read), ``dialogue[0].ai`` (the reference reply),
``expected_tool_calls`` (``[{"function": name, "args": {...}}]``), ``difficulty``,
``disfluency_features``, ``state_rollback_test``, ``state_rollback_details``
(``{"original_param": {...}, "corrected_param": {...}}``), ``acting_notes``, ``latency_profile``;
``domain``/``title`` are used when present.

The session is the whole recording (resampled to 16 kHz mono; its trailing room tone leaves room for the
reply). One user request turn spans the speech the energy VAD finds, with the read script as its text (no
word timings). ``tools`` are the 12 mock tools (``ticktock.mock_tools.TOOL_SCHEMAS``).

Expected calls are kept in ``{"function", "args"}`` form. Arguments that refer to an earlier result
(``"$RESULT_0.products[0].product_id"``) are resolved by running the earlier expected calls on TickTock's
mock tools, the same tools that answer the model during a run; the source's calls are kept in
``provenance.source_tool_calls``. A placeholder that cannot be resolved stays as it is, with a warning.
The script is the calls, then ``speak_after_tools`` with the reference reply. Task ``fdb_v3``, id
``fdb_v3-<folder>``.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ticktock.corpus.convert import CONVERTER_VERSION, ConvertError, Options, safe_id, source_path
from ticktock.corpus.convert.fdb_layout import read_json, require, sample_folders, speaker_of
from ticktock.corpus.convert.vad import speech_spans
from ticktock.corpus.convert.writer import CorpusWriter
from ticktock.manifest import Session, Turn
from ticktock.mock_tools import TOOL_SCHEMAS, execute

SOURCE = "fdb_v3"
TASK = "fdb_v3"
DATA_FOLDER = "fdb_v3_data_released"
PLACEHOLDER = re.compile(r"^\$RESULT_(\d+)((?:\.\w+|\[\d+\])*)$")
TOOL_NAMES = frozenset(t["name"] for t in TOOL_SCHEMAS)


@dataclass(frozen=True)
class Item:
    folder: Path
    meta: dict
    calls: tuple[dict, ...]
    user_text: str
    reply_text: str


def data_folder(src: Path) -> Path:
    if (src / DATA_FOLDER).is_dir():
        return src / DATA_FOLDER
    return src


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
        calls = tool_calls(meta.get("expected_tool_calls"), path)
        user, reply = dialogue(meta.get("dialogue"), path)
        items.append(Item(sample, meta, calls, user, reply))
    return items


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


def dialogue(value: Any, path: Path) -> tuple[str, str]:
    """(what the user reads, the reference reply) from ``dialogue[0]``."""
    if not isinstance(value, list) or not value or not isinstance(value[0], dict):
        raise ConvertError(f"{path}: 'dialogue' must be a list whose first entry has 'user' (and 'ai')")
    user = value[0].get("user")
    if not isinstance(user, str) or not user.strip():
        raise ConvertError(f"{path}: dialogue[0].user is missing or empty")
    return user.strip(), str(value[0].get("ai") or "").strip()


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
    """``results[index]`` followed along ``.key`` / ``[n]`` steps; None when a step is missing."""
    value: Any = results[index]
    for key, number in re.findall(r"\.(\w+)|\[(\d+)\]", path):
        try:
            value = value[key] if key else value[int(number)]
        except (KeyError, IndexError, TypeError):
            return None
    return value if isinstance(value, (str, int, float, bool)) else None


def rollback(meta: dict) -> dict | None:
    details = meta.get("state_rollback_details")
    if not isinstance(details, dict):
        return None
    return {"original": details.get("original_param", details.get("original")),
            "corrected": details.get("corrected_param", details.get("corrected"))}


def build_session(item: Item, writer: CorpusWriter, options: Options) -> Session:
    wav = item.folder / "input.wav"
    clip = writer.read_audio(wav, str(wav))
    spans = speech_spans(clip.samples)
    writer.warn_if_silent(clip, spans, str(wav))
    duration = round(clip.duration_s, 6)
    start, end = (spans[0][0], spans[-1][1]) if spans else (0.0, duration)
    turn = Turn("user", "request", item.user_text, start, min(end, duration), (), True)
    calls, results = resolve_calls(item.calls, writer.warn, str(item.folder / "metadata.json"))
    script: list[dict] = [{"turn": 0, "action": "tool_call", "call": c} for c in calls]
    if item.reply_text:
        script.append({"turn": 0, "action": "speak_after_tools", "text": item.reply_text, "tool_results": results})
    meta = item.meta
    behaviour = {
        "type": "tool_calling",
        "scenario": meta.get("scenario_id") or meta.get("title") or meta.get("id"),
        "domain": meta.get("domain"),
        "difficulty": meta.get("difficulty"),
        "disfluencies": list(meta.get("disfluency_features") or []),
        "state_rollback": rollback(meta) if meta.get("state_rollback_test", True) else None,
        "respond_after_s": [turn.end_s],
    }
    sid = f"{TASK}-{safe_id(item.folder.name)}"
    provenance = {
        "source": SOURCE, "source_id": str(meta.get("id", item.folder.name)),
        "source_path": source_path(item.folder, options.src), "speaker_id": speaker_of(item.folder.name),
        "source_sample_rate": clip.source_rate, "source_channels": clip.channels,
        "converter_version": CONVERTER_VERSION,
    }
    for key in ("acting_notes", "latency_profile", "state_rollback_test"):
        if key in meta:
            provenance[key] = meta[key]
    if calls != list(item.calls):
        provenance["source_tool_calls"] = list(item.calls)
    return Session(
        session_id=sid,
        task=TASK,
        audio_path=writer.write_audio(sid, clip.samples),
        duration_s=duration,
        tools=tuple(TOOL_SCHEMAS),
        turns=(turn,),
        expected={"reference_answer": None, "answer_aliases": [], "tool_calls": calls, "script": script,
                  "behaviour": behaviour},
        provenance=provenance,
    )
