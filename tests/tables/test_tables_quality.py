"""Losslessness and quality tables: the failure is loud, greedy differences are flagged, sampling gets CIs."""

import json

import pytest
from table_runs import chunk, write_run

from ticktock.tables import load_results
from ticktock.tables.quality import losslessness_table, quality_table, wilson

TURNS = [{"speaker": "user", "role": "request", "text": "capital of france", "start_s": 0.0, "end_s": 0.5,
          "expects_response": True}]
EXPECTED = {"answers": [{"turn": 0, "reference_answer": "Paris", "answer_aliases": []}], "tool_calls": []}


def qa_run(folder, decoder, answers, temperature=0.0):
    chunks = [chunk(f"s{i}", 0, kind="speak", start_s=0.0, arrival_s=1.0, output_text=a, output_token_ids=[len(a)])
              for i, a in enumerate(answers)]
    sessions = [{"session_id": f"s{i}", "expected_json": json.dumps(EXPECTED), "turns_json": json.dumps(TURNS)}
                for i in range(len(answers))]
    return write_run(folder, decoder, chunks, sessions, temperature=temperature)


def test_wilson_interval():
    assert [round(x, 4) for x in wilson(8, 10)] == [0.4902, 0.9433]
    assert wilson(0, 5)[0] == 0.0 and wilson(5, 5)[1] == 1.0


def test_losslessness_ok_and_failure(tmp_path):
    write_run(tmp_path / "ar", "ar", [chunk("s", 0, output_token_ids=[1, 2]), chunk("s", 1, output_token_ids=[3])])
    write_run(tmp_path / "sl", "speclisten", [chunk("s", 0, output_token_ids=[1, 2]), chunk("s", 1, output_token_ids=[3])])
    write_run(tmp_path / "pld", "pld", [chunk("s", 0, output_token_ids=[1, 2]), chunk("s", 1, output_token_ids=[3, 4])])
    table = losslessness_table(load_results([str(tmp_path)]))
    assert table.frame[["decoder", "chunks", "identical", "identical to ar", "first difference (session/chunk)",
                        "status"]].to_dict("records") == [
        {"decoder": "pld", "chunks": 2, "identical": 1, "identical to ar": 0.5,
         "first difference (session/chunk)": "s/1", "status": "FAILURE"},
        {"decoder": "speclisten", "chunks": 2, "identical": 2, "identical to ar": 1.0,
         "first difference (session/chunk)": "", "status": "ok"},
    ]
    assert len(table.failures) == 1 and table.failures[0].startswith("FAILURE: pld is lossless by design but only 50.0%")


def test_greedy_quality_must_equal_the_baseline(tmp_path):
    qa_run(tmp_path / "ar", "ar", ["It is Paris.", "Paris", "London"])
    qa_run(tmp_path / "sl", "speclisten", ["It is Paris.", "Paris", "London"])
    qa_run(tmp_path / "bad", "pld", ["It is Paris.", "Rome", "London"])
    table = quality_table(load_results([str(tmp_path)]))
    rows = {r["decoder"]: r for r in table.frame.to_dict("records")}
    assert rows["ar"]["qa"] == "66.7% (2/3)" and rows["speclisten"]["qa"] == "66.7% (2/3)"
    assert rows["pld"]["qa"] == "33.3% (1/3) ≠ar"
    assert rows["ar"]["respond"] == "100.0% (3/3)"
    assert table.failures == ["FAILURE: pld task scores differ from ar under greedy decoding in setup "
                              "m / modeled:test-profile / Test GPU (derived) / T=0 / seed 0: qa 1/3 vs 2/3"]


def test_sampled_quality_shows_wilson_intervals_and_no_failure(tmp_path):
    qa_run(tmp_path / "ar", "ar", ["Paris"] * 8 + ["no"] * 2, temperature=0.7)
    qa_run(tmp_path / "sl", "speclisten", ["Paris"] * 7 + ["no"] * 3, temperature=0.7)
    table = quality_table(load_results([str(tmp_path)]))
    assert table.frame["qa"].tolist() == ["80.0% (8/10) [49.0, 94.3]", "70.0% (7/10) [39.7, 89.2] ≠ar"]
    assert table.failures == []


@pytest.mark.parametrize("greedy", [True, False])
def test_quality_pools_counts_over_sessions(tmp_path, greedy):
    qa_run(tmp_path / "ar", "ar", ["Paris", "x"], temperature=0.0 if greedy else 1.0)
    table = quality_table(load_results([str(tmp_path)]))
    assert table.frame["sessions"].tolist() == [2]
    assert table.frame["qa"][0].startswith("50.0% (1/2)")


