"""The metadata filter language: its shape (Bedrock's RetrievalFilter, plus exists/notExists), its bounds and the
paths its errors name, and its meaning over one file's attributes (the oracle every lane's SQL is tested against)."""

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shared.domain.metadata import DateText
from shared.domain.metadata_filter import (
    MAX_DEPTH,
    MAX_IN_VALUES,
    MAX_LEAVES,
    FilterError,
    Group,
    Leaf,
    Presence,
    matches,
    parse_filter,
)

FILE = {
    "customer": "acme",
    "amount": 1250,
    "urgent": True,
    "signed": DateText("2026-03-01"),  # typed: a date key's value
    "tags": ["nda", "renewal"],
    "quire.filename": "acme-contract.pdf",
    "quire.uploadedAt": datetime(2026, 12, 6, 9, 30, tzinfo=UTC),
}


def leaf(operator: str, key: str, value: Any) -> dict[str, Any]:
    return {operator: {"key": key, "value": value}}


def test_bedrocks_shape_parses_into_a_tree() -> None:
    parsed = parse_filter(
        {
            "andAll": [
                leaf("equals", "customer", "acme"),
                {"orAll": [leaf("greaterThan", "amount", 1000), {"notExists": {"key": "archived"}}]},
            ]
        }
    )
    assert parsed == Group(
        "andAll",
        (
            Leaf("equals", "customer", "acme"),
            Group("orAll", (Leaf("greaterThan", "amount", 1000), Presence("notExists", "archived"))),
        ),
    )


@pytest.mark.parametrize(
    ("raw", "path", "says"),
    [
        (
            {"andAll": [leaf("equals", "a", 1), leaf("equals", "b", 2), {"near": {"key": "c"}}]},
            "filter.andAll[2].near",
            "not an operator",
        ),
        (
            {"andAll": [leaf("equals", "a", 1), leaf("greaterThan", "b", "soon")]},
            "filter.andAll[1].greaterThan.value",
            "ISO 8601",
        ),
        (leaf("equals", "Customer", "acme"), "filter.equals.key", "^[a-z]"),
        (leaf("equals", "quire.secret", "x"), "filter.equals.key", "built-in"),
        (leaf("equals", "amount", float("nan")), "filter.equals.value", "finite"),
        (leaf("equals", "customer", "a\x00b"), "filter.equals.value", "control character"),
        (leaf("equals", "customer", "x" * 1025), "filter.equals.value", "at most 1024"),
        (leaf("equals", "customer", {"nested": 1}), "filter.equals.value", "string, a number or a boolean"),
        (leaf("in", "customer", []), "filter.in.value", "non-empty list"),
        (leaf("in", "customer", ["x"] * (MAX_IN_VALUES + 1)), "filter.in.value", f"at most {MAX_IN_VALUES}"),
        (leaf("startsWith", "customer", ""), "filter.startsWith.value", "non-empty string"),
        ({"equals": {"key": "a", "value": 1, "extra": 2}}, "filter.equals", "exactly a key and a value"),
        ({"exists": {"key": "a", "value": 1}}, "filter.exists", "key only"),
        ({"orAll": []}, "filter.orAll", "non-empty list"),
        ({"equals": {"key": "a", "value": 1}, "in": {"key": "a", "value": [1]}}, "filter", "exactly one operator"),
        ("customer = acme", "filter", "exactly one operator"),
    ],
)
def test_a_malformed_filter_names_the_path_and_the_rule(raw: Any, path: str, says: str) -> None:
    with pytest.raises(FilterError) as refused:
        parse_filter(raw)
    assert refused.value.path == path
    assert says in str(refused.value)


def test_depth_and_the_number_of_conditions_are_bounded() -> None:
    nested: dict[str, Any] = leaf("equals", "a", 1)
    for _ in range(MAX_DEPTH - 1):
        nested = {"andAll": [nested]}
    assert parse_filter(nested)
    with pytest.raises(FilterError, match=f"deeper than {MAX_DEPTH}"):
        parse_filter({"andAll": [nested]})
    assert parse_filter({"orAll": [leaf("equals", "a", i) for i in range(MAX_LEAVES)]})
    with pytest.raises(FilterError, match=f"at most {MAX_LEAVES}"):
        parse_filter({"orAll": [leaf("equals", "a", i) for i in range(MAX_LEAVES + 1)]})


