"""Miniatures (random weights) are labelled at the source and in the results: the miniature writers mark the
checkpoint's config.json, the adapters' ``describe()`` puts ``miniature`` / ``random_weights`` into run.json
``environment.model`` (``random_init`` too), and the tables name such a model ``<model> (miniature, random
weights)``, keep the paper's columns empty for it and say why. Runs without the marker (real weights, the embedded
model, runs written before the marker existed) read as before."""

import json
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "tables"))  # table_runs: hand-made run folders

from table_runs import chunk, concurrency, write_run  # noqa: E402

from ticktock.adapters.checkpoint import MINIATURE_KEY  # noqa: E402
from ticktock.results.runjson import shape_problem  # noqa: E402
from ticktock.tables import load_results  # noqa: E402
from ticktock.tables.analysis import fig4c_table  # noqa: E402
from ticktock.tables.compute import max_lag_table, speak_speedup_table  # noqa: E402

LABEL = "(miniature, random weights)"


@pytest.fixture(scope="module")
def gander(miniatures):
    return miniatures["gander"]


@pytest.fixture(scope="module")
def slm(miniatures):
    return miniatures["streaming_slm"]


def marker(folder: Path) -> dict | None:
    return json.loads((folder / "config.json").read_text()).get(MINIATURE_KEY)


def unmarked_copy(folder: Path, out: Path) -> Path:
    """A copy of a (non-delta) miniature whose config.json lacks the marker: a checkpoint as a real one reads."""
    shutil.copytree(folder, out)
    config = json.loads((out / "config.json").read_text())
    config.pop(MINIATURE_KEY)
    (out / "config.json").write_text(json.dumps(config))
    return out


def mark_random(run_dir: Path, miniature: bool = True) -> Path:
    """A hand-made run whose run.json says its model had random weights, as the adapters write it."""
    meta = json.loads((run_dir / "run.json").read_text())
    meta["environment"]["model"].update(miniature=miniature, random_weights=True)
    (run_dir / "run.json").write_text(json.dumps(meta))
    return run_dir


# ------------------------------------------------------------------------------------------- at the source

def test_the_miniature_writers_mark_every_config_json(gander, slm):
    for folder in (gander, gander / "base", slm):
        found = marker(folder)
        assert found["random_weights"] is True and found["written_by"] == "ticktock.miniatures", folder
        assert isinstance(found["parameters"], int) and found["parameters"] > 1_000_000, folder


def test_a_miniature_says_so_in_describe_with_the_parameters_it_loads(gander):
    from ticktock.adapters.minicpmo import load_minicpmo_adapter

    adapter = load_minicpmo_adapter(path=str(gander), repo_id="Gander-Omni/Gander", name="gander",
                                    base_repo_id="openbmb/MiniCPM-o-4_5", tool_layout="gander")
    described = adapter.describe()
    assert (described["miniature"], described["random_weights"]) == (True, True)
    assert described["parameters"] == marker(gander)["parameters"]
    assert adapter.replica().describe()["miniature"] is True  # a concurrency slot's replica says it too


def test_random_init_is_random_weights_and_real_weights_are_not(gander, tmp_path):
    from ticktock.adapters.minicpmo import load_minicpmo_adapter

    plain = unmarked_copy(gander / "base", tmp_path / "plain")  # a checkpoint without the marker: real weights
    real = load_minicpmo_adapter(path=str(plain)).describe()
    assert (real["miniature"], real["random_weights"]) == (False, False)
    random = load_minicpmo_adapter(path=str(plain), random_init=True).describe()
    assert (random["miniature"], random["random_weights"]) == (False, True)


def test_the_streaming_slm_adapter_reads_the_marker(slm, tmp_path):
    from ticktock.adapters.qwen_omni import load_streaming_slm_adapter

    described = load_streaming_slm_adapter(slm).describe()
    assert (described["miniature"], described["random_weights"]) == (True, True)
    assert described["parameters"] == marker(slm)["parameters"]
    plain = load_streaming_slm_adapter(unmarked_copy(slm, tmp_path / "plain")).describe()
    assert (plain["miniature"], plain["random_weights"]) == (False, False)


# ------------------------------------------------------------------------------ a replay, then Table 2

@pytest.fixture(scope="module")
def miniature_runs(gander, tmp_path_factory):
    """AR and Speculative Listening replayed on the Gander miniature: one session, 4 chunks, modeled clock."""
    from ticktock.replay.config import compose_run
    from ticktock.replay.runner import run

    folder = tmp_path_factory.mktemp("miniature_runs")
    for decoder in ("ar", "speclisten"):
        cfg = compose_run(decoder, "gander", None, [f"model.path={gander}", "limit.sessions=1", "limit.chunks=4",
                                                    "clock=modeled"])
        run(cfg, folder / decoder)
    return folder


def test_a_run_on_a_miniature_says_so_in_run_json(miniature_runs):
    for decoder in ("ar", "speclisten"):
        model = json.loads((miniature_runs / decoder / "run.json").read_text())["environment"]["model"]
        assert (model["name"], model["miniature"], model["random_weights"]) == ("gander", True, True)


