"""``python -m ticktock.calibrate --gpu``: the GPU is checked first, the profile is named after the GPU's full name and
the model, records where it was measured, and the command prints the run to start with it (on this CPU: everything up
to the GPU, and the one line a machine without one gets)."""

import json
import os
import subprocess
import sys
from datetime import date
from pathlib import Path

import pytest
import torch

from ticktock.calibrate import GPU_PRESET, gpu_overrides, model_config_keys, next_run_command, profile_name
from ticktock.clocks.modeled import CostProfile, ProfileError
from ticktock.shipped import resource_path

ROOT = Path(__file__).resolve().parents[1]
NO_GPU = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}  # no GPU for these processes, on any machine
BUILD = ("a CPU build: install a CUDA build of torch, see docs/gpu.md" if torch.version.cuda is None
         else f"a CUDA {torch.version.cuda} build: check that nvidia-smi lists a GPU")
NO_DEVICE = f"ticktock: error: --gpu: this process sees no CUDA device (CUDA_VISIBLE_DEVICES=''; torch {torch.__version__} is {BUILD}"
TINY = ["repeats=2", "warmup=1", "query_tokens=[1,8]", "context_tokens=[0,64]", "batch_sizes=[]"]


def run(args, cwd, env=NO_GPU):
    return subprocess.run(args, capture_output=True, text=True, timeout=300, cwd=cwd, env=env)


def test_gpu_without_a_gpu_is_one_line_before_anything_is_composed_built_or_written(tmp_path):
    """The GPU is checked before the model (here a Gander whose weights are not there) is even looked at, and the
    refusal leaves nothing behind: no Hydra folder, no profile folder."""
    for command in ([sys.executable, "-m", "ticktock.calibrate", "--gpu"],
                    [sys.executable, "-m", "ticktock.calibrate", "--gpu", "model=gander", f"model.path={tmp_path / 'no-weights'}"],
                    [sys.executable, "-m", "ticktock.cli", "calibrate", "--gpu", "model=minicpmo45"]):
        done = run(command, tmp_path)
        assert (done.returncode, done.stdout) == (2, ""), done.stderr[-2000:]
        assert len(done.stderr.splitlines()) == 1 and done.stderr.startswith(NO_DEVICE), done.stderr
        assert list(tmp_path.iterdir()) == []


def test_the_gpu_script_calls_calibrate_gpu_and_refuses_in_one_line(tmp_path):
    before = sorted((ROOT / "configs" / "profiles").iterdir())
    done = run(["bash", str(ROOT / "scripts" / "calibrate_gpu.sh"), "model=gander"], tmp_path)
    assert (done.returncode, done.stdout) == (2, ""), done.stderr[-2000:]
    assert len(done.stderr.splitlines()) == 1 and done.stderr.startswith(NO_DEVICE), done.stderr
    assert sorted((ROOT / "configs" / "profiles").iterdir()) == before


def test_gpu_with_a_device_that_is_no_gpu_is_one_line(tmp_path):
    done = run([sys.executable, "-m", "ticktock.calibrate", "--gpu", "device=cpu"], tmp_path, env=os.environ)
    assert (done.returncode, done.stdout, list(tmp_path.iterdir())) == (2, "", [])
    assert done.stderr == ("ticktock: error: --gpu: measures a CUDA device, and device=cpu is not one (leave device= "
                           "out, or give cuda or cuda:K)\n")


@pytest.mark.parametrize("device", ["device=cuda", "model.device=cuda"])
def test_calibrate_on_a_gpu_this_process_does_not_see_is_one_line_before_the_model_is_built(tmp_path, device):
    done = run([sys.executable, "-m", "ticktock.calibrate", "model=fixture", device, f"out={tmp_path / 'p.yaml'}",
                f"hydra.run.dir={tmp_path / 'hydra'}"], tmp_path)
    assert (done.returncode, done.stdout, len(done.stderr.splitlines())) == (2, "", 1), done.stderr[-2000:]
    key = device.split("=")[0]  # the refusal names the key the user set, as a run's does
    assert done.stderr.startswith(f"ticktock: error: {key}: cuda asked for, but this process sees no CUDA device "
                                  "(CUDA_VISIBLE_DEVICES=''"), done.stderr
    assert not (tmp_path / "p.yaml").exists()


def test_profile_name_is_the_full_device_name_and_the_model_never_its_last_word():
    assert profile_name("NVIDIA H100 80GB HBM3", "minicpmo45") == "nvidia-h100-80gb-hbm3-minicpmo45.yaml"
    assert profile_name("NVIDIA A100 80GB PCIe", "gander") == "nvidia-a100-80gb-pcie-gander.yaml"
    assert profile_name("NVIDIA GeForce RTX 4090", "minicpmo45") == "nvidia-geforce-rtx-4090-minicpmo45.yaml"
    assert profile_name("NVIDIA A100-SXM4-40GB/../x\n", "../gander") == "nvidia-a100-sxm4-40gb-x-gander.yaml"


