"""The sweep's purge (issue 34): a tenant's published events and finished webhook deliveries are deleted once older
than RETENTION_DAYS; what is still to publish or to deliver is kept, whatever its age, and so is another tenant's."""

import secrets
import uuid
from datetime import UTC, datetime, timedelta

import psycopg

from shared.adapters.postgres.sweep_progress import PostgresSweepProgress
from shared.domain.events import RETENTION_DAYS
from shared.domain.webhook_signing import new_secret
from shared.domain.webhooks import NewWebhook
from shared.services.reconciliation import ReconcileBudget, Reconciler, ReconcileThresholds
from tests.integration.files_stack import Stack


class FakeSweepProgress(PostgresSweepProgress):
    """The sweep-progress port with only the given tenants in turn (the session's database holds every test's)."""

    def __init__(self, stack: Stack, tenants: list[str]) -> None:
        super().__init__(stack.container.database)
        self._tenants = tenants

    def tenants_in_turn(self) -> list[str]:
        return list(self._tenants)


def record_event(conn: psycopg.Connection, tenant: str, identity: str, *, age_days: float, published: bool) -> None:
    """An event as the triggers write it (record_event, migrations/0027), aged, published or not."""
    conn.execute(
        "SELECT record_event(%s, 'file.deleted', 'docs', %s, %s, jsonb_build_object('fileId', %s::text))",
        (tenant, identity, identity, identity),
    )
    conn.execute(
        "UPDATE events SET occurred_at = now() - make_interval(days => %s),"
        " published_at = CASE WHEN %s THEN now() END,"
        " position = CASE WHEN %s THEN (SELECT coalesce(max(position), 0) + 1 FROM events WHERE tenant_id = %s) END"
        " WHERE tenant_id = %s AND ordering_key = %s",
        (age_days, published, published, tenant, tenant, identity),
    )


def test_the_sweep_purges_what_is_past_its_retention_and_keeps_what_is_still_owed(
    stack: Stack, owner_connection: psycopg.Connection
) -> None:
    tenant, other = f"purge{secrets.token_hex(4)}", f"kept{secrets.token_hex(4)}"
    old = RETENTION_DAYS + 1
    for who in (tenant, other):
        record_event(owner_connection, who, "old-published", age_days=old, published=True)
        record_event(owner_connection, who, "old-unpublished", age_days=old, published=False)
        record_event(owner_connection, who, "recent", age_days=1, published=True)
    store = stack.container.webhook_store
    webhook = store.create(
        NewWebhook(
            tenant_id=tenant,
            webhook_id=uuid.uuid4(),
            # Loopback: a sweep of the session's stack may find the pending delivery, and sends nowhere else.
            url="https://127.0.0.1:9/quire",
            event_types=["*"],
            collection_ids=["docs"],
            description="",
            secret=new_secret(),
            created_by="ann",
        ),
        at_most=50,
    )
    assert webhook is not None
    deliveries = {
        name: store.add_delivery(tenant, webhook.webhook_id, message_id=name, event_type="file.deleted", body={})
        for name in ("old-delivered", "old-failed", "old-pending", "recent-delivered")
    }
    for name, state, age in (
        ("old-delivered", "delivered", old),
        ("old-failed", "failed", old),
        ("old-pending", "pending", old),
        ("recent-delivered", "delivered", 1),
    ):
        owner_connection.execute(
            "UPDATE webhook_deliveries SET state = %s, created_at = now() - make_interval(days => %s)"
            " WHERE tenant_id = %s AND delivery_id = %s",
            (state, age, tenant, deliveries[name].delivery_id),
        )
    wired = stack.container
    sweep = Reconciler(
        wired.file_metadata,
        wired.file_metadata,
        wired.content,
        wired.upload_completion,
        ReconcileThresholds(pending_after=timedelta(hours=1), stuck_after=timedelta(hours=1)),
        progress=FakeSweepProgress(stack, [tenant]),
        budget=ReconcileBudget(scan=timedelta(0)),
        purges=(wired.event_outbox, wired.webhook_store),
    )

    report = sweep.run(datetime.now(UTC))

    assert report.records_purged == 3 and report.as_dict()["recordsPurged"] == 3
    kept = {
        tenant_id: sorted(key for (key,) in rows)
        for tenant_id, rows in (
            (t, owner_connection.execute("SELECT ordering_key FROM events WHERE tenant_id = %s", (t,)).fetchall())
            for t in (tenant, other)
        )
    }
    assert kept == {
        tenant: ["old-unpublished", "recent"],
        other: ["old-published", "old-unpublished", "recent"],
    }
    left = owner_connection.execute(
        "SELECT message_id FROM webhook_deliveries WHERE tenant_id = %s ORDER BY message_id", (tenant,)
    ).fetchall()
    assert [message_id for (message_id,) in left] == ["old-pending", "recent-delivered"]
