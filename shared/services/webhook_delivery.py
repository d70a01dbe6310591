"""Sending webhooks' deliveries (issue 34): the same code on AWS (the delivery function, woken by SQS and a schedule)
and locally (a worker thread of the stack).

Each delivery is leased, signed as the Standard Webhooks specification says (with every secret that still signs),
sent by the WebhookSender under the outbound rules, and recorded: delivered; due again after a backoff with jitter;
or, RETRY_WINDOW after it was made (or replayed), failed and kept for replay. A file's deliveries to one webhook go
one at a time, in the order its events were written. An endpoint that has failed everything for DISABLE_AFTER is
disabled, and an event says so.
"""

import json
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from uuid import UUID

from shared.domain.webhook_signing import signed_headers
from shared.domain.webhooks import (
    TIMEOUT_SECONDS,
    DeliveryRecord,
    WebhookRecord,
    disabled_reason,
    next_attempt,
    should_disable,
)
from shared.observability import logger
from shared.ports import DeliveryQueue, WebhookSender, WebhookStore

BATCH = 5
# A claim leases its batch for as long as sending all of it can take (each send is cut at TIMEOUT_SECONDS), with room:
# no other deliverer sends one of them meanwhile; a deliverer that dies frees them when the lease runs out.
SEND_AT_MOST_SECONDS = TIMEOUT_SECONDS + 2  # one send, cut at its timeout, and its record
LEASE_SECONDS = int(BATCH * SEND_AT_MOST_SECONDS + 10)
MAX_ROUNDS = 50  # per call, so one tenant's stream cannot hold a worker forever; the next wake-up goes on


def _utcnow() -> datetime:
    return datetime.now(UTC)


def message_body(delivery: DeliveryRecord) -> bytes:
    """The exact bytes signed and sent: compact JSON of the stored body (a replay sends the same bytes)."""
    return json.dumps(delivery.body, separators=(",", ":"), ensure_ascii=False, sort_keys=True).encode()


class WebhookDeliverer:
    def __init__(
        self,
        store: WebhookStore,
        sender: WebhookSender,
        *,
        queue: DeliveryQueue | None = None,
        clock: Callable[[], datetime] = _utcnow,
        batch: int = BATCH,
        lease_seconds: int = LEASE_SECONDS,
    ) -> None:
        self._store = store
        self._sender = sender
        self._queue = queue
        self._clock = clock
        self._batch = batch
        self._lease_seconds = lease_seconds

    def deliver_due(self, tenant_id: str, only: Sequence[UUID] | None = None, *, deadline: float | None = None) -> int:
        """Send the tenant's due deliveries (or only those named, and the ones they unblock); how many were tried.
        Before `deadline` (time.monotonic()) only as many are claimed as can be sent, each at its longest: what is
        left stays due for the next wake-up or sweep."""
        tried = 0
        for _ in range(MAX_ROUNDS):
            limit = self._batch
            if deadline is not None:  # only as many as can be sent, each at its longest, before the deadline
                limit = min(limit, int((deadline - time.monotonic()) // SEND_AT_MOST_SECONDS))
                if limit < 1:
                    break
            claimed = self._store.claim_due(
                tenant_id, now=self._clock(), limit=limit, lease_seconds=self._lease_seconds, only=only
            )
            if not claimed:
                break
            for delivery, webhook in claimed:
                self._attempt(delivery, webhook)
            tried += len(claimed)
            only = None  # what the named ones unblocked (a file's next delivery) is due now too
        return tried

    def deliver_all(self, *, deadline: float | None = None) -> int:
        tried = 0
        for tenant_id in self._store.tenants_with_due_deliveries():
            try:
                tried += self.deliver_due(tenant_id, deadline=deadline)
            except Exception:  # the database for one tenant's batch; the next sweep retries
                logger.exception("delivering a tenant's webhooks failed; they stay due", tenant_id=tenant_id)
        return tried

    def _attempt(self, delivery: DeliveryRecord, webhook: WebhookRecord) -> None:
        now = self._clock()
        body = message_body(delivery)
        headers = signed_headers(webhook.signing_secrets(now), delivery.message_id, int(now.timestamp()), body)
        outcome = self._sender.send(webhook.url, headers, body)
        retry_at = None if outcome.delivered else next_attempt(delivery.retry_from, delivery.attempts, now)

        def disable(failing_since: datetime) -> str | None:
            return disabled_reason(failing_since) if should_disable(failing_since, now) else None

        self._store.record_attempt(
            delivery.tenant_id, delivery.delivery_id, outcome, now=now, retry_at=retry_at, disable_reason=disable
        )
        if retry_at is not None and self._queue is not None:
            delay = max(0, int((retry_at - now).total_seconds()))
            self._queue.wake(delivery.tenant_id, [delivery.delivery_id], delay_seconds=delay)
        logger.info(
            "webhook delivery attempted",
            delivery_id=str(delivery.delivery_id),
            webhook_id=str(webhook.webhook_id),
            attempt=delivery.attempts,
            delivered=outcome.delivered,
            status=outcome.status,
            error=outcome.error,
        )
