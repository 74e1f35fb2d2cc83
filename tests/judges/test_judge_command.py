"""``python -m ticktock.judge``: judges every reply of every run, stores verdicts per run, resumes, re-judges on a
changed option, and without a judge model says how to plug one (exit 2)."""

import json
import subprocess
import sys

import pyarrow.parquet as pq
import pytest
from table_runs import chunk, write_run

from ticktock.judge import main, split_arguments
from ticktock.judges.base import JudgeError
from ticktock.judges.hf_local import LocalJudge
from ticktock.tables import load_results
from ticktock.tables.quality import quality_table

TURNS = [{"speaker": "user", "role": "request", "text": "What is the capital of France?", "start_s": 0.0, "end_s": 0.5,
          "expects_response": True},
         {"speaker": "user", "role": "request", "text": "And of Italy?", "start_s": 3.0, "end_s": 3.5,
          "expects_response": True}]
EXPECTED = {"answers": [{"turn": 0, "reference_answer": "Paris", "answer_aliases": []},
                        {"turn": 1, "reference_answer": "Rome", "answer_aliases": []}]}


def two_turn_run(folder, decoder, sessions=3):
    """Sessions of two requests each: replies 'It is Paris.' (chunk 1) and 'Rome.' (chunk 6: after the first
    reply's span, which ends 2 chunks after the second request starts)."""
    chunks, rows = [], []
    for i in range(sessions):
        sid = f"s{i}"
        texts = ["", "It is Paris.", "", "", "", "", "Rome." if i else "Milan."]
        chunks += [chunk(sid, k, kind="speak" if t else "listen", start_s=float(k), arrival_s=k + 1.0, output_text=t)
                   for k, t in enumerate(texts)]
        rows.append({"session_id": sid, "expected_json": json.dumps(EXPECTED), "turns_json": json.dumps(TURNS)})
    return write_run(folder, decoder, chunks, rows)


@pytest.fixture
def runs(tmp_path):
    two_turn_run(tmp_path / "runs" / "ar", "ar")
    two_turn_run(tmp_path / "runs" / "sl", "speclisten")
    return tmp_path / "runs"


def judge_options(model, *more):
    return ["judge=hf_local", f"judge.path={model}", "judge.device=cpu", "judge.dtype=float32", *more]


def stored(run_dir):
    return pq.read_table(run_dir / "judgements" / "hf_local.parquet").to_pandas()


