"""Facets in an answer (issue 33): each key's most frequent values with their counts, present only when asked for."""

from typing import Any

from pydantic import SerializerFunctionWrapHandler, model_serializer

from functions.views.base import ApiModel


class FacetValueView(ApiModel):
    value: Any
    count: int


def facets_view(counted: dict[str, list[tuple[Any, int]]] | None) -> dict[str, list[FacetValueView]] | None:
    if counted is None:
        return None
    return {key: [FacetValueView(value=value, count=count) for value, count in pairs] for key, pairs in counted.items()}


class WithFacets(ApiModel):
    # Only when asked for (`facets`): each key's most frequent values over the files the filters keep.
    facets: dict[str, list[FacetValueView]] | None = None

    @model_serializer(mode="wrap")
    def _wire(self, serialize: SerializerFunctionWrapHandler):  # type: ignore[no-untyped-def]
        dumped = serialize(self)
        if dumped.get("facets") is None:
            dumped.pop("facets", None)
        return dumped
