"""Full-Duplex-Bench v1.0: pause handling, smooth turn-taking, backchannel and user interruption.

Published layout (``--src`` is the download folder, where the v1.0 subsets sit beside the v1.5 ones, or a
``v1_0/`` folder of them; ``--subsets`` picks some; a doubled ``X/X/{ID}`` nesting is followed)::

    candor_pause_handling/{ID}/        input.wav, pause.json, transcription.json
    candor_turn_taking/{ID}/           input.wav, turn_taking.json, transcription.json
    icc_backchannel/{ID}/              input.wav, transcription.json
    synthetic_pause_handling/{ID}/     input.wav, pause.json, transcription.json
    synthetic_user_interruption/{ID}/  input.wav, context.wav, interrupt.wav, interrupt.json

JSON shapes (checked against the example files in the FDB repository, v1_v1.5/evaluation/example_data):
``pause.json`` / ``turn_taking.json`` ``[{"text": "[PAUSE]", "timestamp": [s, e]}]``; ``interrupt.json``
``[{"context": str, "interrupt": str, "timestamp": [s, e]}]``; ``transcription.json``
``[{"speaker": 0|1, "item": [{"text": word, "timestamp": [s, e]}]}]`` (a Whisper-style
``{"text", "chunks": [...]}`` is read as one speaker).

The session is input.wav as it is (resampled to 16 kHz mono), with the source's timings:

* words come from transcription.json. The user is the speaker whose words the input audio covers best
  (energy VAD); words of a speaker the input does not contain (in the turn-taking example, the partner's
  original reply) are kept as ``behaviour.reference_turns`` and, for turn-taking, as the scripted reply.
  Without transcription.json the user turn spans the speech the VAD finds, with no words.
* pause handling: ``behaviour.pause_spans`` from pause.json; the FDB protocol scores whether the model
  takes the turn at all, so the user turn has ``expects_response: false``.
* smooth turn-taking: ``behaviour.turn_end_s`` / ``respond_after_s`` = turn_taking.json's start.
* backchannel: the user talks (``role: statement``). The timing targets are the official per-sample
  ground truth ``icc_gt_distribution.json`` (FDB repository, ``v1_v1.5/evaluation/``; an object of sample
  id -> probability of a backchannel in each 0.2 s window of input.wav), read from ``--backchannel-gt`` or
  found next to the source (in ``--src``, the subset folder or their parents). It is kept as
  ``behaviour.backchannel_distribution`` ``{"window_s": 0.2, "probabilities": [...]}`` and scored by
  ``ticktock.world.scoring`` (``backchannel_jsd``, the official Jensen-Shannon distance); a sample the file
  does not list is reported (``no_backchannel_gt``).
* user interruption: turn 0 (``context``) spans the VAD speech before the interruption, turn 1
  (``interrupt``, role ``interruption``) the interrupt.json window; ``behaviour.barge_in_s``, script
  ``stop``.

Task ``fdb_v1``, id ``fdb_v1-<subset>-<ID>``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from ticktock.corpus.convert import CONVERTER_VERSION, ConvertError, Options, safe_id, source_path
from ticktock.corpus.convert.fdb_layout import (clamp_span, read_json, require, sample_folders, span, speech_before,
                                                subset_folders)
from ticktock.corpus.convert.vad import speech_spans
from ticktock.corpus.convert.writer import CorpusWriter
from ticktock.sessions.manifest import Session, Turn, Word

SOURCE = "fdb_v1"
TASK = "fdb_v1"
SUBSETS = {  # subset -> (kind, annotation file)
    "candor_pause_handling": ("pause_handling", "pause.json"),
    "candor_turn_taking": ("smooth_turn_taking", "turn_taking.json"),
    "icc_backchannel": ("backchannel", None),
    "synthetic_pause_handling": ("pause_handling", "pause.json"),
    "synthetic_user_interruption": ("user_interruption", "interrupt.json"),
}
AUDIBLE = 0.5  # a speaker whose words overlap the input's speech at least this much is in the audio
VERSION_FOLDERS = ("v1_0", "v1.0", "v1")  # where a copy may keep the v1.0 subsets (default: --src itself)
BACKCHANNEL_GT = "icc_gt_distribution.json"
GT_WINDOW_S = 0.2


@dataclass(frozen=True)
class Item:
    subset: str
    kind: str
    folder: Path
    annotation: object  # decoded task JSON (None for backchannel)
    words: dict  # speaker -> tuple of (text, start_s, end_s), from transcription.json ({} when absent)
    backchannel_gt: tuple[float, ...] | None = None  # this sample's ground-truth distribution
    gt_path: Path | None = None  # the ground-truth file, when one was read for this subset


def session_key(item: Item) -> tuple[str, str]:
    """(task type, session id) of the session an item becomes."""
    return TASK, f"{TASK}-{item.subset}-{safe_id(item.folder.name)}"


def read_items(options: Options) -> list[Item]:
    items: list[Item] = []
    for subset, folder in subset_folders(options, SUBSETS, VERSION_FOLDERS).items():
        kind, annotation_name = SUBSETS[subset]
        gt_path = backchannel_gt_path(options, folder) if kind == "backchannel" else None
        truth = read_backchannel_gt(gt_path) if gt_path else {}
        for sample in sample_folders(folder)[: options.limit]:
            require(sample / "input.wav")
            annotation = read_annotation(sample / annotation_name, kind) if annotation_name else None
            transcription = sample / "transcription.json"
            words = read_transcription(transcription) if transcription.is_file() else {}
            items.append(Item(subset, kind, sample, annotation, words, truth.get(sample.name), gt_path))
    return items


def backchannel_gt_path(options: Options, subset_dir: Path) -> Path | None:
    """``--backchannel-gt``, or ``icc_gt_distribution.json`` next to the source; None when there is none."""
    if options.backchannel_gt is not None:
        return options.backchannel_gt
    for folder in dict.fromkeys((subset_dir, subset_dir.parent, options.src, options.src.parent)):
        if (folder / BACKCHANNEL_GT).is_file():
            return folder / BACKCHANNEL_GT
    return None


def read_backchannel_gt(path: Path) -> dict[str, tuple[float, ...]]:
    """sample id -> the probability of a backchannel in each 0.2 s window (``icc_gt_distribution.json``)."""
    data = read_json(path)
    if not isinstance(data, dict):
        raise ConvertError(f"{path}: expected an object of sample id -> [probability per {GT_WINDOW_S} s window]")
    truth = {}
    for key, values in data.items():
        numbers = values if isinstance(values, list) else []
        if not numbers or not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
                                  and v >= 0 for v in numbers):
            raise ConvertError(f"{path}: entry {key!r}: expected a non-empty list of probabilities >= 0")
        truth[str(key)] = tuple(float(v) for v in numbers)
    return truth


def backchannel_targets(item: Item, duration: float, writer, options: Options) -> tuple[dict, dict]:
    """(behaviour fields, provenance fields) of the ground truth of a backchannel sample."""
    if item.gt_path is None:
        return {}, {}
    label = source_path(item.gt_path, options.src)
    if item.backchannel_gt is None:
        writer.warn("no_backchannel_gt", f"{item.gt_path}: no entry for sample {item.folder.name!r} ({item.folder})")
        return {}, {"backchannel_gt": label}
    windows = int(duration / GT_WINDOW_S) + 1
    if abs(len(item.backchannel_gt) - windows) > 1.0 / GT_WINDOW_S:
        writer.warn("backchannel_gt_length", f"{item.gt_path}: entry {item.folder.name!r} has "
                                             f"{len(item.backchannel_gt)} windows; {item.folder}/input.wav lasts "
                                             f"{duration:.1f} s ({windows} windows of {GT_WINDOW_S} s)")
    return ({"backchannel_distribution": {"window_s": GT_WINDOW_S, "probabilities": list(item.backchannel_gt)}},
            {"backchannel_gt": label})


def read_annotation(path: Path, kind: str) -> list[dict]:
    """pause.json / turn_taking.json / interrupt.json: a non-empty list of objects with a timestamp."""
    data = read_json(path)
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list) or not data or not all(isinstance(d, dict) for d in data):
        raise ConvertError(f"{path}: expected a non-empty list of objects with a 'timestamp'")
    entries = []
    for i, entry in enumerate(data):
        if "timestamp" not in entry:
            raise ConvertError(f"{path}: entry {i} has no 'timestamp'")
        entries.append({**entry, "timestamp": span(entry["timestamp"], f"{path} entry {i}")})
    if kind == "user_interruption":
        for key in ("context", "interrupt"):
            if not isinstance(entries[0].get(key), str):
                raise ConvertError(f"{path}: entry 0 has no {key!r} text")
    return entries


def read_transcription(path: Path) -> dict:
    """speaker -> words (text, start_s, end_s) sorted by start."""
    data = read_json(path)
    if isinstance(data, dict) and isinstance(data.get("chunks"), list):
        data = [{"speaker": 0, "item": data["chunks"]}]
    if not isinstance(data, list):
        raise ConvertError(f"{path}: expected a list of {{'speaker', 'item': [...]}}")
    speakers: dict = {}
    for i, block in enumerate(data):
        if not isinstance(block, dict) or not isinstance(block.get("item"), list):
            raise ConvertError(f"{path}: entry {i}: expected {{'speaker', 'item': [...]}}")
        words = speakers.setdefault(block.get("speaker", 0), [])
        for j, word in enumerate(block["item"]):
            where = f"{path} entry {i} word {j}"
            if not isinstance(word, dict) or "timestamp" not in word:
                raise ConvertError(f"{where}: expected {{'text', 'timestamp': [s, e]}}")
            stamp = list(word["timestamp"] or [])
            if len(stamp) == 2 and stamp[1] is None and stamp[0] is not None:  # ASR output: open end
                stamp[1] = stamp[0]
            start, end = span(stamp, where)
            words.append((str(word.get("text", "")).strip(), start, end))
    return {speaker: tuple(sorted(w, key=lambda x: x[1])) for speaker, w in speakers.items() if w}


def coverage(words, spans) -> float:
    """Share of the words' time that lies inside the speech spans (a zero-length word counts 20 ms)."""
    total = inside = 0.0
    for _, start, end in words:
        length = max(end - start, 0.02)
        end = start + length
        total += length
        inside += sum(max(0.0, min(end, b) - max(start, a)) for a, b in spans)
    return inside / total if total else 0.0


