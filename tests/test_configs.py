"""Every config file composes, and the cheap plug-ins instantiate."""

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from ticktock.replay.resources import register_resolver
from ticktock.shipped import resource_path
from ticktock.replay.config import build

CONFIGS = resource_path("configs")
register_resolver()


def options(group):
    return sorted(p.stem for p in (CONFIGS / group).glob("*.yaml"))


def compose_with(*overrides):
    with initialize_config_dir(config_dir=str(CONFIGS), version_base=None):
        return compose("run", overrides=list(overrides))


@pytest.mark.parametrize("group", ["model", "decoder", "task", "clock", "experiment"])
def test_every_option_of_every_group_composes(group):
    for option in options(group):
        cfg = compose_with(f"{group}={option}")
        OmegaConf.to_container(cfg, resolve=True)
        if group != "experiment":
            assert cfg[group].name == option, f"configs/{group}/{option}.yaml: 'name' must equal the file name"


@pytest.mark.parametrize("option", options("decoder"))
def test_decoders_instantiate(option):
    decoder = build(compose_with(f"decoder={option}").decoder)
    assert decoder.name == option


@pytest.mark.parametrize("option", options("clock"))
def test_clocks_instantiate(option):
    clock = build(compose_with(f"clock={option}").clock, synchronize=lambda: None)
    assert clock.name == option and clock.stopwatch().elapsed_ms() >= 0
