"""What a call to a metered engine consumed: recorded once per (file version, step) in the usage ledger.

Textract bills pages, Bedrock bills tokens (vision also images). Local engines are recorded too, with
`priced` false, so a tenant sees what was done for them wherever it ran; only priced rows cost money.
"""

from datetime import datetime, timedelta
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from shared.domain.errors import InvalidRequest


class UsageStep(StrEnum):
    """The pipeline step a charge belongs to: with the version, the ledger's idempotency key."""

    OCR = "ocr"
    VISION = "vision"
    EMBED = "embed"


class Usage(BaseModel):
    model_config = ConfigDict(frozen=True)

    provider: str  # textract, bedrock, rapidocr, sentence-transformers
    operation: str  # e.g. textract:DetectDocumentText, bedrock:Converse
    model: str | None = None
    priced: bool
    pages: int = Field(default=0, ge=0)
    images: int = Field(default=0, ge=0)
    input_tokens: int = Field(default=0, ge=0)
    output_tokens: int = Field(default=0, ge=0)


class UsageTotal(BaseModel):
    """The ledger summed for a period, per (step, provider, operation, model)."""

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
