"""The 12 Full-Duplex-Bench v3 mock tools over a small, fixed, deterministic world.

Every tool is a pure function of its arguments: the same call always gives the same result, in any
process. Values that look random (flight numbers, rents, commute times) come from a stable hash of the
arguments. Results are small (at most about 40 words of JSON) because they are injected into a small
model's context. Unknown tools and bad arguments give an ``{"error": ...}`` result, never an exception.

Calls use the canonical FDB v3 form ``{"function": name, "args": {...}}``. Enumerated string arguments are
matched case-insensitively with spaces and hyphens read as underscores ("Driver License" ->
"driver_license"); integer and number arguments also accept numeric strings ("2" -> 2).

Example::

    >>> execute({"function": "search_flights", "args": {"destination": "Tokyo", "date": "Friday"}})["flights"][0]
    {'flight_id': 'KE695', 'departure': '12:50', 'price': 480}
    >>> execute({"function": "book_flight", "args": {"passenger_name": "Ana Silva"}})
    {'error': "book_flight: missing argument 'flight_id'"}
    >>> MockToolExecutor().respond({"function": "track_order", "args": {"order_id": "48213"}})
    '{"carrier": "USPS", "estimated_delivery": "Wednesday", "order_id": "48213", "status": "delivered"}'
"""

from __future__ import annotations

import hashlib
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
USD_RATES = {"USD": 1.0, "EUR": 0.92, "GBP": 0.79, "JPY": 151.5, "CAD": 1.36, "AUD": 1.52, "CHF": 0.88,
             "MXN": 17.1, "INR": 83.4, "CNY": 7.24}
BILLS = ("electricity", "water", "internet", "phone", "gas", "rent", "credit_card")
ACCOUNTS = ("checking", "savings", "business")
MODES = {"driving": (40.0, 5), "transit": (25.0, 8), "walking": (5.0, 0), "cycling": (16.0, 2)}
FILTERS = {"pets_allowed": "boolean", "parking": "boolean", "furnished": "boolean", "laundry": "boolean",
           "max_price": "number", "bedrooms": "integer", "neighborhood": "string"}
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


# ------------------------------------------------------------------------------------------ tools


def search_flights(destination: str, date: str) -> dict:
    city = _lookup(destination, FLIGHT_CITIES) or destination.strip()
    day = _lookup(date, DAYS) or date.strip()
    if city not in FLIGHT_CITIES:
        return {"destination": city, "date": day, "flights": []}
    return {"destination": city, "date": day, "flights": _flights(city, day)}


def _flights(city: str, day: str) -> list[dict]:
    flights = []
    for slot in range(2):
        h = _hash("flight", city.lower(), day.lower(), slot)
        minutes = 6 * 60 + (h % 144) * 5 + slot * 360
        flights.append({
            "flight_id": f"{AIRLINES[h % len(AIRLINES)]}{100 + (h >> 8) % 900}",
            "departure": f"{minutes // 60 % 24:02d}:{minutes % 60:02d}",
            "price": 180 + (h >> 20) % 130 * 5,
        })
    return sorted(flights, key=lambda f: f["departure"])


@lru_cache(maxsize=1)
def _all_flight_ids() -> frozenset[str]:
    """Every flight id that search_flights can return."""
    return frozenset(f["flight_id"] for c in FLIGHT_CITIES for d in DAYS for f in _flights(c, d))


def book_flight(passenger_name: str, flight_id: str) -> dict:
    flight = flight_id.strip().upper().replace(" ", "")
    if flight not in _all_flight_ids():
        raise ToolArgumentError(f"book_flight: unknown flight_id {flight_id!r}")
    if not passenger_name.strip():
        raise ToolArgumentError("book_flight: passenger_name is empty")
    booking = f"BK{_hash('booking', passenger_name.strip().lower(), flight) % 90000 + 10000}"
    return {"booking_id": booking, "flight_id": flight, "passenger_name": passenger_name.strip(), "status": "confirmed"}


def update_identity_doc(doc_type: str, doc_number: str) -> dict:
    number = re.sub(r"[\s-]", "", doc_number).upper()
    if not re.fullmatch(r"[A-Z0-9]{5,12}", number):
        raise ToolArgumentError(f"update_identity_doc: doc_number {doc_number!r} must be 5-12 letters or digits")
    return {"doc_number": number, "doc_type": doc_type, "status": "updated"}


