"""Figure 4c (speedup versus N concurrent sessions) on hand-made runs, and concurrency runs kept out of the
tables of one session at a time."""

import json
import math

import pytest
from table_runs import MODELED, chunk, concurrency, write_run

from ticktock.tables import build_report, build_tables, load_results
from ticktock.tables.analysis import fig4c_data, fig4c_table
from ticktock.tables.compute import latency_table, max_lag_table, speak_speedup_table, tool_speedup_table
from ticktock.tables.figures import fig4c_lines, utilisation_bars, write_figures

N4 = concurrency(4)
N4_BATCHED = concurrency(4, batching=True)


def rows(speak_ms, tool_ms, missed=(False, False, False, False), wait=(0.0, 0.0, 0.0, 0.0)):
    """Session s: two speak chunks and a listen chunk; session t (FDB v3): one tool chunk."""
    return [chunk("s", 0, kind="speak", post_audio_ms=speak_ms[0], missed_deadline=missed[0], device_wait_ms=wait[0]),
            chunk("s", 1, kind="speak", post_audio_ms=speak_ms[1], missed_deadline=missed[1], device_wait_ms=wait[1]),
            chunk("s", 2, kind="listen", post_audio_ms=50.0, missed_deadline=missed[2], device_wait_ms=wait[2]),
            chunk("t", 0, kind="tool", task="fdb_v3", post_audio_ms=tool_ms, missed_deadline=missed[3],
                  device_wait_ms=wait[3])]


def lags(s_ms, t_ms):
    return [{"session_id": "s", "max_lag_ms": s_ms}, {"session_id": "t", "task": "fdb_v3", "max_lag_ms": t_ms}]


def single(folder, model="m"):
    """AR and Speculative Listening alone on the device (N = 1): speak 4x, tool 20x."""
    write_run(folder / "ar_n1", "ar", rows((400.0, 400.0), 2000.0), lags(100.0, 300.0), model=model)
    # another draft policy in the config: it does not apply to a session alone, the runs still compare
    write_run(folder / "sl_n1", "speclisten", rows((100.0, 100.0), 100.0), lags(0.0, 0.0), draft_policy="round_robin", model=model)
    return folder


def concurrent(folder, model="m"):
    """N = 4: AR (expected_savings) and SL under two draft policies; AR and SL batched."""
    write_run(folder / "ar_n4", "ar", rows((800.0, 800.0), 4000.0, (True, False, False, True), (100.0, 300.0, 200.0, 0.0)),
              lags(1500.0, 500.0), sharing=N4, model=model)
    write_run(folder / "sl_n4_es", "speclisten", rows((300.0, 100.0), 400.0, wait=(10.0, 10.0, 10.0, 10.0)),
              lags(0.0, 100.0), sharing=N4, model=model)
    write_run(folder / "sl_n4_rr", "speclisten", rows((400.0, 400.0), 1000.0, (False, False, False, True)),
              lags(200.0, 600.0), sharing=N4, draft_policy="round_robin", model=model)
    write_run(folder / "ar_n4_b", "ar", rows((600.0, 600.0), 3000.0), lags(0.0, 0.0), sharing=N4_BATCHED, model=model)
    write_run(folder / "sl_n4_b", "speclisten", rows((150.0, 150.0), 300.0), lags(0.0, 0.0), sharing=N4_BATCHED, model=model)
    return folder


@pytest.fixture
def both(tmp_path):
    concurrent(single(tmp_path / "all"))
    single(tmp_path / "alone")
    return tmp_path


def test_runs_that_share_the_device_differently_are_separate_setups(both):
    results = load_results([str(both / "all")])  # the same chunks in every run: combined cells would overlap
    keys = [(c.decoder, c.setup.concurrency, c.setup.batching, c.setup.draft_policy) for c in results.cells]
    assert keys == [("ar", 1, False, ""), ("speclisten", 1, False, ""),
                    ("ar", 4, False, "expected_savings"), ("speclisten", 4, False, "expected_savings"),
                    ("speclisten", 4, False, "round_robin"),
                    ("ar", 4, True, "expected_savings"), ("speclisten", 4, True, "expected_savings")]
    assert len({c.setup for c in results.cells}) == 4
    assert [(c.decoder, c.setup.concurrency) for c in results.single_session().cells] == [("ar", 1), ("speclisten", 1)]


