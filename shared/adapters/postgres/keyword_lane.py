"""The keyword lane, BM25 in plain PostgreSQL (Aurora has no BM25 extension), summed from postings, per analyser.

Each chunk's terms were made by its language's analyser (shared/domain/languages.py), and the statistics are kept
per analyser: the query is read by every analyser the caller's collections hold (a bounded set: at most one per
analyser Quire has), so a German query finds German chunks by their German stems, a Chinese one Chinese chunks by
their bigrams, and an identifier (ERR-4021, which every analyser keeps whole) chunks in any language. Each
(analyser, term) is looked up by primary key in keyword_postings, which holds each (chunk, term)'s frequency and
the chunk's length; any term may match (OR). Document frequencies and average lengths come from keyword_terms /
keyword_collections, counted among the chunks of the same analyser, over the collections the caller may read.
Statement triggers keep all three exact as chunks are written and deleted. Not the GIN index on the tsvector: under
row-level security `@@` is not leakproof, so the planner will not use that index and the lane would test every row
of the tenant (docs/adr/0001).
"""

from typing import Any

from shared.adapters.postgres.database import Database
from shared.adapters.postgres.query_constraints import constraint_sql
from shared.adapters.postgres.search_filters import filter_sql
from shared.domain.knowledge import RankedChunk
from shared.domain.languages import ANALYSERS, keyword_text, text_search_configuration
from shared.domain.query_constraints import NO_CONSTRAINTS, QueryConstraints
from shared.domain.search import SearchFilters
from shared.domain.stopwords import ENGLISH_STOPWORDS
from shared.ports import KeywordIndex

STOPWORDS = sorted(ENGLISH_STOPWORDS)
_ANALYSERS = sorted(ANALYSERS)
_CONFIGURATIONS = [text_search_configuration(analyser) for analyser in _ANALYSERS]

# One statement: the analysers present with their statistics, the query's terms as each reads it (Quire's English
# stopwords off: a question's "what" and "which" carry no signal in any language), their IDF among that analyser's
# chunks, and each chunk's BM25 summed from the postings of those terms, found by primary key (text equality is
# leakproof, so row-level security does not stop the index from being used, unlike `@@` on the GIN).
# A term's frequency in a chunk, its occurrences in the chunk's context (migration 0031) weighted apart.
_WEIGHTED_FREQUENCY = "(p.frequency + (%(context_weight)s::float8 - 1) * p.context_frequency)"
KEYWORD_SEARCH = """
WITH analysers AS MATERIALIZED (
  SELECT s.analyser, max(a.configuration) AS configuration,
         greatest(sum(s.chunk_count), 1) AS chunks,
         greatest(coalesce(sum(s.total_length)::float8 / nullif(sum(s.chunk_count), 0), 1), 1) AS average_length
  FROM keyword_collections AS s
  JOIN unnest(%(analysers)s::text[], %(configurations)s::text[]) AS a(analyser, configuration)
    ON a.analyser = s.analyser
  WHERE s.tenant_id = %(tenant)s AND s.collection_id = ANY(%(collections)s)
  GROUP BY s.analyser HAVING sum(s.chunk_count) > 0
), query_terms AS MATERIALIZED (
  -- Each analyser's statistics carried with its terms, so each (analyser, term) is looked up once below.
  SELECT DISTINCT a.analyser, t.lexeme AS term, a.chunks, a.average_length
  FROM analysers AS a, unnest(to_tsvector(a.configuration::regconfig, %(query)s)) AS t
  WHERE t.lexeme <> ALL(%(stopwords)s)
), weights AS MATERIALIZED (
  SELECT k.analyser, k.term, ln(1 + (q.chunks - sum(k.chunk_count) + 0.5) / (sum(k.chunk_count) + 0.5)) AS idf,
         q.average_length
  FROM query_terms AS q
  JOIN keyword_terms AS k ON k.tenant_id = %(tenant)s AND k.collection_id = ANY(%(collections)s)
    AND k.analyser = q.analyser AND k.term = q.term
  GROUP BY k.analyser, k.term, q.chunks, q.average_length
), scored AS (
  SELECT p.chunk_id,
         sum(w.idf * ({tf} * (%(k1)s + 1))
             / ({tf} + %(k1)s * (1 - %(b)s + %(b)s * p.chunk_length / w.average_length))) AS score
  FROM weights AS w
  JOIN keyword_postings AS p ON p.tenant_id = %(tenant)s AND p.collection_id = ANY(%(collections)s)
    AND p.analyser = w.analyser AND p.term = w.term
  GROUP BY p.chunk_id
)
SELECT scored.chunk_id, scored.score FROM scored {join}
ORDER BY scored.score DESC, scored.chunk_id
LIMIT %(limit)s
""".replace("{tf}", _WEIGHTED_FREQUENCY)


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
        context_weight: float = 1.0,
        constraints: QueryConstraints = NO_CONSTRAINTS,
    ) -> list[RankedChunk]:
        if not collections:
            return []
        params: dict[str, Any] = {
            "tenant": tenant_id,
            "collections": sorted(collections),
            "query": keyword_text(query),
            "stopwords": STOPWORDS,
            "analysers": _ANALYSERS,
            "configurations": _CONFIGURATIONS,
            "limit": limit,
            "k1": k1,
            "b": b,
            "context_weight": context_weight,
        }
        conditions = filter_sql(filters, params, chunk="c.") + constraint_sql(constraints, params, chunk="c.")
        # Filters and the query's phrases and exclusions are columns of the chunk: joined by primary key only when
        # there are any, before the limit (the top k are the top k of the chunks they keep).
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
