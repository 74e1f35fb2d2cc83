"""One device key: ``device=`` is the documented run option, and ``model.device`` (an interpolation of it in every
shipped model config) is checked by the same code when a user sets it directly, before any work, in one line naming
that key (exit 2), with no run folder left behind."""

import os
import subprocess
import sys

import pytest

from ticktock.errors import EXIT_CONFIG
from ticktock.replay.config import RunOptionError, check_run_options, compose_run, device_settings

NO_CUDA = "cuda asked for, but this process sees no CUDA device"


def no_gpu_here():
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")


@pytest.mark.parametrize("model", ["fixture", "embedded", "gander", "minicpmo45", "streaming_slm"])
def test_every_shipped_model_takes_its_device_from_the_run_option(model):
    cfg = compose_run("ar", model, None, ["device=cuda:1"])
    assert cfg.model.device == "cuda:1"
    assert device_settings(cfg) == [("device", "cuda:1")]  # one key to check, the one the user set


def test_model_device_set_directly_is_checked_as_model_device():
    cfg = compose_run("ar", "fixture", None, ["model.device=cuda:2"])
    assert device_settings(cfg) == [("device", None), ("model.device", "cuda:2")]


def test_a_model_device_that_is_no_device_is_refused_naming_model_device():
    with pytest.raises(RunOptionError) as caught:
        check_run_options(compose_run("ar", "fixture", None, ["model.device=gpu"]))
    assert str(caught.value) == "model.device: must be null, auto, cpu, cuda or cuda:K (K an integer), got 'gpu'"


def test_a_gpu_asked_for_through_model_device_is_refused_like_device():
    no_gpu_here()
    with pytest.raises(RunOptionError) as caught:
        check_run_options(compose_run("ar", "fixture", None, ["model.device=cuda"]))
    assert str(caught.value).startswith(f"model.device: {NO_CUDA} (")
    with pytest.raises(RunOptionError) as caught:
        check_run_options(compose_run("ar", "fixture", None, ["device=cuda"]))
    assert str(caught.value).startswith(f"device: {NO_CUDA} (")


def test_a_sweep_arm_with_a_bad_model_device_is_named_before_any_job(tmp_path):
    done = subprocess.run([sys.executable, "-m", "ticktock.run", "-m", "experiment=smoke", "progress=false",
                           "model.device=cpu,gpu", f"hydra.sweep.dir={tmp_path / 'sw'}"],
                          capture_output=True, text=True, timeout=300, env=user_environment())
    assert done.returncode == EXIT_CONFIG
    assert done.stderr.splitlines() == [
        "ticktock: error: sweep job 1 (model.device=gpu): model.device: must be null, auto, cpu, cuda or cuda:K "
        "(K an integer), got 'gpu' (1 of 2 jobs bad; none was launched)"]
    assert not (tmp_path / "sw").exists()


@pytest.mark.parametrize("override, key", [("model.device=cuda", "model.device"), ("device=cuda", "device")])
def test_the_command_stops_in_one_line_naming_the_key_and_leaves_no_folder(tmp_path, override, key):
    no_gpu_here()
    run_dir = tmp_path / "results" / "runs" / "x"
    done = subprocess.run([sys.executable, "-m", "ticktock.run", "experiment=smoke", override,
                           f"hydra.run.dir={run_dir}"], capture_output=True, text=True, timeout=300,
                          env=user_environment())
    assert done.returncode == EXIT_CONFIG, done.stderr
    assert done.stderr.splitlines()[0].startswith(f"ticktock: error: {key}: {NO_CUDA} (")
    assert len(done.stderr.splitlines()) == 1 and "Traceback" not in done.stderr and done.stdout == ""
    assert not (tmp_path / "results").exists()


def user_environment() -> dict:
    return {k: v for k, v in os.environ.items() if k != "TICKTOCK_DEBUG"}
