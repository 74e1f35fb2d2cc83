"""The 12 mock tools: hand-made calls, bad arguments, determinism and result size."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from ticktock.mock_tools import TOOL_SCHEMAS, MockToolExecutor, execute, respond_text


def call(function: str, **args) -> dict:
    return execute({"function": function, "args": args})


GOOD_CALLS = [
    ("search_flights", {"destination": "Tokyo", "date": "Friday"}),
    ("book_flight", {"passenger_name": "Ana Silva", "flight_id": "KE695"}),
    ("update_identity_doc", {"doc_type": "passport", "doc_number": "K5521903"}),
    ("get_card_benefits", {"card_type": "gold"}),
    ("get_exchange_rate", {"amount": 200, "from_currency": "USD", "to_currency": "EUR"}),
    ("modify_autopay", {"bill_type": "electricity", "source_account": "savings"}),
    ("search_apartments", {"city": "Denver", "bedrooms": 2, "max_price": 3000}),
    ("calculate_commute", {"origin_address": "12 Maple Street", "destination_address": "Union Station", "mode": "transit"}),
    ("update_search_filter", {"filter_name": "pets_allowed", "value": True}),
    ("track_order", {"order_id": "48213"}),
    ("search_products", {"query": "hiking boots", "max_price": 100}),
    ("add_to_cart", {"product_id": "P1042", "quantity": 2}),
]


def test_schemas_cover_the_twelve_tools():
    assert [s["name"] for s in TOOL_SCHEMAS] == [name for name, _ in GOOD_CALLS]
    for schema in TOOL_SCHEMAS:
        assert schema["description"] and schema["parameters"]["type"] == "object"
        assert set(schema["parameters"]["required"]) <= set(schema["parameters"]["properties"])


def test_each_tool_answers_a_good_call_with_a_small_deterministic_result():
    executor = MockToolExecutor()
    for name, args in GOOD_CALLS:
        result = call(name, **args)
        assert "error" not in result, (name, result)
        text = executor.respond({"function": name, "args": args})
        assert text == json.dumps(result, sort_keys=True, separators=(", ", ": "))
        assert len(text.split()) <= 40, (name, text)
        assert executor.respond({"function": name, "args": dict(args)}) == text


def test_concrete_results():
    flights = call("search_flights", destination="tokyo", date="friday")
    assert flights["destination"] == "Tokyo" and flights["date"] == "Friday"
    assert [f["flight_id"] for f in flights["flights"]] == ["KE695", "QF553"]
    booked = call("book_flight", passenger_name="Ana Silva", flight_id="ke695")
    assert booked["flight_id"] == "KE695" and booked["status"] == "confirmed"
    rate = call("get_exchange_rate", amount="200", from_currency="usd", to_currency="EUR")
    assert rate == {"amount": 200, "converted_amount": 184, "from_currency": "USD", "rate": 0.92, "to_currency": "EUR"}
    cart = call("add_to_cart", product_id="P1042", quantity="3")
    assert cart["cart_total"] == 269.97 and cart["name"] == "TrailMax hiking boots"
    assert call("search_products", query="hiking boots", max_price=100)["products"][0]["product_id"] == "P1042"
    assert call("search_flights", destination="Atlantis", date="Friday")["flights"] == []
    assert call("update_identity_doc", doc_type="Driver's License", doc_number="d 441 7203")["doc_number"] == "D4417203"
    assert call("update_search_filter", filter_name="max_price", value="2500")["value"] == 2500


def test_bad_calls_give_errors_not_exceptions():
    assert execute({"function": "fly_me_to_the_moon", "args": {}}) == {"error": "unknown tool 'fly_me_to_the_moon'"}
    assert "invalid call" in execute({"name": "track_order"})["error"]
    assert "invalid call" in execute("track_order")["error"]
    assert "args must be an object" in execute({"function": "track_order", "args": [1]})["error"]
    assert call("book_flight", passenger_name="Ana")["error"] == "book_flight: missing argument 'flight_id'"
    assert "unexpected argument 'seat'" in call("track_order", order_id="48213", seat="1A")["error"]
    assert "unknown flight_id" in call("book_flight", passenger_name="Ana", flight_id="ZZ999")["error"]
    assert "must be one of" in call("get_card_benefits", card_type="diamond")["error"]
    assert "whole number" in call("search_apartments", city="Denver", bedrooms=2.5, max_price=2000)["error"]
    assert "must be a number" in call("search_apartments", city="Denver", bedrooms=2, max_price="cheap")["error"]
    assert "quantity must be 1-10" in call("add_to_cart", product_id="P1042", quantity=0)["error"]
    assert "unknown product_id" in call("add_to_cart", product_id="P0000", quantity=1)["error"]
    assert "unknown order_id" in call("track_order", order_id="abc")["error"]
    assert "non-empty string" in call("search_flights", destination="", date="Friday")["error"]
    assert "must be an integer" in call("add_to_cart", product_id="P1042", quantity=True)["error"]
    assert "positive" in call("get_exchange_rate", amount=-5, from_currency="USD", to_currency="EUR")["error"]


values = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=12),
                   st.lists(st.integers(), max_size=2), st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))


@settings(max_examples=300, deadline=None)
@given(name=st.sampled_from([n for n, _ in GOOD_CALLS] + ["nope"]),
       args=st.dictionaries(st.sampled_from(["destination", "date", "flight_id", "passenger_name", "amount", "bedrooms",
                                              "max_price", "query", "quantity", "product_id", "order_id", "value",
                                              "filter_name", "mode", "city", "x"]), values, max_size=4))
def test_execute_never_raises(name, args):
    result = execute({"function": name, "args": args})
    respond_text(result)
    assert isinstance(result, dict)
