"""The title lane over document_titles (migrations/0019): the documents a question names by a complete title,
and the chunks of those documents that become direct subjects.

A lookup is btree equality on (tenant, title_key) for the question's n-grams, never a scan of the titles nor
a pattern match. Each title found is checked against its version's first chunk (one index probe): the
caller's collections and the search filters apply as in both lanes, before anything is counted or chosen,
so a title the caller cannot read is never matched and never shadows one it can.
"""

from collections.abc import Iterable, Sequence
from typing import Any

import psycopg
from pgvector import Vector

from shared.adapters.postgres.database import Database
from shared.adapters.postgres.query_constraints import constraint_sql
from shared.adapters.postgres.search_filters import filter_sql
from shared.domain.query_constraints import NO_CONSTRAINTS, QueryConstraints
from shared.domain.search import SearchFilters
from shared.domain.titles import DIRECT_CHUNK_WINDOW, DirectChunk, NamedTitle, TitleSource
from shared.ports import TitleIndex

_NAMED = """
SELECT DISTINCT t.title_key, t.file_id::text, t.version_id::text
FROM document_titles AS t
CROSS JOIN LATERAL (
  SELECT c.tenant_id, c.file_id, c.version_id, c.collection_id, c.subjects, c.media_type, c.filename,
         c.uploaded_at
  FROM knowledge_chunks AS c
  WHERE c.tenant_id = %(tenant)s AND c.version_id = t.version_id ORDER BY c.ordinal LIMIT 1
) AS c
WHERE t.tenant_id = %(tenant)s AND t.title_key = ANY(%(keys)s) AND c.subjects && %(collections)s {filters}
ORDER BY t.title_key, 3
"""

# The named versions' chunks the lanes found; and for a named version with none of them, its best chunks among
# its first few hundred (by ordinal, through the (tenant, version, ordinal) key) that hold the query's phrases and
# none of its exclusions: nearest to the question where the version is embedded with the query's model, else its
# opening chunks.
_DIRECT = """
WITH found AS MATERIALIZED (
  SELECT c.chunk_id, c.version_id FROM knowledge_chunks AS c
  WHERE c.tenant_id = %(tenant)s AND c.chunk_id = ANY(%(candidates)s) AND c.version_id = ANY(%(versions)s)
    AND c.subjects && %(collections)s
)
SELECT f.chunk_id, f.version_id::text, true AS found, NULL::float8 AS distance, NULL::int AS ordinal FROM found AS f
UNION ALL
SELECT b.chunk_id, n.version_id::text, false, b.distance, b.ordinal
FROM unnest(%(versions)s::uuid[]) AS n(version_id)
CROSS JOIN LATERAL (
  SELECT w.chunk_id, w.ordinal, {distance} AS distance FROM (
    SELECT c.chunk_id, c.ordinal, c.embedding, c.embedding_model FROM knowledge_chunks AS c
    WHERE c.tenant_id = %(tenant)s AND c.version_id = n.version_id AND c.subjects && %(collections)s {constraint}
    ORDER BY c.ordinal LIMIT %(window)s
  ) AS w
  ORDER BY 3 NULLS LAST, w.ordinal LIMIT %(per_document)s
) AS b
WHERE NOT EXISTS (SELECT 1 FROM found AS f WHERE f.version_id = n.version_id)
"""
_DISTANCE = "CASE WHEN w.embedding_model = %(model)s THEN w.embedding <=> %(embedding)s::vector END"


def write_titles(
    conn: psycopg.Connection[Any], tenant_id: str, version_id: str, file_id: str, titles: dict[str, TitleSource]
) -> None:
    """The version's titles, in the transaction that writes its chunks (their deletion removes them: 0019)."""
    if not titles:
        return
    conn.execute(
        "INSERT INTO document_titles (tenant_id, version_id, title_key, file_id, source)"
        " SELECT %s, %s, t.key, %s, t.source FROM unnest(%s::text[], %s::text[]) AS t(key, source)"
        " ON CONFLICT DO NOTHING",
        (tenant_id, version_id, file_id, list(titles), [source.value for source in titles.values()]),
    )


class PostgresTitleIndex(TitleIndex):
    def __init__(self, database: Database) -> None:
        self._database = database

    def named(
        self, tenant_id: str, collections: frozenset[str], keys: Sequence[str], *, filters: SearchFilters
    ) -> list[NamedTitle]:
        if not collections or not keys:
            return []
        params: dict[str, Any] = {"tenant": tenant_id, "collections": sorted(collections), "keys": list(keys)}
        statement = _NAMED.format(filters=filter_sql(filters, params, chunk="c."))
        with self._database.tenant_transaction(tenant_id) as conn:
            rows = conn.execute(statement, params).fetchall()
        return [NamedTitle(key=key, file_id=file_id, version_id=version_id) for key, file_id, version_id in rows]

    def direct_chunks(
        self,
        tenant_id: str,
        collections: frozenset[str],
        version_ids: Sequence[str],
        *,
        candidates: Iterable[str],
        embedding: Sequence[float] | None,
        embedding_model: str,
        per_document: int,
        constraints: QueryConstraints = NO_CONSTRAINTS,
    ) -> list[DirectChunk]:
        if not collections or not version_ids:
            return []
        params: dict[str, Any] = {
            "tenant": tenant_id,
            "collections": sorted(collections),
            "versions": list(version_ids),
            "candidates": list(candidates),
            "window": DIRECT_CHUNK_WINDOW,
            "per_document": per_document,
        }
        if embedding is not None:
            params |= {"embedding": Vector(list(embedding)), "model": embedding_model}
        statement = _DIRECT.format(
            distance=_DISTANCE if embedding is not None else "NULL::float8",
            constraint=constraint_sql(constraints, params, chunk="c."),
        )
        with self._database.tenant_transaction(tenant_id) as conn:
            rows = conn.execute(statement, params).fetchall()
        position = {version_id: index for index, version_id in enumerate(version_ids)}
        found = [row for row in rows if row[2]]
        # The added chunks in the named documents' order, each document's best first.
        added = sorted(
            (row for row in rows if not row[2]),
            key=lambda row: (position.get(row[1], len(position)), row[3] is None, row[3] or 0.0, row[4]),
        )
        return [
            DirectChunk(chunk_id=chunk_id, version_id=version_id, found=is_found)
            for chunk_id, version_id, is_found, _, _ in found + added
        ]
