"""The 12 Full-Duplex-Bench v3 mock tools over a small, fixed, deterministic world.

Every tool is a pure function of its arguments: the same call always gives the same result, in any
process. Values that look random (flight numbers, rents, commute times) come from a stable hash of the
arguments. Results are small (at most about 40 words of JSON) because they are injected into a small
model's context. Unknown tools and bad arguments give an ``{"error": ...}`` result, never an exception.

Calls use the canonical FDB v3 form ``{"function": name, "args": {...}}``. The tools accept every call the
official FDB v3 agent tools accept (their signatures in the benchmark's ``v3/`` agent; where they take a
string, any string):

* defaults where the official signatures have them: ``book_flight`` needs only ``passenger_name``
  (``flight_id`` is optional), ``add_to_cart.quantity`` is 1, ``calculate_commute.mode`` "driving",
  ``search_products.max_price`` none;
* names are free strings, normalised rather than checked against a list: lower case, apostrophes dropped,
  spaces and hyphens read as underscores ("Driver's License" -> "driver_license", "ID card" -> "id_card"),
  common synonyms mapped ("public transit" -> "transit", "euros" -> "EUR", "pets" -> "pets_allowed");
* order ids are letters and digits ("48213", "BOB12"; a spelled-out "B-O-B-1-2" is "BOB12");
* values outside the built-in world get stable hash-derived answers: the flights and apartments of any
  city, the benefits of any card, the rate of any currency;
* ids in TickTock's own formats must exist in its world (a product "P" + digits in the catalogue, a flight
  of one of its airlines + 3 digits that ``search_flights`` returns for one of its cities); ids in other
  formats (another shop's "PROD1", another airline's "FL123", the 4-digit flights of other cities) are
  accepted as they are;
* the released expected calls' own shapes: ``search_apartments`` without some of its arguments and with
  ``pets_allowed``, ``search_products`` with a ``category``, a number or boolean filter value.

Integer and number arguments also accept numeric strings ("2" -> 2, "$2,500" -> 2500). A call that was
valid before these rules keeps its exact response, and so does every call the embedded model makes on the
shipped mini corpus, its errors included (``tests/corpus/test_mock_tools.py`` holds a golden set).

Example::

    >>> execute({"function": "search_flights", "args": {"destination": "Tokyo", "date": "Friday"}})["flights"][0]
    {'flight_id': 'KE695', 'departure': '12:50', 'price': 480}
    >>> execute({"function": "book_flight", "args": {"passenger_name": "Ana Silva"}})["status"]
    'confirmed'
    >>> MockToolExecutor().respond({"function": "track_order", "args": {"order_id": "48213"}})
    '{"carrier": "USPS", "estimated_delivery": "Wednesday", "order_id": "48213", "status": "delivered"}'
    >>> execute({"function": "update_identity_doc", "args": {"doc_type": "ID card", "doc_number": "p-8-8990011"}})
    {'doc_number': 'P88990011', 'doc_type': 'id_card', 'status': 'updated'}
"""

from __future__ import annotations

import hashlib
import inspect
import json
import re
from functools import lru_cache
from typing import Any, Callable

FLIGHT_CITIES = ("Tokyo", "Rome", "Paris", "Madrid", "Lisbon", "Berlin", "Toronto", "Sydney", "Cairo", "Lima",
                 "Seoul", "Dublin", "Chicago", "Denver", "Boston", "Miami", "London", "Athens")
DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
AIRLINES = ("NH", "AZ", "AF", "IB", "TP", "LH", "AC", "QF", "MS", "LA", "KE", "EI", "UA", "BA")
APARTMENT_CITIES = {"Austin": 1300, "Denver": 1350, "Seattle": 1700, "Boston": 1900, "Chicago": 1250,
                    "Portland": 1400, "Atlanta": 1200, "Phoenix": 1100}
STREETS = ("Maple Street", "Oak Avenue", "Cedar Lane", "Pine Street", "Elm Road", "Lake Drive", "Hill Street",
           "River Road", "Park Avenue", "Mill Lane")
