"""Converters and augmentation write files named by session ids: an id spelled from source data (``/``, ``..``) is
made a name (``safe_id``) or refused in one line, and nothing is written outside the output folder."""

from __future__ import annotations

import json

import numpy as np
import pytest

from test_convert_big_bench_audio import ROWS, make_copy
from ticktock.corpus.convert import ConvertError, convert
from ticktock.corpus.convert.writer import CorpusWriter
from ticktock.results.names import is_name


def files_under(folder):
    return {p for p in folder.rglob("*") if p.is_file()}


def test_a_source_id_with_separators_and_dots_becomes_a_name_inside_the_output(tmp_path):
    rows = [{**ROWS[0], "id": "../../../../escaped/x"}, {**ROWS[1], "id": "a/b\\c"}, {**ROWS[2], "id": ".."}]
    source = make_copy(tmp_path / "src", rows)
    before = files_under(tmp_path)
    result = convert("big_bench_audio", source, tmp_path / "out", warn=lambda line: None)
    ids = [s.session_id for s in result.sessions]
    assert ids == ["big_bench_audio-.._.._.._.._escaped_x", "big_bench_audio-a_b_c", "big_bench_audio-.."]
    assert all(is_name(i) for i in ids)
    written = files_under(tmp_path) - before
    assert written and all(p.is_relative_to(tmp_path / "out") for p in written)
    assert sorted(p.name for p in (tmp_path / "out" / "audio").iterdir()) == sorted(f"{i}.flac" for i in ids)


@pytest.mark.parametrize("session_id, problem", [("../x", "starts with '.'"), ("a/../../x", "has '/' at position 2"),
                                                 ("", "empty"), ("x" * 200, "200 characters long")])
def test_the_writer_refuses_an_id_that_is_not_a_name_in_one_line(tmp_path, session_id, problem):
    writer = CorpusWriter(tmp_path / "out", warn=lambda line: None)
    with pytest.raises(ConvertError, match=rf"^converted session: field 'session_id': .* is not a name: .*; "
                                           rf"{problem}$"):
        writer.write_audio(session_id, np.zeros(1600, dtype=np.float32))
    writer.discard()
    assert files_under(tmp_path) == set()


def test_augmenting_a_manifest_whose_id_is_a_path_is_one_line_before_anything_is_written(tmp_path):
    from ticktock.corpus.augment import AugmentError, augment_corpus
    from ticktock.shipped import resource_path

    mini = resource_path("manifests/ticktock-mini")
    line = json.loads((mini / "manifest.jsonl").read_text(encoding="utf-8").splitlines()[0])
    line["audio"] = str(mini / line["audio"])
    source = tmp_path / "src"
    source.mkdir()
    for session_id, problem in ((f"../../{tmp_path}/victim", "starts with '.'"),
                                ("x" * 125, "125 characters: its augmented ids")):
        (source / "manifest.jsonl").write_text(json.dumps({**line, "session_id": session_id}) + "\n")
        with pytest.raises(AugmentError, match=rf"^{source / 'manifest.jsonl'}:1: field 'session_id': .*{problem}"):
            augment_corpus(source, tmp_path / "out", "train", 0)
    assert not (tmp_path / "out").exists() and not list(tmp_path.glob("victim*"))
