"""The title index adapter on the real database: which chunks of named documents become direct subjects, how a
named document no lane found is represented, and that only readable collections are matched."""

import uuid

from shared.adapters.postgres.database import Database
from shared.adapters.postgres.title_lane import PostgresTitleIndex
from shared.domain.search import SearchFilters
from tests.integration.knowledge_rows import FAKE_MODEL, index_texts, unit_vector


def tenant() -> str:
    return f"ti{uuid.uuid4().hex[:10]}"


def test_a_named_document_no_lane_found_gives_its_chunks_nearest_to_the_question(app_database: Database) -> None:
    acme = tenant()
    texts = [f"paragraph {i}" for i in range(6)]
    vectors = [unit_vector((i, 1.0)) for i in range(6)]
    _, version = index_texts(app_database, acme, "docs", texts, vectors=vectors, filename="weekly-plan.md")
    index = PostgresTitleIndex(app_database)
    named = index.named(acme, frozenset({"docs"}), ["weekly plan", "plan"], filters=SearchFilters())
    assert [(title.key, title.version_id) for title in named] == [("weekly plan", str(version))]

    question = unit_vector((4, 1.0), (1, 0.5), (5, 0.2))
    nearest = index.direct_chunks(
        acme,
        frozenset({"docs"}),
        [str(version)],
        candidates=[],
        embedding=question,
        embedding_model=FAKE_MODEL,
        per_document=3,
    )
    assert [(chunk.chunk_id, chunk.found) for chunk in nearest] == [
        (f"{version}:4", False),
        (f"{version}:1", False),
        (f"{version}:5", False),
    ]
    # Without an embedding (or embedded by another model): the document's opening chunks.
    for embedding, model in ((None, FAKE_MODEL), (question, "another-model")):
        opening = index.direct_chunks(
            acme,
            frozenset({"docs"}),
            [str(version)],
            candidates=[],
            embedding=embedding,
            embedding_model=model,
            per_document=2,
        )
        assert [chunk.chunk_id for chunk in opening] == [f"{version}:0", f"{version}:1"]
    # Found by a lane: only those chunks, marked found, and nothing added for the document.
    found = index.direct_chunks(
        acme,
        frozenset({"docs"}),
        [str(version)],
        candidates=[f"{version}:3", "elsewhere:0"],
        embedding=question,
        embedding_model=FAKE_MODEL,
        per_document=3,
    )
    assert [(chunk.chunk_id, chunk.found) for chunk in found] == [(f"{version}:3", True)]


def test_titles_of_collections_the_caller_cannot_read_or_filters_exclude_are_not_found(
    app_database: Database,
) -> None:
    acme = tenant()
    _, version = index_texts(app_database, acme, "board", ["secret terms"], filename="falcon-terms.md")
    index = PostgresTitleIndex(app_database)
    assert index.named(acme, frozenset({"docs"}), ["falcon terms"], filters=SearchFilters()) == []
    assert (
        index.direct_chunks(
            acme,
            frozenset({"docs"}),
            [str(version)],
            candidates=[],
            embedding=None,
            embedding_model=FAKE_MODEL,
            per_document=3,
        )
        == []
    )
    readable = frozenset({"board"})
    assert len(index.named(acme, readable, ["falcon terms"], filters=SearchFilters())) == 1
    assert index.named(acme, readable, ["falcon terms"], filters=SearchFilters(filename="other")) == []
    assert index.named(acme, readable, ["falcon terms"], filters=SearchFilters(media_types={"application/pdf"})) == []
    # Another tenant's identical title is not there at all.
    assert index.named(tenant(), readable, ["falcon terms"], filters=SearchFilters()) == []
