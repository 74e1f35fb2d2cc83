"""Augment a session corpus: the same sessions as a different microphone, room, speaker rate and voice would give.

``python -m ticktock.corpus.augment --in CORPUS --out OUT --profile train --seed 3 [--copies 1] [--short-lead R]`` writes
``OUT/audio/<session>-aug<k>.flac`` and ``OUT/manifest.jsonl`` for ``--copies`` augmented versions of every
session of ``CORPUS`` (the manifest last; a rerun of an interrupted run keeps the audio files already written). ``OUT``
records the command (``OUT/made_by.json``, ``ticktock.corpus.output_folder``): an output that is the input, or that
holds another corpus or another augmentation's files, is refused unless ``--overwrite`` (which writes every file
again); the same command's own output, finished or not, is resumed. Each version draws one ``Augmentation`` from the
profile (deterministic per seed, session and copy) and applies, in order:

- **speed** perturbation: the audio resampled, so tempo and pitch change together; every time in the manifest
  line (turns, words, the script's and the behaviour's times, the duration) is scaled with it;
- **pitch** shift in semitones, tempo kept (resampled, then stretched back by a phase vocoder);
- **reverberation**: a synthetic room (exponentially decaying noise of the drawn RT60) mixed with the dry signal;
- **band limiting**: a 4th-order Butterworth band-pass (telephone, narrow or wide band);
- additive **noise** at the drawn SNR over the speech's level: stationary (white, pink or brown) or **babble**
  (2-4 other sessions of the corpus, their voices, mixed at random offsets; drawn from ``BABBLE_POOL`` of them);
- a **level** change in dB (then limited to a 0.99 peak).

Before all of them, the ``train`` profile inserts a **mid-utterance pause** (0.8-2 s of the recording's own
room sound) between two words in the middle of a user request in 30% of the sessions: the request goes on after
it, so the model learns to wait through pauses rather than answer at the first silent chunk; the pause joins the
behaviour's ``pause_spans``, and every later time moves with it.

With ``--short-lead R`` (any profile), a rate R of the versions then lose their leading silence down to 0-0.3 s
before the first turn (``trim_lead``), every time moving with it: a generated session always starts with 1-3 s of
silence, while real recordings (the Full-Duplex-Bench examples among them) start with the user already speaking.
With R = 0 (the default) nothing is drawn, so the corpora of runs before the option are unchanged.

The ``train`` profile draws moderate settings; ``heldout`` draws settings training never saw (lower SNRs,
longer rooms, narrower bands, other noise colours), for an evaluation corpus variant: robustness measured on
conditions outside the training distribution. The session's split, task and expectations are kept, its id gets
``-aug<k>``, and ``provenance.augmentation`` records what was applied.

Example::

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> aug = draw_augmentation(rng, PROFILES["train"])
    >>> 0.92 <= aug.speed <= 1.05 and 10.0 <= aug.snr_db <= 30.0
    True
    >>> scale_times({"duration_s": 10.0, "chunk_s": 1.0, "turns": [{"start_s": 1.0, "end_s": 2.0, "words": []}],
    ...              "expected": {"behaviour": {"pause_spans": [[1.2, 1.5]], "background_level_db": -12.0}}}, 0.5)
    {'duration_s': 5.0, 'chunk_s': 1.0, 'turns': [{'start_s': 0.5, 'end_s': 1.0, 'words': []}], 'expected': {'behaviour': {'pause_spans': [[0.6, 0.75]], 'background_level_db': -12.0}}}
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from ticktock.results.atomic import atomic_write
from ticktock.results.names import MAX_NAME_LENGTH, checked_name
from ticktock.sessions.audio import SAMPLE_RATE, load_audio, resample
from ticktock.corpus.arguments import real_number, whole_number, whole_range
from ticktock.corpus.mixing import stable_seed, write_flac
from ticktock.corpus.output_folder import MadeBy, claim_output, write_record
from ticktock.errors import InputDataError

UNSCALED_TIMES = ("chunk_s", "first_chunk_s")  # the chunk clock is the model's, not the recording's
NOISES = ("white", "pink", "brown", "babble")
BANDS = {"telephone": (300.0, 3400.0), "narrow": (500.0, 2500.0), "wide": (100.0, 7000.0)}
PEAK = 0.99
BABBLE_POOL = 64  # sessions babble noise is drawn from (loaded once)
SHORT_LEAD_S = (0.0, 0.3)  # the leading silence ``--short-lead`` keeps, drawn uniformly
MAX_COPIES = 100
MAX_SEED = 2**32 - 1


@dataclass(frozen=True)
class Profile:
    """The ranges an ``Augmentation`` is drawn from (uniform; each effect applied with its probability)."""

    speed: tuple[float, float]
    pitch_semitones: tuple[float, float]
    reverb_probability: float
    rt60_s: tuple[float, float]
    band_probability: float
    bands: tuple[str, ...]
    noises: tuple[str, ...]
    snr_db: tuple[float, float]
    gain_db: tuple[float, float]
    pause_probability: float = 0.0  # a request turn of 4+ words gets a mid-utterance pause
    pause_s: tuple[float, float] = (0.8, 2.0)


PROFILES = {
    "train": Profile(speed=(0.92, 1.05), pitch_semitones=(-2.0, 2.0), reverb_probability=0.5, rt60_s=(0.15, 0.6),
                     band_probability=0.3, bands=("telephone", "wide"), noises=("white", "pink", "babble"),
                     snr_db=(10.0, 30.0), gain_db=(-12.0, 6.0), pause_probability=0.3),
    "heldout": Profile(speed=(0.9, 1.06), pitch_semitones=(-3.0, 3.0), reverb_probability=0.7, rt60_s=(0.6, 1.0),
                       band_probability=0.5, bands=("narrow",), noises=("brown", "babble"),
                       snr_db=(5.0, 10.0), gain_db=(-18.0, -12.0)),
}


@dataclass(frozen=True)
class Augmentation:
    """One drawn augmentation (``rt60_s`` 0: no reverberation; ``band`` "": no band limit)."""

    speed: float
    pitch_semitones: float
    rt60_s: float
    band: str
    noise: str
    snr_db: float
    gain_db: float
    seed: int
    pause_s: float = 0.0  # a mid-utterance pause inserted into one request turn (0: none)


class AugmentError(InputDataError):
    """A corpus that cannot be augmented (a missing manifest or audio file, a bad option)."""


def draw_augmentation(rng: np.random.Generator, profile: Profile) -> Augmentation:
    """One augmentation from ``profile``'s ranges (always in this order of draws: deterministic per rng)."""
    speed = float(rng.uniform(*profile.speed))
    pitch = float(rng.uniform(*profile.pitch_semitones))
    reverb = rng.random() < profile.reverb_probability
    rt60 = float(rng.uniform(*profile.rt60_s))
    banded = rng.random() < profile.band_probability
    band = str(rng.choice(profile.bands))
    noise = str(rng.choice(profile.noises))
    snr = float(rng.uniform(*profile.snr_db))
    gain = float(rng.uniform(*profile.gain_db))
    seed = int(rng.integers(0, 2**31 - 1))
    pause = float(rng.uniform(*profile.pause_s)) if rng.random() < profile.pause_probability else 0.0
    return Augmentation(round(speed, 4), round(pitch, 3), round(rt60, 3) if reverb else 0.0, band if banded else "",
                        noise, round(snr, 2), round(gain, 2), seed, round(pause, 3))


