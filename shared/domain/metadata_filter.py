"""The metadata filter language (issue 33): Bedrock Knowledge Bases' `RetrievalFilter` shape, plus `exists` and
`notExists`, parsed into a bounded tree, and its meaning over one file's attributes (`matches`), which every lane's
SQL must agree with.

A filter object has exactly one operator: a leaf `{"equals": {"key": k, "value": v}}`, a presence test
`{"exists": {"key": k}}`, or a group `{"andAll": [f, ...]}`. A malformed filter is a `FilterError` whose message
names the path of what is wrong (`filter.andAll[2].greaterThan.value`) and the rule or limit it broke.
"""

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from shared.domain.metadata import METADATA_KEY, DateText, as_instant, scalar_problem

MAX_DEPTH = 5
MAX_LEAVES = 50
MAX_IN_VALUES = 500
BUILT_IN_KEYS = frozenset(
    {"quire.collection", "quire.mediaType", "quire.filename", "quire.uploadedAt", "quire.pages", "quire.language"}
)

COMPARISONS = ("greaterThan", "greaterThanOrEquals", "lessThan", "lessThanOrEquals")
EQUALITIES = ("equals", "notEquals")
MEMBERSHIPS = ("in", "notIn")
TEXT_TESTS = ("startsWith", "stringContains", "listContains")
PRESENCE = ("exists", "notExists")
GROUPS = ("andAll", "orAll")
OPERATORS = (*EQUALITIES, *COMPARISONS, *MEMBERSHIPS, *TEXT_TESTS, *PRESENCE, *GROUPS)

Scalar = str | int | float | bool


