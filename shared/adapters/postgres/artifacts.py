"""ArtifactStore over PostgreSQL: tenant transaction and tenant filter on every statement."""

from typing import Any
from uuid import UUID

from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from shared.adapters.postgres.database import Database
from shared.domain.artifacts import ArtifactRecord, ArtifactVersionRecord, NewArtifactVersion, VersionConflict
from shared.domain.errors import NotFound
from shared.domain.proposals import AppliedProposal
from shared.ports import ArtifactStore

_ARTIFACT_COLUMNS = "tenant_id, artifact_id, collection_id, name, latest_version, created_by, created_at, updated_at"
_VERSION_COLUMNS = (
    "artifact_id, version, content_key, content_hash, content_bytes, block_count, provenance, created_by, created_at"
)
_INSERT_VERSION = (
    "INSERT INTO artifact_versions (tenant_id, artifact_id, version, content_key, content_hash, content_bytes,"  # noqa: S608 - constant columns
    " block_count, provenance, created_by) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)"
    f" RETURNING {_VERSION_COLUMNS}"
)


def _version_params(tenant_id: str, artifact_id: UUID, number: int, new: NewArtifactVersion) -> tuple[Any, ...]:
    return (
        tenant_id,
        artifact_id,
        number,
        new.content_key,
        new.content_hash,
        new.content_bytes,
        new.block_count,
        Jsonb(new.provenance.model_dump(mode="json", exclude_none=True)),
        new.created_by,
    )


