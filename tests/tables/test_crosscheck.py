"""``python -m ticktock.tables.crosscheck``: two runs of the same sessions compared unit by unit."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
import pyarrow.parquet as pq

from ticktock.tables.crosscheck import compare, main


def write_run(folder, units):
    """A run folder whose chunks.parquet holds ``units``: (session, chunk, kind, text)."""
    folder.mkdir()
    columns = list(zip(*units))
    pq.write_table(pa.table({"session_id": list(columns[0]), "chunk_index": list(columns[1]),
                             "kind": list(columns[2]), "output_text": list(columns[3])}), folder / "chunks.parquet")
    return folder


def test_units_are_compared_by_kind_and_words_and_each_difference_is_named(tmp_path, capsys):
    replayed = write_run(tmp_path / "replayed", [
        ("a", 0, "listen", "<|listen|>"), ("a", 1, "speak", "<|speak|> Paris.<|turn_eos|><|chunk_eos|>"),
        ("a", 2, "listen", "<|listen|>"), ("b", 0, "listen", "<|listen|>"), ("c", 0, "listen", "<|listen|>")])
    served = write_run(tmp_path / "served", [
        ("a", 0, "listen", ""), ("a", 1, "speak", " Paris."), ("a", 2, "speak", " Also Lyon."),
        ("b", 0, "listen", None)])
    result = compare(replayed, served)
    assert (result.units, result.same_kind, result.same, result.sessions, result.sessions_only_in_one) == (4, 3, 3, 2, 1)
    [difference] = result.differences
    assert (difference.session_id, difference.chunk_index, difference.first, difference.second) == (
        "a", 2, ("listen", ""), ("speak", "Also Lyon."))
    assert main([str(replayed), str(served), "--min-agreement", "0.7", "--json", str(tmp_path / "r.json")]) == 0
    assert json.loads((tmp_path / "r.json").read_text())["same"] == 3
    assert main([str(replayed), str(served), "--min-agreement", "0.95"]) == 1
    assert "same kind and text: 3 (75.0%)" in capsys.readouterr().out


def test_a_folder_that_is_not_a_finished_run_is_one_line_naming_it(tmp_path, capsys):
    replayed = write_run(tmp_path / "replayed", [("a", 0, "listen", "<|listen|>")])
    (tmp_path / "torn").mkdir()
    (tmp_path / "torn" / "chunks.parquet").write_bytes(b"PAR1 torn")
    for folder in (tmp_path / "nothing", tmp_path / "torn"):
        with pytest.raises(SystemExit) as done:
            main([str(replayed), str(folder)])
        err = capsys.readouterr().err
        assert done.value.code == 3 and err.count("\n") == 1 and str(folder / "chunks.parquet") in err, err
