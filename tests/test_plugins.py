"""Plug-ins by entry point (ticktock/plugins.py), with distributions made on the spot: a ``*.dist-info`` folder
(METADATA, entry_points.txt) and the plug-in's module in a temporary folder on ``sys.path`` (in-process) or on
PYTHONPATH (``python -m ticktock.run``). Nothing is installed.

Each error case runs the real command and checks its exit code and its one line on stderr; the errors come before
any model is built, so each command takes about a second.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ticktock.plugins import DISABLE_VARIABLE, used_by

ROOT = Path(__file__).resolve().parents[1]

# A decoder plug-in: AR whose drafts repeat the last committed token (lossless: every draft token is verified).
REPEAT_MODULE = '''
from dataclasses import dataclass

from ticktock.api import Decoder, DecoderSettings, DraftTree, knob


class Repeat(Decoder):
    api_version = 1

    @dataclass(frozen=True)
    class Settings(DecoderSettings):
        length: int = knob(2, int, minimum=1)

    def propose(self, step):
        tree = DraftTree()
        if step.output:
            tree.add_chain([step.output[-1]] * self.settings.length, source="repeat")
        return tree


class NotADecoder:
    """Has the method names, not the contract."""

    def propose(self, step):
        return None


class FromTheFuture(Repeat):
    api_version = 99
'''


def make_distribution(site: Path, name: str, entry_points: dict[str, dict[str, str]], version: str = "1.0") -> None:
    """A distribution ``name`` in ``site``: its dist-info folder with METADATA and entry_points.txt."""
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    sections = [f"[{group}]\n" + "".join(f"{key} = {value}\n" for key, value in entries.items())
                for group, entries in entry_points.items()]
    (info / "entry_points.txt").write_text("\n".join(sections))


def make_module(site: Path, module: str, source: str) -> None:
    (site / f"{module}.py").write_text(textwrap.dedent(source))


def ticktock_run(site: Path, *arguments: str, disable: bool = False) -> subprocess.CompletedProcess:
    """``python -m ticktock.run`` with ``site`` on PYTHONPATH (``disable``: with ``TICKTOCK_DISABLE_PLUGINS=1``)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))}
    env.pop(DISABLE_VARIABLE, None)
    if disable:
        env[DISABLE_VARIABLE] = "1"
    return subprocess.run([sys.executable, "-m", "ticktock.run", *arguments], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)


def one_error_line(done: subprocess.CompletedProcess) -> str:
    """The one stderr line of a command that stopped with exit code 2 (a configuration error)."""
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1 and lines[0].startswith("ticktock: error: "), done.stderr
    return lines[0]


@pytest.fixture
def site(tmp_path) -> Path:
    """A folder with the decoder plug-in module ``fake_repeat_plugin`` and one distribution registering it."""
    folder = tmp_path / "site"
    folder.mkdir()
    make_module(folder, "fake_repeat_plugin", REPEAT_MODULE)
    make_distribution(folder, "fake-plugins", {"ticktock.decoders": {"repeat_last": "fake_repeat_plugin:Repeat"}})
    return folder


def test_a_plugin_decoder_selected_by_name_runs_with_its_settings(site, monkeypatch, fixture_adapter):
    from helpers import outputs, replay
    from ticktock.decoders.ar import ARDecoder
    from ticktock.shipped import resource_path
    from ticktock.replay.config import build, compose_run
    from ticktock.sessions.manifest import load_manifest

    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delenv(DISABLE_VARIABLE, raising=False)
    try:
        cfg = compose_run("repeat_last", "fixture", None, ["decoder.length=3"])
        decoder = build(cfg.decoder)
        provenance = used_by(cfg)
    finally:
        sys.modules.pop("fake_repeat_plugin", None)
    assert type(decoder).__qualname__ == "Repeat" and decoder.settings.length == 3 and decoder.name == "repeat_last"
    assert provenance == {"decoder": {"distribution": "fake-plugins", "version": "1.0",
                                      "entry_point": "repeat_last = fake_repeat_plugin:Repeat",
                                      "target": "fake_repeat_plugin.Repeat", "api_version": 1,
                                      "code_sha256": hashlib.sha256(b"fake_repeat_plugin.py\0" + hashlib.sha256(
                                          (site / "fake_repeat_plugin.py").read_bytes()).hexdigest().encode()
                                          + b"\n").hexdigest()}}
    session = load_manifest(resource_path("manifests/ticktock-mini/manifest.jsonl"))[0]
    ours = replay(fixture_adapter, session, decoder, max_chunks=4)
    assert outputs(ours) == outputs(replay(fixture_adapter, session, ARDecoder(), max_chunks=4))
    assert sum(c.counters.draft_tokens for c in ours.chunks) > 0  # it drafted: the plug-in's code ran


