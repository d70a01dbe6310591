"""A collection's metadata schema: the body parsed within its bounds (each refusal naming its path), and metadata
checked against it (each breach naming the key and the rule)."""

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shared.domain.metadata import MAX_KEYS, MetadataType, MetadataValue, as_instant, validated_metadata
from shared.domain.metadata_schema import (
    MAX_ALLOWED_VALUES,
    KeyRule,
    MetadataSchema,
    SchemaError,
    parse_schema,
    schema_from_json,
    schema_problem,
)

BODY: dict[str, Any] = {
    "keys": {
        "customer": {"type": "string", "required": True, "allowed": ["acme", "globex"]},
        "amount": {"type": "number"},
        "effective": {"type": "date"},
        "tags": {"type": "list", "allowed": ["nda", "renewal"]},
        "urgent": {"type": "boolean"},
    },
    "additionalKeys": True,
}


def schema(keys: dict[str, Any], *, additional: bool = True) -> MetadataSchema:
    return parse_schema({"keys": keys, "additionalKeys": additional})


def problem(metadata: dict[str, Any], parsed: MetadataSchema) -> tuple[str, str] | None:
    found = schema_problem(validated_metadata(metadata), parsed)
    return None if found is None else (found.path, str(found))


def test_the_body_reads_as_declared_rules_with_their_defaults() -> None:
    parsed = parse_schema(BODY)
    assert parsed.keys["customer"] == KeyRule(MetadataType.STRING, required=True, allowed=("acme", "globex"))
    assert parsed.keys["amount"] == KeyRule(MetadataType.NUMBER, required=False, allowed=None)
    assert parsed.additional_keys is True
    assert parse_schema({"keys": {}}).additional_keys is True
    assert parsed.declared_types() == {
        "amount": MetadataType.NUMBER,
        "customer": MetadataType.STRING,
        "effective": MetadataType.DATE,
        "tags": MetadataType.LIST,
        "urgent": MetadataType.BOOLEAN,
    }


def test_as_json_is_the_body_with_defaults_written_out_and_reads_back_the_same() -> None:
    parsed = parse_schema(BODY)
    stored = parsed.as_json()
    assert stored["additionalKeys"] is True
    assert stored["keys"]["amount"] == {"type": "number", "required": False}
    assert stored["keys"]["tags"] == {"type": "list", "required": False, "allowed": ["nda", "renewal"]}
    assert schema_from_json(stored) == parsed
    assert schema_from_json(stored).as_json() == stored
    closed = schema({"when": {"type": "date", "required": True, "allowed": ["2026-01-01"]}}, additional=False)
    assert schema_from_json(closed.as_json()) == closed


def test_the_parsed_schema_cannot_be_changed() -> None:
    parsed = parse_schema(BODY)
    with pytest.raises(TypeError):
        parsed.keys["new"] = KeyRule(MetadataType.STRING)  # type: ignore[index]


