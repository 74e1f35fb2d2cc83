"""Tool-call drafts from tool schemas: patterns from two renderings, matching, and the drafts on real calls."""

from ticktock.decoders.call_schema import FREE, CallDrafter, argument_variants, call_patterns, free_spans

COMMUTE = {"name": "calculate_commute", "parameters": {"type": "object", "properties": {
    "origin_address": {"type": "string"}, "destination_address": {"type": "string"},
    "mode": {"type": "string", "enum": ["driving", "cycling", "transit"]}}}}
RATE = {"name": "get_exchange_rate", "parameters": {"properties": {
    "amount": {"type": "number"}, "currency": {"type": ["string", "null"]}, "exact": {"type": "boolean"}}}}
NO_ARGS = {"name": "get_time"}


def test_free_spans_merge_differing_runs_into_one_free_span():
    assert free_spans([1, 2, 8, 8, 3], [1, 2, 9, 3]) == [1, 2, FREE, 3]
    assert free_spans([1, 8, 2, 8], [1, 9, 2, 9]) == [1, FREE, 2, FREE]
    assert free_spans([1, 2], [1, 2]) == [1, 2]
    assert free_spans([1, 2], [1, 5, 2]) == [1, FREE, 2]  # an insertion is a free span too


def test_argument_variants_cycle_enum_values_and_give_free_arguments_two_placeholders():
    variants = argument_variants(COMMUTE)
    assert [first["mode"] for first, _ in variants] == ["driving", "cycling", "transit"]
    assert all(first["mode"] == second["mode"] for first, second in variants)
    assert all(first["origin_address"] != second["origin_address"] for first, second in variants)
    first, second = argument_variants(RATE)[0]
    assert type(first["amount"]) is int and first["amount"] != second["amount"]
    assert isinstance(first["currency"], str)  # ["string", "null"] is a string
    assert [(first["exact"], second["exact"]) for first, second in argument_variants(RATE)] == [(True, True), (False, False)]
    assert argument_variants(NO_ARGS) == [({}, {})]
    for odd in ({"name": "f", "parameters": []}, {"name": "f", "parameters": {"properties": ["x"]}}):
        assert argument_variants(odd) == [({}, {})]  # shapes we do not read: no arguments, no crash
    first, second = argument_variants({"name": "f", "parameters": {"properties": {"x": "text"}}})[0]
    assert first["x"] != second["x"]  # an unreadable argument spec is a free value
    many = {"name": "f", "parameters": {"properties": {"x": {"enum": list(range(20))}}}}
    assert len(argument_variants(many, limit=8)) == 8


def test_drafter_narrows_by_name_drafts_keys_and_closes_values():
    # 1 <tool_call>, 2 {"name": ", 10/20 two tool names, 3 ", "arguments": {"a": ", 4 ", "b": ", 5 "}}, 6 </tool_call>
    patterns = [[1, 2, 10, 11, 3, FREE, 4, FREE, 5, 6], [1, 2, 20, 3, FREE, 5, 6]]
    drafter = CallDrafter(patterns, call_open=1)
    assert drafter.drafts([7, 8], limit=16) == []  # not inside a call
    assert sorted(drafter.drafts([1], limit=16)) == [[2, 10, 11, 3], [2, 20, 3]]
    assert drafter.drafts([1, 2, 10], limit=16) == [[11, 3]]
    assert drafter.drafts([1, 2, 10, 11, 3, 40, 41], limit=16) == [[4]]  # inside the first value: what closes it
    assert drafter.drafts([1, 2, 10, 11, 3, 40, 4], limit=16)[0] == [5, 6]  # past the first key: the end comes next
    assert drafter.drafts([1, 2, 10, 11, 3], limit=1) == [[4]]
    assert drafter.drafts([1, 2, 30], limit=16) == []  # no tool of that name
    # a second call in the same unit is matched from its own opening token
    assert drafter.drafts([1, 2, 20, 3, 40, 5, 6, 1, 2, 10], limit=16) == [[11, 3]]


def test_real_calls_need_a_forward_only_per_free_value_token(embedded_adapter):
    """On the embedded tokenizer, a verify loop that accepts the longest matching schema draft writes a call
    in at most one forward per token of its free values, plus one: the name, argument names, punctuation,
    enum and boolean values all come from drafts."""
    adapter = embedded_adapter
    drafter = CallDrafter(call_patterns(adapter, [COMMUTE, RATE, NO_ARGS]), adapter.protocol.tool_call_open)
    calls = [("calculate_commute", {"origin_address": "90 Lake Drive", "destination_address": "Harbor Tech Park",
                                    "mode": "cycling"}, ("origin_address", "destination_address")),
             ("get_exchange_rate", {"amount": 250, "currency": "EUR", "exact": False}, ("amount", "currency")),
             ("get_time", {}, ())]
    for name, arguments, free in calls:
        tokens = adapter.tool_call_tokens(name, arguments)
        position, forwards = 1, 0
        while position < len(tokens):
            accepted = max([_common_prefix(draft, tokens[position:]) for draft in drafter.drafts(tokens[:position], 64)] + [0])
            position += accepted + 1  # the accepted draft tokens and the target's own next token
            forwards += 1
        value_tokens = sum(len(adapter.encode_text(str(arguments[key]))) for key in free)
        assert forwards <= value_tokens + 1, (name, forwards, value_tokens)
        assert forwards < len(tokens) // 3


def _common_prefix(draft, tokens):
    n = 0
    while n < min(len(draft), len(tokens)) and draft[n] == tokens[n]:
        n += 1
    return n


def test_tool_call_tokens_render_the_hermes_form(embedded_adapter):
    p = embedded_adapter.protocol
    tokens = embedded_adapter.tool_call_tokens("f", {"x": 1})
    assert tokens[0] == p.tool_call_open and tokens[-1] == p.tool_call_close
    assert embedded_adapter.decode_tokens(tokens[1:-1]) == '{"name": "f", "arguments": {"x": 1}}'
