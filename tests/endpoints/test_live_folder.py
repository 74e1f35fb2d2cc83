"""A live run (``python -m ticktock.run model=endpoint``) is named from what the server says it is, not from the
client's config defaults: the folder Hydra named ``<time>_endpoint_ar_modeled`` becomes
``<time>_<served model>_<its decoder>_live`` once the probe has heard the server, and a rerun against the same server
finds that folder and resumes it. It says on stderr what it does: a line when it starts (which server, how many
sessions, about how long in real time) and one per session that ends, as a replayed run does.

The server is a scripted one on loopback (``scripted_server``) that reports a model name no folder may hold as it is."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import scripted_server
from live_runs import live_run
from scripted_server import scripted

#: Two sessions of two units each, short waits, and progress on (the tests' configs turn it off).
FAST = ("task.tool_executor=null", "limit.sessions=2", "limit.chunks=2", "model.unit_timeout_s=2",
        "model.close_timeout_s=2", "model.connect_timeout_s=3", "progress=true")
#: The folder Hydra makes for ``python -m ticktock.run model=endpoint`` (configs/run.yaml: time, model, decoder, clock).
HYDRA_NAMED = "2026-01-02_03-04-05_endpoint_ar_modeled"
SERVED_MODEL = "org/Duplex Model 7B"


@pytest.fixture(scope="module")
def manifest(tmp_path_factory):
    from helpers import write_sessions

    return write_sessions(tmp_path_factory.mktemp("named"), count=2)


def hydra_made(folder: Path) -> Path:
    """The run folder as Hydra leaves it when the run starts: its log, nothing else."""
    folder.mkdir(parents=True)
    (folder / "run.log").write_text("")
    return folder


def test_a_live_run_is_named_from_the_server_says_what_it_does_and_a_rerun_resumes_there(tmp_path, manifest, capsys,
                                                                                        monkeypatch):
    monkeypatch.setattr(scripted_server, "MODEL", SERVED_MODEL)
    runs = tmp_path / "runs"
    named = runs / "2026-01-02_03-04-05_org-Duplex-Model-7B_served_live"
    with scripted() as server:
        summary = live_run(hydra_made(runs / HYDRA_NAMED), server.url, f"task.manifest={manifest}", *FAST)
        assert summary.run_dir == named and summary.sessions == 2, summary.line()
        assert sorted(path.name for path in runs.iterdir()) == [named.name]  # Hydra's folder moved there, log kept
        assert (named / "run.json").is_file() and (named / "run.log").is_file()
        err = capsys.readouterr().err.splitlines()
        assert err[0] == (f"live run: 2 sessions into {server.url} (model {SERVED_MODEL}, decoder served, "
                          "live:vllm_omni_duplex), held in real time: about 4 s"), err
        assert re.fullmatch(r"live: session 1/2 done \(s\d\); 2/4 units, \d+ s", err[1]), err
        assert re.fullmatch(r"live: session 2/2 done \(s\d\); 4/4 units, \d+ s", err[2]), err

        again = live_run(hydra_made(runs / HYDRA_NAMED), server.url, f"task.manifest={manifest}", *FAST)
        assert again.run_dir == named and "resumed 2 of 2 sessions" in capsys.readouterr().err
        assert sorted(path.name for path in runs.iterdir()) == [named.name]  # the rerun's Hydra folder is gone


def test_the_folder_name_is_the_servers_safe_and_bounded_and_a_folder_named_otherwise_is_kept():
    from ticktock.endpoints.run import folder_label, server_named

    config, server = ["endpoint", "ar", "modeled"], ["embedded", "speclisten", "live"]
    assert server_named(Path("r/2026-01-02_03-04-05_endpoint_ar_modeled"), config, server) == \
        Path("r/2026-01-02_03-04-05_embedded_speclisten_live")
    assert server_named(Path("m/3-endpoint-ar-modeled-shard1of2"), config, server, "-shard1of2") == \
        Path("m/3-embedded-speclisten-live-shard1of2")  # a sweep's job folder
    assert server_named(Path("results/my_live_run"), config, server) == Path("results/my_live_run")  # chosen
    assert folder_label("openbmb/MiniCPM-o 4.5", "endpoint") == "openbmb-MiniCPM-o-4.5"
    assert folder_label("../..", "endpoint") == "endpoint" and folder_label("\u65e5\u672c", "served") == "served"
    assert len(folder_label("x" * 64, "endpoint")) <= 40
