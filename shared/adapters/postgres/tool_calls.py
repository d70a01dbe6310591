"""ToolCallAudit over PostgreSQL (migrations/0018): one row per tool call, appended, never rewritten (the
application role may only INSERT and SELECT), tenant-scoped and RLS-forced like every table."""

from datetime import datetime
from typing import Any
from uuid import UUID

from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from shared.adapters.postgres.database import Database
from shared.domain.audit import ToolCall, ToolCallRecord
from shared.ports import ToolCallAudit

_COLUMNS = "call_id, tenant_id, subject, tool, surface, argument_ids, collection_ids, outcome, duration_ms, called_at"


class PostgresToolCallAudit(ToolCallAudit):
    def __init__(self, database: Database) -> None:
        self._database = database

    def record(self, call: ToolCall) -> None:
        with self._database.tenant_transaction(call.tenant_id) as conn:
            conn.execute(
                "INSERT INTO tool_calls (tenant_id, subject, tool, surface, argument_ids, collection_ids, outcome,"
                " duration_ms, called_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
                (
                    call.tenant_id,
                    call.subject,
                    call.tool,
                    call.surface,
                    Jsonb(call.argument_ids),
                    list(call.collection_ids),
                    call.outcome,
                    call.duration_ms,
                    call.called_at,
                ),
            )

    def recent(
        self,
        tenant_id: str,
        *,
        visible_collections: frozenset[str],
        limit: int,
        before: tuple[datetime, UUID] | None,
    ) -> tuple[list[ToolCallRecord], bool]:
        # `<@`: every collection of the row is among the visible ones; an empty array is contained in any.
        query = (
            f"SELECT {_COLUMNS} FROM tool_calls"  # noqa: S608 - a constant column list
            " WHERE tenant_id = %(tenant)s AND collection_ids <@ %(visible)s::text[]"
        )
        params: dict[str, Any] = {"tenant": tenant_id, "visible": sorted(visible_collections), "limit": limit + 1}
        if before is not None:
            query += " AND (called_at, call_id) < (%(before_at)s, %(before_id)s)"
            params.update(before_at=before[0], before_id=before[1])
        query += " ORDER BY called_at DESC, call_id DESC LIMIT %(limit)s"
        with self._database.tenant_transaction(tenant_id) as conn, conn.cursor(row_factory=dict_row) as cursor:
            rows = cursor.execute(query, params).fetchall()
        return [ToolCallRecord.model_validate(row) for row in rows[:limit]], len(rows) > limit
