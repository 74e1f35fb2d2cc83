"""The tables and batched audio encodings (issue 46): ``concurrency.batch_encodings`` is part of a run's setup,
Figure 4c and capacity keep runs with and without it apart and compare each with AR shared alike, the capacity
table says how many onsets back each p95 onset, and the provenance line summarises the cost profile's per-field
sources (run.json ``clock.profile_sources``). Runs written before any of it load and render exactly as before."""

import json
import math
from pathlib import Path

from table_runs import MODELED, chunk, concurrency, write_run

from ticktock.tables import build_report, load_results
from ticktock.tables.analysis import fig4c_data, fig4c_table
from ticktock.tables.capacity import capacity_data, capacity_table
from ticktock.tables.common import describe_clock, describe_sharing, provenance_notes, setup_label
from ticktock.tables.figures import fig4c_lines
from ticktock.tables.load import Setup

N4 = concurrency(4)
N4_ENCODINGS = concurrency(4, batch_encodings=True)
OLD_CLOCK_LINE = ("clock modeled:test-profile: modeled from cost profile test-profile for device Test GPU (derived); "
                  "provenance: DERIVED for tests")
# run.json's order (its keys sorted); the summary names the fields in the profile's order
SOURCES = {"talkers.piper": {"published": "piper README"},
           "batch_factor": {"derived": "from the forward fit"},
           "encode_batch_factor": {"derived": "launch-bound encoder"},
           "encode_first_ms": {"published": "vllm-omni PR 6117 (CUDA events)"},
           "encode_fixed_ms": {"assumed": "launch-bound at batch 1"},
           "encode_ms": {"published": "vllm-omni PR 6117 (CUDA events)"},
           "forward_ms": {"derived": "fitted to the paper's idle share"},
           "talkers.espeak": {"measured": "ticktock calibrate talker=espeak"}}


def rows(speak_ms: float, tool_ms: float) -> list[dict]:
    """Session s: two speak chunks; session t (FDB v3): one tool chunk."""
    return [chunk("s", 0, kind="speak", post_audio_ms=speak_ms), chunk("s", 1, kind="speak", post_audio_ms=speak_ms),
            chunk("t", 0, kind="tool", task="fdb_v3", post_audio_ms=tool_ms)]


def fig4c_runs(folder, model: str = "m"):
    """N = 1 alone, and N = 4 with and without batched encodings, for AR and Speculative Listening."""
    write_run(folder / "ar_n1", "ar", rows(400.0, 2000.0), model=model)
    write_run(folder / "sl_n1", "speclisten", rows(100.0, 100.0), model=model)
    write_run(folder / "ar_n4", "ar", rows(800.0, 4000.0), sharing=N4, model=model)
    write_run(folder / "sl_n4", "speclisten", rows(400.0, 400.0), sharing=N4, model=model)
    write_run(folder / "ar_n4_e", "ar", rows(600.0, 3000.0), sharing=N4_ENCODINGS, model=model)
    write_run(folder / "sl_n4_e", "speclisten", rows(100.0, 100.0), sharing=N4_ENCODINGS, model=model)
    return folder


# --- old runs ---------------------------------------------------------------------------------------------------------


def test_a_run_json_without_the_new_keys_keeps_its_setup_label_and_provenance_line(tmp_path):
    old = write_run(tmp_path / "old", "ar", rows(800.0, 4000.0), sharing=N4)
    meta = json.loads((old / "run.json").read_text())
    assert "batch_encodings" not in meta["config"]["concurrency"] and "profile_sources" not in meta["clock"]
    write_run(tmp_path / "off", "speclisten", rows(400.0, 400.0), sharing=concurrency(4, batch_encodings=False))
    results = load_results([str(tmp_path)])
    setups = {run.decoder: run.setup() for run in results.runs}
    assert setups["ar"] == setups["speclisten"]  # absent and false: the same setup key
    assert setups["ar"] == Setup("m", "modeled:test-profile", "Test GPU (derived)", 0.0, 0, 1.0, 0, 4, False, None,
                                 "random", "expected_savings", '{"speech_dbfs": -45.0}')
    assert describe_sharing(setups["ar"]) == ("N=4 sessions on one device, no batching, stagger random, draft policy "
                                              "expected_savings {\"speech_dbfs\": -45.0}")
    assert setup_label(setups["ar"]).startswith("m / modeled:test-profile / Test GPU (derived) / T=0 / seed 0 / N=4 "
                                                "sessions on one device, no batching, stagger random")
    assert describe_clock(results.runs[0].meta, setups["ar"]) == OLD_CLOCK_LINE
    assert OLD_CLOCK_LINE in provenance_notes(results)


