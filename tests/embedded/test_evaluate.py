"""``python -m ticktock.embedded.evaluate`` on the shipped weights: gates, per-task rates and timelines."""

import json

from ticktock.embedded.evaluate import GATES, main, timeline
from ticktock.sessions.manifest import load_manifest
from ticktock.shipped import resource_path


def test_timeline_letters_follow_the_chunk_order():
    chunks = [{"chunk_index": 2, "kind": "tool"}, {"chunk_index": 0, "kind": "listen"}, {"chunk_index": 1, "kind": "speak"},
              {"chunk_index": 3, "kind": "interrupt"}]
    assert timeline(chunks) == ".STI"


def test_evaluation_writes_every_gate_and_a_timeline_per_session(tmp_path):
    manifest = resource_path("manifests/ticktock-mini/manifest.jsonl")
    main(["--manifest", str(manifest), "--out", str(tmp_path), "--limit", "3", "--threads", "1"])
    summary = json.loads((tmp_path / "evaluation.json").read_text())
    assert set(summary["gates"]) == set(GATES) and summary["sessions"] == 3
    sessions = load_manifest(manifest)[:3]
    assert {s.session_id: len(s.chunk_spans()) for s in sessions} == {k: len(v) for k, v in summary["timelines"].items()}
    assert all(set(line) <= set(summary["timeline_letters"].values()) for line in summary["timelines"].values())
    assert summary["speed"]["single_token_forward_ms"] > 0 and (tmp_path / "evaluation.md").read_text().startswith("| task |")
