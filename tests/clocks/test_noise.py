"""The timing-noise probe of wall-clock runs: a fixed forward, its schedule, its summary."""

import pytest

from ticktock.clocks.noise import NoiseProbe, summarize, time_probe


def test_summary_reports_median_spread_and_the_noisy_flag():
    quiet = summarize([20.0, 21.0, 22.0], max_spread=1.5)
    assert quiet["median_ms"] == 21.0 and quiet["spread"] == pytest.approx(1.1) and not quiet["noisy"]
    loaded = summarize([31.0, 35.0, 900.0], max_spread=1.5)  # the same listen chunk, 31 ms or 900 ms
    assert loaded["spread"] == pytest.approx(29.032, abs=1e-3) and loaded["noisy"]


def test_probe_repeats_the_same_forward_and_leaves_the_adapter_as_it_found_the_scratch_session(fixture_adapter):
    samples = time_probe(fixture_adapter, repeats=3)
    assert len(samples) == 3 and all(ms > 0 for ms in samples)
    prompt = len(fixture_adapter.start_session(None, []))
    time_probe(fixture_adapter, repeats=2)
    assert fixture_adapter.cache_length == prompt  # rolled back to the scratch session's prompt


def test_probe_measures_at_the_start_every_k_sessions_and_at_the_end(fixture_adapter):
    probe = NoiseProbe(fixture_adapter, repeats=2, every=2, max_spread=1.5)
    for _ in range(5):
        probe.before_session()
    probe.finish()
    record = probe.record
    assert [m["when"] for m in record["measurements"]] == ["start", "after 2 sessions", "after 4 sessions", "end"]
    assert all(len(m["ms"]) == 2 for m in record["measurements"])
    every = [ms for m in record["measurements"] for ms in m["ms"]]
    assert record["min_ms"] == min(every) and record["max_ms"] == max(every)
    assert record["spread"] == pytest.approx(max(every) / min(every), rel=1e-3)
    assert record["noisy"] == (record["spread"] > 1.5) and record["max_spread"] == 1.5
