"""The command line: files per table and format, the HTML report, headline printing, --strict, errors."""

import io

import pytest
from table_runs import chunk, write_run

from ticktock.tables import build_report, build_tables, load_results, print_headline
from ticktock.tables.__main__ import main


def runs(folder, lossy=False):
    rows = [chunk("s", 0, kind="speak", task="llama_questions", post_audio_ms=400.0, num_output_tokens=4,
                  num_post_audio_forwards=4, is_onset=True, response_ms=400.0, output_token_ids=[1, 2, 3, 4]),
            chunk("t", 0, kind="tool", task="fdb_v3", post_audio_ms=1000.0, num_output_tokens=10,
                  num_post_audio_forwards=10, response_ms=1000.0, output_token_ids=[5])]
    write_run(folder / "ar", "ar", rows)
    method = [dict(rows[0], post_audio_ms=100.0, num_post_audio_forwards=1, response_ms=100.0, draft_full_match=True),
              dict(rows[1], post_audio_ms=50.0, num_post_audio_forwards=1, response_ms=50.0, draft_full_match=False,
                   output_token_ids=[6] if lossy else [5])]
    write_run(folder / "sl", "speclisten", method)
    write_run(folder / "sil", "speclisten_silence", method)
    return folder


def test_cli_writes_every_table_in_every_format_and_the_report(tmp_path, capsys):
    out = tmp_path / "out"
    assert main([str(runs(tmp_path / "results")), "--out", str(out)]) == 0
    built = build_tables(load_results([str(tmp_path / "results")]))
    for table in built.tables:
        for suffix in (".md", ".csv", ".tex"):
            assert (out / f"{table.key}{suffix}").is_file(), table.key
    page = (out / "report.html").read_text()
    for table in built.tables:
        assert f'id="{table.key}"' in page and table.title.split(":")[0] in page
    assert page.count("data:image/png;base64,") == 3 and (out / "fig4a_forwards_by_length.png").is_file()
    assert (out / "fig5_onset.png").is_file() and (out / "fig6_tool_call.png").is_file()  # the case studies
    assert "<p>Checks passed:</p>" in page and "Losslessness passed in m / modeled:test-profile" in page
    printed = capsys.readouterr().out
    assert printed.startswith("Produced by:") and printed.count("### ") == 3
    assert "### Table 2" in printed and "### Tool-call speedup" in printed and "### Table 5" in printed
    assert "| m | speclisten | 1 | 400.0 | 100.0 | 4.00 | 4.00 |" in printed  # model m: no paper column
    assert "\\toprule" in (out / "table2_speak_speedup.tex").read_text()


def test_lossless_failure_is_loud_and_strict_exits_non_zero(tmp_path, capsys):
    results = runs(tmp_path / "results", lossy=True)
    assert main([str(results), "--out", str(tmp_path / "a"), "--format", "md"]) == 0
    err = capsys.readouterr().err
    assert "FAILURE: speclisten is lossless by design but only 50.0% of 2 chunks" in err and "!!!!" in err
    assert not (tmp_path / "a" / "report.html").exists() and not (tmp_path / "a" / "quality.csv").exists()
    assert main([str(results), "--out", str(tmp_path / "b"), "--strict"]) == 1
    page = (tmp_path / "b" / "report.html").read_text()
    assert '<div class="banner"><p class="failure">2 FAILURE(S)</p>' in page
    assert '<td class="txt bad">FAILURE</td>' in page


def test_errors_exit_2_with_one_message(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert main([str(tmp_path / "empty"), "--out", str(tmp_path / "o")]) == 2
    assert capsys.readouterr().err == f"ticktock: error: {tmp_path / 'empty'}: no result runs found (a run directory holds run.json and chunks.parquet)\n"
    assert main([str(runs(tmp_path / "r")), "--baseline", "nope", "--out", str(tmp_path / "o")]) == 2
    assert "no 'nope' run among the results (decoders: ar, speclisten, speclisten_silence)" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([str(tmp_path / "r"), "--format", "pdf"])


def test_print_headline_prints_exactly_the_three_tables(tmp_path):
    buffer = io.StringIO()
    tables = print_headline([str(runs(tmp_path))], file=buffer)
    assert [t.key for t in tables] == ["table2_speak_speedup", "tool_speedup", "table5_latency"]
    assert buffer.getvalue().count("### ") == 3


def test_the_main_job_entry_points(tmp_path, capsys):
    results = load_results([runs(tmp_path / "r")])
    print_headline(results)
    assert capsys.readouterr().out.count("### ") == 3
    report = build_report(results, tmp_path / "report")
    assert report == tmp_path / "report" / "report.html" and report.is_file()


def test_a_truncated_parquet_file_is_named_in_one_line_and_skipped_on_request(tmp_path, capsys):
    results = runs(tmp_path / "results")
    broken = results / "sil" / "chunks.parquet"
    broken.write_bytes(broken.read_bytes()[: broken.stat().st_size // 2])  # a copy cut short
    assert main([str(results), "--out", str(tmp_path / "a"), "--format", "md"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"ticktock: error: {broken}: not a readable parquet file ("), err
    out = tmp_path / "b"
    assert main([str(results), "--out", str(out), "--skip-bad-runs"]) == 0
    captured = capsys.readouterr()
    assert f"warning: skipped: {broken}: not a readable parquet file (" in captured.err
    assert f"- skipped: {broken}: not a readable parquet file (" in captured.out  # the provenance block
    assert "2 runs (1 skipped) -> " in captured.out and "| m | speclisten_silence |" not in captured.out
    assert f"skipped: {broken}: not a readable parquet file" in (out / "report.html").read_text()
    assert f"skipped: {broken}" in (out / "table2_speak_speedup.md").read_text()


def test_an_output_folder_that_cannot_be_written_is_one_line_with_exit_code_4(tmp_path, capsys):
    taken = tmp_path / "taken"
    taken.write_text("a file where the tables would go")
    assert main([str(runs(tmp_path / "results")), "--out", str(taken), "--format", "md"]) == 4
    err = capsys.readouterr().err
    assert err == f"ticktock: error: {taken}: cannot write the tables there (File exists)\n"
