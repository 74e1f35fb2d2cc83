"""TickTock-Bench in dataset form: the mini corpus exported (``ticktock bench export``), read back offline with
``load_dataset`` / ``load_from_disk`` field for field, replayed with ``task=hf`` chunk for chunk like its manifest,
and bad datasets refused in one line naming the dataset, split, row and field."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from ticktock.corpus.bench.__main__ import main as bench
from ticktock.shipped import resource_path
from ticktock.sessions.manifest import load_manifest

MINI = resource_path("manifests/ticktock-mini")


@pytest.fixture(scope="module")
def offline(tmp_path_factory):
    """No Hub access and a fresh datasets cache, for the whole module (as CI's HF_HUB_OFFLINE=1)."""
    import datasets
    from huggingface_hub import constants

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(constants, "HF_HUB_OFFLINE", True)
        patch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
        patch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path_factory.mktemp("datasets-cache"))
        yield


@pytest.fixture(scope="module")
def mini_dataset(offline, tmp_path_factory):
    """The mini corpus exported by the command line, as the docs show it."""
    out = tmp_path_factory.mktemp("export") / "mini-dataset"
    assert bench(["export", str(MINI), "--out", str(out), "--name", "TickTock-Bench-mini"]) == 0
    return out


@pytest.fixture(scope="module")
def twins():
    return {s.session_id: s for s in load_manifest(MINI / "manifest.jsonl")}


def test_the_export_is_one_config_per_task_with_a_card(mini_dataset, capsys):
    card = (mini_dataset / "README.md").read_text(encoding="utf-8")
    header = yaml.safe_load(card.split("---\n")[1])
    assert [c["config_name"] for c in header["configs"]] == ["llama_questions", "web_questions", "trivia_qa",
                                                            "alpaca_eval", "big_bench_audio", "fdb_v1", "fdb_v1_5",
                                                            "fdb_v3"]
    assert header["configs"][-1]["data_files"] == [{"split": "test", "path": "fdb_v3/test-*"}]
    assert header["configs"][0]["default"] is True and header["license"] == "apache-2.0"
    assert header["size_categories"] == ["n<1K"] and header["pretty_name"] == "TickTock-Bench-mini"
    assert "| fdb_v3 | 13 | 261 |" in card and "| **total** | 104 | 1890 |" in card
    assert "| ticktock-synth | 104 | apache-2.0 |" in card
    assert "ticktock run task=hf task.dataset=path/to/this/folder task.config=llama_questions" in card
    assert sorted(p.name for p in (mini_dataset / "fdb_v3").iterdir()) == ["test-00000-of-00001.parquet"]
    assert b"Audio" in pq.read_schema(mini_dataset / "fdb_v3/test-00000-of-00001.parquet").metadata[b"huggingface"]
    assert bench(["export", str(MINI), "--out", str(mini_dataset), "--name", "TickTock-Bench-mini"]) == 0  # its own
    assert "total            sessions= 104 chunks=  1890" in capsys.readouterr().out


def test_every_field_reads_back_offline_with_load_dataset_and_load_from_disk(mini_dataset, twins, tmp_path):
    from datasets import Audio, get_dataset_config_names, load_dataset, load_from_disk

    from ticktock.sessions.dataset_rows import manifest_line

    configs = get_dataset_config_names(str(mini_dataset))
    seen = []
    for config in configs:
        rows = load_dataset(str(mini_dataset), config, split="test")
        assert isinstance(rows.features["audio"], Audio)
        rows = rows.cast_column("audio", Audio(decode=False))
        assert rows.features["turns"].feature["words"].feature["start_s"].dtype == "float64"
        for row in rows:
            twin = twins[row["session_id"]]
            assert manifest_line(row) == twin.to_json(), twin.session_id
            assert row["audio"]["bytes"] == twin.audio_path.read_bytes()
            seen.append(row["session_id"])
    assert seen == list(twins)
    fdb_v3 = load_dataset(str(mini_dataset), "fdb_v3")
    fdb_v3.save_to_disk(str(tmp_path / "saved"))
    saved = load_from_disk(str(tmp_path / "saved"))["test"].cast_column("audio", Audio(decode=False))
    assert [manifest_line(row) for row in saved] == [twins[row["session_id"]].to_json() for row in saved]
    calls = [json.loads(call["args"]) for row in saved for call in row["expected"]["tool_calls"]]
    assert calls and all(isinstance(args, dict) for args in calls)