def test_table2_of_a_miniature_is_labelled_and_has_no_paper_column(miniature_runs):
    table = speak_speedup_table(load_results([str(miniature_runs)]))
    assert len(table.frame), f"no speak rows: {table.notes}"
    assert set(table.frame["model"]) == {f"gander {LABEL}"}
    assert not [column for column in table.frame.columns if column.startswith("paper")]  # no row has a paper value
    why = [line for line in table.provenance if "its weights are random" in line]
    assert why and "measures the harness, not the model" in why[0] and "no paper value is shown for it" in why[0]
    assert any(line.startswith(f"model gander {LABEL}: ") for line in table.provenance)


def test_an_embedded_model_run_is_not_labelled(tmp_path):
    from ticktock.replay.config import compose_run
    from ticktock.replay.runner import run

    run(compose_run("ar", "embedded", None, ["limit.sessions=1", "limit.chunks=2"]), tmp_path / "ar")
    model = json.loads((tmp_path / "ar" / "run.json").read_text())["environment"]["model"]
    assert not model.get("random_weights") and not model.get("miniature")
    results = load_results([str(tmp_path)])
    assert [setup.model_label for setup in results.setups()] == ["embedded"]
    table = speak_speedup_table(results)
    assert not any("random" in line for line in table.provenance)


# ------------------------------------------------------------------------------ hand-made runs, every table

PAPER_MODEL = "gander"  # a model the paper measured (paper_numbers.yaml models): its real weights get paper columns


def pair(folder: Path) -> Path:
    write_run(folder / "ar", "ar", [chunk("s", 0, kind="speak", post_audio_ms=300.0, num_output_tokens=3),
                                    chunk("s", 1, kind="speak", post_audio_ms=500.0, num_output_tokens=5)],
              [{"session_id": "s", "task": "fdb_v3", "max_lag_ms": 100.0}], model=PAPER_MODEL)
    write_run(folder / "speclisten", "speclisten",
              [chunk("s", 0, kind="speak", post_audio_ms=100.0, num_output_tokens=3),
               chunk("s", 1, kind="speak", post_audio_ms=100.0, num_output_tokens=5)],
              [{"session_id": "s", "task": "fdb_v3", "max_lag_ms": 0.0}], model=PAPER_MODEL)
    return folder


def test_runs_without_the_marker_read_as_before(tmp_path):
    table = speak_speedup_table(load_results([str(pair(tmp_path))]))
    assert table.frame["model"].tolist() == ["gander", "gander"]
    assert table.frame["paper speedup"].tolist() == ["1.00", "2.60-2.76"]


def test_random_weights_empty_every_paper_column_and_label_the_model(tmp_path):
    folder = pair(tmp_path)
    for run_dir in (folder / "ar", folder / "speclisten"):
        mark_random(run_dir, miniature=False)  # random_init: random weights, not a miniature
    results = load_results([str(folder)])
    speak = speak_speedup_table(results)
    assert speak.frame["model"].tolist() == ["gander (random weights)"] * 2
    assert "paper speedup" not in speak.frame.columns  # no row has a paper value: the column is left out
    assert any("random_init" in line and "its weights are random" in line for line in speak.provenance)
    lag = max_lag_table(results)
    assert not [column for column in lag.frame.columns if column.startswith("paper")]


def test_a_miniature_and_the_real_model_are_two_setups(tmp_path):
    pair(tmp_path / "real")
    for run_dir in pair(tmp_path / "mini").iterdir():
        meta = json.loads((run_dir / "run.json").read_text())
        meta["run_id"] += "-mini"
        (run_dir / "run.json").write_text(json.dumps(meta))
        mark_random(run_dir)
    table = speak_speedup_table(load_results([str(tmp_path)]))
    by_model = {(r["model"], r["decoder"]): r["paper speedup"] for r in table.frame.to_dict("records")}
    assert by_model == {("gander", "ar"): "1.00", ("gander", "speclisten"): "2.60-2.76",
                        (f"gander {LABEL}", "ar"): "", (f"gander {LABEL}", "speclisten"): ""}


def test_fig4c_has_no_paper_values_for_random_weights(tmp_path):
    rows = [chunk("s", 0, kind="speak", post_audio_ms=400.0), chunk("t", 0, kind="tool", task="fdb_v3",
                                                                       post_audio_ms=2000.0)]
    fast = [chunk("s", 0, kind="speak", post_audio_ms=200.0), chunk("t", 0, kind="tool", task="fdb_v3",
                                                                       post_audio_ms=200.0)]
    for name, decoder, chunks in (("ar", "ar", rows), ("sl", "speclisten", fast)):
        write_run(tmp_path / f"{name}_n4", decoder, chunks, sharing=concurrency(4), model=PAPER_MODEL)
    real = fig4c_table(load_results([str(tmp_path)])).frame.set_index("decoder")
    assert real.loc["speclisten", "paper tool speedup"] == "10.50"  # the paper's N = 4
    for run_dir in tmp_path.iterdir():
        mark_random(run_dir)
    frame = fig4c_table(load_results([str(tmp_path)])).frame
    assert all(set(frame[column]) == {""} for column in frame.columns if column.startswith("paper"))
    assert set(frame["model"]) == {f"gander {LABEL}"}


def test_run_json_weights_flags_must_be_true_or_false():
    meta = {"status": "complete", "config": {"model": {"name": "m"}, "decoder": {"name": "ar"},
                                             "clock": {"name": "modeled"}},
            "environment": {"model": {"name": "m", "random_weights": "yes"}}}
    assert shape_problem(meta).startswith("environment.model.random_weights: must be")
    meta["environment"]["model"]["random_weights"] = True
    assert shape_problem(meta) is None
