"""WebhookStore over PostgreSQL (migrations/0027_events.sql): endpoints, their secrets and their deliveries. Every
statement runs in a tenant transaction and filters by tenant; times come from the caller's clock, so the retry
window and the disabling rule can be tested without waiting days."""

from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID, uuid4

from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from shared.adapters.postgres.database import Database
from shared.domain.webhooks import DeliveryRecord, NewWebhook, SendOutcome, WebhookRecord
from shared.ports import WebhookStore

_WEBHOOK = (
    "tenant_id, webhook_id, url, event_types, collection_ids, description, state, disabled_reason, failing_since,"
    " secret, previous_secret, previous_secret_expires_at, created_by, created_at"
)
_DELIVERY = (
    "tenant_id, delivery_id, webhook_id, message_id, event_type, ordering_key, event_seq, body, state, attempts,"
    " next_attempt_at, retry_from, last_status, last_error, created_at, finished_at"
)
# The first pending delivery of its webhook and ordering key, due, not leased by another deliverer, its webhook
# active; the row lock (SKIP LOCKED) keeps two deliverers off one delivery while the lease is written.
_CLAIM = (
    "WITH due AS ("
    " SELECT d.delivery_id FROM webhook_deliveries AS d"
    " JOIN webhooks AS w ON w.tenant_id = d.tenant_id AND w.webhook_id = d.webhook_id AND w.state = 'active'"
    " WHERE d.tenant_id = %(tenant)s AND d.state = 'pending' AND d.next_attempt_at <= %(now)s"
    "  AND (d.leased_until IS NULL OR d.leased_until <= %(now)s) {only}"
    "  AND NOT EXISTS (SELECT 1 FROM webhook_deliveries AS e WHERE e.tenant_id = d.tenant_id"
    "   AND e.webhook_id = d.webhook_id AND e.ordering_key = d.ordering_key AND e.state = 'pending'"
    "   AND (e.event_seq, e.created_at, e.delivery_id) < (d.event_seq, d.created_at, d.delivery_id))"
    " ORDER BY d.event_seq LIMIT %(limit)s FOR UPDATE OF d SKIP LOCKED)"
    " UPDATE webhook_deliveries AS x SET leased_until = %(lease)s, attempts = x.attempts + 1 FROM due"
    " WHERE x.tenant_id = %(tenant)s AND x.delivery_id = due.delivery_id RETURNING {columns}"
)


def _webhook(row: dict[str, Any]) -> WebhookRecord:
    return WebhookRecord.model_validate(row)


def _delivery(row: dict[str, Any]) -> DeliveryRecord:
    return DeliveryRecord.model_validate(row)