def test_every_reply_of_every_run_is_judged_into_the_run_folder(runs, judge_model, capsys):
    assert main([str(runs), *judge_options(judge_model, "judge.batch_size=4")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 2 and all("6 replies: 6 judged, 0 kept from before; mean score " in line for line in out)
    table = stored(runs / "ar")
    assert list(table.columns[:5]) == ["run_id", "session_id", "task", "turn_index", "score"]
    assert sorted(zip(table.session_id, table.turn_index)) == [(f"s{i}", t) for i in range(3) for t in (0, 1)]
    assert table.score.between(1, 5).all() and set(table.judge) == {"hf_local"}
    assert table.judge_fingerprint.nunique() == 1 and table.judge_description[0].startswith("local transformers model ")
    assert (table.scale_min == 1).all() and (table.scale_max == 5).all() and table.run_id[0] == "m-ar-0.0"
    again = stored(runs / "sl")  # the same replies in both runs: the same scores
    assert again.sort_values(["session_id", "turn_index"]).score.tolist() == \
        table.sort_values(["session_id", "turn_index"]).score.tolist()


def test_a_rerun_resumes_and_a_changed_option_judges_again(runs, judge_model, capsys, monkeypatch):
    calls = []
    real = LocalJudge.judge
    monkeypatch.setattr(LocalJudge, "judge", lambda self, replies: calls.append(len(replies)) or real(self, replies))
    main([str(runs / "ar"), *judge_options(judge_model, "judge.batch_size=4")])
    first = stored(runs / "ar")
    assert calls == [4, 2]
    capsys.readouterr()
    main([str(runs / "ar"), *judge_options(judge_model, "judge.batch_size=4")])
    assert calls == [4, 2] and "0 judged, 6 kept from before" in capsys.readouterr().out
    assert stored(runs / "ar").judged_at.tolist() == first.judged_at.tolist()
    main([str(runs / "ar"), *judge_options(judge_model, "judge.max_prompt_tokens=1000")])
    assert "6 judged, 0 kept from before, 6 stale verdicts replaced" in capsys.readouterr().out
    changed = stored(runs / "ar")
    assert changed.judge_fingerprint.nunique() == 1 and changed.judge_fingerprint[0] != first.judge_fingerprint[0]


def test_an_interrupted_judge_keeps_its_batches_and_the_same_command_carries_on(runs, judge_model, capsys, monkeypatch):
    real, calls = LocalJudge.judge, []

    def interrupted_after_one_batch(self, replies):
        calls.append(len(replies))
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(self, replies)

    monkeypatch.setattr(LocalJudge, "judge", interrupted_after_one_batch)
    with pytest.raises(KeyboardInterrupt):
        main([str(runs / "ar"), *judge_options(judge_model, "judge.batch_size=2")])
    assert len(stored(runs / "ar")) == 2
    monkeypatch.setattr(LocalJudge, "judge", real)
    main([str(runs / "ar"), *judge_options(judge_model, "judge.batch_size=2")])
    assert "4 judged, 2 kept from before" in capsys.readouterr().out and len(stored(runs / "ar")) == 6


def test_the_quality_table_shows_the_judge_and_equal_replies_score_equally(runs, judge_model):
    main([str(runs), *judge_options(judge_model)])
    table = quality_table(load_results([str(runs)]))
    rows = table.frame.set_index("decoder")
    assert rows.loc["speclisten", "Δ judge hf_local vs ar"] == "+0.00 ✓" and rows.loc["ar", "Δ judge hf_local vs ar"] == "–"
    assert rows.loc["ar", "judge hf_local"] == rows.loc["speclisten", "judge hf_local"]
    assert rows.loc["ar", "judge hf_local"].endswith("(6 replies)")
    assert any(note.startswith("judge hf_local: local transformers model ") for note in table.notes) and table.failures == []


def test_without_a_judge_model_it_says_how_to_plug_one_and_exits_2(runs):
    done = subprocess.run([sys.executable, "-m", "ticktock.cli", "judge", str(runs)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    [line] = done.stderr.splitlines()
    assert line.startswith("ticktock: error: no judge model configured (judge=rule): the quality table scores replies "
                           "with the rule-based task scores of ticktock.world.scoring only")
    assert "python -m ticktock.judge <results dirs or globs> judge=hf_local judge.path=<folder" in line
    assert not (runs / "ar" / "judgements").exists()


def test_bad_paths_and_options_are_one_clear_error(runs, judge_model, tmp_path):
    with pytest.raises(JudgeError, match=rf"^judge.path: {tmp_path / 'nowhere'}: no such folder"):
        main([str(runs), "judge=hf_local", f"judge.path={tmp_path / 'nowhere'}"])
    with pytest.raises(JudgeError, match=r"nothing-here: no such file or folder"):
        main([str(tmp_path / "nothing-here"), *judge_options(judge_model)])
    with pytest.raises(JudgeError, match=r"judge.nope"):
        main([str(runs), *judge_options(judge_model, "judge.nope=1")])


def test_arguments_with_equals_signs_are_paths_when_they_exist(tmp_path):
    folder = tmp_path / "decoder=ar"
    folder.mkdir()
    assert split_arguments([str(folder), "judge=hf_local"]) == ([str(folder)], ["judge=hf_local"])


def test_a_judge_name_is_a_plain_word_never_a_path(runs, judge_model, tmp_path):
    with pytest.raises(JudgeError, match=r"^judge.name: must be a plain name of letters, digits, '_', '.' and '-' \("
                                         r"starting with a letter or digit, at most 128\): it names the file judgements/<name>.parquet in each run "
                                         r"folder; got '../../x'$"):
        main([str(runs), *judge_options(judge_model, "judge.name=../../x")])
    assert [p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*.parquet") if "judgements" in p.parts
            or p.name == "x.parquet"] == []  # nothing judged, nothing written beside the runs


def test_a_judge_target_that_cannot_be_imported_is_one_line_exit_2(runs, capsys, monkeypatch):
    from ticktock.errors import user_errors

    monkeypatch.delenv("TICKTOCK_DEBUG", raising=False)
    with pytest.raises(SystemExit) as done, user_errors():
        main([str(runs), "judge._target_=nope.Nope"])
    assert done.value.code == 2
    assert capsys.readouterr().err == "ticktock: error: judge._target_: cannot import 'nope.Nope' (no module named 'nope')\n"