CARDS = {
    "gold": (95, ["3% cash back on dining", "airport lounge access"]),
    "platinum": (250, ["5% back on travel", "free checked bags"]),
    "silver": (0, ["1% cash back on everything", "no annual fee"]),
    "student": (0, ["2% back on books", "no foreign transaction fees"]),
    "travel": (120, ["3 points per dollar on flights", "no foreign transaction fees"]),
}
OTHER_CARD_FEES = (0, 49, 95, 150, 250)
OTHER_CARD_BENEFITS = ("2% cash back on groceries", "3% back on gas", "travel insurance", "extended warranty",
                       "no foreign transaction fees", "airport lounge access", "1% cash back on everything",
                       "free checked bags")
USD_RATES = {"USD": 1.0, "EUR": 0.92, "GBP": 0.79, "JPY": 151.5, "CAD": 1.36, "AUD": 1.52, "CHF": 0.88,
             "MXN": 17.1, "INR": 83.4, "CNY": 7.24}
CURRENCY_NAMES = {  # normalised name -> ISO code
    **{name: "USD" for name in ("dollar", "dollars", "us_dollar", "us_dollars", "usd_dollars", "american_dollars",
                                "u.s._dollars", "bucks")},
    **{name: "EUR" for name in ("euro", "euros")},
    **{name: "GBP" for name in ("pound", "pounds", "british_pound", "british_pounds", "pound_sterling",
                                "pounds_sterling", "sterling", "uk_pounds")},
    **{name: "JPY" for name in ("yen", "japanese_yen")},
    **{name: "CAD" for name in ("canadian_dollar", "canadian_dollars")},
    **{name: "AUD" for name in ("australian_dollar", "australian_dollars")},
    **{name: "CHF" for name in ("franc", "francs", "swiss_franc", "swiss_francs")},
    **{name: "MXN" for name in ("peso", "pesos", "mexican_peso", "mexican_pesos")},
    **{name: "INR" for name in ("rupee", "rupees", "indian_rupee", "indian_rupees")},
    **{name: "CNY" for name in ("yuan", "renminbi", "rmb", "chinese_yuan")},
}
BILLS = ("electricity", "water", "internet", "phone", "gas", "rent", "credit_card")
BILL_ALIASES = {"electric": "electricity", "power": "electricity", "utility": "utilities", "wifi": "internet",
                "broadband": "internet", "cell_phone": "phone", "mobile": "phone", "mobile_phone": "phone",
                "cellphone": "phone", "telephone": "phone"}
ACCOUNTS = ("checking", "savings", "business")
ACCOUNT_ALIASES = {"checkings": "checking", "chequing": "checking", "saving": "savings"}
DOC_ALIASES = {"drivers_license": "driver_license", "driving_license": "driver_license",
               "drivers_licence": "driver_license", "driving_licence": "driver_license", "license": "driver_license"}
MODES = {"driving": (40.0, 5), "transit": (25.0, 8), "walking": (5.0, 0), "cycling": (16.0, 2)}
MODE_ALIASES = {
    **{name: "driving" for name in ("drive", "car", "by_car", "auto")},
    **{name: "transit" for name in ("public_transit", "public_transport", "public_transportation", "bus", "train",
                                    "subway", "metro", "rail")},
    **{name: "walking" for name in ("walk", "foot", "on_foot", "by_foot")},
    **{name: "cycling" for name in ("bike", "biking", "bicycle", "bicycling", "cycle", "by_bike")},
}
FILTERS = {"pets_allowed": "boolean", "parking": "boolean", "furnished": "boolean", "laundry": "boolean",
           "max_price": "number", "bedrooms": "integer", "neighborhood": "string"}
FILTER_ALIASES = {"pets": "pets_allowed", "pet": "pets_allowed", "pet_friendly": "pets_allowed",
                  "allows_pets": "pets_allowed", "max_rent": "max_price", "budget": "max_price",
                  "beds": "bedrooms", "bedroom": "bedrooms", "neighbourhood": "neighborhood"}
