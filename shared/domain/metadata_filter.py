"""The metadata filter language (issue 33): Bedrock Knowledge Bases' `RetrievalFilter` shape, plus `exists` and
`notExists`, parsed into a bounded tree, and its meaning over one file's attributes (`matches`), which every lane's
SQL must agree with.

A filter object has exactly one operator: a leaf `{"equals": {"key": k, "value": v}}`, a presence test
`{"exists": {"key": k}}`, or a group `{"andAll": [f, ...]}`. A malformed filter is a `FilterError` whose message
names the path of what is wrong (`filter.andAll[2].greaterThan.value`) and the rule or limit it broke.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from shared.domain.metadata import METADATA_KEY, as_instant, scalar_problem

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
    """Whether a file with `attributes` (its metadata and its `quire.*` keys) is kept. A condition on a key the
    file does not have keeps it only for notEquals, notIn and notExists; values of different kinds never
    compare (a number is not equal to its text, a date compares with a date only)."""
    if isinstance(parsed, Group):
        results = (matches(child, attributes) for child in parsed.filters)
        return all(results) if parsed.operator == "andAll" else any(results)
    present = parsed.key in attributes and attributes[parsed.key] is not None
    if isinstance(parsed, Presence):
        return present == (parsed.operator == "exists")
    if not present:
        return parsed.operator in ("notEquals", "notIn")
    return bool(_LEAF_TESTS[parsed.operator](attributes[parsed.key], parsed.value))


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "date" if as_instant(value) is not None else "string"
    if isinstance(value, Sequence):
        return "list"
    return type(value).__name__


def _equal(actual: Any, wanted: Any) -> bool:
    if _kind(actual) != _kind(wanted):
        return False
    if _kind(actual) == "date":
        return as_instant(actual) == as_instant(wanted)
    return bool(actual == wanted)


def _ordered(actual: Any, wanted: Any) -> int | None:
    """-1, 0 or 1 comparing `actual` with `wanted` when both are numbers or both dates; None otherwise."""
    kinds = (_kind(actual), _kind(wanted))
    if kinds == ("number", "number"):
        left, right = float(actual), float(wanted)
    elif kinds == ("date", "date"):
        left_instant, right_instant = as_instant(actual), as_instant(wanted)
        assert left_instant is not None
        assert right_instant is not None
        left, right = left_instant.timestamp(), right_instant.timestamp()
    else:
        return None
    return (left > right) - (left < right)


def _compared(wanted_order: tuple[int, ...]) -> Any:
    def test(actual: Any, wanted: Any) -> bool:
        order = _ordered(actual, wanted)
        return order is not None and order in wanted_order

    return test


_LEAF_TESTS: Mapping[str, Any] = {
    "equals": _equal,
    "notEquals": lambda actual, wanted: not _equal(actual, wanted),
    "in": lambda actual, wanted: any(_equal(actual, item) for item in wanted),
    "notIn": lambda actual, wanted: not any(_equal(actual, item) for item in wanted),
    "listContains": lambda actual, wanted: isinstance(actual, list | tuple) and wanted in actual,
    "startsWith": lambda actual, wanted: isinstance(actual, str) and actual.startswith(str(wanted)),
    "stringContains": lambda actual, wanted: isinstance(actual, str) and str(wanted) in actual,
    "greaterThan": _compared((1,)),
    "greaterThanOrEquals": _compared((0, 1)),
    "lessThan": _compared((-1,)),
    "lessThanOrEquals": _compared((-1, 0)),
}
