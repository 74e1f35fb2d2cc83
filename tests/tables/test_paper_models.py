"""The paper's columns stand only beside a model the paper measured (issue 62, friction 4): one decision,
``Setup.compares_with_paper`` over ``paper.measured_by_paper`` (the models listed in paper_numbers.yaml)."""

import pytest
from table_runs import chunk, concurrency, write_run

from ticktock.tables import load_results
from ticktock.tables.analysis import fig4c_table
from ticktock.tables.compute import latency_table, speak_speedup_table
from ticktock.tables.load import Setup
from ticktock.tables.paper import measured_by_paper, paper_models


def rows(post_audio_ms: float) -> list[dict]:
    return [chunk("s", 0, kind="speak", post_audio_ms=post_audio_ms, num_output_tokens=4, num_post_audio_forwards=4,
                  is_onset=True, response_ms=post_audio_ms),
            chunk("t", 0, kind="tool", task="fdb_v3", post_audio_ms=post_audio_ms, response_ms=post_audio_ms)]


def pair(folder, model: str):
    write_run(folder / "ar", "ar", rows(400.0), model=model)
    write_run(folder / "speclisten", "speclisten", rows(100.0), model=model)
    return load_results([str(folder)])


def paper_columns(table) -> list[str]:
    return [c for c in table.frame.columns if str(c).startswith("paper ")]


@pytest.mark.parametrize("model", ["fixture", "embedded", "minicpmo45"])
def test_tables_2_and_5_show_no_paper_column_for_a_model_the_paper_did_not_measure(tmp_path, model):
    results = pair(tmp_path, model)
    for table in (speak_speedup_table(results), latency_table(results)):
        assert paper_columns(table) == [], table.key
        assert any(f"model {model}: not one the paper measured" in line for line in table.provenance), table.key


def test_tables_2_and_5_show_the_paper_columns_for_a_model_it_measured(tmp_path):
    results = pair(tmp_path, "gander")
    assert paper_columns(speak_speedup_table(results)) == ["paper speedup", "paper #MAT"]
    assert paper_columns(latency_table(results)) == ["paper onset ms", "paper tool-call ms"]
    assert not any("not one the paper measured" in line for line in latency_table(results).provenance)


def test_the_papers_models_are_data_not_code():
    assert set(paper_models()) == {"streaming_slm", "gander", "realtime_venus", "lws"}
    assert measured_by_paper("gander") and not measured_by_paper("fixture")
    assert Setup("gander", "modeled:p", "A100", 0.0, 0, 1.0, 0).compares_with_paper
    assert not Setup("fixture", "modeled:p", "A100", 0.0, 0, 1.0, 0).compares_with_paper


def test_figure_4c_decides_by_the_same_rule(tmp_path):
    for model in ("fixture", "gander"):
        for decoder in ("ar", "speclisten"):
            write_run(tmp_path / model / f"{decoder}-4", decoder, rows(400.0 if decoder == "ar" else 100.0),
                      model=model, sharing=concurrency(4), run_id=f"{model}-{decoder}-4")
    table = fig4c_table(load_results([str(tmp_path)]))
    frame = table.frame.set_index(["model", "decoder"])
    assert frame.loc[("gander", "speclisten"), "paper speak speedup"] == "2.00"
    assert frame.loc[("fixture", "speclisten"), "paper speak speedup"] == ""
