"""Spoken tool-calling requests over the mock tool world (``ticktock.world.mock_tools``), before disfluencies.

A scenario function draws its parameters, runs the mock tools to resolve chained values (the flight id
booked is the one the search actually returned), and renders the scripted answer from the results only,
so a model can copy every value from the tool responses; the answer's variants are other phrasings of
it with exactly the same values (and "Done." answers stay acknowledgements). ``{slot}`` in the request text marks the value
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
from typing import Any, Sequence

from ticktock.corpus.knowledge import slug
from ticktock.corpus.script import variants_of
from ticktock.world.mock_tools import APARTMENT_CITIES, CARDS, DAYS, FLIGHT_CITIES, execute

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
    variants: tuple[str, ...] = ()  # other phrasings of the answer, with the same values

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


def _request(scenario, params, main, detail, run: _Calls, answers: Sequence[str], slot=None) -> ToolRequest:
    """``answers``: the scripted answer, then its variants."""
    answer, *variants = answers
    return ToolRequest(scenario, tuple(params), main, detail, tuple(run.calls), tuple(run.results), answer, slot,
                       variants_of(answer, variants))


def _joined(*parts: Sequence[str]) -> tuple[str, ...]:
    """Phrasings of a two-part answer: the k-th phrasings of every part, joined by spaces."""
    return tuple(" ".join(texts) for texts in zip(*parts))


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:]


def _city_slot(rng, arg, city, cities) -> Slot:
    wrong = _other(rng, cities, city)
    return Slot(arg, city, city, wrong, wrong)


def _flight_answer(search: dict, flight: dict) -> tuple[str, str, str, str]:
    """Phrasings of "flight EI691 to Chicago on Sunday at 06:25" (the first is the scripted one)."""
    fid, city, day, time = flight["flight_id"], search["destination"], search["date"], flight["departure"]
    return (f"flight {fid} to {city} on {day} at {time}", f"flight {fid} to {city}, leaving {day} at {time}",
            f"flight {fid} to {city}, departing at {time} on {day}", f"flight {fid} to {city} on {day} at {time}")


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
    flight, price = found["flights"][0], found["flights"][0]["price"]
    f = _flight_answer(found, flight)
    answers = (f"I found {f[0]}, for {price} dollars.", f"There is {f[1]}, for {price} dollars.",
               f"You could take {f[2]}, for {price} dollars.", f"The first option is {f[3]}, at {price} dollars.")
    return _request("flight_search", (city, day), "Find me a flight to {slot}.", f"On {day}, please.", run, answers,
                    _city_slot(rng, "destination", city, FLIGHT_CITIES))


def identity_doc(rng):
    doc, run = rng.choice(sorted(DOC_TYPES)), _Calls()
    number = rng.choice("ABCDEFGHKLMNPRSTXY") + "".join(str(rng.randint(0, 9)) for _ in range(7))
    done = run("update_identity_doc", doc_type=doc, doc_number=number)
    wrong = _other(rng, sorted(DOC_TYPES), doc)
    slot = Slot("doc_type", doc, DOC_TYPES[doc], wrong, DOC_TYPES[wrong])
    kind, new = _words(done["doc_type"]), done["doc_number"]
    answers = (f"Done. Your {kind} number is now {new}.", f"All set. Your {kind} number is now {new}.",
               f"Okay, I changed your {kind} number to {new}.", f"Done. The new {kind} number is {new}.")
    return _request("identity_doc", (doc, number), "I need to update my {slot}.",
                    f"The new number is {' '.join(number)}.", run, answers, slot)


CARD_QUESTIONS = ("What benefits come with the {slot} card?", "I'm thinking about the {slot} card. What do I get with it?",
                  "Can you tell me the perks of the {slot} card?")
FILTER_REQUESTS = ("Can you update my apartment search?", "I want to change my search filters.",
                   "Let's narrow down the apartment search.")


def _card_answers(info: dict) -> tuple[str, str, str, str]:
    """Phrasings of "The gold card gives you A and B" (no final period)."""
    card, (first, second) = info["card_type"], info["benefits"][:2]
    return (f"The {card} card gives you {first} and {second}", f"With the {card} card you get {first} and {second}",
            f"The {card} card comes with {first} and {second}", f"The {card} card offers {first} and {second}")


def card_benefits(rng):
    card, phrasing, run = rng.choice(sorted(CARDS)), rng.randrange(len(CARD_QUESTIONS)), _Calls()
    info = run("get_card_benefits", card_type=card)
    fee = f"an annual fee of {info['annual_fee']} dollars" if info["annual_fee"] else "no annual fee"
    c = _card_answers(info)
    answers = (f"{c[0]}, with {fee}.", f"{c[1]}, and {fee}.", f"{c[2]}. It has {fee}.", f"{c[3]}, with {fee}.")
    wrong = _other(rng, sorted(CARDS), card)
    return _request("card_benefits", (card, phrasing), CARD_QUESTIONS[phrasing], "", run, answers,
                    Slot("card_type", card, card, wrong, wrong))


def _exchange_answer(result: dict) -> tuple[str, str, str, str]:
    """Phrasings of "100 USD is 92 EUR, at a rate of 0.92." """
    given, to = f"{result['amount']} {result['from_currency']}", f"{result['converted_amount']} {result['to_currency']}"
    rate = result["rate"]
    return (f"{given} is {to}, at a rate of {rate}.", f"{given} comes to {to}, at a rate of {rate}.",
            f"At a rate of {rate}, {given} is {to}.", f"That's {to} for {given}, at a rate of {rate}.")


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
    kind, source, first = _words(done["bill_type"]), done["source_account"], done["next_payment"]
    answers = (f"Done. Your {kind} bill is now paid from your {source} account, starting {first}.",
               f"All set. The {kind} bill now comes out of your {source} account, starting {first}.",
               f"Done. From {first}, your {kind} bill is paid from your {source} account.",
               f"Okay, your {kind} bill will be paid from your {source} account, starting {first}.")
    return _request("autopay", (bill, account), "I want to change my autopay.",
                    f"Pay the {BILL_NAMES[bill]} bill from my {{slot}} account.", run, answers,
                    Slot("source_account", account, account, wrong, wrong))


def apartment_search(rng):
    city, beds = rng.choice(sorted(APARTMENT_CITIES)), rng.randint(1, 3)
    budget, run = _cheap_max_price(rng, city, beds), _Calls()
    found = run("search_apartments", city=city, bedrooms=beds, max_price=budget)
    flat = found["apartments"][0]
    rooms, town, address, rent = found["bedrooms"], found["city"], flat["address"], flat["rent"]
    answers = (f"I found a {rooms} bedroom apartment in {town} at {address} for {rent} dollars a month.",
               f"There is a {rooms} bedroom apartment in {town} at {address}, for {rent} dollars a month.",
               f"At {address} in {town} there is a {rooms} bedroom apartment for {rent} dollars a month.",
               f"I found one: a {rooms} bedroom place at {address} in {town}, {rent} dollars a month.")
    return _request("apartment_search", (city, beds, budget), f"Find me a {NUMBER_WORDS[beds]} bedroom apartment in {{slot}}.",
                    f"Under {budget} dollars a month.", run, answers, _city_slot(rng, "city", city, sorted(APARTMENT_CITIES)))


def _minutes_by(trip: dict) -> str:
    """ "about 24 minutes by transit" / "about 11 minutes of cycling" """
    joiner = "by" if trip["mode"] == "transit" else "of"
    return f"about {trip['minutes']} minutes {joiner} {trip['mode']}"


def _commute_answer(result: dict) -> tuple[str, str, str, str]:
    to, km, time = result["destination_address"], result["distance_km"], _minutes_by(result)
    return (f"The trip to {to} is {km} kilometers, {time}.", f"It's {km} kilometers to {to}, {time}.",
            f"Getting to {to} takes {time}, over {km} kilometers.", f"The commute to {to} is {km} kilometers, {time}.")


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
    kind, matches = _words(done["filter_name"]), done["matching_listings"]
    answers = (f"Done. The {kind} filter is on, and {matches} listings match.",
               f"All set. With the {kind} filter on, {matches} listings match.",
               f"Okay, the {kind} filter is now on. {matches} listings match.",
               f"Done. {matches} listings match now that the {kind} filter is on.")
    return _request("search_filter", (name, phrasing), FILTER_REQUESTS[phrasing],
                    f"Only show me {FILTER_PHRASES[name]}.", run, answers)


def _order_answer(order: dict) -> tuple[str, str, str, str]:
    number, carrier, day, status = order["order_id"], order["carrier"], order["estimated_delivery"], order["status"]
    if status == "delivered":
        return (f"Your order {number} was delivered by {carrier} on {day}.", f"Order {number} was delivered by {carrier} on {day}.",
                f"{carrier} delivered your order {number} on {day}.", f"Your order {number} was delivered on {day}, by {carrier}.")
    return (f"Your order {number} is {status} with {carrier} and should arrive on {day}.",
            f"Order {number} is {status} with {carrier}, and it should arrive on {day}.",
            f"Your order {number} is {status} with {carrier}. Expect it on {day}.",
            f"{carrier} has your order {number}, which is {status} and due on {day}.")


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
    name, price = found["products"][0]["name"], found["products"][0]["price"]
    answers = (f"I found the {name} for {price} dollars.", f"The {name} would cost {price} dollars.",
               f"One option is the {name}, at {price} dollars.", f"You could get the {name} for {price} dollars.")
    return _request("product_search", (query, budget), "I'm looking for {slot}.", f"Something under {budget} dollars.",
                    run, answers, _query_slot(rng, query))


# ------------------------------------------------------------------------------------------ medium


def flight_booking(rng):
    city, day, name, run = rng.choice(FLIGHT_CITIES), rng.choice(DAYS), rng.choice(PASSENGERS), _Calls()
    found = run("search_flights", destination=city, date=day)
    booked = run("book_flight", passenger_name=name, flight_id=found["flights"][0]["flight_id"])
    who, booking, f = booked["passenger_name"], booked["booking_id"], _flight_answer(found, found["flights"][0])
    answers = (f"{who} is booked on {f[0]}. The booking number is {booking}.",
               f"I booked {who} on {f[1]}. The booking number is {booking}.",
               f"{who} is confirmed on {f[2]}, with booking number {booking}.",
               f"Done. {who} has a seat on {f[3]}, booking number {booking}.")
    return _request("flight_booking", (city, day, name), f"I need a flight to {{slot}} on {day}.",
                    f"Please book the first one for {name}.", run, answers,
                    _city_slot(rng, "destination", city, FLIGHT_CITIES))


def product_cart(rng):
    query, count, run = rng.choice(sorted(QUERIES)), rng.randint(1, 4), _Calls()
    budget = _product_max_price(rng, query)
    found = run("search_products", query=query, max_price=budget)
    added = run("add_to_cart", product_id=found["products"][0]["product_id"], quantity=count)
    many, name, total = added["quantity"], added["name"], added["cart_total"]
    answers = (f"I added {many} of the {name} to your cart, for a total of {total} dollars.",
               f"I added {many} of the {name}, so your cart total is now {total} dollars.",
               f"Okay, {many} of the {name} added to your cart. The total is {total} dollars.",
               f"Added {many} of the {name} to your cart, {total} dollars in total.")
    return _request("product_cart", (query, budget, count), f"Find me {{slot}} under {budget} dollars.",
                    f"And add {NUMBER_WORDS[count]} to my cart.", run, answers, _query_slot(rng, query))


def _apartment_commute_request(rng, run: _Calls, scenario: str, main_prefix: str, extra: tuple = ()):
    city, beds = rng.choice(sorted(APARTMENT_CITIES)), rng.randint(1, 3)
    work, mode = rng.choice(WORKPLACES), rng.choice(sorted(MODE_PHRASES))
    budget = _cheap_max_price(rng, city, beds)
    found = run("search_apartments", city=city, bedrooms=beds, max_price=budget)
    flat = found["apartments"][0]
    trip = run("calculate_commute", origin_address=flat["address"], destination_address=work, mode=mode)
    address, rent, to, time = flat["address"], flat["rent"], trip["destination_address"], _minutes_by(trip)
    answers = (f"There is one at {address} for {rent} dollars a month, and the commute to {to} takes {time}.",
               f"I found one at {address} for {rent} dollars a month. The commute to {to} takes {time}.",
               f"One is at {address}, for {rent} dollars a month, and getting to {to} takes {time}.",
               f"{address} is available for {rent} dollars a month, and the commute to {to} takes {time}.")
    main = f"{main_prefix}a {NUMBER_WORDS[beds]} bedroom apartment in {{slot}} under {budget} dollars."
    detail = f"How long would the commute be to {work} {MODE_PHRASES[mode]}?"
    return _request(scenario, (*extra, city, beds, budget, work, mode), main, detail, run, answers,
                    _city_slot(rng, "city", city, sorted(APARTMENT_CITIES)))


def apartment_commute(rng):
    return _apartment_commute_request(rng, _Calls(), "apartment_commute", "Find me ")


def card_and_exchange(rng):
    card, target, amount, run = rng.choice(sorted(CARDS)), rng.choice(("EUR", "GBP", "JPY", "MXN")), rng.choice(AMOUNTS), _Calls()
    info = run("get_card_benefits", card_type=card)
    rate = run("get_exchange_rate", amount=amount, from_currency="USD", to_currency=target)
    answers = _joined([f"{text}." for text in _card_answers(info)],
                      [f"And {_lower_first(text)}" for text in _exchange_answer(rate)])
    wrong = _other(rng, sorted(CARDS), card)
    return _request("card_and_exchange", (card, amount, target), "What benefits come with the {slot} card?",
                    f"And how much is {amount} US dollars in {CURRENCY_NAMES[target]}?", run, answers,
                    Slot("card_type", card, card, wrong, wrong))


def filter_then_search(rng):
    name, city, beds, run = rng.choice(sorted(FILTER_PHRASES)), rng.choice(sorted(APARTMENT_CITIES)), rng.randint(1, 3), _Calls()
    budget = _cheap_max_price(rng, city, beds)
    run("update_search_filter", filter_name=name, value=True)
    found = run("search_apartments", city=city, bedrooms=beds, max_price=budget)
    flat = found["apartments"][0]
    town, address, rent = found["city"], flat["address"], flat["rent"]
    answers = (f"Filter updated. I found one in {town} at {address} for {rent} dollars a month.",
               f"I updated the filter and found one in {town} at {address}, for {rent} dollars a month.",
               f"Filter updated. There is one in {town} at {address} for {rent} dollars a month.",
               f"The filter is updated, and there is one at {address} in {town} for {rent} dollars a month.")
    return _request("filter_then_search", (name, city, beds, budget), f"Only show me {FILTER_PHRASES[name]}.",
                    f"Then find a {NUMBER_WORDS[beds]} bedroom apartment in {{slot}} under {budget} dollars.", run, answers,
                    _city_slot(rng, "city", city, sorted(APARTMENT_CITIES)))


def order_and_product(rng):
    order, query, run = str(rng.randint(10000, 99999)), rng.choice(sorted(QUERIES)), _Calls()
    budget = _product_max_price(rng, query)
    status = run("track_order", order_id=order)
    found = run("search_products", query=query, max_price=budget)
    name, price = found["products"][0]["name"], found["products"][0]["price"]
    answers = _joined(_order_answer(status), (
        f"I also found the {name} for {price} dollars.", f"I also found the {name}, at {price} dollars.",
        f"And the {name} would cost {price} dollars.", f"I found the {name} too, for {price} dollars."))
    return _request("order_and_product", (order, query, budget), f"Where is my order {_digits(order)}?",
                    f"Also, I need {QUERIES[query]} under {budget} dollars.", run, answers)


# ------------------------------------------------------------------------------------------ hard


def trip_with_passport(rng):
    city, day, name, run = rng.choice(FLIGHT_CITIES), rng.choice(DAYS), rng.choice(PASSENGERS), _Calls()
    number = rng.choice("ABCDEFGHKLMNPRSTXY") + "".join(str(rng.randint(0, 9)) for _ in range(7))
    found = run("search_flights", destination=city, date=day)
    booked = run("book_flight", passenger_name=name, flight_id=found["flights"][0]["flight_id"])
    doc = run("update_identity_doc", doc_type="passport", doc_number=number)
    who, booking, passport = booked["passenger_name"], booked["booking_id"], doc["doc_number"]
    f = _flight_answer(found, found["flights"][0])
    answers = (f"{who} is booked on {f[0]}, booking {booking}, and the passport number is now {passport}.",
               f"I booked {who} on {f[1]}, booking {booking}, and changed the passport number to {passport}.",
               f"{who} is on {f[2]}, with booking {booking}. The passport number is now {passport}.",
               f"Done. {who} is booked on {f[3]}, booking {booking}, and the new passport number is {passport}.")
    return _request("trip_with_passport", (city, day, name, number), f"Book me the first flight to {{slot}} on {day}, for {name}.",
                    f"Oh, and update my passport number. It's {' '.join(number)}.", run, answers,
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
    many, name, total = added["quantity"], added["name"], added["cart_total"]
    answers = _joined(_order_answer(status), (
        f"I added {many} of the {name} to your cart, total {total} dollars.",
        f"I also added {many} of the {name} to your cart, total {total} dollars.",
        f"And I added {many} of the {name}, for a cart total of {total} dollars.",
        f"Also added {many} of the {name} to your cart, total {total} dollars."))
    return _request("order_search_cart", (order, query, budget, count), f"Check on my order {_digits(order)}.",
                    f"And find me {QUERIES[query]} under {budget} dollars, and add {NUMBER_WORDS[count]} to my cart.", run, answers)


SCENARIOS = {
    "easy": {f.__name__: f for f in (flight_search, identity_doc, card_benefits, exchange_rate, autopay,
                                     apartment_search, commute, search_filter, order_tracking, product_search)},
    "medium": {f.__name__: f for f in (flight_booking, product_cart, apartment_commute, card_and_exchange,
                                       filter_then_search, order_and_product)},
    "hard": {f.__name__: f for f in (trip_with_passport, filtered_apartment_commute, order_search_cart)},
}
