"""``ticktock bench build`` and ``fetch`` on local copies in the published shapes (an OpenAudioBench ``eval_datas/``
tree, a VoiceBench parquet with an Audio column, a Big Bench Audio audiofolder in the Hub cache, an FDB v3 folder),
offline: the selection applied, the found-vs-paper table, what is missing and why, and a rerun that resumes."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

import test_convert_big_bench_audio as bba
import test_convert_fdb_v3 as fdb_v3
import test_convert_openaudiobench as oab
import test_convert_voicebench_alpacaeval as voicebench
from convert_helpers import cached_snapshot, offline_hub
from ticktock.corpus.bench import BenchError, BenchOptionError
from ticktock.corpus.bench.__main__ import main as bench
from ticktock.sessions.manifest import load_manifest


def line(text: str, task: str) -> str:
    (found,) = [line for line in text.splitlines() if line.startswith(f"{task} ")]
    return found


def row(text: str, task: str) -> list[str]:
    return line(text, task).split()


def test_build_converts_what_is_there_says_what_is_missing_and_resumes(tmp_path, monkeypatch, capsys):
    hub_cache = offline_hub(monkeypatch, tmp_path / "caches")
    downloads = tmp_path / "dl"
    oab.make_copy(downloads / "OpenAudioBench")
    voicebench.write_encoded(downloads / "voicebench/alpacaeval/test-00000-of-00001.parquet")
    fdb_v3.make_sample(downloads / "v3", "ecommerce_02_spk11", fdb_v3.ORDER)
    selection = tmp_path / "two.yaml"
    selection.write_text("name: two\nseed: 0\nper_task: 2\n")
    out = tmp_path / "tickbench"
    args = ["build", "--out", str(out), "--selection", str(selection),
            "--src", f"openaudiobench={downloads / 'OpenAudioBench'}",
            "--src", f"voicebench_alpacaeval={downloads / 'voicebench'}", "--src", f"fdb_v3={downloads / 'v3'}"]
    assert bench(args) == 0
    text = capsys.readouterr().out
    assert row(text, "llama_questions")[:3] == ["llama_questions", "2", "2"]
    assert line(text, "llama_questions").endswith("openaudiobench (converted)")
    assert row(text, "web_questions")[:3] == ["web_questions", "1", "2"] and "short: 1 of 2" in text
    assert row(text, "alpaca_eval")[:3] == ["alpaca_eval", "2", "2"]  # 2 of the copy's 3, by the selection
    assert row(text, "big_bench_audio")[:4] == ["big_bench_audio", "0", "2", "0"]
    assert row(text, "fdb_v3")[:3] == ["fdb_v3", "1", "2"]
    assert re.search(r"^total +7 +16 +\d+ +paper: 760 sessions, 15,883 chunks \(8 tasks\)$", text, re.M), text
    assert ("missing big_bench_audio: ArtificialAnalysis/big_bench_audio: big_bench_audio is not in the local Hugging "
            "Face cache and offline mode is on; fetch it once online with: ticktock bench fetch big_bench_audio"
            ) in text
    assert "missing fdb_v1: not given: download Full-Duplex-Bench v1.0 (a Google Drive zip" in text
    assert "and pass --src fdb_v1=DIR" in text
    assert [s.task for s in load_manifest(out / "openaudiobench/manifest.jsonl")] == \
        ["llama_questions", "llama_questions", "web_questions", "trivia_qa"]
    converted = (out / "openaudiobench/manifest.jsonl").stat().st_mtime_ns

    bba.make_copy(cached_snapshot(hub_cache, "ArtificialAnalysis/big_bench_audio"))  # now in the cache
    assert bench(args) == 0
    text = capsys.readouterr().out
    assert (out / "openaudiobench/manifest.jsonl").stat().st_mtime_ns == converted
    assert line(text, "llama_questions").endswith("openaudiobench (kept from the last build)")
    assert line(text, "big_bench_audio").endswith("big_bench_audio (converted)")
    assert row(text, "big_bench_audio")[:3] == ["big_bench_audio", "2", "2"] and "missing big_bench_audio" not in text
    assert re.search(r"^total +9 +16 ", text, re.M), text

    assert bench(["export", str(out), "--out", str(tmp_path / "dataset")]) == 0  # the whole build, one dataset
    from datasets import get_dataset_config_names

    assert get_dataset_config_names(str(tmp_path / "dataset")) == ["llama_questions", "web_questions", "trivia_qa",
                                                                   "alpaca_eval", "big_bench_audio", "fdb_v3"]


def test_fetch_names_what_it_cannot_fetch(tmp_path, monkeypatch, capsys):
    offline_hub(monkeypatch, tmp_path / "caches")
    with pytest.raises(BenchError, match=r"fetch: fdb_v3 not on the Hugging Face Hub"):
        bench(["fetch", "fdb_v3"])
    with pytest.raises(BenchError, match=r"^hlt-lab/voicebench: voicebench_alpacaeval is not in the local Hugging "
                                         r"Face cache and offline mode is on"):
        bench(["fetch", "voicebench_alpacaeval"])
    copy = oab.make_copy(tmp_path / "OpenAudioBench")
    assert bench(["fetch", "openaudiobench", "--src", f"openaudiobench={copy}"]) == 0
    assert capsys.readouterr().out == f"openaudiobench         {copy}: 4 items, a local copy\n"


def user_environment(tmp_path, **env) -> dict[str, str]:
    """This process's environment as a user's shell has it: its own empty Hugging Face caches and no offline switch
    (``HF_HUB_OFFLINE``, nor ``TRANSFORMERS_OFFLINE``, which ``huggingface_hub`` also reads; CI sets both), unless
    ``env`` sets one."""
    environment = {key: value for key, value in os.environ.items()
                   if not key.startswith(("HF_", "TICKTOCK_")) and key != "TRANSFORMERS_OFFLINE"}
    return {**environment, "HF_HOME": str(tmp_path / "hf-home"), **env}


def bench_process(args: list[str], tmp_path, **env) -> subprocess.CompletedProcess:
    """``python -m ticktock.corpus.bench ARGS`` in a subprocess, in ``user_environment``, as a user types it."""
    environment = user_environment(tmp_path, **env)
    return subprocess.run([sys.executable, "-m", "ticktock.corpus.bench", *args], capture_output=True, text=True,
                          timeout=120, env=environment, cwd=tmp_path)


def test_a_src_naming_no_source_is_one_line_with_exit_2(tmp_path):
    expected = ("ticktock: error: --src 'nope=dl/x': no source 'nope'; the sources: openaudiobench, "
                "voicebench_alpacaeval, big_bench_audio, fdb_v1, fdb_v1_5, fdb_v3\n")
    for command in (["build", "--out", "out"], ["fetch"]):
        done = bench_process([*command, "--src", "nope=dl/x"], tmp_path, HF_HUB_OFFLINE="1")
        assert (done.returncode, done.stderr, done.stdout) == (2, expected, ""), command
    done = bench_process(["build", "--out", "out", "--src", "fdb_v3"], tmp_path, HF_HUB_OFFLINE="1")
    assert done.returncode == 2 and done.stderr == (
        "ticktock: error: --src 'fdb_v3': expected SOURCE=ID_OR_FOLDER, SOURCE one of openaudiobench, "
        "voicebench_alpacaeval, big_bench_audio, fdb_v1, fdb_v1_5, fdb_v3\n")
    assert not (tmp_path / "out").exists()
    with pytest.raises(BenchOptionError, match=r"^--src 'nope=x': no source 'nope'"):
        bench(["build", "--out", str(tmp_path / "out"), "--src", "nope=x"])


def test_a_build_that_finds_nothing_is_one_error_and_leaves_no_folder_of_its_own(tmp_path, monkeypatch, capsys):
    offline_hub(monkeypatch, tmp_path / "caches")
    broken = tmp_path / "dl" / "v3"  # given, but not in Full-Duplex-Bench v3's published layout
    broken.mkdir(parents=True)
    out = tmp_path / "new" / "tickbench"
    with pytest.raises(BenchError) as refused:
        bench(["build", "--out", str(out), "--src", f"fdb_v3={broken}"])
    message = str(refused.value)
    assert message.startswith(f"{out}: nothing built: no source could be read (openaudiobench: "
                              "baichuan-inc/OpenAudioBench: openaudiobench is not in the local Hugging Face cache and "
                              "offline mode is on; fetch it once online with: ticktock bench fetch openaudiobench; "), \
        message
    assert f"; fdb_v3: {broken}" in message and "\n" not in message
    assert message.endswith("; fdb_v1, fdb_v1_5: not given (downloaded by hand; pass --src SOURCE=DIR))"), message
    assert capsys.readouterr().out == ""  # no table of zeros before the error
    assert not out.exists() and (tmp_path / "new").is_dir()  # only what this build made is removed

    mine = tmp_path / "mine"  # a folder that was there, with the user's file and an empty folder: all kept
    (mine / "fdb_v3").mkdir(parents=True)
    (mine / "notes.txt").write_text("mine")
    with pytest.raises(BenchError, match="nothing built"):
        bench(["build", "--out", str(mine), "--src", f"fdb_v3={broken}"])
    assert sorted(p.name for p in mine.iterdir()) == ["fdb_v3", "notes.txt"]


def test_build_and_fetch_without_offline_mode_when_the_hub_cannot_be_reached_are_one_line(tmp_path):
    """No ``HF_HUB_OFFLINE``, and a Hub endpoint that refuses connections (as on a machine without network): the
    Hub libraries would retry each request with two warning lines for about 25 s per source; the command asks the
    Hub once and says it in one line."""
    unreachable = {"HF_ENDPOINT": "http://127.0.0.1:9", "HF_HUB_ETAG_TIMEOUT": "5"}
    done = bench_process(["build", "--out", "tickbench", "--src", "openaudiobench=someone/oab-copy"], tmp_path,
                         **unreachable)
    assert done.returncode == 3 and done.stdout == "", done.stderr[-3000:]
    assert len(done.stderr.splitlines()) == 1, done.stderr[-3000:]
    assert done.stderr.startswith(
        "ticktock: error: tickbench: nothing built: no source could be read (openaudiobench: someone/oab-copy: "
        "openaudiobench is not in the local Hugging Face cache and the Hub cannot be reached (ConnectError); fetch it "
        "once online with: ticktock bench fetch openaudiobench --src openaudiobench=someone/oab-copy; "), done.stderr
    assert not (tmp_path / "tickbench").exists()

    done = bench_process(["fetch", "voicebench_alpacaeval"], tmp_path, **unreachable)
    assert done.returncode == 3 and done.stderr == (
        "ticktock: error: hlt-lab/voicebench: voicebench_alpacaeval is not in the local Hugging Face cache and the Hub "
        "cannot be reached (ConnectError); fetch it once online with: ticktock bench fetch voicebench_alpacaeval\n")


def test_offline_when_unreachable_switches_the_hub_off_only_inside_the_block(monkeypatch):
    import datasets
    from huggingface_hub import constants

    from ticktock.sessions.hub import offline, offline_reason, offline_when_unreachable

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "ENDPOINT", "http://127.0.0.1:9")  # refuses connections, as no network does
    with offline_when_unreachable() as why:
        assert why == "ConnectError" and offline() and datasets.config.HF_HUB_OFFLINE
        assert offline_reason() == "the Hub cannot be reached (ConnectError)"
    assert not offline() and not datasets.config.HF_HUB_OFFLINE and offline_reason() == "offline mode is on"
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)  # the user's offline mode: no request, nothing changed
    with offline_when_unreachable() as why:
        assert why is None and offline_reason() == "offline mode is on"


def test_convert_and_task_hf_from_a_hub_id_when_the_hub_cannot_be_reached_are_one_line(tmp_path):
    """The same quick answer for ``ticktock convert --src HUB_ID`` and ``task=hf task.dataset=HUB_ID``: one line, no
    retry warnings, in seconds rather than half a minute."""
    environment = user_environment(tmp_path, HF_ENDPOINT="http://127.0.0.1:9", HF_HUB_ETAG_TIMEOUT="5")
    commands = {
        "convert": ["ticktock.corpus.convert", "voicebench_alpacaeval", "--src", "someone/voicebench-copy", "--out",
                    "out"],
        "task=hf": ["ticktock.run", "task=hf", "task.dataset=someone/tickbench", "progress=false",
                    f"hydra.run.dir={tmp_path / 'run'}"],
    }
    for name, args in commands.items():
        done = subprocess.run([sys.executable, "-m", *args], capture_output=True, text=True, timeout=120,
                              env=environment, cwd=tmp_path)
        assert done.returncode == 3 and len(done.stderr.splitlines()) == 1, (name, done.stderr[-3000:])
        assert done.stderr.startswith("ticktock: error: someone/") and "cannot be reached" in done.stderr, done.stderr