@pytest.mark.parametrize(
    ("raw", "path", "message"),
    [
        ([], "schema", 'schema: must be an object such as {"keys": {"customer": {"type": "string"}}}'),
        ({}, "schema.keys", "schema.keys: is required: an object of the declared keys and their rules"),
        ({"keys": []}, "schema.keys", "schema.keys: must be an object of the declared keys and their rules"),
        (
            {"keys": {}, "additional": False},
            "schema.additional",
            "schema.additional: is not a field of a metadata schema; use keys, additionalKeys",
        ),
        (
            {"keys": {}, "additionalKeys": "no"},
            "schema.additionalKeys",
            "schema.additionalKeys: must be true or false (whether undeclared keys are allowed)",
        ),
        (
            {"keys": {f"k{i}": {"type": "string"} for i in range(MAX_KEYS + 1)}},
            "schema.keys",
            f"schema.keys: declares {MAX_KEYS + 1} keys; at most {MAX_KEYS} are allowed",
        ),
        (
            {"keys": {"Customer": {"type": "string"}}},
            "schema.keys.Customer",
            "schema.keys.Customer: a key must match ^[a-z][a-z0-9_.-]{0,63}$ and not start with quire. (reserved)",
        ),
        (
            {"keys": {"quire.filename": {"type": "string"}}},
            "schema.keys.quire.filename",
            "schema.keys.quire.filename: a key must match ^[a-z][a-z0-9_.-]{0,63}$ and not start with quire. "
            "(reserved)",
        ),
        (
            {"keys": {"customer": "string"}},
            "schema.keys.customer",
            'schema.keys.customer: must be an object such as {"type": "string", "required": true}',
        ),
        (
            {"keys": {"customer": {"type": "string", "requierd": True}}},
            "schema.keys.customer.requierd",
            "schema.keys.customer.requierd: is not a field of a key's rule; use type, required, allowed",
        ),
        (
            {"keys": {"customer": {"required": True}}},
            "schema.keys.customer.type",
            "schema.keys.customer.type: must be one of string, number, boolean, date, list",
        ),
        (
            {"keys": {"amount": {"type": "integer"}}},
            "schema.keys.amount.type",
            "schema.keys.amount.type: must be one of string, number, boolean, date, list",
        ),
        (
            {"keys": {"amount": {"type": "number", "required": "yes"}}},
            "schema.keys.amount.required",
            "schema.keys.amount.required: must be true or false",
        ),
        (
            {"keys": {"customer": {"type": "string", "allowed": []}}},
            "schema.keys.customer.allowed",
            "schema.keys.customer.allowed: must be a non-empty list of values",
        ),
        (
            {"keys": {"customer": {"type": "string", "allowed": None}}},
            "schema.keys.customer.allowed",
            "schema.keys.customer.allowed: must be a non-empty list of values",
        ),
        (
            {"keys": {"customer": {"type": "string", "allowed": ["a"] * (MAX_ALLOWED_VALUES + 1)}}},
            "schema.keys.customer.allowed",
            f"schema.keys.customer.allowed: has {MAX_ALLOWED_VALUES + 1} values; "
            f"at most {MAX_ALLOWED_VALUES} are allowed",
        ),
        (
            {"keys": {"customer": {"type": "string", "allowed": ["a", "b", "c", ["d"]]}}},
            "schema.keys.customer.allowed[3]",
            "schema.keys.customer.allowed[3]: must be a string, a number or a boolean",
        ),
        (
            {"keys": {"customer": {"type": "string", "allowed": ["a", "x" * 1025]}}},
            "schema.keys.customer.allowed[1]",
            "schema.keys.customer.allowed[1]: is 1025 characters; at most 1024 are allowed",
        ),
        (
            {"keys": {"customer": {"type": "string", "allowed": ["a\x00"]}}},
            "schema.keys.customer.allowed[0]",
            "schema.keys.customer.allowed[0]: holds a control character, a NUL or a lone surrogate",
        ),
        (
            {"keys": {"amount": {"type": "number", "allowed": [1, float("nan")]}}},
            "schema.keys.amount.allowed[1]",
            "schema.keys.amount.allowed[1]: must be a finite number",
        ),
        (
            {"keys": {"customer": {"type": "string", "allowed": ["a", 3]}}},
            "schema.keys.customer.allowed[1]",
            "schema.keys.customer.allowed[1]: must be a string, as customer is a string",
        ),
        (
            {"keys": {"amount": {"type": "number", "allowed": [1, "2"]}}},
            "schema.keys.amount.allowed[1]",
            "schema.keys.amount.allowed[1]: must be a number, as amount is a number",
        ),
        (
            {"keys": {"amount": {"type": "number", "allowed": [True]}}},
            "schema.keys.amount.allowed[0]",
            "schema.keys.amount.allowed[0]: must be a number, as amount is a number",
        ),
        (
            {"keys": {"urgent": {"type": "boolean", "allowed": [True, 1]}}},
            "schema.keys.urgent.allowed[1]",
            "schema.keys.urgent.allowed[1]: must be true or false, as urgent is a boolean",
        ),
        (
            {"keys": {"effective": {"type": "date", "allowed": ["2026-01-01", "2026-01-01T09:00:00"]}}},
            "schema.keys.effective.allowed[1]",
            "schema.keys.effective.allowed[1]: must be an ISO 8601 day or instant with its zone "
            "(2026-12-06 or 2026-12-06T09:30:00Z), as effective is a date",
        ),
        (
            {"keys": {"tags": {"type": "list", "allowed": ["nda", 7]}}},
            "schema.keys.tags.allowed[1]",
            "schema.keys.tags.allowed[1]: must be a string, as tags is a list of strings",
        ),
    ],
)
def test_a_schema_breaking_a_rule_or_bound_is_refused_naming_its_path(raw: Any, path: str, message: str) -> None:
    with pytest.raises(SchemaError) as refused:
        parse_schema(raw)
    assert refused.value.path == path
    assert str(refused.value) == message
    assert isinstance(refused.value, ValueError)


def test_the_bounds_themselves_are_accepted() -> None:
    at_most = parse_schema({"keys": {f"k{i}": {"type": "string", "allowed": ["x"] * 10} for i in range(64)}})
    assert len(at_most.keys) == MAX_KEYS
    many = parse_schema({"keys": {"k": {"type": "string", "allowed": ["x" * 100] * 500}}}).keys["k"].allowed
    assert many is not None and len(many) == 500
    assert parse_schema({"keys": {"k": {"type": "string", "allowed": ["x" * 1024]}}}).keys["k"].allowed == ("x" * 1024,)


