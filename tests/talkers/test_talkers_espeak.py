"""The eSpeak NG talker: deterministic audio of exactly the text, checked options."""

import pytest

from ticktock.talkers.base import TalkerError
from ticktock.talkers.espeak import EspeakTalker
from ticktock.replay.speech_out import samples_sha256


def test_the_same_text_gives_the_same_samples_in_any_order():
    talker = EspeakTalker()
    first = talker.synthesize("Your order is on its way.")
    talker.synthesize("Something else entirely, to move the library's state on.")
    again = talker.synthesize("Your order is on its way.")
    assert samples_sha256(first) == samples_sha256(again)
    assert 0.8 < len(first) / talker.sample_rate < 3.0  # about 1.5 s of speech at 175 words per minute


def test_a_faster_rate_speaks_the_same_text_in_less_time():
    slow, fast = EspeakTalker(rate_wpm=120), EspeakTalker(rate_wpm=300)
    text = "The capital of Peru is Lima."
    assert len(fast.synthesize(text)) < 0.7 * len(slow.synthesize(text))


def test_nothing_to_say_is_no_audio_and_accents_are_folded():
    talker = EspeakTalker()
    assert len(talker.synthesize("")) == 0 and len(talker.synthesize("  —  ")) == 0
    assert len(talker.synthesize("Café in Zürich")) > 0


@pytest.mark.parametrize("options, message", [
    ({"rate_wpm": 1000}, r"talker\.rate_wpm: must be an integer from 80 to 450"),
    ({"rate_wpm": "fast"}, r"talker\.rate_wpm: must be an integer"),
    ({"pitch": 120}, r"talker\.pitch: must be an integer from 0 to 99"),
    ({"voice": "piper:en_US-joe-medium"}, r"talker\.voice: must be an eSpeak voice name"),
])
def test_bad_options_are_one_line_errors(options, message):
    with pytest.raises(TalkerError, match=message):
        EspeakTalker(**options)


@pytest.mark.parametrize("overrides, message", [
    (["talker=espeak", "talker.rate_wpm=1000"], "talker.rate_wpm: must be an integer from 80 to 450 (words per minute), got 1000"),
    (["talker=modeled", "talker.entry=minicpmo45"], "talker.entry: 'minicpmo45' is not a talker cost of profile a100-8b-derived"),
    (["talker=espeak", "clock=free"], "cost profile free has no talker entry 'espeak' (its talkers: none)"),
])
def test_a_bad_talker_option_stops_the_run_before_any_work_in_one_line(overrides, message):
    from ticktock.replay.config import check_run_options, compose_run

    with pytest.raises(Exception) as refused:
        check_run_options(compose_run("ar", "fixture", None, overrides))
    assert str(refused.value).startswith(message) and "\n" not in str(refused.value)
    assert getattr(refused.value, "exit_code", None) == 2


@pytest.mark.parametrize("voice, problem", [
    ("xx-nope", "not an eSpeak voice"),
    ("../../x", "not an eSpeak voice"),        # eSpeak would read a file there
    ("/etc/x", "not an eSpeak voice"),
    ("gmw/en-US", "not an eSpeak voice"),      # a path inside the data folder: names only
    ("en-us+nope", "eSpeak has no variant 'nope'"),  # eSpeak speaks plain en-us without a word
])
def test_a_voice_the_installation_lacks_or_a_path_is_refused_naming_the_valid_ones(voice, problem):
    with pytest.raises(TalkerError) as failure:
        EspeakTalker(voice=voice)
    message = str(failure.value)
    assert message.startswith(f"talker.voice: {voice!r}: {problem}; valid: a language (")
    assert " en-us, " in message and "optionally +variant (" in message and " f2, " in message
    assert "\n" not in message


def test_the_voices_of_the_bundled_data_are_accepted_in_any_case_with_their_variants():
    for voice in ("en-us", "EN-US", "de", "en-us+f2", "en-gb-x-rp+m3"):
        EspeakTalker(voice=voice)


def test_a_bad_voice_on_the_command_line_is_one_line_exit_2_before_the_run_folder(tmp_path):
    import subprocess
    import sys

    for voice in ("xx-nope", "../../x"):
        done = subprocess.run([sys.executable, "-m", "ticktock.run", "progress=false", "experiment=smoke",
                               "talker=espeak", f"talker.voice={voice}", f"hydra.run.dir={tmp_path / 'run'}"],
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 2
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"ticktock: error: talker.voice: {voice!r}: not an eSpeak voice")
        assert not (tmp_path / "run").exists()
