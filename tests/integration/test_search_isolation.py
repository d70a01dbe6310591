"""Tenant and collection isolation of search, as a property over random callers and queries.

Many tenants and collections share one vocabulary, so every query matches rows the caller may not
read. Whatever the query and subjects: never a foreign chunk, and the number of results is exactly
what the caller's own rows allow, so a count never reveals that foreign rows exist.
"""

import random
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shared.adapters.postgres.database import Database
from shared.adapters.postgres.knowledge import PostgresKnowledgeIndex
from shared.domain.search import SearchFilters
from shared.domain.stopwords import ENGLISH_STOPWORDS
from tests.integration.conftest import MigratedDatabase
from tests.integration.knowledge_rows import DIMENSION, FAKE_MODEL, index_texts

WORDS = ["invoice", "budget", "outage", "renewal", "ERR-4021", "q3-2026", "contract", "alpha", "delta", "audit"]
TENANTS = ["iso-a", "iso-b", "iso-c"]
COLLECTIONS = ["docs", "hr", "eng"]


def vector(seed: int) -> tuple[float, ...]:
    generator = random.Random(seed)
    raw = [generator.gauss(0, 1) for _ in range(DIMENSION)]
    norm = sum(value * value for value in raw) ** 0.5
    return tuple(value / norm for value in raw)


@pytest.fixture(scope="module")
def corpus(migrated_database: MigratedDatabase) -> Iterator[tuple[Database, dict[tuple[str, str], list[str]]]]:
    database = Database(migrated_database.app_url, max_size=2)
    generator = random.Random(7)
    rows: dict[tuple[str, str], list[str]] = {}
    seed = 0
    for tenant in TENANTS:
        for collection in COLLECTIONS:
            texts = [
                " ".join(generator.choices(WORDS, k=generator.randint(2, 6))) for _ in range(generator.randint(1, 5))
            ]
            vectors = []
            for _ in texts:
                seed += 1
                vectors.append(vector(seed))
            index_texts(database, tenant, collection, texts, vectors=vectors)
            rows[tenant, collection] = texts
    try:
        yield database, rows
    finally:
        database.close()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    tenant=st.sampled_from(TENANTS),
    subjects=st.frozensets(st.sampled_from([*COLLECTIONS, "nonexistent"]), max_size=3),
    query=st.lists(st.sampled_from([*WORDS, "the", "what"]), min_size=1, max_size=4).map(" ".join),
    limit=st.integers(min_value=1, max_value=30),
    seed=st.integers(min_value=0, max_value=10_000),
)
def test_search_never_returns_or_reveals_rows_outside_the_callers_tenant_and_subjects(
    corpus: tuple[Database, dict[tuple[str, str], list[str]]],
    tenant: str,
    subjects: frozenset[str],
    query: str,
    limit: int,
    seed: int,
) -> None:
    database, rows = corpus
    index = PostgresKnowledgeIndex(database)
    allowed = {
        collection: texts for (owner, collection), texts in rows.items() if owner == tenant and collection in subjects
    }

    keyword = index.search(tenant, subjects, query, limit=limit, filters=SearchFilters(), k1=1.2, b=0.75)
    semantic = index.nearest(
        tenant, subjects, vector(-seed), embedding_model=FAKE_MODEL, limit=limit, filters=SearchFilters()
    )

    hit_ids = {hit.chunk_id for hit in keyword + semantic}
    own = index.snapshots(tenant, subjects, sorted(hit_ids))
    assert {snapshot.chunk_id for snapshot in own} == hit_ids, "a hit outside the caller's rows"
    assert all(snapshot.collection_id in subjects for snapshot in own)
    # The counts are exactly what the caller's own rows allow.
    terms = {word.lower() for word in query.split()} - ENGLISH_STOPWORDS
    matching = sum(1 for texts in allowed.values() for text in texts if terms & {word.lower() for word in text.split()})
    assert len(keyword) == min(limit, matching)
    assert len(semantic) == min(limit, sum(len(texts) for texts in allowed.values()))
