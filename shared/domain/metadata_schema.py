"""A collection's optional metadata schema (issue 33): the keys it declares, each with its type, whether it is
required and the values it allows, and whether undeclared keys are allowed (`additionalKeys`).

The body of `PUT /v1/collections/{id}/metadata-schema` is parsed by `parse_schema` into a `MetadataSchema`, each
refusal a `SchemaError` naming the path of what is wrong (`schema.keys.customer.allowed[3]`). Metadata is checked
against a schema by `schema_problem`, which names the key and the rule it breaks. Pure: no database, no routes.
"""

import json
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from shared.domain.metadata import (
    MAX_KEYS,
    METADATA_KEY,
    MetadataError,
    MetadataType,
    MetadataValue,
    as_instant,
    scalar_problem,
    type_of,
)

MAX_ALLOWED_VALUES = 500
MAX_SCHEMA_BYTES = 64 * 1024
_SCHEMA_FIELDS = ("keys", "additionalKeys")
_RULE_FIELDS = ("type", "required", "allowed")
_TYPES = ", ".join(kind.value for kind in MetadataType)
_DATE_FORM = "an ISO 8601 day or instant with its zone (2026-12-06 or 2026-12-06T09:30:00Z)"

Scalar = str | int | float | bool


class SchemaError(ValueError):
    """A metadata schema Quire refuses; `path` names the field (`schema.keys.amount.type`)."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path


@dataclass(frozen=True)
class KeyRule:
    """A declared key: its type, whether every file must have it, and the values it may take (None: any). For a
    list key, `allowed` holds the strings its items may take; for a date key, days and instants that compare as the
    instants they name."""

    type: MetadataType
    required: bool = False
    allowed: tuple[Scalar, ...] | None = None

    def admits_type(self, value: MetadataValue) -> bool:
        # A string key takes any string, date-like text too; a date key only an ISO 8601 day or zoned instant.
        if self.type is MetadataType.STRING:
            return isinstance(value, str)
        return type_of(value) is self.type

    def disallowed(self, value: MetadataValue) -> tuple[int | None, Scalar] | None:
        """For a value of the key's type, what is not among `allowed`: (None, the value), or for a list (the
        index, the item) of its first item that is not; None when all is allowed."""
        if self.allowed is None:
            return None
        if isinstance(value, list):
            return next(((index, item) for index, item in enumerate(value) if item not in self.allowed), None)
        if self.type is MetadataType.DATE and isinstance(value, str):
            instants = {as_instant(str(allowed)) for allowed in self.allowed}
            return None if as_instant(value) in instants else (None, value)
        # A number is never a boolean here: both sides were checked against the key's type.
        return None if value in self.allowed else (None, value)


@dataclass(frozen=True)
class MetadataSchema:
    keys: Mapping[str, KeyRule]
    additional_keys: bool = True

    def declared_types(self) -> dict[str, MetadataType]:
        return {key: rule.type for key, rule in self.keys.items()}

    def as_json(self) -> dict[str, Any]:
        """The schema in the shape of the PUT body (what GET answers and what is stored)."""
        keys: dict[str, Any] = {}
        for key, rule in self.keys.items():
            keys[key] = {"type": rule.type.value, "required": rule.required}
            if rule.allowed is not None:
                keys[key]["allowed"] = list(rule.allowed)
        return {"keys": keys, "additionalKeys": self.additional_keys}


def parse_schema(raw: object, *, path: str = "schema") -> MetadataSchema:
    """`raw` (parsed JSON) as a metadata schema within the bounds; SchemaError names what is wrong and where."""
    if not isinstance(raw, Mapping):
        raise SchemaError(path, 'must be an object such as {"keys": {"customer": {"type": "string"}}}')
    # Read on every write to the collection: bounded as a whole, not only key by key.
    size = len(json.dumps(raw, ensure_ascii=False, default=str).encode())
    if size > MAX_SCHEMA_BYTES:
        raise SchemaError(path, f"is {size} bytes as JSON; at most {MAX_SCHEMA_BYTES} are allowed")
    _refuse_unknown_fields(raw, _SCHEMA_FIELDS, path, "a metadata schema")
    if "keys" not in raw:
        raise SchemaError(f"{path}.keys", "is required: an object of the declared keys and their rules")
    declared = raw["keys"]
    if not isinstance(declared, Mapping):
        raise SchemaError(f"{path}.keys", "must be an object of the declared keys and their rules")
    if len(declared) > MAX_KEYS:
        raise SchemaError(f"{path}.keys", f"declares {len(declared)} keys; at most {MAX_KEYS} are allowed")
    rules = {}
    for key in sorted(declared, key=str):
        if not isinstance(key, str) or not METADATA_KEY.fullmatch(key) or key.startswith("quire."):
            raise SchemaError(
                f"{path}.keys.{key}", "a key must match ^[a-z][a-z0-9_.-]{0,63}$ and not start with quire. (reserved)"
            )
        rules[key] = _rule(declared[key], key, f"{path}.keys.{key}")
    additional = raw.get("additionalKeys", True)
    if not isinstance(additional, bool):
        raise SchemaError(f"{path}.additionalKeys", "must be true or false (whether undeclared keys are allowed)")
    return MetadataSchema(keys=MappingProxyType(rules), additional_keys=additional)


def schema_from_json(stored: Mapping[str, Any]) -> MetadataSchema:
    """A schema as `as_json` stored it; parsed again, so a stored schema meets today's rules."""
    return parse_schema(stored)


