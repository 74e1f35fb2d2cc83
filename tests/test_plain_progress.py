"""A run's progress where stderr is not a terminal (a pipe, a log file, a cluster job): plain lines, one per finished
session, with no carriage return or escape code, and no transformers "Loading weights" bar, in a run and at the start
of ``ticktock serve``; on a terminal, progress bars."""

from __future__ import annotations

import io
import os
import re
import signal
import subprocess
import sys

from ticktock.replay.progress import RunProgress

#: What a terminal progress bar writes and a log must never hold.
BAR_BYTES = ("\r", "\x1b")


def test_a_real_run_with_stderr_to_a_pipe_writes_plain_progress_lines(tmp_path):
    """The default model (the embedded one, loaded with transformers), two sessions of two chunks."""
    done = subprocess.run([sys.executable, "-m", "ticktock.run", "limit.sessions=2", "limit.chunks=2",
                           f"hydra.run.dir={tmp_path / 'run'}"], capture_output=True, timeout=600,
                          env={**os.environ, "OMP_NUM_THREADS": "1"})
    err = done.stderr.decode()  # bytes as written: text mode would turn a "\r" into a newline
    assert done.returncode == 0, err[-2000:]
    assert not [mark for mark in BAR_BYTES if mark in err], repr(err[-2000:])
    assert "Loading weights" not in err, err[-2000:]
    lines = err.splitlines()
    assert [line for line in lines if re.match(r"ar: session 1/2 done \(\S+\); 2/4 chunks, \d+ s$", line)], lines
    assert [line for line in lines if re.match(r"ar: session 2/2 done \(\S+\); 4/4 chunks, \d+ s$", line)], lines


def test_ticktock_serve_starts_without_transformers_loading_bar(tmp_path):
    server = subprocess.Popen([sys.executable, "-m", "ticktock.serve", "decoder=ar", "serve.port=0"], cwd=tmp_path,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              env={**os.environ, "OMP_NUM_THREADS": "1"})
    try:
        banner = server.stdout.readline().decode()
        assert "ws://127.0.0.1:" in banner, banner
    finally:
        server.send_signal(signal.SIGINT)
        _, err = server.communicate(timeout=120)
    err = err.decode()
    assert "Loading weights" not in err and not [mark for mark in BAR_BYTES if mark in err], repr(err[-2000:])


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_is_plain_lines_off_a_terminal_bars_on_one_and_nothing_when_disabled():
    piped, terminal, quiet = io.StringIO(), Terminal(), io.StringIO()
    for stream, enabled in ((piped, True), (terminal, True), (quiet, False)):
        with RunProgress("ar", sessions=2, units=3, unit="chunk", enabled=enabled, stream=stream) as progress:
            progress.say("starting")
            progress.unit_done()
            progress.session_ended("s0", "done")
            progress.session_ended("s1", "skipped", units=2)
    lines = piped.getvalue().splitlines()
    assert lines[0] == "starting" and len(lines) == 3
    assert re.fullmatch(r"ar: session 1/2 done \(s0\); 1/3 chunks, \d+ s", lines[1]), lines
    assert re.fullmatch(r"ar: session 2/2 skipped \(s1\); 3/3 chunks, \d+ s", lines[2]), lines
    assert "\r" in terminal.getvalue() and "ar chunks" in terminal.getvalue() and "starting" in terminal.getvalue()
    assert quiet.getvalue() == ""
