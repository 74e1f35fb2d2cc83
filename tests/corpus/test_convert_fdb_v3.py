"""Full-Duplex-Bench v3 converter on tiny recordings in the released shapes: ``{example_id}_{24 hex}`` folders,
48 kHz input.wav with long room tone, ``metadata.json`` with multi-entry dialogues, upper-case disfluency
names and the official call shapes (defaults left out, free strings, ``$RESULT_i`` placeholders)."""

from __future__ import annotations

import json

import pytest

from convert_helpers import assert_nothing_left, check_manifest, write_speech
from ticktock.corpus.convert import ConvertError, check, convert
from ticktock.world.mock_tools import TOOL_SCHEMAS, execute

SPEAKER = "65e8cf8f4c7424fa062e54a3"
SHOP = {
    "id": "ecommerce_09",
    "title": "Hiking boots instead of running shoes",
    "domain": "ecommerce_support",
    "difficulty": "medium",
    "num_expected_calls": 2,
    "disfluency_features": ["FILLER", "SELF_CORRECTION"],
    "state_rollback_test": True,
    "state_rollback_details": {"original_param": {"query": "running shoes"}, "corrected_param": {"query": "hiking boots"}},
    "dialogue": [
        {"user": "Um, find me some running shoes,", "ai": "Sure, looking for running shoes."},
        {"user": "no wait, hiking boots, and add them to my cart.", "ai": "I added the TrailMax hiking boots to your cart."},
    ],
    "expected_tool_calls": [
        {"function": "search_products", "args": {"query": "hiking boots"}},
        {"function": "add_to_cart", "args": {"product_id": "$RESULT_0.products[0].product_id"}},
    ],
    "acting_notes": "hesitant",
    "latency_profile": "normal",
}
ORDER = {
    "id": "ecommerce_02",
    "title": "Track an order",
    "difficulty": "easy",
    "num_expected_calls": 1,
    "disfluency_features": ["PAUSE"],
    "state_rollback_test": False,
    "dialogue": [{"user": "Where is my order... B O B one two?", "ai": "Order BOB12 has shipped."}],
    "expected_tool_calls": [{"function": "track_order", "args": {"order_id": "BOB12"}}],
}
OFFICIAL_SHAPES = {  # folder -> expected calls as the released metadata writes them (official agent tools)
    "travel_04_5e3c1fbece3a7b000a6fd95a": [
        {"function": "search_flights", "args": {"destination": "New York", "date": "August 20"}},
        {"function": "book_flight", "args": {"passenger_name": "Maria Lopez"}},
        {"function": "update_identity_doc", "args": {"doc_type": "id_card", "doc_number": "P9-9-9-90011"}},
    ],
    "finance_11_66c4f3cb14cbfc4db836bd4e": [
        {"function": "get_card_benefits", "args": {"card_type": "Sapphire Reserve"}},
        {"function": "get_exchange_rate", "args": {"amount": 200, "from_currency": "dollars", "to_currency": "euros"}},
        {"function": "modify_autopay", "args": {"bill_type": "utilities", "source_account": "checking account"}},
    ],
    "housing_21_66c4f3cb14cbfc4db836bd4e": [
        {"function": "update_search_filter", "args": {"filter_name": "max_price", "value": 1800}},
        {"function": "search_apartments", "args": {"bedrooms": 3, "pets_allowed": True}},
        {"function": "calculate_commute", "args": {"origin_address": "$RESULT_1.apartments[0].address",
                                                   "destination_address": "train station"}},
    ],
    "housing_18_66c4f3cb14cbfc4db836bd4e": [
        {"function": "search_apartments", "args": {"city": "Portland", "bedrooms": 1, "max_price": 2500}},
        {"function": "calculate_commute", "args": {"origin_address": "$RESULT_0.cheapest_apartment_address",
                                                   "destination_address": "the coffee shop on 5th Street",
                                                   "mode": "bike"}},
        {"function": "update_search_filter", "args": {"filter_name": "pets", "value": "true"}},
    ],
    "ecommerce_18_62a885d5b6af18b3d4579e1b": [
        {"function": "track_order", "args": {"order_id": "BOB"}},
        {"function": "search_products", "args": {"query": "wireless headphones", "category": "electronics"}},
        {"function": "add_to_cart", "args": {"product_id": "$RESULT_1.cheapest_product_id"}},
    ],
}


