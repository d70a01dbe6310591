"""ExportStore over PostgreSQL: tenant transaction and tenant filter on every statement."""

from datetime import datetime
from typing import Any
from uuid import UUID

from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from shared.adapters.postgres.database import Database
from shared.domain.exports import MAX_GENERATIONS, ExportKind, ExportRecord, NewExport, RenderedFile
from shared.ports import ExportStore

_COLUMNS = (
    "tenant_id, export_id, collection_id, kind, format, artifact_id, version, source_file_id, source_version_id,"
    " operation, operation_hash, state, file_id, failure_reason, unsupported_characters, page_count, byte_size,"
    " render_attempts, generation, failure_retryable, created_by, created_at, updated_at, rendered_at, sources"
)
# Which unique key names "the same export" for each kind.
_SAME_SOURCE = {
    ExportKind.ARTIFACT: "artifact_id = %(artifact_id)s AND version = %(version)s AND format = %(format)s",
    ExportKind.CONVERSION: "source_version_id = %(source_version_id)s AND format = %(format)s",
    ExportKind.PDF: "operation_hash = %(operation_hash)s",
}


_BEGIN_ATTEMPT = (
    "UPDATE exports SET render_attempts = render_attempts + 1, updated_at = now()"  # noqa: S608 - constant columns
    " WHERE tenant_id = %s AND export_id = %s AND state = 'pending' RETURNING " + _COLUMNS
)


_REOPEN = (
    "UPDATE exports SET state = 'pending', file_id = NULL, failure_reason = NULL, failure_retryable = false,"  # noqa: S608
    " unsupported_characters = '{}', page_count = NULL, byte_size = NULL, rendered_at = NULL, render_attempts = 0,"
    " generation = generation + 1, updated_at = now()"
    " WHERE tenant_id = %s AND export_id = %s AND generation = %s AND generation + 1 < %s"
    " AND (state = 'rendered' OR (state = 'failed' AND failure_retryable))"
    " RETURNING " + _COLUMNS
)


def _record(row: dict[str, Any]) -> ExportRecord:
    return ExportRecord.model_validate(row)


class PostgresExportStore(ExportStore):
    def __init__(self, database: Database) -> None:
        self._database = database

    def claim(self, new: NewExport) -> tuple[ExportRecord, bool]:
        params = new.model_dump()
        params["operation"] = Jsonb(new.operation) if new.operation is not None else None
        params["sources"] = Jsonb([source.model_dump(mode="json", exclude_none=True) for source in new.sources])
        with self._database.tenant_transaction(new.tenant_id) as conn, conn.cursor(row_factory=dict_row) as cur:
            # A second claim of the same source waits on the first's unique-index entry, then does nothing.
            made = cur.execute(
                "INSERT INTO exports (tenant_id, export_id, collection_id, kind, format, artifact_id, version,"  # noqa: S608
                " source_file_id, source_version_id, operation, operation_hash, created_by, sources)"
                " VALUES (%(tenant_id)s, %(export_id)s, %(collection_id)s, %(kind)s, %(format)s, %(artifact_id)s,"
                " %(version)s, %(source_file_id)s, %(source_version_id)s, %(operation)s, %(operation_hash)s,"
                f" %(created_by)s, %(sources)s) ON CONFLICT DO NOTHING RETURNING {_COLUMNS}",
                params,
            ).fetchone()
            if made is not None:
                return _record(made), True
            existing = cur.execute(
                f"SELECT {_COLUMNS} FROM exports WHERE tenant_id = %(tenant_id)s AND {_SAME_SOURCE[new.kind]}",  # noqa: S608
                params,
            ).fetchone()
        if existing is None:  # the export id itself collided: vanishingly unlikely, and not this source's
            raise RuntimeError("an export id collided with another export")
        return _record(existing), False

    def get(self, tenant_id: str, export_id: UUID) -> ExportRecord | None:
        with self._database.tenant_transaction(tenant_id) as conn, conn.cursor(row_factory=dict_row) as cur:
            row = cur.execute(
                f"SELECT {_COLUMNS} FROM exports WHERE tenant_id = %s AND export_id = %s",  # noqa: S608
                (tenant_id, export_id),
            ).fetchone()
        return _record(row) if row else None

    def begin_attempt(self, tenant_id: str, export_id: UUID) -> ExportRecord | None:
        with self._database.tenant_transaction(tenant_id) as conn, conn.cursor(row_factory=dict_row) as cur:
            row = cur.execute(_BEGIN_ATTEMPT, (tenant_id, export_id)).fetchone()
        return _record(row) if row else None

    def mark_rendered(
        self, tenant_id: str, export_id: UUID, *, generation: int, file_id: UUID, rendered: RenderedFile
    ) -> bool:
        with self._database.tenant_transaction(tenant_id) as conn:
            changed = conn.execute(
                "UPDATE exports SET state = 'rendered', file_id = %s, unsupported_characters = %s, page_count = %s,"
                " byte_size = %s, rendered_at = now(), updated_at = now()"
                " WHERE tenant_id = %s AND export_id = %s AND state = 'pending' AND generation = %s",
                (
                    file_id,
                    list(rendered.unsupported_characters),
                    rendered.page_count,
                    len(rendered.content),
                    tenant_id,
                    export_id,
                    generation,
                ),
            ).rowcount
        return changed == 1

    def mark_failed(
        self, tenant_id: str, export_id: UUID, *, generation: int, reason: str, retryable: bool = False
    ) -> bool:
        with self._database.tenant_transaction(tenant_id) as conn:
            changed = conn.execute(
                "UPDATE exports SET state = 'failed', failure_reason = %s, failure_retryable = %s, updated_at = now()"
                " WHERE tenant_id = %s AND export_id = %s AND state = 'pending' AND generation = %s",
                (reason[:2000], retryable, tenant_id, export_id, generation),
            ).rowcount
        return changed == 1

    def reopen(self, tenant_id: str, export_id: UUID, *, generation: int) -> ExportRecord | None:
        with self._database.tenant_transaction(tenant_id) as conn, conn.cursor(row_factory=dict_row) as cur:
            row = cur.execute(_REOPEN, (tenant_id, export_id, generation, MAX_GENERATIONS)).fetchone()
        return _record(row) if row else None

    def stalled(self, tenant_id: str, *, updated_before: datetime, limit: int = 100) -> list[ExportRecord]:
        with self._database.tenant_transaction(tenant_id) as conn, conn.cursor(row_factory=dict_row) as cur:
            rows = cur.execute(
                f"SELECT {_COLUMNS} FROM exports WHERE tenant_id = %s AND state = 'pending'"  # noqa: S608
                " AND updated_at < %s ORDER BY updated_at LIMIT %s",
                (tenant_id, updated_before, limit),
            ).fetchall()
        return [_record(row) for row in rows]
