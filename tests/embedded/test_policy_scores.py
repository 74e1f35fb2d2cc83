"""The oracle policy that makes the training targets passes the quality gates it is judged by.

This checks the scoring definitions and the targets against each other on the shipped corpus: if the
policy itself failed a gate, the gate (or the policy) would be wrong, not the model.
"""

import json

import pytest

from ticktock.embedded.evaluate import GATES, QA_TASKS
from ticktock.embedded.targets import plan_session
from ticktock.world.injection import parse_tool_call
from ticktock.sessions.manifest import load_manifest
from ticktock.world.mock_tools import MockToolExecutor
from ticktock.shipped import resource_path
from ticktock.world.scoring import rates, score_session
from collections import Counter


def plan_rows(session, adapter, executor):
    rows = []
    for span, plan in zip(session.chunk_spans(), plan_session(session, adapter, executor)):
        calls = [parse_tool_call(t) for t in adapter.tool_call_texts(plan.output)]
        rows.append({"chunk_index": span.index, "start_s": span.start_s, "arrival_s": span.end_s,
                     "kind": adapter.protocol.kind_of(plan.output), "output_text": adapter.decode_tokens(plan.output),
                     "tool_calls_json": json.dumps(calls) if calls else ""})
    return rows


def test_the_oracle_policy_passes_every_gate_on_the_mini_corpus(embedded_adapter):
    adapter = embedded_adapter  # its tokenizer sets how many units a reply takes
    executor = MockToolExecutor()
    total, qa = Counter(), Counter()
    for session in load_manifest(resource_path("manifests/ticktock-mini/manifest.jsonl")):
        turns = [{"speaker": t.speaker, "role": t.role, "start_s": t.start_s, "end_s": t.end_s,
                  "expects_response": t.expects_response} for t in session.turns]
        counts = score_session(plan_rows(session, adapter, executor), session.expected, turns)
        total += counts
        qa += counts if session.task in QA_TASKS else Counter()
    measured = {**rates(total), "qa": rates(qa)["qa"]}
    for name, (threshold, higher) in GATES.items():
        assert (measured[name] >= threshold) if higher else (measured[name] <= threshold), (name, measured[name])
    assert measured["qa"] == pytest.approx(1.0) and measured["tool_strict"] == pytest.approx(1.0)