def make_sample(root, name, meta, spans=((0.5, 3.5),), seconds=8.0, faint=(), rate=48_000):
    folder = root / "fdb_v3_data_released" / name
    write_speech(folder / "input.wav", seconds, list(spans), rate, channels=2, faint=faint)
    (folder / "metadata.json").write_text(json.dumps(meta))
    return folder


@pytest.fixture
def source(tmp_path):
    root = tmp_path / "v3"
    make_sample(root, f"ecommerce_09_{SPEAKER}", SHOP, spans=((0.5, 2.0), (3.0, 4.2)))
    make_sample(root, "ecommerce_02_5f4a4da1575d605c43bef871", ORDER)
    return root


def quiet(line):
    pass


def test_converts_tool_calling_sessions(source, tmp_path):
    lines = []
    result = convert("fdb_v3", source, tmp_path / "out", warn=lines.append)
    sessions = check_manifest(result.manifest)
    assert [s.session_id for s in sessions] == ["fdb_v3-ecommerce_02_5f4a4da1575d605c43bef871",
                                                f"fdb_v3-ecommerce_09_{SPEAKER}"]
    assert result.warnings == {"multi_entry_dialogue": 1}
    assert f"ecommerce_09_{SPEAKER}/metadata.json: dialogue has 2 entries" in lines[0]
    order, shop = sessions
    assert shop.task == "fdb_v3" and shop.duration_s == 8.0
    assert list(shop.tools) == TOOL_SCHEMAS
    (turn,) = shop.turns
    assert (turn.speaker, turn.role, turn.expects_response, turn.words) == ("user", "request", True, ())
    # every user entry is the request; the correction is in the second one
    assert turn.text == "Um, find me some running shoes, no wait, hiking boots, and add them to my cart."
    assert abs(turn.start_s - 0.5) < 0.06 and abs(turn.end_s - 4.2) < 0.06  # across the pause in the request
    # the $RESULT_0 placeholder is filled in from the mock tools' answer to the first expected call
    assert shop.expected["tool_calls"] == [
        {"function": "search_products", "args": {"query": "hiking boots"}},
        {"function": "add_to_cart", "args": {"product_id": "P1042"}},
    ]
    assert shop.provenance["source_tool_calls"] == SHOP["expected_tool_calls"]
    script = shop.expected["script"]
    assert [a["action"] for a in script] == ["tool_call", "tool_call", "speak_after_tools"]
    assert script[2]["text"] == "I added the TrailMax hiking boots to your cart."  # dialogue[-1].ai
    assert script[2]["tool_results"][1] == {"cart_total": 89.99, "name": "TrailMax hiking boots",
                                           "product_id": "P1042", "quantity": 1, "status": "added"}
    assert shop.expected["behaviour"] == {
        "type": "tool_calling", "scenario": "ecommerce_09", "title": "Hiking boots instead of running shoes",
        "num_expected_calls": 2, "domain": "ecommerce_support", "difficulty": "medium",
        "disfluencies": ["filler", "self_correction"],
        "state_rollback": {"original": {"query": "running shoes"}, "corrected": {"query": "hiking boots"}},
        "respond_after_s": [turn.end_s]}
    assert shop.provenance["dialogue"] == SHOP["dialogue"]
    assert shop.provenance["source_disfluencies"] == ["FILLER", "SELF_CORRECTION"]
    assert shop.provenance["source_sample_rate"] == 48_000 and shop.provenance["source_channels"] == 2
    assert shop.provenance["speaker_id"] == SPEAKER and shop.provenance["source_id"] == "ecommerce_09"
    assert shop.provenance["source_path"] == f"fdb_v3_data_released/ecommerce_09_{SPEAKER}"
    assert shop.provenance["acting_notes"] == "hesitant"
    assert order.expected["behaviour"]["scenario"] == "ecommerce_02"
    assert order.expected["behaviour"]["domain"] == "ecommerce_support"  # from the id when the file has none
    assert order.expected["behaviour"]["state_rollback"] is None
    assert order.expected["tool_calls"] == [{"function": "track_order", "args": {"order_id": "BOB12"}}]
    assert "source_tool_calls" not in order.provenance
    assert convert("fdb_v3", source / "fdb_v3_data_released", tmp_path / "one", limit=1,
                   warn=quiet).sessions[0].session_id == "fdb_v3-ecommerce_02_5f4a4da1575d605c43bef871"


