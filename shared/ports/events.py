"""Ports of events and webhooks (issue 34): the outbox the database writes, the bus it is published to, the
webhooks and their deliveries, the queue that wakes the deliverer, and the sender that may reach outside."""

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Protocol
from uuid import UUID

from shared.domain.events import StoredEvent
from shared.domain.webhooks import DeliveryRecord, NewWebhook, SendOutcome, WebhookRecord


class EventOutbox(Protocol):
    """The events the database wrote beside each change (migrations/0027_events.sql)."""

    def tenants_with_unpublished(self) -> list[str]: ...

    def publish_pending(
        self, tenant_id: str, *, limit: int, publish: Callable[[Sequence[StoredEvent]], None]
    ) -> list[UUID]:
        """Publish up to `limit` of the tenant's unpublished events in the order they were written: hand them to
        `publish`, then, in the same transaction, mark them published (each given its position) and create a
        delivery for every active webhook that wants each. One relay per tenant at a time (others wait), so
        positions follow publication. `publish` raising leaves every event unpublished (it is published again
        later, under the same ids). Returns the deliveries created."""
        ...

    def list_events(
        self, tenant_id: str, collections: frozenset[str], *, after: int, limit: int, types: frozenset[str] | None
    ) -> tuple[list[StoredEvent], int]:
        """Published events of `collections` (of `types`) with a position after `after`, in position order; and the
        last published position of `collections`, read at the same moment (a page that is not full has seen all
        of theirs up to it, so the cursor may move there past events of other types)."""
        ...

    def purge_before(self, tenant_id: str, before: datetime) -> int:
        """Delete published events that occurred before `before`; returns how many."""
        ...

    def latest_position(self, tenant_id: str, collections: frozenset[str]) -> int:
        """The position of the last published event of `collections` (0 for none): a cursor from which only what is
        published next is listed. Only those collections': a reader must not watch another collection's activity."""
        ...

    def published_through(self, tenant_id: str) -> int:
        """The tenant's last position ever given (purges do not lower it): no valid cursor is past it."""
        ...


class EventBus(Protocol):
    """Where published events go: EventBridge on AWS (source `quire`, detail-type the event type), the local
    stack's deliverer locally. Raises when any event could not be published (all are published again)."""

    def publish(self, events: Sequence[StoredEvent]) -> None: ...


class DeliveryQueue(Protocol):
    """Wakes the deliverer for a tenant's deliveries (SQS on AWS, the worker thread locally). Best effort: the
    deliverer's sweep finds anything a lost wake-up missed."""

    def wake(self, tenant_id: str, delivery_ids: Sequence[UUID], *, delay_seconds: int = 0) -> None: ...


class WebhookStore(Protocol):
    def create(self, new: NewWebhook, *, at_most: int) -> WebhookRecord | None:
        """The webhook made, or None when the tenant already has `at_most` (counted and written in one step)."""
        ...

    def get(self, tenant_id: str, webhook_id: UUID) -> WebhookRecord | None: ...

    def list_webhooks(self, tenant_id: str) -> list[WebhookRecord]: ...

    def delete(self, tenant_id: str, webhook_id: UUID) -> bool: ...

    def rotate_secret(self, tenant_id: str, webhook_id: UUID, *, secret: str, overlap_until: datetime) -> bool: ...

    def set_enabled(self, tenant_id: str, webhook_id: UUID) -> bool: ...

    def deliveries(
        self, tenant_id: str, webhook_id: UUID, *, limit: int, before: tuple[datetime, UUID] | None
    ) -> list[DeliveryRecord]:
        """Newest first; `before`: the (created_at, delivery_id) of the last one a page held."""
        ...

    def delivery(self, tenant_id: str, webhook_id: UUID, delivery_id: UUID) -> DeliveryRecord | None: ...

    def add_delivery(
        self, tenant_id: str, webhook_id: UUID, *, message_id: str, event_type: str, body: dict[str, object]
    ) -> DeliveryRecord: ...

    def replay(self, tenant_id: str, webhook_id: UUID, delivery_id: UUID) -> DeliveryRecord | None:
        """Make a finished delivery pending again (same message id and body), due now."""
        ...

    def tenants_with_due_deliveries(self) -> list[str]: ...

    def claim_due(
        self, tenant_id: str, *, now: datetime, limit: int, lease_seconds: int, only: Sequence[UUID] | None = None
    ) -> list[tuple[DeliveryRecord, WebhookRecord]]:
        """Lease up to `limit` due deliveries of active webhooks, each the first pending one of its webhook and
        ordering key (so a file's deliveries go in order). A lease that runs out makes a delivery claimable again."""
        ...

    def record_attempt(
        self,
        tenant_id: str,
        delivery_id: UUID,
        outcome: SendOutcome,
        *,
        now: datetime,
        retry_at: datetime | None,
        disable_reason: Callable[[datetime], str | None],
    ) -> None:
        """Record one attempt: delivered, due again at `retry_at`, or failed (None). A success clears the webhook's
        failing streak; a failure starts it, and `disable_reason(failing_since)` returning a reason disables it."""
        ...

    def purge_before(self, tenant_id: str, before: datetime) -> int: ...


class WebhookSender(Protocol):
    """One POST to a webhook's URL under the outbound rules (shared/domain/outbound.py): every resolved address
    checked, the connection pinned to a checked one, no redirect followed, TIMEOUT_SECONDS, at most
    MAX_RESPONSE_BYTES read, no credentials. Never raises for the endpoint's failures: the outcome says."""

    def send(self, url: str, headers: dict[str, str], body: bytes) -> SendOutcome: ...

    def check_destination(self, url: str) -> None:
        """Resolve and check `url` now (registration): OutboundRefused naming the rule when it may not be sent to."""
        ...
