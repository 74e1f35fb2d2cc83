"""Listen to a session as its user would have heard it: the user's audio and the assistant's speech, in the report.

A run with a talker (``talker=espeak|piper|modeled``) records, for every speak chunk, the text its talker spoke
(``talker_text``), the digest of that audio's samples (``audio_sha256``) and when it started to play
(``playback_start_ms`` after the chunk's arrival: ``ticktock.results.playback``). The samples themselves are not
kept; they are made again here: the run's talker is rebuilt from run.json ``config.talker`` (talkers are
deterministic) and every piece must hash to the run's digest, else the talker changed since the run and the track
is refused in one line. A **track** is one session under one decoder: the session's audio (16 kHz, from the task's
manifest, its file's digest checked against the run's) plus each piece resampled to 16 kHz and placed at
``1000 * arrival_s + playback_start_ms``, mixed into one mono track as long as the session, or until the last
piece ends when that is later. It goes into report.html as Ogg Opus in a data: URI (no network), under the session
viewer, whose timeline cursor follows it (``ticktock.tables.viewer``).

Which sessions (``listen_choice``): those named with ``python -m ticktock.tables ... --listen SESSION_ID``, in every
talker setup holding them, one track per decoder; by default the case studies' sessions of each talker setup
(``ticktock.tables.cases``; its first session when the cases pick none); runs without a talker get no track.

Example (one piece of 0.5 s, played 300 ms after the arrival of a chunk arriving at 1 s, in a 2 s session)::

    >>> import numpy as np
    >>> user = np.zeros(32_000, dtype=np.float32)
    >>> track = mix(user, [(1300.0, np.full(8_000, 0.5, dtype=np.float32))], duration_s=2.0)
    >>> len(track) / SAMPLE_RATE, float(track[20_800]), float(track[20_799])
    (2.0, 0.5, 0.0)
"""

from __future__ import annotations

import base64
import html
import io
import json
import re
from dataclasses import dataclass, replace

import numpy as np

from ticktock.sessions.audio import SAMPLE_RATE
from ticktock.tables.cases import Case, pick_cases, run_with
from ticktock.tables.common import setup_label
from ticktock.tables.load import Results, Run, Setup, TablesError
from ticktock.tables.viewer import chosen_sessions

LISTED = 8  # session ids named in an error message before "..."


@dataclass(frozen=True)
class Track:
    """One session as heard under one decoder: ``samples`` at 16 kHz (user + assistant, mono), and the ``pieces``
    of the assistant's speech placed in it."""

    run_id: str
    decoder: str
    session_id: str
    setup: str  # the setup's label
    talker: str
    samples: np.ndarray
    pieces: int

    @property
    def duration_s(self) -> float:
        return len(self.samples) / SAMPLE_RATE


def listen_choice(results: Results, requested: tuple[str, ...] = (), cases: list[Case] = (),
                  baseline: str = "ar") -> list[tuple[Setup, str]]:
    """(talker setup, session id) of every track to make: ``requested`` sessions in each talker setup holding them
    (an unknown one: a ``TablesError`` naming it and the sessions there are), else each talker setup's case-study
    sessions (``cases`` of that setup, or ``pick_cases`` within it; its first session when there is none). Runs of one
    session alone on the device only (as the viewer shows); never a live run (the server's talker spoke it: its audio
    cannot be re-synthesized here)."""
    results = results.single_session()
    talking = [s for s in results.setups() if s.speaks and not s.live]  # a live run's talker is the server's
    if requested:
        return [(setup, session_id) for session_id in dict.fromkeys(requested)
                for setup in _holders(results, talking, session_id)]
    chosen = []
    for setup in talking:
        within = replace(results, cells=results.in_setup(setup))
        picked = [c.session_id for c in cases if c.setup == setup] or [c.session_id for c in pick_cases(within, baseline)]
        chosen += [(setup, s) for s in dict.fromkeys(picked or chosen_sessions(within, 1))]
    return chosen


def _holders(results: Results, talking: list[Setup], session_id: str) -> list[Setup]:
    if not talking:
        raise TablesError(f"--listen {session_id}: no run among the results has a talker (their speech was not "
                          "synthesized); replay with talker=espeak, piper or modeled to listen to a session")
    holders = [s for s in talking if any((c.sessions["session_id"] == session_id).any() for c in results.in_setup(s))]
    if holders:
        return holders
    known = sorted({sid for s in talking for c in results.in_setup(s) for sid in c.sessions["session_id"]})
    shown = ", ".join(known[:LISTED]) + (f", ... ({len(known)} in all)" if len(known) > LISTED else "")
    raise TablesError(f"--listen {session_id}: no run with a talker holds this session (sessions there: {shown})")


