"""Webhooks (issue 34): a collection admin's endpoint, what is sent to it, and when a failed delivery is tried again.

Pure rules; the store is shared/adapters/postgres/webhooks.py, the sender shared/adapters/outbound_http.py, the use
cases shared/services/webhooks.py and shared/services/webhook_delivery.py.
"""

import random
from collections.abc import Callable
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any
from uuid import UUID

from pydantic import BaseModel, ConfigDict

from shared.domain.auth import IDENTIFIER_PATTERN
from shared.domain.errors import InvalidRequest
from shared.domain.events import EventType
from shared.domain.outbound import MAX_URL_CHARACTERS, OutboundRefused, checked_url

MAX_WEBHOOKS_PER_TENANT = 50
MAX_COLLECTIONS_PER_WEBHOOK = 100
MAX_DESCRIPTION_CHARACTERS = 500
ALL_EVENTS = "*"
# A rotated-out secret still signs for this long, so a receiver can switch without missing a delivery.
ROTATION_OVERLAP = timedelta(hours=24)
# A delivery is retried for this long after it was first due, then marked failed and kept for replay.
RETRY_WINDOW = timedelta(hours=24)
# An endpoint whose every delivery has failed for this long is disabled (an event says so).
DISABLE_AFTER = timedelta(days=3)
FIRST_RETRY = timedelta(seconds=5)
LONGEST_WAIT = timedelta(hours=1)
# What a delivery may take and read (the sender enforces both).
TIMEOUT_SECONDS = 10.0
MAX_RESPONSE_BYTES = 64 * 1024


class WebhookState(StrEnum):
    ACTIVE = "active"
    DISABLED = "disabled"


class DeliveryState(StrEnum):
    PENDING = "pending"
    DELIVERED = "delivered"
    FAILED = "failed"


class WebhookRequest(BaseModel):
    """A registration as asked, checked by `checked_registration`."""

    model_config = ConfigDict(frozen=True)

    url: str
    events: list[str]
    collection_ids: list[str]
    description: str = ""


class NewWebhook(BaseModel):
    model_config = ConfigDict(frozen=True)

    tenant_id: str
    webhook_id: UUID
    url: str
    event_types: list[str]
    collection_ids: list[str]
    description: str
    secret: str
    created_by: str


class WebhookRecord(BaseModel):
    model_config = ConfigDict(frozen=True)

    tenant_id: str
    webhook_id: UUID
    url: str
    event_types: list[str]
    collection_ids: list[str]
    description: str
    state: WebhookState
    disabled_reason: str | None
    failing_since: datetime | None
    secret: str
    previous_secret: str | None
    previous_secret_expires_at: datetime | None
    created_by: str
    created_at: datetime

    def signing_secrets(self, now: datetime) -> list[str]:
        """The secrets that sign a message sent at `now`: the current one, and the previous one while it is
        still within its overlap."""
        secrets = [self.secret]
        if self.previous_secret and self.previous_secret_expires_at and now < self.previous_secret_expires_at:
            secrets.append(self.previous_secret)
        return secrets

    def wants(self, event_type: str, collection_id: str) -> bool:
        return collection_id in self.collection_ids and (
            ALL_EVENTS in self.event_types or event_type in self.event_types
        )


class DeliveryRecord(BaseModel):
    model_config = ConfigDict(frozen=True)

    tenant_id: str
    delivery_id: UUID
    webhook_id: UUID
    message_id: str
    event_type: str
    ordering_key: str
    event_seq: int
    body: dict[str, Any]
    state: DeliveryState
    attempts: int
    next_attempt_at: datetime
    retry_from: datetime  # retries stop RETRY_WINDOW after this (made, or last replayed)
    last_status: int | None
    last_error: str | None
    created_at: datetime
    finished_at: datetime | None


class SendOutcome(BaseModel):
    """What one attempt got: `status` when the endpoint answered, `error` (naming the rule or the failure) when
    it did not or the answer was not a success."""

    model_config = ConfigDict(frozen=True)

    delivered: bool
    status: int | None = None
    error: str | None = None
    # The request never left: a rule refused the destination. Retried like any failure (a name may resolve
    # elsewhere later), but never connected.
    refused_rule: str | None = None


def checked_registration(
    request: WebhookRequest, *, allow_loopback: bool, allowed_ports: frozenset[int] | None = None
) -> WebhookRequest:
    """The request with its lists cleaned, or InvalidRequest naming the field and the limit (an unsafe URL names
    the rule it breaks)."""
    if len(request.url) > MAX_URL_CHARACTERS:
        raise InvalidRequest(f"url: at most {MAX_URL_CHARACTERS} characters")
    try:
        checked_url(request.url, allow_plain_http_to_loopback=allow_loopback, allowed_ports=allowed_ports)
    except OutboundRefused as refused:
        raise InvalidRequest(f"url: refused by the rule '{refused.rule}': {refused}") from refused
    events = sorted(set(request.events))
    if not events:
        raise InvalidRequest('events: name at least one event type, or "*" for all')
    unknown = [name for name in events if name != ALL_EVENTS and name not in {t.value for t in EventType}]
    if unknown:
        known = ", ".join(t.value for t in EventType)
        raise InvalidRequest(f'events: unknown event type {unknown[0][:64]!r}; the types are {known}, or "*"')
    collections = sorted(set(request.collection_ids))
    if not collections:
        raise InvalidRequest("collectionIds: name at least one collection")
    if len(collections) > MAX_COLLECTIONS_PER_WEBHOOK:
        raise InvalidRequest(f"collectionIds: at most {MAX_COLLECTIONS_PER_WEBHOOK} collections")
    bad = [collection for collection in collections if not IDENTIFIER_PATTERN.fullmatch(collection)]
    if bad:
        raise InvalidRequest(f"collectionIds: {bad[0][:80]!r} is not a collection id")
    if len(request.description) > MAX_DESCRIPTION_CHARACTERS:
        raise InvalidRequest(f"description: at most {MAX_DESCRIPTION_CHARACTERS} characters")
    if any(ord(character) < 0x20 and character not in "\t\n" for character in request.description):
        raise InvalidRequest("description: holds a control character")
    return WebhookRequest(url=request.url, events=events, collection_ids=collections, description=request.description)


def next_attempt(
    first_due: datetime, attempts: int, now: datetime, *, jitter: Callable[[], float] = random.random
) -> datetime | None:
    """When to try again after `attempts` failed attempts, or None once the retry window is spent: exponential
    backoff from FIRST_RETRY, capped at LONGEST_WAIT, with "equal jitter" (a random point in the upper half of each
    step: retries of many deliveries spread out, and none comes sooner than half its step)."""
    step = min(FIRST_RETRY * (1 << min(max(attempts - 1, 0), 20)), LONGEST_WAIT)
    wait = step / 2 + step / 2 * jitter()
    at = now + wait
    deadline = first_due + RETRY_WINDOW
    if now >= deadline:
        return None
    return min(at, deadline)


def should_disable(failing_since: datetime | None, now: datetime) -> bool:
    return failing_since is not None and now - failing_since >= DISABLE_AFTER


def disabled_reason(failing_since: datetime) -> str:
    return f"every delivery failed since {failing_since.isoformat(timespec='seconds')} (3 days): re-enable it to resume"
