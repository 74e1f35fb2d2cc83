"""Generate a spoken session corpus: FLAC audio plus a ticktock manifest (format v1).

Usage::

    python -m ticktock.corpus.synth --out manifests/ticktock-mini --seed 0 --sessions-per-task 12 --split eval

This writes ``OUT/audio/<session_id>.flac`` (16 kHz mono, 16-bit) for every session and then
``OUT/manifest.jsonl``. Every file is written to a temporary name and renamed, and the manifest is written
only after all audio succeeded, so a failed run never leaves a partial manifest. The same arguments give
byte-identical files. ``OUT/made_by.json`` records the command and its options (written first): a folder that
holds another corpus (or another synth's files) is refused before any work unless ``--overwrite``, while the same
command run again writes its own output again (``ticktock.corpus.output_folder``). ``add_arguments`` / ``main``
let a parent CLI mount this as a subcommand.

Example::

    >>> import argparse
    >>> parser = argparse.ArgumentParser()
    >>> add_arguments(parser)
    >>> args = parser.parse_args(["--out", "corpus", "--seed", "0", "--sessions-per-task", "1", "--tasks", "fdb_v3"])
    >>> main(args)                                                           # doctest: +SKIP
    0
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Sequence

from ticktock.errors import ConfigError
from ticktock.results.names import named_path
from ticktock.sessions.audio import SAMPLE_RATE
from ticktock.sessions.manifest import Session, write_manifest
from ticktock.corpus.arguments import real_number, whole_number
from ticktock.corpus.layout import PlacedTurn, UtteranceTiming, place, resolve, session_samples
from ticktock.corpus.mixing import BACKGROUND_GAIN_DB, ROOM_TONE_DBFS, mix, room_tone, stable_seed, write_flac
from ticktock.corpus.output_folder import MadeBy, claim_output, write_record
from ticktock.corpus.script import SessionScript
from ticktock.corpus.piper_voice import engine_description, piper_voice
from ticktock.corpus.speech import SpokenText, Voice, pick_voice, speak
from ticktock.corpus.splits import SPLITS, SplitError, check_seed
from ticktock.corpus.tasks import BUILDERS, build_scripts
from ticktock.corpus.tasks.base import session_id
from ticktock.world.mock_tools import TOOL_SCHEMAS

GENERATOR_VERSION = "1"
USER_VOICES = ("espeak", "piper")
SOURCE = "ticktock-synth"
MAX_SEED = 2**32 - 1
MAX_SESSIONS_PER_TASK = 100_000
ROOM_TONE_RANGE_DBFS = (-120.0, -20.0)


class SynthOptionError(ConfigError):
    """A synth option that cannot be used: a seed of the other split, an unknown task (exit code 2)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The corpus options, for ``python -m ticktock.corpus.synth`` or a ``ticktock corpus synth`` subcommand."""
    parser.add_argument("--out", required=True, type=Path, help="output folder (manifest.jsonl + audio/)")
    parser.add_argument("--seed", required=True, type=whole_number(0, MAX_SEED),
                        help="eval seeds are < 1000000, train seeds >= 1000000")
    parser.add_argument("--sessions-per-task", required=True, type=whole_number(1, MAX_SESSIONS_PER_TASK),
                        help="sessions generated for each task")
    parser.add_argument("--split", default="eval", choices=SPLITS, help="item split (default: eval)")
    parser.add_argument("--tasks", default=",".join(BUILDERS), help="comma-separated task types (default: all 8)")
    parser.add_argument("--user-voice", default="espeak", choices=USER_VOICES,
                        help="who speaks the user's turns: eSpeak NG voices drawn per session (default), or Piper's "
                             "human-sounding en_US-joe-medium at a drawn rate (needs the voices extra); other "
                             "speakers stay eSpeak voices")
    parser.add_argument("--no-room-tone", dest="room_tone", action="store_false",
                        help="leave silence digitally silent instead of adding low-level room tone")
    parser.add_argument("--room-tone-dbfs", type=real_number(*ROOM_TONE_RANGE_DBFS), default=ROOM_TONE_DBFS,
                        help=f"room tone level, RMS dBFS (default {ROOM_TONE_DBFS})")
    parser.add_argument("--overwrite", action="store_true",
                        help="write into a folder that already holds another corpus (its manifest is replaced)")


def main(args: argparse.Namespace) -> int:
    """Generate the corpus described by ``args``; returns the process exit status."""
    tasks = parse_tasks(args.tasks)
    try:
        check_seed(args.split, args.seed)
    except SplitError as err:
        raise SynthOptionError(str(err)) from None
    if args.sessions_per_task < 1:
        raise SynthOptionError(f"--sessions-per-task must be >= 1, got {args.sessions_per_task}")
    started = time.perf_counter()
    tone_dbfs = args.room_tone_dbfs if args.room_tone else None
    sessions = generate(args.out, tasks, args.split, args.seed, args.sessions_per_task, tone_dbfs, args.user_voice,
                        overwrite=args.overwrite)
    print(summary(sessions, time.perf_counter() - started))
    return 0


def parse_tasks(text: str) -> list[str]:
    """``parse_tasks("fdb_v3, alpaca_eval") == ["fdb_v3", "alpaca_eval"]``; unknown names raise SynthOptionError."""
    tasks = [t.strip() for t in text.split(",") if t.strip()]
    unknown = [t for t in tasks if t not in BUILDERS]
    if unknown or not tasks:
        raise SynthOptionError(f"--tasks: unknown task(s) {unknown or text!r}; choose from {', '.join(BUILDERS)}")
    return tasks


def generate(out: Path, tasks: Sequence[str], split: str, seed: int, count: int,
             room_tone_dbfs: float | None = ROOM_TONE_DBFS, user_voice: str = "espeak",
             overwrite: bool = False) -> list[Session]:
    """Synthesize ``count`` sessions per task into ``out`` and write the manifest last (``user_voice``: see
    ``choose_voices``). ``out`` must not hold another corpus unless ``overwrite`` (``output_folder.claim_output``)."""
    out = Path(out)
    record = MadeBy("synth", {"--seed": seed, "--split": split, "--sessions-per-task": count, "--tasks": list(tasks),
                              "--user-voice": user_voice, "--room-tone-dbfs": room_tone_dbfs,
                              "generator": GENERATOR_VERSION})
    claim_output(out, record, {}, overwrite)
    write_record(out, record)
    sessions = []
    for task in tasks:
        for index, script in enumerate(build_scripts(task, split, seed, count)):
            sessions.append(render_session(script, out, split, seed, index, room_tone_dbfs, user_voice))
    write_manifest(out / "manifest.jsonl", sessions)
    return sessions


def render_session(script: SessionScript, out: Path, split: str, seed: int, index: int,
                   room_tone_dbfs: float | None, user_voice: str = "espeak") -> Session:
    """Speak, place and mix one session; write its FLAC and return its manifest entry."""
    sid = session_id(script.task, split, seed, index)
    voices = choose_voices(sid, script, user_voice)
    spoken = [speak(u.pieces, voices[u.speaker]) for u in script.utterances]
    placed = place(script.utterances, [UtteranceTiming(s.words, s.pause_spans) for s in spoken])
    audio_end = max(p.start_sample + s.samples.shape[0] for p, s in zip(placed, spoken)) / SAMPLE_RATE
    num_samples = session_samples(script, placed, audio_end)
    audio = mix_session(sid, num_samples, placed, spoken, room_tone_dbfs)
    audio_path = write_flac(named_path(out / "audio", sid, ".flac", "session_id", f"synth --split {split}",
                                       SynthOptionError), audio)
    return Session(
        session_id=sid,
        task=script.task,
        audio_path=audio_path,
        duration_s=round(num_samples / SAMPLE_RATE, 6),
        tools=tuple(TOOL_SCHEMAS) if script.uses_tools else (),
        turns=tuple(p.to_turn() for p in placed),
        expected=expected_json(script, placed),
        provenance=provenance_json(script, split, seed, voices, room_tone_dbfs),
    )


def choose_voices(sid: str, script: SessionScript, user_voice: str = "espeak") -> dict[str, Voice]:
    """The user's voice and, when someone else speaks, a different voice for them; seeded by the session id.

    ``user_voice="piper"``: the user is Piper's voice at the rate the eSpeak draw would have had (the draws are the
    same, so the other speaker's voice is too)."""
    rng = random.Random(f"voice:{sid}")
    user = pick_voice(rng)
    voices = {"user": piper_voice(user.rate_wpm) if user_voice == "piper" else user}
    if any(u.speaker == "other" for u in script.utterances):
        voices["other"] = pick_voice(rng, avoid=user.name)
    return voices