TRUE_WORDS = ("true", "yes", "1", "on", "y", "allowed", "enabled", "required")
FALSE_WORDS = ("false", "no", "0", "off", "n", "not_allowed", "disabled", "none")
CARRIERS = ("UPS", "FedEx", "DHL", "USPS")
ORDER_STATES = ("processing", "shipped", "out for delivery", "delivered")
PRODUCTS = (  # product_id, name, price
    ("P1042", "TrailMax hiking boots", 89.99), ("P1043", "Summit hiking boots", 129.0),
    ("P1101", "Swift running shoes", 74.5), ("P1102", "Cloud running shoes", 119.0),
    ("P1205", "Quiet wireless headphones", 59.99), ("P1206", "Studio wireless headphones", 149.0),
    ("P1310", "Brew coffee maker", 45.0), ("P1311", "Barista coffee maker", 99.0),
    ("P1402", "Daypack backpack", 39.99), ("P1403", "Voyager travel backpack", 84.0),
    ("P1507", "Glow desk lamp", 24.99), ("P1508", "Arc desk lamp", 52.0),
    ("P1601", "Grip yoga mat", 29.0), ("P1602", "Cushion yoga mat", 48.0),
    ("P1703", "Steel water bottle", 19.5), ("P1704", "Insulated water bottle", 32.0),
    ("P1806", "Chef kitchen knife", 64.0), ("P1901", "Cozy wool blanket", 55.0),
)
IDENTIFIER = re.compile(r"[A-Z0-9][A-Z0-9-]{0,23}")
OWN_PRODUCT_ID = re.compile(r"P\d+")  # TickTock's catalogue ids; other ids are another shop's
OWN_FLIGHT_ID = re.compile(rf"(?:{'|'.join(AIRLINES)})\d{{3}}")  # flights of FLIGHT_CITIES; other cities get 4 digits


class ToolArgumentError(ValueError):
    """A call's arguments do not fit the tool; the message becomes the {"error": ...} result."""


def _hash(*parts: Any) -> int:
    text = "\x1f".join(str(p) for p in parts)
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")


def _number(value: float) -> int | float:
    """2.0 -> 2, 2.456 -> 2.46: numbers as a person would say them, exactly as they appear in JSON."""
    value = round(float(value), 2)
    return int(value) if value.is_integer() else value


def _lookup(value: str, names) -> str:
    """The canonical spelling of ``value`` among ``names`` (case-insensitive), or ""."""
    for name in names:
        if name.lower() == value.strip().lower():
            return name
    return ""


def _name(value: str) -> str:
    """A free-text name as a key: lower case, apostrophes dropped, spaces and hyphens as underscores.

    >>> _name("Driver's License"), _name(" public-transit ")
    ('drivers_license', 'public_transit')
    """
    return re.sub(r"[\s-]+", "_", value.strip().replace("'", "")).lower()


def _name_without(value: str, prefixes=("my_", "the_"), suffixes=()) -> str:
    """``_name`` without a leading "my"/"the" and without one of ``suffixes`` ("checking_account" -> "checking")."""
    key = _name(value)
    for prefix in prefixes:
        if key.startswith(prefix) and len(key) > len(prefix):
            key = key[len(prefix):]
    for suffix in suffixes:
        if key.endswith(suffix) and len(key) > len(suffix):
            return key[: -len(suffix)]
    return key


def _identifier(value: str, what: str) -> str:
    """An id in upper case without spaces or a leading "#"; a spelled-out "B-O-B-1-2" is "BOB12".

    >>> _identifier(" #bob12 ", "order_id"), _identifier("B-O-B-1-2", "order_id"), _identifier("ORD-120", "order_id")
    ('BOB12', 'BOB12', 'ORD-120')
    """
    text = re.sub(r"\s+", "", value.strip().lstrip("#")).upper()
    if re.fullmatch(r"\w(-\w)+", text):
        text = text.replace("-", "")
    if not IDENTIFIER.fullmatch(text):
        raise ToolArgumentError(f"{what} {value!r:.40} must be letters and digits")
    return text


# ------------------------------------------------------------------------------------------ tools


def search_flights(destination: str, date: str) -> dict:
    city = _lookup(destination, FLIGHT_CITIES) or destination.strip()
    day = _lookup(date, DAYS) or date.strip()
    return {"destination": city, "date": day, "flights": _flights(" ".join(city.split()), day)}


def _flights(city: str, day: str) -> list[dict]:
    """Two flights; those of a city outside ``FLIGHT_CITIES`` have 4-digit numbers (outside ``OWN_FLIGHT_ID``)."""
    low, span = (100, 900) if city in FLIGHT_CITIES else (1000, 9000)
    flights = []
    for slot in range(2):
        h = _hash("flight", city.lower(), day.lower(), slot)
        minutes = 6 * 60 + (h % 144) * 5 + slot * 360
        flights.append({
            "flight_id": f"{AIRLINES[h % len(AIRLINES)]}{low + (h >> 8) % span}",
            "departure": f"{minutes // 60 % 24:02d}:{minutes % 60:02d}",
            "price": 180 + (h >> 20) % 130 * 5,
        })
    return sorted(flights, key=lambda f: f["departure"])


