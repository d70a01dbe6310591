"""Webhooks and the event list, as the API offers them (issue 34).

A webhook belongs to the collections it names, and only an admin of every one of them may register, see, change or
remove it: anyone else gets the same 404 as for a webhook that does not exist. Its signing secret is shown once, at
registration (and at each rotation). The event list shows the events of the collections the caller reads.
"""

from datetime import UTC, datetime
from uuid import UUID, uuid4

from pydantic import BaseModel, ConfigDict

from shared.domain.auth import Principal
from shared.domain.errors import Forbidden, InvalidRequest, NotFound
from shared.domain.events import EventCursor, EventPage, EventType, page_after
from shared.domain.outbound import OutboundRefused
from shared.domain.webhook_signing import new_secret
from shared.domain.webhooks import (
    MAX_WEBHOOKS_PER_TENANT,
    ROTATION_OVERLAP,
    DeliveryRecord,
    NewWebhook,
    WebhookRecord,
    WebhookRequest,
    checked_registration,
)
from shared.ports import AuthorizationPolicy, DeliveryQueue, EventOutbox, WebhookSender, WebhookStore

TEST_EVENT = "webhook.test"
NOT_FOUND = "no such webhook"


class Registered(BaseModel):
    """A webhook and its secret, which only this answer shows."""

    model_config = ConfigDict(frozen=True)

    webhook: WebhookRecord
    secret: str


class WebhookService:
    def __init__(
        self,
        store: WebhookStore,
        outbox: EventOutbox,
        sender: WebhookSender,
        queue: DeliveryQueue,
        policy: AuthorizationPolicy,
        *,
        allow_loopback: bool,
        allowed_ports: frozenset[int] | None = None,
    ) -> None:
        self._store = store
        self._outbox = outbox
        self._sender = sender
        self._queue = queue
        self._policy = policy
        self._allow_loopback = allow_loopback
        self._allowed_ports = allowed_ports

    def register(self, principal: Principal, request: WebhookRequest) -> Registered:
        checked = checked_registration(request, allow_loopback=self._allow_loopback, allowed_ports=self._allowed_ports)
        administered = self._policy.administered_collections(principal)
        missing = [collection for collection in checked.collection_ids if collection not in administered]
        if missing:
            raise Forbidden(
                f"registering a webhook needs the admin role in every collection it names; not in {missing[0]!r}"
            )
        try:
            self._sender.check_destination(checked.url)
        except OutboundRefused as refused:
            raise InvalidRequest(f"url: refused by the rule '{refused.rule}': {refused}") from refused
        secret = new_secret()
        record = self._store.create(
            NewWebhook(
                tenant_id=principal.tenant_id,
                webhook_id=uuid4(),
                url=checked.url,
                event_types=checked.events,
                collection_ids=checked.collection_ids,
                description=checked.description,
                secret=secret,
                created_by=principal.subject,
            ),
            at_most=MAX_WEBHOOKS_PER_TENANT,
        )
        if record is None:
            raise InvalidRequest(
                f"a tenant may have at most {MAX_WEBHOOKS_PER_TENANT} webhooks: delete one before adding another"
            )
        return Registered(webhook=record, secret=secret)

    def _visible(self, principal: Principal, record: WebhookRecord | None) -> WebhookRecord:
        administered = self._policy.administered_collections(principal)
        if record is None or not set(record.collection_ids) <= administered:
            raise NotFound(NOT_FOUND)
        return record

    def get(self, principal: Principal, webhook_id: UUID) -> WebhookRecord:
        return self._visible(principal, self._store.get(principal.tenant_id, webhook_id))

    def list_webhooks(self, principal: Principal) -> list[WebhookRecord]:
        administered = self._policy.administered_collections(principal)
        return [w for w in self._store.list_webhooks(principal.tenant_id) if set(w.collection_ids) <= administered]

    def delete(self, principal: Principal, webhook_id: UUID) -> None:
        self.get(principal, webhook_id)
        if not self._store.delete(principal.tenant_id, webhook_id):
            raise NotFound(NOT_FOUND)

    def rotate_secret(self, principal: Principal, webhook_id: UUID) -> Registered:
        self.get(principal, webhook_id)
        secret = new_secret()
        overlap_until = datetime.now(UTC) + ROTATION_OVERLAP
        if not self._store.rotate_secret(principal.tenant_id, webhook_id, secret=secret, overlap_until=overlap_until):
            raise NotFound(NOT_FOUND)
        return Registered(webhook=self.get(principal, webhook_id), secret=secret)

    def enable(self, principal: Principal, webhook_id: UUID) -> WebhookRecord:
        self.get(principal, webhook_id)
        self._store.set_enabled(principal.tenant_id, webhook_id)
        return self.get(principal, webhook_id)

    def deliveries(
        self, principal: Principal, webhook_id: UUID, *, limit: int, before: tuple[datetime, UUID] | None
    ) -> list[DeliveryRecord]:
        self.get(principal, webhook_id)
        return self._store.deliveries(principal.tenant_id, webhook_id, limit=limit, before=before)

    def replay(self, principal: Principal, webhook_id: UUID, delivery_id: UUID) -> DeliveryRecord:
        self.get(principal, webhook_id)
        replayed = self._store.replay(principal.tenant_id, webhook_id, delivery_id)
        if replayed is None:
            existing = self._store.delivery(principal.tenant_id, webhook_id, delivery_id)
            if existing is None:
                raise NotFound("no such delivery")
            return existing  # still pending: it is sent anyway
        self._queue.wake(principal.tenant_id, [replayed.delivery_id])
        return replayed

    def send_test(self, principal: Principal, webhook_id: UUID) -> DeliveryRecord:
        """A `webhook.test` message to this webhook alone, queued now (the deliveries list shows how it went)."""
        webhook = self.get(principal, webhook_id)
        message_id = str(uuid4())
        body: dict[str, object] = {
            "eventId": message_id,
            "type": TEST_EVENT,
            "occurredAt": datetime.now(UTC).isoformat(),
            "tenantId": principal.tenant_id,
            "collectionId": webhook.collection_ids[0],
            "data": {"webhookId": str(webhook_id)},
        }
        delivery = self._store.add_delivery(
            principal.tenant_id, webhook_id, message_id=message_id, event_type=TEST_EVENT, body=body
        )
        self._queue.wake(principal.tenant_id, [delivery.delivery_id])
        return delivery

    def events(
        self,
        principal: Principal,
        *,
        after: str | None,
        limit: int,
        collection_id: str | None,
        types: list[str] | None,
    ) -> EventPage:
        known = {t.value for t in EventType}
        unknown = [name for name in types or [] if name not in known]
        if unknown:
            raise InvalidRequest(
                f"type: unknown event type {unknown[0][:64]!r}; the types are {', '.join(sorted(known))}"
            )
        readable = self._policy.readable_collections(principal)
        if collection_id is not None:
            readable = readable & {collection_id}
        if after == EventCursor.LATEST:
            return page_after([], after=self._outbox.latest_position(principal.tenant_id, readable))
        try:
            position = EventCursor.parse(after)
        except ValueError as error:
            raise InvalidRequest(f"after: {error}") from error
        if position > self._outbox.published_through(principal.tenant_id):
            raise InvalidRequest(
                "after: the cursor is not one this API gave: pass back `nextCursor` exactly as it was sent"
            )
        events, head = self._outbox.list_events(
            principal.tenant_id, readable, after=position, limit=limit, types=frozenset(types) if types else None
        )
        return page_after(events, after=position, limit=limit, head=head)
