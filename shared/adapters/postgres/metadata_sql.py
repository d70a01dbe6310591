"""A metadata filter (shared/domain/metadata_filter.py) as one SQL condition over a file's row, meaning exactly what
the domain's `matches` means: the property tests run both over the same files.

A product's keys are read from `files.metadata_typed` (migrations/0025: values under their type, dates as exact
microseconds), so a condition only ever meets values of its own type; `startsWith` and `stringContains` read the
text as written (`files.metadata`). The built-in `quire.*` keys are columns the caller names (`FileColumns`): the
chunk's in the lanes, the current version's in the file list. Every value is a parameter; no text of the filter
reaches the statement itself. A condition on a missing key is NULL inside, made false (or true under notEquals,
notIn and notExists) at its leaf, so NULL never leaks into the logic of a group.
"""

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from shared.domain.metadata import MetadataType, as_instant, microseconds_since_epoch
from shared.domain.metadata_filter import Filter, Group, Leaf, Presence, Scalar

_SQL_COMPARISON = {"greaterThan": ">", "greaterThanOrEquals": ">=", "lessThan": "<", "lessThanOrEquals": "<="}


@dataclass(frozen=True)
class FileColumns:
    """Where one statement reads a file's attributes: its metadata columns and each built-in key's column with its
    type (a key left out is one no file has yet, like `quire.language`)."""

    metadata: str = "f.metadata"
    typed: str = "f.metadata_typed"
    built_in: Mapping[str, tuple[str, MetadataType]] = field(default_factory=dict)


class _Parameters:
    """Named parameters added to the statement's own, under names no other part of it uses."""

    def __init__(self, params: dict[str, Any]) -> None:
        self._params = params
        self._next = sum(1 for name in params if name.startswith("filter_"))

    def __call__(self, value: Any, cast: str = "") -> str:
        name = f"filter_{self._next}"
        self._next += 1
        self._params[name] = value
        return f"%({name})s{cast}"


def filter_condition(parsed: Filter, columns: FileColumns, params: dict[str, Any]) -> str:
    """The SQL condition for `parsed`, its values added to `params`."""
    return _condition(parsed, columns, _Parameters(params))


def _condition(parsed: Filter, columns: FileColumns, param: _Parameters) -> str:
    if isinstance(parsed, Group):
        joiner = " AND " if parsed.operator == "andAll" else " OR "
        return "(" + joiner.join(_condition(child, columns, param) for child in parsed.filters) + ")"
    if isinstance(parsed, Presence):
        present = _present(parsed.key, columns, param)
        return present if parsed.operator == "exists" else f"(NOT {present})"
    if parsed.key in columns.built_in or parsed.key.startswith("quire."):
        column, kind = columns.built_in.get(parsed.key, ("NULL::text", MetadataType.STRING))
        inner = _built_in_leaf(parsed, column, kind, param)
    else:
        inner = _metadata_leaf(parsed, columns, param)
    if parsed.operator in ("notEquals", "notIn"):
        return f"(NOT coalesce({inner}, false))"
    return f"coalesce({inner}, false)"


def _present(key: str, columns: FileColumns, param: _Parameters) -> str:
    if key in columns.built_in or key.startswith("quire."):
        column, _ = columns.built_in.get(key, ("NULL::text", MetadataType.STRING))
        return f"({column} IS NOT NULL)"
    return f"({columns.metadata} ? {param(key)})"


def _positive_operator(leaf: Leaf) -> str:
    return {"notEquals": "equals", "notIn": "in"}.get(leaf.operator, leaf.operator)


def _values(leaf: Leaf) -> tuple[Scalar, ...]:
    return leaf.value if isinstance(leaf.value, tuple) else (leaf.value,)


def _metadata_leaf(leaf: Leaf, columns: FileColumns, param: _Parameters) -> str:
    key = param(leaf.key)
    typed, text = columns.typed, columns.metadata
    operator = _positive_operator(leaf)
    if operator in ("equals", "in"):
        return _any_of(_equal_groups(_values(leaf), key, typed, param))
    if operator in _SQL_COMPARISON:
        sign, value = _SQL_COMPARISON[operator], leaf.value
        if isinstance(value, str):
            instant = as_instant(value)
            assert instant is not None  # the parser lets only numbers and dates compare
            return f"(({typed}->'d'->{key}) {sign} {param(json.dumps(microseconds_since_epoch(instant)), '::jsonb')})"
        return f"(({typed}->'n'->{key}) {sign} {param(json.dumps(value), '::jsonb')})"
    wanted = param(str(leaf.value))
    written = f"(CASE WHEN jsonb_typeof({text}->{key}) = 'string' THEN {text}->>{key} END)"
    if operator == "startsWith":
        return f"starts_with({written}, {wanted})"
    if operator == "stringContains":
        members = f"jsonb_array_elements_text({typed}->'l'->{key})"
        in_list = f"EXISTS (SELECT 1 FROM {members} AS item WHERE strpos(item, {wanted}) > 0)"  # noqa: S608
        return f"(strpos({written}, {wanted}) > 0 OR {in_list})"
    if operator == "listContains":
        return f"(({typed}->'l'->{key}) ? {wanted})"
    raise AssertionError(f"no SQL for {leaf.operator}")


