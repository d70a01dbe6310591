"""A product's own metadata on a file (issue 33): typed values within bounds, each refusal naming the field and
the limit. A value's type is taken from its JSON: a string that is an ISO 8601 day or instant (with its zone) is a
date; a key keeps in a collection the type it first had (`conflicting_types`).
"""

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from enum import StrEnum
from typing import Any
from uuid import UUID

MAX_KEYS = 64
MAX_STRING_CHARACTERS = 1024
# A product's own keys; `quire.` names the built-in attributes.
METADATA_KEY = re.compile(r"^[a-z][a-z0-9_.-]{0,63}$")
# C0 (tab and line breaks included: an attribute is one line), DEL, C1 and lone surrogates.
CONTROL_CHARACTERS = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
_ISO_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")
MAX_LIST_ITEMS = 100
MAX_METADATA_BYTES = 16 * 1024

MetadataValue = str | int | float | bool | list[str]


class MetadataType(StrEnum):
    STRING = "string"
    NUMBER = "number"
    BOOLEAN = "boolean"
    DATE = "date"
    LIST = "list"


class MetadataError(ValueError):
    """Metadata Quire refuses; `path` names the field (`metadata.customer`, `metadata.tags[3]`)."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path


def validated_metadata(raw: object, *, path: str = "metadata") -> dict[str, MetadataValue]:
    """`raw` (parsed JSON) as metadata, or MetadataError naming the first field that breaks a rule."""
    if not isinstance(raw, Mapping):
        raise MetadataError(path, "must be an object of keys and values")
    if len(raw) > MAX_KEYS:
        raise MetadataError(path, f"has {len(raw)} keys; at most {MAX_KEYS} are allowed")
    checked: dict[str, MetadataValue] = {}
    for key, value in raw.items():
        if not isinstance(key, str) or not METADATA_KEY.fullmatch(key) or key.startswith("quire."):
            raise MetadataError(
                f"{path}.{key}", "a key must match ^[a-z][a-z0-9_.-]{0,63}$ and not start with quire. (reserved)"
            )
        checked[key] = _value(value, f"{path}.{key}")
    size = len(json.dumps(checked, ensure_ascii=False).encode())
    if size > MAX_METADATA_BYTES:
        raise MetadataError(path, f"is {size} bytes as JSON; at most {MAX_METADATA_BYTES} are allowed")
    return checked


def scalar_problem(raw: str | int | float | bool) -> str | None:
    """What is wrong with a string, number or boolean as a metadata value (or a filter's), or None."""
    if isinstance(raw, float) and not math.isfinite(raw):
        return "must be a finite number"
    if isinstance(raw, str) and len(raw) > MAX_STRING_CHARACTERS:
        return f"is {len(raw)} characters; at most {MAX_STRING_CHARACTERS} are allowed"
    if isinstance(raw, str) and CONTROL_CHARACTERS.search(raw):
        return "holds a control character, a NUL or a lone surrogate"
    return None


def as_instant(value: str) -> datetime | None:
    """An ISO 8601 day (midnight UTC) or instant (a zone required), else None."""
    try:
        if _ISO_DAY.fullmatch(value):
            return datetime.combine(date.fromisoformat(value), datetime.min.time(), UTC)
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else None


def _value(raw: object, path: str) -> MetadataValue:
    if isinstance(raw, bool | int | float):
        problem = scalar_problem(raw)
        if problem:
            raise MetadataError(path, problem)
        return raw
    if isinstance(raw, str):
        return _text(raw, path)
    if isinstance(raw, list):
        if len(raw) > MAX_LIST_ITEMS:
            raise MetadataError(path, f"has {len(raw)} items; at most {MAX_LIST_ITEMS} are allowed")
        items = []
        for index, item in enumerate(raw):
            if not isinstance(item, str):
                raise MetadataError(f"{path}[{index}]", "a list holds strings only")
            items.append(_text(item, f"{path}[{index}]"))
        return items
    raise MetadataError(path, "must be a string, a number, a boolean, a date (ISO 8601) or a list of strings")


def _text(raw: str, path: str) -> str:
    problem = scalar_problem(raw)
    if problem:
        raise MetadataError(path, problem)
    return raw


def type_of(value: MetadataValue) -> MetadataType:
    if isinstance(value, bool):
        return MetadataType.BOOLEAN
    if isinstance(value, int | float):
        return MetadataType.NUMBER
    if isinstance(value, list):
        return MetadataType.LIST
    return MetadataType.DATE if as_instant(value) is not None else MetadataType.STRING


def admits(kind: MetadataType, value: MetadataValue) -> bool:
    """Whether `value` is a value of a key of type `kind`: a string key takes any text (date-like text included),
    a date key an ISO 8601 day or zoned instant, a number key a number (not a boolean)."""
    if kind is MetadataType.STRING:
        return isinstance(value, str)
    if kind is MetadataType.DATE:
        return isinstance(value, str) and as_instant(value) is not None
    if kind is MetadataType.NUMBER:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind is MetadataType.BOOLEAN:
        return isinstance(value, bool)
    return isinstance(value, list)


def conflicting_types(
    metadata: Mapping[str, MetadataValue], known: Mapping[str, MetadataType], *, path: str = "metadata"
) -> MetadataError | None:
    """The first key whose value is not a value of the type the collection already has for it, as the error to
    answer."""
    for key, value in metadata.items():
        had = known.get(key)
        if had is not None and not admits(had, value):
            found = type_of(value)
            return MetadataError(f"{path}.{key}", f"is a {found.value}, but {key} is a {had.value} in this collection")
    return None


def types_of(
    metadata: Mapping[str, MetadataValue], declared: Mapping[str, MetadataType] | None = None
) -> dict[str, MetadataType]:
    """Each key's type: as a collection's schema declares it, else as its value reads."""
    declared = declared or {}
    return {key: declared.get(key) or type_of(value) for key, value in metadata.items()}


class DateText(str):
    """A date as it was written, carrying the instant it names: text tests read the text, comparisons the instant."""

    instant: datetime

    def __new__(cls, text: str) -> "DateText":
        instant = as_instant(text)
        if instant is None:
            raise ValueError(f"{text!r} is not an ISO 8601 day or instant with its zone")
        made = super().__new__(cls, text)
        made.instant = instant
        return made


def typed_attributes(metadata: Mapping[str, MetadataValue], types: Mapping[str, MetadataType]) -> dict[str, Any]:
    """The values a filter compares (`metadata_filter.matches`): a date key's value as a DateText, the rest as
    they are."""
    return {
        key: DateText(value) if types.get(key) is MetadataType.DATE and isinstance(value, str) else value
        for key, value in metadata.items()
    }


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def microseconds_since_epoch(instant: datetime) -> int:
    """Exact (a float of seconds would round): what the index stores for a date, and what a filter compares."""
    return (instant - _EPOCH) // timedelta(microseconds=1)


def indexed_metadata(metadata: Mapping[str, MetadataValue], types: Mapping[str, MetadataType]) -> dict[str, Any]:
    """Metadata by type, as the database filters it (`files.metadata_typed`): strings, numbers, booleans and lists
    under `s`, `n`, `b` and `l`, dates under `d` as microseconds since the epoch. A key is under the one type it
    has, so values of different types never compare."""
    typed: dict[str, dict[str, Any]] = {"s": {}, "n": {}, "b": {}, "d": {}, "l": {}}
    for key, value in metadata.items():
        kind = types.get(key) or type_of(value)
        if kind is MetadataType.DATE and isinstance(value, str) and (instant := as_instant(value)) is not None:
            typed["d"][key] = microseconds_since_epoch(instant)
        elif kind is MetadataType.BOOLEAN:
            typed["b"][key] = value
        elif kind is MetadataType.NUMBER:
            typed["n"][key] = value
        elif kind is MetadataType.LIST:
            typed["l"][key] = value
        else:
            typed["s"][key] = value
    return typed


def attributes_of(metadata: Mapping[str, Any], built_in: Mapping[str, Any]) -> dict[str, Any]:
    """What a filter reads of a file: its typed metadata and its `quire.*` attributes (which no metadata key can
    name)."""
    return {**metadata, **built_in}


MAX_BULK_FILES = 1000
# Distinct keys one collection may hold across its files: what facets, schemas and the console list stay bounded by.
MAX_KEYS_PER_COLLECTION = 1000


@dataclass(frozen=True)
class MetadataChange:
    """One file's change: keys to set, keys to remove, and the revision the writer read (None: whatever it is).
    `path` is where the change sits in the request, for the errors it can meet (`metadata`, `files[3]`)."""

    file_id: UUID
    set_values: Mapping[str, Any]
    remove: tuple[str, ...] = ()
    expected_revision: int | None = None
    path: str = "metadata"


def changed_metadata(
    current: Mapping[str, MetadataValue],
    set_values: Mapping[str, Any],
    remove: "tuple[str, ...] | list[str]",
    *,
    path: str = "metadata",
) -> dict[str, MetadataValue]:
    """`current` with `set_values` set and the keys in `remove` removed, within every bound (a key both set and
    removed is refused: which was meant is unclear). `path` prefixes the fields an error names."""
    values = validated_metadata(set_values, path=f"{path}.set")
    for index, key in enumerate(remove):
        if not isinstance(key, str) or not METADATA_KEY.fullmatch(key):
            raise MetadataError(f"{path}.remove[{index}]", "must be a metadata key (^[a-z][a-z0-9_.-]{0,63}$)")
        if key in values:
            raise MetadataError(f"{path}.remove[{index}]", f"{key} is also set in the same change")
    merged = {key: value for key, value in current.items() if key not in remove}
    merged.update(values)
    # The whole object after the change within the bounds too (64 keys, 16 KiB).
    return validated_metadata(merged, path=path)