def schema_problem(
    metadata: Mapping[str, MetadataValue], schema: MetadataSchema, *, path: str = "metadata"
) -> MetadataError | None:
    """The first rule of `schema` that `metadata` (validated, and whole: after a patch is merged) breaks, as the
    error to answer, or None. Required keys missing come first, then each key in sorted order."""
    for key in sorted(schema.keys):
        if schema.keys[key].required and key not in metadata:
            return MetadataError(f"{path}.{key}", "is required by the collection's schema")
    for key in sorted(metadata):
        value, rule = metadata[key], schema.keys.get(key)
        if rule is None:
            if schema.additional_keys:
                continue
            return MetadataError(
                f"{path}.{key}", "is not declared by the collection's schema, which allows no other keys"
            )
        if not rule.admits_type(value):
            found = type_of(value).value
            hint = f": {_DATE_FORM}" if rule.type is MetadataType.DATE else ""
            return MetadataError(
                f"{path}.{key}", f"is a {found}, but the collection's schema declares {key} a {rule.type.value}{hint}"
            )
        outside = rule.disallowed(value)
        if outside is not None:
            index, item = outside
            where = f"{path}.{key}" if index is None else f"{path}.{key}[{index}]"
            return MetadataError(where, f"{_shown(item)} is not among the allowed values of {key}")
    return None


def _rule(raw: object, key: str, path: str) -> KeyRule:
    if not isinstance(raw, Mapping):
        raise SchemaError(path, 'must be an object such as {"type": "string", "required": true}')
    _refuse_unknown_fields(raw, _RULE_FIELDS, path, "a key's rule")
    kind = raw.get("type")
    if not isinstance(kind, str) or kind not in {member.value for member in MetadataType}:
        raise SchemaError(f"{path}.type", f"must be one of {_TYPES}")
    declared = MetadataType(kind)
    required = raw.get("required", False)
    if not isinstance(required, bool):
        raise SchemaError(f"{path}.required", "must be true or false")
    if "allowed" not in raw:
        return KeyRule(declared, required)
    return KeyRule(declared, required, _allowed(raw["allowed"], declared, key, f"{path}.allowed"))


def _allowed(raw: object, declared: MetadataType, key: str, path: str) -> tuple[Scalar, ...]:
    if not isinstance(raw, list) or not raw:
        raise SchemaError(path, "must be a non-empty list of values")
    if len(raw) > MAX_ALLOWED_VALUES:
        raise SchemaError(path, f"has {len(raw)} values; at most {MAX_ALLOWED_VALUES} are allowed")
    values = []
    for index, item in enumerate(raw):
        here = f"{path}[{index}]"
        if not isinstance(item, str | int | float | bool):
            raise SchemaError(here, "must be a string, a number or a boolean")
        problem = scalar_problem(item) or _type_problem(item, declared, key)
        if problem:
            raise SchemaError(here, problem)
        values.append(item)
    return tuple(values)


def _type_problem(value: Scalar, declared: MetadataType, key: str) -> str | None:
    if declared is MetadataType.NUMBER:
        fits, wanted = isinstance(value, int | float) and not isinstance(value, bool), "a number"
    elif declared is MetadataType.BOOLEAN:
        fits, wanted = isinstance(value, bool), "true or false"
    elif declared is MetadataType.DATE:
        fits, wanted = isinstance(value, str) and as_instant(value) is not None, _DATE_FORM
    else:  # a string key's values, or the strings a list key's items may take
        fits, wanted = isinstance(value, str), "a string"
    kind = "list of strings" if declared is MetadataType.LIST else declared.value
    return None if fits else f"must be {wanted}, as {key} is a {kind}"


def _refuse_unknown_fields(raw: Mapping[Any, Any], fields: tuple[str, ...], path: str, what: str) -> None:
    for field in raw:
        if field not in fields:
            raise SchemaError(f"{path}.{field}", f"is not a field of {what}; use {', '.join(fields)}")


def _shown(value: Scalar) -> str:
    return json.dumps(value, ensure_ascii=False)