def test_dataset_sessions_have_their_manifest_twins_fingerprints(mini_dataset, twins, tmp_path):
    from ticktock.results.fingerprint import session_fingerprint
    from ticktock.sessions.dataset_task import DatasetTask

    sessions = DatasetTask(str(mini_dataset), audio_cache=str(tmp_path / "audio")).sessions()
    assert [s.session_id for s in sessions] == list(twins)
    assert all(session_fingerprint(s) == session_fingerprint(twins[s.session_id]) for s in sessions)
    assert all(s.audio_path.is_relative_to(tmp_path / "audio") for s in sessions)
    streamed = DatasetTask(str(mini_dataset), config="fdb_v3", streaming=True, tasks=["fdb_v3"],
                           audio_cache=str(tmp_path / "audio")).sessions()
    assert [session_fingerprint(s) for s in streamed] == [session_fingerprint(twins[s.session_id]) for s in streamed]
    load_from_disk_folder = tmp_path / "saved"
    from datasets import load_dataset

    load_dataset(str(mini_dataset), "trivia_qa").save_to_disk(str(load_from_disk_folder))
    saved = DatasetTask(str(load_from_disk_folder), audio_cache=str(tmp_path / "audio")).sessions()
    assert [session_fingerprint(s) for s in saved] == [session_fingerprint(twins[s.session_id]) for s in saved]


def chunk_table(run_dir):
    table = pq.read_table(run_dir / "chunks.parquet").to_pandas()
    return table.drop(columns=[c for c in table.columns if "wall" in c or c == "run_id"]).reset_index(drop=True)


def test_replaying_the_dataset_gives_the_manifest_replay_chunk_for_chunk_and_resumes(mini_dataset, tmp_path):
    from ticktock.replay.config import compose_run
    from ticktock.replay.runner import run

    limits = ["limit.sessions=1", "limit.chunks=9"]  # fdb_v3's first session calls a tool at chunk 7, then speaks
    run(compose_run("speclisten", "embedded", None, ["task=fdb_v3", *limits]), tmp_path / "manifest")
    from_dataset = ["task=hf", f"task.dataset={mini_dataset}", "task.config=fdb_v3",
                    f"task.audio_cache={tmp_path / 'audio'}", *limits]
    run(compose_run("speclisten", "embedded", None, from_dataset), tmp_path / "dataset")
    manifest, dataset = chunk_table(tmp_path / "manifest"), chunk_table(tmp_path / "dataset")
    assert set(dataset["kind"]) >= {"listen", "tool", "speak"}
    assert dataset.equals(manifest)  # tokens, text, post-audio ms, forwards, drafts: every column but wall clock
    sessions = [pq.read_table(tmp_path / name / "sessions.parquet").to_pylist() for name in ("manifest", "dataset")]
    fingerprint = ("session_id", "manifest_sha256", "audio_sha256", "profile_sha256")
    manifest_digests, dataset_digests = ([[row[k] for k in fingerprint] for row in part] for part in sessions)
    assert manifest_digests == dataset_digests
    parts = {p: p.stat().st_mtime_ns for p in (tmp_path / "dataset" / "parts").iterdir()}
    run(compose_run("speclisten", "embedded", None, from_dataset), tmp_path / "dataset")  # the resume: nothing to do
    assert {p: p.stat().st_mtime_ns for p in (tmp_path / "dataset" / "parts").iterdir()} == parts


# --- bad datasets -------------------------------------------------------------------------------------------------

def write_dataset(folder, sessions, config="fdb_v3"):
    """A one-config dataset in the exported layout, written with the export's own pieces."""
    from ticktock.corpus.bench.card import composition, dataset_card
    from ticktock.corpus.bench.export import write_config

    folder.mkdir(parents=True)
    write_config(folder / config, sessions)
    (folder / "README.md").write_text(dataset_card("bad", composition(sessions), None), encoding="utf-8")
    return folder


def refused(folder, match, **options):
    from ticktock.sessions.dataset_task import DatasetError, DatasetTask
    from ticktock.sessions.manifest import ManifestError

    with pytest.raises((DatasetError, ManifestError), match=match) as caught:
        DatasetTask(str(folder), audio_cache=str(folder.parent / "audio"), **options).sessions()
    assert "\n" not in str(caught.value)


