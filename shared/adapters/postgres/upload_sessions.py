"""UploadSessionStore over PostgreSQL (migrations/0028_upload_sessions.sql). Every statement runs in a tenant
transaction and filters by tenant; a session's collection is its file's, read at each use (a moved file's session
follows it)."""

from collections.abc import Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

from psycopg.rows import dict_row

from shared.adapters.postgres.database import Database
from shared.adapters.postgres.file_catalog import insert_version
from shared.domain.files import NewVersion
from shared.domain.upload_sessions import NewUploadSession, SessionState, UploadSession
from shared.ports import UploadSessionStore

_SESSION = (
    "SELECT s.tenant_id, s.upload_id, v.file_id, s.version_id, f.collection_id, v.storage_key, s.storage_upload_id,"
    " s.byte_size, s.part_size, s.part_count, s.checksums, s.state, s.created_at, s.expires_at, s.ended_at,"
    " v.state = 'pending' AS version_pending"
    " FROM upload_sessions s"
    " JOIN file_versions v ON v.tenant_id = s.tenant_id AND v.version_id = s.version_id"
    " JOIN files f ON f.tenant_id = v.tenant_id AND f.file_id = v.file_id"
)


def _session(row: dict[str, Any]) -> UploadSession:
    return UploadSession.model_validate(row)


class PostgresUploadSessions(UploadSessionStore):
    def __init__(self, database: Database) -> None:
        self._database = database

    def open_session(self, new: NewVersion, session: NewUploadSession, *, new_file: bool) -> None:
        with self._database.tenant_transaction(new.tenant_id) as conn:
            insert_version(conn, new, new_file=new_file)
            conn.execute(
                "INSERT INTO upload_sessions (tenant_id, upload_id, version_id, storage_upload_id, byte_size,"
                " part_size, part_count, checksums, created_by, expires_at)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                (
                    new.tenant_id,
                    session.upload_id,
                    new.version_id,
                    session.storage_upload_id,
                    session.byte_size,
                    session.part_size,
                    session.part_count,
                    session.checksums,
                    new.created_by,
                    session.expires_at,
                ),
            )

    def get_session(self, tenant_id: str, upload_id: UUID) -> UploadSession | None:
        with self._database.tenant_transaction(tenant_id) as conn, conn.cursor(row_factory=dict_row) as cur:
            row = cur.execute(
                f"{_SESSION} WHERE s.tenant_id = %s AND s.upload_id = %s", (tenant_id, upload_id)
            ).fetchone()
        return _session(row) if row else None

    def session_of_version(self, tenant_id: str, version_id: UUID) -> UploadSession | None:
        with self._database.tenant_transaction(tenant_id) as conn, conn.cursor(row_factory=dict_row) as cur:
            row = cur.execute(
                f"{_SESSION} WHERE s.tenant_id = %s AND s.version_id = %s", (tenant_id, version_id)
            ).fetchone()
        return _session(row) if row else None

    def move_session(
        self, tenant_id: str, upload_id: UUID, to: SessionState, *, expected: Sequence[SessionState], at: datetime
    ) -> bool:
        ending = to not in (SessionState.OPEN, SessionState.COMPLETING)
        with self._database.tenant_transaction(tenant_id) as conn:
            moved = conn.execute(
                "UPDATE upload_sessions SET state = %s, ended_at = %s"
                " WHERE tenant_id = %s AND upload_id = %s AND state = ANY(%s)",
                (to.value, at if ending else None, tenant_id, upload_id, [state.value for state in expected]),
            ).rowcount
        return moved == 1

    def open_sessions_of_file(self, tenant_id: str, file_id: UUID) -> list[UploadSession]:
        with self._database.tenant_transaction(tenant_id) as conn, conn.cursor(row_factory=dict_row) as cur:
            rows = cur.execute(
                f"{_SESSION} WHERE s.tenant_id = %s AND v.file_id = %s AND s.state = 'open' ORDER BY s.upload_id",
                (tenant_id, file_id),
            ).fetchall()
        return [_session(row) for row in rows]

    def open_sessions_expired(
        self, tenant_id: str, *, now: datetime, completing_before: datetime, limit: int
    ) -> list[UploadSession]:
        with self._database.tenant_transaction(tenant_id) as conn, conn.cursor(row_factory=dict_row) as cur:
            rows = cur.execute(
                f"{_SESSION} WHERE s.tenant_id = %s AND ((s.state = 'open' AND s.expires_at <= %s)"
                " OR (s.state = 'completing' AND s.expires_at <= %s))"
                " ORDER BY s.expires_at, s.upload_id LIMIT %s",
                (tenant_id, now, completing_before, limit),
            ).fetchall()
        return [_session(row) for row in rows]