def test_the_command_line_selects_a_plugin_and_overrides_its_settings(site):
    done = ticktock_run(site, "decoder=repeat_last", "decoder.length=4", "--cfg", "job")
    assert done.returncode == 0, done.stderr
    assert "_target_: fake_repeat_plugin.Repeat" in done.stdout and "length: 4" in done.stdout


def test_a_plugin_named_like_a_shipped_config_is_one_line_naming_its_distribution(site):
    make_distribution(site, "fake-clash", {"ticktock.decoders": {"pld": "fake_repeat_plugin:Repeat"}}, version="2.0")
    line = one_error_line(ticktock_run(site, "decoder=pld", "--cfg", "job"))
    assert "decoder=pld" in line and "fake-clash 2.0" in line and "shipped config of ticktock" in line
    done = ticktock_run(site, "decoder=ar", "--cfg", "job")  # the clash is on a name this run does not use
    assert done.returncode == 0, done.stderr


def smoke_run(site: Path, run_dir: Path, *arguments: str) -> subprocess.CompletedProcess:
    """A real run of one session, four chunks, on the fixture model, into ``run_dir``."""
    return ticktock_run(site, "experiment=smoke", f"hydra.run.dir={run_dir}", "progress=false", "threads=1", *arguments)


def test_a_plugin_named_ar_fails_only_the_runs_that_use_ar_naming_both_distributions(site, tmp_path):
    make_distribution(site, "fake-ar", {"ticktock.decoders": {"ar": "fake_repeat_plugin:Repeat"}}, version="3.1")
    make_distribution(site, "fake-twin", {"ticktock.decoders": {"repeat_last": "fake_repeat_plugin:Repeat"}})
    done = smoke_run(site, tmp_path / "pld", "decoder=pld")  # neither clash is on pld: the run goes on
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "pld" / "run.json").read_text())["status"] == "complete"
    for selected in (["decoder=ar"], []):  # selected, or the default decoder: both use the name ar
        line = one_error_line(smoke_run(site, tmp_path / "ar", *selected))
        assert line.startswith("ticktock: error: decoder=ar: two decoders have this name: TickTock's shipped config "
                               "of ticktock "), line
        assert "entry point ticktock.decoders:ar = fake_repeat_plugin:Repeat of fake-ar 3.1" in line
        assert not (tmp_path / "ar" / "run.json").exists()  # refused before any work


# A decoder plug-in's code, fixed: the same class, settings and name; its drafts differ (it was "broken").
FIXED_REPEAT_MODULE = REPEAT_MODULE.replace("[step.output[-1]] * self.settings.length",
                                            "[step.output[-1]] * (self.settings.length + 1)")


def test_a_plugin_changed_since_a_run_makes_another_run_and_an_unchanged_one_resumes_saying_so(site, tmp_path):
    run_dir = tmp_path / "run"
    first = smoke_run(site, run_dir, "decoder=repeat_last")
    assert first.returncode == 0, first.stderr
    recorded = json.loads((run_dir / "run.json").read_text())
    code = recorded["plugins"]["decoder"]["code_sha256"]
    assert recorded["plugins"]["decoder"]["distribution"] == "fake-plugins" and len(code) == 64
    assert recorded["identity"]["plugins"] == {"decoder": f"fake-plugins 1.0 fake_repeat_plugin.Repeat code {code[:16]}"}

    again = smoke_run(site, run_dir, "decoder=repeat_last")
    assert again.returncode == 0, again.stderr
    assert "resumed 1 of 1 sessions" in again.stderr.splitlines()
    assert json.loads((run_dir / "run.json").read_text())["run_id"] == recorded["run_id"]

    make_module(site, "fake_repeat_plugin", FIXED_REPEAT_MODULE)  # fixed and "reinstalled": same name and version
    refused = smoke_run(site, run_dir, "decoder=repeat_last")
    assert refused.returncode == 4, refused.stderr
    line = refused.stderr.strip()
    assert line.startswith(f"ticktock: error: {run_dir} holds a run with a different configuration (plugins: ") and \
        code[:16] in line and "overwrite=true" in line and len(line.splitlines()) == 1, line
    replaced = smoke_run(site, run_dir, "decoder=repeat_last", "overwrite=true")
    assert replaced.returncode == 0, replaced.stderr
    rerun = json.loads((run_dir / "run.json").read_text())
    assert rerun["run_id"] != recorded["run_id"] and rerun["plugins"]["decoder"]["code_sha256"] != code


