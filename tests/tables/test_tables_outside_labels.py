"""Labels from outside the harness are rendered inert, and the paper's columns stand only beside setups of the
paper's kind: a live run's (its clock ``live:<protocol>``; its model and decoder named by the server) never shows
them."""

import json

from table_runs import chunk, write_run

from ticktock.tables import build_tables, load_results
from ticktock.tables.__main__ import main
from ticktock.tables.compute import latency_table, speak_speedup_table

HOSTILE = "<b>x</b>|y\nz"
LIVE = {"name": "live:vllm_omni_duplex", "kind": "live", "per_unit": True, "profile_sha256": None,
        "profile_device": "endpoint 127.0.0.1:8099", "protocol": {"name": "vllm_omni_duplex"}}


def replies(speak_ms: float, tool_ms: float) -> list[dict]:
    return [chunk("s", 0, kind="speak", task="llama_questions", post_audio_ms=speak_ms, num_output_tokens=4,
                  num_post_audio_forwards=4, is_onset=True, response_ms=speak_ms, output_token_ids=[1, 2, 3, 4]),
            chunk("t", 0, kind="tool", task="fdb_v3", post_audio_ms=tool_ms, num_output_tokens=10,
                  num_post_audio_forwards=10, response_ms=tool_ms, output_token_ids=[5])]


def md_table_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("|")]


def unescaped_pipes(line: str) -> int:
    return line.replace("\\\\", "").replace("\\|", "").count("|")


def test_a_decoder_label_with_html_a_pipe_and_a_newline_is_inert_in_markdown_latex_and_html(tmp_path):
    results, out = tmp_path / "results", tmp_path / "out"
    write_run(results / "ar", "ar", replies(400.0, 1000.0))
    write_run(results / "hostile", HOSTILE, replies(100.0, 50.0), run_id="m-hostile")
    assert main([str(results), "--out", str(out)]) == 0
    markdown = {path.name: path.read_text() for path in out.glob("*.md")}
    assert markdown and all("<b>" not in text and "</b>" not in text for text in markdown.values())
    shown = [name for name, text in markdown.items() if "\\<b\\>x\\</b\\>\\|y z" in text]
    assert "table2_speak_speedup.md" in shown and "table5_latency.md" in shown, sorted(markdown)
    for name, text in markdown.items():
        lines = md_table_lines(text)
        assert len({unescaped_pipes(line) for line in lines}) <= 1, (name, lines)  # one row per line, same cells
    latex = (out / "table2_speak_speedup.tex").read_text()
    assert "\\textless{}b\\textgreater{}x" in latex and "y z" in latex
    page = (out / "report.html").read_text()
    assert "<b>x</b>" not in page and "&lt;b&gt;x&lt;/b&gt;|y" in page


def live_runs(folder, model="embedded@127.0.0.1:8099"):
    for decoder, speak_ms, tool_ms in (("ar", 400.0, 1000.0), ("speclisten_stream", 150.0, 300.0)):
        write_run(folder / decoder, decoder, replies(speak_ms, tool_ms), model=model, clock=LIVE)
    return folder


def test_a_live_run_shows_no_paper_column_and_no_paper_note(tmp_path):
    results = load_results([str(live_runs(tmp_path / "live"))])
    assert {cell.setup.clock for cell in results.cells} == {"live:vllm_omni_duplex"}
    for table in (speak_speedup_table(results), latency_table(results)):
        assert not [c for c in table.frame.columns if c.startswith("paper")], (table.key, list(table.frame.columns))
        assert not any(note.startswith(("paper columns", "Paper (")) for note in table.notes), table.notes
    for table in build_tables(results).tables:
        assert not [c for c in table.frame.columns if str(c).startswith("paper ")], table.key


def test_beside_an_in_process_setup_a_live_setups_paper_cells_stay_empty(tmp_path):
    live_runs(tmp_path / "both" / "live")
    # gander: a model the paper measured (paper_numbers.yaml models), so the paper's columns stand beside it
    write_run(tmp_path / "both" / "replayed" / "ar", "ar", replies(400.0, 1000.0), model="gander")
    write_run(tmp_path / "both" / "replayed" / "speclisten", "speclisten", replies(100.0, 250.0), model="gander")
    table = speak_speedup_table(load_results([str(tmp_path / "both")]))
    paper = {(row["model"], row["decoder"]): (row["paper speedup"], row["paper #MAT"])
             for row in table.frame.to_dict("records")}
    assert paper[("gander", "ar")] == ("1.00", "1.00") and paper[("gander", "speclisten")][0] == "2.60-2.76"
    assert paper[("embedded@127.0.0.1:8099", "ar")] == ("", "")
    assert paper[("embedded@127.0.0.1:8099", "speclisten_stream")] == ("", "")
    onset = {(row["model"], row["decoder"]): row["paper onset ms"]
             for row in latency_table(load_results([str(tmp_path / "both")])).frame.to_dict("records")}
    assert onset[("gander", "ar")] == "417-1089" and onset[("embedded@127.0.0.1:8099", "ar")] == ""


def test_the_live_run_json_written_here_has_the_shape_a_live_run_writes(tmp_path):
    meta = json.loads((live_runs(tmp_path / "live") / "ar" / "run.json").read_text())
    assert meta["clock"]["kind"] == "live" and meta["clock"]["name"].startswith("live:")
