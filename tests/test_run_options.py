"""Run options, manifest durations and the timing-noise record, checked through the real runner (fixture model)."""

import json

import pytest

from ticktock.replay import config as config_module
from ticktock.replay import runner
from ticktock.errors import ConfigError
from ticktock.sessions.manifest import ManifestError
from ticktock.replay.config import RunOptionError, check_run_options, compose_run
from ticktock.replay.runner import run


STAGGER = "concurrency.stagger: must be 'random' or a number of milliseconds from 0 to 3600000 (one hour)"


def config(manifest, *overrides, decoder="ar"):
    return compose_run(decoder, "fixture", None, [f"task.manifest={manifest}", "task.tool_executor=null", *overrides])


@pytest.mark.parametrize("override, message", [
    ("limit.sessions=-1", "limit.sessions: must be null or an integer >= 1, got -1"),
    ("limit.per_task=abc", "limit.per_task: must be null or an integer >= 1, got 'abc'"),
    ("limit.chunks=0", "limit.chunks: must be null or an integer >= 1, got 0"),
    ("limit.sessions=true", "limit.sessions: must be null or an integer >= 1, got True"),
    ("seed=abc", "seed: must be an integer, got 'abc'"),
    ("seed=1.5", "seed: must be an integer, got 1.5"),
    ("sampling.top_k=-5", "sampling.top_k: must be an integer >= 0 (0: off), got -5"),
    ("sampling.temperature=-1", "sampling.temperature: must be 0 (greedy) or a number from 0.01 to 100, got -1"),
    ("sampling.temperature=1e-300", "sampling.temperature: must be 0 (greedy) or a number from 0.01 to 100, got 1e-300"),
    ("sampling.temperature=inf", "sampling.temperature: must be 0 (greedy) or a number from 0.01 to 100, got inf"),
    ("sampling.top_p=2", "sampling.top_p: must be in (0, 1], got 2"),
    ("+sampling.min_p=0.1", "sampling.min_p: unknown setting (known: temperature, top_k, top_p)"),
    ("overwrite=yes", "overwrite: must be true or false, got 'yes'"),
    ("skip_bad_sessions=1", "skip_bad_sessions: must be true or false, got 1"),
    ("progress=maybe", "progress: must be true or false, got 'maybe'"),
    ("audio_duration=maybe", "audio_duration: must be one of check, trust_audio, got 'maybe'"),
    ("timing_noise.repeats=-1", "timing_noise.repeats: must be an integer >= 0 (0: no probe), got -1"),
    ("timing_noise.every=0", "timing_noise.every: must be an integer >= 1, got 0"),
    ("timing_noise.max_spread=0.5", "timing_noise.max_spread: must be a number from 1 to 100 (slowest / fastest probe), got 0.5"),
    ("timing_noise.max_spread=nan", "timing_noise.max_spread: must be a number from 1 to 100 (slowest / fastest probe), got nan"),
    ("decoder.num_pred=0", "decoder.num_pred: must be an integer >= 1, got 0"),
    ("concurrency.sessions=0", "concurrency.sessions: must be an integer from 1 to 1024, got 0"),
    ("concurrency.sessions=100000000", "concurrency.sessions: must be an integer from 1 to 1024, got 100000000"),
    ("concurrency.batching=sometimes", "concurrency.batching: must be true or false, got 'sometimes'"),
    ("concurrency.max_batch=1", "concurrency.max_batch: must be null (all waiting sessions) or an integer >= 2, got 1"),
    ("concurrency.stagger=-5", f"{STAGGER}, got -5"),
    ("concurrency.stagger=inf", f"{STAGGER}, got inf"),  # hung the shared device's loop
    ("concurrency.stagger=1e300", f"{STAGGER}, got 1e+300"),  # every post-audio time was 0.0 (float precision)
    ("concurrency.stagger=nan", f"{STAGGER}, got nan"),
    ("draft_policy.speech_dbfs=nan", "draft_policy.speech_dbfs: must be a number of dB full scale from -200 to 0, got nan"),
    ("draft_policy.speech_dbfs=20", "draft_policy.speech_dbfs: must be a number of dB full scale from -200 to 0, got 20"),
    ("+draft_policy.speed=2", "draft_policy.speed: unknown setting of ticktock.scheduling.expected_savings.ExpectedSavings "
                              "(known: speech_dbfs, batch_drafts, carry_slowdown, name)"),
    ("draft_policy._target_=nope.Nope", "draft_policy._target_: cannot import 'nope.Nope' (no module named 'nope')"),
    ("decoder._target_=ticktock.decoders.ar.Nope",
     "decoder._target_: cannot import 'ticktock.decoders.ar.Nope' (ticktock.decoders.ar has no attribute 'Nope')"),
    ("+clock.speed=2", "clock.speed: unknown setting of ticktock.clocks.modeled.ModeledClock (known: profile, synchronize, "
                       "encode_scale)"),
    ("clock.encode_scale=0", "clock.encode_scale: must be a finite number > 0 and <= 100 (the factor on the cost profile's "
                             "audio-encoding costs; 1: as profiled), got 0"),
    ("+decoder.prefill_every_ms=1e300", "decoder.prefill_every_ms: must be a number from 1.0 to 60000.0, got 1e+300"),
    ("+model.context_evict_to=nan", "model.context_evict_to: must be a number between 0 and 1 (the share of the context "
                                   "kept after an eviction), got nan"),
    ("+model.context_limit=0", "model.context_limit: must be null (the model's own) or an integer >= 1, got 0"),
    ("+concurrency.gpus=2", "concurrency.gpus: unknown setting (known: sessions, batching, max_batch, stagger, batch_encodings)"),
    ("concurrency.batching=true clock=free",
     "concurrency.batching: the cost profile free has no batch dimension (batch_sizes, batch_factor); measure one with "
     "`python -m ticktock.calibrate`, or use concurrency.batching=false"),
])
def test_every_run_option_is_checked_with_one_line_naming_key_value_and_what_is_allowed(small_manifest, override,
                                                                                     message):
    with pytest.raises(ConfigError) as failure:
        check_run_options(config(small_manifest, *override.split(), decoder="pld"))
    assert str(failure.value) == message