def test_the_gpu_preset_composes_for_each_model_with_the_users_settings_winning():
    """What --gpu hands to Hydra composes: the preset's model.* keys only where the model has them, the user's own
    settings in place of the preset's, and the profile's file named after the GPU and the model."""
    from hydra import compose, initialize_config_dir

    h100 = "NVIDIA H100 80GB HBM3"
    with initialize_config_dir(config_dir=str(resource_path("configs")), version_base=None):
        cfg = compose("calibrate", gpu_overrides([], model_config_keys("minicpmo45"), h100))
        assert (cfg.model.name, cfg.device, cfg.model.device, cfg.model.random_init) == ("minicpmo45", "cuda", "cuda", True)
        assert (cfg.model.dtype, cfg.model.attn_implementation, cfg.warmup, cfg.repeats) == ("bfloat16", "sdpa", 3, 9)
        assert cfg.gpu is True and cfg.out == "configs/profiles/nvidia-h100-80gb-hbm3-minicpmo45.yaml"
        mine = ["model=gander", "device=cuda:1", "repeats=3", "out=mine.yaml", "model.dtype=float16"]
        cfg = compose("calibrate", gpu_overrides(mine, model_config_keys("gander"), h100))
        assert (cfg.model.name, cfg.model.device, cfg.repeats, cfg.out, cfg.model.dtype) == (
            "gander", "cuda:1", 3, "mine.yaml", "float16")
        cfg = compose("calibrate", gpu_overrides(["model=streaming_slm"], model_config_keys("streaming_slm"), h100))
        assert "random_init" not in cfg.model and cfg.model.dtype == "bfloat16"  # a model without random weights
        assert cfg.out == "configs/profiles/nvidia-h100-80gb-hbm3-streaming-slm.yaml"
    assert GPU_PRESET["model"] == "minicpmo45" and model_config_keys("a-plugin's-model") == set()


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    """One measured CPU profile of the fixture model (tiny grid), its stdout and the folder it ran in."""
    folder = tmp_path_factory.mktemp("measured")
    out = folder / "cpu-fixture.yaml"
    args = ["model=fixture", f"out={out}", *TINY, f"hydra.run.dir={folder / 'hydra'}"]
    done = run([sys.executable, "-m", "ticktock.calibrate", *args], folder, env=os.environ)
    assert done.returncode == 0, done.stderr[-2000:]
    return out, done.stdout, folder, args


def test_a_measured_profile_records_where_it_was_measured_and_reads_back(measured):
    out, _, _, args = measured
    profile = CostProfile.load(out)
    record = profile.measured_on
    assert list(record) == ["device", "driver", "torch", "cuda", "cudnn", "date", "command"]
    assert record["device"] and record["device"] in profile.device  # the CPU's name (a GPU's full name on a GPU)
    assert record["driver"] is None  # on a CPU
    assert (record["torch"], record["cuda"]) == (torch.__version__, torch.version.cuda)
    assert record["date"] == date.today().isoformat()
    assert record["command"] == "python -m ticktock.calibrate " + " ".join(
        f"'{a}'" if "[" in a else a for a in args)
    assert CostProfile.load(out) == profile and "\nmeasured_on:\n  device: " in out.read_text()  # one entry a line


def test_the_printed_next_command_names_the_profile_and_runs(measured):
    out, stdout, folder, _ = measured
    line = next(line for line in stdout.splitlines() if line.startswith("next: "))
    assert line == f"next: python -m ticktock.run model=fixture clock=modeled clock.profile={out}"
    assert "commit the profile" not in stdout  # a CPU profile made for this machine; a GPU's says to commit it
    command = line.removeprefix("next: ").split()[1:]
    done = run([sys.executable, *command, "limit.sessions=1", "limit.chunks=2", f"hydra.run.dir={folder / 'run'}"],
               folder, env=os.environ)
    assert done.returncode == 0, done.stderr[-2000:]
    clock = json.loads((folder / "run" / "run.json").read_text())["clock"]
    assert (clock["name"], clock["profile"]) == ("modeled", "fixture-measured")  # the run was charged by that profile


def test_the_next_command_of_a_gpu_profile_asks_for_the_weights():
    assert next_run_command("gander", {"path": None, "random_init": True}, "cuda",
                            "configs/profiles/nvidia-h100-80gb-hbm3-gander.yaml") == (
        "python -m ticktock.run model=gander model.path=<weights> device=cuda clock=modeled "
        "clock.profile=configs/profiles/nvidia-h100-80gb-hbm3-gander.yaml")
    assert next_run_command("gander", {"path": "/ckpt/gander", "random_init": False}, "cuda:1", "p.yaml") == (
        "python -m ticktock.run model=gander model.path=/ckpt/gander device=cuda:1 clock=modeled clock.profile=p.yaml")


def test_every_shipped_profile_loads_and_a_bad_measured_on_names_its_line(tmp_path):
    for path in sorted(resource_path("configs/profiles").glob("*.yaml")):
        CostProfile.load(path)  # none has a measured_on block yet: still loadable
    grid = "query_tokens: [1]\ncontext_tokens: [0]\nforward_ms: [[1.0]]\n"
    bad = tmp_path / "bad.yaml"
    for block, says in (("measured_on:\n  device: x\n  devise: y\n", "bad.yaml:6: field 'measured_on.devise': "
                                                                   "unknown entry (did you mean 'device'?)"),
                        ("measured_on:\n  torch: [2, 13]\n", "bad.yaml:5: field 'measured_on.torch': must be text or "
                                                            "null, got [2, 13]"),
                        ("measured_on: H100\n", "bad.yaml:4: field 'measured_on': must be a mapping of device, driver, "
                                                "torch, cuda, cudnn, date, command (each text or null), got 'H100'")):
        bad.write_text(grid + block)
        with pytest.raises(ProfileError) as err:
            CostProfile.load(bad)
        assert str(err.value).endswith(says), str(err.value)
    good = tmp_path / "good.yaml"
    good.write_text(grid + "measured_on:\n  device: NVIDIA A100 80GB PCIe\n  date: 2026-12-05\n  cudnn: 90100\n")
    assert CostProfile.load(good).measured_on == {"device": "NVIDIA A100 80GB PCIe", "cudnn": "90100",
                                                  "date": "2026-12-05"}
