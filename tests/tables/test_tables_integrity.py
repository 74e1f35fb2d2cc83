"""Results that cannot lie: the tables refuse, or keep apart and say why, every pair of runs they cannot honestly
compare (different inputs under one session id, different cost profiles under one name, rows that disagree with
their run.json, two folders with one run id, failed or empty runs), and say when Token Recycling's figures depend on
N and the shard count."""

import json

import pytest
from table_runs import MODELED, chunk, concurrency, write_run

from ticktock.tables import TablesError, load_results
from ticktock.tables.__main__ import main
from ticktock.tables.compute import speak_speedup_table

SPEAK = dict(kind="speak", post_audio_ms=400.0, num_output_tokens=4, num_post_audio_forwards=4)
FAST = dict(SPEAK, post_audio_ms=100.0, num_post_audio_forwards=1)


def edit_meta(folder, **changes):
    """Change top-level keys of a run folder's run.json (a value None removes the key)."""
    meta = json.loads((folder / "run.json").read_text())
    meta.update(changes)
    (folder / "run.json").write_text(json.dumps({k: v for k, v in meta.items() if v is not None}))
    return folder


def one_error_line(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("ticktock: error: "), err
    return err.removeprefix("ticktock: error: ").rstrip("\n")


@pytest.mark.parametrize("column, what", [("audio_sha256", "audio file"), ("manifest_sha256", "manifest line")])
def test_one_session_id_replayed_from_different_inputs_is_refused(tmp_path, capsys, column, what):
    """Today's tables printed a speedup for a chunk whose audio differed between the two runs."""
    write_run(tmp_path / "ar", "ar", [chunk("s", 0, **SPEAK), chunk("u", 0, **SPEAK)])
    write_run(tmp_path / "sl", "speclisten", [chunk("s", 0, **FAST), chunk("u", 0, **FAST)],
              [{"session_id": "s"}, {"session_id": "u", column: "9" * 64}])
    with pytest.raises(TablesError) as caught:
        load_results([str(tmp_path)])
    assert str(caught.value).startswith(f"session u: runs {tmp_path / 'ar'} and {tmp_path / 'sl'} replayed it from "
                                        f"different inputs (its {what} differs: {column} ")
    assert main([str(tmp_path), "--out", str(tmp_path / "out"), "--format", "md"]) == 2
    assert "replayed it from different inputs" in one_error_line(capsys)
    assert not (tmp_path / "out").exists()


def test_cost_profiles_of_one_name_and_different_content_are_different_setups(tmp_path):
    """AR on one profile and a decoder on a cheaper copy of the same name: today one setup and a speedup."""
    write_run(tmp_path / "ar", "ar", [chunk("s", 0, **SPEAK)], clock={**MODELED, "profile_sha256": "a" * 64})
    write_run(tmp_path / "ar_prefill", "ar_prefill", [chunk("s", 0, **FAST)],
              clock={**MODELED, "profile_sha256": "b" * 64})
    results = load_results([str(tmp_path)])
    assert sorted(s.clock for s in results.setups()) == ["modeled:test-profile#aaaaaaaa", "modeled:test-profile#bbbbbbbb"]
    table = speak_speedup_table(results, "ar")
    assert table.frame["decoder"].tolist() == ["ar"]  # no speedup across two profiles
    assert any(n.startswith("no ar run for setup m / modeled:test-profile#bbbbbbbb") for n in table.notes)
    assert any(p.startswith("cost profile test-profile: 2 profiles of different content share this name")
               for p in table.provenance)

    same = tmp_path / "same"  # the same content under the one name: one setup, no tag
    write_run(same / "ar", "ar", [chunk("s", 0, **SPEAK)], clock={**MODELED, "profile_sha256": "a" * 64})
    write_run(same / "ar_prefill", "ar_prefill", [chunk("s", 0, **FAST)], clock={**MODELED, "profile_sha256": "a" * 64})
    results = load_results([str(same)])
    assert [s.clock for s in results.setups()] == ["modeled:test-profile"]
    assert speak_speedup_table(results, "ar").frame["speedup"].tolist() == [1.0, 4.0]


def test_a_run_whose_sessions_were_charged_by_different_profiles_is_refused(tmp_path):
    clock = {**MODELED, "profile_sha256": "a" * 64}
    write_run(tmp_path / "mixed", "ar", [chunk("s0", 0), chunk("s1", 0)],
              [{"session_id": "s0", "profile_sha256": "a" * 64}, {"session_id": "s1", "profile_sha256": "c" * 64}],
              clock=clock)
    with pytest.raises(TablesError, match=r"mixed/sessions\.parquet: its sessions were charged by 2 different cost "
                                          r"profiles \(cost profile sha256 aaaaaaaa for 1 sessions, cost profile sha256 "
                                          r"cccccccc for 1 sessions\)"):
        load_results([str(tmp_path / "mixed")])
    write_run(tmp_path / "other", "ar", [chunk("s0", 0)], [{"session_id": "s0", "profile_sha256": "c" * 64}], clock=clock)
    with pytest.raises(TablesError, match=r"other/sessions\.parquet: its sessions were charged by cost profile sha256 "
                                          r"cccccccc, but run\.json says cost profile sha256 aaaaaaaa"):
        load_results([str(tmp_path / "other")])


def test_rows_of_another_decoder_than_run_json_says_are_refused(tmp_path):
    run = write_run(tmp_path / "r", "ar", [chunk("s", 0)])
    meta = json.loads((run / "run.json").read_text())
    meta["config"]["decoder"]["name"] = "pld"
    (run / "run.json").write_text(json.dumps(meta))
    with pytest.raises(TablesError, match=r"r/chunks\.parquet: rows of decoder 'ar', but run\.json says decoder 'pld' "
                                          r"\(config\.decoder\.name\)"):
        load_results([str(run)])


def test_two_folders_with_one_run_id_are_refused_naming_both(tmp_path, capsys):
    write_run(tmp_path / "a", "ar", [chunk("s", 0)], run_id="m-ar-1234")
    write_run(tmp_path / "b", "ar", [chunk("t", 0)], run_id="m-ar-1234")  # e.g. a copy, partly rerun
    assert main([str(tmp_path), "--out", str(tmp_path / "out"), "--format", "md"]) == 2
    assert one_error_line(capsys) == (f"run id m-ar-1234: two run folders hold it, {tmp_path / 'a'} and {tmp_path / 'b'} "
                                      "(a copied run folder?); pass only one of them")


def test_a_run_with_no_completed_session_is_one_line_or_left_out_and_said(tmp_path, capsys):
    empty = write_run(tmp_path / "empty" / "ar_stopped", "ar", [], [], status="interrupted")
    assert main([str(empty), "--out", str(tmp_path / "o"), "--format", "md", "--allow-interrupted"]) == 2
    assert one_error_line(capsys) == f"no completed session in any of the 1 runs ({empty}): nothing to build tables from"

    write_run(tmp_path / "more" / "ar", "ar", [chunk("s", 0, **SPEAK)])
    results = load_results([str(empty), str(tmp_path / "more")], allow_interrupted=True)
    assert [len(c.runs) for c in results.cells] == [1]
    assert f"run {empty}: no completed session (interrupted); nothing from it in the tables" in results.provenance()


def shard(folder, index, status, chunks):
    run = write_run(folder / f"shard{index}", "ar", chunks, status=status)
    return edit_meta(run, shard={"index": index, "count": 2, "split": "0123abcd", "split_sessions": 2},
                     run_id=f"m-ar-shard{index}")


def test_a_failed_shard_with_no_session_is_refused_or_left_out_with_allow_missing_shards(tmp_path, capsys):
    shard(tmp_path, 0, "complete", [chunk("s0", 0, **SPEAK)])
    failed = shard(tmp_path, 1, "failed: OSError: [Errno 28] No space left on device", [])
    assert main([str(tmp_path), "--out", str(tmp_path / "o"), "--format", "md"]) == 2
    assert one_error_line(capsys).endswith(f"shard 1 of 2 ({failed}) is failed: OSError: [Errno 28] No space left on "
                                           "device; rerun it into the same folder to resume it (or pass "
                                           "--allow-missing-shards to build from the shards there)")
    results = load_results([str(tmp_path)], allow_missing_shards=True)
    assert len(results.cells) == 1 and results.cells[0].sessions["session_id"].tolist() == ["s0"]
    assert any(p.startswith("incomplete: sharded run") for p in results.provenance())
    assert f"run {failed}: no completed session (failed: OSError: [Errno 28] No space left on device); nothing from it " \
           "in the tables" in results.provenance()
    assert main([str(failed), "--out", str(tmp_path / "o"), "--format", "md", "--allow-missing-shards"]) == 2
    assert one_error_line(capsys).startswith("no completed session in any of the 1 runs")


def test_a_run_still_running_is_said_under_produced_by(tmp_path, capsys):
    from ticktock.results.liveness import heartbeat

    run = write_run(tmp_path / "ar", "ar", [chunk("s", 0, **SPEAK)], status="running")
    edit_meta(run, heartbeat=heartbeat(1))  # this very process: alive, its last consolidated tables are read
    assert main([str(run), "--out", str(tmp_path / "o"), "--format", "md"]) == 0
    line = f"run {run} has status 'running' (not complete): its rows are used as they are"
    assert f"- {line}" in capsys.readouterr().out and line in (tmp_path / "o" / "table2_speak_speedup.md").read_text()


SCOPE = {"name": "recycling", "adjacency_matrix_scope": "per decoder instance"}


def test_recycling_runs_of_different_n_or_shard_counts_are_said_to_depend_on_them(tmp_path):
    alone = edit_meta(write_run(tmp_path / "recycling", "recycling", [chunk("s", 0, **SPEAK)]), decoder=SCOPE)
    results = load_results([str(alone)])
    assert not any("adjacency matrix" in p for p in results.provenance())  # one layout: nothing to say
    edit_meta(write_run(tmp_path / "rec_n4", "recycling", [chunk("s", 0, **SPEAK)], sharing=concurrency(4)),
              decoder=SCOPE)
    for index in (0, 1):
        edit_meta(write_run(tmp_path / f"rec_t1_{index}", "recycling", [chunk(f"s{index}", 0, **SPEAK)], temperature=1.0),
                  decoder=SCOPE, shard={"index": index, "count": 2, "split": "feed", "split_sessions": 2})
    notes = [p for p in load_results([str(tmp_path)]).provenance() if "adjacency matrix" in p]
    assert notes == ["recycling: its adjacency matrix starts cold in each concurrency slot and each shard (run.json "
                     "decoder.adjacency_matrix_scope), so its figures depend on N and the shard count, and its runs here "
                     "differ in them: N=1, 2 shards (2 runs), N=1, unsharded (1 run), N=4, unsharded (1 run)"]