def test_a_distance_metric_is_shown_as_a_mean_not_a_rate():
    from collections import Counter

    from ticktock.tables.quality import _rate_text

    counts = Counter(backchannel_jsd_hits=0.5 + 0.25, backchannel_jsd_trials=2, qa_hits=1, qa_trials=2)
    assert _rate_text(counts, "backchannel_jsd", interval=True) == "0.375 (mean of 2)"
    assert _rate_text(counts, "qa", interval=False) == "50.0% (1/2)"


def in_bf16(folder):
    """The run as a bf16 / sdpa run of the model would record it (run.json's model facts)."""
    meta = json.loads((folder / "run.json").read_text())
    meta["environment"]["model"].update(dtype="bfloat16", attn_implementation="sdpa")
    (folder / "run.json").write_text(json.dumps(meta))


def test_a_bf16_divergence_is_reported_with_its_first_point_and_quality_not_failed(tmp_path):
    qa_run(tmp_path / "ar", "ar", ["Paris"] * 10)
    qa_run(tmp_path / "sl", "speclisten", ["Paris"] * 9 + ["Rome"])
    for name in ("ar", "sl"):
        in_bf16(tmp_path / name)
    results = load_results([str(tmp_path)])
    table = losslessness_table(results)
    [row] = table.frame.to_dict("records")
    assert row["arithmetic"] == "bfloat16/sdpa" and row["status"] == "diverged (inexact arithmetic)"
    assert row["identical"] == 9 and row["first difference (session/chunk)"] == "s9/0"
    assert row["quality vs baseline (95% CI)"] == "no difference"  # 9/10 vs 10/10: the intervals overlap
    assert table.failures == []
    assert quality_table(results).failures == []  # greedy, but not exact arithmetic: reported (≠), not failed
    assert "≠ar" in quality_table(results).frame.set_index("decoder").loc["speclisten", "qa"]


def test_a_bf16_divergence_that_changes_quality_says_which_metric(tmp_path):
    qa_run(tmp_path / "ar", "ar", ["Paris"] * 30)
    qa_run(tmp_path / "sl", "speclisten", ["Paris"] * 10 + ["Rome"] * 20)
    for name in ("ar", "sl"):
        in_bf16(tmp_path / name)
    [row] = losslessness_table(load_results([str(tmp_path)])).frame.to_dict("records")
    assert row["quality vs baseline (95% CI)"] == "qa 33.3% vs 100.0%"


def test_an_fp32_divergence_beside_a_bf16_baseline_is_not_exact(tmp_path):
    qa_run(tmp_path / "ar", "ar", ["Paris", "Paris"])
    qa_run(tmp_path / "sl", "speclisten", ["Paris", "Rome"])
    in_bf16(tmp_path / "ar")
    [row] = losslessness_table(load_results([str(tmp_path)])).frame.to_dict("records")
    assert row["arithmetic"] == "float32/eager (baseline bfloat16/sdpa)" and row["status"] == "diverged (inexact arithmetic)"


# ------------------------------------------------------------------------------ judge scores (ticktock.judges)


def write_verdicts(run_dir, scores, judge="hf_local", fingerprint="a" * 64, digest=None):
    """A hand-made judgement file: one verdict per reply of the run (in session order) with the given scores."""
    from ticktock.judges.replies import run_replies
    from ticktock.judges.store import judgement_path, write_judgements
    from ticktock.tables.load import read_run

    replies = run_replies(read_run(run_dir))
    rows = [{"run_id": r.run_id, "session_id": r.session_id, "task": r.task, "turn_index": r.turn_index, "score": score,
             "scale_min": 1.0, "scale_max": 5.0, "probabilities": [], "scale_mass": None, "note": "", "judge": judge,
             "judge_fingerprint": fingerprint, "judge_description": "local transformers model tiny-judge (LlamaForCausalLM), float32 on cpu",
             "input_sha256": digest or r.digest(), "judged_at": 0.0} for r, score in zip(replies, scores)]
    write_judgements(judgement_path(run_dir, judge), rows)


