"""The index on real PostgreSQL + pgvector, as the application role: BM25 in plain SQL, its statistics
kept by triggers, the vector lane's iterative scan, and atomic, claim-checked chunk swaps."""

import math
import uuid
from collections import Counter

import psycopg
import pytest

from shared.adapters.postgres.database import Database
from shared.adapters.postgres.file_metadata import PostgresFileMetadataStore
from shared.adapters.postgres.knowledge import PostgresKnowledgeIndex
from shared.domain.knowledge import IndexingResult, IndexWrite
from shared.domain.search import SearchFilters
from shared.local.chunk_rows import new_indexing_version
from tests.integration.knowledge_rows import (
    FAKE_MODEL,
    chunk_rows,
    index_texts,
    unit_vector,
)

NO_FILTERS = SearchFilters()


def tenant() -> str:
    return f"t{uuid.uuid4().hex[:12]}"


def reference_bm25(
    documents: dict[str, str], query_terms: list[str], k1: float = 1.2, b: float = 0.75
) -> dict[str, float]:
    """BM25 (Lucene's IDF) computed in Python over whitespace-separated lowercase words."""
    tokens = {key: text.lower().split() for key, text in documents.items()}
    count = len(tokens)
    average = sum(len(words) for words in tokens.values()) / count
    frequency = Counter(term for words in tokens.values() for term in set(words))
    scores = {}
    for key, words in tokens.items():
        counts = Counter(words)
        score = 0.0
        for term in set(query_terms):
            if counts[term]:
                idf = math.log(1 + (count - frequency[term] + 0.5) / (frequency[term] + 0.5))
                score += idf * counts[term] * (k1 + 1) / (counts[term] + k1 * (1 - b + b * len(words) / average))
        if score:
            scores[key] = score
    return scores


def test_keyword_scores_are_bm25_over_the_callers_collections(app_database: Database) -> None:
    # Given chunks in two collections, where "alpha" is common in one and rare in the other
    acme = tenant()
    texts = {
        "a0": "alpha beta gamma delta",
        "a1": "alpha alpha epsilon",
        "a2": "zeta eta theta iota kappa lambda",
        "a3": "beta beta beta gamma",
    }
    _, version = index_texts(app_database, acme, "docs", list(texts.values()))
    index_texts(app_database, acme, "other", ["alpha alpha alpha", "alpha beta", "alpha", "alpha gamma"])
    index = PostgresKnowledgeIndex(app_database)

    # When the caller, who reads only "docs", searches
    hits = index.search(acme, frozenset({"docs"}), "alpha beta", limit=10, filters=NO_FILTERS, k1=1.2, b=0.75)

    # Then the scores are BM25 with statistics from "docs" alone: the other collection changes nothing
    expected = reference_bm25(texts, ["alpha", "beta"])
    got = {hit.chunk_id.split(":")[1]: hit.score for hit in hits}
    assert got.keys() == {key[1:] for key in expected}
    for key, score in expected.items():
        assert got[key[1:]] == pytest.approx(score, rel=1e-6)
    assert [hit.rank for hit in hits] == list(range(1, len(hits) + 1))
    assert all(hit.chunk_id.startswith(str(version)) for hit in hits)


def test_stopwords_are_stripped_from_the_query_and_identifiers_stay_whole(app_database: Database) -> None:
    acme = tenant()
    index_texts(
        app_database,
        acme,
        "docs",
        [
            "what is the status of the site and what was it",
            "the outage ERR-4021 was fixed in Q3-2026",
            "error 4022 is unrelated to the outage",
        ],
    )
    index = PostgresKnowledgeIndex(app_database)
    hits = index.search(acme, frozenset({"docs"}), "what was ERR-4021?", limit=10, filters=NO_FILTERS, k1=1.2, b=0.75)
    assert hits[0].chunk_id.endswith(":1")
    # The stopword-only chunk shares "what" and "was" and nothing else: it is not a candidate at all.
    assert all(not hit.chunk_id.endswith(":0") for hit in hits)
    only_stopwords = index.search(
        acme, frozenset({"docs"}), "what was the", limit=10, filters=NO_FILTERS, k1=1.2, b=0.75
    )
    assert only_stopwords == []