def test_staggers_and_policy_settings_are_part_of_the_setup(tmp_path):
    write_run(tmp_path / "a", "ar", rows((1.0, 1.0), 1.0), sharing=N4)
    write_run(tmp_path / "b", "ar", rows((1.0, 1.0), 1.0), sharing=concurrency(4, stagger=50))
    write_run(tmp_path / "c", "ar", rows((1.0, 1.0), 1.0), sharing=N4,
              draft_policy={"name": "expected_savings", "_target_": "x.Y", "speech_dbfs": -30.0})
    results = load_results([str(tmp_path)])
    assert sorted((c.setup.stagger, c.setup.draft_policy_args) for c in results.cells) == [
        ("50", '{"speech_dbfs": -45.0}'), ("random", '{"speech_dbfs": -30.0}'), ("random", '{"speech_dbfs": -45.0}')]


def test_fig4c_speedups_over_ar_at_the_same_n_and_batching(both):
    data = fig4c_data(load_results([str(both / "all")]))
    got = data[["N", "label", "speak speedup", "tool speedup", "speak chunks", "tool chunks"]].to_dict("records")
    assert got == [
        {"N": 1, "label": "ar", "speak speedup": 1.0, "tool speedup": 1.0, "speak chunks": 2, "tool chunks": 1},
        {"N": 1, "label": "speclisten", "speak speedup": 4.0, "tool speedup": 20.0, "speak chunks": 2, "tool chunks": 1},
        {"N": 4, "label": "ar, expected_savings", "speak speedup": 1.0, "tool speedup": 1.0, "speak chunks": 2,
         "tool chunks": 1},
        # over AR at N = 4 (800 ms, 4000 ms), not over AR alone (400 ms, 2000 ms)
        {"N": 4, "label": "speclisten, expected_savings", "speak speedup": 4.0, "tool speedup": 10.0,
         "speak chunks": 2, "tool chunks": 1},
        # no AR run under round_robin: AR at the same N and batching under the other policy
        {"N": 4, "label": "speclisten, round_robin", "speak speedup": 2.0, "tool speedup": 4.0, "speak chunks": 2,
         "tool chunks": 1},
        {"N": 4, "label": "ar, expected_savings, +batching", "speak speedup": 1.0, "tool speedup": 1.0,
         "speak chunks": 2, "tool chunks": 1},
        # over batched AR (600 ms, 3000 ms), not unbatched AR at N = 4 (800 ms, 4000 ms)
        {"N": 4, "label": "speclisten, expected_savings, +batching", "speak speedup": 4.0, "tool speedup": 10.0,
         "speak chunks": 2, "tool chunks": 1},
    ]


def test_fig4c_miss_rates_max_lag_and_device_wait(both):
    data = fig4c_data(load_results([str(both / "all")])).set_index("label")
    ar4, sl4 = data.loc["ar, expected_savings"], data.loc["speclisten, expected_savings"]
    rr4 = data.loc["speclisten, round_robin"]
    assert (ar4["deadline-miss rate"], ar4["tool deadline-miss rate"]) == (0.5, 1.0)
    assert (sl4["deadline-miss rate"], sl4["tool deadline-miss rate"]) == (0.0, 0.0)
    assert (rr4["deadline-miss rate"], rr4["tool deadline-miss rate"]) == (0.25, 1.0)
    assert (ar4["mean max lag ms"], sl4["mean max lag ms"], rr4["mean max lag ms"]) == (1000.0, 50.0, 400.0)
    assert (ar4["mean device wait ms"], sl4["mean device wait ms"]) == (150.0, 10.0)
    assert (ar4["sessions"], ar4["chunks"]) == (2, 4)


