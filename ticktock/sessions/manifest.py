"""Session manifests: the versioned JSONL format that every replay starts from.

One line of a manifest is one recorded session. Format version 1 (``"schema_version": 1``):

.. code-block:: json

    {"schema_version": 1,
     "session_id": "fdb_v3-0003",                 # unique within the manifest; a name (below)
     "task": "fdb_v3",                            # task type (see TASK_TYPES; free string allowed)
     "audio": "audio/fdb_v3-0003.flac",           # relative to the manifest file (absolute also accepted)
     "duration_s": 21.4,                          # length of the audio in seconds
     "chunk_s": 1.0,                              # chunk duration D (default 1.0)
     "first_chunk_s": null,                       # optional longer first chunk (MiniCPM-o: 1.035)
     "system_prompt": null,                       # optional; null = the model's default prompt
     "tools": [{"name": "search_flights", "description": "...", "parameters": {...}}],
     "turns": [{"speaker": "user", "role": "request", "text": "Find me a flight to Tokyo.",
                "start_s": 1.6, "end_s": 3.1, "expects_response": true,
                "words": [{"text": "Find", "start_s": 1.6, "end_s": 1.85}, ...]}],
     "expected": {"reference_answer": null, "answer_aliases": [],
                  "tool_calls": [{"function": "search_flights", "args": {"destination": "Tokyo"}}],
                  "script": [...], "behaviour": {...}},
     "provenance": {"source": "ticktock-synth", "seed": 7}}

Turns: ``speaker`` is ``"user"`` (the person talking to the model) or ``"other"`` (a second voice in the
room). ``role`` says what the turn is for (``request``, ``statement``, ``backchannel``, ``interruption``,
``side_talk``, ``background``, ...). ``words`` may be empty when the source has no word timings; then
``user_speaking`` falls back to the turn span. ``expected`` and ``provenance`` are free-form objects
whose listed keys are type-checked when present.

``session_id`` names files (the session's audio when a corpus is converted or a dataset unpacked, its result parts),
so it is a name of :mod:`ticktock.results.names`: 1 to 128 ASCII letters, digits, ``.``, ``_`` or ``-``, the first a
letter or digit (``fdb_v3-eval-0-0008``); anything else (``/``, ``..``, a space, a NUL, other scripts) is a
``ManifestError`` naming the file, line and field.

Ranges (``ManifestError`` naming the file, line and field outside them): ``chunk_s`` from ``MIN_CHUNK_S`` (20 ms,
the shortest frame of a speech codec or streaming audio front-end: no model emits a unit for less) to
``MAX_CHUNK_S`` (60 s: a chunk-interleaved model streams, and even a minute-long chunk is far beyond any such
model); ``first_chunk_s`` from ``chunk_s`` to ``MAX_CHUNK_S``; ``duration_s`` up to ``MAX_DURATION_S`` (24 h), and
at most ``MAX_CHUNKS`` chunks per session (55 h of 1 s chunks, 4.4 h of 80 ms ones); every time is a finite
number. A line is UTF-8 JSON nested at most as deep as Python's JSON reader allows (about 1000 levels). A reply action of ``expected.script`` (``speak``,
``speak_after_tools``, ``backchannel``) may carry ``variants``, a list of other phrasings of its ``text``
(non-empty strings).

Example::

    >>> from ticktock.shipped import resource_path
    >>> sessions = load_manifest(resource_path("manifests/ticktock-mini/manifest.jsonl"))
    >>> s = sessions[0]
    >>> [c.end_s for c in s.chunk_spans()][:3]
    [1.0, 2.0, 3.0]
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable, Iterator

from ticktock.results.atomic import atomic_write
from ticktock.results.names import checked_name
from ticktock.errors import InputDataError, shown

SCHEMA_VERSION = 1

TASK_TYPES = (
    "llama_questions",
    "web_questions",
    "trivia_qa",
    "alpaca_eval",
    "big_bench_audio",
    "fdb_v1",
    "fdb_v1_5",
    "fdb_v3",
)
SPEAKERS = ("user", "other")


class ManifestError(InputDataError, ValueError):
    """A manifest line is malformed. The message names the file, the line and the field."""


MIN_CHUNK_S = 0.02
MAX_CHUNK_S = 60.0
MAX_DURATION_S = 86_400.0
MAX_CHUNKS = 200_000


@dataclass(frozen=True)
class Word:
    text: str
    start_s: float
    end_s: float


@dataclass(frozen=True)
class Turn:
    speaker: str
    role: str
    text: str
    start_s: float
    end_s: float
    words: tuple[Word, ...] = ()
    expects_response: bool = False

    def speech_spans(self) -> list[tuple[float, float]]:
        """Spans with speech: the words when timed, else the whole turn."""
        if self.words:
            return [(w.start_s, w.end_s) for w in self.words]
        return [(self.start_s, self.end_s)]


@dataclass(frozen=True)
class ChunkSpan:
    """One chunk of a session: audio [start_s, end_s); it arrives (is complete) at end_s."""

    index: int
    start_s: float
    end_s: float
    user_speaking: bool

    @property
    def duration_s(self) -> float:
        return self.end_s - self.start_s


@dataclass(frozen=True)
class Session:
    session_id: str
    task: str
    audio_path: Path
    duration_s: float
    chunk_s: float = 1.0
    first_chunk_s: float | None = None
    system_prompt: str | None = None
    tools: tuple[dict, ...] = ()
    turns: tuple[Turn, ...] = ()
    expected: dict = field(default_factory=dict)
    provenance: dict = field(default_factory=dict)
    manifest_path: Path | None = None
    manifest_line: int | None = None  # the session's line in manifest_path (for error messages)

    def chunk_spans(self) -> list[ChunkSpan]:
        """Cut the session into chunks; a final partial chunk is kept (the adapter zero-pads it). A chunk is
        ``user_speaking`` when a user speech span overlaps it (one pass over the spans sorted by start: the
        furthest end among the spans that start before the chunk ends reaches into it)."""
        edges = [0.0]
        first = self.first_chunk_s or self.chunk_s
        edge = first
        while True:
            edges.append(edge)
            if edge >= self.duration_s - 1e-9:
                break
            edge += self.chunk_s
        spans = sorted(self.user_speech_spans())
        chunks, started, reach = [], 0, -math.inf
        for i, (a, b) in enumerate(zip(edges[:-1], edges[1:])):
            while started < len(spans) and spans[started][0] < b:
                reach = max(reach, spans[started][1])
                started += 1
            chunks.append(ChunkSpan(i, a, b, reach > a))
        return chunks

    def user_speech_spans(self) -> list[tuple[float, float]]:
        return [span for t in self.turns if t.speaker == "user" for span in t.speech_spans()]

    def told_to_model(self) -> "Session":
        """The session as a model and its decoder are told it: its id, task, chunk timing, audio file, system prompt
        and tool schemas, and none of its annotations (turns and their words, expected answers and replies,
        provenance are empty), so a decoder cannot draft from the transcript or the reference reply. The engine
        hands this view to ``Decoder.start_session`` and keeps it in the replay state a decoder's steps reach.

        >>> s = Session("s1", "fdb_v3", Path("a.flac"), 3.0, turns=(Turn("user", "user", "hi", 0.0, 1.0),),
        ...             expected={"reference_answer": "hello"})
        >>> told = s.told_to_model()
        >>> told.session_id, told.turns, told.expected, told.duration_s
        ('s1', (), {}, 3.0)
        """
        return replace(self, turns=(), expected={}, provenance={})

    def to_json(self) -> dict:
        """The manifest line for this session (audio path relative to ``manifest_path``'s folder)."""
        audio = self.audio_path
        if self.manifest_path is not None:
            audio = Path(os.path.relpath(self.audio_path, self.manifest_path.parent))
        return {
            "schema_version": SCHEMA_VERSION,
            "session_id": self.session_id,
            "task": self.task,
            "audio": audio.as_posix(),
            "duration_s": self.duration_s,
            "chunk_s": self.chunk_s,
            "first_chunk_s": self.first_chunk_s,
            "system_prompt": self.system_prompt,
            "tools": list(self.tools),
            "turns": [_turn_json(t) for t in self.turns],
            "expected": self.expected,
            "provenance": self.provenance,
        }


def _turn_json(turn: Turn) -> dict:
    data = asdict(turn)
    data["words"] = [asdict(w) for w in turn.words]
    return data


# ---------------------------------------------------------------------------------------------- loading


class _Line:
    """Field access for one manifest line that reports errors with file, line and field."""

    def __init__(self, data: Any, where: str):
        if not isinstance(data, dict):
            raise ManifestError(f"{where}: expected a JSON object, got {type(data).__name__}")
        self.data = data
        self.where = where

    def fail(self, name: str, problem: str) -> ManifestError:
        return ManifestError(f"{self.where}: field '{name}': {problem}")

    def get(self, name: str, kind: type | tuple, default: Any = ..., data: dict | None = None) -> Any:
        data = self.data if data is None else data
        if name not in data or data[name] is None:
            if default is ...:
                raise self.fail(name, "missing")
            return default
        value = data[name]
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            if abs(value) > 1e300:
                raise self.fail(name, "not a finite number: an integer beyond 1e300")
            value = float(value)
        if not isinstance(value, kind) or (kind in (int, float) and isinstance(value, bool)):
            wanted = kind.__name__ if isinstance(kind, type) else "/".join(k.__name__ for k in kind)
            raise self.fail(name, f"expected {wanted}, got {type(value).__name__} {shown(value)}")
        if isinstance(value, float) and not math.isfinite(value):
            raise self.fail(name, f"not a finite number: {value}")
        return value


def parse_session(data: Any, where: str, base_dir: Path) -> Session:
    """Validate one decoded manifest line. ``where`` is "file:line" for error messages."""
    line = _Line(data, where)
    version = line.get("schema_version", int)
    if version != SCHEMA_VERSION:
        raise line.fail("schema_version", f"unsupported version {version} (this TickTock reads {SCHEMA_VERSION})")
    session_id = checked_name(line.get("session_id", str), "session_id", where, ManifestError)
    task = line.get("task", str)
    audio = line.get("audio", str)
    if not audio.strip() or "\x00" in audio:
        raise line.fail("audio", f"must be a file path, got {shown(audio)}")
    duration, chunk_s, first = _chunk_clock(line)
    tools = line.get("tools", list, [])
    for i, tool in enumerate(tools):
        if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
            raise line.fail(f"tools[{i}]", "expected an object with a string 'name'")
    turns = tuple(_parse_turn(line, i, t, duration) for i, t in enumerate(line.get("turns", list, [])))
    expected = line.get("expected", dict, {})
    _check_expected(line, expected)
    return Session(
        session_id=session_id,
        task=task,
        audio_path=(base_dir / audio),
        duration_s=duration,
        chunk_s=chunk_s,
        first_chunk_s=first,
        system_prompt=line.get("system_prompt", str, None),
        tools=tuple(tools),
        turns=turns,
        expected=expected,
        provenance=line.get("provenance", dict, {}),
    )


def _chunk_clock(line: _Line) -> tuple[float, float, float | None]:
    """``duration_s``, ``chunk_s`` and ``first_chunk_s``, each in its range (module docstring), and the number of
    chunks they make at most ``MAX_CHUNKS``."""
    duration = line.get("duration_s", float)
    if not 0 < duration <= MAX_DURATION_S:
        raise line.fail("duration_s", f"must be > 0 and at most {MAX_DURATION_S:g} s (24 h), got {duration}")
    chunk_s = line.get("chunk_s", float, 1.0)
    if not MIN_CHUNK_S <= chunk_s <= MAX_CHUNK_S:
        raise line.fail("chunk_s", f"must be from {MIN_CHUNK_S:g} to {MAX_CHUNK_S:g} s, got {chunk_s}")
    first = line.get("first_chunk_s", float, None)
    if first is not None and not chunk_s <= first <= MAX_CHUNK_S:
        raise line.fail("first_chunk_s", f"must be from chunk_s ({chunk_s}) to {MAX_CHUNK_S:g} s, got {first}")
    chunks = 1 + math.ceil(max(0.0, duration - (first or chunk_s)) / chunk_s)
    if chunks > MAX_CHUNKS:
        raise line.fail("duration_s", f"{duration} s in chunks of {chunk_s} s is {chunks} chunks; at most "
                                      f"{MAX_CHUNKS} per session (split the recording)")
    return duration, chunk_s, first


def _parse_turn(line: _Line, i: int, data: Any, duration: float) -> Turn:
    name = f"turns[{i}]"
    if not isinstance(data, dict):
        raise line.fail(name, "expected an object")
    speaker = line.get("speaker", str, data=data)
    if speaker not in SPEAKERS:
        raise line.fail(f"{name}.speaker", f"expected one of {SPEAKERS}, got {shown(speaker)}")
    start = line.get("start_s", float, data=data)
    end = line.get("end_s", float, data=data)
    if not 0 <= start <= end <= duration + 1e-6:
        raise line.fail(f"{name}.start_s/end_s", f"need 0 <= start <= end <= duration ({duration}), got {start}, {end}")
    words = []
    previous = start
    for j, w in enumerate(line.get("words", list, [], data=data)):
        where = f"{name}.words[{j}]"
        if not isinstance(w, dict):
            raise line.fail(where, "expected an object")
        try:
            word = Word(str(w["text"]), float(w["start_s"]), float(w["end_s"]))
        except (KeyError, TypeError, ValueError, OverflowError) as err:
            raise line.fail(where, f"needs text, start_s, end_s ({err})") from None
        if not (previous - 1e-6 <= word.start_s <= word.end_s <= end + 1e-6):
            raise line.fail(where, f"timing {word.start_s}-{word.end_s} is not monotonic inside the turn {start}-{end}")
        previous = word.start_s
        words.append(word)
    return Turn(
        speaker=speaker,
        role=line.get("role", str, "statement", data=data),
        text=line.get("text", str, "", data=data),
        start_s=start,
        end_s=end,
        words=tuple(words),
        expects_response=line.get("expects_response", bool, False, data=data),
    )


def _check_expected(line: _Line, expected: dict) -> None:
    line.get("reference_answer", str, None, data=expected)
    aliases = line.get("answer_aliases", list, [], data=expected)
    if not all(isinstance(a, str) for a in aliases):
        raise line.fail("expected.answer_aliases", "expected a list of strings")
    for i, call in enumerate(line.get("tool_calls", list, [], data=expected)):
        if not (isinstance(call, dict) and isinstance(call.get("function"), str) and isinstance(call.get("args"), dict)):
            raise line.fail(f"expected.tool_calls[{i}]", 'expected {"function": str, "args": {...}}')
    script = expected.get("script")
    for i, action in enumerate(script if isinstance(script, list) else []):
        variants = action.get("variants") if isinstance(action, dict) else None
        if variants is not None and not (isinstance(variants, list)
                                         and all(isinstance(v, str) and v.strip() for v in variants)):
            raise line.fail(f"expected.script[{i}].variants", f"expected a list of non-empty strings, got {shown(variants)}")


def load_manifest(path: str | os.PathLike, tasks: Iterable[str] | None = None) -> list[Session]:
    """Read and validate a whole manifest before any work starts.

    Raises ManifestError naming file, line and field on the first bad line (bad UTF-8 or JSON included), and on
    duplicate ids. ``tasks`` keeps only sessions of those task types (None keeps all).

    Example::

        >>> import tempfile
        >>> bad = Path(tempfile.mkdtemp()) / "m.jsonl"
        >>> _ = bad.write_bytes(b'{"session_id": "caf\\xe9"}\\n')
        >>> load_manifest(bad)
        Traceback (most recent call last):
        ...
        ticktock.sessions.manifest.ManifestError: .../m.jsonl:1: not UTF-8 text (byte 0xe9 at column 20)
    """
    path = Path(path)
    if not path.is_file():
        raise ManifestError(f"{path}: manifest not found")
    wanted = set(tasks) if tasks is not None else None
    sessions: list[Session] = []
    seen: dict[str, int] = {}
    for number, raw in _lines(path):
        if not raw.strip():
            continue
        where = f"{path}:{number}"
        session = parse_session(_decode_line(raw, where), where, path.parent)
        if session.session_id in seen:
            raise ManifestError(
                f"{where}: field 'session_id': duplicate id {session.session_id!r} (first on line {seen[session.session_id]})"
            )
        seen[session.session_id] = number
        if wanted is None or session.task in wanted:
            sessions.append(_with_manifest(session, path, number))
    return sessions


def _lines(path: Path) -> Iterator[tuple[int, bytes]]:
    """The file's lines as bytes, numbered from 1; a file that cannot be read is a ``ManifestError``."""
    try:
        with path.open("rb") as handle:
            yield from enumerate(handle, start=1)
    except OSError as err:
        raise ManifestError(f"{path}: cannot read the manifest ({err.strerror or err})") from None


def _decode_line(raw: bytes, where: str) -> Any:
    """One line's JSON value; bad UTF-8, bad JSON and JSON nested too deeply are ``ManifestError`` lines."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ManifestError(f"{where}: not UTF-8 text (byte 0x{raw[err.start]:02x} at column {err.start + 1})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise ManifestError(f"{where}: not valid JSON ({err.msg} at column {err.colno})") from None
    except RecursionError:
        raise ManifestError(f"{where}: not a session (JSON nested too deeply)") from None
    except ValueError as err:  # e.g. an integer of more digits than Python converts
        raise ManifestError(f"{where}: not valid JSON ({err})") from None


def _with_manifest(session: Session, path: Path, line: int | None = None) -> Session:
    return replace(session, manifest_path=path, manifest_line=line)


def write_manifest(path: str | os.PathLike, sessions: Iterable[Session]) -> Path:
    """Write sessions as JSONL atomically (temp file in the same folder, then rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = []
    for session in sessions:
        lines.append(json.dumps(replace(session, manifest_path=path).to_json(), ensure_ascii=False, sort_keys=False))
    with atomic_write(path) as tmp:
        tmp.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


# ------------------------------------------------------------------------------------ duration vs. audio

AUDIO_DURATION_POLICIES = ("check", "trust_audio")
DURATION_TOLERANCE_S = 0.1  # converters round durations to the millisecond; 0.1 s never adds or drops a chunk's speech


def check_audio_durations(sessions: list[Session], policy: str = "check",
                          skip_unreadable: bool = False) -> list[Session]:
    """Compare every session's ``duration_s`` with its audio file's header (cheap: no samples are decoded).

    ``policy="check"`` (the run option ``audio_duration``'s default): a difference beyond
    max(``DURATION_TOLERANCE_S``, one sample of the file) is a ``ManifestError`` naming the manifest file and
    line, the session and both durations. A longer ``duration_s`` would replay zero padding as chunks (marked
    as user speech when a turn spans them); a shorter one would drop the rest of the recording.
    ``policy="trust_audio"``: every session takes its audio's duration instead. Audio whose header cannot be
    read is an ``AudioError`` unless ``skip_unreadable`` (the run skips such sessions later).

    Example::

        >>> from ticktock.shipped import resource_path
        >>> s = load_manifest(resource_path("manifests/ticktock-mini/manifest.jsonl"))[0]
        >>> check_audio_durations([s])[0] is s              # within the tolerance: unchanged
        True
        >>> too_long = replace(s, duration_s=s.duration_s + 30)
        >>> check_audio_durations([too_long])
        Traceback (most recent call last):
        ...
        ticktock.sessions.manifest.ManifestError: ...manifest.jsonl:1: session '...': duration_s is ... s but its audio ... lasts ... s (30.0 s longer than the audio; tolerance 0.1 s); fix duration_s or run with audio_duration=trust_audio
        >>> abs(check_audio_durations([too_long], "trust_audio")[0].duration_s - s.duration_s) < 0.01
        True
    """
    from ticktock.sessions.audio import AudioError, audio_header

    if policy not in AUDIO_DURATION_POLICIES:
        raise ValueError(f"audio_duration: must be one of {', '.join(AUDIO_DURATION_POLICIES)}, got {policy!r}")
    checked = []
    for session in sessions:
        try:
            actual, rate = audio_header(session.audio_path)
        except AudioError:
            if not skip_unreadable:
                raise
            checked.append(session)
            continue
        if policy == "trust_audio":
            checked.append(session if actual == session.duration_s else replace(session, duration_s=actual))
            continue
        if abs(actual - session.duration_s) > max(DURATION_TOLERANCE_S, 1.0 / rate):
            raise ManifestError(_duration_mismatch(session, actual))
        checked.append(session)
    return checked


def _duration_mismatch(session: Session, actual: float) -> str:
    where = f"{session.manifest_path}:{session.manifest_line}" if session.manifest_path else "manifest"
    difference = session.duration_s - actual
    side = "longer" if difference > 0 else "shorter"
    return (f"{where}: session {session.session_id!r}: duration_s is {session.duration_s:g} s but its audio "
            f"{session.audio_path} lasts {actual:.3f} s ({abs(difference):.1f} s {side} than the audio; tolerance "
            f"{DURATION_TOLERANCE_S:g} s); fix duration_s or run with audio_duration=trust_audio")
