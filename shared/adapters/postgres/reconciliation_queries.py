"""ReconciliationQueries over PostgreSQL: the tenants, and each tenant's versions waiting in a state, page by page."""

from collections.abc import Iterable
from datetime import datetime
from typing import Any
from uuid import UUID

from psycopg.rows import dict_row

from shared.adapters.postgres.file_rows import VERSION_COLUMNS, FileRows, version_of
from shared.domain.files import MAX_STALLED_RETRIES, MAX_TIMEOUT_RETRIES, FileVersionRecord, VersionState
from shared.ports import ReconciliationQueries


class PostgresReconciliationQueries(FileRows, ReconciliationQueries):
    def tenant_ids(self) -> list[str]:
        with self._database.unscoped_transaction() as conn:
            # The registry shows a role only its current tenant (migrations/0014); the sweeps list every id
            # through the one function that may.
            return [row[0] for row in conn.execute("SELECT tenant_id FROM tenant_ids_for_sweeps() ORDER BY tenant_id")]

    def versions_in_states(
        self,
        tenant_id: str,
        states: Iterable[VersionState],
        *,
        updated_before: datetime,
        after: tuple[datetime, UUID] | None = None,
        limit: int = 500,
    ) -> list[tuple[UUID, FileVersionRecord]]:
        """(file id, version) pairs waiting in one of `states` since before `updated_before`, oldest first,
        after the keyset `after` (updated_at, version_id): callers walk every page, so old rows that stay
        in a state can never hide newer ones."""
        return self._version_page(
            tenant_id,
            "state = ANY(%(states)s) AND updated_at < %(before)s",
            {"states": [state.value for state in states], "before": updated_before},
            after=after,
            limit=limit,
        )

    def versions_awaiting_processing(
        self, tenant_id: str, *, cutoff: datetime, after: tuple[datetime, UUID] | None = None, limit: int = 500
    ) -> list[tuple[UUID, FileVersionRecord]]:
        """Stored versions whose processing was never asked for, or not finished since `cutoff` (and
        timed-out extractions with attempts left)."""
        return self._version_page(
            tenant_id,
            "state = 'stored' AND updated_at < %(cutoff)s"
            " AND (processing_requested_at IS NULL OR processing_requested_at < %(cutoff)s)"
            " AND (processing_state = 'not_started'"
            "      OR (processing_state IN ('queued', 'extracting', 'recognizing', 'extracted', 'indexing',"
            "                               'interrupted')"
            "          AND processing_retries < %(stalled)s)"
            "      OR (processing_state = 'failed' AND failure_reason = 'timed-out'"
            "          AND processing_retries < %(timeouts)s))",
            {"cutoff": cutoff, "timeouts": MAX_TIMEOUT_RETRIES, "stalled": MAX_STALLED_RETRIES},
            after=after,
            limit=limit,
        )

    def versions_given_up(
        self, tenant_id: str, *, cutoff: datetime, after: tuple[datetime, UUID] | None = None, limit: int = 500
    ) -> list[tuple[UUID, FileVersionRecord]]:
        """Stored versions still unprocessed past `cutoff` that the sweep will not try again (attempts spent):
        an operator's problem, counted by reconciliation and alarmed on."""
        return self._version_page(
            tenant_id,
            "state = 'stored' AND updated_at < %(cutoff)s"
            " AND processing_state IN ('queued', 'extracting', 'recognizing', 'extracted', 'indexing', 'interrupted')"
            " AND processing_retries >= %(stalled)s",
            {"cutoff": cutoff, "stalled": MAX_STALLED_RETRIES},
            after=after,
            limit=limit,
        )

    def _version_page(
        self,
        tenant_id: str,
        condition: str,
        params: dict[str, Any],
        *,
        after: tuple[datetime, UUID] | None,
        limit: int,
    ) -> list[tuple[UUID, FileVersionRecord]]:
        """One keyset page (updated_at, version_id) of a tenant's versions matching `condition`."""
        query = (
            f"SELECT {VERSION_COLUMNS} FROM file_versions"  # noqa: S608 - constant columns and conditions
            f" WHERE tenant_id = %(tenant)s AND {condition}"
        )
        params = {**params, "tenant": tenant_id, "limit": limit}
        if after is not None:
            query += " AND (updated_at, version_id) > (%(after_at)s, %(after_id)s)"
            params.update(after_at=after[0], after_id=after[1])
        query += " ORDER BY updated_at, version_id LIMIT %(limit)s"
        with (
            self._database.tenant_transaction(tenant_id) as conn,
            conn.cursor(row_factory=dict_row) as cursor,
        ):
            rows = cursor.execute(query, params).fetchall()
        return [(row["file_id"], version_of(row)) for row in rows]
