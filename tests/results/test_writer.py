import json

import pyarrow.parquet as pq
import pytest

from ticktock.results.schema import SCHEMA_VERSION, SESSIONS
from ticktock.results.writer import RunDirError, RunWriter, part_key


def rows(session_id):
    chunk = {"run_id": "r", "model": "m", "decoder": "d", "clock": "c", "task": "t", "session_id": session_id,
             "chunk_index": 0, "kind": "listen", "output_token_ids": [1, 2]}
    session = {"run_id": "r", "session_id": session_id, "num_chunks": 1, "onset_latencies_ms": []}
    forward = {"run_id": "r", "session_id": session_id, "chunk_index": 0, "phase": "post_audio"}
    return [chunk], session, [forward]


def test_resume_consolidate_and_version(tmp_path):
    writer = RunWriter(tmp_path, {"decoder": "ar"})
    writer.write_session("a/1", *rows("a/1"))
    writer.write_session("b", *rows("b"))
    assert RunWriter(tmp_path, {"decoder": "ar"}).completed() == {"a/1", "b"}
    counts = writer.consolidate()
    assert counts == {"chunks": 2, "sessions": 2, "forwards": 2}
    table = pq.read_table(tmp_path / "chunks.parquet")
    assert table.schema.metadata[b"ticktock_schema_version"] == str(SCHEMA_VERSION).encode()
    assert sorted(table.column("session_id").to_pylist()) == ["a/1", "b"]


def test_a_different_run_is_refused_unless_overwrite(tmp_path):
    writer = RunWriter(tmp_path, {"decoder": "ar"})
    writer.write_run_json({"status": "complete"})
    writer.write_session("a", *rows("a"))
    with pytest.raises(RunDirError, match=r"different configuration \(decoder: 'ar' -> 'pld'\)"):
        RunWriter(tmp_path, {"decoder": "pld"})
    fresh = RunWriter(tmp_path, {"decoder": "pld"}, overwrite=True)
    assert fresh.completed() == set() and not (tmp_path / "run.json").exists()


def test_an_incomplete_session_is_not_counted(tmp_path):
    writer = RunWriter(tmp_path, {})
    chunks, _, _ = rows("x")
    from ticktock.results.schema import CHUNKS
    from ticktock.results.writer import write_table

    write_table(tmp_path / "parts" / f"{part_key('x')}.chunks.parquet", chunks, CHUNKS)  # crash before sessions part
    assert writer.completed() == set()
    assert writer.consolidate()["chunks"] == 0
    assert not list((tmp_path / "parts").glob(".*.tmp"))


def test_run_json_is_written_atomically_with_identity(tmp_path):
    writer = RunWriter(tmp_path, {"k": 1})
    writer.write_run_json({"status": "running"})
    assert json.loads((tmp_path / "run.json").read_text()) == {"status": "running", "identity": {"k": 1}}


def test_fingerprints_are_read_back_and_a_forgotten_session_is_no_longer_complete(tmp_path):
    writer = RunWriter(tmp_path, {})
    chunks, session, forwards = rows("a")
    writer.write_session("a", chunks, {**session, "manifest_sha256": "m1", "audio_sha256": "a1"}, forwards)
    writer.write_session("b", *rows("b"))  # no fingerprint recorded
    assert writer.fingerprints() == {"a": {"manifest_sha256": "m1", "audio_sha256": "a1", "profile_sha256": None},
                                     "b": {"manifest_sha256": None, "audio_sha256": None, "profile_sha256": None}}
    writer.forget("a")
    assert writer.completed() == {"b"} and not list((tmp_path / "parts").glob(f"{part_key('a')}.*"))
    assert writer.consolidate()["sessions"] == 1


def test_a_part_written_before_a_column_existed_is_consolidated_with_it_null(tmp_path):
    writer = RunWriter(tmp_path, {})
    writer.write_session("new", *rows("new"))
    chunks, session, forwards = rows("old")
    writer.write_session("old", chunks, session, forwards)
    old = tmp_path / "parts" / f"{part_key('old')}.sessions.parquet"
    pq.write_table(pq.read_table(old).drop_columns(["profile_sha256"]), old)  # as schema version 5 wrote it
    assert writer.consolidate()["sessions"] == 2
    table = pq.read_table(tmp_path / "sessions.parquet")
    assert table.column("profile_sha256").to_pylist() == [None, None]
    assert table.schema.names == SESSIONS.names  # the columns in the schema's order


@pytest.mark.parametrize("text, reason", [("[1, 2]", "not a run's run.json (a JSON list, not an object)"),
                                          ('{"status": "runn', "cannot read the run this folder holds (")])
def test_resuming_onto_a_run_json_that_is_not_a_runs_is_one_line(tmp_path, text, reason):
    (tmp_path / "run.json").write_text(text)
    with pytest.raises(RunDirError) as caught:
        RunWriter(tmp_path, {"decoder": "ar"})
    assert str(caught.value).startswith(f"{tmp_path / 'run.json'}: {reason}") and "\n" not in str(caught.value)
    assert "pass overwrite=true to replace it" in str(caught.value)
