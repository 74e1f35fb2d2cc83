"""Full-Duplex-Bench v3 converter on tiny recordings in the published layout (48 kHz input.wav + metadata)."""

from __future__ import annotations

import json

import pytest

from convert_helpers import assert_nothing_left, check_manifest, write_speech
from ticktock.corpus.convert import ConvertError, convert
from ticktock.mock_tools import TOOL_SCHEMAS

SHOP = {
    "id": "ecommerce_07",
    "domain": "ecommerce_support",
    "difficulty": "medium",
    "disfluency_features": ["fillers", "self_corrections"],
    "state_rollback_test": True,
    "state_rollback_details": {"original_param": {"query": "running shoes"}, "corrected_param": {"query": "hiking boots"}},
    "dialogue": [{"user": "Um, find me some running shoes, no wait, hiking boots, and add one to my cart.",
                  "ai": "I added the TrailMax hiking boots to your cart."}],
    "expected_tool_calls": [
        {"function": "search_products", "args": {"query": "hiking boots"}},
        {"function": "add_to_cart", "args": {"product_id": "$RESULT_0.products[0].product_id", "quantity": 1}},
    ],
    "acting_notes": "hesitant",
    "latency_profile": "normal",
}
ORDER = {
    "id": "ecommerce_02",
    "difficulty": "easy",
    "disfluency_features": ["pauses"],
    "state_rollback_test": False,
    "dialogue": [{"user": "Where is my order... four eight two one three?", "ai": "It has been delivered."}],
    "expected_tool_calls": [{"function": "track_order", "args": {"order_id": "48213"}}],
}


def make_sample(root, name, meta, spans=((0.5, 3.5),), seconds=8.0):
    folder = root / "fdb_v3_data_released" / name
    write_speech(folder / "input.wav", seconds, list(spans), 48_000, channels=2)
    (folder / "metadata.json").write_text(json.dumps(meta))
    return folder


@pytest.fixture
def source(tmp_path):
    root = tmp_path / "v3"
    make_sample(root, "ecommerce_07_spk03", SHOP, spans=((0.5, 2.0), (3.0, 4.2)))
    make_sample(root, "ecommerce_02_spk11", ORDER)
    return root


def test_converts_tool_calling_sessions(source, tmp_path):
    result = convert("fdb_v3", source, tmp_path / "out", warn=lambda line: None)
    sessions = check_manifest(result.manifest)
    assert [s.session_id for s in sessions] == ["fdb_v3-ecommerce_02_spk11", "fdb_v3-ecommerce_07_spk03"]
    assert not result.warnings
    order, shop = sessions
    assert shop.task == "fdb_v3" and shop.duration_s == 8.0
    assert list(shop.tools) == TOOL_SCHEMAS
    (turn,) = shop.turns
    assert (turn.speaker, turn.role, turn.expects_response, turn.words) == ("user", "request", True, ())
    assert turn.text.startswith("Um, find me some running shoes")
    assert abs(turn.start_s - 0.5) < 0.06 and abs(turn.end_s - 4.2) < 0.06  # across the pause in the request
    # the $RESULT_0 placeholder is filled in from the mock tools' answer to the first expected call
    assert shop.expected["tool_calls"] == [
        {"function": "search_products", "args": {"query": "hiking boots"}},
        {"function": "add_to_cart", "args": {"product_id": "P1042", "quantity": 1}},
    ]
    assert shop.provenance["source_tool_calls"] == SHOP["expected_tool_calls"]
    script = shop.expected["script"]
    assert [a["action"] for a in script] == ["tool_call", "tool_call", "speak_after_tools"]
    assert script[1]["call"]["args"]["product_id"] == "P1042"
    assert script[2]["text"] == "I added the TrailMax hiking boots to your cart."
    assert script[2]["tool_results"][1]["status"] == "added"
    assert shop.expected["behaviour"] == {
        "type": "tool_calling", "scenario": "ecommerce_07", "domain": "ecommerce_support", "difficulty": "medium",
        "disfluencies": ["fillers", "self_corrections"],
        "state_rollback": {"original": {"query": "running shoes"}, "corrected": {"query": "hiking boots"}},
        "respond_after_s": [turn.end_s]}
    assert shop.provenance["source_sample_rate"] == 48_000 and shop.provenance["source_channels"] == 2
    assert shop.provenance["speaker_id"] == "spk03" and shop.provenance["source_id"] == "ecommerce_07"
    assert shop.provenance["source_path"] == "fdb_v3_data_released/ecommerce_07_spk03"
    assert shop.provenance["acting_notes"] == "hesitant"
    assert order.expected["behaviour"]["state_rollback"] is None
    assert "source_tool_calls" not in order.provenance
    assert convert("fdb_v3", source / "fdb_v3_data_released", tmp_path / "one", limit=1,
                   warn=lambda line: None).sessions[0].session_id == "fdb_v3-ecommerce_02_spk11"


