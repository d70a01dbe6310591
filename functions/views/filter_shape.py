"""The `filter` of POST /v1/search, POST /v1/answer and the search_files, list_files and answer tools: its
description and example, and its shape spelled out as a JSON Schema (one operator per object, groups recursive) so
a client or an agent sees what to send. The schema only describes: the domain (shared/domain/metadata_filter.py)
checks the filter, so a malformed one is refused naming the path (`filter.andAll[2].in.value`)."""

from typing import Annotated, Any

from pydantic import ConfigDict, Field, PlainValidator
from pydantic.json_schema import SkipJsonSchema
from pydantic_core import PydanticCustomError

from functions.views.base import ApiModel
from shared.domain.metadata_filter import MAX_DEPTH, MAX_IN_VALUES

# The metadata filter's shape in the OpenAPI document: Bedrock Knowledge Bases' RetrievalFilter plus exists and
# notExists (shared/domain/metadata_filter.py checks it, naming the path of what is wrong).
FILTER_DESCRIPTION = (
    "A metadata filter, the shape of Bedrock Knowledge Bases' RetrievalFilter: one operator per object, a leaf"
    ' {"equals": {"key": "customer", "value": "acme"}} (equals, notEquals, greaterThan, greaterThanOrEquals,'
    " lessThan, lessThanOrEquals, in, notIn, startsWith, listContains, stringContains), a presence test"
    ' {"exists": {"key": "customer"}} (exists, notExists) or a group {"andAll": [...]} / {"orAll": [...]}. Keys'
    " are the file's metadata keys or built-in ones: quire.collection, quire.mediaType, quire.filename,"
    " quire.uploadedAt, quire.pages, quire.language (ISO 639-1: a chunk's, or a file's main one). At most 5 levels"
    " deep, 50 conditions, 500 values in an in or notIn list."
)
FILTER_EXAMPLE = {
    "andAll": [
        {"equals": {"key": "customer", "value": "acme"}},
        {"greaterThanOrEquals": {"key": "effective", "value": "2026-01-01"}},
    ]
}

FilterValue = str | float | bool
_KEY = "A metadata key (^[a-z][a-z0-9_.-]{0,63}$) or a built-in quire.* key (the filter's description names them)."
# Every operator is optional in the schema, and exactly one is sent: no `null` alternative is shown for any.
_ONE_OF = SkipJsonSchema[None]


def _one_operator(schema: dict[str, Any]) -> None:
    # Exactly one property; each an operator with no default and no title beyond its name.
    schema["minProperties"] = schema["maxProperties"] = 1
    for operator in schema["properties"].values():
        operator.pop("default", None)
        operator.pop("title", None)


class _Shape(ApiModel):
    # Never validated against (PlainValidator below hands the object to the domain): only its schema is read.
    model_config = ConfigDict(json_schema_extra=_one_operator)


class FilterCondition(ApiModel):
    """A key compared with one value: a string, a number, a boolean, or a date as an ISO 8601 string."""

    key: str = Field(description=_KEY)
    value: FilterValue


class FilterListCondition(ApiModel):
    """A key compared with a list of values (in, notIn)."""

    key: str = Field(description=_KEY)
    value: list[FilterValue] = Field(min_length=1, max_length=MAX_IN_VALUES)


class FilterPresence(ApiModel):
    """Whether the file has the key (exists, notExists)."""

    key: str = Field(description=_KEY)


class MetadataFilter(_Shape):
    """Exactly one operator: a comparison, a list test, a presence test, or a group of filters."""

    equals: FilterCondition | _ONE_OF = None
    not_equals: FilterCondition | _ONE_OF = None
    greater_than: FilterCondition | _ONE_OF = None
    greater_than_or_equals: FilterCondition | _ONE_OF = None
    less_than: FilterCondition | _ONE_OF = None
    less_than_or_equals: FilterCondition | _ONE_OF = None
    in_: FilterListCondition | _ONE_OF = Field(default=None, alias="in")
    not_in: FilterListCondition | _ONE_OF = None
    starts_with: FilterCondition | _ONE_OF = None
    list_contains: FilterCondition | _ONE_OF = None
    string_contains: FilterCondition | _ONE_OF = None
    exists: FilterPresence | _ONE_OF = None
    not_exists: FilterPresence | _ONE_OF = None
    and_all: "_Filters | _ONE_OF" = Field(
        default=None, description=f"The file is kept when every filter keeps it (at most {MAX_DEPTH} levels deep)."
    )
    or_all: "_Filters | _ONE_OF" = Field(default=None, description="The file is kept when any filter keeps it.")


_Filters = Annotated[list[MetadataFilter], Field(min_length=1)]


def _json_object(value: Any) -> dict[str, Any] | None:
    if value is None or isinstance(value, dict):
        return value
    raise PydanticCustomError("filter", 'must be an object with exactly one operator, such as {"equals": {...}}')


FilterParameter = Annotated[
    dict[str, Any] | None,
    PlainValidator(_json_object, json_schema_input_type=MetadataFilter | None),
    Field(default=None, alias="filter", description=FILTER_DESCRIPTION, examples=[FILTER_EXAMPLE]),
]
"""A body field or tool parameter `filter`: the JSON object as sent (None when omitted), for `metadata_filter` to
parse (functions/views/search.py)."""
