"""``ticktock calibrate`` measures the batch model of audio encodings (``encode_batch_sizes``/``encode_batch_factor``:
one ``encode_many`` step of B sessions' 1 s chunks against one encoding) and writes, for every number it measured, a
``sources`` entry naming the command as typed and what was timed (issue 46)."""

import re
import shlex
import subprocess
import sys

import pytest

from ticktock.calibrate import encode_batch_factors, encode_batch_line, with_source
from ticktock.clocks.modeled import CostProfile

TINY = ["repeats=2", "warmup=1", "query_tokens=[1,8]", "context_tokens=[0,64]"]


def calibrate(tmp_path, *overrides):
    out = tmp_path / "profile.yaml"
    args = ["model=embedded", f"out={out}", *TINY, *overrides, f"hydra.run.dir={tmp_path / 'hydra'}"]
    done = subprocess.run([sys.executable, "-m", "ticktock.calibrate", *args], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return out, done.stdout, shlex.join(["python", "-m", "ticktock.calibrate", *args])


def test_calibrate_measures_the_encoder_batch_model_and_names_every_measured_source(tmp_path):
    out, stdout, command = calibrate(tmp_path, "encode_batch_sizes=[1,2,4]", "batch_sizes=[1,2]", "talker=espeak",
                                     "talker_repeats=1")
    profile = CostProfile.load(out)
    assert profile.encode_batch_sizes == [1, 2, 4] and len(profile.encode_batch_factor) == 3
    factors = profile.encode_batch_factor
    assert factors[0] == 1.0 and all(f >= 1.0 for f in factors) and factors == sorted(factors)
    assert profile.encode_batch_ms([(1.0, False)] * 4) >= profile.encode_batch_ms([(1.0, False)])
    # the printed line: each B's raw milliseconds, and the factor written for it
    line = next(line for line in stdout.splitlines() if line.startswith("encode batches: "))
    assert re.fullmatch(r"encode batches: B=1: [\d.]+ ms, B=2: [\d.]+ ms \(factor [\d.]+[^)]*\), "
                        r"B=4: [\d.]+ ms \(factor [\d.]+[^)]*\)", line), line
    assert "encoder batch factors from 4 replicas" in profile.provenance
    # every number measured here names its source: the command as typed, and what was timed
    assert set(profile.sources) == {"forward_ms", "encode_ms", "encode_fixed_ms", "batch_factor",
                                    "encode_batch_factor", "talkers.espeak"}
    assert profile.unsourced() == []
    for field, entry in profile.sources.items():
        assert list(entry) == ["measured"], field
        assert entry["measured"].startswith(command + " ("), (field, entry)
        assert "median of 2 after 1 warm-up" in entry["measured"] or field == "talkers.espeak", field
    assert "encode_many step of B replicas' 1 s chunks" in profile.sources["encode_batch_factor"]["measured"]
    assert "B = 1, 2, 4:" in profile.sources["encode_batch_factor"]["measured"]


def test_calibrate_with_no_encode_batch_sizes_leaves_the_encoder_batch_fields_out(tmp_path):
    out, stdout, command = calibrate(tmp_path, "encode_batch_sizes=[]", "batch_sizes=[]")
    profile = CostProfile.load(out)
    assert profile.encode_batch_sizes is None and profile.encode_batch_factor is None and not profile.encode_batches
    assert "encode batches" not in stdout and "encoder batch" not in profile.provenance
    assert set(profile.sources) == {"forward_ms", "encode_ms", "encode_fixed_ms"}
    assert "encode_batch" not in out.read_text().replace("encode_batch_sizes=[]", "")


@pytest.mark.parametrize("key", ["encode_batch_sizes", "batch_sizes"])
@pytest.mark.parametrize("value, says", [
    ("[2,4]", ": must start at 1, got 2"),
    ("[1,4,2]", ": must be increasing: 2 follows 4"),
    ("[1,0]", "[1]: must be a whole number from 1 to 256, got 0"),
    ("[1,2.5]", "[1]: must be a whole number from 1 to 256, got 2.5"),
    ("8", ": must be a list of batch sizes increasing from 1, e.g. [1, 2, 4, 8] ([] to skip), got 8"),
])
def test_bad_batch_sizes_are_one_line_before_the_model_is_built(tmp_path, key, value, says):
    """The model here is a Gander with no weights: had it been built first, the line would be about its weights."""
    out = tmp_path / "p.yaml"
    done = subprocess.run(
        [sys.executable, "-m", "ticktock.calibrate", "model=gander", f"model.path={tmp_path / 'no-weights'}",
         f"out={out}", f"{key}={value}", f"hydra.run.dir={tmp_path / 'hydra'}"],
        capture_output=True, text=True, timeout=300)
    assert (done.returncode, done.stdout) == (2, ""), done.stderr[-2000:]
    assert done.stderr == f"ticktock: error: {key}{says}\n"
    assert not out.exists()


def test_a_measured_factor_below_a_smaller_batch_is_noise_and_the_running_maximum_is_written():
    factors, notes = encode_batch_factors([1, 2, 4, 8], [4.0, 3.8, 4.4, 4.2])
    assert factors == [1.0, 1.0, 1.1, 1.1]
    assert notes[:2] == [None, "measured 0.950, below one encoding: noise at this resolution, 1.0 written"]
    assert notes[2] is None and notes[3].startswith("measured 1.050, below B=4's 1.100: noise at this resolution")
    assert CostProfile("p", [1], [0], [[1.0]], encode_batch_sizes=[1, 2, 4, 8], encode_batch_factor=factors)
    line = encode_batch_line([1, 2, 4, 8], [4.0, 3.8, 4.4, 4.2], factors, notes)
    assert line.startswith("encode batches: B=1: 4.00 ms, B=2: 3.80 ms (factor 1.000; measured 0.950, below one "
                           "encoding: noise at this resolution, 1.0 written), B=4: 4.40 ms (factor 1.100), B=8: 4.20 ms")


def test_talker_into_a_profile_with_sources_sets_the_talkers_source_line_and_keeps_the_rest(tmp_path):
    target = tmp_path / "target.yaml"
    head = ("# my profile\nname: mine\nsources:\n  forward_ms: {measured: by hand}   # a comment, kept\n"
            "  talkers.espeak: {assumed: a guess}\n")
    rest = "encode_ms: 3.0\nquery_tokens: [1]\ncontext_tokens: [0]\nforward_ms:\n- [12.123456]\n"
    talkers = "talkers:\n  espeak: {first_packet_ms: 1.0, ms_per_audio_s: 2.0, streams: false, device: CPU, provenance: x}\n"
    target.write_text(head + rest + talkers)
    command = ["model=fixture", "talker=espeak", f"talker_into={target}", "warmup=0", "talker_repeats=1",
               f"hydra.run.dir={tmp_path / 'h'}"]
    for _ in range(2):  # the first run replaces the assumed entry, the second its own: one entry, in its place
        done = subprocess.run([sys.executable, "-m", "ticktock.calibrate", *command], capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
    text = target.read_text()
    lines = text.splitlines()
    assert lines[:4] == head.splitlines()[:4] and text.count("talkers.espeak") == 1
    assert lines[4].startswith("  talkers.espeak: {measured: ") and (rest + "talkers:\n") in text
    profile = CostProfile.load(target)
    assert profile.sources["forward_ms"] == {"measured": "by hand"}
    assert profile.sources["talkers.espeak"]["measured"].startswith(
        f"{shlex.join(['python', '-m', 'ticktock.calibrate', *command])} (each of 12 pieces of text synthesized 0 times")
    assert profile.talkers["espeak"].provenance.startswith("MEASURED")


def test_a_talker_source_goes_after_the_last_entry_of_a_sources_block():
    text = "sources:\n  encode_ms: {assumed: x}\n  # a comment inside\nencode_ms: 3\n"
    assert with_source(text, "talkers.piper", {"measured": "m"}) == (
        "sources:\n  encode_ms: {assumed: x}\n  talkers.piper: {measured: m}\n  # a comment inside\nencode_ms: 3\n")
    assert with_source("encode_ms: 3\n", "talkers.piper", {"measured": "m"}) == "encode_ms: 3\n"


@pytest.mark.parametrize("sources, written", [
    ("sources: {}\n", "sources: {talkers.piper: {measured: calibrate talker=piper}}\n"),
    ("", ""),  # no sources block: none is added
])
def test_adding_a_talker_sets_its_source_only_where_the_profile_has_a_sources_block(tmp_path, sources, written):
    from ticktock.calibrate import add_talker
    from ticktock.clocks.talker_cost import TalkerCost

    target = tmp_path / "target.yaml"
    body = "name: mine\nencode_ms: 3.0\nquery_tokens: [1]\ncontext_tokens: [0]\nforward_ms:\n- [12.5]\n"
    target.write_text(sources + body)
    cost = TalkerCost(first_packet_ms=90.0, ms_per_audio_s=150.0, streams=False, device="CPU", provenance="MEASURED here")
    add_talker(target, "piper", cost, source={"measured": "calibrate talker=piper"})
    assert target.read_text().startswith(written + body + "talkers:\n  piper: ")
    profile = CostProfile.load(target)
    assert profile.sources == ({"talkers.piper": {"measured": "calibrate talker=piper"}} if sources else None)
    assert profile.talker_cost("piper") == cost