def test_a_schema_is_bounded_as_a_whole() -> None:
    # Every key within its own bounds, the whole too large to read on every write.
    with pytest.raises(SchemaError, match=r"^schema: is \d+ bytes as JSON; at most 65536 are allowed$"):
        parse_schema({"keys": {f"k{i}": {"type": "string", "allowed": ["x" * 1024] * 500} for i in range(64)}})
    assert parse_schema({"keys": {"urgent": {"type": "boolean", "allowed": [True]}}}).keys["urgent"].allowed == (True,)


def test_a_path_prefix_is_kept() -> None:
    with pytest.raises(SchemaError) as refused:
        parse_schema({"keys": {"a": {"type": "x"}}}, path="body")
    assert refused.value.path == "body.keys.a.type"


def test_metadata_keeping_every_rule_has_no_problem() -> None:
    parsed = parse_schema(BODY)
    kept = {
        "customer": "acme",
        "amount": 12,
        "effective": "2026-03-01T09:30:00+02:00",
        "tags": ["renewal", "nda", "nda"],
        "urgent": False,
        "other": "anything",
    }
    assert problem(kept, parsed) is None
    assert problem({"customer": "globex"}, parsed) is None


@pytest.mark.parametrize(
    ("metadata", "path", "message"),
    [
        ({"amount": 3}, "metadata.customer", "metadata.customer: is required by the collection's schema"),
        # The required key missing is named before any value, though the value's key sorts first.
        ({"amount": "three"}, "metadata.customer", "metadata.customer: is required by the collection's schema"),
        (
            {"customer": "acme", "amount": "12"},
            "metadata.amount",
            "metadata.amount: is a string, but the collection's schema declares amount a number",
        ),
        (
            {"customer": "acme", "amount": True},
            "metadata.amount",
            "metadata.amount: is a boolean, but the collection's schema declares amount a number",
        ),
        (
            {"customer": "acme", "urgent": 1},
            "metadata.urgent",
            "metadata.urgent: is a number, but the collection's schema declares urgent a boolean",
        ),
        (
            {"customer": "acme", "effective": "2026-03-01T09:30:00"},
            "metadata.effective",
            "metadata.effective: is a string, but the collection's schema declares effective a date: "
            "an ISO 8601 day or instant with its zone (2026-12-06 or 2026-12-06T09:30:00Z)",
        ),
        (
            {"customer": "acme", "tags": "nda"},
            "metadata.tags",
            "metadata.tags: is a string, but the collection's schema declares tags a list",
        ),
        (
            {"customer": ["acme"]},
            "metadata.customer",
            "metadata.customer: is a list, but the collection's schema declares customer a string",
        ),
        (
            {"customer": "initech"},
            "metadata.customer",
            'metadata.customer: "initech" is not among the allowed values of customer',
        ),
        (
            {"customer": "acme", "tags": ["nda", "renewal", "x"]},
            "metadata.tags[2]",
            'metadata.tags[2]: "x" is not among the allowed values of tags',
        ),
        # Keys are checked in sorted order: amount before customer.
        (
            {"customer": "initech", "amount": "12"},
            "metadata.amount",
            "metadata.amount: is a string, but the collection's schema declares amount a number",
        ),
    ],
)
def test_metadata_breaking_the_schema_names_the_key_and_the_rule(
    metadata: dict[str, Any], path: str, message: str
) -> None:
    assert problem(metadata, parse_schema(BODY)) == (path, message)


def test_a_string_key_takes_date_like_text() -> None:
    parsed = schema({"ref": {"type": "string", "allowed": ["2026-01-01"]}})
    assert problem({"ref": "2026-01-01"}, parsed) is None
    # Text is compared as text: the same instant written otherwise is another string.
    assert problem({"ref": "2026-01-01T00:00:00Z"}, parsed) == (
        "metadata.ref",
        'metadata.ref: "2026-01-01T00:00:00Z" is not among the allowed values of ref',
    )


def test_a_date_key_compares_allowed_values_as_instants() -> None:
    parsed = schema({"effective": {"type": "date", "allowed": ["2026-01-01", "2026-06-01T12:00:00Z"]}})
    assert problem({"effective": "2026-01-01T00:00:00Z"}, parsed) is None
    assert problem({"effective": "2026-06-01T14:00:00+02:00"}, parsed) is None
    assert problem({"effective": "2026-06-01"}, parsed) == (
        "metadata.effective",
        'metadata.effective: "2026-06-01" is not among the allowed values of effective',
    )


