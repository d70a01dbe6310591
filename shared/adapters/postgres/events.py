"""EventOutbox over PostgreSQL (migrations/0027_events.sql): the triggers write events; this reads, publishes and
lists them. Every statement runs in a tenant transaction and filters by tenant."""

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from shared.adapters.postgres.database import Database
from shared.domain.events import StoredEvent, event_body
from shared.ports import EventOutbox

_COLUMNS = "tenant_id, event_id, seq, type, collection_id, ordering_key, data, occurred_at, position"
# One relay per tenant at a time: positions are handed out in the order the relays commit.
_RELAY_LOCK = "SELECT pg_advisory_xact_lock(hashtextextended('quire.events.relay/' || %s, 0))"
# Every active webhook of the tenant that wants an event gets a delivery of its body, once (the unique key). The
# events come as arrays, not joined back from the table: a join on the tenant's events would scan all of them.
_FAN_OUT = (
    "INSERT INTO webhook_deliveries (tenant_id, delivery_id, webhook_id, message_id, event_type, ordering_key,"
    " event_seq, body)"
    " SELECT %(tenant)s, gen_random_uuid(), w.webhook_id, b.event_id::text, b.type, b.ordering_key, b.seq, b.body"
    " FROM unnest(%(ids)s::uuid[], %(types)s::text[], %(collections)s::text[], %(keys)s::text[],"
    "  %(positions)s::bigint[], %(bodies)s::jsonb[]) AS b(event_id, type, collection_id, ordering_key, seq, body)"
    " JOIN webhooks AS w ON w.tenant_id = %(tenant)s AND w.state = 'active'"
    "  AND b.collection_id = ANY(w.collection_ids) AND ('*' = ANY(w.event_types) OR b.type = ANY(w.event_types))"
    " ORDER BY b.seq"
    " ON CONFLICT DO NOTHING RETURNING delivery_id"
)


def _event(row: dict[str, Any]) -> StoredEvent:
    return StoredEvent.model_validate(row)


class PostgresEventOutbox(EventOutbox):
    def __init__(self, database: Database) -> None:
        self._database = database

    def tenants_with_unpublished(self) -> list[str]:
        with self._database.unscoped_transaction() as conn:
            return [row[0] for row in conn.execute("SELECT tenant_id FROM tenants_with_unpublished_events()")]

    def publish_pending(
        self, tenant_id: str, *, limit: int, publish: Callable[[Sequence[StoredEvent]], None]
    ) -> list[UUID]:
        with self._database.tenant_transaction(tenant_id) as conn, conn.cursor(row_factory=dict_row) as cur:
            cur.execute(_RELAY_LOCK, (tenant_id,))
            events = [
                _event(row)
                for row in cur.execute(
                    f"SELECT {_COLUMNS} FROM events WHERE tenant_id = %s AND published_at IS NULL"  # noqa: S608
                    " ORDER BY seq LIMIT %s",
                    (tenant_id, limit),
                )
            ]
            if not events:
                return []
            publish(events)
            head = cur.execute(
                "INSERT INTO event_heads AS h (tenant_id, position) VALUES (%s, %s)"
                " ON CONFLICT (tenant_id) DO UPDATE SET position = h.position + excluded.position RETURNING position",
                (tenant_id, len(events)),
            ).fetchone()
            assert head is not None
            positions = list(range(head["position"] - len(events) + 1, head["position"] + 1))
            ids = [event.event_id for event in events]
            cur.execute(
                "UPDATE events SET published_at = now(), position = p.position"
                " FROM unnest(%s::uuid[], %s::bigint[]) AS p(event_id, position)"
                " WHERE events.tenant_id = %s AND events.event_id = p.event_id AND events.published_at IS NULL",
                (ids, positions, tenant_id),
            )
            fan_out = {
                "tenant": tenant_id,
                "ids": ids,
                "types": [event.type.value for event in events],
                "collections": [event.collection_id for event in events],
                "keys": [event.ordering_key for event in events],
                # Deliveries go in publication order, as the event list does.
                "positions": positions,
                "bodies": [Jsonb(event_body(event)) for event in events],
            }
            made = cur.execute(_FAN_OUT, fan_out).fetchall()
        return [row["delivery_id"] for row in made]

    def list_events(
        self, tenant_id: str, collections: frozenset[str], *, after: int, limit: int, types: frozenset[str] | None
    ) -> tuple[list[StoredEvent], int]:
        type_filter = " AND type = ANY(%(types)s)" if types else ""
        # One snapshot for both reads: an event published between them is either in the page or after the head.
        with (
            self._database.snapshot(tenant_id),
            self._database.tenant_transaction(tenant_id) as conn,
            conn.cursor(row_factory=dict_row) as cur,
        ):
            head = self.latest_position(tenant_id, collections)
            rows = cur.execute(
                f"SELECT {_COLUMNS} FROM events WHERE tenant_id = %(tenant)s AND position > %(after)s"  # noqa: S608
                f" AND collection_id = ANY(%(collections)s){type_filter} ORDER BY position LIMIT %(limit)s",
                {
                    "tenant": tenant_id,
                    "after": after,
                    "collections": sorted(collections),
                    "types": sorted(types or ()),
                    "limit": limit,
                },
            ).fetchall()
        return [_event(row) for row in rows], head

    def latest_position(self, tenant_id: str, collections: frozenset[str]) -> int:
        with self._database.tenant_transaction(tenant_id) as conn:
            row = conn.execute(
                "SELECT max(position) FROM events WHERE tenant_id = %s AND position IS NOT NULL"
                " AND collection_id = ANY(%s)",
                (tenant_id, sorted(collections)),
            ).fetchone()
        return int(row[0]) if row and row[0] is not None else 0

    def published_through(self, tenant_id: str) -> int:
        with self._database.tenant_transaction(tenant_id) as conn:
            row = conn.execute("SELECT position FROM event_heads WHERE tenant_id = %s", (tenant_id,)).fetchone()
        return int(row[0]) if row else 0

    def purge_before(self, tenant_id: str, before: datetime) -> int:
        with self._database.tenant_transaction(tenant_id) as conn:
            return conn.execute(
                "DELETE FROM events WHERE tenant_id = %s AND occurred_at < %s AND published_at IS NOT NULL",
                (tenant_id, before),
            ).rowcount