@lru_cache(maxsize=1)
def _all_flight_ids() -> frozenset[str]:
    """Every flight id that search_flights can return for ``FLIGHT_CITIES``."""
    return frozenset(f["flight_id"] for c in FLIGHT_CITIES for d in DAYS for f in _flights(c, d))


def book_flight(passenger_name: str, flight_id: str | None = None) -> dict:
    """A booking; with a flight id, of that flight (one of TickTock's own must exist, see the module docstring)."""
    if flight_id is not None:
        flight = flight_id.strip().upper().replace(" ", "")
        own = OWN_FLIGHT_ID.fullmatch(flight)
        if (own and flight not in _all_flight_ids()) or not IDENTIFIER.fullmatch(flight):
            raise ToolArgumentError(f"book_flight: unknown flight_id {flight_id!r}")
    if not passenger_name.strip():
        raise ToolArgumentError("book_flight: passenger_name is empty")
    if flight_id is None:
        booking = f"BK{_hash('booking', passenger_name.strip().lower()) % 90000 + 10000}"
        return {"booking_id": booking, "passenger_name": passenger_name.strip(), "status": "confirmed"}
    booking = f"BK{_hash('booking', passenger_name.strip().lower(), flight) % 90000 + 10000}"
    return {"booking_id": booking, "flight_id": flight, "passenger_name": passenger_name.strip(), "status": "confirmed"}


def update_identity_doc(doc_type: str, doc_number: str) -> dict:
    number = re.sub(r"[\s-]", "", doc_number).upper()
    if not re.fullmatch(r"[A-Z0-9]{5,12}", number):
        raise ToolArgumentError(f"update_identity_doc: doc_number {doc_number!r} must be 5-12 letters or digits")
    kind = _name(doc_type)
    return {"doc_number": number, "doc_type": DOC_ALIASES.get(kind, kind), "status": "updated"}


def get_card_benefits(card_type: str) -> dict:
    card = _name_without(card_type, suffixes=("_credit_card", "_card"))
    fee, benefits = CARDS.get(card) or _other_card(card)
    return {"annual_fee": fee, "benefits": list(benefits), "card_type": card}


def _other_card(card: str) -> tuple[int, list[str]]:
    """Fee and two benefits of a card outside ``CARDS``, from a hash of its name."""
    h = _hash("card", card)
    first = h % len(OTHER_CARD_BENEFITS)
    second = (first + 1 + (h >> 8) % (len(OTHER_CARD_BENEFITS) - 1)) % len(OTHER_CARD_BENEFITS)
    return OTHER_CARD_FEES[(h >> 16) % len(OTHER_CARD_FEES)], [OTHER_CARD_BENEFITS[first], OTHER_CARD_BENEFITS[second]]


def get_exchange_rate(amount: float, from_currency: str, to_currency: str) -> dict:
    if amount <= 0:
        raise ToolArgumentError(f"get_exchange_rate: amount must be positive, got {amount}")
    source, target = _currency(from_currency), _currency(to_currency)
    ratio = _units_per_usd(target) / _units_per_usd(source)
    return {"amount": _number(amount), "converted_amount": _number(amount * ratio), "from_currency": source,
            "rate": round(ratio, 4), "to_currency": target}


def _currency(value: str) -> str:
    """An ISO code ("usd", "euros", "British pounds" -> USD, EUR, GBP); other names as upper-case keys.

    >>> _currency("usd"), _currency("Japanese yen"), _currency("doubloons")
    ('USD', 'JPY', 'DOUBLOONS')
    """
    key = _name(value)
    return key.upper() if key.upper() in USD_RATES else CURRENCY_NAMES.get(key, key.upper())


def _units_per_usd(code: str) -> float:
    """Units of ``code`` per US dollar: ``USD_RATES``, or a stable 0.1-1000 for any other currency."""
    if code in USD_RATES:
        return USD_RATES[code]
    return round(0.1 * 10 ** (_hash("currency", code) % 4000 / 1000), 4)


def modify_autopay(bill_type: str, source_account: str) -> dict:
    bill = _name_without(bill_type, suffixes=("_bills", "_bill"))
    bill = BILL_ALIASES.get(bill, bill)
    account = _name_without(source_account, suffixes=("_account",))
    account = ACCOUNT_ALIASES.get(account, account)
    day = 1 + _hash("autopay", bill, account) % 28
    return {"bill_type": bill, "next_payment": f"July {day}", "source_account": account, "status": "updated"}