def test_unresolvable_placeholders_and_unknown_tools_are_reported(source, tmp_path):
    meta = {**ORDER, "expected_tool_calls": [
        {"function": "search_flights", "args": {"destination": "Atlantis", "date": "Friday"}},
        {"function": "book_flight", "args": {"passenger_name": "Ana", "flight_id": "$RESULT_0.flights[0].flight_id"}},
        {"function": "order_pizza", "args": {}},
    ]}
    make_sample(source, "travel_01_spk01", meta)
    lines = []
    result = convert("fdb_v3", source, tmp_path / "out", warn=lines.append)
    session = next(s for s in result.sessions if s.session_id == "fdb_v3-travel_01_spk01")
    assert session.expected["tool_calls"][1]["args"]["flight_id"] == "$RESULT_0.flights[0].flight_id"
    assert result.warnings["unresolved"] == 1 and result.warnings["unknown_tool"] == 1
    assert any("travel_01_spk01/metadata.json: call 1 (book_flight): cannot resolve" in line for line in lines)


def test_bad_files_are_named(source, tmp_path):
    out = tmp_path / "out"
    folder = source / "fdb_v3_data_released" / "ecommerce_07_spk03"
    (folder / "metadata.json").write_text(json.dumps({**SHOP, "expected_tool_calls": None}))
    with pytest.raises(ConvertError, match=r"ecommerce_07_spk03/metadata.json: 'expected_tool_calls' must be a list"):
        convert("fdb_v3", source, out)
    (folder / "metadata.json").write_text(json.dumps({**SHOP, "dialogue": []}))
    with pytest.raises(ConvertError, match=r"ecommerce_07_spk03/metadata.json: 'dialogue'"):
        convert("fdb_v3", source, out)
    (folder / "metadata.json").write_text(json.dumps(SHOP))
    (folder / "input.wav").write_bytes(b"RIFF....WAVEfmt broken")
    with pytest.raises(ConvertError, match=r"ecommerce_07_spk03/input.wav: cannot read audio"):
        convert("fdb_v3", source, out)
    assert_nothing_left(out)
    (folder / "metadata.json").unlink()
    with pytest.raises(ConvertError, match=r"ecommerce_07_spk03/metadata.json: required file not found"):
        convert("fdb_v3", source, out)
    with pytest.raises(ConvertError, match=r"no FDB v3 example folders"):
        convert("fdb_v3", tmp_path / "out", tmp_path / "elsewhere")


def test_clipped_recording_is_reported(source, tmp_path):
    make_sample(source, "ecommerce_02_spk11", ORDER)
    write_speech(source / "fdb_v3_data_released/ecommerce_02_spk11/input.wav", 8.0, [(0.5, 3.5)], 48_000,
                 channels=2, gain=30.0)
    lines = []
    result = convert("fdb_v3", source, tmp_path / "out", warn=lines.append)
    assert result.warnings == {"clipped": 1}
    assert "ecommerce_02_spk11/input.wav: audio is clipped" in lines[0]
    check_manifest(result.manifest)
