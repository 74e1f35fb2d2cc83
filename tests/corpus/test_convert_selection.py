"""Reproducible selections of converted sessions (``--per-task``, ``--selection``) and ``--check``."""

from __future__ import annotations

import numpy as np
import pytest
import soundfile

import test_convert_openaudiobench as oab
from ticktock.corpus.convert import ConvertError, convert
from ticktock.corpus.convert.__main__ import cli
from ticktock.corpus.convert.selection import Selection, load_selection, select

KEYS = [("web_questions", f"web_questions-{i:04d}") for i in range(40)] + [("fdb_v3", f"fdb_v3-x{i}") for i in range(5)]


def test_per_task_selection_is_seeded_nested_and_independent_of_order():
    small, large = select(KEYS, Selection(per_task=5, seed=3)), select(KEYS, Selection(per_task=12, seed=3))
    assert len(small) == 10 and len(large) == 17  # fdb_v3 has only 5
    assert set(small) <= set(large) and small == sorted(small)
    assert select(KEYS, Selection(per_task=5, seed=4)) != small
    reordered = list(reversed(KEYS))
    assert {reordered[i] for i in select(reordered, Selection(per_task=5, seed=3))} == {KEYS[i] for i in small}
    alone = [k for k in KEYS if k[0] == "fdb_v3"]  # another source's items change nothing
    assert {alone[i] for i in select(alone, Selection(per_task=2, seed=3))} == {
        KEYS[i] for i in select(KEYS, Selection(per_task=2, seed=3)) if KEYS[i][0] == "fdb_v3"}


def test_shipped_config_and_config_files(tmp_path):
    shipped = load_selection("ticktock_bench")
    assert (shipped.name, shipped.per_task, shipped.seed, shipped.ids) == ("ticktock_bench", 95, 0, {})
    path = tmp_path / "paper.yaml"
    path.write_text("name: paper\nper_task: 2\nids:\n  fdb_v3: [fdb_v3-x4, fdb_v3-x0]\n")
    chosen = [KEYS[i] for i in select(KEYS, load_selection(path))]
    assert [k for k in chosen if k[0] == "fdb_v3"] == [("fdb_v3", "fdb_v3-x0"), ("fdb_v3", "fdb_v3-x4")]
    assert sum(k[0] == "web_questions" for k in chosen) == 2
    path.write_text("per_task: 0\n")
    with pytest.raises(ConvertError, match=r"paper.yaml: field 'per_task' must be a whole number >= 1"):
        load_selection(path)
    path.write_text("per_task: 2\nsessions: 3\n")
    with pytest.raises(ConvertError, match=r"paper.yaml: unknown field\(s\) sessions"):
        load_selection(path)
    path.write_text("ids: {fdb_v3: fdb_v3-x0}\n")
    with pytest.raises(ConvertError, match=r"paper.yaml: field 'ids' must map task types to lists"):
        load_selection(path)
    with pytest.raises(ConvertError, match=r"nope.yaml: selection config not found"):
        load_selection("nope")


def test_cli_per_task_and_selection_files(tmp_path, capsys):
    rows = {"web_questions": (oab.ROWS["web_questions"][0],
                              [[f"question {i}?", f"answer {i}", f"web_questions_{i}.mp3"] for i in range(6)])}
    source = oab.make_copy(tmp_path / "OpenAudioBench", rows)
    assert cli(["openaudiobench", "--src", str(source), "--out", str(tmp_path / "a"), "--per-task", "2", "--seed", "1"]) == 0
    first = convert("openaudiobench", source, tmp_path / "b", selection=Selection(per_task=2, seed=1),
                    warn=lambda line: None)
    assert "web_questions    sessions=   2" in capsys.readouterr().out and len(first.sessions) == 2
    config = tmp_path / "mine.yaml"
    config.write_text("ids:\n  web_questions: [web_questions-0005, web_questions-0099]\n")
    assert cli(["openaudiobench", "--src", str(source), "--out", str(tmp_path / "c"), "--selection", str(config)]) == 0
    captured = capsys.readouterr()
    assert "selection mine: session web_questions-0099 is not in" in captured.err
    assert "warnings         selection=1" in captured.out
    from ticktock.corpus.convert import ConvertOptionError

    with pytest.raises(ConvertOptionError, match="exclude each other"):  # exit 2
        cli(["openaudiobench", "--src", str(source), "--out", str(tmp_path / "d"), "--selection", "ticktock_bench",
             "--per-task", "3"])


def test_check_prints_statistics_and_warnings_and_writes_nothing(tmp_path, capsys):
    source = oab.make_copy(tmp_path / "OpenAudioBench")
    silent = source / "eval_datas/llama_questions/audios/llama_questions_1.mp3"
    soundfile.write(str(silent), np.zeros(22_050, dtype=np.float32), 22_050, format="MP3")
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    assert cli(["openaudiobench", "--src", str(source), "--check"]) == 0
    captured = capsys.readouterr()
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before
    assert "llama_questions_1.mp3: no speech found" in captured.err
    lines = captured.out.splitlines()
    assert lines[0].startswith("llama_questions  sessions=   2 hours=  0.00 seconds min/median/max=")
    assert "turns=    2 tool_calls=   0" in lines[0]
    assert "total            sessions=   4" in lines[-2] and "nothing written" in lines[-2]
    assert lines[-1] == "warnings         silent=1"
    from ticktock.corpus.convert import ConvertOptionError

    with pytest.raises(ConvertOptionError, match="--out is required"):  # exit 2
        cli(["openaudiobench", "--src", str(source)])