def change_speed(audio: np.ndarray, speed: float) -> np.ndarray:
    """Play ``speed`` times faster: tempo and pitch together (a band-limited resampler, soxr)."""
    if speed == 1.0:
        return audio
    return resample(audio, int(round(SAMPLE_RATE * speed * 100)), SAMPLE_RATE * 100)


def stretch(audio: np.ndarray, factor: float, n_fft: int = 512, hop: int = 128) -> np.ndarray:
    """Phase-vocoder time stretch: ``factor`` times longer, pitch kept."""
    from scipy.signal import istft, stft

    _, _, spectrum = stft(audio, nperseg=n_fft, noverlap=n_fft - hop, boundary="even")
    steps = np.arange(0, spectrum.shape[1] - 1, 1.0 / factor)
    expected = np.linspace(0, np.pi * hop, spectrum.shape[0])  # phase advance of each bin per hop
    phase = np.angle(spectrum[:, 0])
    out = np.empty((spectrum.shape[0], len(steps)), dtype=complex)
    for i, step in enumerate(steps):
        left, right = spectrum[:, int(step)], spectrum[:, int(step) + 1]
        fraction = step - int(step)
        out[:, i] = ((1 - fraction) * np.abs(left) + fraction * np.abs(right)) * np.exp(1j * phase)
        delta = np.angle(right) - np.angle(left) - expected
        phase = phase + expected + (delta - 2 * np.pi * np.round(delta / (2 * np.pi)))
    _, signal = istft(out, nperseg=n_fft, noverlap=n_fft - hop, boundary=True)
    return signal.astype(np.float32)


