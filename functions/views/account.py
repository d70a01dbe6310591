"""Bodies about the caller: who the API takes them for, and their usage."""

from datetime import datetime

from functions.views.base import ApiModel
from shared.domain.auth import Role
from shared.domain.usage import UsageTotal


class CallerView(ApiModel):
    """Who the API takes the caller for: the tenant, the subject, the collections they may read, and their
    role in each (read, write or admin)."""

    tenant_id: str
    subject: str
    collections: list[str]
    roles: dict[str, Role]


class UsageLineView(ApiModel):
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
    # Seconds of recording transcribed (the step `transcription`).
    seconds: int = 0


class UsageView(ApiModel):
    since: datetime
    until: datetime
    lines: list[UsageLineView]

    @classmethod
    def of(cls, since: datetime, until: datetime, totals: list[UsageTotal]) -> "UsageView":
        return cls(
            since=since,
            until=until,
            lines=[
                UsageLineView.model_validate(total.model_dump(exclude={"first_recorded_at", "last_recorded_at"}))
                for total in totals
            ],
        )
