"""``ticktock bench export --out DIR`` never writes over what is not its own: a folder holding the user's files (or
anything but an earlier export of the same corpora) is refused in one line (exit 4) unless ``--overwrite``, and even
then nothing but the card, ``made_by.json`` and the config folders is replaced."""

from __future__ import annotations

import json
import shutil

import pytest

from ticktock.corpus.bench.__main__ import main as bench
from ticktock.corpus.output_folder import OutputFolderError
from ticktock.shipped import resource_path

MINI = resource_path("manifests/ticktock-mini")


@pytest.fixture
def corpus(tmp_path, monkeypatch):
    """Two sessions of the mini corpus (two tasks) as a corpus folder, and no Hub access."""
    import datasets
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "datasets-cache")
    lines = (MINI / "manifest.jsonl").read_text(encoding="utf-8").splitlines()
    picked = [next(line for line in lines if json.loads(line)["task"] == task) for task in ("fdb_v3", "trivia_qa")]
    folder = tmp_path / "corpus"
    (folder / "audio").mkdir(parents=True)
    for line in picked:
        shutil.copy(MINI / json.loads(line)["audio"], folder / json.loads(line)["audio"])
    (folder / "manifest.jsonl").write_text("\n".join(picked) + "\n", encoding="utf-8")
    return folder


def test_export_refuses_a_folder_of_the_users_files_and_keeps_them(corpus, tmp_path):
    out = tmp_path / "my-project"
    out.mkdir()
    (out / "README.md").write_text("my own notes\n")
    (out / "notes.txt").write_text("keep\n")
    with pytest.raises(OutputFolderError) as refused:
        bench(["export", str(corpus), "--out", str(out)])
    assert str(refused.value) == (f"{out}: not empty and not an earlier export of these corpora (holds 'README.md', "
                                  "'notes.txt'); choose another --out, or pass --overwrite to write there anyway (its "
                                  "README.md becomes the dataset card)")
    assert refused.value.exit_code == 4
    assert sorted(p.name for p in out.iterdir()) == ["README.md", "notes.txt"]
    assert (out / "README.md").read_text() == "my own notes\n"

    assert bench(["export", str(corpus), "--out", str(out), "--overwrite"]) == 0  # asked for: the card replaces it
    assert (out / "README.md").read_text().startswith("---") and (out / "notes.txt").read_text() == "keep\n"
    assert {p.name for p in out.iterdir()} == {"README.md", "notes.txt", "made_by.json", "fdb_v3", "trivia_qa"}


def test_export_rewrites_its_own_earlier_export_and_ignores_an_interrupted_staging_folder(corpus, tmp_path):
    out = tmp_path / "dataset"
    (out / ".export-left-by-a-killed-export").mkdir(parents=True)  # counts as empty: its own staging
    assert bench(["export", str(corpus), "--out", str(out)]) == 0
    card = (out / "README.md").read_text()
    assert bench(["export", str(corpus), "--out", str(out)]) == 0  # the same export again: rewritten in place
    assert (out / "README.md").read_text() == card

    (corpus / "manifest.jsonl").write_text((corpus / "manifest.jsonl").read_text().splitlines()[0] + "\n")
    with pytest.raises(OutputFolderError, match=r"already holds a dataset export"):  # the corpus changed
        bench(["export", str(corpus), "--out", str(out)])


def test_export_into_a_file_list_says_how_many_more(corpus, tmp_path):
    out = tmp_path / "busy"
    out.mkdir()
    for name in ("a", "b", "c", "d", "e"):
        (out / name).write_text(name)
    with pytest.raises(OutputFolderError, match=r"\(holds 'a', 'b', 'c' and 2 more\)"):
        bench(["export", str(corpus), "--out", str(out)])
