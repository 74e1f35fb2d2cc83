"""Sessions made of one spoken question: leading silence, the question clip, room for the reply.

Used for the single-utterance sources (OpenAudioBench, VoiceBench, Big Bench Audio). The clip is placed
after ``lead_s`` of silence (default 1.0 s) and followed by enough silence for the reply: 0.3 s per word
of the reference answer + 3 s, or ``tail_unknown_s`` (default 8 s) when there is no reference answer.
The tail is counted from the end of the speech, so a clip's own trailing silence counts toward it. The
sources have no word timings, so the turn has no words; its span is the speech that the energy VAD finds
in the clip (the whole clip, with a warning, when it finds none).

Example::

    >>> tail_s("Leo Tolstoy", 8.0), tail_s(None, 8.0)
    (3.6, 8.0)
"""

from __future__ import annotations

import numpy as np

from ticktock.sessions.audio import SAMPLE_RATE
from ticktock.corpus.convert.vad import speech_spans
from ticktock.corpus.convert.writer import CorpusWriter, SourceClip
from ticktock.sessions.manifest import Session, Turn

SECONDS_PER_ANSWER_WORD = 0.3
TAIL_BASE_S = 3.0


def tail_s(reference_answer: str | None, unknown_s: float) -> float:
    """Silence left for the reply after the question ends."""
    if not reference_answer or not reference_answer.strip():
        return unknown_s
    return round(len(reference_answer.split()) * SECONDS_PER_ANSWER_WORD + TAIL_BASE_S, 3)


def answers_json(reference: str | None, aliases: list[str]) -> dict:
    """The ``expected`` answer fields of a one-question session."""
    if not reference:
        return {"reference_answer": None, "answer_aliases": [], "answers": []}
    return {"reference_answer": reference, "answer_aliases": list(aliases),
            "answers": [{"turn": 0, "reference_answer": reference, "answer_aliases": list(aliases)}]}


def utterance_session(writer: CorpusWriter, clip: SourceClip, label: str, *, session_id: str, task: str,
                      text: str, lead_s: float, tail_unknown_s: float, reference_answer: str | None = None,
                      answer_aliases: list[str] | None = None, behaviour: dict, script: list | None = None,
                      provenance: dict) -> Session:
    """Lay out, stage and describe a one-question session; ``behaviour`` gets ``respond_after_s``."""
    spans = speech_spans(clip.samples)
    writer.warn_if_silent(clip, spans, label)
    speech_start, speech_end = (spans[0][0], spans[-1][1]) if spans else (0.0, clip.duration_s)
    lead = int(round(lead_s * SAMPLE_RATE))
    turn_start = round((lead + int(round(speech_start * SAMPLE_RATE))) / SAMPLE_RATE, 3)
    turn_end = round((lead + int(round(speech_end * SAMPLE_RATE))) / SAMPLE_RATE, 3)
    tail = tail_s(reference_answer, tail_unknown_s)
    total = max(lead + clip.samples.shape[0], int(round((turn_end + tail) * SAMPLE_RATE)))
    audio = np.zeros(total, dtype=np.float32)
    audio[lead : lead + clip.samples.shape[0]] = clip.samples
    duration = round(total / SAMPLE_RATE, 6)
    turn = Turn("user", "request", text, turn_start, min(turn_end, duration), expects_response=True)
    expected = {
        **answers_json(reference_answer, answer_aliases or []),
        "tool_calls": [],
        "script": list(script or []),
        "behaviour": {**behaviour, "respond_after_s": [turn.end_s]},
    }
    layout = {"lead_s": round(lead / SAMPLE_RATE, 6), "tail_s": tail, "clip_s": round(clip.duration_s, 6),
              "source_sample_rate": clip.source_rate, "source_channels": clip.channels}
    return Session(
        session_id=session_id,
        task=task,
        audio_path=writer.write_audio(session_id, audio),
        duration_s=duration,
        turns=(turn,),
        expected=expected,
        provenance={**provenance, "layout": layout},
    )
