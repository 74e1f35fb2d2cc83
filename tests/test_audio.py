import numpy as np
import pytest
import soundfile

from ticktock.sessions.audio import AudioError, chunk_samples, load_audio


def test_stereo_48k_becomes_16k_mono_with_the_tone_preserved(tmp_path):
    rate, seconds = 48_000, 2.0
    t = np.arange(int(rate * seconds)) / rate
    tone = 0.5 * np.sin(2 * np.pi * 440 * t)
    path = tmp_path / "tone.wav"
    soundfile.write(path, np.stack([tone, tone], axis=1), rate)
    audio = load_audio(path)
    assert audio.dtype == np.float32 and audio.ndim == 1
    assert abs(len(audio) - 32_000) <= 1
    spectrum = np.abs(np.fft.rfft(audio))
    assert abs(np.argmax(spectrum) * 16_000 / len(audio) - 440) < 2  # band-limited, not decimated
    assert 0.45 < np.abs(audio[1000:-1000]).max() < 0.55


@pytest.mark.parametrize("problem", ["missing", "corrupt", "empty", "nan"])
def test_bad_audio_is_reported_with_its_file(tmp_path, problem):
    path = tmp_path / f"{problem}.wav"
    if problem == "corrupt":
        path.write_bytes(b"RIFF....not audio at all")
    elif problem == "empty":
        soundfile.write(path, np.zeros(0, dtype=np.float32), 16_000)
    elif problem == "nan":
        soundfile.write(path, np.array([0.0, np.nan, 0.1], dtype=np.float32), 16_000, subtype="FLOAT")
    with pytest.raises(AudioError, match=str(path)):
        load_audio(path)


def test_chunk_samples_zero_pads_the_final_partial_chunk():
    audio = np.ones(24_000, dtype=np.float32)
    piece = chunk_samples(audio, 1.0, 2.0)
    assert piece.shape == (16_000,) and piece[:8000].all() and not piece[8000:].any()


@pytest.mark.parametrize("level, expected", [
    (1.0, "audio is clipped (25.00% of the samples at full scale)"),
    (40.0, "samples far outside [-1, 1] (peak 40): the file is probably scaled wrongly"),
])
def test_clipped_or_unscaled_audio_loads_with_a_warning_naming_the_file(tmp_path, caplog, level, expected):
    samples = np.full(16_000, 0.1, dtype=np.float32)
    samples[::4] = level
    path = tmp_path / "loud.wav"
    soundfile.write(path, samples, 16_000, subtype="FLOAT")
    with caplog.at_level("WARNING", logger="ticktock.sessions.audio"):
        audio = load_audio(path)
    assert len(audio) == 16_000 and [r.getMessage() for r in caplog.records] == [f"{path}: {expected}"]


def test_clean_audio_loads_without_a_warning_and_its_header_gives_duration_and_rate(tmp_path, caplog):
    from ticktock.sessions.audio import audio_header

    path = tmp_path / "tone.flac"
    soundfile.write(path, 0.5 * np.sin(np.arange(24_000) / 10.0), 48_000)
    with caplog.at_level("WARNING", logger="ticktock.sessions.audio"):
        load_audio(path)
    assert not caplog.records
    assert audio_header(path) == (0.5, 48_000)
    with pytest.raises(AudioError, match=r"nope.flac: audio file not found"):
        audio_header(tmp_path / "nope.flac")