def test_old_runs_render_figure_4c_and_capacity_without_the_new_column(tmp_path):
    write_run(tmp_path / "ar_n1", "ar", rows(400.0, 2000.0))
    write_run(tmp_path / "ar_n4", "ar", rows(800.0, 4000.0), sharing=N4)
    write_run(tmp_path / "sl_n4", "speclisten", rows(400.0, 400.0), sharing=N4)
    results = load_results([str(tmp_path)])
    table = fig4c_table(results)
    assert "batched encodings" not in table.frame.columns
    assert table.frame["decoder"].tolist() == ["ar", "ar", "speclisten"]  # no "+batched encodings" anywhere
    assert fig4c_data(results)["speak speedup"].tolist() == [1.0, 1.0, 2.0]
    capacity = capacity_table(results)
    assert "batched encodings" not in capacity.frame.columns
    assert list(capacity.frame.columns[:4]) == ["model", "decoder", "batching", "capacity"]


# --- Figure 4c ----------------------------------------------------------------------------------------------------------


def test_batched_encodings_are_a_setup_and_separate_rows_of_figure_4c(tmp_path):
    results = load_results([str(fig4c_runs(tmp_path))])
    keys = [(c.decoder, c.setup.concurrency, c.setup.batch_encodings) for c in results.cells]
    assert keys == [("ar", 1, False), ("speclisten", 1, False), ("ar", 4, False), ("speclisten", 4, False),
                    ("ar", 4, True), ("speclisten", 4, True)]
    data = fig4c_data(results)
    got = data[["N", "label", "batched encodings", "speak speedup", "tool speedup", "baseline run"]].copy()
    got["baseline run"] = [Path(name).name for name in got["baseline run"]]
    assert got.to_dict("records") == [
        {"N": 1, "label": "ar", "batched encodings": False, "speak speedup": 1.0, "tool speedup": 1.0,
         "baseline run": "ar_n1"},
        {"N": 1, "label": "speclisten", "batched encodings": False, "speak speedup": 4.0, "tool speedup": 20.0,
         "baseline run": "ar_n1"},
        {"N": 4, "label": "ar", "batched encodings": False, "speak speedup": 1.0, "tool speedup": 1.0,
         "baseline run": "ar_n4"},
        {"N": 4, "label": "speclisten", "batched encodings": False, "speak speedup": 2.0, "tool speedup": 10.0,
         "baseline run": "ar_n4"},
        {"N": 4, "label": "ar, +batched encodings", "batched encodings": True, "speak speedup": 1.0,
         "tool speedup": 1.0, "baseline run": "ar_n4_e"},
        # over AR with batched encodings (600 ms, 3000 ms), not over AR without them (800 ms, 4000 ms)
        {"N": 4, "label": "speclisten, +batched encodings", "batched encodings": True, "speak speedup": 6.0,
         "tool speedup": 30.0, "baseline run": "ar_n4_e"},
    ]


def test_figure_4c_table_shows_batched_encodings_where_they_vary_and_says_so(tmp_path):
    results = load_results([str(fig4c_runs(tmp_path, model="gander"))])  # gander: a model the paper measured
    table = fig4c_table(results)
    assert table.frame["batched encodings"].tolist() == ["no", "no", "no", "no", "yes", "yes"]
    assert table.frame.loc[5, "paper speak speedup"] == ""  # the paper ran one encoding at a time
    assert any("N=4 sessions on one device, no batching of forwards, batched encodings, stagger random" in line
               for line in table.provenance)
    assert any("at the same N, batching, max batch, stagger and batched encodings" in n for n in table.notes)