def test_request_ends_before_the_first_silence_over_two_seconds(source, tmp_path):
    # a 1.2 s pause inside the request, then 20 s of room tone with faint background talk at 14-15 s
    make_sample(source, f"ecommerce_02_{SPEAKER}", ORDER, spans=((0.5, 3.0), (4.2, 6.0)), seconds=24.0,
                faint=((14.0, 15.0),))
    lines = []
    result = convert("fdb_v3", source, tmp_path / "out", warn=lines.append)
    session = next(s for s in result.sessions if s.session_id == f"fdb_v3-ecommerce_02_{SPEAKER}")
    (turn,) = session.turns
    assert abs(turn.start_s - 0.5) < 0.06 and abs(turn.end_s - 6.0) < 0.06
    assert session.expected["behaviour"]["respond_after_s"] == [turn.end_s]
    assert abs(session.provenance["last_speech_s"] - 15.0) < 0.06
    assert result.warnings["request_end"] == 1
    assert any(f"ecommerce_02_{SPEAKER}/input.wav: the request ends at 6.03 s" in line for line in lines)


def test_official_call_shapes_run_on_the_mock_tools(tmp_path):
    root = tmp_path / "v3"
    for name, calls in OFFICIAL_SHAPES.items():
        example = name.rsplit("_", 1)[0]
        make_sample(root, name, {**ORDER, "id": example, "num_expected_calls": len(calls), "expected_tool_calls": calls})
    lines = []
    result = convert("fdb_v3", root, tmp_path / "out", warn=lines.append)
    assert not result.warnings, lines
    sessions = {s.session_id.removeprefix("fdb_v3-"): s for s in check_manifest(result.manifest)}
    for name, session in sessions.items():
        for call in session.expected["tool_calls"]:  # every expected call runs, no placeholder left
            assert "error" not in execute(call), (name, call, execute(call))
            assert not any(isinstance(v, str) and v.startswith("$RESULT") for v in call["args"].values())
    travel = sessions["travel_04_5e3c1fbece3a7b000a6fd95a"].expected["script"]
    assert travel[0]["call"]["args"] == {"destination": "New York", "date": "August 20"}
    assert len(travel[3]["tool_results"][0]["flights"]) == 2  # any city has flights
    assert travel[3]["tool_results"][2] == {"doc_number": "P99990011", "doc_type": "id_card", "status": "updated"}
    commute = sessions["housing_18_66c4f3cb14cbfc4db836bd4e"].expected["script"]
    cheapest = min(commute[3]["tool_results"][0]["apartments"], key=lambda a: a["rent"])
    assert commute[1]["call"]["args"]["origin_address"] == cheapest["address"]
    assert commute[3]["tool_results"][1]["mode"] == "cycling"
    shop = sessions["ecommerce_18_62a885d5b6af18b3d4579e1b"].expected["tool_calls"]
    assert shop[2] == {"function": "add_to_cart", "args": {"product_id": "P1205"}}


def test_unresolvable_placeholders_and_unknown_tools_are_reported(source, tmp_path):
    meta = {**ORDER, "num_expected_calls": 3, "expected_tool_calls": [
        {"function": "search_products", "args": {"query": "moon rocks"}},
        {"function": "add_to_cart", "args": {"product_id": "$RESULT_0.products[0].product_id"}},
        {"function": "order_pizza", "args": {}},
    ]}
    make_sample(source, "travel_01_5ff07b5ee7a1d23e719e421e", meta)
    lines = []
    result = convert("fdb_v3", source, tmp_path / "out", warn=lines.append)
    session = next(s for s in result.sessions if s.session_id == "fdb_v3-travel_01_5ff07b5ee7a1d23e719e421e")
    assert session.expected["tool_calls"][1]["args"]["product_id"] == "$RESULT_0.products[0].product_id"
    assert result.warnings["unresolved"] == 1 and result.warnings["unknown_tool"] == 1
    assert result.warnings["mock_rejects"] == 1  # the placeholder is not a product id
    assert any("travel_01_5ff07b5ee7a1d23e719e421e/metadata.json: call 1 (add_to_cart): cannot resolve" in line
               for line in lines)


def test_call_count_disagreeing_with_the_metadata_is_reported(source, tmp_path):
    make_sample(source, "ecommerce_02_5f4a4da1575d605c43bef871", {**ORDER, "num_expected_calls": 2})
    lines = []
    result = convert("fdb_v3", source, tmp_path / "out", warn=lines.append)
    assert result.warnings["call_count"] == 1
    assert any("num_expected_calls is 2 but expected_tool_calls has 1" in line for line in lines)