def search_apartments(city: str | None = None, bedrooms: int | None = None, max_price: float | None = None,
                      pets_allowed: bool | None = None) -> dict:
    """Apartments in ``city`` (any city; all three search arguments may be left out, as some released
    expected calls do): the two cheapest within ``max_price``."""
    if bedrooms is not None and not 0 <= bedrooms <= 5:
        raise ToolArgumentError(f"search_apartments: bedrooms must be 0-5, got {bedrooms}")
    name = None if city is None else (_lookup(city, APARTMENT_CITIES) or city.strip())
    if bedrooms is None:
        listings = [{**_apartments(name, beds)[0], "bedrooms": beds} for beds in (1, 2, 3)]
    else:
        listings = _apartments(name, bedrooms)
    listings = [a for a in listings if max_price is None or a["rent"] <= max_price]
    result: dict = {"apartments": sorted(listings, key=lambda a: a["rent"])[:2]}
    if bedrooms is not None:
        result["bedrooms"] = bedrooms
    if name is not None:
        result["city"] = name
    if pets_allowed is not None:
        result["pets_allowed"] = pets_allowed
    return result


def _apartments(city: str | None, bedrooms: int) -> list[dict]:
    """Three listings of ``bedrooms`` bedrooms in ``city`` (None: anywhere)."""
    if city in APARTMENT_CITIES:
        key, base = city, APARTMENT_CITIES[city]
    else:
        key = " ".join((city or "").lower().split())
        base = 1000 + _hash("rent", key) % 20 * 50
    result = []
    for slot in range(3):
        h = _hash("apartment", key, bedrooms, slot)
        rent = base + 450 * bedrooms + (h % 24) * 25
        address = f"{10 + (h >> 8) % 190} {STREETS[(h >> 16) % len(STREETS)]}"
        result.append({"address": address, "apartment_id": f"A{1000 + (h >> 24) % 9000}", "rent": rent})
    return result


def calculate_commute(origin_address: str, destination_address: str, mode: str = "driving") -> dict:
    if not origin_address.strip() or not destination_address.strip():
        raise ToolArgumentError("calculate_commute: origin_address and destination_address must not be empty")
    distance = 2.0 + _hash("commute", origin_address.strip().lower(), destination_address.strip().lower()) % 160 / 10
    key = _name(mode)
    key = MODE_ALIASES.get(key, key)
    speed, overhead = MODES.get(key, MODES["driving"])
    return {"destination_address": destination_address.strip(), "distance_km": round(distance, 1),
            "minutes": int(round(distance / speed * 60 + overhead)), "mode": key, "origin_address": origin_address.strip()}


def update_search_filter(filter_name: str, value: Any) -> dict:
    name = _name(filter_name)
    name = FILTER_ALIASES.get(name, name)
    value = _filter_value(name, value)
    matches = 3 + _hash("filter", name, value) % 40
    return {"filter_name": name, "matching_listings": matches, "status": "updated", "value": value}


def _filter_value(name: str, value: Any) -> Any:
    """A filter value as its filter's type when it reads as one ("yes" for a yes/no filter, "$2,500" for a
    price); otherwise as given (a string stripped)."""
    kind = FILTERS.get(name)
    if kind is not None:
        try:
            return _coerce(value, kind, f"update_search_filter: value for {name}")
        except ToolArgumentError:
            if kind == "boolean" and isinstance(value, str) and _name(value) in TRUE_WORDS + FALSE_WORDS:
                return _name(value) in TRUE_WORDS
    if isinstance(value, str):
        if not value.strip():
            raise ToolArgumentError(f"update_search_filter: value for {name} is empty")
        return value.strip()
    return value


def track_order(order_id: str) -> dict:
    order = _identifier(order_id, "track_order: order_id")
    h = _hash("order", order)
    return {"carrier": CARRIERS[h % len(CARRIERS)], "estimated_delivery": DAYS[(h >> 8) % 7], "order_id": order,
            "status": ORDER_STATES[(h >> 16) % len(ORDER_STATES)]}


