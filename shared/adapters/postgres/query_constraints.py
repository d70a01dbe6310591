"""A query's phrases and exclusions (shared/domain/query_constraints.py) as a condition on a chunk row, applied inside
every lane's scan beside the search filters, before ranking (docs/search.md#query-syntax).

A chunk's stored terms (`search_vector`, with positions) were made by its own analyser from its folded text, so a
phrase is compared the way the keyword lane reads that chunk: folded the same way (keyword_text), stemmed by the
chunk language's analyser, its words in order at the distances the text puts them (a stopword between two words
counts as a word; stopwords themselves are not compared, as the analyser does not keep them). Each phrase and
exclusion is read once per analyser, in one sub-select PostgreSQL runs once per statement (an InitPlan), into
one tsquery per analyser: `phrase && phrase && !!excluded`; each row then only looks its own analyser's up and
matches it against its stored terms. An analyser that reads the whole constraint as nothing (a phrase of its
stopwords only) gets a query every chunk matches.

For the vector lane, `phrase_estimate_query` and `phrase_exact_query` find the chunks that can hold the phrases
from the keyword lane's postings: per analyser, the chunks holding the phrases' rarest term.
"""

from typing import Any

from shared.domain.languages import ANALYSERS, keyword_text, text_search_configuration
from shared.domain.query_constraints import QueryConstraints

_ANALYSERS = sorted(ANALYSERS)
_CONFIGURATIONS = [text_search_configuration(analyser) for analyser in _ANALYSERS]
# Matches every tsvector: what an analyser that reads the constraint as nothing asks of its chunks.
_ANYTHING = "'quire | !quire'"


def constraint_sql(constraints: QueryConstraints, params: dict[str, Any], chunk: str) -> str:
    """' AND <the condition>' on the chunk row (`chunk` is its alias with a dot), or '' without constraints; `params`
    holds the lane's `tenant` and `collections`."""
    if not constraints:
        return ""
    reads = []
    for index, phrase in enumerate(constraints.phrases):
        params[f"qc_phrase_{index}"] = keyword_text(phrase)
        reads.append(f"phraseto_tsquery(a.configuration::regconfig, %(qc_phrase_{index})s)")
    for index, term in enumerate(constraints.excluded):
        params[f"qc_excluded_{index}"] = keyword_text(term)
        reads.append(f"(!!phraseto_tsquery(a.configuration::regconfig, %(qc_excluded_{index})s))")
    params["qc_analysers"] = _ANALYSERS
    params["qc_configurations"] = _CONFIGURATIONS
    # Read only by the analysers the searched collections' chunks have (keyword_collections counts them exactly): the
    # others' places stay NULL, which no chunk could look up anyway, and a row that did would match nothing.
    present = (
        "SELECT s.analyser FROM keyword_collections AS s WHERE s.tenant_id = %(tenant)s"
        " AND s.collection_id = ANY(%(collections)s) AND s.chunk_count > 0"
    )
    queries = (
        f"(SELECT array_agg(CASE WHEN numnode(r.q) = 0 THEN {_ANYTHING}::tsquery ELSE r.q END ORDER BY a.n)"  # noqa: S608 - placeholders only
        " FROM unnest(%(qc_analysers)s::text[], %(qc_configurations)s::text[]) WITH ORDINALITY"
        " AS a(analyser, configuration, n)"
        # CASE, because a join filter would be applied after each analyser's reading; OFFSET 0 keeps the reading one
        # value (pulled up, it would be computed once per use).
        f" CROSS JOIN LATERAL (SELECT CASE WHEN a.analyser IN ({present}) THEN {' && '.join(reads)} END AS q"
        " OFFSET 0) AS r)"
    )
    # The body's terms only (weight D): a phrase must be in what a hit quotes, and an excluded word in its text, not in
    # the title or headings it is indexed under (those are weight A since migration 0031).
    body = f"ts_filter({chunk}search_vector, '{{d}}')"
    matches = f"{body} @@ ({queries})[array_position(%(qc_analysers)s::text[], {chunk}analyser)]"
    # Inside a CASE the planner cannot see an `@@` it would guess keeps 0.5% of the rows (its default for a query that
    # is no constant), and it estimates half: else an exclusion, which keeps nearly every chunk, or a phrase many chunks
    # hold, turns the vector lane into a sort of the tenant's every chunk by distance instead of the HNSW scan with the
    # condition inside it. A phrase few chunks hold is answered from the postings instead (phrase_exact_query).
    return f" AND CASE WHEN {matches} THEN true ELSE false END"