def mix_session(sid: str, num_samples: int, placed: Sequence[PlacedTurn], spoken: Sequence[SpokenText],
                room_tone_dbfs: float | None):
    bed = room_tone(num_samples, stable_seed(f"tone:{sid}"), room_tone_dbfs) if room_tone_dbfs is not None else None
    parts = [(p.start_sample, s.samples, BACKGROUND_GAIN_DB if p.utterance.speaker == "other" else 0.0)
             for p, s in zip(placed, spoken)]
    return mix(num_samples, parts, bed)


def expected_json(script: SessionScript, placed: Sequence[PlacedTurn]) -> dict:
    return {
        "reference_answer": script.reference_answer,
        "answer_aliases": script.answer_aliases,
        "answers": [dict(a) for a in script.answers],
        "tool_calls": [dict(c) for c in script.tool_calls],
        "script": resolve(list(script.actions), placed),
        "behaviour": resolve(script.behaviour, placed),
    }


def provenance_json(script: SessionScript, split: str, seed: int, voices: dict[str, Voice],
                    room_tone_dbfs: float | None) -> dict:
    return {
        "source": SOURCE,
        "generator_version": GENERATOR_VERSION,
        "seed": seed,
        "split": split,
        "item": script.item,
        "item_parts": list(script.item_parts),
        "voice": {speaker: voice.to_json() for speaker, voice in voices.items()},
        "tts": tts_description(voices),
        "room_tone_dbfs": room_tone_dbfs,
    }


def tts_description(voices: dict[str, Voice]) -> str:
    """The engines that spoke the session: eSpeak NG, and Piper with its versions when a voice is Piper's."""
    espeak = "espeak-ng (espeakng-loader)"
    return espeak if all(v.engine == "espeak" for v in voices.values()) else f"{engine_description()}; {espeak}"


def summary(sessions: Sequence[Session], seconds: float) -> str:
    """One line per task: sessions, chunks, median duration; then the totals."""
    lines = []
    for task in dict.fromkeys(s.task for s in sessions):
        mine = [s for s in sessions if s.task == task]
        chunks = sum(len(s.chunk_spans()) for s in mine)
        median = statistics.median(s.duration_s for s in mine)
        lines.append(f"{task:16s} sessions={len(mine):4d} chunks={chunks:5d} median_s={median:5.1f}")
    total = sum(len(s.chunk_spans()) for s in sessions)
    lines.append(f"total            sessions={len(sessions):4d} chunks={total:5d} in {seconds:.1f} s")
    return "\n".join(lines)


def cli(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ticktock.corpus.synth", description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    return main(parser.parse_args(argv))


if __name__ == "__main__":
    from ticktock.errors import user_errors

    with user_errors():
        sys.exit(cli())