def search_products(query: str, max_price: float | None = None, category: str | None = None) -> dict:
    words = [w.rstrip("s") for w in re.findall(r"[a-z]+", query.lower())]
    if not words:
        raise ToolArgumentError("search_products: query is empty")
    found = [
        {"name": name, "price": _number(price), "product_id": pid}
        for pid, name, price in PRODUCTS
        if all(any(part.rstrip("s") == w for part in name.lower().split()) for w in words)
        and (max_price is None or price <= max_price)
    ]
    result = {"products": sorted(found, key=lambda p: p["price"])[:2], "query": query.strip()}
    if category is not None:
        result["category"] = category.strip()
    return result


def add_to_cart(product_id: str, quantity: int = 1) -> dict:
    """Add to the cart: a catalogue product (a catalogue-style id must exist), or another shop's product id."""
    pid = product_id.strip().upper()
    product = {p: (n, c) for p, n, c in PRODUCTS}.get(pid)
    if product is None and (OWN_PRODUCT_ID.fullmatch(pid) or not IDENTIFIER.fullmatch(pid)):
        raise ToolArgumentError(f"add_to_cart: unknown product_id {product_id!r}")
    if not 1 <= quantity <= 10:
        raise ToolArgumentError(f"add_to_cart: quantity must be 1-10, got {quantity}")
    name, price = product or _other_product(pid)
    return {"cart_total": _number(price * quantity), "name": name, "product_id": pid, "quantity": quantity,
            "status": "added"}


def _other_product(pid: str) -> tuple[str, float]:
    """Name and price of another shop's product id, from a hash of the id."""
    return f"item {pid}", _number(5 + _hash("product", pid) % 3000 / 20)


# ------------------------------------------------------------------------------------------ schemas


def _param(kind: str, description: str, default: Any = inspect.Parameter.empty) -> dict:
    spec: dict = {"type": kind, "description": description}
    if default is not inspect.Parameter.empty:
        spec["default"] = default
    return spec


def _tool(name: str, description: str, required: list[str], **params: dict) -> dict:
    return {"name": name, "description": description,
            "parameters": {"type": "object", "properties": params, "required": required}}


S, I, N, B = "string", "integer", "number", "boolean"
TOOL_SCHEMAS: list[dict] = [
    _tool("search_flights", "Search flights to a destination city on a day.", ["destination", "date"],
          destination=_param(S, "Destination city, e.g. Tokyo"), date=_param(S, "Day of travel, e.g. Friday")),
    _tool("book_flight", "Book a flight for a passenger.", ["passenger_name"],
          passenger_name=_param(S, "Full name of the passenger"),
          flight_id=_param(S, "Flight id from search_flights, e.g. KE695 (optional)")),
    _tool("update_identity_doc", "Update an identity document on the travel profile.", ["doc_type", "doc_number"],
          doc_type=_param(S, "Document type, e.g. passport, driver_license, id_card"),
          doc_number=_param(S, "Document number, letters and digits")),
    _tool("get_card_benefits", "List the benefits of a credit card type.", ["card_type"],
          card_type=_param(S, "Card type, e.g. gold, platinum, travel")),
    _tool("get_exchange_rate", "Convert an amount between currencies.", ["amount", "from_currency", "to_currency"],
          amount=_param(N, "Amount to convert"), from_currency=_param(S, "Currency, ISO code (e.g. USD) or name"),
          to_currency=_param(S, "Currency, ISO code (e.g. EUR) or name")),
    _tool("modify_autopay", "Change the account that pays a bill automatically.", ["bill_type", "source_account"],
          bill_type=_param(S, "Bill, e.g. electricity, internet, utilities"),
          source_account=_param(S, "Paying account, e.g. checking, savings")),
    _tool("search_apartments", "Search apartments for rent.", [],
          city=_param(S, "City, e.g. Denver"), bedrooms=_param(I, "Number of bedrooms"),
          max_price=_param(N, "Maximum monthly rent in dollars"), pets_allowed=_param(B, "Only places that allow pets")),
    _tool("calculate_commute", "Estimate commute time between two addresses.", ["origin_address", "destination_address"],
          origin_address=_param(S, "Start address"), destination_address=_param(S, "End address"),
          mode=_param(S, "Travel mode: driving, transit, walking or cycling", "driving")),
    _tool("update_search_filter", "Set a filter of the apartment search.", ["filter_name", "value"],
          filter_name=_param(S, "Filter, e.g. pets_allowed, parking, furnished, laundry, max_price, bedrooms"),
          value={"type": [S, N, B], "description": "New filter value"}),
    _tool("track_order", "Track an order by its number.", ["order_id"],
          order_id=_param(S, "Order number, letters and digits")),
    _tool("search_products", "Search the shop's products.", ["query"],
          query=_param(S, "What to look for, e.g. hiking boots"), max_price=_param(N, "Maximum price in dollars"),
          category=_param(S, "Product category, e.g. electronics")),
    _tool("add_to_cart", "Add a product to the shopping cart.", ["product_id"],
          product_id=_param(S, "Product id from search_products"), quantity=_param(I, "How many", 1)),
]
_SCHEMAS = {schema["name"]: schema for schema in TOOL_SCHEMAS}
_FUNCTIONS: dict[str, Callable[..., dict]] = {
    f.__name__: f for f in (search_flights, book_flight, update_identity_doc, get_card_benefits, get_exchange_rate,
                            modify_autopay, search_apartments, calculate_commute, update_search_filter, track_order,
                            search_products, add_to_cart)
}

