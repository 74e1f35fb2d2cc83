"""``ticktock bench build`` and ``fetch`` on local copies in the published shapes (an OpenAudioBench ``eval_datas/``
tree, a VoiceBench parquet with an Audio column, a Big Bench Audio audiofolder in the Hub cache, an FDB v3 folder),
offline: the selection applied, the found-vs-paper table, what is missing and why, and a rerun that resumes."""

from __future__ import annotations

import re

import pytest

import test_convert_big_bench_audio as bba
import test_convert_fdb_v3 as fdb_v3
import test_convert_openaudiobench as oab
import test_convert_voicebench_alpacaeval as voicebench
from convert_helpers import cached_snapshot, offline_hub
from ticktock.corpus.bench import BenchError
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
