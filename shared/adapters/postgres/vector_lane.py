"""The vector lane: the k nearest chunks by cosine distance (pgvector HNSW), scanned under the caller's tenant,
collections, filters and the query's phrases and exclusions, before ranking."""

from collections.abc import Sequence
from typing import Any

import psycopg
from pgvector import Vector

from shared.adapters.postgres.database import Database
from shared.adapters.postgres.metadata_sql import filter_condition
from shared.adapters.postgres.query_constraints import constraint_sql, phrase_estimate_query, phrase_exact_query
from shared.adapters.postgres.search_filters import chunk_columns, filter_sql, version_filter_sql
from shared.domain.knowledge import RankedChunk
from shared.domain.query_constraints import NO_CONSTRAINTS, QueryConstraints
from shared.domain.search import SearchFilters
from shared.ports import VectorIndex

# How many HNSW candidates a filtered scan may visit before it gives up (pgvector's iterative scan):
# enough for a tenant holding a small share of a large table to still get its k nearest.
_MAX_SCAN_TUPLES = 40_000
# The HNSW search breadth, pgvector's maximum. Measured by `make bench` at 100,000 chunks over 100
# tenants: with ef_search 100, recall@10 for the largest tenants was 0.92 (a filtered scan can settle
# in the wrong region of the graph); at 1000 it is 0.98, at a p95 still near 20 ms.
_EF_SEARCH = 1000


_NEAREST = """
WITH nearest AS MATERIALIZED (
  SELECT c.chunk_id, c.embedding <=> %(embedding)s::vector AS distance FROM knowledge_chunks AS c
  WHERE c.tenant_id = %(tenant)s AND c.subjects && %(collections)s AND c.embedding_model = %(model)s {filters}
  ORDER BY c.embedding <=> %(embedding)s::vector
  LIMIT %(limit)s
)
SELECT chunk_id, distance FROM nearest ORDER BY distance, chunk_id
"""

# A metadata filter that keeps few chunks is answered exactly: every kept chunk's distance, found from the files
# the filter keeps, with no graph to fall short in. Up to EXACT_SCAN_ROWS chunks; past that the graph's filtered,
# iterative scan finds the nearest among many (measured in `make bench`: filtered search).
EXACT_SCAN_ROWS = 4_000
# Which path: the kept chunks counted from the versions' own counts (files and versions only, no chunk row read),
# for the indexed versions whose chunks are in the index (a superseded version's count no longer is). Past the
# bound the exact scan is not tried at all (measured: the attempt alone cost 16 ms at 4,001 rows).
_KEPT_ESTIMATE = """
SELECT coalesce(sum(v.embedded_chunk_count), 0) FROM files AS f
JOIN file_versions AS v ON v.tenant_id = f.tenant_id AND v.file_id = f.file_id
WHERE f.tenant_id = %(tenant)s AND f.collection_id = ANY(%(collections)s) AND v.processing_state = 'indexed'
  AND v.embedding_model = %(model)s
  AND EXISTS (SELECT 1 FROM knowledge_chunks AS c WHERE c.tenant_id = v.tenant_id AND c.version_id = v.version_id)
  {filters}
"""
_EXACT = """
WITH kept AS MATERIALIZED (
  SELECT c.chunk_id, c.embedding FROM files AS f
  JOIN knowledge_chunks AS c ON c.tenant_id = f.tenant_id AND c.file_id = f.file_id
  WHERE f.tenant_id = %(tenant)s AND c.tenant_id = %(tenant)s AND c.subjects && %(collections)s
    AND c.embedding_model = %(model)s AND c.embedding IS NOT NULL {filters} AND {where}
  LIMIT %(exact_rows)s
)
SELECT chunk_id, embedding <=> %(embedding)s::vector AS distance, (SELECT count(*) FROM kept) AS kept FROM kept
ORDER BY distance, chunk_id
LIMIT %(limit)s
"""


def vector_scan_settings() -> dict[str, str]:
    """The settings `nearest` scans under, local to its transaction (the search benchmark EXPLAINs and
    varies them)."""
    # Iterative scan: when the tenant and filters discard most HNSW neighbours, keep scanning instead of
    # returning fewer than `limit` (a small tenant in a large table still gets k).
    return {
        "hnsw.iterative_scan": "relaxed_order",
        "hnsw.ef_search": str(_EF_SEARCH),
        "hnsw.max_scan_tuples": str(_MAX_SCAN_TUPLES),
    }


def _lane_params(
    tenant_id: str, collections: frozenset[str], embedding: Sequence[float], *, embedding_model: str, limit: int
) -> dict[str, Any]:
    return {
        "tenant": tenant_id,
        "collections": sorted(collections),
        "embedding": Vector(list(embedding)),
        "model": embedding_model,
        "limit": limit,
    }


def nearest_query(
    tenant_id: str,
    collections: frozenset[str],
    embedding: Sequence[float],
    *,
    embedding_model: str,
    limit: int,
    filters: SearchFilters,
    constraints: QueryConstraints = NO_CONSTRAINTS,
) -> tuple[str, dict[str, Any]]:
    """The statement and parameters `nearest` runs (the search benchmark EXPLAINs them)."""
    params = _lane_params(tenant_id, collections, embedding, embedding_model=embedding_model, limit=limit)
    conditions = filter_sql(filters, params, chunk="c.") + constraint_sql(constraints, params, chunk="c.")
    return _NEAREST.format(filters=conditions), params