def test_doubled_data_folder_and_check_mode(source, tmp_path):
    doubled = tmp_path / "unzipped"
    make_sample(doubled / "fdb_v3_data_released", "ecommerce_02_5f4a4da1575d605c43bef871", ORDER)
    result = check("fdb_v3", doubled, warn=quiet)
    assert [s.session_id for s in result.sessions] == ["fdb_v3-ecommerce_02_5f4a4da1575d605c43bef871"]
    assert result.manifest is None
    assert sorted(p.name for p in doubled.rglob("*")) == ["ecommerce_02_5f4a4da1575d605c43bef871",
                                                          "fdb_v3_data_released", "fdb_v3_data_released",
                                                          "input.wav", "metadata.json"]


def test_bad_files_are_named(source, tmp_path):
    out = tmp_path / "out"
    folder = source / "fdb_v3_data_released" / f"ecommerce_09_{SPEAKER}"
    (folder / "metadata.json").write_text(json.dumps({**SHOP, "expected_tool_calls": None}))
    with pytest.raises(ConvertError, match=rf"ecommerce_09_{SPEAKER}/metadata.json: 'expected_tool_calls' must be a list"):
        convert("fdb_v3", source, out)
    (folder / "metadata.json").write_text(json.dumps({**SHOP, "dialogue": []}))
    with pytest.raises(ConvertError, match=rf"ecommerce_09_{SPEAKER}/metadata.json: 'dialogue'"):
        convert("fdb_v3", source, out)
    (folder / "metadata.json").write_text(json.dumps({**SHOP, "dialogue": [{"user": "", "ai": "ok"}, "hello"]}))
    with pytest.raises(ConvertError, match=rf"ecommerce_09_{SPEAKER}/metadata.json: dialogue\[1\] is not an object"):
        convert("fdb_v3", source, out)
    (folder / "metadata.json").write_text(json.dumps({**SHOP, "dialogue": [{"ai": "ok"}]}))
    with pytest.raises(ConvertError, match=rf"ecommerce_09_{SPEAKER}/metadata.json: no dialogue entry has user text"):
        convert("fdb_v3", source, out)
    (folder / "metadata.json").write_text(json.dumps(SHOP))
    (folder / "input.wav").write_bytes(b"RIFF....WAVEfmt broken")
    with pytest.raises(ConvertError, match=rf"ecommerce_09_{SPEAKER}/input.wav: cannot read audio"):
        convert("fdb_v3", source, out)
    assert_nothing_left(out)
    (folder / "metadata.json").unlink()
    with pytest.raises(ConvertError, match=rf"ecommerce_09_{SPEAKER}/metadata.json: required file not found"):
        convert("fdb_v3", source, out)
    with pytest.raises(ConvertError, match=r"no FDB v3 example folders"):
        convert("fdb_v3", tmp_path / "out", tmp_path / "elsewhere")


def test_clipped_recording_is_reported(source, tmp_path):
    write_speech(source / "fdb_v3_data_released/ecommerce_02_5f4a4da1575d605c43bef871/input.wav", 8.0, [(0.5, 3.5)],
                 48_000, channels=2, gain=30.0)
    lines = []
    result = convert("fdb_v3", source, tmp_path / "out", warn=lines.append)
    assert result.warnings == {"clipped": 1, "multi_entry_dialogue": 1}
    assert "ecommerce_02_5f4a4da1575d605c43bef871/input.wav: audio is clipped" in lines[0]
    check_manifest(result.manifest)