def get_card_benefits(card_type: str) -> dict:
    fee, benefits = CARDS[card_type]
    return {"annual_fee": fee, "benefits": list(benefits), "card_type": card_type}


def get_exchange_rate(amount: float, from_currency: str, to_currency: str) -> dict:
    if amount <= 0:
        raise ToolArgumentError(f"get_exchange_rate: amount must be positive, got {amount}")
    ratio = USD_RATES[to_currency] / USD_RATES[from_currency]
    return {"amount": _number(amount), "converted_amount": _number(amount * ratio), "from_currency": from_currency,
            "rate": round(ratio, 4), "to_currency": to_currency}


def modify_autopay(bill_type: str, source_account: str) -> dict:
    day = 1 + _hash("autopay", bill_type, source_account) % 28
    return {"bill_type": bill_type, "next_payment": f"July {day}", "source_account": source_account, "status": "updated"}


def search_apartments(city: str, bedrooms: int, max_price: float) -> dict:
    name = _lookup(city, APARTMENT_CITIES) or city.strip()
    if not 0 <= bedrooms <= 5:
        raise ToolArgumentError(f"search_apartments: bedrooms must be 0-5, got {bedrooms}")
    listings = [a for a in _apartments(name, bedrooms) if a["rent"] <= max_price]
    return {"apartments": sorted(listings, key=lambda a: a["rent"])[:2], "bedrooms": bedrooms, "city": name}


def _apartments(city: str, bedrooms: int) -> list[dict]:
    if city not in APARTMENT_CITIES:
        return []
    result = []
    for slot in range(3):
        h = _hash("apartment", city, bedrooms, slot)
        rent = APARTMENT_CITIES[city] + 450 * bedrooms + (h % 24) * 25
        address = f"{10 + (h >> 8) % 190} {STREETS[(h >> 16) % len(STREETS)]}"
        result.append({"address": address, "apartment_id": f"A{1000 + (h >> 24) % 9000}", "rent": rent})
    return result


def calculate_commute(origin_address: str, destination_address: str, mode: str) -> dict:
    if not origin_address.strip() or not destination_address.strip():
        raise ToolArgumentError("calculate_commute: origin_address and destination_address must not be empty")
    distance = 2.0 + _hash("commute", origin_address.strip().lower(), destination_address.strip().lower()) % 160 / 10
    speed, overhead = MODES[mode]
    return {"destination_address": destination_address.strip(), "distance_km": round(distance, 1),
            "minutes": int(round(distance / speed * 60 + overhead)), "mode": mode, "origin_address": origin_address.strip()}


def update_search_filter(filter_name: str, value: Any) -> dict:
    kind = FILTERS[filter_name]
    value = _coerce(value, kind, f"update_search_filter: value for {filter_name}")
    matches = 3 + _hash("filter", filter_name, value) % 40
    return {"filter_name": filter_name, "matching_listings": matches, "status": "updated", "value": value}


def track_order(order_id: str) -> dict:
    order = order_id.strip().lstrip("#").replace(" ", "")
    if not re.fullmatch(r"\d{4,8}", order):
        raise ToolArgumentError(f"track_order: unknown order_id {order_id!r} (order ids are 4-8 digits)")
    h = _hash("order", order)
    return {"carrier": CARRIERS[h % len(CARRIERS)], "estimated_delivery": DAYS[(h >> 8) % 7], "order_id": order,
            "status": ORDER_STATES[(h >> 16) % len(ORDER_STATES)]}


def search_products(query: str, max_price: float | None = None) -> dict:
    words = [w.rstrip("s") for w in re.findall(r"[a-z]+", query.lower())]
    if not words:
        raise ToolArgumentError("search_products: query is empty")
    found = [
        {"name": name, "price": _number(price), "product_id": pid}
        for pid, name, price in PRODUCTS
        if all(any(part.rstrip("s") == w for part in name.lower().split()) for w in words)
        and (max_price is None or price <= max_price)
    ]
    return {"products": sorted(found, key=lambda p: p["price"])[:2], "query": query.strip()}


def add_to_cart(product_id: str, quantity: int) -> dict:
    product = {pid: (name, price) for pid, name, price in PRODUCTS}.get(product_id.strip().upper())
    if product is None:
        raise ToolArgumentError(f"add_to_cart: unknown product_id {product_id!r}")
    if not 1 <= quantity <= 10:
        raise ToolArgumentError(f"add_to_cart: quantity must be 1-10, got {quantity}")
    return {"cart_total": _number(product[1] * quantity), "name": product[0], "product_id": product_id.strip().upper(),
            "quantity": quantity, "status": "added"}