def shift_pitch(audio: np.ndarray, semitones: float) -> np.ndarray:
    """Raise the pitch by ``semitones`` (lower when negative), keeping the length and the tempo."""
    if semitones == 0.0:
        return audio
    factor = 2 ** (semitones / 12)
    shifted = stretch(change_speed(audio, factor), factor)
    out = np.zeros_like(audio)
    out[: min(len(out), len(shifted))] = shifted[: len(out)]
    return out


def reverberate(audio: np.ndarray, rt60_s: float, rng: np.random.Generator) -> np.ndarray:
    """A synthetic room: the dry signal plus its convolution with exponentially decaying noise (level kept)."""
    from scipy.signal import fftconvolve

    if rt60_s <= 0:
        return audio
    t = np.arange(int(SAMPLE_RATE * rt60_s * 1.2)) / SAMPLE_RATE
    tail = rng.standard_normal(t.shape[0]) * np.exp(-6.908 * t / rt60_s)  # -60 dB at rt60_s
    tail[: int(0.005 * SAMPLE_RATE)] = 0.0  # the first reflections arrive after 5 ms
    wet = fftconvolve(audio, tail / np.sqrt(np.sum(tail**2)), mode="full")[: len(audio)]
    out = audio + 0.7 * wet
    return (out * (_rms(audio) / max(_rms(out), 1e-9))).astype(np.float32)


def band_limit(audio: np.ndarray, band: str) -> np.ndarray:
    from scipy.signal import butter, sosfiltfilt

    if not band:
        return audio
    low, high = BANDS[band]
    sos = butter(4, [low, high], btype="band", fs=SAMPLE_RATE, output="sos")
    return sosfiltfilt(sos, audio).astype(np.float32)


def coloured_noise(length: int, colour: str, rng: np.random.Generator) -> np.ndarray:
    """White, pink (1/f) or brown (1/f^2) Gaussian noise of unit RMS."""
    white = rng.standard_normal(length)
    if colour == "white":
        return white / _rms(white)
    spectrum = np.fft.rfft(white)
    freqs = np.fft.rfftfreq(length, 1 / SAMPLE_RATE)
    slope = {"pink": 0.5, "brown": 1.0}[colour]
    spectrum = spectrum / np.maximum(freqs, 20.0) ** slope
    noise = np.fft.irfft(spectrum, n=length)
    return noise / _rms(noise)


