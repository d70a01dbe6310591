"""SituationCache over PostgreSQL: chunk_situations (migrations/0034), per tenant, file, model and chunk hash,
RLS-forced like every tenant table; a file's rows go when the file is deleted."""

from collections.abc import Mapping, Sequence
from uuid import UUID

from shared.adapters.postgres.database import Database
from shared.ports import SituationCache


class PostgresSituationCache(SituationCache):
    def __init__(self, database: Database) -> None:
        self._database = database

    def find(self, tenant_id: str, file_id: UUID, model: str, keys: Sequence[str]) -> dict[str, str]:
        if not keys:
            return {}
        with self._database.tenant_transaction(tenant_id) as conn:
            rows = conn.execute(
                "SELECT chunk_hash, situation FROM chunk_situations"
                " WHERE tenant_id = %s AND file_id = %s AND model = %s AND chunk_hash = ANY(%s)",
                (tenant_id, file_id, model, list(dict.fromkeys(keys))),
            ).fetchall()
        return {str(key): str(situation) for key, situation in rows}

    def keep(self, tenant_id: str, file_id: UUID, model: str, situations: Mapping[str, str]) -> None:
        if not situations:
            return
        keys = sorted(situations)  # one order for every writer: concurrent batches never deadlock
        with self._database.tenant_transaction(tenant_id) as conn:
            conn.execute(
                "INSERT INTO chunk_situations (tenant_id, file_id, model, chunk_hash, situation)"
                " SELECT %s, %s, %s, k, s FROM unnest(%s::text[], %s::text[]) AS r(k, s)"
                " ON CONFLICT (tenant_id, file_id, model, chunk_hash) DO NOTHING",
                (tenant_id, file_id, model, keys, [situations[key] for key in keys]),
            )
