"""Wire models of events and webhooks (docs/events.md; camelCase on the wire, like the rest of the API)."""

from datetime import datetime
from typing import Any
from uuid import UUID

from pydantic import Field

from functions.views.base import ApiModel
from shared.domain.events import EventCursor, EventPage, StoredEvent, event_body
from shared.domain.outbound import MAX_URL_CHARACTERS
from shared.domain.webhooks import (
    MAX_COLLECTIONS_PER_WEBHOOK,
    MAX_DESCRIPTION_CHARACTERS,
    DeliveryRecord,
    DeliveryState,
    WebhookRecord,
    WebhookState,
)


class EventView(ApiModel):
    """One event as every reader sees it: ids, the state and its reason; never a storage key, a URL or text."""

    event_id: UUID
    type: str
    occurred_at: datetime
    tenant_id: str
    collection_id: str
    data: dict[str, Any]
    # In the list only (not in a webhook's body): the cursor just after this event, to resume from mid-page.
    cursor: str | None = None

    @classmethod
    def of(cls, event: StoredEvent) -> "EventView":
        body = event_body(event)
        return cls(
            cursor=EventCursor.of(event.position) if event.position is not None else None,
            event_id=event.event_id,
            type=body["type"],
            occurred_at=event.occurred_at,
            tenant_id=event.tenant_id,
            collection_id=event.collection_id,
            data=body["data"],
        )


class EventPageView(ApiModel):
    events: list[EventView]
    # Always present: pass it back as `after` for what comes next (an empty page means caught up).
    next_cursor: str

    @classmethod
    def of(cls, page: EventPage) -> "EventPageView":
        return cls(events=[EventView.of(event) for event in page.events], next_cursor=page.next_cursor)


class WebhookRequestBody(ApiModel):
    url: str = Field(max_length=MAX_URL_CHARACTERS)
    events: list[str] = Field(min_length=1, max_length=32)
    collection_ids: list[str] = Field(min_length=1, max_length=MAX_COLLECTIONS_PER_WEBHOOK)
    description: str = Field(default="", max_length=MAX_DESCRIPTION_CHARACTERS)


class WebhookView(ApiModel):
    webhook_id: UUID
    url: str
    events: list[str]
    collection_ids: list[str]
    description: str
    state: WebhookState
    disabled_reason: str | None
    failing_since: datetime | None
    # While a rotation's overlap lasts, the previous secret still signs (until this time).
    previous_secret_expires_at: datetime | None
    created_by: str
    created_at: datetime

    @classmethod
    def of(cls, record: WebhookRecord) -> "WebhookView":
        return cls(
            webhook_id=record.webhook_id,
            url=record.url,
            events=record.event_types,
            collection_ids=record.collection_ids,
            description=record.description,
            state=record.state,
            disabled_reason=record.disabled_reason,
            failing_since=record.failing_since,
            previous_secret_expires_at=record.previous_secret_expires_at,
            created_by=record.created_by,
            created_at=record.created_at,
        )


class WebhookSecretView(ApiModel):
    """A webhook with its signing secret: shown by registration and rotation only, never again."""

    webhook: WebhookView
    secret: str


class WebhookListView(ApiModel):
    webhooks: list[WebhookView]


class DeliveryView(ApiModel):
    delivery_id: UUID
    webhook_id: UUID
    # The `webhook-id` header: the event's id (the same on every attempt and replay).
    message_id: str
    event_type: str
    state: DeliveryState
    attempts: int
    next_attempt_at: datetime | None
    last_status: int | None
    last_error: str | None
    created_at: datetime
    finished_at: datetime | None
    body: dict[str, Any]

    @classmethod
    def of(cls, record: DeliveryRecord) -> "DeliveryView":
        return cls(
            delivery_id=record.delivery_id,
            webhook_id=record.webhook_id,
            message_id=record.message_id,
            event_type=record.event_type,
            state=record.state,
            attempts=record.attempts,
            next_attempt_at=record.next_attempt_at if record.state is DeliveryState.PENDING else None,
            last_status=record.last_status,
            last_error=record.last_error,
            created_at=record.created_at,
            finished_at=record.finished_at,
            body=record.body,
        )


class DeliveryListView(ApiModel):
    deliveries: list[DeliveryView]
    # The `before` of the next page (the oldest delivery's creation time), or None at the end.
    next_cursor: str | None
