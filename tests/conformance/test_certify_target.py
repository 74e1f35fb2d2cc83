"""``ticktock certify decoder._target_=module.Class``: a decoder that is not packaged (docs/extending.md offers
``_target_`` for it) is certified like a named one; a target that is not a decoder is refused in one line. The same
real ``certify`` process shows what every ``certify`` does: a plain progress line on stderr as each check starts
and ends (stderr piped, as to a log file: no carriage return, no escape code), and its replays on one torch thread.

The decoder's module is written into a temporary folder and put on the ``PYTHONPATH`` of a real ``certify``
process, as a user's own module would be."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from ticktock.conformance.decoder_checks import PROPERTIES

MODULE = '''
import os

from ticktock.api import Decoder


class Mine(Decoder):
    """AR, through the base class's loop; each session it starts is noted in $MINE_LOG (proof that it ran)."""

    def __init__(self, name="mine", **settings):
        super().__init__(name, **settings)

    def start_session(self, session):
        with open(os.environ["MINE_LOG"], "a") as log:
            log.write(session.session_id + "\\n")


class NotADecoder:
    pass
'''


def certify(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess:
    """``python -m ticktock.certify ARGV`` with stdout and stderr piped, its torch threads left to certify (no
    ``OMP_NUM_THREADS``)."""
    (tmp_path / "my_decoders.py").write_text(MODULE)
    inherited = {key: value for key, value in os.environ.items() if key != "OMP_NUM_THREADS"}
    env = {**inherited, "PYTHONPATH": str(tmp_path), "MINE_LOG": str(tmp_path / "mine.log")}
    return subprocess.run([sys.executable, "-m", "ticktock.certify", *argv], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=400)


def test_an_unpackaged_decoder_is_certified_by_its_class(tmp_path):
    out = tmp_path / "replays"
    done = certify(tmp_path, "decoder._target_=my_decoders.Mine", "decoder.name=mine", "--quick", "--settings",
                   "greedy", "--sessions", "1", "--chunks", "2", "--out", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    last = done.stdout.strip().splitlines()[-1]
    assert last.startswith("certify decoder._target_=my_decoders.Mine decoder.name=mine: certified: 6 checks, "
                           "6 passed"), done.stdout
    assert (tmp_path / "mine.log").read_text().strip()  # the class itself ran, not AR under its name
    run = json.loads((out / "fixture" / "greedy" / "decoder" / "run.json").read_text())
    assert run["decoder"]["name"] == "mine"
    assert run["environment"]["torch_threads"] == 1  # tiny tensors: more threads only spin against each other
    assert_progress_per_check(done.stderr, "fixture, greedy")


def assert_progress_per_check(stderr: str, setting: str) -> None:
    """Each check of ``setting`` has a progress line as it starts and one with its result as it ends, in the
    table's order, each with the seconds since certify began; plain lines only."""
    assert "\r" not in stderr and "\x1b" not in stderr, repr(stderr)
    lines = [line for line in stderr.splitlines() if line.startswith("certify [")]
    expected = [rf"certify \[\d+ s\] {setting}: {re.escape(prop)}: " + ending
                for prop in PROPERTIES for ending in (r"started\b.*", r"PASS in \d+ s")]
    assert len(lines) == len(expected), stderr
    for line, pattern in zip(lines, expected):
        assert re.fullmatch(pattern, line), (line, pattern)


def test_a_target_that_is_not_a_decoder_is_refused_in_one_line(tmp_path):
    done = certify(tmp_path, "decoder._target_=my_decoders.NotADecoder", "--quick")
    assert done.returncode == 2
    assert done.stderr.strip() == ("ticktock: error: decoder._target_=my_decoders.NotADecoder: <class "
                                   "'my_decoders.NotADecoder'> is not a subclass of ticktock.api.Decoder (certify "
                                   "checks decoders)")
    assert not (tmp_path / "mine.log").exists()