def test_bad_datasets_are_one_line_naming_dataset_split_row_and_field(offline, twins, tmp_path):
    from datasets import load_dataset

    fdb_v3 = [s for s in twins.values() if s.task == "fdb_v3"][:2]
    good = write_dataset(tmp_path / "good", fdb_v3)
    refused(good, r"good: no config 'nope' \(configs: fdb_v3\)$", config="nope")

    rows = load_dataset(str(good), "fdb_v3", split="test").remove_columns(["turns"])
    no_turns = tmp_path / "no_turns"
    shutil.copytree(good, no_turns, ignore=shutil.ignore_patterns("*.parquet"))
    rows.to_parquet(str(no_turns / "fdb_v3/test-00000-of-00001.parquet"))
    refused(no_turns, r"no_turns: config fdb_v3, split test: missing column\(s\) turns \(columns: ")

    noise = tmp_path / "noise.flac"
    noise.write_bytes(b"not audio at all" * 64)
    garbage = write_dataset(tmp_path / "garbage", [fdb_v3[0], replace(fdb_v3[1], audio_path=noise)])
    refused(garbage, r"garbage: config fdb_v3, split test, row 1: field 'audio': cannot read audio")

    turns = list(fdb_v3[0].turns)
    late = replace(turns[-1], start_s=fdb_v3[0].duration_s + 4, end_s=fdb_v3[0].duration_s + 5, words=())
    too_long = replace(fdb_v3[0], duration_s=fdb_v3[0].duration_s + 6, turns=(*turns, late))
    past = write_dataset(tmp_path / "past", [too_long])
    refused(past, rf"past: config fdb_v3, split test, row 0: field 'turns\[{len(turns)}\].end_s': "
                  rf"{late.end_s:g} s is past the end of its audio \({fdb_v3[0].duration_s:.3f} s\)$")
    inside = write_dataset(tmp_path / "inside", [replace(fdb_v3[0], duration_s=fdb_v3[0].duration_s + 6)])
    refused(inside, r"inside: config fdb_v3, split test, row 0: field 'duration_s': .* but its audio lasts")
    overlong = write_dataset(tmp_path / "overlong", [replace(fdb_v3[0], turns=(*turns, late))])
    refused(overlong, r"overlong: config fdb_v3, split test, row 0: field 'turns\[\d+\].start_s/end_s': "
                      r"need 0 <= start")


def test_two_rows_whose_audio_file_is_one_path_with_other_bytes_are_refused(offline, twins, tmp_path):
    first, second = [s for s in twins.values() if s.task == "fdb_v3"][:2]
    shared_name = Path(first.audio_path).name  # the second row's own recording, stored under the first one's name
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "audio").mkdir(parents=True)
    shutil.copyfile(second.audio_path, elsewhere / "audio" / shared_name)
    impostor = replace(second, audio_path=elsewhere / "audio" / shared_name, manifest_path=elsewhere / "manifest.jsonl")
    assert impostor.to_json()["audio"] == first.to_json()["audio"]
    clash = write_dataset(tmp_path / "clash", [first, impostor])
    refused(clash, rf"clash: config fdb_v3, split test, row 1: field 'audio_file': {shared_name} is also the audio "
                   r"file of .*clash: config fdb_v3, split test, row 0, with other bytes")
    same = write_dataset(tmp_path / "same", [first, replace(first, session_id=first.session_id + "-again")])
    from ticktock.sessions.dataset_task import DatasetTask

    assert len(DatasetTask(str(same), audio_cache=str(tmp_path / "audio")).sessions()) == 2  # one recording, twice


def test_a_dataset_neither_there_nor_cached_is_one_line(offline, tmp_path):
    from ticktock.errors import ConfigError
    from ticktock.sessions.dataset_task import DatasetError, DatasetTask

    refused(tmp_path / "missing-folder", r"missing-folder: no such folder \(task.dataset is a folder or a Hub id")
    with pytest.raises(DatasetError, match=r"^someone/tickbench: not a folder, and not in the local Hugging Face "
                                           r"cache while offline mode is on .*; fetch it once online with: hf "
                                           r"download someone/tickbench --repo-type dataset --local-dir DIR, then "
                                           r"task.dataset=DIR$"):
        DatasetTask("someone/tickbench", audio_cache=str(tmp_path / "audio")).sessions()
    with pytest.raises(ConfigError, match="task.dataset: the Hub id or folder of a dataset is needed"):
        DatasetTask(None)


def test_export_refuses_another_export_and_a_bad_corpus(mini_dataset, tmp_path, capsys):
    from ticktock.corpus.bench import BenchError
    from ticktock.corpus.output_folder import OutputFolderError

    with pytest.raises(OutputFolderError, match=r"already holds a dataset export \(made by bench export --name "
                                                r"TickTock-Bench-mini; here --name Other\)"):
        bench(["export", str(MINI), "--out", str(mini_dataset), "--name", "Other"])
    with pytest.raises(BenchError, match=r"nowhere: no manifest.jsonl"):
        bench(["export", str(tmp_path / "nowhere"), "--out", str(tmp_path / "x")])


