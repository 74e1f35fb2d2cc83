"""Full-Duplex-Bench v1.5: overlap handling (user interruption, user backchannel, talking to other,
background speech).

Published layout (``--src`` is the download folder, where the v1.5 subsets sit beside the v1.0 ones, or a
``v1_5/`` folder of them; ``--subsets`` picks some; a doubled ``X/X/{ID}`` nesting is followed)::

    user_interruption/{ID}/   input.wav (with the overlap), clean_input.wav (without it), metadata.json
    user_backchannel/{ID}/    ...
    talking_to_other/{ID}/    ...
    background_speech/{ID}/   ...

``metadata.json`` is ``{"context_text": str, "current_turn_text": str, "timestamps": [start_s, end_s]}``
(from the dataset README; no real file checked), the timestamps marking the overlap in input.wav. Read
here as: ``context_text`` is what the user said first (the request the model answers), and
``current_turn_text`` the words of the overlap event, which happens while the model replies. Without
``current_turn_text`` the subset's own text key is read (``backchannel_text``, ``interruption_text``, ...,
or the one other ``*_text`` key; named in ``provenance.overlap_text_key``); an overlap turn left without
text is reported (``no_overlap_text``).

The session is input.wav (resampled to 16 kHz mono). Turn 0 (the request, no word timings) spans the
speech that the energy VAD finds in clean_input.wav before the overlap; turn 1 is the overlap window:

==================  ======== ============ ================  ======================================
subset              speaker  role         script (turn 1)   behaviour
==================  ======== ============ ================  ======================================
user_interruption   user     interruption stop              barge_in_s; respond_after_s both turns
user_backchannel    user     backchannel  keep_speaking     backchannel_spans
talking_to_other    user     side_talk    keep_speaking     side_talk_spans, during_reply: true
background_speech   other    background   keep_speaking     background_spans
==================  ======== ============ ================  ======================================

Every behaviour also has ``overlap_s`` (the window). Task ``fdb_v1_5``, id ``fdb_v1_5-<subset>-<ID>``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ticktock.corpus.convert import CONVERTER_VERSION, ConvertError, Options, safe_id, source_path
from ticktock.corpus.convert.fdb_layout import (clamp_span, read_json, require, sample_folders, span, speech_before,
                                                subset_folders)
from ticktock.corpus.convert.vad import speech_spans
from ticktock.corpus.convert.writer import CorpusWriter
from ticktock.sessions.manifest import Session, Turn

SOURCE = "fdb_v1_5"
TASK = "fdb_v1_5"
SUBSETS = {  # subset -> (speaker, role, script action, behaviour type, spans key)
    "user_interruption": ("user", "interruption", "stop", "user_interruption", None),
    "user_backchannel": ("user", "backchannel", "keep_speaking", "user_backchannel", "backchannel_spans"),
    "talking_to_other": ("user", "side_talk", "keep_speaking", "talking_to_others", "side_talk_spans"),
    "background_speech": ("other", "background", "keep_speaking", "background_speech", "background_spans"),
}
VERSION_FOLDERS = ("v1_5", "v1.5")  # where a copy may keep the v1.5 subsets (default: --src itself)
OVERLAP_TEXT_KEYS = {  # subset -> its own text keys, read when current_turn_text is missing
    "user_interruption": ("interruption_text", "interrupt_text"),
    "user_backchannel": ("backchannel_text",),
    "talking_to_other": ("talking_to_other_text", "side_talk_text", "other_text"),
    "background_speech": ("background_speech_text", "background_text"),
}


@dataclass(frozen=True)
class Item:
    subset: str
    folder: Path
    context_text: str
    overlap_text: str
    overlap: tuple[float, float]
    overlap_text_key: str | None = None


def session_key(item: Item) -> tuple[str, str]:
    """(task type, session id) of the session an item becomes."""
    return TASK, f"{TASK}-{item.subset}-{safe_id(item.folder.name)}"


def overlap_text(meta: dict, subset: str) -> tuple[str, str | None]:
    """The overlap's words and the key they came from: ``current_turn_text``, else the subset's own key.

    >>> overlap_text({"context_text": "Any tips?", "backchannel_text": "Mm-hmm."}, "user_backchannel")
    ('Mm-hmm.', 'backchannel_text')
    >>> overlap_text({"context_text": "Any tips?"}, "user_backchannel")
    ('', None)
    """
    others = [k for k in meta if k.endswith("_text") and k not in ("context_text", "current_turn_text")]
    keys = ("current_turn_text", *OVERLAP_TEXT_KEYS[subset], *(others if len(others) == 1 else ()))
    for key in keys:
        if isinstance(meta.get(key), str) and meta[key].strip():
            return meta[key].strip(), key
    return "", None


def read_items(options: Options) -> list[Item]:
    items: list[Item] = []
    for subset, folder in subset_folders(options, SUBSETS, VERSION_FOLDERS).items():
        for sample in sample_folders(folder)[: options.limit]:
            require(sample / "input.wav")
            require(sample / "clean_input.wav")
            path = sample / "metadata.json"
            meta = read_json(path)
            if not isinstance(meta, dict) or "timestamps" not in meta:
                raise ConvertError(f"{path}: expected {{'context_text', 'current_turn_text', 'timestamps': [s, e]}}")
            text, key = overlap_text(meta, subset)
            items.append(Item(subset, sample, str(meta.get("context_text") or "").strip(), text,
                              span(meta["timestamps"], str(path)), key))
    return items


def build_session(item: Item, writer: CorpusWriter, options: Options) -> Session:
    wav, clean_wav = item.folder / "input.wav", item.folder / "clean_input.wav"
    clip = writer.read_audio(wav, str(wav))
    clean = writer.read_audio(clean_wav, str(clean_wav))
    duration = round(clip.duration_s, 6)
    where = str(item.folder)
    spans = speech_spans(clip.samples)
    writer.warn_if_silent(clip, spans, str(wav))
    start, end = clamp_span(*item.overlap, duration, writer, where)
    context = speech_before(speech_spans(clean.samples), start) or speech_before(spans, start)
    if context is None:
        writer.warn("no_request_speech", f"{wav}: no speech found before the overlap at {start:.2f} s")
        context = (0.0, start)
    speaker, role, action, kind, spans_key = SUBSETS[item.subset]
    if not item.overlap_text:
        writer.warn("no_overlap_text", f"{item.folder / 'metadata.json'}: no text for the overlap turn "
                                       f"(current_turn_text, {', '.join(OVERLAP_TEXT_KEYS[item.subset])})")
    turns = (
        Turn("user", "request", item.context_text, *context, (), True),
        Turn(speaker, role, item.overlap_text, start, end, (), item.subset == "user_interruption"),
    )
    behaviour: dict = {"type": kind, "overlap_s": [start, end]}
    if item.subset == "user_interruption":
        behaviour.update(barge_in_s=start, respond_after_s=[context[1], end])
    else:
        behaviour.update({spans_key: [[start, end]], "respond_after_s": [context[1]]})
        if item.subset == "talking_to_other":
            behaviour["during_reply"] = True
    _, sid = session_key(item)
    return Session(
        session_id=sid,
        task=TASK,
        audio_path=writer.write_audio(sid, clip.samples),
        duration_s=duration,
        turns=turns,
        expected={"reference_answer": None, "answer_aliases": [], "tool_calls": [],
                  "script": [{"turn": 1, "action": action}], "behaviour": behaviour},
        provenance={"source": SOURCE, "source_id": f"{item.subset}/{item.folder.name}",
                    "source_path": source_path(item.folder, options.src), "subset": item.subset,
                    "source_sample_rate": clip.source_rate, "source_channels": clip.channels,
                    "converter_version": CONVERTER_VERSION,
                    **({"overlap_text_key": item.overlap_text_key} if item.overlap_text_key else {})},
    )

