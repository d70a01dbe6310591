"""The audit record of agent tool calls: who called which tool, on which ids, in which collections, and how it
ended. Ids only, never free text: a query, a document's words or a filename would make the record a copy of
tenant content that its readers (the collections' admins) might not be entitled to.

Bounded, so a hostile call cannot make its own record large: at most 16 id arguments, keys of 64 characters and
values of 128; `id_arguments` picks and cuts them from a call's raw arguments so the record can always be made.
"""

import re
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Annotated, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationInfo, field_validator

from shared.domain.auth import IDENTIFIER_PATTERN, MAX_COLLECTIONS

MAX_ARGUMENT_IDS = 16
MAX_ARGUMENT_KEY_CHARS = 64
MAX_ARGUMENT_VALUE_CHARS = 128
MAX_TOOL_CHARS = 64
MAX_OUTCOME_CHARS = 64
# OpenID Connect Core 1.0, 2: `sub` "MUST NOT exceed 255 ASCII characters in length".
MAX_SUBJECT_CHARS = 255
# The column is an integer: about 24 days, far past any call's timeout.
MAX_DURATION_MS = 2**31 - 1

# Control characters (NUL above all: PostgreSQL refuses it in text) and lone UTF-16 surrogates (no UTF-8 holds
# one) are not text; a record stores neither.
_NOT_TEXT = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
_OUTCOME = re.compile(rf"^[a-z][a-z0-9_]{{0,{MAX_OUTCOME_CHARS - 1}}}$")

ArgumentKey = Annotated[str, StringConstraints(min_length=1, max_length=MAX_ARGUMENT_KEY_CHARS)]
ArgumentValue = Annotated[str, StringConstraints(max_length=MAX_ARGUMENT_VALUE_CHARS)]


def _text(value: str, what: str) -> str:
    if _NOT_TEXT.search(value):
        raise ValueError(f"{what} holds a control character or half a surrogate pair")
    return value


class ToolCall(BaseModel):
    """One call of an agent tool, as recorded once it has ended (refused or not).

    `collection_ids`: the collections the call acted in once authorized, empty when it was refused before any
    was known (an id that was not found, arguments that did not parse). `outcome`: "ok" or the refusal's code
    (not_found, forbidden, invalid_arguments, limit_exceeded, internal_error, ...)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tenant_id: str
    subject: str = Field(min_length=1, max_length=MAX_SUBJECT_CHARS)
    tool: str = Field(min_length=1, max_length=MAX_TOOL_CHARS)
    surface: Literal["mcp", "http"]
    argument_ids: dict[ArgumentKey, ArgumentValue] = Field(max_length=MAX_ARGUMENT_IDS)
    collection_ids: tuple[str, ...] = Field(max_length=MAX_COLLECTIONS)
    outcome: str = Field(min_length=1, max_length=MAX_OUTCOME_CHARS)
    duration_ms: int = Field(ge=0, le=MAX_DURATION_MS)
    called_at: datetime

    @field_validator("tenant_id")
    @classmethod
    def _tenant(cls, value: str) -> str:
        if not IDENTIFIER_PATTERN.fullmatch(value):
            raise ValueError(f"tenant id {value!r} is not an identifier")
        return value

    @field_validator("subject", "tool")
    @classmethod
    def _plain(cls, value: str, info: ValidationInfo) -> str:
        return _text(value, str(info.field_name))

    @field_validator("argument_ids")
    @classmethod
    def _ids(cls, value: dict[str, str]) -> dict[str, str]:
        for key, item in value.items():
            _text(key, "an argument name")
            _text(item, f"argument {key!r}")
        return value

    @field_validator("collection_ids")
    @classmethod
    def _collections(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for collection in value:
            if not IDENTIFIER_PATTERN.fullmatch(collection):
                raise ValueError(f"collection id {collection!r} is not an identifier")
        # One spelling per set of collections: sorted, each once.
        return tuple(sorted(set(value)))

    @field_validator("outcome")
    @classmethod
    def _outcome(cls, value: str) -> str:
        if not _OUTCOME.fullmatch(value):
            raise ValueError(f"outcome {value!r} is not 'ok' or a snake_case refusal code")
        return value

    @field_validator("called_at")
    @classmethod
    def _utc(cls, value: datetime) -> datetime:
        if value.tzinfo is None or value.utcoffset() is None:
            raise ValueError("called_at needs a time zone")
        return value.astimezone(UTC)


class ToolCallRecord(ToolCall):
    """A recorded call as it is read back."""

    call_id: UUID


class ToolCallPage(BaseModel):
    """Recorded calls, newest first, and the cursor to the older ones (None: there are none)."""

    model_config = ConfigDict(frozen=True)

    calls: tuple[ToolCallRecord, ...]
    next_cursor: str | None


def id_arguments(arguments: Mapping[str, object], names: Iterable[str]) -> dict[str, str]:
    """The id arguments among a call's raw `arguments`, fit for `ToolCall.argument_ids` whatever the caller sent.

    Only `names` are taken (the tool's id-valued parameters: free text never is, whatever its name), in the
    order given; a list of ids becomes `name[0]`, `name[1]`, ...; values that are not strings are left out. At
    most MAX_ARGUMENT_IDS entries; a value past MAX_ARGUMENT_VALUE_CHARS is cut (ending in "…", so it reads as
    cut: no real id is that long); what is not text is replaced by U+FFFD."""
    picked: dict[str, str] = {}

    def add(key: str, value: object) -> None:
        if key and len(picked) < MAX_ARGUMENT_IDS and isinstance(value, str):
            picked[_fit(key, MAX_ARGUMENT_KEY_CHARS)] = _as_id(value)

    for name in names:
        value = arguments.get(name)
        if isinstance(value, list | tuple):
            for index, item in enumerate(value):
                add(f"{name}[{index}]", item)
        else:
            add(name, value)
    return picked


# What is recorded for a value in an id's place that is no id: the caller's text is never kept (a "fileId" can
# hold anything a caller types, and the audit is read by the tenant's admins).
NOT_AN_ID = "(not an id)"


def _as_id(value: str) -> str:
    """A UUID as its canonical text, a collection-style identifier as it is, anything else NOT_AN_ID."""
    try:
        return str(UUID(value)) if len(value) <= 64 else NOT_AN_ID
    except ValueError:
        return value if IDENTIFIER_PATTERN.fullmatch(value) else NOT_AN_ID


def _fit(value: str, limit: int) -> str:
    clean = _NOT_TEXT.sub("\ufffd", value)
    return clean if len(clean) <= limit else clean[: limit - 1] + "…"
