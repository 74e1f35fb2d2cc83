import subprocess
import sys

import pytest

from ticktock.clocks.modeled import CostProfile


def calibrate(tmp_path, *overrides):
    out = tmp_path / "profile.yaml"
    result = subprocess.run(
        [sys.executable, "-m", "ticktock.calibrate", "model=fixture", f"out={out}", "repeats=2", "warmup=1",
         "query_tokens=[1,8]", "context_tokens=[0,64]", f"hydra.run.dir={tmp_path / 'hydra'}", *overrides],
        capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return out, result.stdout


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory):
    """One calibration of the fixture model with the configured batch sizes (shared by the tests below)."""
    return calibrate(tmp_path_factory.mktemp("calibrate"))


def test_calibrate_writes_a_loadable_measured_profile(calibrated):
    profile = CostProfile.load(calibrated[0])
    assert profile.query_tokens == [1, 8] and profile.context_tokens == [0, 64]
    assert all(v > 0 for row in profile.forward_table for v in row) and profile.encode_ms > 0
    assert profile.provenance.startswith("MEASURED") and "fixture" in profile.model
    # the fixture's front-end is causal at 100 ms: the fixed part of encoding a piece is measured (early prefill)
    assert profile.encode_fixed_ms is not None and 0.0 <= profile.encode_fixed_ms <= profile.encode_ms


def test_calibrate_measures_batch_factors(calibrated):
    out, stdout = calibrated
    profile = CostProfile.load(out)
    assert profile.batches and profile.batch_sizes == [1, 2, 4, 8]  # configs/calibrate.yaml
    assert profile.batch_factor[0] == 1.0 and len(profile.batch_factor) == 4
    assert all(f > 0 for f in profile.batch_factor)
    assert "context 64" in profile.provenance and "B=8" in stdout  # the middle context of [0, 64]
    assert profile.batch_forward_ms([(1, 64)] * 8) > 0


def test_calibrate_batch_sizes_are_configurable(tmp_path):
    out, _ = calibrate(tmp_path, "batch_sizes=[1,3]")
    assert CostProfile.load(out).batch_sizes == [1, 3]
    out, _ = calibrate(tmp_path, "batch_sizes=[]", "overwrite=true")  # the same out again: replaced when asked
    assert not CostProfile.load(out).batches


def test_calibrate_refuses_an_existing_out_before_measuring_unless_overwrite(tmp_path):
    mine = tmp_path / "profile.yaml"
    mine.write_text("# my hand-made profile\n")
    done = subprocess.run(
        [sys.executable, "-m", "ticktock.calibrate", "model=fixture", f"out={mine}",
         f"hydra.run.dir={tmp_path / 'h'}"], capture_output=True, text=True, timeout=300)
    assert (done.returncode, done.stdout) == (4, "")
    assert done.stderr == (f"ticktock: error: out={mine}: already exists; choose another out=, or pass "
                           "overwrite=true to replace it\n")
    assert mine.read_text() == "# my hand-made profile\n"
    done = subprocess.run(
        [sys.executable, "-m", "ticktock.calibrate", "model=fixture", f"out={tmp_path}",
         f"hydra.run.dir={tmp_path / 'h'}", "overwrite=true"], capture_output=True, text=True, timeout=300)
    assert (done.returncode, done.stderr) == (4, f"ticktock: error: out={tmp_path}: is a folder, not a profile file; "
                                                 "choose another out=\n")
    out, stdout = calibrate(tmp_path, "overwrite=true", "batch_sizes=[]")
    assert out == mine and CostProfile.load(mine).provenance.startswith("MEASURED") and stdout.startswith("wrote")


def test_calibrate_rejects_batch_sizes_not_from_one(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "ticktock.calibrate", "model=fixture", f"out={tmp_path / 'p.yaml'}",
         "batch_sizes=[2,4]", f"hydra.run.dir={tmp_path / 'hydra'}"],
        capture_output=True, text=True, timeout=300,
    )
    assert result.returncode != 0 and "must start at 1" in result.stderr
    assert not (tmp_path / "p.yaml").exists()