def test_a_bad_option_stops_the_run_before_any_work(tmp_path, small_manifest, monkeypatch):
    monkeypatch.setattr(runner, "build_engine", lambda *a: pytest.fail("the model was built"))
    monkeypatch.setattr(config_module, "select_sessions", lambda *a: pytest.fail("the manifest was read"))
    with pytest.raises(RunOptionError, match="limit.sessions"):
        run(config(small_manifest, "limit.sessions=-1"), tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_a_bad_cost_profile_stops_the_run_naming_file_and_line(tmp_path, small_manifest):
    profile = tmp_path / "neg.yaml"
    profile.write_text("name: n\nquery_tokens: [1]\ncontext_tokens: [0]\nforward_ms:\n- [-100.0]\n")
    with pytest.raises(ConfigError, match=r"neg.yaml:5: field 'forward_ms\[0\]\[0\]': must be a finite number of milliseconds from 0 to 3600000"):
        run(config(small_manifest, f"clock.profile={profile}"), tmp_path / "run")


def edited_manifest(small_manifest, duration_s):
    lines = [json.loads(line) for line in small_manifest.read_text().splitlines()]
    lines[1]["duration_s"] = duration_s
    path = small_manifest.parent / f"duration-{duration_s}.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_a_duration_that_disagrees_with_the_audio_stops_the_run_before_the_model_is_built(tmp_path, small_manifest,
                                                                                          monkeypatch):
    manifest = edited_manifest(small_manifest, 30.0)
    with monkeypatch.context() as patch:
        patch.setattr(runner, "build_engine", lambda *a: pytest.fail("the model was built"))
        with pytest.raises(ManifestError, match=rf"{manifest}:2: session 's1': duration_s is 30 s but its audio .*s1.flac "
                                                 r"lasts 6.400 s \(23.6 s longer"):
            run(config(manifest, "limit.chunks=2"), tmp_path / "checked")
    summary = run(config(manifest, "audio_duration=trust_audio", "limit.sessions=2"), tmp_path / "trusted")
    assert summary.counts["chunks"] == 14  # 2 sessions of 6.4 s: 7 chunks each, not 30 for s1


def test_a_wall_clock_run_records_its_timing_noise_and_a_modeled_run_none(tmp_path, small_manifest):
    wall = config(small_manifest, "clock=wall", "limit.chunks=2", "timing_noise.every=2", "timing_noise.repeats=2")
    run(wall, tmp_path / "wall")
    noise = json.loads((tmp_path / "wall" / "run.json").read_text())["timing_noise"]
    assert [m["when"] for m in noise["measurements"]] == ["start", "after 2 sessions", "end"]
    assert all(len(m["ms"]) == 2 for m in noise["measurements"]) and noise["median_ms"] > 0
    assert noise["spread"] >= 1.0 and noise["max_spread"] == 1.5 and noise["noisy"] == (noise["spread"] > 1.5)
    run(config(small_manifest, "limit.chunks=2", "limit.sessions=1"), tmp_path / "modeled")
    assert json.loads((tmp_path / "modeled" / "run.json").read_text())["timing_noise"] is None