class PostgresWebhookStore(WebhookStore):
    def __init__(self, database: Database) -> None:
        self._database = database

    def create(self, new: NewWebhook, *, at_most: int) -> WebhookRecord | None:
        with self._database.tenant_transaction(new.tenant_id) as conn, conn.cursor(row_factory=dict_row) as cur:
            # Two registrations at once count one after the other.
            cur.execute("SELECT pg_advisory_xact_lock(hashtextextended('quire.webhooks/' || %s, 0))", (new.tenant_id,))
            count = cur.execute("SELECT count(*) AS n FROM webhooks WHERE tenant_id = %s", (new.tenant_id,)).fetchone()
            if count is not None and count["n"] >= at_most:
                return None
            row = cur.execute(
                "INSERT INTO webhooks (tenant_id, webhook_id, url, event_types, collection_ids, description, secret,"  # noqa: S608
                " created_by) VALUES (%(tenant_id)s, %(webhook_id)s, %(url)s, %(event_types)s, %(collection_ids)s,"
                f" %(description)s, %(secret)s, %(created_by)s) RETURNING {_WEBHOOK}",
                new.model_dump(),
            ).fetchone()
        assert row is not None
        return _webhook(row)

    def get(self, tenant_id: str, webhook_id: UUID) -> WebhookRecord | None:
        with self._database.tenant_transaction(tenant_id) as conn, conn.cursor(row_factory=dict_row) as cur:
            row = cur.execute(
                f"SELECT {_WEBHOOK} FROM webhooks WHERE tenant_id = %s AND webhook_id = %s",  # noqa: S608
                (tenant_id, webhook_id),
            ).fetchone()
        return _webhook(row) if row else None

    def list_webhooks(self, tenant_id: str) -> list[WebhookRecord]:
        with self._database.tenant_transaction(tenant_id) as conn, conn.cursor(row_factory=dict_row) as cur:
            rows = cur.execute(
                f"SELECT {_WEBHOOK} FROM webhooks WHERE tenant_id = %s ORDER BY created_at, webhook_id",  # noqa: S608
                (tenant_id,),
            ).fetchall()
        return [_webhook(row) for row in rows]

    def delete(self, tenant_id: str, webhook_id: UUID) -> bool:
        with self._database.tenant_transaction(tenant_id) as conn:
            return (
                conn.execute(
                    "DELETE FROM webhooks WHERE tenant_id = %s AND webhook_id = %s", (tenant_id, webhook_id)
                ).rowcount
                == 1
            )

    def rotate_secret(self, tenant_id: str, webhook_id: UUID, *, secret: str, overlap_until: datetime) -> bool:
        with self._database.tenant_transaction(tenant_id) as conn:
            return (
                conn.execute(
                    "UPDATE webhooks SET previous_secret = secret, previous_secret_expires_at = %s, secret = %s,"
                    " updated_at = now() WHERE tenant_id = %s AND webhook_id = %s",
                    (overlap_until, secret, tenant_id, webhook_id),
                ).rowcount
                == 1
            )

    def set_enabled(self, tenant_id: str, webhook_id: UUID) -> bool:
        with self._database.tenant_transaction(tenant_id) as conn:
            return (
                conn.execute(
                    "UPDATE webhooks SET state = 'active', disabled_reason = NULL, failing_since = NULL,"
                    " updated_at = now() WHERE tenant_id = %s AND webhook_id = %s",
                    (tenant_id, webhook_id),
                ).rowcount
                == 1
            )

    def deliveries(
        self, tenant_id: str, webhook_id: UUID, *, limit: int, before: tuple[datetime, UUID] | None
    ) -> list[DeliveryRecord]:
        after_page = " AND (created_at, delivery_id) < (%(at)s, %(id)s)" if before is not None else ""
        with self._database.tenant_transaction(tenant_id) as conn, conn.cursor(row_factory=dict_row) as cur:
            rows = cur.execute(
                f"SELECT {_DELIVERY} FROM webhook_deliveries WHERE tenant_id = %(tenant)s"  # noqa: S608
                f" AND webhook_id = %(webhook)s{after_page} ORDER BY created_at DESC, delivery_id DESC LIMIT %(limit)s",
                {
                    "tenant": tenant_id,
                    "webhook": webhook_id,
                    "at": before[0] if before else None,
                    "id": before[1] if before else None,
                    "limit": limit,
                },
            ).fetchall()
        return [_delivery(row) for row in rows]

    def delivery(self, tenant_id: str, webhook_id: UUID, delivery_id: UUID) -> DeliveryRecord | None:
        with self._database.tenant_transaction(tenant_id) as conn, conn.cursor(row_factory=dict_row) as cur:
            row = cur.execute(
                f"SELECT {_DELIVERY} FROM webhook_deliveries WHERE tenant_id = %s AND webhook_id = %s"  # noqa: S608
                " AND delivery_id = %s",
                (tenant_id, webhook_id, delivery_id),
            ).fetchone()
        return _delivery(row) if row else None

    def add_delivery(
        self, tenant_id: str, webhook_id: UUID, *, message_id: str, event_type: str, body: dict[str, object]
    ) -> DeliveryRecord:
        delivery_id = uuid4()
        with self._database.tenant_transaction(tenant_id) as conn, conn.cursor(row_factory=dict_row) as cur:
            row = cur.execute(
                "INSERT INTO webhook_deliveries (tenant_id, delivery_id, webhook_id, message_id, event_type,"  # noqa: S608
                " ordering_key, event_seq, body) VALUES (%s, %s, %s, %s, %s, %s, 0, %s) RETURNING " + _DELIVERY,
                (tenant_id, delivery_id, webhook_id, message_id, event_type, f"delivery/{delivery_id}", Jsonb(body)),
            ).fetchone()
        assert row is not None
        return _delivery(row)

    def replay(self, tenant_id: str, webhook_id: UUID, delivery_id: UUID) -> DeliveryRecord | None:
        with self._database.tenant_transaction(tenant_id) as conn, conn.cursor(row_factory=dict_row) as cur:
            row = cur.execute(
                "UPDATE webhook_deliveries SET state = 'pending', next_attempt_at = now(), retry_from = now(),"  # noqa: S608
                " leased_until = NULL, finished_at = NULL"
                " WHERE tenant_id = %s AND webhook_id = %s AND delivery_id = %s AND state <> 'pending'"
                " RETURNING " + _DELIVERY,
                (tenant_id, webhook_id, delivery_id),
            ).fetchone()
        return _delivery(row) if row else None

    def tenants_with_due_deliveries(self) -> list[str]:
        with self._database.unscoped_transaction() as conn:
            return [row[0] for row in conn.execute("SELECT tenant_id FROM tenants_with_due_deliveries()")]

    def claim_due(
        self,
        tenant_id: str,
        *,
        now: datetime,
        limit: int,
        lease_seconds: int,
        only: Sequence[UUID] | None = None,
    ) -> list[tuple[DeliveryRecord, WebhookRecord]]:
        statement = _CLAIM.format(
            only="AND d.delivery_id = ANY(%(only)s)" if only is not None else "",
            columns=", ".join(f"x.{column.strip()}" for column in _DELIVERY.split(",")),
        )
        params = {
            "tenant": tenant_id,
            "now": now,
            "lease": now + timedelta(seconds=lease_seconds),
            "limit": limit,
            "only": list(only or ()),
        }
        with self._database.tenant_transaction(tenant_id) as conn, conn.cursor(row_factory=dict_row) as cur:
            claimed = [_delivery(row) for row in cur.execute(statement, params).fetchall()]
            if not claimed:
                return []
            webhooks = {
                row["webhook_id"]: _webhook(row)
                for row in cur.execute(
                    f"SELECT {_WEBHOOK} FROM webhooks WHERE tenant_id = %s AND webhook_id = ANY(%s)",  # noqa: S608
                    (tenant_id, list({delivery.webhook_id for delivery in claimed})),
                )
            }
        return [(delivery, webhooks[delivery.webhook_id]) for delivery in sorted(claimed, key=lambda d: d.event_seq)]

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
        state = "delivered" if outcome.delivered else ("pending" if retry_at is not None else "failed")
        with self._database.tenant_transaction(tenant_id) as conn:
            row = conn.execute(
                "UPDATE webhook_deliveries SET state = %s, last_status = %s, last_error = %s, leased_until = NULL,"
                " next_attempt_at = COALESCE(%s, next_attempt_at),"
                " finished_at = CASE WHEN %s = 'pending' THEN NULL ELSE %s END"
                " WHERE tenant_id = %s AND delivery_id = %s AND state = 'pending' RETURNING webhook_id",
                (
                    state,
                    outcome.status,
                    (outcome.error or "")[:1000] or None,
                    retry_at,
                    state,
                    now,
                    tenant_id,
                    delivery_id,
                ),
            ).fetchone()
            if row is None:
                return
            webhook_id = row[0]
            if outcome.delivered:
                conn.execute(
                    "UPDATE webhooks SET failing_since = NULL WHERE tenant_id = %s AND webhook_id = %s"
                    " AND failing_since IS NOT NULL",
                    (tenant_id, webhook_id),
                )
                return
            failing = conn.execute(
                "UPDATE webhooks SET failing_since = COALESCE(failing_since, %s) WHERE tenant_id = %s"
                " AND webhook_id = %s AND state = 'active' RETURNING failing_since",
                (now, tenant_id, webhook_id),
            ).fetchone()
            reason = disable_reason(failing[0]) if failing else None
            if reason is not None:
                conn.execute(
                    "UPDATE webhooks SET state = 'disabled', disabled_reason = %s, updated_at = %s"
                    " WHERE tenant_id = %s AND webhook_id = %s AND state = 'active'",
                    (reason, now, tenant_id, webhook_id),
                )

    def purge_before(self, tenant_id: str, before: datetime) -> int:
        with self._database.tenant_transaction(tenant_id) as conn:
            return conn.execute(
                "DELETE FROM webhook_deliveries WHERE tenant_id = %s AND created_at < %s AND state <> 'pending'",
                (tenant_id, before),
            ).rowcount
