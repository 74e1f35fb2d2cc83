"""A delta checkpoint (Gander over MiniCPM-o 4.5) without its weights: the one line names every folder the adapter
needs (``<folder>`` and ``<folder>/base``, or ``model.base_path``) and the ``hf download`` command for each."""

import os
import subprocess
import sys

import pytest

from ticktock.adapters.checkpoint import MissingWeightsError
from ticktock.errors import EXIT_CONFIG
from ticktock.replay.config import check_run_options, compose_run

GANDER = "hf download Gander-Omni/Gander --local-dir"
BASE = "hf download openbmb/MiniCPM-o-4_5 --local-dir"


@pytest.fixture
def empty_cache(monkeypatch, tmp_path):
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "cache"))


def refusal(*overrides: str) -> str:
    with pytest.raises(MissingWeightsError) as caught:
        check_run_options(compose_run("ar", "gander", None, list(overrides)))
    return str(caught.value)


def test_no_weights_at_all_names_the_delta_and_its_base(empty_cache):
    message = refusal()
    assert message.startswith("model.path: no local weights for Gander-Omni/Gander (model gander); ")
    assert f"`{GANDER} <folder>`" in message and f"`{BASE} <folder>/base`" in message
    assert "model.base_path=<folder>" in message and "then pass model.path=<folder>" in message


def test_a_missing_folder_names_it_and_the_base_inside_it(empty_cache, tmp_path):
    folder = tmp_path / "ckpt" / "gander"
    message = refusal(f"model.path={folder}")
    assert message.startswith(f"model.path: {folder} is not a folder (model gander); ")
    assert f"`{GANDER} {folder}`" in message and f"`{BASE} {folder}/base`" in message


def test_a_delta_without_its_base_says_where_it_looked_and_how_to_fill_it(empty_cache, tmp_path):
    folder = tmp_path / "gander"
    folder.mkdir()
    message = refusal(f"model.path={folder}")
    assert message.startswith("model.base_path: model gander is a delta over openbmb/MiniCPM-o-4_5, whose weights are "
                              f"not here (looked in {folder / 'base'}, then the Hugging Face cache)")
    assert f"`{BASE} {folder / 'base'}`" in message and "model.base_path=<folder>" in message


def test_a_model_without_a_base_keeps_its_message(empty_cache):
    with pytest.raises(MissingWeightsError) as caught:
        check_run_options(compose_run("ar", "minicpmo45", None, []))
    assert "base" not in str(caught.value) and "`hf download openbmb/MiniCPM-o-4_5`" in str(caught.value)


def test_the_command_prints_it_in_one_line_and_leaves_no_folder(tmp_path):
    env = {**{k: v for k, v in os.environ.items() if k != "TICKTOCK_DEBUG"}, "HF_HUB_CACHE": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-m", "ticktock.run", "model=gander", f"model.path={tmp_path / 'nowhere'}",
                           f"hydra.run.dir={tmp_path / 'runs' / 'g'}"], capture_output=True, text=True, timeout=300,
                          env=env)
    assert done.returncode == EXIT_CONFIG
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and GANDER in lines[0] and f"{BASE} {tmp_path / 'nowhere'}/base" in lines[0]
    assert not (tmp_path / "runs").exists()
