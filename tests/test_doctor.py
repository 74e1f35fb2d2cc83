"""``python -m ticktock.adapters.doctor`` (``ticktock doctor``) on this CPU: the machine check, run as a user runs it.

The report names no CUDA device, the five real models without weights with the command that fetches each, the
embedded model's command; a Gander miniature named by ``TICKTOCK_WEIGHTS_GANDER`` is found (with its base) and
labelled a miniature, and the command the report prints for it runs. The GPU verdicts are checked on the planner
with the GPUs given as data (what ``torch.cuda.mem_get_info`` reports on a GPU machine).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ticktock.adapters.doctor import (CACHE, REAL_MODELS, calibrate_hint, gpu_memory_needed, plan_run, profiles_report,
                             render, MINICPMO_SIZE)

ROOT = Path(__file__).resolve().parents[1]
H100 = {"index": 0, "name": "NVIDIA H100 80GB HBM3", "total_gib": 79.1, "free_gib": 78.6}


def clean_env(tmp_path: Path, **extra: str) -> dict:
    """This environment without any TICKTOCK_WEIGHTS_* and with an empty, offline Hugging Face cache."""
    env = {key: value for key, value in os.environ.items()
           if not key.startswith("TICKTOCK_WEIGHTS_") and key not in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE")}
    env.update(HF_HOME=str(tmp_path / "hf-home"), HF_HUB_OFFLINE="1", **extra)
    return env


def doctor(tmp_path: Path, *args: str, module: str = "ticktock.adapters.doctor", **extra: str):
    return subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True, timeout=300,
                          cwd=tmp_path, env=clean_env(tmp_path, **extra))


def cpu_machine() -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA device: these are the checks of a CPU machine's report")


def test_on_this_cpu_the_report_says_no_gpu_no_weights_and_how_to_get_them(tmp_path):
    cpu_machine()
    import torch

    done = doctor(tmp_path)
    assert done.returncode == 0 and done.stderr == "", done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert len(lines) <= 40, done.stdout  # one screen
    assert any(line.strip().startswith("no CUDA device (") for line in lines)
    build = "a CPU-only build of torch: the GPU path needs a CUDA build" if torch.version.cuda is None else \
        "no CUDA device is visible"
    assert build in done.stdout and f"torch {torch.__version__}" in done.stdout
    for model in REAL_MODELS:
        line = next(line for line in lines if line.strip().startswith(model + " "))
        assert "weights not found" in line, line
    assert "fetch: hf download Gander-Omni/Gander && hf download openbmb/MiniCPM-o-4_5" in done.stdout
    assert "fetch: hf download openbmb/MiniCPM-o-4_5" in done.stdout and "hf download Qwen/Qwen2.5-Omni-7B" in done.stdout
    assert "no public weights: set TICKTOCK_WEIGHTS_LWS=<the release folder>" in done.stdout
    assert done.stdout.count("not possible here: no weights, no CUDA device") == len(REAL_MODELS)
    assert "needs ~24 GiB of GPU memory" in done.stdout and "needs ~21 GiB of GPU memory" in done.stdout
    assert "embedded model: always runs: python -m ticktock.run decoder=speclisten" in done.stdout
    assert "a100-8b-derived" in done.stdout and "ticktock.calibrate --gpu" not in done.stdout  # no GPU to calibrate


def test_a_gander_miniature_named_by_the_variable_is_found_and_its_command_runs(tmp_path, miniatures):
    cpu_machine()
    folder = Path(shutil.copytree(miniatures["gander"], tmp_path / "mini-gander"))
    done = doctor(tmp_path, "--json", TICKTOCK_WEIGHTS_GANDER=str(folder))
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert report["device"]["gpus"] == []
    gander = next(m for m in report["models"] if m["model"] == "gander")
    weights = gander["weights"]
    assert weights["found"] and weights["folder"] == str(folder.resolve())
    assert weights["source"] == "TICKTOCK_WEIGHTS_GANDER" and weights["miniature"] and weights["random_weights"]
    assert weights["base"] == {"found": True, "folder": str((folder / "base").resolve()), "source": "<folder>/base",
                               "problem": None}
    assert gander["run"] == "cpu_only" and gander["why"].startswith("no CUDA device: float32 on the CPU only")
    assert gander["needs_gpu_gib"] < 4 and gander["fetch"] is None
    assert gander["command"] == (f"python -m ticktock.run model=gander model.path={folder.resolve()} device=cpu "
                                 "decoder=speclisten limit.sessions=1")
    others = [m for m in report["models"] if m["model"] != "gander"]
    assert all(m["run"] == "not_possible" and not m["weights"]["found"] for m in others)
    text = render(report)
    assert f"gander          a miniature (random weights): {folder.resolve()} (TICKTOCK_WEIGHTS_GANDER)" in text
    assert "GPU run not possible: no CUDA device" in text and gander["command"] in text
    run_dir = tmp_path / "run"
    words = shlex.split(gander["command"])
    assert words[:3] == ["python", "-m", "ticktock.run"]
    ran = subprocess.run([sys.executable, *words[1:], "limit.chunks=2", f"hydra.run.dir={run_dir}", "progress=false"],
                         capture_output=True, text=True, timeout=600, cwd=ROOT, env=clean_env(tmp_path))
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert "1 sessions (0 skipped), 2 chunks" in ran.stdout


def test_a_base_kept_elsewhere_and_a_folder_that_is_no_checkpoint(tmp_path, miniatures):
    cpu_machine()
    folder = Path(shutil.copytree(miniatures["gander"], tmp_path / "gander"))
    base = tmp_path / "minicpmo45"
    shutil.move(str(folder / "base"), str(base))
    (tmp_path / "empty").mkdir()
    done = doctor(tmp_path, "--json", TICKTOCK_WEIGHTS_GANDER=str(folder), TICKTOCK_WEIGHTS_MINICPMO45=str(base),
                  TICKTOCK_WEIGHTS_STREAMING_SLM=str(tmp_path / "empty"),
                  TICKTOCK_WEIGHTS_REALTIME_VENUS=str(tmp_path / "nowhere"))
    assert done.returncode == 0, done.stderr[-2000:]
    models = {m["model"]: m for m in json.loads(done.stdout)["models"]}
    venus = models["realtime_venus"]["weights"]
    assert venus["source"] == "TICKTOCK_WEIGHTS_REALTIME_VENUS" and not venus["found"]
    assert venus["problem"].startswith(f"TICKTOCK_WEIGHTS_REALTIME_VENUS: {tmp_path / 'nowhere'} is not a folder")
    assert venus["problem"] in render(json.loads(done.stdout))
    gander = models["gander"]
    assert gander["weights"]["base"]["source"] == "TICKTOCK_WEIGHTS_MINICPMO45"
    assert f"model.base_path={base.resolve()}" in gander["command"]
    assert models["minicpmo45"]["weights"]["found"] and models["minicpmo45"]["run"] == "cpu_only"
    slm = models["streaming_slm"]
    assert not slm["weights"]["found"] and slm["run"] == "not_possible"
    assert slm["weights"]["problem"] == f"{tmp_path / 'empty' / 'config.json'}: missing: not a checkpoint folder"
    assert slm["weights"]["problem"] in render(json.loads(done.stdout))


def test_a_gander_without_its_base_says_what_is_missing(tmp_path, miniatures):
    cpu_machine()
    folder = Path(shutil.copytree(miniatures["gander"], tmp_path / "gander"))
    shutil.rmtree(folder / "base")
    done = doctor(tmp_path, "--json", TICKTOCK_WEIGHTS_GANDER=str(folder))
    gander = next(m for m in json.loads(done.stdout)["models"] if m["model"] == "gander")
    assert not gander["weights"]["found"] and gander["run"] == "not_possible" and gander["command"] is None
    assert "hf download openbmb/MiniCPM-o-4_5" in gander["weights"]["base"]["problem"]
    assert gander["weights"]["base"]["problem"] in render(json.loads(done.stdout))


@pytest.mark.parametrize("module, args", [("ticktock.adapters.doctor", ["--nope"]), ("ticktock.cli", ["doctor", "--nope"])])
def test_an_option_it_does_not_have_is_one_line_and_exit_2(tmp_path, module, args):
    done = doctor(tmp_path, *args, module=module)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == ["ticktock: error: doctor: unrecognized arguments: --nope (its only option: "
                                        "--json)"]


def test_the_ticktock_command_lists_and_runs_doctor(tmp_path):
    from ticktock.cli import COMMANDS

    assert COMMANDS["doctor"][0] == "ticktock.adapters.doctor"
    done = doctor(tmp_path, "doctor", "--json", module="ticktock.cli")
    assert done.returncode == 0, done.stderr[-2000:]
    assert [m["model"] for m in json.loads(done.stdout)["models"]] == list(REAL_MODELS)


# ------------------------------------------------------------------------------ GPUs given as data


def found(folder: str = "/ckpt/gander", parameters=None) -> dict:
    return {"found": True, "folder": folder, "source": "model.path", "parameters": parameters, "problem": None,
            "base": {"found": True, "folder": folder + "/base", "source": "<folder>/base"}}


def test_a_gpu_with_room_gets_the_wall_clock_command_and_a_small_one_does_not():
    roomy = plan_run("gander", found(), [H100])
    assert roomy["run"] == "gpu" and roomy["needs_gpu_gib"] == gpu_memory_needed(MINICPMO_SIZE) == 24.0
    assert roomy["command"] == "python -m ticktock.run model=gander model.path=/ckpt/gander device=cuda clock=wall " \
                               "decoder=speclisten"
    small = plan_run("gander", found(), [{**H100, "name": "NVIDIA GeForce RTX 4080", "free_gib": 15.2}])
    assert small["run"] == "cpu_only" and small["why"].startswith("no GPU has 24 GiB free (the most: 15.2 GiB)")
    assert "device=cpu" in small["command"]
    second = plan_run("streaming_slm", found("/ckpt/slm"), [{**H100, "free_gib": 3.0}, {**H100, "index": 1}])
    assert second["run"] == "gpu" and "device=cuda:1" in second["command"] and second["needs_gpu_gib"] == 21.0
    assert plan_run("lws", {"found": False}, [H100])["why"] == "no weights"
    miniature = plan_run("gander", found(parameters=19_600_000), [{**H100, "free_gib": 4.0}])
    assert miniature["run"] == "gpu" and miniature["needs_gpu_gib"] == 3.0


def test_profiles_shipped_are_matched_against_the_gpu_and_calibration_is_offered():
    a100 = next(p for p in profiles_report(["NVIDIA A100-SXM4-80GB"]) if p["name"] == "a100-8b-derived")
    assert a100["matches"] == "same GPU model (a100)" and a100["kind"] == "derived"
    assert all(p["matches"] is None for p in profiles_report(["NVIDIA A10"]))
    assert all(p["matches"] is None for p in profiles_report([]))
    models = [{"model": "minicpmo45", "run": "not_possible"}, {"model": "gander", "run": "gpu"}]
    assert calibrate_hint([H100], models, profiles_report([H100["name"]])) == \
        "python -m ticktock.calibrate --gpu model=gander"
    assert calibrate_hint([], models, profiles_report([])) is None
    assert calibrate_hint([H100], models, [{"matches": "this device"}]) is None


def test_a_gpu_machine_report_fits_one_screen():
    gpus = [H100, {**H100, "index": 1}]
    weights = {"found": False, "folder": None, "source": None, "problem": "x", "base": None}
    models = [{"model": m, "weights": weights, "fetch": "hf download x", "fetch_note": "", **plan_run(m, weights, gpus)}
              for m in REAL_MODELS]
    models[1] = {"model": "gander", "weights": found(), "fetch": None, "fetch_note": None,
                 **plan_run("gander", found(), gpus)}
    profiles = profiles_report([g["name"] for g in gpus])
    report = {"device": {"torch": "2.13.0+cu128", "torch_cuda": "12.8", "cuda_visible_devices": "0,1", "gpus": gpus,
                         "notes": []},
              "models": models, "embedded": {"runs": True, "command": "python -m ticktock.run decoder=speclisten"},
              "profiles": profiles, "calibrate": calibrate_hint(gpus, models, profiles)}
    text = render(report)
    assert len(text.splitlines()) <= 40, text
    assert "cuda:1 NVIDIA H100 80GB HBM3: 79.1 GiB total, 78.6 GiB free (CUDA_VISIBLE_DEVICES='0,1')" in text
    assert "runs on the GPU: on cuda:0 (NVIDIA H100 80GB HBM3, 78.6 GiB free)" in text
    assert "none measured on this device: python -m ticktock.calibrate --gpu model=gander" in text
    assert CACHE == "the Hugging Face cache"
