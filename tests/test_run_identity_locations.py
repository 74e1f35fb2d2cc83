"""A run's identity never holds where its files lie: the same config is the same run in a git checkout and in an
installed wheel, and on two machines (a sharded run's jobs share one split id, a run folder resumes after a move).
Shipped files are named by their name in the package, other files by their name (and content), never by an absolute
path; a run written when the identity held absolute paths still resumes, keeping its run id."""

from __future__ import annotations

import importlib
import json
import os
import shutil
import sys

from ticktock import shipped
from ticktock.replay.config import compose_run, identity
from ticktock.shipped import resource_path

#: The shipped files a fixture run's identity names (its cost profile, its manifest), and the modeled talker's profile.
SHIPPED = ("configs/profiles/a100-8b-derived.yaml", "manifests/ticktock-mini/manifest.jsonl")


def installed_at(folder):
    """A copy of the shipped files a run names, laid out as the package is at ``folder`` (another install)."""
    package = folder / "ticktock"
    for relative in SHIPPED:
        (package / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(resource_path(relative), package / relative)
    return package.resolve()


def absolute_paths(value) -> list[str]:
    """Every string in ``value`` (nested dicts and lists) that is an absolute path."""
    if isinstance(value, dict):
        return [found for item in value.values() for found in absolute_paths(item)]
    if isinstance(value, list):
        return [found for item in value for found in absolute_paths(item)]
    return [value] if isinstance(value, str) and os.path.isabs(value) else []


def test_the_identity_of_one_config_is_the_same_wherever_the_package_is_installed(tmp_path, monkeypatch):
    cfg = compose_run("ar", "fixture", 1, ["talker=modeled"])
    identities = []
    for where in ("checkout", "site-packages"):
        monkeypatch.setattr(shipped, "PACKAGE_DIR", installed_at(tmp_path / where))
        identities.append(identity(cfg))
    assert identities[0] == identities[1]
    assert absolute_paths(identities[0]) == [], absolute_paths(identities[0])
    assert str(tmp_path) not in json.dumps(identities[0])
    assert identities[0]["clock"]["profile"] == "shipped:configs/profiles/a100-8b-derived.yaml"
    assert identities[0]["task"]["manifest"] == "shipped:manifests/ticktock-mini/manifest.jsonl"
    assert identities[0]["talker"]["profile"] == "shipped:configs/profiles/a100-8b-derived.yaml"


def test_a_users_files_are_named_by_name_wherever_they_lie(tmp_path):
    identities = []
    for where in ("one", "two"):
        (tmp_path / where).mkdir()
        profile = shutil.copy(resource_path(SHIPPED[0]), tmp_path / where / "my-profile.yaml")
        manifest = shutil.copy(resource_path(SHIPPED[1]), tmp_path / where / "manifest.jsonl")
        identities.append(identity(compose_run("ar", "fixture", 1, [f"clock.profile={profile}",
                                                                    f"task.manifest={manifest}"])))
    assert identities[0] == identities[1] and absolute_paths(identities[0]) == []
    assert identities[0]["clock"]["profile"] == "my-profile.yaml"  # its costs: each session's profile_sha256
    assert identities[0]["task"]["manifest"] == "manifest.jsonl"  # its lines: each session's manifest_sha256


def test_a_live_runs_identity_holds_no_absolute_path(tmp_path, monkeypatch):
    from ticktock.endpoints.endpoint import Endpoint
    from ticktock.endpoints.protocol import EndpointProtocol
    from ticktock.endpoints.run import live_identity

    cfg = compose_run("ar", "endpoint", 1, [])
    labels = {"model": "m@h:1", "decoder": "ar", "clock": "live:vllm_omni_duplex", "talker": "none"}
    identities = []
    for where in ("checkout", "site-packages"):
        monkeypatch.setattr(shipped, "PACKAGE_DIR", installed_at(tmp_path / where))
        identities.append(live_identity(cfg, Endpoint("ws://h:1/v1/realtime"), EndpointProtocol(), labels))
    assert identities[0] == identities[1] and absolute_paths(identities[0]) == []


def test_a_run_written_when_the_identity_held_absolute_paths_resumes_with_its_run_id(tmp_path, small_manifest, capsys):
    """A run folder of an earlier TickTock: run.json's identity names the shipped profile by its absolute path."""
    from ticktock.replay.runner import run

    cfg = compose_run("ar", "fixture", None, [f"task.manifest={small_manifest}", "task.tool_executor=null",
                                              "limit.sessions=1", "limit.chunks=2"])
    run_dir = tmp_path / "run"
    run(cfg, run_dir)
    meta = json.loads((run_dir / "run.json").read_text())
    meta["identity"]["clock"]["profile"] = str(resource_path(SHIPPED[0]))  # as written before
    meta["identity"]["task"]["manifest"] = str(small_manifest)
    meta["run_id"] = "fixture-ar-modeled-0e1d0e1d"
    (run_dir / "run.json").write_text(json.dumps(meta))
    capsys.readouterr()
    summary = run(cfg, run_dir)
    assert "resumed 1 of 1 sessions" in capsys.readouterr().err.splitlines()
    assert summary.run_id == "fixture-ar-modeled-0e1d0e1d"  # its rows keep one run id
    resumed = json.loads((run_dir / "run.json").read_text())
    assert resumed["run_id"] == "fixture-ar-modeled-0e1d0e1d" and absolute_paths(resumed["identity"]) == []


def test_a_plugins_code_digest_does_not_depend_on_where_its_portions_lie(tmp_path, monkeypatch):
    """A namespace package in two folders: its digest is the same whichever folder sorts first on this machine."""
    from ticktock.plugins import code_sha256

    digests = []
    for first, second in (("a", "b"), ("d", "c")):  # the folder holding one.py sorts first, then last
        for folder, module in ((first, "one"), (second, "two")):
            (tmp_path / folder / "tt_portions").mkdir(parents=True)
            (tmp_path / folder / "tt_portions" / f"{module}.py").write_text(f"NAME = {module!r}\n")
        monkeypatch.setattr(sys, "path", [str(tmp_path / first), str(tmp_path / second), *sys.path])
        sys.modules.pop("tt_portions", None)
        importlib.invalidate_caches()
        digests.append(code_sha256("tt_portions.one.Thing"))
        monkeypatch.undo()
    sys.modules.pop("tt_portions", None)
    assert digests[0] is not None and digests[0] == digests[1]
