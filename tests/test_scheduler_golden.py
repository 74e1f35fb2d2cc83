"""The shared device's scheduler gives, to the sixth decimal, the results recorded with the scheduler it replaced.

Until issue 38, each session sharing the device ran in a thread of its own and a baton passed between the threads;
now the sessions run as greenlets driven by one loop (``ticktock.replay.device``). The scheduling decisions were
meant to stay the same: ``data/scheduler_golden.json`` holds, for every shipped decoder that the thread scheduler
could run at N = 1, 2 and 4 (and two with batching of post-audio forwards: batched drafts came after it), each chunk's tokens, times and counters and the device's
step counts, recorded with the thread scheduler (commit 1f4aa0c) on the fixture model and the a100-8b-derived
profile. The test replays the same and compares. Re-recorded once on purpose (issue 46): an idle-window audio
encoding is now expected to cost the profile's encoding, not a forward's, so a low-value one that would delay
another session's arriving chunk is declined (one more decline at N = 4; every output token unchanged). Re-recorded on
purpose again (issue 52): no idle work starts unless it is expected to end before the next session's chunk arrives,
whatever its tier (2 to 6 more declines per case; every output token unchanged, every case's summed response time
2 to 5% lower). And once more (issue 52): with batching, an arrived chunk's encoding that has waited as long as it costs
runs before an earlier chunk's forwards, so its forward joins theirs (ar-N4-batching: one batched step of 2 more,
every output token unchanged, the summed response time 0.1% higher on these short sessions). And once more (issue
52): Speculative Listening's silence draft is encoded in the chunk's own encoding step, one step of two encodings
(``DeviceWork.silence_after``), not alone in the idle window (every output token unchanged; the summed response
time 1.0% higher at N = 1 and 2, where a window has time to spare and the encoding step costs 1.3 ms more, 2.8 to
6.5% lower at N = 4, where the drafts accept 8 to 29 tokens instead of 3 to 20; speclisten_plus-N4 0.4% higher).

Regenerate only on purpose (a deliberate change of scheduling): ``python tests/test_scheduler_golden.py --write``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

GOLDEN = Path(__file__).parent / "data" / "scheduler_golden.json"
DECODERS = ("ar", "pld", "recycling", "lookahead", "oracle_probe", "speclisten_silence", "speclisten_runnerup",
            "speclisten", "speclisten_plus")
CASES = [(name, n, False) for name in DECODERS for n in (1, 2, 4)] + [("ar", 4, True), ("speclisten", 4, True)]
CHUNKS = 6
SESSIONS = 5


def outcome(manifest: Path, decoder: str, sessions: int, batching: bool) -> dict:
    """What a shared-device replay of the manifest gives: per session and chunk the tokens, times and counters
    (floats to 6 decimals), and the device's counts."""
    from ticktock.adapters.fixture import build_fixture_adapter
    from ticktock.clocks.modeled import ModeledClock
    from ticktock.decoders.selection import Sampling
    from ticktock.replay.concurrency import ConcurrencySettings, ConcurrentReplay
    from ticktock.replay.device import SharedDevice
    from ticktock.replay.engine import ReplayEngine
    from ticktock.replay.config import build, compose_run
    from ticktock.scheduling.expected_savings import ExpectedSavings
    from ticktock.sessions.audio import load_audio
    from ticktock.sessions.manifest import load_manifest

    cfg = compose_run(decoder, "fixture", None, [])
    clock = ModeledClock(Path(__file__).parents[1] / "configs" / "profiles" / "a100-8b-derived.yaml")
    adapter = build_fixture_adapter(seed=0)
    engines = [ReplayEngine(adapter.replica(), build(cfg.decoder), clock, Sampling(), max_chunks=CHUNKS)
               for _ in range(sessions)]
    device = SharedDevice(clock, ExpectedSavings(batch_drafts=False), batching=batching)  # drafts batch since issue 38
    settings = ConcurrencySettings(sessions=sessions, batching=batching, stagger="random")
    traces = {}
    ConcurrentReplay(engines, device, settings, seed=0).replay(
        load_manifest(manifest), lambda s: load_audio(s.audio_path),
        lambda trace: traces.setdefault(trace.session.session_id, _chunks(trace)))
    counts = ("steps", "post_audio_steps", "draft_steps", "batched_steps", "batched_forwards", "declined",
              "dropped_drafts")
    return {"sessions": dict(sorted(traces.items())), "now": round(device.now, 6), "busy_ms": round(device.stats.busy_ms, 6),
            **{key: getattr(device.stats, key) for key in counts}}


def _chunks(trace) -> list:
    rows = []
    for c in trace.chunks:
        k = c.counters
        rows.append([c.output, *[round(v, 6) for v in (c.timing.response_ms, c.timing.lag_ms, c.carried_ms,
                                                       k.device_wait_ms, k.window_used_ms)],
                     k.window_forwards, k.post_audio_forwards, k.accepted_draft_tokens, trace.slot,
                     round(trace.start_ms, 6)])
    return rows


def _case_id(case) -> str:
    name, n, batching = case
    return f"{name}-N{n}" + ("-batching" if batching else "")


@pytest.fixture(scope="module")
def golden_manifest(tmp_path_factory):
    from helpers import write_sessions

    return write_sessions(tmp_path_factory.mktemp("golden"), count=SESSIONS)


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_the_scheduler_gives_the_recorded_results(case, golden_manifest):
    want = json.loads(GOLDEN.read_text())[_case_id(case)]
    assert outcome(golden_manifest, *case) == want


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    import tempfile

    sys.path.insert(0, str(Path(__file__).parent))
    from helpers import write_sessions

    with tempfile.TemporaryDirectory() as folder:
        manifest = write_sessions(Path(folder), count=SESSIONS)
        recorded = {_case_id(case): outcome(manifest, *case) for case in CASES}
    GOLDEN.parent.mkdir(exist_ok=True)
    GOLDEN.write_text(json.dumps(recorded, indent=1, sort_keys=True) + "\n")
    print(f"wrote {len(recorded)} cases to {GOLDEN}")