def test_statistics_follow_inserts_replacements_and_deletions_exactly(
    app_database: Database, owner_connection: psycopg.Connection
) -> None:
    acme = tenant()
    file_id, _ = index_texts(app_database, acme, "docs", ["one two two", "two three"])
    index_texts(app_database, acme, "docs", ["three four"])

    def recorded() -> dict[str, int]:
        return dict(
            owner_connection.execute(
                "SELECT term, chunk_count FROM keyword_terms WHERE tenant_id = %s", (acme,)
            ).fetchall()
        )

    def recomputed() -> dict[str, int]:
        return dict(
            owner_connection.execute(
                "SELECT t.lexeme, count(*)::int FROM knowledge_chunks c, unnest(c.search_vector) t"
                " WHERE c.tenant_id = %s GROUP BY t.lexeme",
                (acme,),
            ).fetchall()
        )

    def postings() -> set[tuple[str, str, int, int]]:
        return set(
            owner_connection.execute(
                "SELECT term, chunk_id, frequency, chunk_length FROM keyword_postings WHERE tenant_id = %s", (acme,)
            ).fetchall()
        )

    def postings_recomputed() -> set[tuple[str, str, int, int]]:
        return set(
            owner_connection.execute(
                "SELECT t.lexeme, c.chunk_id, cardinality(t.positions), c.lexical_length"
                " FROM knowledge_chunks c, unnest(c.search_vector) t WHERE c.tenant_id = %s",
                (acme,),
            ).fetchall()
        )

    assert recorded() == recomputed() == {"one": 1, "two": 2, "three": 2, "four": 1}
    assert postings() == postings_recomputed() and len(postings()) == 6
    # A new version replaces the file's chunks; the statistics move with them.
    _, version, attempt = new_indexing_version(app_database, acme, "docs", file_id=file_id)
    PostgresKnowledgeIndex(app_database).replace_chunks(
        acme,
        version,
        chunk_rows(file_id, version, "docs", ["five"]),
        IndexingResult(chunk_count=1, embedded_count=0, embedding_model=None),
        attempt=attempt,
    )
    assert recorded() == recomputed() == {"three": 1, "four": 1, "five": 1}
    assert postings() == postings_recomputed()
    totals = owner_connection.execute(
        "SELECT chunk_count, total_length FROM keyword_collections WHERE tenant_id = %s", (acme,)
    ).fetchone()
    assert totals == (2, 3)
    # Deleting the file removes its chunks in the same transaction, and their counts.
    assert PostgresFileMetadataStore(app_database).begin_delete_file(acme, file_id) == 2
    assert recorded() == recomputed() == {"three": 1, "four": 1}
    assert postings() == postings_recomputed()


def test_a_chunks_text_cannot_be_edited_in_place(app_database: Database) -> None:
    acme = tenant()
    index_texts(app_database, acme, "docs", ["original words"])
    with (
        pytest.raises(psycopg.errors.RaiseException, match="immutable"),
        app_database.tenant_transaction(acme) as conn,
    ):
        conn.execute("UPDATE knowledge_chunks SET content = 'other words' WHERE tenant_id = %s", (acme,))


def test_a_version_cannot_hold_two_chunks_at_one_position(app_database: Database) -> None:
    acme = tenant()
    file_id, version, attempt = new_indexing_version(app_database, acme, "docs")
    rows = chunk_rows(file_id, version, "docs", ["first", "second"])
    twin = rows[1].model_copy(update={"chunk_id": f"{version}:twin", "draft": rows[0].draft})
    with pytest.raises(psycopg.errors.UniqueViolation):
        PostgresKnowledgeIndex(app_database).replace_chunks(
            acme,
            version,
            [rows[0], twin],
            IndexingResult(chunk_count=2, embedded_count=0, embedding_model=None),
            attempt=attempt,
        )


def test_a_deleted_or_superseded_version_gets_no_chunks(app_database: Database) -> None:
    acme = tenant()
    index = PostgresKnowledgeIndex(app_database)
    metadata = PostgresFileMetadataStore(app_database)
    result = IndexingResult(chunk_count=1, embedded_count=0, embedding_model=None)

    # Deleted while it was being indexed: the late write is refused, nothing becomes searchable.
    file_id, version, attempt = new_indexing_version(app_database, acme, "docs")
    metadata.begin_delete_file(acme, file_id)
    late = index.replace_chunks(acme, version, chunk_rows(file_id, version, "docs", ["ghost"]), result, attempt=attempt)
    assert late is IndexWrite.NOT_CLAIMED
    assert index.search(acme, frozenset({"docs"}), "ghost", limit=5, filters=NO_FILTERS, k1=1.2, b=0.75) == []

    # An older version finishing after a newer one was indexed does not replace it.
    file_id, old, old_attempt = new_indexing_version(app_database, acme, "docs")
    _, new, new_attempt = new_indexing_version(app_database, acme, "docs", file_id=file_id)
    assert (
        index.replace_chunks(acme, new, chunk_rows(file_id, new, "docs", ["newer"]), result, attempt=new_attempt)
        is IndexWrite.STORED
    )
    stale = index.replace_chunks(acme, old, chunk_rows(file_id, old, "docs", ["older"]), result, attempt=old_attempt)
    assert stale is IndexWrite.SUPERSEDED
    assert index.search(acme, frozenset({"docs"}), "older", limit=5, filters=NO_FILTERS, k1=1.2, b=0.75) == []
    assert len(index.search(acme, frozenset({"docs"}), "newer", limit=5, filters=NO_FILTERS, k1=1.2, b=0.75)) == 1

    # A wrong attempt number (superseded by a retry) is refused too.
    file_id, version, attempt = new_indexing_version(app_database, acme, "docs")
    refused = index.replace_chunks(
        acme, version, chunk_rows(file_id, version, "docs", ["x"]), result, attempt=attempt + 1
    )
    assert refused is IndexWrite.NOT_CLAIMED