class Voices:
    """The talkers of the runs, rebuilt once per talker config, and the audio each made (16 kHz, by text)."""

    def __init__(self):
        self._talkers: dict[str, object] = {}
        self._audio: dict[tuple[str, str], tuple[str, np.ndarray]] = {}

    def talker(self, run: Run):
        """The run's talker, rebuilt from run.json ``config.talker`` (``name`` is a label, not an argument)."""
        node = run.meta["config"].get("talker") or {}
        key = json.dumps(node, sort_keys=True)
        if key not in self._talkers:
            self._talkers[key] = _rebuild(run, node)
        return key, self._talkers[key]

    def piece(self, run: Run, text: str) -> tuple[str, np.ndarray]:
        """(sha256 of the talker's samples, the samples resampled to 16 kHz) of ``text`` spoken by the run's talker."""
        from ticktock.replay.speech_out import samples_sha256
        from ticktock.sessions.audio import resample

        key, talker = self.talker(run)
        if (key, text) not in self._audio:
            samples = talker.synthesize(text)
            self._audio[key, text] = (samples_sha256(samples), resample(samples, talker.sample_rate, SAMPLE_RATE))
        return self._audio[key, text]


def _rebuild(run: Run, node: dict):
    from omegaconf import OmegaConf

    from ticktock.errors import TickTockError, one_line
    from ticktock.replay.config import build_checked
    from ticktock.talkers.base import Talker

    if not node.get("_target_"):
        raise TablesError(f"{run.path / 'run.json'}: config.talker has no _target_: its talker cannot be rebuilt")
    try:
        return build_checked(OmegaConf.create({"talker": node}).talker, "talker", Talker)
    except TickTockError as err:
        raise TablesError(f"{run.path / 'run.json'}: cannot rebuild its talker from config.talker to listen "
                          f"({one_line(err)})") from None


class Manifests:
    """The sessions of the runs' manifests (run.json ``config.task.manifest``), each manifest read once."""

    def __init__(self):
        self._read: dict[str, dict] = {}

    def audio(self, run: Run, session_id: str) -> np.ndarray:
        """The session's audio at 16 kHz, its file checked against the digest the run recorded (``audio_sha256``)."""
        from ticktock.errors import TickTockError, one_line
        from ticktock.results.fingerprint import file_sha256
        from ticktock.sessions.audio import load_audio
        from ticktock.sessions.manifest import load_manifest

        task = run.meta["config"].get("task") or {}
        manifest = task.get("manifest")
        if not isinstance(manifest, str) or not manifest:
            raise TablesError(f"{run.path / 'run.json'}: config.task.manifest is not a file name: the audio of session "
                              f"{session_id} cannot be found to listen to it")
        try:
            if manifest not in self._read:
                self._read[manifest] = {s.session_id: s for s in load_manifest(manifest)}
            session = self._read[manifest].get(session_id)
            if session is None:
                raise TablesError(f"{manifest}: no session {session_id} (run {run.path} replayed it from this manifest; "
                                  "was it edited since?)")
            recorded = run.sessions.loc[run.sessions["session_id"] == session_id, "audio_sha256"].iloc[0]
            if isinstance(recorded, str) and recorded and file_sha256(session.audio_path) != recorded:
                raise TablesError(f"{session.audio_path}: not the audio run {run.path} replayed as session {session_id} "
                                  "(its sha256 differs from the run's audio_sha256): the file changed since the run")
            return load_audio(session.audio_path)
        except TablesError:
            raise
        except TickTockError as err:  # a manifest or audio file gone or unreadable
            raise TablesError(f"--listen {session_id}: {one_line(err)}") from None


def mix(user: np.ndarray, pieces: list[tuple[float, np.ndarray]], duration_s: float) -> np.ndarray:
    """The user's audio (cut or padded to ``duration_s``) and each piece (its start in ms from the session's start,
    its 16 kHz samples) added in, the track as long as the session or until the last piece ends; scaled down only
    where the sum would clip (peak above 1)."""
    length = int(round(duration_s * SAMPLE_RATE))
    placed = [(int(round(start_ms * SAMPLE_RATE / 1000.0)), samples) for start_ms, samples in pieces]
    length = max([length] + [start + len(samples) for start, samples in placed])
    track = np.zeros(length, dtype=np.float32)
    user = user[: int(round(duration_s * SAMPLE_RATE))]
    track[: len(user)] = user
    for start, samples in placed:
        track[start: start + len(samples)] += samples
    peak = float(np.max(np.abs(track))) if len(track) else 0.0
    return track if peak <= 1.0 else (track * (0.99 / peak)).astype(np.float32)