def split_speakers(words: dict, spans) -> tuple[object, list]:
    """(the user speaker or None, the other speakers) for a transcription and the input's speech."""
    if not words:
        return None, []
    ranked = sorted(words, key=lambda k: (-coverage(words[k], spans), -len(words[k]), str(k)))
    return ranked[0], ranked[1:]


def word_turn(words, speaker: str, role: str, duration: float, writer, where: str, expects: bool) -> Turn:
    timed = []
    for text, start, end in words:
        start, end = clamp_span(start, end, duration, writer, where)
        timed.append(Word(text, start, end))
    start = timed[0].start_s
    end = max(w.end_s for w in timed)
    return Turn(speaker, role, " ".join(w.text for w in timed if w.text), start, end, tuple(timed), expects)


def build_session(item: Item, writer: CorpusWriter, options: Options) -> Session:
    wav = item.folder / "input.wav"
    clip = writer.read_audio(wav, str(wav))
    spans = speech_spans(clip.samples)
    writer.warn_if_silent(clip, spans, str(wav))
    duration = round(clip.duration_s, 6)
    where = str(item.folder)
    user, others = split_speakers(item.words, spans)
    turns: list[Turn] = []
    behaviour: dict = {"type": item.kind}
    script: list[dict] = []
    if item.kind == "user_interruption":
        turns, behaviour, script = interruption_turns(item.annotation[0], spans, duration, writer, where)
    else:
        expects = item.kind == "smooth_turn_taking"
        role = "statement" if item.kind == "backchannel" else "request"
        if user is not None:
            turns.append(word_turn(item.words[user], "user", role, duration, writer, where, expects))
        else:
            start, end = (spans[0][0], spans[-1][1]) if spans else (0.0, duration)
            turns.append(Turn("user", role, "", start, end, (), expects))
        inaudible = []
        for speaker in others:
            words = item.words[speaker]
            if coverage(words, spans) >= AUDIBLE:
                turns.append(word_turn(words, "other", "background", duration, writer, where, False))
            else:
                inaudible.append((speaker, words))
        turns.sort(key=lambda t: t.start_s)
        if inaudible:
            behaviour["reference_turns"] = [
                {"speaker": speaker, "text": " ".join(w[0] for w in words if w[0]), "start_s": round(words[0][1], 3),
                 "end_s": round(max(w[2] for w in words), 3)} for speaker, words in inaudible]
        if item.kind == "pause_handling":
            behaviour["pause_spans"] = [list(clamp_span(*e["timestamp"], duration, writer, where))
                                        for e in item.annotation]
            behaviour["takes_turn"] = False
        elif item.kind == "smooth_turn_taking":
            turn_end = clamp_span(*item.annotation[0]["timestamp"], duration, writer, where)[0]
            behaviour.update(turn_end_s=turn_end, respond_after_s=[turn_end])
            reply = sorted((w for _, words in inaudible for w in words if w[1] >= turn_end - 0.25), key=lambda w: w[1])
            if reply:
                user_turn = next(i for i, t in enumerate(turns) if t.speaker == "user")
                script.append({"turn": user_turn, "action": "speak", "text": " ".join(w[0] for w in reply if w[0])})
    gt_behaviour, gt_provenance = backchannel_targets(item, duration, writer, options)
    behaviour.update(gt_behaviour)
    _, sid = session_key(item)
    return Session(
        session_id=sid,
        task=TASK,
        audio_path=writer.write_audio(sid, clip.samples),
        duration_s=duration,
        turns=tuple(turns),
        expected={"reference_answer": None, "answer_aliases": [], "tool_calls": [], "script": script,
                  "behaviour": behaviour},
        provenance={"source": SOURCE, "source_id": f"{item.subset}/{item.folder.name}",
                    "source_path": source_path(item.folder, options.src), "subset": item.subset,
                    "source_sample_rate": clip.source_rate, "source_channels": clip.channels,
                    "converter_version": CONVERTER_VERSION, **gt_provenance},
    )


def interruption_turns(entry: dict, spans, duration: float, writer, where: str):
    """Turn 0: the context (VAD speech before the interruption); turn 1: the interruption window."""
    barge_start, barge_end = clamp_span(*entry["timestamp"], duration, writer, where)
    context = speech_before(spans, barge_start)
    if context is None:
        writer.warn("no_request_speech", f"{where}: no speech found before the interruption at {barge_start:.2f} s")
        context = (0.0, barge_start)
    turns = [
        Turn("user", "request", entry["context"].strip(), *context, (), True),
        Turn("user", "interruption", entry["interrupt"].strip(), barge_start, barge_end, (), True),
    ]
    behaviour = {"type": "user_interruption", "barge_in_s": barge_start,
                 "respond_after_s": [turns[0].end_s, barge_end]}
    return turns, behaviour, [{"turn": 1, "action": "stop"}]
