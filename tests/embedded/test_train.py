import argparse
import json

import pytest

from ticktock.embedded.train import rate_argument, task_weight


def test_task_weight_values_are_parsed_and_bad_ones_named():
    assert task_weight("fdb_v3=2") == ("fdb_v3", 2)
    for bad in ("fdb_v3", "fdb_v3=", "=2", "fdb_v3=0", "fdb_v3=1.5"):
        with pytest.raises(argparse.ArgumentTypeError, match=repr(bad)):
            task_weight(bad)


def test_rate_arguments_are_parsed_and_bad_ones_named():
    assert rate_argument("0.8") == 0.8 and rate_argument("0") == 0.0
    for bad in ("-0.1", "1.5", "nan", "often"):
        with pytest.raises(argparse.ArgumentTypeError, match=repr(bad)):
            rate_argument(bad)


@pytest.fixture(scope="module")
def train_corpus(tmp_path_factory):
    """24 training sessions (3 per task) from the session synthesizer."""
    from ticktock.corpus.synth import generate
    from ticktock.corpus.tasks import BUILDERS
    from ticktock.embedded.train import TRAIN_SEED_BASE

    folder = tmp_path_factory.mktemp("train-corpus")
    generate(folder, list(BUILDERS), "train", TRAIN_SEED_BASE + 5, 3)
    return folder


@pytest.fixture(scope="module")
def augmented_corpus(train_corpus, tmp_path_factory):
    from ticktock.corpus.augment import augment_corpus

    folder = tmp_path_factory.mktemp("train-corpus-aug")
    augment_corpus(train_corpus, folder, "train", seed=1)
    return folder


def tiny_run(corpus, out, *extra):
    from ticktock.embedded.train import main

    main(["--corpus", str(corpus), "--out", str(out), "--seed", "5", "--vocab", "320", "--hidden", "32", "--layers", "1",
          "--steps", "6", "--warmup", "2", "--batch-tokens", "3000", "--log-every", "1", "--val-every", "3",
          "--threads", "1", "--checkpoint-every", "2", *extra])


def test_training_in_stages_resumes_bit_for_bit(train_corpus, augmented_corpus, tmp_path, capsys):
    more = ["--phrasings", "2", "--framing", "0.6", "--frames", "wide", "--wording", "0.5",
            "--extra-corpus", str(augmented_corpus)]
    tiny_run(train_corpus, tmp_path / "straight", *more)
    tiny_run(train_corpus, tmp_path / "staged", *more, "--stage-steps", "4")
    assert "stage over at step 4/6" in capsys.readouterr().out and not (tmp_path / "staged" / "model.safetensors").exists()
    tiny_run(train_corpus, tmp_path / "staged", *more, "--stage-steps", "4")  # the same command: resumes, finishes
    assert "resuming" in capsys.readouterr().out
    training = json.loads((tmp_path / "staged" / "ticktock.json").read_text())["training"]
    # 24 sessions: 16 held out for validation, 8 trained on, twice (two phrasings); of the 24 augmented copies,
    # those of the 16 validation sessions stay out
    assert (training["phrasings"], training["extra_sessions"], training["train_examples"]) == (2, 24, 2 * 8 + 2 * 8)
    assert (training["framing"], training["frames"], training["wording"]) == (0.6, "wide", 0.5)
    assert list(train_corpus.glob("examples-*-p2-f0.6-wide-w0.5-*.pkl"))  # its own example cache
    for name in ("model.safetensors", "frontend.safetensors", "tokenizer.json"):
        assert (tmp_path / "straight" / name).read_bytes() == (tmp_path / "staged" / name).read_bytes(), name

    def log(folder):  # every column but the elapsed time
        rows = (folder / "training_log.csv").read_text().splitlines()
        return [row.split(",")[:1] + row.split(",")[2:] for row in rows]

    assert log(tmp_path / "straight") == log(tmp_path / "staged") and len(log(tmp_path / "staged")) == 7


def test_a_checkpoint_of_other_options_is_refused(train_corpus, tmp_path):
    from ticktock.embedded.train import TrainingRunError

    tiny_run(train_corpus, tmp_path / "run", "--stage-steps", "2")
    with pytest.raises(TrainingRunError, match=r"checkpoint of another training run \(--lr 0.0015 -> 0.002\)"):
        tiny_run(train_corpus, tmp_path / "run", "--lr", "0.002")


def test_training_continues_from_a_trained_model_folder(train_corpus, tmp_path):
    import hashlib

    tiny_run(train_corpus, tmp_path / "first")
    # no step: the model written is the one loaded, byte for byte, with its origin recorded
    tiny_run(train_corpus, tmp_path / "same", "--init", str(tmp_path / "first"), "--steps", "0", "--hidden", "48")
    for name in ("model.safetensors", "frontend.safetensors", "tokenizer.json"):
        assert (tmp_path / "first" / name).read_bytes() == (tmp_path / "same" / name).read_bytes(), name
    origin = json.loads((tmp_path / "same" / "ticktock.json").read_text())["training"]["init"]
    digest = hashlib.sha256((tmp_path / "first" / "model.safetensors").read_bytes()).hexdigest()[:16]
    assert origin["model_sha256"] == digest and origin["training"]["steps"] == 6
    tiny_run(train_corpus, tmp_path / "more", "--init", str(tmp_path / "first"))
    assert (tmp_path / "more" / "model.safetensors").read_bytes() != (tmp_path / "first" / "model.safetensors").read_bytes()
    assert json.loads((tmp_path / "more" / "config.json").read_text())["hidden_size"] == 32  # the folder's architecture