def test_a_run_of_one_session_with_batched_encodings_does_not_start_the_unbatched_line(tmp_path):
    write_run(tmp_path / "sl_n1_e", "speclisten", rows(100.0, 100.0), sharing=concurrency(1, batch_encodings=True))
    write_run(tmp_path / "sl_n4", "speclisten", rows(400.0, 400.0), sharing=N4)
    data = fig4c_data(load_results([str(tmp_path)]))
    assert data["label"].tolist() == ["speclisten, +batched encodings", "speclisten"]
    group = data["group"][0]
    lines = {key: (rows["N"].tolist(), rows["batched encodings"].tolist()) for key, rows in fig4c_lines(data).items()}
    assert lines == {(group, "speclisten"): ([4], [False]), (group, "speclisten, +batched encodings"): ([1], [True])}


# --- capacity ------------------------------------------------------------------------------------------------------------


def capacity_rows(misses: int, onsets: int = 2) -> list[dict]:
    """20 chunks of session s, ``onsets`` of them reply onsets at 100 ms, ``misses`` missing their deadline."""
    return [chunk("s", i, kind="speak" if i < onsets else "listen", is_onset=i < onsets, response_ms=100.0,
                  missed_deadline=i < misses) for i in range(20)]


def capacity_runs(folder, onsets: int = 2):
    """AR: capacity 2 (N = 4 misses 10%); with batched encodings capacity 4 (N = 8 misses). Speculative Listening:
    capacity 4; with batched encodings capacity 8 (N = 16 misses)."""
    for decoder, name, sharing, misses in (
            ("ar", "ar-N1", None, 0), ("ar", "ar-N2", concurrency(2), 0), ("ar", "ar-N4", concurrency(4), 2),
            ("ar", "ar-N2-e", concurrency(2, batch_encodings=True), 0),
            ("ar", "ar-N4-e", concurrency(4, batch_encodings=True), 0),
            ("ar", "ar-N8-e", concurrency(8, batch_encodings=True), 3),
            ("speclisten", "sl-N1", None, 0), ("speclisten", "sl-N4", concurrency(4), 0),
            ("speclisten", "sl-N8", concurrency(8), 2),
            ("speclisten", "sl-N8-e", concurrency(8, batch_encodings=True), 0),
            ("speclisten", "sl-N16-e", concurrency(16, batch_encodings=True), 2)):
        write_run(folder / name, decoder, capacity_rows(misses, onsets), sharing=sharing)
    return folder


def test_capacity_keeps_batched_encodings_apart_and_compares_like_with_like(tmp_path):
    results = load_results([str(capacity_runs(tmp_path))])
    data = capacity_data(results)
    assert sorted({(d, e) for d, e in zip(data["decoder"], data["batched encodings"])}) == [
        ("ar", False), ("ar", True), ("speclisten", False), ("speclisten", True)]
    table = capacity_table(results)
    got = table.frame[["decoder", "batched encodings", "capacity", "x AR", "N passing", "N failing"]]
    assert got.to_dict("records") == [
        {"decoder": "ar", "batched encodings": "no", "capacity": 2, "x AR": 1.0, "N passing": "1, 2",
         "N failing": "4 (miss 10.0% > 5%)"},
        {"decoder": "speclisten", "batched encodings": "no", "capacity": 4, "x AR": 2.0, "N passing": "1, 4",
         "N failing": "8 (miss 10.0% > 5%)"},
        # a line with batched encodings does not start from the run of one session alone
        {"decoder": "ar", "batched encodings": "yes", "capacity": 4, "x AR": 1.0, "N passing": "2, 4",
         "N failing": "8 (miss 15.0% > 5%)"},
        # over AR with batched encodings (4), not without (2: that would read 4.00)
        {"decoder": "speclisten", "batched encodings": "yes", "capacity": 8, "x AR": 2.0, "N passing": "8",
         "N failing": "16 (miss 10.0% > 5%)"},
    ]
    assert any("in the same setup group, batching and batched encodings" in n for n in table.notes)