# ------------------------------------------------------------------------------------------ schemas


def _param(kind: str, description: str, enum=None) -> dict:
    spec: dict = {"type": kind, "description": description}
    if enum is not None:
        spec["enum"] = list(enum)
    return spec


def _tool(name: str, description: str, required: list[str], **params: dict) -> dict:
    return {"name": name, "description": description,
            "parameters": {"type": "object", "properties": params, "required": required}}


S, I, N = "string", "integer", "number"
TOOL_SCHEMAS: list[dict] = [
    _tool("search_flights", "Search flights to a destination city on a day.", ["destination", "date"],
          destination=_param(S, "Destination city, e.g. Tokyo"), date=_param(S, "Day of travel, e.g. Friday")),
    _tool("book_flight", "Book a flight found by search_flights.", ["passenger_name", "flight_id"],
          passenger_name=_param(S, "Full name of the passenger"), flight_id=_param(S, "Flight id, e.g. KE695")),
    _tool("update_identity_doc", "Update an identity document on the travel profile.", ["doc_type", "doc_number"],
          doc_type=_param(S, "Document type", ("passport", "driver_license", "national_id")),
          doc_number=_param(S, "Document number, letters and digits")),
    _tool("get_card_benefits", "List the benefits of a credit card type.", ["card_type"],
          card_type=_param(S, "Card type", tuple(CARDS))),
    _tool("get_exchange_rate", "Convert an amount between currencies.", ["amount", "from_currency", "to_currency"],
          amount=_param(N, "Amount to convert"), from_currency=_param(S, "ISO currency code", tuple(USD_RATES)),
          to_currency=_param(S, "ISO currency code", tuple(USD_RATES))),
    _tool("modify_autopay", "Change the account that pays a bill automatically.", ["bill_type", "source_account"],
          bill_type=_param(S, "Bill", BILLS), source_account=_param(S, "Paying account", ACCOUNTS)),
    _tool("search_apartments", "Search apartments for rent.", ["city", "bedrooms", "max_price"],
          city=_param(S, "City, e.g. Denver"), bedrooms=_param(I, "Number of bedrooms"),
          max_price=_param(N, "Maximum monthly rent in dollars")),
    _tool("calculate_commute", "Estimate commute time between two addresses.",
          ["origin_address", "destination_address", "mode"],
          origin_address=_param(S, "Start address"), destination_address=_param(S, "End address"),
          mode=_param(S, "Travel mode", tuple(MODES))),
    _tool("update_search_filter", "Set a filter of the apartment search.", ["filter_name", "value"],
          filter_name=_param(S, "Filter", tuple(FILTERS)),
          value={"type": ["string", "number", "boolean"], "description": "New filter value"}),
    _tool("track_order", "Track an order by its number.", ["order_id"], order_id=_param(S, "Order number, digits")),
    _tool("search_products", "Search the shop's products.", ["query"],
          query=_param(S, "What to look for, e.g. hiking boots"), max_price=_param(N, "Maximum price in dollars")),
    _tool("add_to_cart", "Add a product to the shopping cart.", ["product_id", "quantity"],
          product_id=_param(S, "Product id from search_products"), quantity=_param(I, "How many")),
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
        prop = spec["properties"][key]
        value = _coerce(value, prop["type"], f"{name}: argument {key!r}")
        if "enum" in prop:
            value = _enum(value, prop["enum"], f"{name}: argument {key!r}")
        checked[key] = value
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


def _enum(value: str, allowed: list[str], where: str) -> str:
    key = re.sub(r"[\s-]+", "_", value.strip().replace("'", "")).lower()
    if key.upper() in allowed:  # currency codes
        return key.upper()
    key = {"drivers_license": "driver_license"}.get(key, key)
    if key in allowed:
        return key
    raise ToolArgumentError(f"{where} must be one of {', '.join(allowed)}; got {value!r:.40}")


def respond_text(result: dict) -> str:
    """Compact JSON of a result, as injected into the model's context."""
    return json.dumps(result, sort_keys=True, separators=(", ", ": "))


class MockToolExecutor:
    """Answers canonical tool calls with compact JSON text (the ``ticktock.injection.ToolExecutor`` protocol).

    >>> MockToolExecutor().respond({"function": "nope", "args": {}})
    '{"error": "unknown tool \\'nope\\'"}'
    """

    def respond(self, call: dict) -> str:
        return respond_text(execute(call))
