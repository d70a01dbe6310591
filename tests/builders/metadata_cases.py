"""Random metadata and random filters for the property tests of issue 33: every operator, nested groups, every
type, values that cross types (a number against its text, a date-like string on a string key, a day against the
same instant written with a zone), and keys no file has. Drawn from a small vocabulary so that filters keep some
files and drop others."""

import random
from datetime import UTC, datetime, timedelta
from typing import Any

from shared.domain.metadata import MetadataType

KEY_TYPES: dict[str, MetadataType] = {
    "customer": MetadataType.STRING,
    "code": MetadataType.STRING,  # declared a string: holds date-like text that must not compare as a date
    "amount": MetadataType.NUMBER,
    "urgent": MetadataType.BOOLEAN,
    "effective": MetadataType.DATE,
    "tags": MetadataType.LIST,
}
_STRINGS = ["acme", "Acme", "acme corp", "globex", "initech", "ümlaut", "a%_b"]
_CODES = ["2026-01-02", "2026-01-02T00:00:00Z", "x-1", "12", "true"]
_NUMBERS: list[int | float] = [0, 1, 1.5, -3, 2.0, 1250, 10**20, 10**20 + 1]
_DATES = [
    "2026-01-02",
    "2026-01-02T00:00:00Z",
    "2026-01-01T23:00:00-01:00",
    "2025-12-31",
    "2026-06-30T12:00:00.5+02:00",
]
_TAGS = ["nda", "renewal", "q1", "Q1", "renew"]
_FRAGMENTS = ["ac", "2026", "new", "ren", "-0", "x", "ü", "%"]
GHOST_KEY = "never.set"
BUILT_IN_STRINGS = {"quire.collection": ["alpha", "beta"], "quire.filename": ["acme.pdf", "notes.txt", "2026-01-02"]}
_UPLOADED = [datetime(2026, 1, 2, tzinfo=UTC) + timedelta(hours=hours) for hours in (-1, 0, 0, 5, 24 * 40)]


def random_metadata(rng: random.Random) -> dict[str, Any]:
    metadata: dict[str, Any] = {}
    for key, kind in KEY_TYPES.items():
        if rng.random() < 0.3:
            continue
        if kind is MetadataType.STRING:
            metadata[key] = rng.choice(_CODES if key == "code" else _STRINGS)
        elif kind is MetadataType.NUMBER:
            metadata[key] = rng.choice(_NUMBERS)
        elif kind is MetadataType.BOOLEAN:
            metadata[key] = rng.random() < 0.5
        elif kind is MetadataType.DATE:
            metadata[key] = rng.choice(_DATES)
        else:
            metadata[key] = rng.sample(_TAGS, rng.randrange(0, 4))
    return metadata


def random_built_ins(rng: random.Random) -> dict[str, Any]:
    return {
        "quire.collection": rng.choice(BUILT_IN_STRINGS["quire.collection"]),
        "quire.filename": rng.choice(BUILT_IN_STRINGS["quire.filename"]),
        "quire.uploadedAt": rng.choice(_UPLOADED),
        "quire.pages": rng.choice([1, 2, 10]),
    }


def _any_value(rng: random.Random) -> Any:
    pool: list[Any] = [*_STRINGS, *_CODES, *_NUMBERS, *_DATES, *_TAGS, True, False]
    return rng.choice(pool)


def _comparable(rng: random.Random) -> Any:
    return rng.choice([*_NUMBERS, *_DATES, "2026-01-01", "2026-01-02T00:00:00.000001Z"])


def _key(rng: random.Random) -> str:
    keys = [*KEY_TYPES, GHOST_KEY, *BUILT_IN_STRINGS, "quire.uploadedAt", "quire.pages", "quire.language"]
    return rng.choice(keys)


def random_filter(rng: random.Random, depth: int = 1) -> dict[str, Any]:
    if depth < 4 and rng.random() < 0.35:
        group = rng.choice(["andAll", "orAll"])
        return {group: [random_filter(rng, depth + 1) for _ in range(rng.randrange(1, 4))]}
    operator = rng.choice(
        [
            "equals",
            "notEquals",
            "greaterThan",
            "greaterThanOrEquals",
            "lessThan",
            "lessThanOrEquals",
            "in",
            "notIn",
            "startsWith",
            "listContains",
            "stringContains",
            "exists",
            "notExists",
        ]
    )
    key = _key(rng)
    if operator in ("exists", "notExists"):
        return {operator: {"key": key}}
    value: Any
    if operator in ("in", "notIn"):
        value = [_any_value(rng) for _ in range(rng.randrange(1, 5))]
    elif operator.startswith(("greater", "less")):
        value = _comparable(rng)
    elif operator in ("startsWith", "stringContains", "listContains"):
        value = rng.choice([*_FRAGMENTS, *_TAGS, *_STRINGS, *_CODES])
    else:
        value = _any_value(rng)
    return {operator: {"key": key, "value": value}}