# --- no stale data: local folders are read as they are now ---------------------------------------------------------

def test_two_datasets_of_one_folder_name_replay_their_own_rows(offline, twins, tmp_path):
    """The datasets cache keys a prepared local folder by its name: ``b/mini-ds`` replayed ``a/mini-ds``'s rows."""
    from ticktock.sessions.dataset_task import DatasetTask

    fdb_v3 = [s for s in twins.values() if s.task == "fdb_v3"]
    first = write_dataset(tmp_path / "a" / "mini-ds", fdb_v3[:2])
    second = write_dataset(tmp_path / "b" / "mini-ds", fdb_v3[2:5])
    for folder, sessions in ((first, fdb_v3[:2]), (second, fdb_v3[2:5]), (first, fdb_v3[:2])):
        read = DatasetTask(str(folder), config="fdb_v3", audio_cache=str(tmp_path / "audio")).sessions()
        assert [s.session_id for s in read] == [s.session_id for s in sessions]


def edit_audio_in_place(folder, config="fdb_v3"):
    """Every row's audio made half as loud, in the config's parquet file itself (same rows, same length); the new
    audio bytes by session id."""
    import io

    import pyarrow as pa
    import soundfile

    path = next((folder / config).glob("*.parquet"))
    table = pq.read_table(path)
    cells, edited = table.column("audio").to_pylist(), {}
    for cell, session_id in zip(cells, table.column("session_id").to_pylist()):
        samples, rate = soundfile.read(io.BytesIO(cell["bytes"]), dtype="float32")
        out = io.BytesIO()
        soundfile.write(out, samples * 0.5, rate, format="FLAC", subtype="PCM_16")
        cell["bytes"] = edited[session_id] = out.getvalue()
    index = table.column_names.index("audio")
    table = table.set_column(index, "audio", pa.array(cells, type=table.schema.field("audio").type))
    pq.write_table(table, path)
    return edited


def test_audio_edited_in_place_is_replayed_fresh_and_a_resume_notices(offline, twins, tmp_path, capsys):
    import hashlib

    from ticktock.replay.config import compose_run

    from ticktock.replay.runner import run

    folder = write_dataset(tmp_path / "mini-ds", [s for s in twins.values() if s.task == "fdb_v3"][:1])
    options = ["task=hf", f"task.dataset={folder}", "task.config=fdb_v3", "limit.chunks=3", "task.tool_executor=null",
               f"task.audio_cache={tmp_path / 'audio'}"]

    def recorded(run_dir):
        return pq.read_table(run_dir / "sessions.parquet").to_pylist()[0]["audio_sha256"]

    run(compose_run("ar", "fixture", None, options), tmp_path / "before")
    edited = edit_audio_in_place(folder)
    digest = hashlib.sha256(next(iter(edited.values()))).hexdigest()
    assert recorded(tmp_path / "before") != digest
    run(compose_run("ar", "fixture", None, options), tmp_path / "fresh")
    assert recorded(tmp_path / "fresh") == digest  # the edited audio, not the cached rows of before the edit
    capsys.readouterr()
    run(compose_run("ar", "fixture", None, options), tmp_path / "before")  # the resume
    assert "audio file changed since its results were written; replaying it" in capsys.readouterr().err
    assert recorded(tmp_path / "before") == digest


def test_task_options_that_cannot_work_are_one_line_exit_2_before_any_work(tmp_path):
    import subprocess
    import sys

    (tmp_path / "a-file").write_text("not a folder")
    for option, message in (
            ("task.streaming=maybe", "task.streaming: must be true or false, got 'maybe'"),
            (f"task.audio_cache={tmp_path / 'a-file'}", f"task.audio_cache: {tmp_path / 'a-file'} is a file, not a "
             "folder (it is where session audio is unpacked: name a folder, or null for the datasets cache)"),
            (f"task.audio_cache={tmp_path / 'a-file' / 'below'}", f"task.audio_cache: {tmp_path / 'a-file' / 'below'} "
             f"is under {tmp_path / 'a-file'}, which is a file, not a folder")):
        done = subprocess.run([sys.executable, "-m", "ticktock.run", "progress=false", "threads=1", "task=hf",
                               f"task.dataset={tmp_path}", option, f"hydra.run.dir={tmp_path / 'run'}"],
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 2, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1
        assert done.stderr.startswith(f"ticktock: error: {message}")
        assert not (tmp_path / "run").exists()
