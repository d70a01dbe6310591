"""What a call to a metered engine consumed: recorded once per (file version, step) in the usage ledger, or,
for a model call made inside a request (a grounded answer, a tool's summary), once per call and collection.

Textract bills pages, Bedrock bills tokens (vision also images). Local engines are recorded too, with
`priced` false, so a tenant sees what was done for them wherever it ran; only priced rows cost money.
"""

from collections.abc import Collection
from datetime import datetime, timedelta
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from shared.domain.errors import InvalidRequest


class UsageStep(StrEnum):
    """The pipeline step a charge belongs to: with the version, the ledger's idempotency key."""

    OCR = "ocr"
    VISION = "vision"
    EMBED = "embed"
    TRANSCRIPTION = "transcription"
    # A batch's situating sentences (`context#<batch>`): generation tokens, under the tenant's daily generation limit.
    CONTEXT = "context"


class RequestKind(StrEnum):
    """What a model call made inside a request was for: its line's `step` in a usage report."""

    ANSWER = "answer"
    SUMMARY = "summary"
    RERANK = "rerank"  # a search's candidates reordered by a rerank model: one query, no tokens reported


class Usage(BaseModel):
    model_config = ConfigDict(frozen=True)

    provider: str  # textract, bedrock, rapidocr, onnxruntime (the local embedder), faster-whisper
    operation: str  # e.g. textract:DetectDocumentText, bedrock:Converse
    model: str | None = None
    priced: bool
    pages: int = Field(default=0, ge=0)
    images: int = Field(default=0, ge=0)
    input_tokens: int = Field(default=0, ge=0)
    output_tokens: int = Field(default=0, ge=0)
    # Seconds of recording transcribed, rounded up (Amazon Transcribe bills by the second; the local engine is free).
    seconds: int = Field(default=0, ge=0)


def rerank_usage(model: str) -> Usage:
    """A Bedrock Rerank call: priced per query (up to 100 documents), its row the count; the API reports no tokens."""
    return Usage(provider="bedrock", operation="bedrock:Rerank", model=model, priced=True)


def converse_usage(model: str, *, input_tokens: int, output_tokens: int) -> Usage:
    """A Bedrock Converse call's tokens (a summary, an answer draft): priced, as every Bedrock call is."""
    return Usage(
        provider="bedrock",
        operation="bedrock:Converse",
        model=model,
        priced=True,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
    )


class CollectionShare(BaseModel):
    """The part of one request's tokens booked to one of the collections it was spent for."""

    model_config = ConfigDict(frozen=True)

    collection_id: str
    input_tokens: int = Field(ge=0)
    output_tokens: int = Field(ge=0)


def collection_shares(collections: Collection[str], usage: Usage) -> list[CollectionShare]:
    """A request's tokens split evenly over the collections it was spent for, the remainder a token each to the
    first in id order: the shares add up to the call, so a report over any set of readable collections sums
    exactly what was spent for them, and a collection the caller cannot read is never a line of theirs.

    Raises ValueError when there is no collection (a model call is always for some evidence or document) or the
    usage counts pages or images (a request's model calls are billed in tokens only)."""
    ordered = sorted(set(collections))
    if not ordered:
        raise ValueError("request usage needs the collection(s) it was spent for")
    if usage.pages or usage.images:
        raise ValueError("request usage is tokens only: pages and images are metered per file version")
    count = len(ordered)
    in_each, in_rest = divmod(usage.input_tokens, count)
    out_each, out_rest = divmod(usage.output_tokens, count)
    return [
        CollectionShare(
            collection_id=collection,
            input_tokens=in_each + (1 if index < in_rest else 0),
            output_tokens=out_each + (1 if index < out_rest else 0),
        )
        for index, collection in enumerate(ordered)
    ]


class UsageTotal(BaseModel):
    """The ledger summed for a period, per (step, provider, operation, model). For request usage `step` is its
    kind (answer, summary) and `calls` counts requests, not their collection shares."""

    model_config = ConfigDict(frozen=True)

    step: str
    provider: str
    operation: str
    model: str | None
    priced: bool
    calls: int
    pages: int
    images: int
    input_tokens: int
    output_tokens: int
    seconds: int = 0
    first_recorded_at: datetime
    last_recorded_at: datetime


def usage_window(since: datetime | None, until: datetime | None, *, now: datetime) -> tuple[datetime, datetime]:
    """The window a usage report covers: by default this calendar month (UTC) up to now."""
    start = since or now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    end = until or now + timedelta(seconds=1)
    if start.tzinfo is None or end.tzinfo is None:
        raise InvalidRequest("since and until need a time zone (e.g. 2026-11-01T00:00:00Z)")
    if end <= start:
        raise InvalidRequest("until must be after since")
    return start, end
