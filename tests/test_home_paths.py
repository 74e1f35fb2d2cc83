"""``~`` in a path option: unquoted, Hydra's grammar refuses it (and the shell does not expand it after ``key=``), so
``python -m ticktock.run`` says in one line how to write it; quoted, the run expands it wherever the path is used
(``model.path``, ``clock.profile``, ``task.manifest``, ...)."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import write_sessions
from ticktock.errors import EXIT_CONFIG, ConfigError
from ticktock.shipped import resource_path
from ticktock.replay.config import compose_run
from ticktock.replay.sweeps import expand_home
from ticktock.run import check_composition, check_home

HINT = ("model.path=~/ckpt/gander: Hydra does not take an unquoted ~ in a value (nor does the shell expand it after "
        "key=): quote it, 'model.path=\"~/ckpt/gander\"' (TickTock expands ~ in a quoted path), or write "
        "model.path=$HOME/ckpt/gander")


def ticktock_run(home: Path, *overrides: str) -> subprocess.CompletedProcess:
    env = {**{k: v for k, v in os.environ.items() if k != "TICKTOCK_DEBUG"}, "HOME": str(home)}
    return subprocess.run([sys.executable, "-m", "ticktock.run", "progress=false", *overrides], capture_output=True,
                          text=True, timeout=300, env=env, cwd=home)


def test_an_unquoted_tilde_is_one_line_saying_how_to_write_it():
    with pytest.raises(ConfigError) as caught:
        check_composition(["model=gander", "model.path=~/ckpt/gander"])
    assert str(caught.value) == HINT
    with pytest.raises(ConfigError):
        check_composition(["-m", "model.path=~/a,~/b"])  # a sweep too: Hydra would refuse it the same way


@pytest.mark.parametrize("override", ['model.path="~/ckpt/gander"', "model.path='~/ckpt/gander'",
                                      "task.manifest=${oc.env:TICKTOCK_DATA,~/data}/m.jsonl", "~limit.chunks",
                                      "hydra.run.dir=results/runs/a", "--config-dir=~/configs"])
def test_a_tilde_hydra_takes_passes(override):
    check_home(override)


def test_the_command_stops_in_one_line_before_any_folder(tmp_path):
    done = ticktock_run(tmp_path, "model=gander", "model.path=~/ckpt/gander", "hydra.run.dir=runs/x")
    assert done.returncode == EXIT_CONFIG
    assert done.stderr.splitlines() == [f"ticktock: error: {HINT}"]
    assert not (tmp_path / "runs").exists()


def test_quoted_tilde_paths_are_expanded_in_the_config():
    home = os.path.expanduser("~")
    cfg = compose_run("ar", "gander", None, ['model.path="~/ckpt/gander"', 'model.base_path="~/ckpt/base"',
                                             'clock.profile="~/profiles/p.yaml"'])
    expand_home(cfg)
    assert cfg.model.path == os.path.join(home, "ckpt/gander")
    assert cfg.model.base_path == os.path.join(home, "ckpt/base")
    assert cfg.clock.profile == os.path.join(home, "profiles/p.yaml")
    assert cfg.model.name == "gander" and cfg.model.device is None  # other values, interpolations: as they were


def test_a_quoted_tilde_path_is_used_by_the_run(tmp_path):
    write_sessions(tmp_path / "data", count=1)
    shutil.copy(resource_path("configs/profiles/a100-8b-derived.yaml"), tmp_path / "profile.yaml")
    done = ticktock_run(tmp_path, "model=fixture", 'task.manifest="~/data/manifest.jsonl"', "task.tool_executor=null",
                        'clock.profile="~/profile.yaml"', "limit.chunks=2", 'hydra.run.dir="~/runs/home"')
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / "~").exists()  # the run folder under the home folder too, not in a folder named ~
    config = json.loads((tmp_path / "runs" / "home" / "run.json").read_text())["config"]
    assert config["task"]["manifest"] == str(tmp_path / "data" / "manifest.jsonl")
    assert config["clock"]["profile"] == str(tmp_path / "profile.yaml")
