"""Expected errors: one hierarchy, one line on stderr, an exit code per kind; tracebacks only with TICKTOCK_DEBUG."""

import pytest

from ticktock.sessions.audio import AudioError
from ticktock.clocks.modeled import ProfileError
from ticktock.decoders.contract import DecoderConfigError
from ticktock.decoders.selection import SamplingError
from ticktock.errors import EXIT_CONFIG, EXIT_INPUT_DATA, EXIT_INTERRUPTED, EXIT_RUN_FOLDER, TickTockError, user_errors
from ticktock.sessions.manifest import ManifestError
from ticktock.results.writer import RunDirError
from ticktock.replay.runner import RunOptionError


@pytest.mark.parametrize("kind, code", [
    (ManifestError, EXIT_INPUT_DATA), (AudioError, EXIT_INPUT_DATA), (SamplingError, EXIT_CONFIG),
    (DecoderConfigError, EXIT_CONFIG), (ProfileError, EXIT_CONFIG), (RunOptionError, EXIT_CONFIG),
    (RunDirError, EXIT_RUN_FOLDER),
])
def test_every_expected_error_is_a_ticktock_error_with_its_exit_code(kind, code):
    assert issubclass(kind, TickTockError) and kind.exit_code == code
    assert (EXIT_CONFIG, EXIT_INPUT_DATA, EXIT_RUN_FOLDER, EXIT_INTERRUPTED) == (2, 3, 4, 130)


def test_an_expected_error_is_one_line_and_its_exit_code(capsys, monkeypatch):
    monkeypatch.delenv("TICKTOCK_DEBUG", raising=False)
    with pytest.raises(SystemExit) as done, user_errors():
        raise ManifestError("m.jsonl:2: field 'duration_s': missing")
    assert done.value.code == 3
    assert capsys.readouterr().err == "ticktock: error: m.jsonl:2: field 'duration_s': missing\n"


def test_ctrl_c_says_what_was_kept_and_exits_130(capsys, monkeypatch):
    monkeypatch.delenv("TICKTOCK_DEBUG", raising=False)
    with pytest.raises(SystemExit) as done, user_errors(interrupted=lambda: "3 of 9 sessions kept in r; run it again"):
        raise KeyboardInterrupt
    assert done.value.code == 130
    assert capsys.readouterr().err == "ticktock: interrupted: 3 of 9 sessions kept in r; run it again\n"


def test_other_errors_and_debug_mode_keep_their_tracebacks(monkeypatch):
    monkeypatch.delenv("TICKTOCK_DEBUG", raising=False)
    with pytest.raises(ZeroDivisionError), user_errors():  # a bug is not an expected error
        1 / 0
    monkeypatch.setenv("TICKTOCK_DEBUG", "1")
    with pytest.raises(AudioError), user_errors():
        raise AudioError("a.flac: cannot read audio")
    with pytest.raises(KeyboardInterrupt), user_errors():
        raise KeyboardInterrupt