def test_fig4c_table_columns_paper_values_and_notes(tmp_path):
    paper_model = "gander"  # a model the paper measured: the paper's columns stand beside it (paper_numbers.yaml)
    table = fig4c_table(load_results([str(concurrent(single(tmp_path, paper_model), paper_model))]))
    assert list(table.frame.columns) == [
        "model", "N", "decoder", "speak chunks", "speak speedup", "paper speak speedup", "tool chunks", "tool speedup",
        "paper tool speedup", "deadline-miss rate", "tool deadline-miss rate", "paper tool deadline-miss rate",
        "mean max lag ms", "mean device wait ms", "sessions", "chunks"]
    frame = table.frame.set_index("decoder")
    assert frame.loc["speclisten", "paper tool speedup"] == "22.70"  # the paper's N = 1 (wall clock)
    assert frame.loc["speclisten", "paper speak speedup"] == ""
    es = frame.loc["speclisten, expected_savings"]
    assert (es["paper speak speedup"], es["paper tool speedup"], es["paper tool deadline-miss rate"]) == ("2.00", "10.50", "2.9%")
    assert frame.loc["ar, expected_savings", "paper tool deadline-miss rate"] == "100.0%"
    assert frame.loc["ar, expected_savings, +batching", "paper tool deadline-miss rate"] == ""  # the paper: batch 1
    assert table.formatted().set_index("decoder").loc["ar, expected_savings", "tool deadline-miss rate"] == "100.0%"
    assert not table.notes[0].startswith("no concurrency runs")
    assert any(n.startswith("times on clock modeled:test-profile: modeled from cost profile test-profile for device "
                            "Test GPU (derived)") for n in table.notes)
    assert any(n.startswith("Paper (Figure 4c): ") for n in table.notes)
    assert any("N=4 sessions on one device, no batching, stagger random, draft policy round_robin" in p
               for p in table.provenance)


def test_a_decoder_without_a_baseline_at_its_n_gets_no_speedup_and_a_note(tmp_path):
    single(tmp_path)
    write_run(tmp_path / "sl_n8", "speclisten", rows((100.0, 100.0), 100.0), sharing=concurrency(8))
    table = fig4c_table(load_results([str(tmp_path)]))
    row = table.frame.set_index(["N", "decoder"]).loc[(8, "speclisten")]  # one policy: no policy in the label
    assert math.isnan(row["speak speedup"]) and math.isnan(row["tool speedup"])
    assert any(n.startswith("no ar run at N=8 with the device shared as for speclisten") for n in table.notes)


def test_concurrency_runs_never_leak_into_the_single_session_tables(both):
    mixed = build_tables(load_results([str(both / "all")]))
    alone = build_tables(load_results([str(both / "alone")]))
    keys = [t.key for t in mixed.tables]
    assert keys == [t.key for t in alone.tables] and "fig4c_concurrency" in keys and "capacity" in keys
    for got, want in zip(mixed.tables, alone.tables):
        if got.key in ("fig4c_concurrency", "capacity"):  # the two tables of every N
            continue
        assert got.frame.equals(want.frame), got.key
        assert (got.notes, got.failures, got.provenance) == (want.notes, want.failures, want.provenance), got.key
    assert mixed.fig4a.equals(alone.fig4a) and mixed.fig4b.equals(alone.fig4b)
    table2 = speak_speedup_table(load_results([str(both / "all")]))  # called directly, too
    assert table2.frame[["decoder", "chunks", "ar ms", "speedup"]].to_dict("records") == [
        {"decoder": "ar", "chunks": 2, "ar ms": 400.0, "speedup": 1.0},
        {"decoder": "speclisten", "chunks": 2, "ar ms": 400.0, "speedup": 4.0}]
    assert "N" not in table2.frame.columns
    assert tool_speedup_table(load_results([str(both / "all")])).frame["speedup"].tolist() == [1.0, 20.0]
    assert max_lag_table(load_results([str(both / "all")])).frame["mean max lag ms"].tolist() == [300.0, 0.0]


def test_only_concurrency_runs_fill_the_other_tables_and_say_so(tmp_path):
    write_run(tmp_path / "ar_n4", "ar", rows((800.0, 800.0), 4000.0, wait=(5.0, 5.0, 5.0, 5.0)), sharing=N4)
    write_run(tmp_path / "sl_n4", "speclisten", rows((200.0, 200.0), 400.0), sharing=N4)
    results = load_results([str(tmp_path)])
    table = speak_speedup_table(results)
    assert table.frame[["decoder", "speedup"]].to_dict("records") == [{"decoder": "ar", "speedup": 1.0},
                                                                     {"decoder": "speclisten", "speedup": 4.0}]
    assert any(p.startswith("no single-session runs (concurrency.sessions=1 without batching): these tables use the "
                            "concurrency runs (N=4)") for p in table.provenance)
    assert latency_table(results).frame["decoder"].tolist() == ["ar", "speclisten"]
    assert fig4c_table(results).frame["decoder"].tolist() == ["ar", "speclisten"]  # one policy: none in the labels