def test_calibrate_a_random_initialised_model_of_a_checkpoint_config(tmp_path, miniatures):
    """model.random_init: the shapes of a config.json (here a miniature's; by default the published 8B ones),
    random weights, no weights needed."""
    import shutil

    folder = tmp_path / "shapes"
    written = miniatures["minicpmo45"]
    folder.mkdir()
    shutil.copy(written / "config.json", folder / "config.json")  # the shapes only: no weights, no tokenizer
    out, stdout = calibrate(tmp_path, "model=minicpmo45", f"model.path={folder}", "model.random_init=true",
                            "batch_sizes=[1,2]")
    profile = CostProfile.load(out)
    assert "random weights of the real shapes" in profile.model and profile.encode_ms > 0
    assert "audio encode" in stdout


def test_a_talker_is_measured_into_an_existing_profile_leaving_the_rest_as_it_was(tmp_path):
    from ticktock.shipped import resource_path

    shipped = CostProfile.load(resource_path("configs/profiles/a100-8b-derived.yaml"))
    target = tmp_path / "target.yaml"
    mine = ("# my profile: measured by hand\nname: mine\nencode_ms: 3.0\nquery_tokens: [1]\ncontext_tokens: [0]\n"
            "forward_ms:\n- [12.123456]   # six decimals, kept\n")
    talkers = ("talkers:\n  piper: {first_packet_ms: 90.0, ms_per_audio_s: 150.0, streams: false, device: CPU, "
               "provenance: by hand}\n# a comment after the talkers\n")
    target.write_text(mine + talkers)
    done = subprocess.run(
        [sys.executable, "-m", "ticktock.calibrate", "model=fixture", "talker=espeak", f"talker_into={target}",
         "warmup=0", "talker_repeats=1", f"hydra.run.dir={tmp_path / 'hydra'}"],
        capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    profile = CostProfile.load(target)
    assert (profile.forward_table, profile.encode_ms) == ([[12.123456]], 3.0)
    text = target.read_text()  # only the talkers: block was rewritten; every other line is as it was
    assert text.startswith(mine + "talkers:\n") and text.endswith("\n# a comment after the talkers\n")
    assert profile.talkers["piper"].provenance == "by hand" and set(profile.talkers) == {"piper", "espeak"}
    cost = profile.talker_cost("espeak")
    assert cost.first_packet_ms + cost.ms_per_audio_s > 0 and not cost.streams
    assert cost.provenance.startswith("MEASURED by `ticktock calibrate talker=espeak`") and cost.device.startswith("CPU")
    assert "talker espeak: first packet" in done.stdout
    # the shipped profile names where every talker cost comes from
    assert set(shipped.talkers) == {"espeak", "piper", "cosyvoice2-l20"}
    assert shipped.talkers["cosyvoice2-l20"].provenance.startswith("DERIVED from published figures")
    assert all(c.provenance.startswith("MEASURED") for n, c in shipped.talkers.items() if n != "cosyvoice2-l20")


def test_talker_into_a_profile_that_cannot_be_read_is_one_line_before_measuring(tmp_path):
    broken = tmp_path / "broken.yaml"
    broken.write_text("query_tokens: [1]\ncontext_tokens: [0]\nforward_ms: [[1.0]]\nencode_fixd_ms: 2\n")
    for target, says in ((tmp_path / "missing.yaml", "cost profile not found"),
                         (broken, "4: field 'encode_fixd_ms': unknown field")):
        done = subprocess.run(
            [sys.executable, "-m", "ticktock.calibrate", "model=fixture", "talker=espeak", f"talker_into={target}",
             f"hydra.run.dir={tmp_path / 'hydra'}"], capture_output=True, text=True, timeout=300)
        assert done.returncode == 2 and done.stdout == "" and len(done.stderr.splitlines()) == 1, done.stderr
        assert done.stderr.startswith(f"ticktock: error: {target}") and says in done.stderr
    assert broken.read_text().endswith("encode_fixd_ms: 2\n")


def test_talker_into_without_a_talker_is_one_line(tmp_path):
    done = subprocess.run([sys.executable, "-m", "ticktock.calibrate", "model=fixture", f"talker_into={tmp_path / 'p.yaml'}",
                           f"hydra.run.dir={tmp_path / 'hydra'}"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and done.stderr.strip() == (
        "ticktock: error: talker_into: needs a talker to measure (talker=espeak or talker=piper)")
