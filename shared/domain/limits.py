"""Spend and capacity limits per tenant (issue 16): what one tenant may spend per UTC day (OCR pages, vision
images, embedding tokens, generation tokens of answers and summaries, rerank queries, declared upload bytes), how
often one file may be OCR'd per hour, and how many API requests per second it may make. Each is a setting; None means
unlimited.

Pure: what was spent comes from the usage ledger and the file versions, the time from the caller. A refusal is
a `LimitExceeded` naming the limit, its value, and when it resets, made before the money is spent.
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from shared.domain.errors import LimitExceeded

# The window "rescans per file per hour" counts OCR runs in.
RESCAN_WINDOW = timedelta(hours=1)


class LimitName(StrEnum):
    """The limits, named as their settings are (QUIRE_LIMIT_<NAME>) and as a 429's body names them."""

    OCR_PAGES = "ocr_pages_per_day"
    VISION_IMAGES = "vision_images_per_day"
    EMBEDDING_TOKENS = "embedding_tokens_per_day"
    GENERATION_TOKENS = "generation_tokens_per_day"
    RERANK_QUERIES = "rerank_queries_per_day"
    TRANSCRIPTION_MINUTES = "transcription_minutes_per_day"
    UPLOAD_BYTES = "upload_bytes_per_day"
    RESCANS = "rescans_per_file_per_hour"
    REQUESTS = "requests_per_second"


@dataclass(frozen=True)
class TenantLimits:
    """Every tenant's limits (one set per deployment). None: unlimited."""

    ocr_pages_per_day: int | None = None
    vision_images_per_day: int | None = None
    embedding_tokens_per_day: int | None = None
    generation_tokens_per_day: int | None = None
    rerank_queries_per_day: int | None = None
    transcription_minutes_per_day: int | None = None
    upload_bytes_per_day: int | None = None
    rescans_per_file_per_hour: int | None = None
    requests_per_second: float | None = None
    request_burst: int | None = None


class Spend(BaseModel):
    """What the ledger says a tenant consumed since a moment: OCR pages, images described, embedding tokens, and
    generation tokens (input and output of the model calls made inside requests: answers, summaries)."""

    model_config = ConfigDict(frozen=True)

    ocr_pages: int = Field(default=0, ge=0)
    vision_images: int = Field(default=0, ge=0)
    embedding_tokens: int = Field(default=0, ge=0)
    generation_tokens: int = Field(default=0, ge=0)
    # Calls of a metered reranker (shared/services/reranking.py): one query each, as Bedrock prices them.
    rerank_queries: int = Field(default=0, ge=0)
    transcription_seconds: int = Field(default=0, ge=0)


# What each daily limit counts, in its sentence: (what is limited, its unit, what was done today).
_DAILY: dict[LimitName, tuple[str, str, str]] = {
    LimitName.OCR_PAGES: ("OCR", "pages", "read"),
    LimitName.VISION_IMAGES: ("vision", "images", "described"),
    LimitName.EMBEDDING_TOKENS: ("embedding", "tokens", "embedded"),
    LimitName.GENERATION_TOKENS: ("generation", "tokens", "spent"),
    LimitName.RERANK_QUERIES: ("rerank", "queries", "reranked"),
    LimitName.TRANSCRIPTION_MINUTES: ("transcription", "minutes", "transcribed"),
    LimitName.UPLOAD_BYTES: ("upload", "bytes", "declared"),
}


def day_start(now: datetime) -> datetime:
    """00:00 UTC of `now`'s day: daily limits count from there."""
    return now.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)


def _count(amount: int, unit: str) -> str:
    one = unit[:-3] + "y" if unit.endswith("ies") else unit.removesuffix("s")
    return f"{amount:,} {one if amount == 1 else unit}"


def _wait(seconds: int) -> str:
    hours, rest = divmod(seconds, 3600)
    minutes = math.ceil(rest / 60) if hours else max(1, math.ceil(rest / 60))
    return f"{hours} h {minutes} min" if hours else f"{minutes} min"


def daily_refusal(
    name: LimitName, *, limit: int | None, spent: int, asked: int, now: datetime, then: str = "try again"
) -> LimitExceeded | None:
    """The refusal when `asked` more on top of what was `spent` today passes the daily `limit`, else None."""
    if limit is None or spent + asked <= limit:
        return None
    what, unit, done = _DAILY[name]
    retry_after = math.ceil((day_start(now) + timedelta(days=1) - now).total_seconds())
    if asked > limit:
        state = f"this needs {_count(asked, unit)}, more than the tenant's daily {what} limit of {_count(limit, unit)}"
    else:
        state = (
            f"the tenant's daily {what} limit of {_count(limit, unit)} is spent"
            f" ({spent:,} {done} today, {asked:,} more needed)"
        )
    return LimitExceeded(
        name.value,
        f"{state}; {then} after 00:00 UTC (in {_wait(retry_after)}), when the {name.value} limit resets",
        retry_after_seconds=retry_after,
    )


def rescan_refusal(limit: int | None, runs: Sequence[datetime], *, now: datetime) -> LimitExceeded | None:
    """The refusal when the file's OCR runs within the last hour (`runs`, oldest first) already reach `limit`."""
    recent = sorted(run for run in runs if run > now - RESCAN_WINDOW)
    if limit is None or len(recent) < limit:
        return None
    # The run whose leaving the window brings the count under the limit.
    frees_at = recent[len(recent) - limit] + RESCAN_WINDOW
    retry_after = math.ceil((frees_at - now).total_seconds())
    return LimitExceeded(
        LimitName.RESCANS.value,
        f"this file was OCR'd {len(recent)} times in the last hour, and the limit is {limit} per file per hour"
        f" ({LimitName.RESCANS.value}): scan it again in {_wait(max(1, retry_after))}",
        retry_after_seconds=retry_after,
    )


def request_rate_refusal(rate: float, retry_after_seconds: float) -> LimitExceeded:
    """Too many requests from one tenant in a second."""
    seconds = max(1, math.ceil(retry_after_seconds))
    return LimitExceeded(
        LimitName.REQUESTS.value,
        f"the tenant's limit of {rate:g} requests per second ({LimitName.REQUESTS.value}) is reached:"
        f" retry in {seconds} s",
        retry_after_seconds=seconds,
    )