def test_fig4c_lines_start_from_the_single_session_run():
    import pandas as pd

    data = pd.DataFrame({"group": ["g"] * 6, "decoder": ["ar", "sl", "sl", "sl", "sl", "x"],
                         "label": ["ar", "sl", "sl, rr", "sl, es", "sl, es", "x"], "N": [1, 1, 4, 4, 8, 1],
                         "batching": [False] * 6, "is baseline": [True] + [False] * 5})
    lines = {key: rows["N"].tolist() for key, rows in fig4c_lines(data).items()}
    assert lines == {("g", "sl, rr"): [1, 4], ("g", "sl, es"): [1, 4, 8], ("g", "x"): [1]}
    same_label = data.assign(label=["ar", "sl", "sl", "sl", "sl", "x"]).iloc[:5].drop(index=2)
    assert {key: rows["N"].tolist() for key, rows in fig4c_lines(same_label).items()} == {("g", "sl"): [1, 4, 8]}


def test_fig4c_figure_and_report(both, tmp_path):
    results = load_results([str(both / "all")])
    built = build_tables(results)
    (tmp_path / "fig").mkdir()
    paths = write_figures(built.fig4a.iloc[:0], built.fig4b, tmp_path / "fig", built.fig4c)
    assert [p.name for p in paths] == ["fig4c_concurrency.png"] and paths[0].read_bytes()[:4] == b"\x89PNG"
    report = build_report(results, tmp_path / "report", formats=("md", "html"))
    page = report.read_text()
    assert 'id="fig4c_concurrency"' in page and "fig4c_concurrency.png" in page
    assert "| 4 | speclisten, round_robin | 2 | 2.00 |" in (tmp_path / "report" / "fig4c_concurrency.md").read_text()


def test_no_concurrency_runs_no_figure(tmp_path):
    single(tmp_path)
    results = load_results([str(tmp_path)])
    built = build_tables(results)
    assert built.fig4c.empty and next(t for t in built.tables if t.key == "fig4c_concurrency").frame.empty
    assert write_figures(built.fig4a, built.fig4b, tmp_path, built.fig4c) == [tmp_path / "fig4a_forwards_by_length.png"]


# ---------------------------------------------------------------- where the shared device's time went

def device_times(span, post_audio, draft, talker, idle):
    """run.json shared_device as the runner writes it (one invocation), with the device's times."""
    record = {"steps": 10, "span_ms": span, "busy_ms": span - idle, "post_audio_busy_ms": post_audio,
              "draft_busy_ms": draft, "talker_busy_ms": talker, "idle_ms": idle}
    return {**record, "invocations": [dict(record)]}


def with_shared_device(folder, shared):
    """Give a written run's run.json a ``shared_device`` record."""
    path = folder / "run.json"
    meta = json.loads(path.read_text())
    path.write_text(json.dumps({**meta, "shared_device": shared}))
    return folder


def test_fig4c_says_where_the_device_time_went(both):
    all_runs = both / "all"
    with_shared_device(all_runs / "ar_n4", device_times(1000.0, 600.0, 0.0, 100.0, 300.0))
    with_shared_device(all_runs / "sl_n4_es", device_times(1000.0, 300.0, 450.0, 50.0, 200.0))
    resumed = device_times(400.0, 100.0, 100.0, 0.0, 200.0)  # two invocations, summed as runjson sums them
    second = {"span_ms": 600.0, "busy_ms": 450.0, "post_audio_busy_ms": 200.0, "draft_busy_ms": 250.0,
              "talker_busy_ms": 0.0, "idle_ms": 150.0}
    with_shared_device(all_runs / "sl_n4_rr", {**{k: resumed[k] + second[k] for k in second}, "steps": 20,
                                               "invocations": [resumed["invocations"][0], second]})
    data = fig4c_data(load_results([str(all_runs)])).set_index("label")
    shares = ["post-audio %", "drafting %", "talker %", "idle %", "device busy %"]
    assert data.loc["ar, expected_savings", shares].tolist() == [0.6, 0.0, 0.1, 0.3, 0.7]
    assert data.loc["speclisten, expected_savings", shares].tolist() == [0.3, 0.45, 0.05, 0.2, 0.8]
    assert data.loc["speclisten, round_robin", shares].tolist() == [0.3, 0.35, 0.0, 0.35, 0.65]
    # one session alone has no shared device; the batched runs did not record it: NaN, never 0
    assert data.loc[["ar", "speclisten", "ar, expected_savings, +batching"], shares].isna().all().all()

    table = fig4c_table(load_results([str(all_runs)]))
    assert list(table.frame.columns)[-7:] == [*shares, "sessions", "chunks"]
    shown = table.formatted().set_index("decoder")
    assert shown.loc["speclisten, expected_savings", shares].tolist() == ["30.0%", "45.0%", "5.0%", "20.0%", "80.0%"]
    assert shown.loc["speclisten", "idle %"] == "–"
    assert any(n.startswith("device time, as shares of the device's span (run.json shared_device span_ms") for n in table.notes)

    (both / "fig").mkdir()
    data = fig4c_data(load_results([str(all_runs)]))
    assert utilisation_bars(data).to_dict("records") == [
        {"bar": "N=4\nar, expected_savings", "post-audio": 0.6, "drafting": 0.0, "talker": 0.1, "idle": 0.3},
        {"bar": "N=4\nspeclisten, expected_savings", "post-audio": 0.3, "drafting": 0.45, "talker": 0.05, "idle": 0.2},
        {"bar": "N=4\nspeclisten, round_robin", "post-audio": 0.3, "drafting": 0.35, "talker": 0.0, "idle": 0.35}]
    paths = write_figures(data.iloc[:0], data.iloc[:0], both / "fig", data)
    assert [p.name for p in paths] == ["fig4c_concurrency.png"] and paths[0].read_bytes()[:4] == b"\x89PNG"