class FilterError(ValueError):
    """A filter that cannot be applied; `path` names where (`filter.andAll[0].in.value`)."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path


@dataclass(frozen=True)
class Leaf:
    operator: str
    key: str
    value: Scalar | tuple[Scalar, ...]


@dataclass(frozen=True)
class Presence:
    operator: str  # exists | notExists
    key: str


@dataclass(frozen=True)
class Group:
    operator: str  # andAll | orAll
    filters: tuple["Filter", ...]


Filter = Leaf | Presence | Group


@dataclass(frozen=True)
class MetadataFilter:
    """A parsed filter and the JSON it came from, keys sorted (what a cache key and a sentence name)."""

    tree: "Filter"
    text: str

    @classmethod
    def parse(cls, raw: object, *, path: str = "filter") -> "MetadataFilter":
        tree = parse_filter(raw, path=path)
        return cls(tree, json.dumps(raw, sort_keys=True, ensure_ascii=False, separators=(",", ":")))

    def keeps(self, attributes: Mapping[str, Any]) -> bool:
        return matches(self.tree, attributes)


def parse_filter(raw: object, *, path: str = "filter") -> Filter:
    """The filter `raw` (parsed JSON) as a tree within the bounds; FilterError names what is wrong and where."""
    parsed = _parse(raw, path, depth=1)
    leaves = _count_leaves(parsed)
    if leaves > MAX_LEAVES:
        raise FilterError(path, f"has {leaves} conditions; at most {MAX_LEAVES} are allowed")
    return parsed


def _parse(raw: object, path: str, *, depth: int) -> Filter:
    if depth > MAX_DEPTH:
        raise FilterError(path, f"nests deeper than {MAX_DEPTH} levels")
    if not isinstance(raw, Mapping) or len(raw) != 1:
        raise FilterError(path, 'must be an object with exactly one operator, such as {"equals": {...}}')
    ((operator, body),) = raw.items()
    here = f"{path}.{operator}"
    if operator not in OPERATORS:
        raise FilterError(here, f"is not an operator; use one of {', '.join(OPERATORS)}")
    if operator in GROUPS:
        if not isinstance(body, list) or not body:
            raise FilterError(here, "must be a non-empty list of filters")
        return Group(operator, tuple(_parse(item, f"{here}[{i}]", depth=depth + 1) for i, item in enumerate(body)))
    if not isinstance(body, Mapping):
        raise FilterError(here, "must be an object with a key" + ("" if operator in PRESENCE else " and a value"))
    key = _key(body.get("key"), f"{here}.key")
    if operator in PRESENCE:
        if set(body) != {"key"}:
            raise FilterError(here, "takes a key only")
        return Presence(operator, key)
    if set(body) != {"key", "value"}:
        raise FilterError(here, "takes exactly a key and a value")
    return Leaf(operator, key, _value(operator, body["value"], f"{here}.value"))


def _key(raw: object, path: str) -> str:
    if isinstance(raw, str) and raw.startswith("quire.") and raw not in BUILT_IN_KEYS:
        raise FilterError(path, "names no built-in key (quire. is reserved: " + ", ".join(sorted(BUILT_IN_KEYS)) + ")")
    if not isinstance(raw, str) or not (raw in BUILT_IN_KEYS or METADATA_KEY.fullmatch(raw)):
        raise FilterError(
            path,
            "must be a metadata key (^[a-z][a-z0-9_.-]{0,63}$) or a built-in one ("
            + ", ".join(sorted(BUILT_IN_KEYS))
            + ")",
        )
    return raw


def _value(operator: str, raw: object, path: str) -> Scalar | tuple[Scalar, ...]:
    if operator in MEMBERSHIPS:
        if not isinstance(raw, list) or not raw:
            raise FilterError(path, "must be a non-empty list of values")
        if len(raw) > MAX_IN_VALUES:
            raise FilterError(path, f"has {len(raw)} values; at most {MAX_IN_VALUES} are allowed")
        return tuple(_scalar(item, f"{path}[{i}]") for i, item in enumerate(raw))
    if operator in TEXT_TESTS:
        if not isinstance(raw, str) or not raw:
            raise FilterError(path, "must be a non-empty string")
        return _scalar(raw, path)
    value = _scalar(raw, path)
    if operator in COMPARISONS and (isinstance(value, bool) or (isinstance(value, str) and as_instant(value) is None)):
        raise FilterError(path, "must be a number or an ISO 8601 date (2026-12-06 or 2026-12-06T09:30:00Z) to compare")
    return value


def _scalar(raw: object, path: str) -> Scalar:
    if not isinstance(raw, str | int | float | bool):
        raise FilterError(path, "must be a string, a number or a boolean")
    problem = scalar_problem(raw)
    if problem:
        raise FilterError(path, problem)
    return raw


def _count_leaves(parsed: Filter) -> int:
    if isinstance(parsed, Group):
        return sum(_count_leaves(child) for child in parsed.filters)
    return 1


def matches(parsed: Filter, attributes: Mapping[str, Any]) -> bool:
    """Whether a file with `attributes` is kept: its metadata typed (`metadata.typed_attributes`: a date key's
    value is a DateText) and its `quire.*` keys (strings, numbers, and `quire.uploadedAt` as a datetime). A
    condition on a key the file does not have keeps it only for notEquals, notIn and notExists. A value is read in
    the type of the key it is compared with, and types never cross: a number is not equal to its text, a date
    compares with a date only, the text "2026-12-06" equals a string key's "2026-12-06" but a date key's value only
    as the same instant."""
    if isinstance(parsed, Group):
        results = (matches(child, attributes) for child in parsed.filters)
        return all(results) if parsed.operator == "andAll" else any(results)
    present = parsed.key in attributes and attributes[parsed.key] is not None
    if isinstance(parsed, Presence):
        return present == (parsed.operator == "exists")
    if not present:
        return parsed.operator in ("notEquals", "notIn")
    return bool(_LEAF_TESTS[parsed.operator](attributes[parsed.key], parsed.value))


def _instant_of(actual: Any) -> datetime | None:
    if isinstance(actual, DateText):
        return actual.instant
    return actual if isinstance(actual, datetime) else None


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _equal(actual: Any, wanted: Any) -> bool:
    instant = _instant_of(actual)
    if instant is not None:
        return isinstance(wanted, str) and as_instant(wanted) == instant
    if isinstance(actual, bool) or isinstance(wanted, bool):
        return isinstance(actual, bool) and isinstance(wanted, bool) and actual == wanted
    if _is_number(actual):
        return _is_number(wanted) and bool(actual == wanted)
    return isinstance(actual, str) and isinstance(wanted, str) and actual == wanted


def _ordered(actual: Any, wanted: Any) -> int | None:
    """-1, 0 or 1 comparing `actual` with `wanted` when both are numbers (exactly: an int is not rounded to a
    float) or both dates; None otherwise."""
    instant = _instant_of(actual)
    if instant is not None:
        other = as_instant(wanted) if isinstance(wanted, str) else None
        if other is None:
            return None
        return (instant > other) - (instant < other)
    if _is_number(actual) and _is_number(wanted):
        return int(actual > wanted) - int(actual < wanted)
    return None


def _compared(wanted_order: tuple[int, ...]) -> Any:
    def test(actual: Any, wanted: Any) -> bool:
        order = _ordered(actual, wanted)
        return order is not None and order in wanted_order

    return test


def _text_of(actual: Any) -> str | None:
    """The text a startsWith or stringContains reads: a string's, or a date's as written in the metadata."""
    return str(actual) if isinstance(actual, str) else None


def _contains(actual: Any, wanted: Any) -> bool:
    # As Bedrock's stringContains: a string containing the value, or a list with a member that does.
    if isinstance(actual, list | tuple):
        return any(str(wanted) in item for item in actual)
    text = _text_of(actual)
    return text is not None and str(wanted) in text


_LEAF_TESTS: Mapping[str, Any] = {
    "equals": _equal,
    "notEquals": lambda actual, wanted: not _equal(actual, wanted),
    "in": lambda actual, wanted: any(_equal(actual, item) for item in wanted),
    "notIn": lambda actual, wanted: not any(_equal(actual, item) for item in wanted),
    "listContains": lambda actual, wanted: isinstance(actual, list | tuple) and wanted in actual,
    "startsWith": lambda actual, wanted: (text := _text_of(actual)) is not None and text.startswith(str(wanted)),
    "stringContains": _contains,
    "greaterThan": _compared((1,)),
    "greaterThanOrEquals": _compared((0, 1)),
    "lessThan": _compared((-1,)),
    "lessThanOrEquals": _compared((-1, 0)),
}


MAX_FACET_KEYS = 10
MAX_FACET_VALUES = 50
# The built-in keys a facet may count (the rest are instants and numbers: a range filter suits them).
FACET_BUILT_INS = ("quire.collection", "quire.mediaType")


def facet_keys(raw: Sequence[object], *, path: str = "facets") -> tuple[str, ...]:
    """The keys to count values of, each a metadata key or a FACET_BUILT_INS key, at most MAX_FACET_KEYS, no
    repeats; FilterError names the one that is not."""
    if len(raw) > MAX_FACET_KEYS:
        raise FilterError(path, f"names {len(raw)} keys; at most {MAX_FACET_KEYS} are allowed")
    keys: list[str] = []
    for index, key in enumerate(raw):
        here = f"{path}[{index}]"
        metadata_key = isinstance(key, str) and METADATA_KEY.fullmatch(key) and not key.startswith("quire.")
        if not isinstance(key, str) or not (key in FACET_BUILT_INS or metadata_key):
            raise FilterError(
                here, f"must be a metadata key (^[a-z][a-z0-9_.-]{{0,63}}$) or one of {', '.join(FACET_BUILT_INS)}"
            )
        if key in keys:
            raise FilterError(here, f"{key} is named twice")
        keys.append(key)
    return tuple(keys)
