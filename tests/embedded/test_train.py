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
    assert list(train_corpus.glob("examples-*-p2-f0.6-wide-w0.5-*.npz"))  # its own example cache
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


class Planted:
    """A pickle that writes ``marker`` when it is unpickled: what a crafted cache or checkpoint would do."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        from pathlib import Path

        return Path.write_text, (Path(self.marker), "code from a data file ran")


@pytest.mark.parametrize("argv, line", [
    (["--steps", "-5"], "argument --steps: expected a whole number from 0 to 100000000, got '-5'"),
    (["--steps", "0"], "argument --steps: 0 steps train nothing; expected a whole number from 1 to 100000000 (0 only "
                       "with --init, to save a trained model as it is), got '0'"),
    (["--hidden", "0"], "argument --hidden: expected a whole number from 8 to 8192 (a multiple of 8), got '0'"),
    (["--hidden", "12"], "argument --hidden: expected a whole number from 8 to 8192 (a multiple of 8), got '12'"),
    (["--lr", "nan"], "argument --lr: expected a finite number > 0 and <= 1, got 'nan'"),
    (["--lr", "0"], "argument --lr: expected a finite number > 0 and <= 1, got '0'"),
    (["--generate", "1"], "argument --generate: 1 session per task leaves nothing to train on (16 sessions are held "
                          "out for validation); expected 0 (train on the corpus as it is) or a whole number from 3 to "
                          "100000, got '1'"),
    (["--vocab", "100"], "argument --vocab: expected a whole number from 271 to 262144, got '100'"),
    (["--log-every", "0"], "argument --log-every: expected a whole number from 1 to 100000000, got '0'"),
    (["--word-weight", "inf"], "argument --word-weight: expected a finite number from 0 to 100, got 'inf'"),
    (["--stage-minutes", "-1"], "argument --stage-minutes: expected a finite number >= 0, got '-1'"),
    (["--threads", "0"], "argument --threads: expected a whole number from 1 to 1024, got '0'"),
    (["--task-weight", "fdb_v4=2"], "argument --task-weight: unknown task 'fdb_v4' in 'fdb_v4=2' (tasks: "),
])
def test_absurd_option_values_are_refused_before_any_work(argv, line, tmp_path, capsys):
    from ticktock.embedded.train import main

    with pytest.raises(SystemExit) as done:
        main(["--corpus", str(tmp_path / "corpus"), "--out", str(tmp_path / "out"), *argv])
    err = capsys.readouterr().err.strip().splitlines()
    assert done.value.code == 2 and err[-1].split(": error: ", 1)[1].startswith(line), err
    assert not (tmp_path / "out").exists() and not (tmp_path / "corpus").exists()


def test_a_planted_pickle_cache_is_never_unpickled_and_is_rebuilt(train_corpus, tmp_path, capsys):
    import pickle

    import numpy as np

    tiny_run(train_corpus, tmp_path / "first", "--steps", "1")  # builds the example cache (or finds it)
    cache = next(p for p in train_corpus.glob("examples-*-s5-p1-??????????.*") if p.suffix in (".npz", ".pkl"))
    marker = tmp_path / "marker"
    cache.with_suffix(".pkl").write_bytes(pickle.dumps([Planted(marker)]))  # the earlier format's name for it
    with cache.with_suffix(".npz").open("wb") as handle:  # and a NumPy archive holding a pickled object
        np.savez(handle, format=np.array([Planted(marker)], dtype=object))
    capsys.readouterr()
    tiny_run(train_corpus, tmp_path / "second", "--steps", "1")
    assert not marker.exists()
    out = capsys.readouterr().out
    assert f"note: {cache.with_suffix('.npz')}: not an example cache (ValueError: Object arrays cannot be loaded" in out
    assert "building it again" in out and (tmp_path / "second" / "model.safetensors").is_file()
    from ticktock.embedded.example_cache import read_examples

    assert len(read_examples(cache.with_suffix(".npz"))) == 24  # rebuilt, in the format that holds no code
    cache.with_suffix(".pkl").unlink()


def test_a_planted_pickle_checkpoint_is_refused_in_one_line_and_never_loaded(train_corpus, tmp_path, capsys):
    import pickle

    from ticktock.errors import user_errors

    marker, out = tmp_path / "marker", tmp_path / "run"
    out.mkdir()
    (out / "checkpoint.pt").write_bytes(pickle.dumps(Planted(marker)))
    with pytest.raises(SystemExit) as done, user_errors():
        tiny_run(train_corpus, out)
    assert done.value.code == 4 and not marker.exists() and not (out / "model.safetensors").exists()
    assert capsys.readouterr().err.splitlines() == [
        f"ticktock: error: {out / 'checkpoint.pt'}: a checkpoint of the earlier pickle format, which is never loaded "
        "(unpickling can run code); delete it to train from the start, or use another --out"]
    (out / "checkpoint.pt").unlink()
    (out / "checkpoint.safetensors").write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00{broken}")
    with pytest.raises(SystemExit) as done, user_errors():
        tiny_run(train_corpus, out)
    (line,) = capsys.readouterr().err.splitlines()
    assert done.value.code == 4 and line.startswith(f"ticktock: error: {out / 'checkpoint.safetensors'}: cannot read "
                                                    "the checkpoint (not a safetensors file")


@pytest.mark.parametrize("make, missing", [
    (lambda d: d.mkdir(), "no trained model there: config.json, model.safetensors, frontend.safetensors, "
                          "tokenizer.json, ticktock.json missing"),
    (lambda d: (d.mkdir(), (d / "config.json").write_text("{}"), (d / "ticktock.json").write_text("{}")),
     "no trained model there: model.safetensors, frontend.safetensors, tokenizer.json missing"),
    (lambda d: None, "no such folder"),
    (lambda d: d.write_text("x"), "not a folder"),
])
def test_an_init_folder_without_weights_is_one_line_before_any_work(make, missing, tmp_path, capsys):
    from ticktock.embedded.train import InitFolderError, main

    init = tmp_path / "init"
    make(init)
    with pytest.raises(InitFolderError) as failure:  # exit code 3; it was a WeightsError traceback after the corpus
        main(["--corpus", str(tmp_path / "corpus"), "--out", str(tmp_path / "out"), "--init", str(init),
              "--generate", "3"])
    assert str(failure.value).startswith(f"--init {init}: {missing}") and failure.value.exit_code == 3
    assert not (tmp_path / "out").exists() and not (tmp_path / "corpus").exists()  # no corpus generated


def test_an_init_folder_error_is_one_line_on_the_command_line(tmp_path):
    import subprocess
    import sys

    (tmp_path / "init").mkdir()
    done = subprocess.run([sys.executable, "-m", "ticktock.embedded.train", "--corpus", str(tmp_path / "corpus"),
                           "--out", str(tmp_path / "out"), "--init", str(tmp_path / "init")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 3
    assert done.stderr.strip().splitlines() == [
        f"ticktock: error: --init {tmp_path / 'init'}: no trained model there: config.json, model.safetensors, "
        "frontend.safetensors, tokenizer.json, ticktock.json missing (a trained model folder, the --out of an earlier "
        "training, holds config.json, model.safetensors, frontend.safetensors, tokenizer.json, ticktock.json)"]