# Per analyser of the searched collections, the phrases' rarest term (by its chunk count there; 0 when no chunk has
# it, so none can hold the phrase); an analyser none of whose phrases has a term it keeps has no row.
_RAREST = """
WITH analysers AS MATERIALIZED (
  SELECT s.analyser, max(a.configuration) AS configuration, sum(s.chunk_count) AS chunks
  FROM keyword_collections AS s
  JOIN unnest(%(qc_analysers)s::text[], %(qc_configurations)s::text[]) AS a(analyser, configuration)
    ON a.analyser = s.analyser
  WHERE s.tenant_id = %(tenant)s AND s.collection_id = ANY(%(collections)s)
  GROUP BY s.analyser HAVING sum(s.chunk_count) > 0
), lexemes AS MATERIALIZED (
  SELECT DISTINCT a.analyser, t.lexeme
  FROM analysers AS a
  CROSS JOIN unnest(%(qc_phrase_texts)s::text[]) AS p(phrase)
  CROSS JOIN LATERAL unnest(to_tsvector(a.configuration::regconfig, p.phrase)) AS t
), rarest AS MATERIALIZED (
  SELECT DISTINCT ON (l.analyser) l.analyser, l.lexeme, coalesce(sum(k.chunk_count), 0) AS chunks
  FROM lexemes AS l
  LEFT JOIN keyword_terms AS k ON k.tenant_id = %(tenant)s AND k.collection_id = ANY(%(collections)s)
    AND k.analyser = l.analyser AND k.term = l.lexeme
  GROUP BY l.analyser, l.lexeme
  ORDER BY l.analyser, 3, l.lexeme
)
"""
# How many chunks the phrases' rarest terms hold, and whether an analyser of the searched chunks reads no term of
# them (its chunks all pass the phrase condition, so the postings cannot list them).
_ESTIMATE = (
    _RAREST
    + """
SELECT coalesce(sum(coalesce(r.chunks, a.chunks)), 0), coalesce(bool_or(r.analyser IS NULL), false)
FROM analysers AS a LEFT JOIN rarest AS r ON r.analyser = a.analyser
"""
)
# The chunks holding the rarest terms, under every condition of the lane, each one's distance computed. Both joins are
# LATERAL with OFFSET 0, so each is a probe of a primary key per row (the postings' (tenant, collection, analyser,
# term) prefix, the chunk's (tenant, chunk)): joined plainly, the planner cannot know the rarest terms are rare and
# hashes the tenant's every posting and chunk.
_EXACT = (
    _RAREST  # noqa: S608 - constant SQL and placeholders; the lane's conditions are formatted in by phrase_exact_query
    + """, candidates AS MATERIALIZED (
  SELECT DISTINCT p.chunk_id FROM rarest AS r
  CROSS JOIN LATERAL (
    SELECT p.chunk_id FROM keyword_postings AS p
    WHERE p.tenant_id = %(tenant)s AND p.collection_id = ANY(%(collections)s) AND p.analyser = r.analyser
      AND p.term = r.lexeme
    OFFSET 0
  ) AS p
)
SELECT c.chunk_id, c.distance FROM candidates AS x
CROSS JOIN LATERAL (
  SELECT c.chunk_id, c.embedding <=> %(embedding)s::vector AS distance FROM knowledge_chunks AS c
  WHERE c.tenant_id = %(tenant)s AND c.chunk_id = x.chunk_id AND c.subjects && %(collections)s
    AND c.embedding_model = %(model)s AND c.embedding IS NOT NULL {conditions}
  OFFSET 0
) AS c
ORDER BY c.distance, c.chunk_id
LIMIT %(limit)s
"""
)


def _phrase_params(constraints: QueryConstraints, params: dict[str, Any]) -> None:
    params["qc_analysers"] = _ANALYSERS
    params["qc_configurations"] = _CONFIGURATIONS
    params["qc_phrase_texts"] = [keyword_text(phrase) for phrase in constraints.phrases]


def phrase_estimate_query(constraints: QueryConstraints, params: dict[str, Any]) -> str:
    """The statement answering (chunks the phrases' rarest terms hold, whether some analyser reads none of them), for
    `params` holding the tenant and collections."""
    _phrase_params(constraints, params)
    return _ESTIMATE


def phrase_exact_query(constraints: QueryConstraints, params: dict[str, Any], conditions: str) -> str:
    """The nearest chunks among those holding the phrases' rarest terms, under `conditions` (the lane's filters and
    the constraint itself), for `params` holding the tenant, collections, embedding, model and limit."""
    _phrase_params(constraints, params)
    return _EXACT.format(conditions=conditions)