def session_track(run: Run, session_id: str, voices: Voices, manifests: Manifests, setup: Setup) -> Track:
    """``session_id`` as heard under ``run``'s decoder (see the module docstring)."""
    chunks = run.chunks[run.chunks["session_id"] == session_id].sort_values("chunk_index")
    played = chunks[chunks["playback_start_ms"].notna() & (chunks["audio_s"].fillna(0) > 0)]
    pieces = []
    for row in played.itertuples(index=False):
        digest, samples = voices.piece(run, row.talker_text)
        if digest != row.audio_sha256:
            raise TablesError(f"run {run.path} session {session_id} chunk {row.chunk_index}: the talker's audio of "
                              f"{row.talker_text[:40]!r} is not the run's (sha256 {digest[:12]}... vs audio_sha256 "
                              f"{str(row.audio_sha256)[:12]}...): the talker changed since the run; rerun it to listen")
        pieces.append((1000.0 * row.arrival_s + row.playback_start_ms, samples))
    duration = float(run.sessions.loc[run.sessions["session_id"] == session_id, "duration_s"].iloc[0])
    samples = mix(manifests.audio(run, session_id), pieces, duration)
    return Track(run.run_id, run.decoder, session_id, setup_label(setup), setup.talker, samples, len(pieces))


def listen_tracks(results: Results, chosen: list[tuple[Setup, str]]) -> list[Track]:
    """One track per (talker setup, session) of ``chosen`` and decoder of that setup holding the session."""
    results = results.single_session()
    voices, manifests, tracks = Voices(), Manifests(), []
    for setup, session_id in chosen:
        for cell in results.in_setup(setup):
            run = run_with(results, setup, cell.decoder, session_id)
            if run is not None:
                tracks.append(session_track(run, session_id, voices, manifests, setup))
    return tracks


def encode_ogg(samples: np.ndarray) -> bytes:
    """16 kHz mono samples as Ogg Opus (about 18 kbit/s: a minute of speech in about 140 kB)."""
    import soundfile

    buffer = io.BytesIO()
    soundfile.write(buffer, samples, SAMPLE_RATE, format="OGG", subtype="OPUS")
    return buffer.getvalue()


def tracks_markup(tracks: list[Track]) -> str:
    """The tracks as the viewer's audio elements (data: URIs; the viewer shows the one of the run and session shown),
    with a link per track that opens its run and session in the viewer; "" without tracks."""
    if not tracks:
        return ""
    links, figures = [], []
    for track in tracks:
        keys = f'data-run="{html.escape(track.run_id)}" data-session="{html.escape(track.session_id)}"'
        links.append(f'<a class="tt-listen-link" href="#viewer" {keys}>{html.escape(track.session_id)} · '
                     f"{html.escape(track.decoder)}</a>")
        data = base64.b64encode(encode_ogg(track.samples)).decode()
        caption = (f"session {track.session_id} as its user would have heard it under {track.decoder} "
                   f"({track.setup}): the user's audio and the assistant's speech ({track.pieces} pieces, talker "
                   f"{track.talker}) at their playback times, {track.duration_s:.2f} s; click the timeline to seek")
        figures.append(f'<figure class="tt-track" {keys} hidden><figcaption>{html.escape(caption)}</figcaption>'
                       f'<audio controls preload="auto" data-expected="{track.duration_s:.3f}" '
                       f'src="data:audio/ogg;base64,{data}"></audio></figure>')
    return (f'<div id="tt-listen"><p class="meta">listen ({len(tracks)} tracks): {" ".join(links)}</p>'
            + "".join(figures) + "</div>")


def read_tracks(page: str) -> list[dict]:
    """The tracks of a report page: run, session, expected duration and the decoded audio (samples, rate) of each."""
    import soundfile

    found = []
    pattern = (r'<figure class="tt-track" data-run="([^"]*)" data-session="([^"]*)" hidden>.*?'
               r'data-expected="([0-9.]+)" src="data:audio/ogg;base64,([^"]*)"')
    for run_id, session_id, expected, data in re.findall(pattern, page, re.S):
        samples, rate = soundfile.read(io.BytesIO(base64.b64decode(data)), dtype="float32")
        found.append({"run_id": html.unescape(run_id), "session_id": html.unescape(session_id),
                      "expected_s": float(expected), "samples": samples, "rate": rate})
    return found
