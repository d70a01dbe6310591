"""UsageLedger over PostgreSQL: one row per (version, step, attempt), appended, never rewritten (the
application role may only INSERT and SELECT), tenant-scoped and RLS-forced like every table."""

from datetime import datetime
from uuid import UUID

from psycopg.rows import dict_row

from shared.adapters.postgres.database import Database
from shared.domain.limits import Spend
from shared.domain.usage import Usage, UsageTotal
from shared.ports import UsageLedger


class PostgresUsageLedger(UsageLedger):
    def __init__(self, database: Database) -> None:
        self._database = database

    def record(
        self,
        tenant_id: str,
        file_id: UUID,
        version_id: UUID,
        collection_id: str,
        *,
        step: str,
        attempt: int,
        usage: Usage,
    ) -> bool:
        with self._database.tenant_transaction(tenant_id) as conn:
            added = conn.execute(
                "INSERT INTO usage_records (tenant_id, version_id, step, attempt, file_id, collection_id, provider,"
                " operation, model, priced, pages, images, input_tokens, output_tokens)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
                " ON CONFLICT (tenant_id, version_id, step, attempt) DO NOTHING",
                (
                    tenant_id,
                    version_id,
                    step,
                    attempt,
                    file_id,
                    collection_id,
                    usage.provider,
                    usage.operation,
                    usage.model,
                    usage.priced,
                    usage.pages,
                    usage.images,
                    usage.input_tokens,
                    usage.output_tokens,
                ),
            ).rowcount
        return added == 1

    # A step done in parts (`embed#00003`: one batch of the embed Map) is one line per step.
    def totals(
        self, tenant_id: str, collections: frozenset[str], *, since: datetime, until: datetime
    ) -> list[UsageTotal]:
        if not collections:
            return []
        with self._database.tenant_transaction(tenant_id) as conn, conn.cursor(row_factory=dict_row) as cursor:
            rows = cursor.execute(
                "SELECT split_part(step, '#', 1) AS step, provider, operation, model, priced, count(*) AS calls,"
                " sum(pages) AS pages,"
                " sum(images) AS images, sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens,"
                " min(recorded_at) AS first_recorded_at, max(recorded_at) AS last_recorded_at"
                " FROM usage_records WHERE tenant_id = %s AND collection_id = ANY(%s)"
                " AND recorded_at >= %s AND recorded_at < %s"
                " GROUP BY 1, provider, operation, model, priced ORDER BY priced DESC, 1, provider, operation",
                (tenant_id, sorted(collections), since, until),
            ).fetchall()
        return [UsageTotal.model_validate(row) for row in rows]

    # Only OCR records pages and only vision images; the embedding steps are `embed#<batch>` and `reembed:<model>`.
    def spent_since(self, tenant_id: str, since: datetime) -> Spend:
        with self._database.tenant_transaction(tenant_id) as conn, conn.cursor(row_factory=dict_row) as cursor:
            row = cursor.execute(
                "SELECT coalesce(sum(pages), 0) AS ocr_pages, coalesce(sum(images), 0) AS vision_images,"
                " coalesce(sum(input_tokens) FILTER (WHERE step LIKE 'embed#%%' OR step LIKE 'reembed:%%'), 0)"
                " AS embedding_tokens FROM usage_records WHERE tenant_id = %s AND recorded_at >= %s",
                (tenant_id, since),
            ).fetchone()
        return Spend.model_validate(row)

    def ocr_runs_since(self, tenant_id: str, file_id: UUID, since: datetime) -> list[datetime]:
        with self._database.tenant_transaction(tenant_id) as conn:
            rows = conn.execute(
                "SELECT recorded_at FROM usage_records WHERE tenant_id = %s AND file_id = %s AND step = 'ocr'"
                " AND recorded_at >= %s ORDER BY recorded_at",
                (tenant_id, file_id, since),
            ).fetchall()
        return [row[0] for row in rows]