def babble(length: int, others: list[np.ndarray], rng: np.random.Generator) -> np.ndarray:
    """2-4 other sessions' voices summed at random offsets (looped to ``length``), unit RMS."""
    if not others:
        raise AugmentError("babble noise needs other sessions in the corpus (it has only one)")
    out = np.zeros(length)
    for index in rng.choice(len(others), size=min(len(others), int(rng.integers(2, 5))), replace=False):
        voice = others[int(index)]
        looped = np.resize(np.roll(voice, int(rng.integers(0, len(voice)))), length)
        out += looped / max(_rms(looped), 1e-9)
    return out / max(_rms(out), 1e-9)


def speech_level(audio: np.ndarray) -> float:
    """RMS of the active part (20 ms frames within 30 dB of the loudest), the level an SNR is relative to."""
    frames = audio[: len(audio) // 320 * 320].reshape(-1, 320)
    energy = np.sqrt(np.mean(frames**2, axis=1)) if len(frames) else np.zeros(1)
    active = energy[energy > energy.max() * 10 ** (-30 / 20)]
    return float(np.sqrt(np.mean(active**2))) if active.size else 0.0


def _rms(x: np.ndarray) -> float:
    return float(np.sqrt(np.mean(np.square(x)))) if x.size else 0.0


def augment_audio(audio: np.ndarray, aug: Augmentation, others: list[np.ndarray]) -> np.ndarray:
    """``audio`` (16 kHz mono) with ``aug`` applied (``others``: the corpus's other sessions, for babble)."""
    rng = np.random.default_rng(aug.seed)
    out = shift_pitch(change_speed(audio, aug.speed), aug.pitch_semitones)
    out = band_limit(reverberate(out, aug.rt60_s, rng), aug.band)
    level = speech_level(out)
    noise = babble(len(out), others, rng) if aug.noise == "babble" else coloured_noise(len(out), aug.noise, rng)
    out = out + noise * level * 10 ** (-aug.snr_db / 20)
    out = out * 10 ** (aug.gain_db / 20)
    peak = float(np.max(np.abs(out))) if out.size else 0.0
    return (out * (PEAK / peak if peak > PEAK else 1.0)).astype(np.float32)


def pause_point(line: dict, rng: np.random.Generator) -> tuple[int, float] | None:
    """Where to pause: (turn index, time) between two words in the middle of a user request of 4+ words, or
    None when the session has no such turn."""
    turns = [(i, t) for i, t in enumerate(line.get("turns", []))
             if t.get("speaker") == "user" and t.get("role") == "request" and len(t.get("words", [])) >= 4]
    if not turns:
        return None
    index, turn = turns[int(rng.integers(len(turns)))]
    words = turn["words"]
    cut = int(rng.integers(len(words) // 3 or 1, max(len(words) // 3 or 1, 2 * len(words) // 3) + 1))
    cut = min(max(cut, 1), len(words) - 1)
    return index, round((words[cut - 1]["end_s"] + words[cut]["start_s"]) / 2, 4)


def shift_times(value, at_s: float, by_s: float, key: str = ""):
    """A manifest line (or part) with every time at or after ``at_s`` moved ``by_s`` later (as ``scale_times``
    finds times)."""
    if isinstance(value, dict):
        return {k: v if k == "provenance" else shift_times(v, at_s, by_s, k) for k, v in value.items()}
    if isinstance(value, list):
        return [shift_times(v, at_s, by_s, key) for v in value]
    timed = (key.endswith("_s") or key.endswith("_spans")) and key not in UNSCALED_TIMES
    if timed and isinstance(value, (int, float)) and not isinstance(value, bool) and value >= at_s:
        return round(value + by_s, 4)
    return value


def insert_pause(audio: np.ndarray, line: dict, pause_s: float, rng: np.random.Generator):
    """``audio`` and ``line`` with ``pause_s`` of the session's own quietest sound inserted mid-request (a
    mid-utterance pause: the turn goes on after it, so the model must wait); the pause is added to the
    behaviour's ``pause_spans``. Unchanged when the session has no request of 4+ words."""
    point = pause_point(line, rng) if pause_s > 0 else None
    if point is None:
        return audio, line
    turn, at_s = point
    sample = int(round(at_s * SAMPLE_RATE))
    length = int(round(pause_s * SAMPLE_RATE))
    quiet = room_sound(audio, length)
    out = np.concatenate([audio[:sample], quiet, audio[sample:]])
    moved = shift_times(line, at_s, pause_s)
    moved["duration_s"] = round(line["duration_s"] + pause_s, 4)
    behaviour = moved.setdefault("expected", {}).setdefault("behaviour", {})
    behaviour["pause_spans"] = sorted([*behaviour.get("pause_spans", []), [at_s, round(at_s + pause_s, 4)]])
    return out, moved


def trim_lead(audio: np.ndarray, line: dict, keep_s: float):
    """``audio`` and ``line`` with the silence before the first turn (of any speaker) cut to ``keep_s`` seconds,
    every time moving earlier with it, and the cut in seconds; unchanged (cut 0) when the first turn starts within
    ``keep_s``.

    >>> line = {"duration_s": 6.0, "turns": [{"start_s": 2.5, "end_s": 4.0, "words": []}]}
    >>> out, moved, cut = trim_lead(np.zeros(6 * SAMPLE_RATE, np.float32), line, 0.5)
    >>> cut, moved, len(out) / SAMPLE_RATE
    (2.0, {'duration_s': 4.0, 'turns': [{'start_s': 0.5, 'end_s': 2.0, 'words': []}]}, 4.0)
    """
    cut = round(min(turn["start_s"] for turn in line["turns"]) - keep_s, 4) if line.get("turns") else 0.0
    if cut <= 0:
        return audio, line, 0.0
    return audio[int(round(cut * SAMPLE_RATE)):], shift_times(line, 0.0, -cut), cut


def room_sound(audio: np.ndarray, length: int) -> np.ndarray:
    """``length`` samples of the recording's quietest 100 ms, looped: its room tone, as a pause sounds."""
    window = SAMPLE_RATE // 10
    frames = audio[: len(audio) // window * window].reshape(-1, window)
    quietest = frames[int(np.argmin(np.sqrt(np.mean(frames**2, axis=1))))] if len(frames) else np.zeros(window)
    return np.resize(quietest, length).astype(np.float32)


def scale_times(value, factor: float, key: str = ""):
    """A manifest line (or part of one) with every time multiplied by ``factor``: numbers under keys ending in
    ``_s`` or ``_spans`` (but ``chunk_s`` / ``first_chunk_s``), at any depth outside ``provenance``."""
    if isinstance(value, dict):
        return {k: v if k == "provenance" else scale_times(v, factor, k) for k, v in value.items()}
    if isinstance(value, list):
        return [scale_times(v, factor, key) for v in value]
    timed = (key.endswith("_s") or key.endswith("_spans")) and key not in UNSCALED_TIMES
    if timed and isinstance(value, (int, float)) and not isinstance(value, bool):
        return round(value * factor, 4)
    return value


def augmented_audio(session_id: str, copy: int) -> str:
    """The audio file of an augmented version, relative to the output folder: ``audio/<id>-aug<copy>.flac``, the
    id ``<id>-aug<copy>`` checked as a name (``ticktock.results.names``: ``read_lines`` checked ``<id>`` already)."""
    name = checked_name(augmented_id(session_id, copy), "session_id", f"augmented copy {copy} of {session_id}",
                        AugmentError)
    return f"audio/{name}.flac"


def augmented_id(session_id: str, copy: int) -> str:
    """The id of an augmented version: ``<id>-aug<copy>``."""
    return f"{session_id}-aug{copy}"


def augmented_line(line: dict, aug: Augmentation, copy: int, profile: str, lead_cut_s: float = 0.0) -> dict:
    """The manifest line of an augmented version: id ``<id>-aug<copy>``, times scaled by 1 / speed; the
    provenance records ``lead_cut_s`` (seconds of leading silence cut, ``trim_lead``) only where it is not 0."""
    out = scale_times(line, 1.0 / aug.speed)
    out["session_id"] = augmented_id(line["session_id"], copy)
    out["audio"] = augmented_audio(line["session_id"], copy)
    record = {"profile": profile, "copy": copy, "of": line["session_id"], **asdict(aug)}
    if lead_cut_s:
        record["lead_cut_s"] = lead_cut_s
    out["provenance"] = {**line.get("provenance", {}), "augmentation": record}
    return out


def read_lines(manifest: Path) -> list[dict]:
    if not manifest.is_file():
        raise AugmentError(f"{manifest}: no such manifest")
    lines = []
    for number, text in enumerate(manifest.read_text(encoding="utf-8").splitlines(), 1):
        if text.strip():
            try:
                line = json.loads(text)
            except json.JSONDecodeError as err:
                raise AugmentError(f"{manifest}:{number}: not JSON ({err.msg})") from None
            missing = [key for key in ("session_id", "audio", "duration_s") if key not in line]
            if missing:
                raise AugmentError(f"{manifest}:{number}: field {missing[0]!r}: missing")
            check_augmentable_id(line.get("session_id"), f"{manifest}:{number}")
            lines.append(line)
    return lines


def check_augmentable_id(session_id, where: str) -> None:
    """``session_id`` is a name (``ticktock.results.names``) that stays one with ``-aug<copy>`` added (an
    ``AugmentError`` naming ``where`` and the field, before anything is written)."""
    checked_name(session_id, "session_id", where, AugmentError)
    longest = augmented_id(session_id, MAX_COPIES - 1)
    if len(longest) > MAX_NAME_LENGTH:
        raise AugmentError(f"{where}: field 'session_id': {len(session_id)} characters: its augmented ids "
                           f"(<id>-aug<copy>, up to {len(longest)}) would be longer than a name's "
                           f"{MAX_NAME_LENGTH}")


def babble_pool(source: Path, lines: list[dict], size: int = BABBLE_POOL) -> dict[str, np.ndarray]:
    """The sessions babble is drawn from: ``size`` of the corpus's sessions (fixed by their ids), loaded once."""
    chosen = sorted(lines, key=lambda line: stable_seed("babble:" + line["session_id"]))[:size]
    return {line["session_id"]: load_audio(source / line["audio"]) for line in chosen}


def check_options(profile: str, seed: int, copies: int, short_lead: float) -> None:
    """Refuse an unknown profile or a number out of range, naming the option (the CLI's parser checks the same)."""
    if profile not in PROFILES:
        raise AugmentError(f"--profile: unknown profile {profile!r} (profiles: {', '.join(PROFILES)})")
    if not 0 <= seed <= MAX_SEED:
        raise AugmentError(f"--seed: must be {whole_range(0, MAX_SEED)}, got {seed}")
    if not 1 <= copies <= MAX_COPIES:
        raise AugmentError(f"--copies: must be {whole_range(1, MAX_COPIES)}, got {copies}")
    if not (math.isfinite(short_lead) and 0.0 <= short_lead <= 1.0):
        raise AugmentError(f"--short-lead: must be a rate between 0 and 1, got {short_lead}")


def made_by(manifest: Path, profile: str, seed: int, copies: int, short_lead: float) -> MadeBy:
    """What decides an augmented corpus: the input manifest's digest and the options (``OUT/made_by.json``)."""
    digest = hashlib.sha256(manifest.read_bytes()).hexdigest()[:16]
    return MadeBy("augment", {"--in manifest sha256": digest, "--profile": profile, "--seed": seed, "--copies": copies,
                              "--short-lead": short_lead})


def remove_replaced(out: Path, lines: list[dict], copies: int) -> None:
    """Delete the files of a corpus being overwritten that bear the names this run writes, before its record is
    written: a resume of this run must never take them for its own."""
    for line in lines:
        for copy in range(copies):
            (out / augmented_audio(line["session_id"], copy)).unlink(missing_ok=True)


def augment_corpus(source: Path, out: Path, profile: str, seed: int, copies: int = 1, short_lead: float = 0.0,
                   overwrite: bool = False) -> Path:
    """Write ``copies`` augmented versions of every session of the corpus in ``source`` into ``out``, a rate
    ``short_lead`` of them starting within ``SHORT_LEAD_S`` of the first turn (``trim_lead``).

    ``out`` must not be ``source``, nor hold another corpus or another augmentation's files unless ``overwrite``
    (``ticktock.corpus.output_folder``); the audio files of this same command's interrupted run are kept."""
    check_options(profile, seed, copies, short_lead)
    source, out = Path(source), Path(out)
    lines = read_lines(source / "manifest.jsonl")
    record = made_by(source / "manifest.jsonl", profile, seed, copies, short_lead)
    keep_written = claim_output(out, record, {"--in": source}, overwrite) and not overwrite
    if overwrite:
        remove_replaced(out, lines, copies)
    write_record(out, record)
    pool = babble_pool(source, lines)
    written = []
    for line in lines:
        path = source / line["audio"]
        if not path.is_file():
            raise AugmentError(f"{source / 'manifest.jsonl'}: session {line['session_id']}: no audio file {path}")
        audio = load_audio(path)
        others = [a for sid, a in pool.items() if sid != line["session_id"]]
        for copy in range(copies):
            rng = np.random.default_rng([seed, stable_seed(line["session_id"]), copy])
            aug = draw_augmentation(rng, PROFILES[profile])
            paused, paused_line = insert_pause(audio, line, aug.pause_s, rng)
            cut = 0.0
            if short_lead > 0:  # two draws whatever the outcome; none without the option
                shortened, keep_s = rng.random() < short_lead, float(rng.uniform(*SHORT_LEAD_S))
                if shortened:
                    paused, paused_line, cut = trim_lead(paused, paused_line, keep_s)
            new = augmented_line(paused_line, aug, copy, profile, cut)
            if not (keep_written and (out / new["audio"]).is_file()):  # written atomically: a file there is complete
                samples = augment_audio(paused, aug, others)
                length = int(round(new["duration_s"] * SAMPLE_RATE))  # the scaled duration, to the sample
                write_flac(out / new["audio"], np.pad(samples, (0, max(0, length - len(samples))))[:length])
            written.append(json.dumps(new, ensure_ascii=False))
    manifest = out / "manifest.jsonl"
    with atomic_write(manifest) as tmp:
        tmp.write_text("".join(text + "\n" for text in written), encoding="utf-8")
    return manifest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ticktock.corpus.augment", description=__doc__.splitlines()[0])
    parser.add_argument("--in", dest="source", required=True, type=Path, help="corpus folder (manifest.jsonl + audio/)")
    parser.add_argument("--out", required=True, type=Path, help="output folder")
    parser.add_argument("--profile", default="train", help=f"augmentation ranges: {', '.join(PROFILES)}")
    parser.add_argument("--seed", type=whole_number(0, MAX_SEED), default=0)
    parser.add_argument("--copies", type=whole_number(1, MAX_COPIES), default=1, help="augmented versions of every session")
    parser.add_argument("--short-lead", type=real_number(0.0, 1.0), default=0.0, metavar="R",
                        help="the rate of versions whose leading silence is cut to 0-0.3 s, as real recordings start "
                             "(0: none)")
    parser.add_argument("--overwrite", action="store_true",
                        help="write into a folder that holds another corpus or another augmentation's files, writing "
                             "every file again (never the input folder)")
    args = parser.parse_args(argv)
    manifest = augment_corpus(args.source, args.out, args.profile, args.seed, args.copies, args.short_lead,
                              args.overwrite)
    print(f"wrote {manifest}")
    return 0


if __name__ == "__main__":
    from ticktock.errors import user_errors

    with user_errors():
        sys.exit(main())