def test_judge_scores_get_a_mean_with_a_t_interval_and_a_delta_to_the_baseline(tmp_path):
    answers = ["It is Paris.", "Paris", "London"]
    for name, decoder, scores in [("ar", "ar", [4, 5, 3]), ("sl", "speclisten", [4, 5, 3.3]), ("pld", "pld", [4, 4, 3])]:
        qa_run(tmp_path / name, decoder, answers)
        write_verdicts(tmp_path / name, scores)
    table = quality_table(load_results([str(tmp_path)]))
    rows = table.frame.set_index("decoder")
    # ar: mean 4, s = 1, t(0.975, 2) = 4.3027: 4 ± 4.3027 / sqrt(3) = [1.52, 6.48]
    assert rows.loc["ar", "judge hf_local"] == "4.00 [1.52, 6.48] (3 replies)"
    assert rows.loc["ar", "Δ judge hf_local vs ar"] == "–"
    # speclisten: mean 4.1, Δ +0.1: within the paper's 0.1 (the boundary counts as within)
    assert rows.loc["speclisten", "judge hf_local"] == "4.10 [1.98, 6.22] (3 replies)"
    assert rows.loc["speclisten", "Δ judge hf_local vs ar"] == "+0.10 ✓"
    # pld: mean 11/3, s = 1/sqrt(3): 3.67 ± 4.3027 / 3 = [2.23, 5.10]; Δ -0.33, beyond 0.1
    assert rows.loc["pld", "judge hf_local"] == "3.67 [2.23, 5.10] (3 replies)"
    assert rows.loc["pld", "Δ judge hf_local vs ar"] == "-0.33 ✗"
    assert rows.loc["pld", "qa"] == "66.7% (2/3)"  # the rule-based scores are unchanged
    assert table.failures == []  # greedy, exact arithmetic: judge scores are reported, never failed
    [note] = [n for n in table.notes if n.startswith("judge hf_local:")]
    assert note.startswith("judge hf_local: local transformers model tiny-judge (LlamaForCausalLM), float32 on cpu "
                           "(fingerprint aaaaaaaaaaaa); ")
    assert "95% Student-t interval over replies" in note and "|Δ| <= 0.1 (the paper's criterion" in note
    assert not any(n.startswith("reply quality judge: none configured") for n in table.notes)


def test_without_judgements_one_note_says_no_judge_is_configured_and_how_to_run_one(tmp_path):
    qa_run(tmp_path / "ar", "ar", ["Paris"])
    table = quality_table(load_results([str(tmp_path)]))
    assert not [c for c in table.frame.columns if "judge" in c]
    [note] = [n for n in table.notes if "judge" in n]
    assert note.startswith("reply quality judge: none configured (the scores above are the rule-based task scores of "
                           "ticktock.world.scoring; to add each decoder's mean 1-5 grade from a local judge model, run: "
                           "python -m ticktock.judge <results dirs or globs> judge=hf_local judge.path=")


def test_verdicts_on_changed_replies_are_left_out_and_partial_judging_is_counted(tmp_path):
    qa_run(tmp_path / "ar", "ar", ["Paris", "Paris", "Rome"])
    qa_run(tmp_path / "sl", "speclisten", ["Paris", "Paris", "Rome"])
    write_verdicts(tmp_path / "ar", [5, 3, 1])
    write_verdicts(tmp_path / "sl", [5, 3])  # the third reply not judged (yet)
    table = quality_table(load_results([str(tmp_path)]))
    rows = table.frame.set_index("decoder")
    assert rows.loc["speclisten", "judge hf_local"].endswith("(2 of 3 replies)")
    assert rows.loc["speclisten", "Δ judge hf_local vs ar"] == "+1.00 ✗"  # 4 vs 3
    write_verdicts(tmp_path / "sl", [5, 3, 1], digest="0" * 64)  # judged on other text: stale
    table = quality_table(load_results([str(tmp_path)]))
    assert table.frame.set_index("decoder").loc["speclisten", "judge hf_local"] == "–"
    assert "3 stored judge verdicts left out: the replies they judged have changed since" in " ".join(table.notes)


def test_two_configurations_of_a_judge_are_two_columns(tmp_path):
    qa_run(tmp_path / "ar", "ar", ["Paris", "Rome"])
    qa_run(tmp_path / "sl", "speclisten", ["Paris", "Rome"])
    write_verdicts(tmp_path / "ar", [4, 2], fingerprint="a" * 64)
    write_verdicts(tmp_path / "sl", [4, 2], fingerprint="b" * 64)
    frame = quality_table(load_results([str(tmp_path)])).frame.set_index("decoder")
    assert frame.loc["ar", "judge hf_local aaaaaaaa"] == "3.00 [-9.71, 15.71] (2 replies)"
    assert frame.loc["speclisten", "judge hf_local aaaaaaaa"] == "–"
    assert frame.loc["speclisten", "Δ judge hf_local bbbbbbbb vs ar"] == "–"  # never compared across configurations
