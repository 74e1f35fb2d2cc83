"""Hostile command lines to ``python -m ticktock.run``: no secret (a URL's password, a token variable's value) is ever
printed or written, whatever the error; a URL whose query Hydra's grammar cannot take unquoted is one line naming
``model.url`` and the quoted form that works (real subprocesses, and Hydra's real composition)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ticktock.errors import EXIT_CONFIG, ConfigError
from ticktock.run import check_composition, check_grammar

PASSWORD = "Pa55w0rdXYZ"
TOKEN = "t0kenVALUE987"


def ticktock_run(cwd: Path, *overrides: str, debug: bool = False) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "TICKTOCK_DEBUG"}
    env.update({"MY_TOKEN_VAR": TOKEN, **({"TICKTOCK_DEBUG": "1"} if debug else {})})
    return subprocess.run([sys.executable, "-m", "ticktock.run", "progress=false", *overrides], cwd=cwd,
                          capture_output=True, text=True, timeout=300, env=env)


def written_text(folder: Path) -> str:
    return "".join(path.read_text(errors="replace") for path in folder.rglob("*") if path.is_file())


@pytest.mark.parametrize("debug", [False, True])
def test_a_url_with_credentials_and_a_token_is_refused_in_one_line_and_no_secret_is_shown(tmp_path, debug):
    run_dir = tmp_path / "runs" / "live"
    done = ticktock_run(tmp_path, "model=endpoint", f"model.url=ws://user:{PASSWORD}@127.0.0.1:9/v1/realtime",
                        "model.token_env=MY_TOKEN_VAR", f"hydra.run.dir={run_dir}", debug=debug)
    output = done.stdout + done.stderr
    assert done.returncode == EXIT_CONFIG, output
    assert PASSWORD not in output and TOKEN not in output and "user:P" not in output
    assert "Error executing job with overrides" not in output
    assert ("model.url: holds credentials ('ws://***@127.0.0.1:9/v1/realtime') and model.token_env names a bearer "
            "token too") in output
    if not debug:
        assert len(done.stderr.splitlines()) == 1 and done.stderr.startswith("ticktock: error: model.url: "), output
    assert not run_dir.exists() and not (tmp_path / "runs").exists()
    assert PASSWORD not in written_text(tmp_path) and TOKEN not in written_text(tmp_path)


def test_a_printed_config_shows_the_urls_password_and_query_secret_as_stars(tmp_path):
    done = ticktock_run(tmp_path, "model=endpoint", f"model.url='wss://me:{PASSWORD}@h/v1?api_key={TOKEN}&x=1'",
                        "--cfg", "job")
    assert done.returncode == 0, done.stderr
    assert "url: wss://***@h/v1?api_key=***&x=1" in done.stdout
    assert PASSWORD not in done.stdout + done.stderr and TOKEN not in done.stdout + done.stderr


QUOTE_HINT = ("model.url: Hydra's override grammar takes '=' and '&' in a value only inside quotes: quote the value "
              "inside the override, \"model.url='ws://h/v1/realtime?duplex=1&model=m'\" (the outer quotes are the "
              "shell's)")


def test_an_unquoted_url_query_is_one_line_naming_model_url_and_how_to_quote_it():
    with pytest.raises(ConfigError) as refused:
        check_composition(["model=endpoint", "model.url=ws://h/v1/realtime?duplex=1&model=m"])
    assert str(refused.value) == QUOTE_HINT


def test_the_quoted_form_the_message_gives_composes_to_the_url():
    from hydra import compose, initialize_config_dir

    from ticktock.shipped import resource_path

    quoted = QUOTE_HINT.split(", \"", 1)[1].split("\" (", 1)[0]  # what the user types inside the shell's quotes
    check_composition(["model=endpoint", quoted])
    with initialize_config_dir(config_dir=str(resource_path("configs")), version_base=None):
        cfg = compose("run", overrides=["model=endpoint", quoted])
    assert cfg.model.url == "ws://h/v1/realtime?duplex=1&model=m"


def test_the_quote_hint_never_shows_a_query_secret():
    with pytest.raises(ConfigError) as refused:
        check_grammar(f"model.url=wss://h/v1?api_key={TOKEN}&model=m")
    assert TOKEN not in str(refused.value) and "api_key=***" in str(refused.value)


def test_a_sweep_with_credentials_in_a_url_is_refused_before_hydra_writes_its_multirun_yaml(tmp_path):
    """Hydra writes a sweep's overrides as given into multirun.yaml: a URL's password there would be on disk."""
    done = ticktock_run(tmp_path, "-m", "model=endpoint", f"model.url=ws://user:{PASSWORD}@127.0.0.1:9/v1/realtime",
                        f"hydra.sweep.dir={tmp_path / 'sweep'}", "limit.sessions=1,2")
    output = done.stdout + done.stderr
    assert done.returncode == EXIT_CONFIG and len(done.stderr.strip().splitlines()) == 1, output
    assert PASSWORD not in output and "model.url: a sweep (-m) cannot take credentials in a URL" in output
    assert not (tmp_path / "sweep").exists() and PASSWORD not in written_text(tmp_path)
