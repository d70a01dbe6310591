"""Domain events (issue 34): what a product is told when something it cares about changes.

The database writes them (migrations/0027_events.sql: a trigger on each row that changes, in the change's own
transaction); this module is what an event is once read, and what a reader of it is shown: the ids, the state and
its reason, never a storage key, a signed URL or document text.
"""

from collections.abc import Mapping
from datetime import datetime
from enum import StrEnum
from typing import Any
from uuid import UUID

from pydantic import BaseModel, ConfigDict

from shared.domain.files import FailureReason

RETENTION_DAYS = 14  # GET /v1/events lists this far back; older events are purged by the sweep
MAX_PAGE = 500
DEFAULT_PAGE = 100


class EventType(StrEnum):
    FILE_VERSION_INDEXED = "file.version.indexed"
    FILE_VERSION_FAILED = "file.version.failed"
    FILE_VERSION_REJECTED = "file.version.rejected"
    FILE_DELETED = "file.deleted"
    FILE_MOVED = "file.moved"
    FILE_METADATA_CHANGED = "file.metadata.changed"
    EXPORT_RENDERED = "export.rendered"
    EXPORT_FAILED = "export.failed"
    REPLACEMENT_PENDING = "replacement.pending"
    REPLACEMENT_APPROVED = "replacement.approved"
    REINDEX_FINISHED = "reindex.finished"
    WEBHOOK_DISABLED = "webhook.disabled"


# The source of every event on a bus (EventBridge's `source`, the local archive's): a rule matches on it.
EVENT_SOURCE = "quire"


class StoredEvent(BaseModel):
    """An event as the outbox holds it. `seq` orders events as they were written; `position` is the order they
    were published in (None until then), the cursor of the event list."""

    model_config = ConfigDict(frozen=True)

    tenant_id: str
    event_id: UUID
    seq: int
    type: EventType
    collection_id: str
    ordering_key: str
    data: dict[str, Any]
    occurred_at: datetime
    position: int | None = None


def event_body(event: StoredEvent) -> dict[str, Any]:
    """The event as every reader sees it (GET /v1/events, a webhook's body, EventBridge's detail): camelCase,
    with the failure's sentence beside its reason."""
    return {
        "eventId": str(event.event_id),
        "type": event.type.value,
        "occurredAt": event.occurred_at.isoformat(),
        "tenantId": event.tenant_id,
        "collectionId": event.collection_id,
        "data": _shown(event.type, event.data),
    }


def _shown(event_type: EventType, data: Mapping[str, Any]) -> dict[str, Any]:
    shown = dict(data)
    if event_type is EventType.FILE_VERSION_FAILED:
        reason = shown.get("failureReason")
        try:
            shown["failureSentence"] = FailureReason(reason).user_sentence if reason else None
        except ValueError:
            shown["failureSentence"] = None
    return shown


class EventCursor:
    """The opaque cursor of GET /v1/events: the position of the last event a page held. Decimal, so a product may
    store it as text; refused when it is not one this API could have given. `latest` asks for no events, only the
    cursor after the last one published: what a product takes before an upload, to wait on its events."""

    MAX_CHARACTERS = 20
    LATEST = "latest"

    @staticmethod
    def parse(cursor: str | None) -> int:
        if cursor is None or cursor == "":
            return 0
        if len(cursor) > EventCursor.MAX_CHARACTERS or not cursor.isascii() or not cursor.isdigit():
            raise ValueError("the cursor is not one this API gave: pass back `nextCursor` exactly as it was sent")
        return int(cursor)

    @staticmethod
    def of(position: int) -> str:
        return str(position)


class EventPage(BaseModel):
    model_config = ConfigDict(frozen=True)

    events: list[StoredEvent]
    next_cursor: str


def page_after(events: list[StoredEvent], *, after: int, limit: int | None = None, head: int = 0) -> EventPage:
    """The page and its cursor: after its last event, or, when it is not full (everything up to `head` was seen),
    at `head`, so a caller who sees few of the tenant's events does not read the others' positions again."""
    last = max((event.position or 0 for event in events), default=after)
    if limit is not None and len(events) < limit:
        last = max(last, head)
    return EventPage(events=events, next_cursor=EventCursor.of(max(last, after)))
