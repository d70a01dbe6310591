"""UsageLedger over PostgreSQL: one row per (version, step, attempt) in usage_records, and one per (request's
model call, collection) in request_usage; appended, never rewritten (the application role may only INSERT and
SELECT), tenant-scoped and RLS-forced like every table."""

from datetime import datetime
from uuid import UUID, uuid4

from psycopg.rows import dict_row

from shared.adapters.postgres.database import Database
from shared.domain.limits import Spend
from shared.domain.usage import RequestKind, Usage, UsageTotal, collection_shares
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
                " operation, model, priced, pages, images, input_tokens, output_tokens, seconds)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
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
                    usage.seconds,
                ),
            ).rowcount
        return added == 1

    def record_request(
        self,
        tenant_id: str,
        *,
        kind: RequestKind,
        collections: frozenset[str],
        subject: str,
        usage: Usage,
        usage_id: UUID | None = None,
    ) -> None:
        shares = collection_shares(collections, usage)
        call = usage_id or uuid4()
        with self._database.tenant_transaction(tenant_id) as conn, conn.cursor() as cursor:
            # One statement for every share, in one transaction: a call is booked whole or not at all.
            cursor.executemany(
                "INSERT INTO request_usage (tenant_id, usage_id, collection_id, kind, subject, provider, operation,"
                " model, priced, input_tokens, output_tokens) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
                " ON CONFLICT (tenant_id, usage_id, collection_id) DO NOTHING",
                [
                    (
                        tenant_id,
                        call,
                        share.collection_id,
                        kind.value,
                        subject,
                        usage.provider,
                        usage.operation,
                        usage.model,
                        usage.priced,
                        share.input_tokens,
                        share.output_tokens,
                    )
                    for share in shares
                ],
            )

    # A step done in parts (`embed#00003`: one batch of the embed Map) is one line per step. A request shared
    # over several readable collections is one call (its shares have one usage_id).
    def totals(
        self, tenant_id: str, collections: frozenset[str], *, since: datetime, until: datetime
    ) -> list[UsageTotal]:
        if not collections:
            return []
        with self._database.tenant_transaction(tenant_id) as conn, conn.cursor(row_factory=dict_row) as cursor:
            rows = cursor.execute(
                "SELECT step, provider, operation, model, priced, sum(calls) AS calls, sum(pages) AS pages,"
                " sum(images) AS images, sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens,"
                " sum(seconds) AS seconds, min(first_recorded_at) AS first_recorded_at,"
                " max(last_recorded_at) AS last_recorded_at FROM ("
                "  SELECT split_part(step, '#', 1) AS step, provider, operation, model, priced, count(*) AS calls,"
                "  sum(pages) AS pages, sum(images) AS images, sum(input_tokens) AS input_tokens,"
                "  sum(output_tokens) AS output_tokens, sum(seconds) AS seconds, min(recorded_at) AS first_recorded_at,"
                "  max(recorded_at) AS last_recorded_at"
                "  FROM usage_records WHERE tenant_id = %(tenant)s AND collection_id = ANY(%(collections)s)"
                "  AND recorded_at >= %(since)s AND recorded_at < %(until)s"
                "  GROUP BY 1, provider, operation, model, priced"
                "  UNION ALL"
                "  SELECT kind, provider, operation, model, priced, count(DISTINCT usage_id), 0, 0,"
                "  sum(input_tokens), sum(output_tokens), 0, min(recorded_at), max(recorded_at)"
                "  FROM request_usage WHERE tenant_id = %(tenant)s AND collection_id = ANY(%(collections)s)"
                "  AND recorded_at >= %(since)s AND recorded_at < %(until)s"
                "  GROUP BY kind, provider, operation, model, priced"
                " ) AS lines GROUP BY step, provider, operation, model, priced"
                " ORDER BY priced DESC, step, provider, operation",
                {"tenant": tenant_id, "collections": sorted(collections), "since": since, "until": until},
            ).fetchall()
        return [UsageTotal.model_validate(row) for row in rows]

    # Only OCR records pages and only vision images; the embedding steps are `embed#<batch>` and `reembed:<model>`;
    # generation is every token of the request usage, in and out, and of the chunks' situating sentences
    # (`context#<batch>`); a rerank query is one call of kind rerank.
    def spent_since(self, tenant_id: str, since: datetime) -> Spend:
        with self._database.tenant_transaction(tenant_id) as conn, conn.cursor(row_factory=dict_row) as cursor:
            row = cursor.execute(
                "SELECT coalesce(sum(pages), 0) AS ocr_pages, coalesce(sum(images), 0) AS vision_images,"
                " coalesce(sum(seconds), 0) AS transcription_seconds,"
                " coalesce(sum(input_tokens) FILTER (WHERE step LIKE 'embed#%%' OR step LIKE 'reembed:%%'), 0)"
                " AS embedding_tokens,"
                " coalesce(sum(input_tokens + output_tokens) FILTER (WHERE step LIKE 'context#%%'), 0)"
                " + (SELECT coalesce(sum(input_tokens + output_tokens), 0) FROM request_usage"
                "  WHERE tenant_id = %(tenant)s AND recorded_at >= %(since)s) AS generation_tokens,"
                " (SELECT count(DISTINCT usage_id) FROM request_usage WHERE tenant_id = %(tenant)s"
                "  AND kind = 'rerank' AND recorded_at >= %(since)s) AS rerank_queries"
                " FROM usage_records WHERE tenant_id = %(tenant)s AND recorded_at >= %(since)s",
                {"tenant": tenant_id, "since": since},
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
