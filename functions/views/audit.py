"""Response bodies of the tool-call audit (camelCase on the wire, like the rest of the API)."""

from datetime import datetime
from typing import Literal
from uuid import UUID

from functions.views.base import ApiModel
from shared.domain.audit import ToolCallPage, ToolCallRecord


class ToolCallView(ApiModel):
    call_id: UUID
    subject: str
    tool: str
    surface: Literal["mcp", "http"]
    # The id arguments as the tool names them (fileId, artifactId, ...): keys are the tool's, not renamed.
    argument_ids: dict[str, str]
    collection_ids: list[str]
    outcome: str
    duration_ms: int
    called_at: datetime

    @classmethod
    def of(cls, record: ToolCallRecord) -> "ToolCallView":
        return cls(
            call_id=record.call_id,
            subject=record.subject,
            tool=record.tool,
            surface=record.surface,
            argument_ids=dict(record.argument_ids),
            collection_ids=list(record.collection_ids),
            outcome=record.outcome,
            duration_ms=record.duration_ms,
            called_at=record.called_at,
        )


class AuditView(ApiModel):
    calls: list[ToolCallView]
    next_cursor: str | None

    @classmethod
    def of(cls, page: ToolCallPage) -> "AuditView":
        return cls(calls=[ToolCallView.of(record) for record in page.calls], next_cursor=page.next_cursor)