def test_a_number_key_allows_the_same_number_however_written() -> None:
    parsed = schema({"amount": {"type": "number", "allowed": [1, 2.5]}})
    assert problem({"amount": 1.0}, parsed) is None
    assert problem({"amount": 2.5}, parsed) is None
    assert problem({"amount": 2}, parsed) == (
        "metadata.amount",
        "metadata.amount: 2 is not among the allowed values of amount",
    )


def test_undeclared_keys_are_refused_only_when_additional_keys_is_false() -> None:
    declared = {"customer": {"type": "string"}}
    assert problem({"customer": "acme", "zone": "eu"}, schema(declared)) is None
    assert problem({"customer": "acme", "zone": "eu"}, schema(declared, additional=False)) == (
        "metadata.zone",
        "metadata.zone: is not declared by the collection's schema, which allows no other keys",
    )
    assert problem({}, schema({}, additional=False)) is None


def test_the_error_path_follows_the_callers_prefix() -> None:
    found = schema_problem({}, parse_schema(BODY), path="files[2].metadata")
    assert found is not None
    assert found.path == "files[2].metadata.customer"


# The property: random schemas and random metadata over a few keys and values chosen to collide (date-like text,
# one instant written three ways, 1 and 1.0, booleans), against the rules stated plainly.
_KEYS = ["a", "b", "c", "d"]
_TEXTS = ["acme", "globex", "2026-01-01", "2026-01-01T00:00:00Z", "2025-12-31T19:00:00-05:00", "2026-02-01"]
_NUMBERS = [0, 1, 1.0, 2.5, -3]
_ALLOWED_POOLS: dict[str, list[Any]] = {
    "string": _TEXTS,
    "number": _NUMBERS,
    "boolean": [True, False],
    "date": [text for text in _TEXTS if as_instant(text) is not None],
    "list": _TEXTS,
}


@st.composite
def raw_schemas(draw: st.DrawFn) -> dict[str, Any]:
    keys: dict[str, Any] = {}
    for key in draw(st.lists(st.sampled_from(_KEYS), unique=True, max_size=4)):
        kind = draw(st.sampled_from(list(_ALLOWED_POOLS)))
        rule: dict[str, Any] = {"type": kind}
        if draw(st.booleans()):
            rule["required"] = draw(st.booleans())
        if draw(st.booleans()):
            rule["allowed"] = draw(st.lists(st.sampled_from(_ALLOWED_POOLS[kind]), min_size=1, max_size=3))
        keys[key] = rule
    return {"keys": keys, "additionalKeys": draw(st.booleans())}


_metadata_values = st.one_of(
    st.sampled_from(_TEXTS),
    st.sampled_from(_NUMBERS),
    st.booleans(),
    st.lists(st.sampled_from(_TEXTS), max_size=3),
)
_metadata = st.dictionaries(st.sampled_from(_KEYS), _metadata_values, max_size=4)


def has_type(value: MetadataValue, kind: str) -> bool:
    if kind == "string":
        return isinstance(value, str)
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "date":
        return isinstance(value, str) and as_instant(value) is not None
    return isinstance(value, list)


def is_allowed(value: MetadataValue, kind: str, allowed: list[Any]) -> bool:
    if kind == "list":
        assert isinstance(value, list)
        return all(item in allowed for item in value)
    if kind == "date":
        assert isinstance(value, str)
        return any(as_instant(value) == as_instant(choice) for choice in allowed)
    # The value has the key's type here, so a number never meets a boolean.
    return value in allowed


def breaches(metadata: dict[str, MetadataValue], raw: dict[str, Any]) -> list[str]:
    """The keys whose rule `metadata` breaks: required ones missing first, then the rest in sorted order."""
    missing = [key for key in sorted(raw["keys"]) if raw["keys"][key].get("required") and key not in metadata]
    broken = []
    for key in sorted(metadata):
        rule = raw["keys"].get(key)
        if rule is None:
            if not raw["additionalKeys"]:
                broken.append(key)
        elif not has_type(metadata[key], rule["type"]) or (
            "allowed" in rule and not is_allowed(metadata[key], rule["type"], rule["allowed"])
        ):
            broken.append(key)
    return missing + broken


@settings(max_examples=200, deadline=None)
@given(raw_schemas(), _metadata)
def test_metadata_passes_exactly_when_it_keeps_every_rule(raw: dict[str, Any], metadata: dict[str, Any]) -> None:
    parsed = parse_schema(raw)
    assert schema_from_json(parsed.as_json()) == parsed
    found = schema_problem(validated_metadata(metadata), parsed)
    expected = breaches(metadata, raw)
    if not expected:
        assert found is None
    else:
        assert found is not None
        # The error names the first breached key (a list's item within it).
        assert found.path.split("[")[0] == f"metadata.{expected[0]}"