class PostgresArtifactStore(ArtifactStore):
    def __init__(self, database: Database) -> None:
        self._database = database

    def create(self, artifact: ArtifactRecord, first: NewArtifactVersion) -> ArtifactVersionRecord:
        with self._database.tenant_transaction(artifact.tenant_id) as conn, conn.cursor(row_factory=dict_row) as cur:
            # The sweeps walk the tenant registry: a tenant with only artifacts (and exports) is in it too.
            cur.execute("INSERT INTO tenants (tenant_id) VALUES (%s) ON CONFLICT DO NOTHING", (artifact.tenant_id,))
            cur.execute(
                "INSERT INTO artifacts (tenant_id, artifact_id, collection_id, name, latest_version, created_by)"
                " VALUES (%s, %s, %s, %s, 1, %s)",
                (artifact.tenant_id, artifact.artifact_id, artifact.collection_id, artifact.name, artifact.created_by),
            )
            row = cur.execute(_INSERT_VERSION, _version_params(artifact.tenant_id, artifact.artifact_id, 1, first))
            return ArtifactVersionRecord.model_validate(row.fetchone())

    def get(self, tenant_id: str, artifact_id: UUID) -> ArtifactRecord | None:
        with self._database.tenant_transaction(tenant_id) as conn, conn.cursor(row_factory=dict_row) as cur:
            row = cur.execute(
                f"SELECT {_ARTIFACT_COLUMNS} FROM artifacts WHERE tenant_id = %s AND artifact_id = %s",  # noqa: S608
                (tenant_id, artifact_id),
            ).fetchone()
        return ArtifactRecord.model_validate(row) if row else None

    def add_version(
        self,
        tenant_id: str,
        artifact_id: UUID,
        *,
        expected_latest: int,
        new: NewArtifactVersion,
        proposal: AppliedProposal | None = None,
    ) -> ArtifactVersionRecord:
        with self._database.tenant_transaction(tenant_id) as conn, conn.cursor(row_factory=dict_row) as cur:
            # The compare-and-set: of two writers holding the same `expected`, the second's UPDATE waits on the
            # first's row lock, then finds latest_version moved on and matches nothing.
            moved = cur.execute(
                "UPDATE artifacts SET latest_version = latest_version + 1, updated_at = now()"
                " WHERE tenant_id = %s AND artifact_id = %s AND latest_version = %s RETURNING latest_version",
                (tenant_id, artifact_id, expected_latest),
            ).fetchone()
            if moved is None:
                current = cur.execute(
                    "SELECT latest_version FROM artifacts WHERE tenant_id = %s AND artifact_id = %s",
                    (tenant_id, artifact_id),
                ).fetchone()
                if current is None:
                    raise NotFound("not found")
                raise VersionConflict(current["latest_version"], expected_latest)
            row = cur.execute(
                _INSERT_VERSION, _version_params(tenant_id, artifact_id, moved["latest_version"], new)
            ).fetchone()
            if proposal is not None:
                cur.execute(
                    "INSERT INTO artifact_proposals (tenant_id, proposal_id, artifact_id, base_version, result_version,"
                    " operations, created_by) VALUES (%s, %s, %s, %s, %s, %s, %s)",
                    (
                        tenant_id,
                        proposal.proposal_id,
                        artifact_id,
                        proposal.base_version,
                        moved["latest_version"],
                        Jsonb(list(proposal.operations)),
                        proposal.created_by,
                    ),
                )
            return ArtifactVersionRecord.model_validate(row)

    def version(self, tenant_id: str, artifact_id: UUID, version: int) -> ArtifactVersionRecord | None:
        with self._database.tenant_transaction(tenant_id) as conn, conn.cursor(row_factory=dict_row) as cur:
            row = cur.execute(
                f"SELECT {_VERSION_COLUMNS} FROM artifact_versions"  # noqa: S608 - a constant column list
                " WHERE tenant_id = %s AND artifact_id = %s AND version = %s",
                (tenant_id, artifact_id, version),
            ).fetchone()
        return ArtifactVersionRecord.model_validate(row) if row else None

    def refers_to(self, tenant_id: str, artifact_id: UUID, content_key: str) -> bool:
        with self._database.tenant_transaction(tenant_id) as conn:
            row = conn.execute(
                "SELECT EXISTS (SELECT 1 FROM artifact_versions"
                " WHERE tenant_id = %s AND artifact_id = %s AND content_key = %s)",
                (tenant_id, artifact_id, content_key),
            ).fetchone()
        return bool(row and row[0])

    def versions(
        self, tenant_id: str, artifact_id: UUID, *, after: int | None, limit: int
    ) -> list[ArtifactVersionRecord]:
        with self._database.tenant_transaction(tenant_id) as conn, conn.cursor(row_factory=dict_row) as cur:
            rows = cur.execute(
                f"SELECT {_VERSION_COLUMNS} FROM artifact_versions"  # noqa: S608 - a constant column list
                " WHERE tenant_id = %s AND artifact_id = %s AND version > %s ORDER BY version LIMIT %s",
                (tenant_id, artifact_id, after or 0, limit),
            ).fetchall()
        return [ArtifactVersionRecord.model_validate(row) for row in rows]

    def list(
        self, tenant_id: str, collections: frozenset[str], *, collection_id: str | None, limit: int, after: UUID | None
    ) -> tuple[list[ArtifactRecord], bool]:
        wanted = sorted(collections if collection_id is None else collections & {collection_id})
        if not wanted:
            return [], False
        query = (
            f"SELECT {_ARTIFACT_COLUMNS} FROM artifacts"  # noqa: S608 - a constant column list
            " WHERE tenant_id = %(tenant)s AND collection_id = ANY(%(wanted)s)"
        )
        params: dict[str, Any] = {"tenant": tenant_id, "wanted": wanted, "limit": limit + 1}
        if after is not None:
            query += (
                " AND (created_at, artifact_id) < (SELECT created_at, artifact_id FROM artifacts"
                " WHERE tenant_id = %(tenant)s AND artifact_id = %(after)s)"
            )
            params["after"] = after
        query += " ORDER BY created_at DESC, artifact_id DESC LIMIT %(limit)s"
        with self._database.tenant_transaction(tenant_id) as conn, conn.cursor(row_factory=dict_row) as cur:
            rows = cur.execute(query, params).fetchall()
        return [ArtifactRecord.model_validate(row) for row in rows[:limit]], len(rows) > limit
