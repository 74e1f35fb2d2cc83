"""The example plug-in package outside ours (examples/ticktock-example-plugins): selected by name once installed,
recorded in run.json, certified, and lossless.

The tests install nothing. Where the package is not installed they skip, saying how to install it, except in CI
(the variable ``CI`` set), where CI must have installed it and they fail.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DISTRIBUTION = "ticktock-example-plugins"
INSTALL = "pip install -e examples/ticktock-example-plugins"
DISABLE_VARIABLE = "TICKTOCK_DISABLE_PLUGINS"


@pytest.fixture(scope="session")
def example_plugins() -> metadata.Distribution:
    """The installed example distribution (skip locally, fail in CI, where it is missing). Session-scoped, so it
    is looked up before the session's model fixtures are built."""
    try:
        return metadata.distribution(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        message = f"{DISTRIBUTION} is not installed ({INSTALL})"
        if os.environ.get("CI"):
            pytest.fail(f"{message}: CI must install it before the tests")
        pytest.skip(message)


def ticktock_run(*arguments: str) -> subprocess.CompletedProcess:
    """``python -m ticktock.run ...`` from the repository root, plug-ins enabled."""
    env = {key: value for key, value in os.environ.items() if key != DISABLE_VARIABLE}
    return subprocess.run([sys.executable, "-m", "ticktock.run", *arguments], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)


def mini_session():
    from ticktock.shipped import resource_path
    from ticktock.sessions.manifest import load_manifest

    return load_manifest(resource_path("manifests/ticktock-mini/manifest.jsonl"))[0]


def test_a_run_selects_both_plugins_by_name_and_records_them(example_plugins, tmp_path):
    done = ticktock_run("decoder=pool_rank", "model=lws_fixture", "experiment=smoke", "decoder.branches=2",
                        f"hydra.run.dir={tmp_path / 'run'}")
    assert done.returncode == 0, done.stderr
    run = json.loads((tmp_path / "run" / "run.json").read_text())
    entry_points = {entry.name: entry.value for entry in example_plugins.entry_points}
    code = run["plugins"]["decoder"]["code_sha256"]  # both are modules of one top-level package: one digest
    assert isinstance(code, str) and len(code) == 64
    for group, name in (("decoder", "pool_rank"), ("model", "lws_fixture")):
        assert run["plugins"][group] == {"distribution": DISTRIBUTION, "version": example_plugins.version,
                                         "entry_point": f"{name} = {entry_points[name]}",
                                         "target": entry_points[name].replace(":", "."), "api_version": 1,
                                         "code_sha256": code}
        assert run["identity"]["plugins"][group] == (f"{DISTRIBUTION} {example_plugins.version} "
                                                     f"{entry_points[name].replace(':', '.')} code {code[:16]}")
    assert run["decoder"]["name"] == "pool_rank" and run["decoder"]["branches"] == 2 and run["decoder"]["lossless"]
    assert run["environment"]["model"]["name"] == "lws_fixture"

    again = ticktock_run("decoder=pool_rank", "model=lws_fixture", "experiment=smoke", "decoder.branches=2",
                         f"hydra.run.dir={tmp_path / 'run'}")  # the same plug-ins, unchanged: resumed, and said so
    assert again.returncode == 0 and "resumed 1 of 1 sessions" in again.stderr.splitlines(), again.stderr


def test_the_decoder_is_certified_on_the_fixture(example_plugins, capsys, monkeypatch):
    from ticktock.certify import main

    monkeypatch.delenv(DISABLE_VARIABLE, raising=False)
    code = main(["decoder=pool_rank", "--quick"])  # ``python -m ticktock.certify decoder=pool_rank --quick``
    table = capsys.readouterr().out
    assert code == 0 and "certify decoder=pool_rank: certified" in table and "FAIL" not in table, table


def test_the_adapter_is_certified(example_plugins, capsys, monkeypatch):
    from ticktock.certify import main

    monkeypatch.delenv(DISABLE_VARIABLE, raising=False)
    code = main(["model=lws_fixture"])  # ``python -m ticktock.certify model=lws_fixture``
    table = capsys.readouterr().out
    assert code == 0 and "certify model=lws_fixture: certified" in table and "FAIL" not in table, table


@pytest.mark.parametrize("sampling", [{}, {"temperature": 0.7, "seed": 3}], ids=["greedy", "sampled"])
def test_pool_rank_commits_the_tokens_of_ar_on_the_fixture(example_plugins, fixture_adapter, sampling):
    from helpers import outputs, replay
    from ticktock.decoders.ar import ARDecoder
    from ticktock_example_plugins.pool_rank import PoolRankDecoder

    session = mini_session()
    ar = replay(fixture_adapter, session, ARDecoder(), max_chunks=10, **sampling)
    ours = replay(fixture_adapter, session, PoolRankDecoder(), max_chunks=10, **sampling)
    assert outputs(ours) == outputs(ar)
    accepted = sum(chunk.counters.accepted_draft_tokens for chunk in ours.chunks)
    forwards = [sum(chunk.counters.post_audio_forwards for chunk in trace.chunks) for trace in (ours, ar)]
    assert accepted > 0 and forwards[0] < forwards[1], (accepted, forwards)


def test_every_shipped_decoder_drives_the_lws_adapter_as_ar_does(example_plugins):
    from helpers import outputs, replay
    from ticktock.decoders.ar import ARDecoder
    from ticktock.plugins import shipped
    from ticktock.replay.config import build, compose_run
    from ticktock_example_plugins.lws_fixture import LwsFixtureAdapter

    adapter, session = LwsFixtureAdapter(), mini_session()
    expected = outputs(replay(adapter, session, ARDecoder(), max_chunks=6))
    assert adapter.protocol.write in {output[0] for output in expected}  # the write unit is exercised
    for name in shipped("decoder"):
        decoder = build(compose_run(name, "lws_fixture", None, []).decoder)
        assert outputs(replay(adapter, session, decoder, max_chunks=6)) == expected, name


@pytest.mark.parametrize("module", ["ticktock_example_plugins.pool_rank", "ticktock_example_plugins.lws_fixture"])
def test_the_worked_examples_in_the_docstrings_run(example_plugins, module):
    import doctest
    import importlib

    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    result = doctest.testmod(importlib.import_module(module), optionflags=flags)
    assert result.failed == 0 and result.attempted > 0, f"{module}: {result.failed} of {result.attempted} failed"