def test_deep_metadata_and_a_disfluency_string_are_named_in_one_line(source, tmp_path, capsys):
    from ticktock.corpus.convert.__main__ import cli

    folder = source / "fdb_v3_data_released" / f"ecommerce_09_{SPEAKER}"
    out = tmp_path / "out"
    for depth in (100_000, 900):  # deeper than the decoder goes; decodable, but deeper than any copy would recurse
        (folder / "metadata.json").write_text("[" * depth + "]" * depth)
        with pytest.raises(ConvertError, match=rf"ecommerce_09_{SPEAKER}/metadata.json: not valid JSON \(nested deeper "
                                               r"than 64 levels\)"):
            convert("fdb_v3", source, out)
    (folder / "metadata.json").write_text(json.dumps({**SHOP, "state_rollback_details": {"original_param": [[[[[1]]]]]}}))
    assert convert("fdb_v3", source, out, warn=quiet).sessions  # a few levels deeper than the published shape: fine
    (folder / "metadata.json").write_text(json.dumps({**SHOP, "disfluency_features": "FILLER"}))
    assert command_exit(cli, ["fdb_v3", "--src", str(source), "--out", str(tmp_path / "other")]) == 3
    assert capsys.readouterr().err.splitlines() == [
        f"ticktock: error: {folder / 'metadata.json'}: 'disfluency_features' must be a list of names (e.g. [\"FILLER\", "
        "\"PAUSE\"]), got 'FILLER'"]
    (folder / "metadata.json").write_text(json.dumps({**SHOP, "disfluency_features": ["FILLER", 3]}))
    with pytest.raises(ConvertError, match=r"metadata.json: 'disfluency_features' must be a list of names"):
        convert("fdb_v3", source, tmp_path / "other")
    (folder / "metadata.json").write_text(json.dumps({k: v for k, v in SHOP.items() if k != "disfluency_features"}))
    shop = next(s for s in convert("fdb_v3", source, tmp_path / "other", warn=quiet).sessions if "09" in s.session_id)
    assert shop.expected["behaviour"]["disfluencies"] == [] and "source_disfluencies" not in shop.provenance


def test_an_output_holding_another_corpus_or_being_the_source_is_refused(source, tmp_path, capsys):
    from ticktock.corpus.convert.__main__ import cli
    from ticktock.errors import RunFolderError, user_errors  # (output_folder.OutputFolderError is one)

    first = convert("fdb_v3", source, tmp_path / "out", warn=quiet)
    manifest = first.manifest.read_bytes()
    assert convert("fdb_v3", source, tmp_path / "out", warn=quiet).manifest.read_bytes() == manifest  # its own: again
    with pytest.raises(RunFolderError, match=r"out: already holds a corpus \(2 sessions in manifest.jsonl, made by "
                                             r"convert --limit None; here --limit 1\); choose another --out, or pass "
                                                r"--overwrite to replace it"):
        convert("fdb_v3", source, tmp_path / "out", limit=1)
    assert first.manifest.read_bytes() == manifest
    assert len(convert("fdb_v3", source, tmp_path / "out", limit=1, overwrite=True, warn=quiet).sessions) == 1
    (tmp_path / "link").symlink_to(source)
    with pytest.raises(RunFolderError, match=r"link: the output folder is the input \(--src .*v3\)"):
        convert("fdb_v3", source, tmp_path / "link", overwrite=True)
    with pytest.raises(SystemExit) as done, user_errors():  # as python -m ticktock.corpus.convert runs it
        cli(["fdb_v3", "--src", str(source), "--out", str(tmp_path / "out")])
    (line,) = capsys.readouterr().err.splitlines()
    assert done.value.code == 4
    assert line.startswith(f"ticktock: error: {tmp_path / 'out'}: already holds a corpus (1 session in manifest.jsonl")
    assert line.endswith("or pass --overwrite to replace it")


@pytest.mark.parametrize("argv, line", [
    (["--lead-s", "nan"], "argument --lead-s: expected a finite number from 0 to 60, got 'nan'"),
    (["--tail-s", "inf"], "argument --tail-s: expected a finite number > 0 and <= 600, got 'inf'"),
    (["--tail-s", "0"], "argument --tail-s: expected a finite number > 0 and <= 600, got '0'"),
    (["--limit", "0"], "argument --limit: expected a whole number from 1 to 10000000, got '0'"),
    (["--per-task", "-3"], "argument --per-task: expected a whole number from 1 to 10000000, got '-3'"),
])
def test_absurd_numbers_are_refused_before_any_work(argv, line, source, tmp_path, capsys):
    from ticktock.corpus.convert import __main__ as command

    with pytest.raises(SystemExit) as done:
        command.cli(["fdb_v3", "--src", str(source), "--out", str(tmp_path / "out"), *argv])
    assert done.value.code == 2 and capsys.readouterr().err.splitlines()[-1].endswith(f"error: {line}")
    assert not (tmp_path / "out").exists()
    with pytest.raises(ConvertError, match=r"--lead-s must be a finite number from 0 to 60 seconds, got nan"):
        convert("fdb_v3", source, tmp_path / "out", lead_s=float("nan"))


def command_exit(cli, argv) -> int:
    """The exit code of the converter's command line as a user runs it (``ticktock: error: ...`` on one line)."""
    from ticktock.errors import user_errors

    with pytest.raises(SystemExit) as done, user_errors():
        cli(argv)
    return done.value.code
