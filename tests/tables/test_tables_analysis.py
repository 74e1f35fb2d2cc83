"""Golden values for Table 7 (draft acceptance) and the Figure 4 data on hand-made runs."""

from table_runs import chunk, write_run

from ticktock.tables import load_results
from ticktock.tables.analysis import acceptance_table, fig4a_data, fig4a_table, fig4b_data, fig4b_table, fig4c_table
from ticktock.tables.figures import write_figures
from ticktock.tables.metrics import bucket


def test_table7_acceptance_by_kind_and_user_speech(tmp_path):
    rows = [chunk("s", 0, kind="listen", user_speaking=True, draft_full_match=True),
            chunk("s", 1, kind="listen", user_speaking=False, draft_full_match=False),
            chunk("s", 2, kind="speak", user_speaking=False, draft_full_match=True),
            chunk("s", 3, kind="speak", user_speaking=True, draft_full_match=True),
            chunk("s", 4, kind="tool", user_speaking=True, draft_full_match=False),
            chunk("s", 5, kind="speak", user_speaking=True, draft_full_match=None)]
    write_run(tmp_path / "sl", "speclisten", rows)
    write_run(tmp_path / "ar", "ar", [chunk("s", i) for i in range(6)])
    table = acceptance_table(load_results([str(tmp_path)]))
    assert table.frame.to_dict("records") == [{
        "model": "m", "decoder": "speclisten", "all": "60.0% (5)", "listen": "50.0% (2)", "speak": "100.0% (2)",
        "tool": "0.0% (1)", "user silent": "50.0% (2)", "user speaking": "66.7% (3)"}]


def test_bucket_edges():
    assert [bucket(n) for n in (1, 2, 4, 5, 8, 9, 16, 17, 32, 33, 64, 65, 128, 129)] == [
        "1", "2-4", "2-4", "5-8", "5-8", "9-16", "9-16", "17-32", "17-32", "33-64", "33-64", "65-128", "65-128", ">128"]


def test_fig4a_forwards_by_bucket_on_fdb_v3_chunks(tmp_path):
    tokens = [1, 3, 4, 20]
    for decoder, forwards in (("ar", tokens), ("speclisten", [1, 1, 2, 1]), ("pld", [1, 1, 1, 1])):
        rows = [chunk("f", i, task="fdb_v3", num_output_tokens=t, num_post_audio_forwards=f)
                for i, (t, f) in enumerate(zip(tokens, forwards))]
        rows.append(chunk("q", 0, task="llama_questions", num_output_tokens=100, num_post_audio_forwards=100))
        write_run(tmp_path / decoder, decoder, rows)
    results = load_results([str(tmp_path)])
    data = fig4a_data(results)
    assert data[["decoder", "tasks", "bucket", "forwards", "chunks"]].to_dict("records") == [
        {"decoder": "ar", "tasks": "fdb_v3", "bucket": "1", "forwards": 1.0, "chunks": 1},
        {"decoder": "ar", "tasks": "fdb_v3", "bucket": "2-4", "forwards": 3.5, "chunks": 2},
        {"decoder": "ar", "tasks": "fdb_v3", "bucket": "17-32", "forwards": 20.0, "chunks": 1},
        {"decoder": "speclisten", "tasks": "fdb_v3", "bucket": "1", "forwards": 1.0, "chunks": 1},
        {"decoder": "speclisten", "tasks": "fdb_v3", "bucket": "2-4", "forwards": 1.5, "chunks": 2},
        {"decoder": "speclisten", "tasks": "fdb_v3", "bucket": "17-32", "forwards": 1.0, "chunks": 1},
    ]
    table = fig4a_table(results, data)
    assert table.frame.to_dict("records")[0] == {"model": "m", "decoder": "ar", "tasks": "fdb_v3", "1": "1.0 (1)",
                                                 "2-4": "3.5 (2)", "17-32": "20.0 (1)"}
    paths = write_figures(data, fig4b_data(results), tmp_path)
    assert [p.name for p in paths] == ["fig4a_forwards_by_length.png"]
    assert paths[0].read_bytes()[:4] == b"\x89PNG"


def test_fig4b_speedup_versus_temperature_against_the_baseline_at_the_same_temperature(tmp_path):
    for temperature, (ar_ms, sl_ms) in {0.0: (400.0, 100.0), 0.5: (400.0, 200.0), 1.0: (300.0, 200.0)}.items():
        for decoder, ms in (("ar", ar_ms), ("speclisten", sl_ms)):
            rows = [chunk("s", 0, kind="speak", post_audio_ms=ms), chunk("t", 0, task="fdb_v3", kind="tool", post_audio_ms=ms)]
            write_run(tmp_path / f"{decoder}_{temperature}", decoder, rows, temperature=temperature)
    results = load_results([str(tmp_path)])
    data = fig4b_data(results)
    speak = data[data["kind"] == "speak"]
    assert speak[["temperature", "speedup"]].to_dict("records") == [
        {"temperature": 0.0, "speedup": 4.0}, {"temperature": 0.5, "speedup": 2.0}, {"temperature": 1.0, "speedup": 1.5}]
    table = fig4b_table(results, "ar", data)
    assert table.frame["speak speedup"].tolist() == [4.0, 2.0, 1.5]
    assert table.frame["tool speedup"].tolist() == [4.0, 2.0, 1.5]
    assert [p.name for p in write_figures(fig4a_data(results).iloc[:0], data, tmp_path)] == ["fig4b_temperature.png"]


def test_fig4b_without_a_sweep_and_fig4c_say_so(tmp_path):
    write_run(tmp_path / "ar", "ar", [chunk("s", 0, kind="speak")])
    results = load_results([str(tmp_path)])
    assert fig4b_table(results).frame.empty and "no temperature sweep" in fig4b_table(results).notes[0]
    table = fig4c_table(results)
    assert table.frame.empty and table.notes[0].startswith("no concurrency runs")