# ------------------------------------------------------------------------------------------ execution


def execute(call: Any) -> dict:
    """Run one canonical call {"function": name, "args": {...}}; errors come back as {"error": message}."""
    if not isinstance(call, dict) or not isinstance(call.get("function"), str):
        return {"error": 'invalid call: expected {"function": name, "args": {...}}'}
    name, args = call["function"], call.get("args", {})
    if name not in _FUNCTIONS:
        return {"error": f"unknown tool {name!r}"}
    if not isinstance(args, dict):
        return {"error": f"{name}: args must be an object, got {type(args).__name__}"}
    try:
        return _FUNCTIONS[name](**_checked_args(name, args))
    except ToolArgumentError as err:
        return {"error": str(err)}


def _checked_args(name: str, args: dict) -> dict:
    spec = _SCHEMAS[name]["parameters"]
    for key in args:
        if key not in spec["properties"]:
            raise ToolArgumentError(f"{name}: unexpected argument {key!r}")
    for key in spec["required"]:
        if key not in args or args[key] is None:
            raise ToolArgumentError(f"{name}: missing argument {key!r}")
    checked = {}
    for key, value in args.items():
        if value is None:  # an optional argument left out
            continue
        checked[key] = _coerce(value, spec["properties"][key]["type"], f"{name}: argument {key!r}")
    return checked


def _coerce(value: Any, kind: Any, where: str) -> Any:
    if isinstance(kind, list):
        if isinstance(value, (str, int, float, bool)) and value == value:
            return value
        raise ToolArgumentError(f"{where} must be a string, number or boolean")
    if kind == "string":
        if isinstance(value, str) and value.strip():
            return value
        raise ToolArgumentError(f"{where} must be a non-empty string, got {value!r:.40}")
    if kind == "boolean":
        text = str(value).strip().lower()
        if text in ("true", "yes", "1", "false", "no", "0"):
            return text in ("true", "yes", "1")
        raise ToolArgumentError(f"{where} must be true or false, got {value!r:.40}")
    return _numeric(value, kind, where)


def _numeric(value: Any, kind: str, where: str) -> int | float:
    wanted = "an integer" if kind == "integer" else "a number"
    if isinstance(value, bool):
        raise ToolArgumentError(f"{where} must be {wanted}, got {value!r}")
    try:
        number = float(str(value).replace(",", "").lstrip("$"))
    except ValueError:
        raise ToolArgumentError(f"{where} must be {wanted}, got {value!r:.40}") from None
    if number != number or number in (float("inf"), float("-inf")):
        raise ToolArgumentError(f"{where} must be a finite number, got {value!r:.40}")
    if kind == "integer":
        if not number.is_integer():
            raise ToolArgumentError(f"{where} must be a whole number, got {value!r:.40}")
        return int(number)
    return _number(number)


def respond_text(result: dict) -> str:
    """Compact JSON of a result, as injected into the model's context."""
    return json.dumps(result, sort_keys=True, separators=(", ", ": "))


class MockToolExecutor:
    """Answers canonical tool calls with compact JSON text (the ``ticktock.world.injection.ToolExecutor`` protocol).

    >>> MockToolExecutor().respond({"function": "nope", "args": {}})
    '{"error": "unknown tool \\'nope\\'"}'
    """

    def respond(self, call: dict) -> str:
        return respond_text(execute(call))
