"""The keyword lane, BM25 in plain PostgreSQL (Aurora has no BM25 extension), summed from postings: the
query's lexemes (the `english` configuration: stemmed, stopwords stripped, as chunks are since migration 0023)
are looked up by primary key in keyword_postings, which holds each (chunk, term)'s frequency and the chunk's
length; any term may match (OR). Document frequencies and average lengths come from keyword_terms /
keyword_collections. Statement triggers keep all three exact as chunks are written and deleted. IDF counts only
the collections the caller may read. Not the GIN index on the tsvector: under row-level security `@@` is not
leakproof, so the planner will not use that index and the lane would test every row of the tenant
(docs/adr/0001).
"""

from typing import Any

from shared.adapters.postgres.database import Database
from shared.adapters.postgres.search_filters import filter_sql
from shared.domain.knowledge import RankedChunk
from shared.domain.search import SearchFilters
from shared.domain.stopwords import ENGLISH_STOPWORDS
from shared.ports import KeywordIndex

STOPWORDS = sorted(ENGLISH_STOPWORDS)

# One statement: the query's lexemes (stopwords off), their IDF over the caller's collections, and each
# chunk's BM25 summed from the postings of those lexemes, found by primary key (text equality is
# leakproof, so row-level security does not stop the index from being used, unlike `@@` on the GIN).
KEYWORD_SEARCH = """
WITH query_terms AS MATERIALIZED (
  SELECT coalesce(array_agg(DISTINCT t.lexeme), '{{}}') AS lexemes
  FROM unnest(to_tsvector('english', %(query)s)) AS t
  WHERE t.lexeme <> ALL(%(stopwords)s)
), collection_stats AS MATERIALIZED (
  SELECT greatest(coalesce(sum(chunk_count), 0), 1) AS chunks,
         greatest(coalesce(sum(total_length)::float8 / nullif(sum(chunk_count), 0), 1), 1) AS average_length
  FROM keyword_collections WHERE tenant_id = %(tenant)s AND collection_id = ANY(%(collections)s)
), weights AS MATERIALIZED (
  SELECT k.term, ln(1 + (s.chunks - sum(k.chunk_count) + 0.5) / (sum(k.chunk_count) + 0.5)) AS idf
  FROM keyword_terms AS k, collection_stats AS s
  WHERE k.tenant_id = %(tenant)s AND k.collection_id = ANY(%(collections)s)
    AND k.term = ANY((SELECT lexemes FROM query_terms)::text[])
  GROUP BY k.term, s.chunks
), scored AS (
  SELECT p.chunk_id,
         sum(w.idf * (p.frequency * (%(k1)s + 1))
             / (p.frequency + %(k1)s * (1 - %(b)s + %(b)s * p.chunk_length / s.average_length))) AS score
  FROM keyword_postings AS p
  JOIN weights AS w ON w.term = p.term
  CROSS JOIN collection_stats AS s
  WHERE p.tenant_id = %(tenant)s AND p.collection_id = ANY(%(collections)s)
    AND p.term = ANY((SELECT lexemes FROM query_terms)::text[])
  GROUP BY p.chunk_id
)
SELECT scored.chunk_id, scored.score FROM scored {join}
ORDER BY scored.score DESC, scored.chunk_id
LIMIT %(limit)s
"""


class PostgresKeywordIndex(KeywordIndex):
    def __init__(self, database: Database) -> None:
        self._database = database

    def search(
        self,
        tenant_id: str,
        collections: frozenset[str],
        query: str,
        *,
        limit: int,
        filters: SearchFilters,
        k1: float,
        b: float,
    ) -> list[RankedChunk]:
        if not collections:
            return []
        params: dict[str, Any] = {
            "tenant": tenant_id,
            "collections": sorted(collections),
            "query": query,
            "stopwords": STOPWORDS,
            "limit": limit,
            "k1": k1,
            "b": b,
        }
        conditions = filter_sql(filters, params, chunk="c.")
        # Filters are columns of the chunk: joined by primary key only when there are any.
        join = (
            f"JOIN knowledge_chunks AS c ON c.tenant_id = %(tenant)s AND c.chunk_id = scored.chunk_id{conditions}"
            if conditions
            else ""
        )
        statement = KEYWORD_SEARCH.format(join=join)
        with self._database.tenant_transaction(tenant_id) as conn:
            rows = conn.execute(statement, params).fetchall()
        return [
            RankedChunk(chunk_id=chunk_id, rank=rank, score=float(score))
            for rank, (chunk_id, score) in enumerate(rows, start=1)
        ]