def test_fig4c_device_time_of_runs_that_did_not_record_it_is_nan(both):
    all_runs = both / "all"
    old = {"steps": 10, "post_audio_steps": 6, "draft_steps": 4, "busy_ms": 700.0}  # before span_ms and the rest
    with_shared_device(all_runs / "ar_n4", {**old, "invocations": [dict(old)]})
    # a resumed run whose first invocation predates them: its sums would cover part of the run only
    new = device_times(1000.0, 300.0, 450.0, 50.0, 200.0)
    with_shared_device(all_runs / "sl_n4_es", {**new, "invocations": [dict(old), new["invocations"][0]]})
    results = load_results([str(all_runs)])
    data = fig4c_data(results)
    shares = ["post-audio %", "drafting %", "talker %", "idle %", "device busy %"]
    assert data[shares].isna().all().all()
    assert utilisation_bars(data).empty
    table = fig4c_table(results)
    assert not set(shares) & set(table.frame.columns)  # no column of dashes only
    assert any(n.startswith("device time (post-audio %, drafting %, talker %, idle %): not recorded by these runs")
               for n in table.notes)


# ---------------------------------------------------------------- the audio-encoding what-if (clock.encode_scale)

def test_runs_that_differ_only_by_encode_scale_are_two_setups(tmp_path):
    scaled = {**MODELED, "encode_scale": 0.25}
    write_run(tmp_path / "ar_n4", "ar", rows((800.0, 800.0), 4000.0), sharing=N4)
    write_run(tmp_path / "ar_n4_q", "ar", rows((400.0, 400.0), 2000.0), sharing=N4, clock=scaled)
    write_run(tmp_path / "sl_n4_q", "speclisten", rows((100.0, 100.0), 200.0), sharing=N4, clock=scaled)
    results = load_results([str(tmp_path)])  # the same chunks in each run: one setup would overlap
    assert sorted((c.decoder, c.setup.encode_scale) for c in results.cells) == [
        ("ar", 0.25), ("ar", 1.0), ("speclisten", 0.25)]
    assert len(results.setups()) == 2 and len({s.clock for s in results.setups()}) == 1
    data = fig4c_data(results)
    sl = data[data["decoder"] == "speclisten"].iloc[0]
    assert (sl["encode scale"], sl["speak speedup"], sl["tool speedup"]) == (0.25, 4.0, 10.0)  # over AR at 0.25
    assert "(encode cost x0.25)" in sl["group"]
    table = fig4c_table(results)
    assert table.formatted()["encode scale"].tolist() == ["0.25", "0.25", "1.0"]
    assert any("every audio encoding charged 0.25 times the profile's cost" in n for n in table.notes)
    assert any(p.startswith("clock modeled:test-profile (encode cost x0.25): modeled from cost profile test-profile")
               for p in table.provenance)
    assert "encode scale" in speak_speedup_table(results).frame.columns


def test_runs_without_encode_scale_are_scaled_by_one_and_shown_as_before(both):
    results = load_results([str(both / "all")])
    assert {c.setup.encode_scale for c in results.cells} == {1.0}
    table = fig4c_table(results)
    assert "encode scale" not in table.frame.columns
    assert not any("encode" in line for line in [*table.notes, *table.provenance])