def exact_query(
    tenant_id: str,
    collections: frozenset[str],
    embedding: Sequence[float],
    *,
    embedding_model: str,
    limit: int,
    filters: SearchFilters,
    constraints: QueryConstraints = NO_CONSTRAINTS,
) -> tuple[str, dict[str, Any]]:
    """The exact scan of the chunks a metadata filter keeps (`filters.where` set), bounded by EXACT_SCAN_ROWS."""
    assert filters.where is not None
    params = _lane_params(tenant_id, collections, embedding, embedding_model=embedding_model, limit=limit)
    params["exact_rows"] = EXACT_SCAN_ROWS + 1
    others = filter_sql(filters.model_copy(update={"where": None}), params, chunk="c.")
    others += constraint_sql(constraints, params, chunk="c.")
    where = filter_condition(filters.where.tree, chunk_columns("c."), params)
    return _EXACT.format(filters=others, where=where), params


class PostgresVectorIndex(VectorIndex):
    def __init__(self, database: Database) -> None:
        self._database = database

    def nearest(
        self,
        tenant_id: str,
        collections: frozenset[str],
        embedding: Sequence[float],
        *,
        embedding_model: str,
        limit: int,
        filters: SearchFilters,
        constraints: QueryConstraints = NO_CONSTRAINTS,
    ) -> list[RankedChunk]:
        if not collections:
            return []
        settings = vector_scan_settings()
        with self._database.tenant_transaction(tenant_id) as conn:
            rows: list[tuple[str, float]] | None = None
            if constraints.phrases and self._few_hold(conn, tenant_id, collections, constraints):
                # A phrase few chunks hold: those chunks, found from the keyword lane's postings, every one's
                # distance computed (a graph search would visit many neighbours the phrase drops before it stops).
                params = _lane_params(tenant_id, collections, embedding, embedding_model=embedding_model, limit=limit)
                conditions = filter_sql(filters, params, chunk="c.") + constraint_sql(constraints, params, chunk="c.")
                rows = conn.execute(phrase_exact_query(constraints, params, conditions), params).fetchall()
            if rows is None and filters.where is not None:
                rows = self._exact_kept(
                    conn,
                    tenant_id,
                    collections,
                    embedding,
                    embedding_model=embedding_model,
                    limit=limit,
                    filters=filters,
                    constraints=constraints,
                )
            if rows is None:
                query, params = nearest_query(
                    tenant_id,
                    collections,
                    embedding,
                    embedding_model=embedding_model,
                    limit=limit,
                    filters=filters,
                    constraints=constraints,
                )
                # All in one round trip.
                conn.execute(
                    "SELECT " + ", ".join("set_config(%s, %s, true)" for _ in settings),
                    [value for setting in settings.items() for value in setting],
                )
                rows = conn.execute(query, params).fetchall()
        return [
            RankedChunk(chunk_id=chunk_id, rank=rank, score=1 - float(distance) / 2)
            for rank, (chunk_id, distance) in enumerate(rows, start=1)
        ]

    def _exact_kept(
        self,
        conn: psycopg.Connection[Any],
        tenant_id: str,
        collections: frozenset[str],
        embedding: Sequence[float],
        *,
        embedding_model: str,
        limit: int,
        filters: SearchFilters,
        constraints: QueryConstraints,
    ) -> list[tuple[str, float]] | None:
        """The exact scan of the chunks a metadata filter keeps, when they are few; None when they are not."""
        if not self._few_kept(conn, tenant_id, collections, embedding_model, filters):
            return None
        exact, exact_params = exact_query(
            tenant_id,
            collections,
            embedding,
            embedding_model=embedding_model,
            limit=limit,
            filters=filters,
            constraints=constraints,
        )
        found = conn.execute(exact, exact_params).fetchall()
        if found and found[0][2] > EXACT_SCAN_ROWS:
            return None
        return [(chunk_id, distance) for chunk_id, distance, _ in found]

    @staticmethod
    def _few_hold(
        conn: psycopg.Connection[Any], tenant_id: str, collections: frozenset[str], constraints: QueryConstraints
    ) -> bool:
        """Whether the chunks holding the phrases' rarest terms are at most EXACT_SCAN_ROWS, and every analyser of
        the searched chunks keeps a term of them (a phrase of one language's stopwords holds all its chunks)."""
        params: dict[str, Any] = {"tenant": tenant_id, "collections": sorted(collections)}
        row = conn.execute(phrase_estimate_query(constraints, params), params).fetchone()
        return row is not None and int(row[0]) <= EXACT_SCAN_ROWS and not row[1]

    @staticmethod
    def _few_kept(
        conn: psycopg.Connection[Any],
        tenant_id: str,
        collections: frozenset[str],
        embedding_model: str,
        filters: SearchFilters,
    ) -> bool:
        params: dict[str, Any] = {"tenant": tenant_id, "collections": sorted(collections), "model": embedding_model}
        row = conn.execute(_KEPT_ESTIMATE.format(filters=version_filter_sql(filters, params)), params).fetchone()
        return row is not None and int(row[0]) <= EXACT_SCAN_ROWS