def test_a_small_tenant_in_a_large_table_still_gets_its_nearest_chunks(
    app_database: Database, owner_connection: psycopg.Connection
) -> None:
    # Given a large tenant whose chunks all sit close to the query, and a small one with five chunks
    big, small = tenant(), tenant()
    near = [unit_vector((0, 1.0), (1 + index % 300, 0.05)) for index in range(2000)]
    index_texts(app_database, big, "docs", [f"big {index}" for index in range(2000)], vectors=near)
    far = [unit_vector((0, 0.2), (350 + index, 1.0)) for index in range(5)]
    index_texts(app_database, small, "docs", [f"small {index}" for index in range(5)], vectors=far)
    owner_connection.execute("ANALYZE knowledge_chunks")
    index = PostgresKnowledgeIndex(app_database)

    # When the small tenant searches near the big tenant's cluster
    hits = index.nearest(
        small, frozenset({"docs"}), unit_vector((0, 1.0)), embedding_model=FAKE_MODEL, limit=10, filters=NO_FILTERS
    )

    # Then it gets all five of its own chunks (the HNSW scan kept going past the big tenant's), best first
    assert len(hits) == 5
    assert all(hit.chunk_id.split(":")[0] for hit in hits)
    scores = [hit.score for hit in hits]
    assert scores == sorted(scores, reverse=True)
    assert all(0.5 < score <= 1 for score in scores)


def test_filters_apply_inside_both_lanes(app_database: Database) -> None:
    acme = tenant()
    vector = unit_vector((3, 1.0))
    index_texts(app_database, acme, "docs", ["budget report for march"], vectors=[vector], filename="March Budget.txt")
    index_texts(app_database, acme, "docs", ["budget report for april"], vectors=[vector], filename="april-notes.txt")
    index = PostgresKnowledgeIndex(app_database)
    only_march = SearchFilters(filename="march budget")
    keyword = index.search(acme, frozenset({"docs"}), "budget report", limit=10, filters=only_march, k1=1.2, b=0.75)
    semantic = index.nearest(
        acme, frozenset({"docs"}), vector, embedding_model=FAKE_MODEL, limit=10, filters=only_march
    )
    assert len(keyword) == len(semantic) == 1
    none_of_that_type = SearchFilters(media_types=frozenset({"application/pdf"}))
    assert index.search(acme, frozenset({"docs"}), "budget", limit=10, filters=none_of_that_type, k1=1.2, b=0.75) == []
    wildcard = SearchFilters(filename="%")  # a LIKE wildcard is a literal character here
    assert index.search(acme, frozenset({"docs"}), "budget", limit=10, filters=wildcard, k1=1.2, b=0.75) == []


def test_an_older_version_cannot_write_once_a_newer_one_is_stored_even_before_that_one_is_indexed(
    app_database: Database,
) -> None:
    acme = tenant()
    index = PostgresKnowledgeIndex(app_database)
    result = IndexingResult(chunk_count=1, embedded_count=0, embedding_model=None)
    file_id, old, old_attempt = new_indexing_version(app_database, acme, "docs")
    new_indexing_version(app_database, acme, "docs", file_id=file_id)  # stored, still being processed
    late = index.replace_chunks(acme, old, chunk_rows(file_id, old, "docs", ["obsolete"]), result, attempt=old_attempt)
    assert late is IndexWrite.SUPERSEDED
    assert index.search(acme, frozenset({"docs"}), "obsolete", limit=5, filters=NO_FILTERS, k1=1.2, b=0.75) == []


def test_deleting_chunks_touches_only_their_own_terms(
    app_database: Database, owner_connection: psycopg.Connection
) -> None:
    # A collection with a large vocabulary; deleting one small file leaves every other term's count alone
    acme = tenant()
    index_texts(
        app_database,
        acme,
        "docs",
        [" ".join(f"word{n}" for n in range(start, start + 200)) for start in range(0, 2000, 200)],
    )
    small, _ = index_texts(app_database, acme, "docs", ["word1 zebra"])
    before: dict[str, int] = dict(
        owner_connection.execute("SELECT term, chunk_count FROM keyword_terms WHERE tenant_id = %s", (acme,)).fetchall()
    )
    PostgresFileMetadataStore(app_database).begin_delete_file(acme, small)
    after: dict[str, int] = dict(
        owner_connection.execute("SELECT term, chunk_count FROM keyword_terms WHERE tenant_id = %s", (acme,)).fetchall()
    )
    assert after == {**{term: count for term, count in before.items() if term != "zebra"}, "word1": 1}
