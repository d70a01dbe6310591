"""A file's own metadata: typed values within their bounds, each refusal naming the field and the limit."""

from typing import Any

import pytest

from shared.domain.metadata import (
    MAX_KEYS,
    MAX_LIST_ITEMS,
    MAX_METADATA_BYTES,
    MetadataError,
    MetadataType,
    conflicting_types,
    type_of,
    validated_metadata,
)


def test_typed_values_are_kept_as_given() -> None:
    given = {"customer": "acme", "amount": 12.5, "urgent": False, "signed": "2026-03-01", "tags": ["nda", "eu"]}
    checked = validated_metadata(given)
    assert checked == given
    assert {key: type_of(value) for key, value in checked.items()} == {
        "customer": MetadataType.STRING,
        "amount": MetadataType.NUMBER,
        "urgent": MetadataType.BOOLEAN,
        "signed": MetadataType.DATE,
        "tags": MetadataType.LIST,
    }
    # An instant needs its zone to be a date; without one it is text.
    assert type_of("2026-03-01T09:30:00Z") is MetadataType.DATE
    assert type_of("2026-03-01T09:30:00") is MetadataType.STRING


@pytest.mark.parametrize(
    ("raw", "path", "says"),
    [
        (["customer", "acme"], "metadata", "an object"),
        ({f"k{i}": i for i in range(MAX_KEYS + 1)}, "metadata", f"at most {MAX_KEYS} are allowed"),
        ({"Customer": "acme"}, "metadata.Customer", "^[a-z]"),
        ({"quire.filename": "x"}, "metadata.quire.filename", "reserved"),
        ({"customer": "x" * 1025}, "metadata.customer", "at most 1024"),
        ({"customer": "ac\x00me"}, "metadata.customer", "NUL"),
        ({"customer": "ac\ud800me"}, "metadata.customer", "lone surrogate"),
        ({"amount": float("inf")}, "metadata.amount", "finite"),
        ({"tags": ["a"] * (MAX_LIST_ITEMS + 1)}, "metadata.tags", f"at most {MAX_LIST_ITEMS}"),
        ({"tags": ["a", 3]}, "metadata.tags[1]", "strings only"),
        ({"nested": {"a": 1}}, "metadata.nested", "list of strings"),
        ({f"k{i}": "x" * 1000 for i in range(20)}, "metadata", f"at most {MAX_METADATA_BYTES}"),
    ],
)
def test_metadata_beyond_a_bound_names_the_field_and_the_limit(raw: Any, path: str, says: str) -> None:
    with pytest.raises(MetadataError) as refused:
        validated_metadata(raw)
    assert refused.value.path == path
    assert says in str(refused.value)


def test_a_key_keeps_the_type_it_first_had_in_the_collection() -> None:
    known = {"amount": MetadataType.NUMBER, "signed": MetadataType.DATE}
    assert conflicting_types({"amount": 3, "signed": "2026-01-01", "new": "x"}, known) is None
    conflict = conflicting_types({"amount": "three"}, known)
    assert conflict is not None
    assert conflict.path == "metadata.amount"
    assert "is a string, but amount is a number" in str(conflict)


def test_a_string_key_takes_date_like_text_and_a_date_key_only_dates() -> None:
    known = {"note": MetadataType.STRING, "signed": MetadataType.DATE}
    assert conflicting_types({"note": "2026-01-01", "signed": "2026-01-01T10:00:00+02:00"}, known) is None
    conflict = conflicting_types({"signed": "soon"}, known)
    assert (
        conflict is not None
        and str(conflict) == "metadata.signed: is a string, but signed is a date in this collection"
    )
    assert conflicting_types({"note": 5}, known) is not None


def test_control_characters_are_refused_in_values() -> None:
    for text in ("a\tb", "a\nb", "a\rb", "a\x9bb", "a\x00b", "a\ud800b"):
        with pytest.raises(MetadataError, match="control character"):
            validated_metadata({"note": text})