def test_a_target_outside_any_distribution_is_in_the_identity_by_its_module_files(tmp_path, monkeypatch):
    from ticktock.replay.config import compose_run, identity

    folder = tmp_path / "local"
    folder.mkdir()
    make_module(folder, "fake_local_decoder", REPEAT_MODULE)
    monkeypatch.syspath_prepend(str(folder))
    overrides = ["decoder._target_=fake_local_decoder.Repeat", "decoder.name=mine"]
    before = identity(compose_run("ar", "fixture", None, overrides))
    make_module(folder, "fake_local_decoder", FIXED_REPEAT_MODULE)
    after = identity(compose_run("ar", "fixture", None, overrides))
    assert before["plugins"]["decoder"].startswith("(no distribution) fake_local_decoder.Repeat code ")
    assert before["plugins"] != after["plugins"] and {**before, "plugins": None} == {**after, "plugins": None}
    assert "plugins" not in identity(compose_run("ar", "fixture", None, []))  # a run without plug-ins: as before


def test_two_distributions_with_one_name_are_one_line_naming_both(site):
    make_distribution(site, "fake-twin", {"ticktock.decoders": {"repeat_last": "fake_repeat_plugin:Repeat"}})
    line = one_error_line(ticktock_run(site, "decoder=repeat_last", "--cfg", "job"))
    assert "fake-plugins 1.0" in line and "fake-twin 1.0" in line and "more than one" in line


def test_a_plugin_that_fails_to_import_is_its_own_error_with_the_entry_point_named(site):
    make_module(site, "fake_broken_plugin", 'raise RuntimeError("this plug-in needs a GPU driver")\n')
    make_distribution(site, "fake-broken", {"ticktock.decoders": {"broken": "fake_broken_plugin:Decoder"}})
    line = one_error_line(ticktock_run(site, "decoder=broken"))
    assert "entry point ticktock.decoders:broken = fake_broken_plugin:Decoder of fake-broken 1.0" in line
    assert "RuntimeError: this plug-in needs a GPU driver" in line


def test_a_class_that_does_not_implement_the_contract_is_one_line(site):
    make_distribution(site, "fake-wrong", {"ticktock.decoders": {"wrong": "fake_repeat_plugin:NotADecoder"},
                                           "ticktock.models": {"abstract": "ticktock.api:ModelAdapter"}})
    line = one_error_line(ticktock_run(site, "decoder=wrong"))
    assert "ticktock.decoders:wrong" in line and "is not a subclass of ticktock.api.Decoder" in line
    line = one_error_line(ticktock_run(site, "model=abstract"))
    assert "ticktock.models:abstract" in line and "does not implement" in line and "start_session" in line


def test_a_plugin_written_for_another_api_version_is_refused(site):
    make_distribution(site, "fake-future", {"ticktock.decoders": {"future": "fake_repeat_plugin:FromTheFuture"}})
    line = one_error_line(ticktock_run(site, "decoder=future"))
    assert "API version 99" in line and "API version 1" in line


def test_disabling_plugins_ignores_them(site):
    make_distribution(site, "fake-clash", {"ticktock.decoders": {"pld": "fake_repeat_plugin:Repeat"}})
    line = one_error_line(ticktock_run(site, "decoder=repeat_last", disable=True))
    assert "no such decoder" in line and "installed plug-ins: none" in line
    done = ticktock_run(site, "decoder=ar", "--cfg", "job", disable=True)  # the clash is ignored with its plug-in
    assert done.returncode == 0, done.stderr


def test_an_unknown_name_is_one_line_listing_the_shipped_configs_and_the_plugins(site):
    line = one_error_line(ticktock_run(site, "decoder=nope"))
    assert "decoder=nope: no such decoder (shipped: ar, ar_prefill, lookahead" in line
    assert "repeat_last" in line.split("installed plug-ins: ")[1].rstrip(")").split(", ")  # beside any installed


def test_a_config_in_a_search_path_given_on_the_command_line_is_left_to_hydra(site, tmp_path):
    configs = tmp_path / "configs" / "decoder"
    configs.mkdir(parents=True)
    (configs / "repeat_yaml.yaml").write_text("name: repeat_yaml\n_target_: fake_repeat_plugin.Repeat\nlength: 5\n")
    folder = tmp_path / "configs"
    for search_path in ([f"hydra.searchpath=[file://{folder}]"], ["--config-dir", str(folder)]):
        done = ticktock_run(site, *search_path, "decoder=repeat_yaml", "--cfg", "job")
        assert done.returncode == 0, done.stderr
        assert "_target_: fake_repeat_plugin.Repeat" in done.stdout and "length: 5" in done.stdout
