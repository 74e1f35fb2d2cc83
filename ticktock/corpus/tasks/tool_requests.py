"""Spoken tool-calling requests over the mock tool world (``ticktock.mock_tools``), before disfluencies.

A scenario function draws its parameters, runs the mock tools to resolve chained values (the flight id
booked is the one the search actually returned), and renders the scripted answer from the results only,
so a model can copy every value from the tool responses. ``{slot}`` in the request text marks the value
a user may self-correct ("to Paris, no, sorry, Rome").

Example::

    >>> import random
    >>> request = SCENARIOS["medium"]["flight_booking"](random.Random(0))
    >>> [c["function"] for c in request.calls]
    ['search_flights', 'book_flight']
    >>> request.calls[1]["args"]["flight_id"] == request.results[0]["flights"][0]["flight_id"]
    True
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from ticktock.corpus.knowledge import slug
from ticktock.mock_tools import APARTMENT_CITIES, CARDS, DAYS, FLIGHT_CITIES, execute

PASSENGERS = ("Maria Lopez", "James Carter", "Aiko Tanaka", "Omar Haddad", "Lena Fischer", "David Kim",
              "Sara Novak", "Peter Walsh", "Grace Obi", "Tom Becker")
DOC_TYPES = {"passport": "passport", "driver_license": "driver's license", "national_id": "national ID card"}
CURRENCY_NAMES = {"USD": "US dollars", "EUR": "euros", "GBP": "British pounds", "JPY": "Japanese yen",
                  "CAD": "Canadian dollars", "AUD": "Australian dollars", "CHF": "Swiss francs", "MXN": "Mexican pesos"}
BILL_NAMES = {"electricity": "electricity", "water": "water", "internet": "internet", "phone": "phone",
              "gas": "gas", "credit_card": "credit card"}
MODE_PHRASES = {"driving": "by car", "transit": "by public transit", "walking": "on foot", "cycling": "by bike"}
HOMES = ("12 Maple Street", "48 Oak Avenue", "7 Cedar Lane", "230 Pine Street", "91 Lake Drive")
WORKPLACES = ("Union Station", "the Central Library", "City Hospital", "the Riverside Mall", "400 Market Street",
              "the university campus", "Harbor Tech Park")
FILTER_PHRASES = {"pets_allowed": "places that allow pets", "parking": "places with parking",
                  "furnished": "furnished places", "laundry": "places with laundry"}
QUERIES = {"hiking boots": "hiking boots", "running shoes": "running shoes", "wireless headphones": "wireless headphones",
           "coffee maker": "a coffee maker", "backpack": "a backpack", "desk lamp": "a desk lamp", "yoga mat": "a yoga mat",
           "water bottle": "a water bottle"}  # query -> as said
NUMBER_WORDS = {1: "one", 2: "two", 3: "three", 4: "four"}
AMOUNTS = (50, 100, 150, 200, 250, 300, 500, 1000)


@dataclass(frozen=True)
class Slot:
    """A value the user may self-correct: the request says ``said``; a correction first says ``wrong_said``."""

    arg: str
    value: Any
    said: str
    wrong_value: Any
    wrong_said: str


@dataclass(frozen=True)
class ToolRequest:
    scenario: str
    params: tuple
    main: str  # a complete-sounding request
    detail: str  # a detail the user adds, often after a pause ("" for none)
    calls: tuple[dict, ...]
    results: tuple[dict, ...]
    answer: str
    slot: Slot | None = None

    @property
    def id(self) -> str:
        return f"v3/{self.scenario}/" + "/".join(slug(str(p)) for p in self.params)


class _Calls:
    """Runs calls through the mock world and keeps them in order."""

    def __init__(self):
        self.calls: list[dict] = []
        self.results: list[dict] = []

    def __call__(self, function: str, **args) -> dict:
        call = {"function": function, "args": args}
        result = execute(call)
        if "error" in result:
            raise ValueError(f"scenario call {call} failed: {result['error']}")
        self.calls.append(call)
        self.results.append(result)
        return result


def _other(rng: random.Random, options, value):
    return rng.choice([o for o in options if o != value])


def _digits(text: str) -> str:
    """Digits said one by one: ``_digits("48213") == "4 8 2 1 3"``."""
    return " ".join(text)


def _words(value: str) -> str:
    return value.replace("_", " ")


def _request(scenario, params, main, detail, run: _Calls, answer, slot=None) -> ToolRequest:
    return ToolRequest(scenario, tuple(params), main, detail, tuple(run.calls), tuple(run.results), answer, slot)


def _city_slot(rng, arg, city, cities) -> Slot:
    wrong = _other(rng, cities, city)
    return Slot(arg, city, city, wrong, wrong)


def _flight_answer(search: dict, flight: dict) -> str:
    return f"flight {flight['flight_id']} to {search['destination']} on {search['date']} at {flight['departure']}"


def _cheap_max_price(rng, city: str, bedrooms: int) -> int:
    cheapest = min(a["rent"] for a in execute({"function": "search_apartments", "args": {
        "city": city, "bedrooms": bedrooms, "max_price": 100_000}})["apartments"])
    return (cheapest // 250 + 1) * 250 + rng.choice((0, 250, 500))


def _product_max_price(rng, query: str) -> int:
    cheapest = min(p["price"] for p in execute({"function": "search_products", "args": {"query": query}})["products"])
    return int(cheapest // 10 + 1) * 10 + rng.choice((0, 10, 30))


# ------------------------------------------------------------------------------------------ easy


def flight_search(rng):
    city, day, run = rng.choice(FLIGHT_CITIES), rng.choice(DAYS), _Calls()
    found = run("search_flights", destination=city, date=day)
    flight = found["flights"][0]
    answer = f"I found {_flight_answer(found, flight)}, for {flight['price']} dollars."
    return _request("flight_search", (city, day), "Find me a flight to {slot}.", f"On {day}, please.", run, answer,
                    _city_slot(rng, "destination", city, FLIGHT_CITIES))


def identity_doc(rng):
    doc, run = rng.choice(sorted(DOC_TYPES)), _Calls()
    number = rng.choice("ABCDEFGHKLMNPRSTXY") + "".join(str(rng.randint(0, 9)) for _ in range(7))
    done = run("update_identity_doc", doc_type=doc, doc_number=number)
    wrong = _other(rng, sorted(DOC_TYPES), doc)
    slot = Slot("doc_type", doc, DOC_TYPES[doc], wrong, DOC_TYPES[wrong])
    answer = f"Done. Your {_words(done['doc_type'])} number is now {done['doc_number']}."
    return _request("identity_doc", (doc, number), "I need to update my {slot}.",
                    f"The new number is {' '.join(number)}.", run, answer, slot)


CARD_QUESTIONS = ("What benefits come with the {slot} card?", "I'm thinking about the {slot} card. What do I get with it?",
                  "Can you tell me the perks of the {slot} card?")
FILTER_REQUESTS = ("Can you update my apartment search?", "I want to change my search filters.",
                   "Let's narrow down the apartment search.")


def card_benefits(rng):
    card, phrasing, run = rng.choice(sorted(CARDS)), rng.randrange(len(CARD_QUESTIONS)), _Calls()
    info = run("get_card_benefits", card_type=card)
    fee = f"an annual fee of {info['annual_fee']} dollars" if info["annual_fee"] else "no annual fee"
    answer = f"The {info['card_type']} card gives you {info['benefits'][0]} and {info['benefits'][1]}, with {fee}."
    wrong = _other(rng, sorted(CARDS), card)
    return _request("card_benefits", (card, phrasing), CARD_QUESTIONS[phrasing], "", run, answer,
                    Slot("card_type", card, card, wrong, wrong))


def _exchange_answer(result: dict) -> str:
    return (f"{result['amount']} {result['from_currency']} is {result['converted_amount']} {result['to_currency']}, "
            f"at a rate of {result['rate']}.")


def exchange_rate(rng):
    source, target = rng.sample(sorted(CURRENCY_NAMES), 2)
    amount, run = rng.choice(AMOUNTS), _Calls()
    rate = run("get_exchange_rate", amount=amount, from_currency=source, to_currency=target)
    wrong = _other(rng, sorted(c for c in CURRENCY_NAMES if c != source), target)
    slot = Slot("to_currency", target, CURRENCY_NAMES[target], wrong, CURRENCY_NAMES[wrong])
    return _request("exchange_rate", (amount, source, target), "Can you check an exchange rate for me?",
                    f"How much is {amount} {CURRENCY_NAMES[source]} in {{slot}}?", run, _exchange_answer(rate), slot)


def autopay(rng):
    bill, account, run = rng.choice(sorted(BILL_NAMES)), rng.choice(("checking", "savings", "business")), _Calls()
    done = run("modify_autopay", bill_type=bill, source_account=account)
    wrong = _other(rng, ("checking", "savings", "business"), account)
    answer = (f"Done. Your {_words(done['bill_type'])} bill is now paid from your {done['source_account']} account, "
              f"starting {done['next_payment']}.")
    return _request("autopay", (bill, account), "I want to change my autopay.",
                    f"Pay the {BILL_NAMES[bill]} bill from my {{slot}} account.", run, answer,
                    Slot("source_account", account, account, wrong, wrong))


def apartment_search(rng):
    city, beds = rng.choice(sorted(APARTMENT_CITIES)), rng.randint(1, 3)
    budget, run = _cheap_max_price(rng, city, beds), _Calls()
    found = run("search_apartments", city=city, bedrooms=beds, max_price=budget)
    flat = found["apartments"][0]
    answer = f"I found a {found['bedrooms']} bedroom apartment in {found['city']} at {flat['address']} for {flat['rent']} dollars a month."
    return _request("apartment_search", (city, beds, budget), f"Find me a {NUMBER_WORDS[beds]} bedroom apartment in {{slot}}.",
                    f"Under {budget} dollars a month.", run, answer, _city_slot(rng, "city", city, sorted(APARTMENT_CITIES)))


def _minutes_by(trip: dict) -> str:
    """ "about 24 minutes by transit" / "about 11 minutes of cycling" """
    joiner = "by" if trip["mode"] == "transit" else "of"
    return f"about {trip['minutes']} minutes {joiner} {trip['mode']}"


def _commute_answer(result: dict) -> str:
    return f"The trip to {result['destination_address']} is {result['distance_km']} kilometers, {_minutes_by(result)}."


def commute(rng):
    home, work, mode, run = rng.choice(HOMES), rng.choice(WORKPLACES), rng.choice(sorted(MODE_PHRASES)), _Calls()
    trip = run("calculate_commute", origin_address=home, destination_address=work, mode=mode)
    wrong = _other(rng, sorted(MODE_PHRASES), mode)
    slot = Slot("mode", mode, MODE_PHRASES[mode], wrong, MODE_PHRASES[wrong])
    return _request("commute", (home, work, mode), f"How long is the commute from {home} to {work}?",
                    "{slot}.", run, _commute_answer(trip), slot)


def search_filter(rng):
    name, phrasing, run = rng.choice(sorted(FILTER_PHRASES)), rng.randrange(len(FILTER_REQUESTS)), _Calls()
    done = run("update_search_filter", filter_name=name, value=True)
    answer = f"Done. The {_words(done['filter_name'])} filter is on, and {done['matching_listings']} listings match."
    return _request("search_filter", (name, phrasing), FILTER_REQUESTS[phrasing],
                    f"Only show me {FILTER_PHRASES[name]}.", run, answer)


def _order_answer(order: dict) -> str:
    if order["status"] == "delivered":
        return f"Your order {order['order_id']} was delivered by {order['carrier']} on {order['estimated_delivery']}."
    return (f"Your order {order['order_id']} is {order['status']} with {order['carrier']} and should arrive on "
            f"{order['estimated_delivery']}.")


def order_tracking(rng):
    order, run = str(rng.randint(10000, 99999)), _Calls()
    found = run("track_order", order_id=order)
    return _request("order_tracking", (order,), "Where is my order?", f"The order number is {_digits(order)}.", run,
                    _order_answer(found))


def _query_slot(rng, query: str) -> Slot:
    wrong = _other(rng, sorted(QUERIES), query)
    return Slot("query", query, QUERIES[query], wrong, QUERIES[wrong])


def product_search(rng):
    query, run = rng.choice(sorted(QUERIES)), _Calls()
    budget = _product_max_price(rng, query)
    found = run("search_products", query=query, max_price=budget)
    item = found["products"][0]
    return _request("product_search", (query, budget), "I'm looking for {slot}.", f"Something under {budget} dollars.",
                    run, f"I found the {item['name']} for {item['price']} dollars.", _query_slot(rng, query))


# ------------------------------------------------------------------------------------------ medium


def flight_booking(rng):
    city, day, name, run = rng.choice(FLIGHT_CITIES), rng.choice(DAYS), rng.choice(PASSENGERS), _Calls()
    found = run("search_flights", destination=city, date=day)
    booked = run("book_flight", passenger_name=name, flight_id=found["flights"][0]["flight_id"])
    answer = (f"{booked['passenger_name']} is booked on {_flight_answer(found, found['flights'][0])}. "
              f"The booking number is {booked['booking_id']}.")
    return _request("flight_booking", (city, day, name), f"I need a flight to {{slot}} on {day}.",
                    f"Please book the first one for {name}.", run, answer,
                    _city_slot(rng, "destination", city, FLIGHT_CITIES))


def product_cart(rng):
    query, count, run = rng.choice(sorted(QUERIES)), rng.randint(1, 4), _Calls()
    budget = _product_max_price(rng, query)
    found = run("search_products", query=query, max_price=budget)
    added = run("add_to_cart", product_id=found["products"][0]["product_id"], quantity=count)
    answer = f"I added {added['quantity']} of the {added['name']} to your cart, for a total of {added['cart_total']} dollars."
    return _request("product_cart", (query, budget, count), f"Find me {{slot}} under {budget} dollars.",
                    f"And add {NUMBER_WORDS[count]} to my cart.", run, answer, _query_slot(rng, query))


def _apartment_commute_request(rng, run: _Calls, scenario: str, main_prefix: str, extra: tuple = ()):
    city, beds = rng.choice(sorted(APARTMENT_CITIES)), rng.randint(1, 3)
    work, mode = rng.choice(WORKPLACES), rng.choice(sorted(MODE_PHRASES))
    budget = _cheap_max_price(rng, city, beds)
    found = run("search_apartments", city=city, bedrooms=beds, max_price=budget)
    flat = found["apartments"][0]
    trip = run("calculate_commute", origin_address=flat["address"], destination_address=work, mode=mode)
    answer = (f"There is one at {flat['address']} for {flat['rent']} dollars a month, and the commute to "
              f"{trip['destination_address']} takes {_minutes_by(trip)}.")
    main = f"{main_prefix}a {NUMBER_WORDS[beds]} bedroom apartment in {{slot}} under {budget} dollars."
    detail = f"How long would the commute be to {work} {MODE_PHRASES[mode]}?"
    return _request(scenario, (*extra, city, beds, budget, work, mode), main, detail, run, answer,
                    _city_slot(rng, "city", city, sorted(APARTMENT_CITIES)))


def apartment_commute(rng):
    return _apartment_commute_request(rng, _Calls(), "apartment_commute", "Find me ")


def card_and_exchange(rng):
    card, target, amount, run = rng.choice(sorted(CARDS)), rng.choice(("EUR", "GBP", "JPY", "MXN")), rng.choice(AMOUNTS), _Calls()
    info = run("get_card_benefits", card_type=card)
    rate = run("get_exchange_rate", amount=amount, from_currency="USD", to_currency=target)
    answer = f"The {info['card_type']} card gives you {info['benefits'][0]} and {info['benefits'][1]}. And {_exchange_answer(rate)}"
    wrong = _other(rng, sorted(CARDS), card)
    return _request("card_and_exchange", (card, amount, target), "What benefits come with the {slot} card?",
                    f"And how much is {amount} US dollars in {CURRENCY_NAMES[target]}?", run, answer,
                    Slot("card_type", card, card, wrong, wrong))


def filter_then_search(rng):
    name, city, beds, run = rng.choice(sorted(FILTER_PHRASES)), rng.choice(sorted(APARTMENT_CITIES)), rng.randint(1, 3), _Calls()
    budget = _cheap_max_price(rng, city, beds)
    run("update_search_filter", filter_name=name, value=True)
    found = run("search_apartments", city=city, bedrooms=beds, max_price=budget)
    flat = found["apartments"][0]
    answer = f"Filter updated. I found one in {found['city']} at {flat['address']} for {flat['rent']} dollars a month."
    return _request("filter_then_search", (name, city, beds, budget), f"Only show me {FILTER_PHRASES[name]}.",
                    f"Then find a {NUMBER_WORDS[beds]} bedroom apartment in {{slot}} under {budget} dollars.", run, answer,
                    _city_slot(rng, "city", city, sorted(APARTMENT_CITIES)))


def order_and_product(rng):
    order, query, run = str(rng.randint(10000, 99999)), rng.choice(sorted(QUERIES)), _Calls()
    budget = _product_max_price(rng, query)
    status = run("track_order", order_id=order)
    found = run("search_products", query=query, max_price=budget)
    item = found["products"][0]
    answer = f"{_order_answer(status)} I also found the {item['name']} for {item['price']} dollars."
    return _request("order_and_product", (order, query, budget), f"Where is my order {_digits(order)}?",
                    f"Also, I need {QUERIES[query]} under {budget} dollars.", run, answer)


# ------------------------------------------------------------------------------------------ hard


def trip_with_passport(rng):
    city, day, name, run = rng.choice(FLIGHT_CITIES), rng.choice(DAYS), rng.choice(PASSENGERS), _Calls()
    number = rng.choice("ABCDEFGHKLMNPRSTXY") + "".join(str(rng.randint(0, 9)) for _ in range(7))
    found = run("search_flights", destination=city, date=day)
    booked = run("book_flight", passenger_name=name, flight_id=found["flights"][0]["flight_id"])
    doc = run("update_identity_doc", doc_type="passport", doc_number=number)
    answer = (f"{booked['passenger_name']} is booked on {_flight_answer(found, found['flights'][0])}, booking "
              f"{booked['booking_id']}, and the passport number is now {doc['doc_number']}.")
    return _request("trip_with_passport", (city, day, name, number), f"Book me the first flight to {{slot}} on {day}, for {name}.",
                    f"Oh, and update my passport number. It's {' '.join(number)}.", run, answer,
                    _city_slot(rng, "destination", city, FLIGHT_CITIES))


def filtered_apartment_commute(rng):
    run = _Calls()
    run("update_search_filter", filter_name="parking", value=True)
    return _apartment_commute_request(rng, run, "filtered_apartment_commute", "Turn on the parking filter and find me ",
                                      ("parking",))


def order_search_cart(rng):
    order, query, count, run = str(rng.randint(10000, 99999)), rng.choice(sorted(QUERIES)), rng.randint(1, 3), _Calls()
    budget = _product_max_price(rng, query)
    status = run("track_order", order_id=order)
    found = run("search_products", query=query, max_price=budget)
    added = run("add_to_cart", product_id=found["products"][0]["product_id"], quantity=count)
    answer = f"{_order_answer(status)} I added {added['quantity']} of the {added['name']} to your cart, total {added['cart_total']} dollars."
    return _request("order_search_cart", (order, query, budget, count), f"Check on my order {_digits(order)}.",
                    f"And find me {QUERIES[query]} under {budget} dollars, and add {NUMBER_WORDS[count]} to my cart.", run, answer)


SCENARIOS = {
    "easy": {f.__name__: f for f in (flight_search, identity_doc, card_benefits, exchange_rate, autopay,
                                     apartment_search, commute, search_filter, order_tracking, product_search)},
    "medium": {f.__name__: f for f in (flight_booking, product_cart, apartment_commute, card_and_exchange,
                                       filter_then_search, order_and_product)},
    "hard": {f.__name__: f for f in (trip_with_passport, filtered_apartment_commute, order_search_cart)},
}