def test_capacity_table_shows_the_onsets_behind_each_p95_and_asks_for_more_when_few(tmp_path):
    table = capacity_table(load_results([str(capacity_runs(tmp_path))]))
    assert table.frame["onsets at capacity"].tolist() == [2, 2, 2, 2]
    assert list(table.frame.columns).index("onsets at capacity") == \
        list(table.frame.columns).index("p95 onset ms at capacity") + 1
    few = [n for n in table.notes if n.startswith("p95 onset from fewer than 30 onsets: raise the sessions "
                                                  "(--per-task): ")]
    assert len(few) == 1 and "ar (m / modeled:test-profile" in few[0] and "2 onsets at N=2" in few[0]
    assert "speclisten, with batched encodings (m / modeled" in few[0] and "2 onsets at N=8" in few[0]


def test_thirty_onsets_at_capacity_need_no_note_and_the_rendered_table_shows_them(tmp_path):
    more = [chunk("u", i, kind="speak", is_onset=True, response_ms=100.0) for i in range(20)]
    write_run(tmp_path / "ar-N1", "ar", [*capacity_rows(0, 20), *more])
    write_run(tmp_path / "ar-N2", "ar", [*capacity_rows(0, 20), *more], sharing=concurrency(2))
    results = load_results([str(tmp_path)])
    table = capacity_table(results)
    assert table.frame["onsets at capacity"].tolist() == [40]
    assert not any(n.startswith("p95 onset from fewer") for n in table.notes)
    build_report(results, tmp_path / "out", formats=("md", "csv"))
    header = (tmp_path / "out" / "capacity.csv").read_text().splitlines()[0]
    assert "p95 onset ms at capacity,onsets at capacity" in header and "batched encodings" not in header
    assert "onsets at capacity" in (tmp_path / "out" / "capacity.md").read_text()


# --- the provenance line ---------------------------------------------------------------------------------------------


def test_the_provenance_line_summarises_the_profiles_sources_by_kind(tmp_path):
    clock = {**MODELED, "profile_sources": SOURCES}
    write_run(tmp_path / "ar", "ar", rows(400.0, 2000.0), clock=clock)
    results = load_results([str(tmp_path)])
    line = describe_clock(results.runs[0].meta, results.runs[0].setup())
    assert line == (f"{OLD_CLOCK_LINE}; sources: measured talkers.espeak; published encode_ms, encode_first_ms "
                    "(vllm-omni PR 6117 (CUDA events)), talkers.piper (piper README); derived forward_ms, "
                    "batch_factor, encode_batch_factor; assumed encode_fixed_ms")
    assert line in provenance_notes(results)


def test_a_profile_with_sources_of_one_kind_only_names_that_kind(tmp_path):
    clock = {**MODELED, "profile_sources": {"forward_ms": {"measured": "ticktock calibrate device=cuda"}}}
    write_run(tmp_path / "ar", "ar", rows(400.0, 2000.0), clock=clock)
    results = load_results([str(tmp_path)])
    assert describe_clock(results.runs[0].meta, results.runs[0].setup()) == \
        f"{OLD_CLOCK_LINE}; sources: measured forward_ms"


def test_run_json_shared_device_counts_of_batched_encodings_are_read(tmp_path):
    run = write_run(tmp_path / "ar", "ar", rows(400.0, 2000.0), sharing=N4_ENCODINGS)
    meta = json.loads((run / "run.json").read_text())
    meta["shared_device"] = {"span_ms": 1000.0, "busy_ms": 500.0, "batched_encode_steps": 3, "batched_encodings": 7}
    (run / "run.json").write_text(json.dumps(meta))
    results = load_results([str(tmp_path)])
    assert results.runs[0].setup().batch_encodings and math.isnan(fig4c_data(results)["idle %"][0])
