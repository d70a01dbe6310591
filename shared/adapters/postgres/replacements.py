"""ReplacementStore over PostgreSQL: tenant transaction and tenant filter on every statement."""

from typing import Any
from uuid import UUID

from psycopg.rows import dict_row

from shared.adapters.postgres.database import Database
from shared.domain.proposals import NewReplacement, ReplacementRecord, ReplacementState
from shared.ports import ReplacementStore

_COLUMNS = (
    "tenant_id, replacement_id, file_id, collection_id, base_version_id, filename, media_type, staged_key,"
    " content_hash, byte_size, state, new_version_id, created_by, decided_by, created_at, decided_at, expires_at"
)
_SELECT = "SELECT " + _COLUMNS + " FROM file_replacements WHERE tenant_id = %s AND replacement_id = %s"  # noqa: S608
_DECIDE = (
    "UPDATE file_replacements SET state = %(state)s, decided_by = %(decided_by)s, decided_at = now(),"  # noqa: S608
    " new_version_id = %(new_version_id)s"
    " WHERE tenant_id = %(tenant)s AND replacement_id = %(replacement)s AND state = 'pending' RETURNING " + _COLUMNS
)


class PostgresReplacementStore(ReplacementStore):
    def __init__(self, database: Database) -> None:
        self._database = database

    def create(self, new: NewReplacement) -> ReplacementRecord:
        with self._database.tenant_transaction(new.tenant_id) as conn, conn.cursor(row_factory=dict_row) as cur:
            row = cur.execute(
                "INSERT INTO file_replacements (tenant_id, replacement_id, file_id, collection_id, base_version_id,"  # noqa: S608
                " filename, media_type, staged_key, content_hash, byte_size, created_by, expires_at)"
                " VALUES (%(tenant_id)s, %(replacement_id)s, %(file_id)s, %(collection_id)s, %(base_version_id)s,"
                " %(filename)s, %(media_type)s, %(staged_key)s, %(content_hash)s, %(byte_size)s, %(created_by)s,"
                " %(expires_at)s) RETURNING " + _COLUMNS,
                new.model_dump(),
            ).fetchone()
        return ReplacementRecord.model_validate(row)

    def get(self, tenant_id: str, replacement_id: UUID) -> ReplacementRecord | None:
        with self._database.tenant_transaction(tenant_id) as conn, conn.cursor(row_factory=dict_row) as cur:
            row = cur.execute(_SELECT, (tenant_id, replacement_id)).fetchone()
        return ReplacementRecord.model_validate(row) if row else None

    def decide(
        self, tenant_id: str, replacement_id: UUID, *, state: ReplacementState, decided_by: str | None
    ) -> ReplacementRecord | None:
        found = self.get(tenant_id, replacement_id)
        if found is None:
            return None
        params: dict[str, Any] = {
            "state": state.value,
            "decided_by": decided_by if state in (ReplacementState.APPROVED, ReplacementState.REJECTED) else None,
            "new_version_id": found.planned_version_id if state is ReplacementState.APPROVED else None,
            "tenant": tenant_id,
            "replacement": replacement_id,
        }
        with self._database.tenant_transaction(tenant_id) as conn, conn.cursor(row_factory=dict_row) as cur:
            row = cur.execute(_DECIDE, params).fetchone()
        return ReplacementRecord.model_validate(row) if row else None