def _equal_groups(values: tuple[Scalar, ...], key: str, typed: str, param: _Parameters) -> list[str]:
    """Equality with any of `values`, each read in the type of the key it meets: a string equals a string key's
    value; if it is also a date, the instant it names equals a date key's."""
    strings = [v for v in values if isinstance(v, str)]
    booleans = [v for v in values if isinstance(v, bool)]
    numbers = [v for v in values if isinstance(v, int | float) and not isinstance(v, bool)]
    instants = [i for v in strings if (i := as_instant(v)) is not None]
    groups = []
    if strings:
        groups.append(f"({typed}->'s'->>{key}) = ANY({param(strings, '::text[]')})")
    if instants:
        micros = [json.dumps(microseconds_since_epoch(i)) for i in instants]
        groups.append(f"({typed}->'d'->{key}) = ANY({param(micros, '::jsonb[]')})")
    if numbers:
        groups.append(f"({typed}->'n'->{key}) = ANY({param([json.dumps(n) for n in numbers], '::jsonb[]')})")
    if booleans:
        groups.append(f"({typed}->'b'->{key}) = ANY({param([json.dumps(b) for b in booleans], '::jsonb[]')})")
    return groups


def _any_of(conditions: list[str]) -> str:
    return "(" + " OR ".join(conditions) + ")" if conditions else "false"


def _built_in_leaf(leaf: Leaf, column: str, kind: MetadataType, param: _Parameters) -> str:
    operator = _positive_operator(leaf)
    return _BUILT_IN[kind](operator, _values(leaf), column, param)


def _string_column(operator: str, values: tuple[Scalar, ...], column: str, param: _Parameters) -> str:
    strings = [v for v in values if isinstance(v, str)]
    if operator in ("equals", "in"):
        return f"({column} = ANY({param(strings, '::text[]')}))" if strings else "false"
    if operator == "startsWith":
        return f"starts_with({column}, {param(strings[0])})"
    if operator == "stringContains":
        return f"(strpos({column}, {param(strings[0])}) > 0)"
    return "false"  # strings neither order nor hold a list


def _number_column(operator: str, values: tuple[Scalar, ...], column: str, param: _Parameters) -> str:
    numbers = [json.dumps(v) for v in values if isinstance(v, int | float) and not isinstance(v, bool)]
    if not numbers:
        return "false"
    if operator in ("equals", "in"):
        return f"(to_jsonb({column}) = ANY({param(numbers, '::jsonb[]')}))"
    if operator in _SQL_COMPARISON:
        return f"(to_jsonb({column}) {_SQL_COMPARISON[operator]} {param(numbers[0], '::jsonb')})"
    return "false"


def _date_column(operator: str, values: tuple[Scalar, ...], column: str, param: _Parameters) -> str:
    instants: list[datetime] = [i for v in values if isinstance(v, str) and (i := as_instant(v)) is not None]
    if not instants:
        return "false"
    if operator in ("equals", "in"):
        return f"({column} = ANY({param(instants, '::timestamptz[]')}))"
    if operator in _SQL_COMPARISON:
        return f"({column} {_SQL_COMPARISON[operator]} {param(instants[0], '::timestamptz')})"
    return "false"  # a built-in date has no written text


_BUILT_IN: Mapping[MetadataType, Callable[[str, tuple[Scalar, ...], str, _Parameters], str]] = {
    MetadataType.STRING: _string_column,
    MetadataType.NUMBER: _number_column,
    MetadataType.DATE: _date_column,
}


def references_metadata(parsed: Filter) -> bool:
    """Whether `parsed` reads a product's own key (else only the built-in columns, and no join of the file)."""
    if isinstance(parsed, Group):
        return any(references_metadata(child) for child in parsed.filters)
    return not parsed.key.startswith("quire.")