@pytest.mark.parametrize(
    ("raw", "kept"),
    [
        (leaf("equals", "customer", "acme"), True),
        (leaf("equals", "amount", "1250"), False),  # a number is not equal to its text
        (leaf("notEquals", "customer", "globex"), True),
        (leaf("notEquals", "region", "eu"), True),  # a file without the key is kept by notEquals
        (leaf("equals", "region", "eu"), False),
        (leaf("greaterThan", "amount", 1000), True),
        (leaf("lessThanOrEquals", "amount", 1250), True),
        (leaf("lessThan", "amount", 1250), False),
        (leaf("greaterThan", "customer", 3), False),  # a string never compares with a number
        (leaf("greaterThanOrEquals", "signed", "2026-03-01T00:00:00Z"), True),  # a day is its midnight, UTC
        (leaf("lessThan", "quire.uploadedAt", "2026-12-07"), True),
        (leaf("greaterThan", "signed", 20260301), False),  # a date never compares with a number
        (leaf("in", "customer", ["globex", "acme"]), True),
        (leaf("notIn", "customer", ["acme"]), False),
        (leaf("notIn", "region", ["eu"]), True),
        (leaf("listContains", "tags", "nda"), True),
        (leaf("listContains", "customer", "acme"), False),
        (leaf("startsWith", "quire.filename", "acme-"), True),
        (leaf("stringContains", "quire.filename", "contract"), True),
        (leaf("equals", "urgent", True), True),
        (leaf("equals", "urgent", 1), False),  # a boolean is not a number
        ({"exists": {"key": "tags"}}, True),
        ({"notExists": {"key": "tags"}}, False),
        ({"andAll": [leaf("equals", "customer", "acme"), leaf("equals", "urgent", False)]}, False),
        ({"orAll": [leaf("equals", "customer", "globex"), leaf("equals", "urgent", True)]}, True),
    ],
)
def test_what_a_filter_keeps(raw: dict[str, Any], kept: bool) -> None:
    assert matches(parse_filter(raw), FILE) is kept, json.dumps(raw)


_values = st.one_of(st.integers(-5, 5), st.sampled_from(["a", "b", "2026-01-01", "2026-06-01"]), st.booleans())
_attributes = st.dictionaries(st.sampled_from(["k1", "k2", "k3"]), _values, max_size=3)
_leaves = st.builds(
    leaf,
    st.sampled_from(["equals", "notEquals", "greaterThan", "lessThanOrEquals"]),
    st.sampled_from(["k1", "k2", "k3"]),
    st.one_of(st.integers(-5, 5), st.sampled_from(["2026-03-01"])),
)


@settings(max_examples=200, deadline=None)
@given(_leaves, _leaves, _attributes)
def test_groups_combine_as_logic_does(
    first: dict[str, Any], second: dict[str, Any], attributes: dict[str, Any]
) -> None:
    one, two = parse_filter(first), parse_filter(second)
    both = matches(parse_filter({"andAll": [first, second]}), attributes)
    either = matches(parse_filter({"orAll": [first, second]}), attributes)
    assert both == (matches(one, attributes) and matches(two, attributes))
    assert either == (matches(one, attributes) or matches(two, attributes))


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(["k1", "k2"]), st.lists(_values, min_size=1, max_size=4), _attributes)
def test_in_is_an_orall_of_equals_and_notin_its_negation(
    key: str, values: list[Any], attributes: dict[str, Any]
) -> None:
    inside = matches(parse_filter(leaf("in", key, values)), attributes)
    assert inside == any(matches(parse_filter(leaf("equals", key, v)), attributes) for v in values)
    assert matches(parse_filter(leaf("notIn", key, values)), attributes) == (not inside)
