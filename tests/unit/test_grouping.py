"""Search results as documents (issue 37, item 2): groups in rank order, each file's hits bounded and in order,
the limit counting files, and the context budget keeping whole groups."""

from datetime import UTC, datetime

from shared.domain.grouping import by_file
from shared.domain.search import Citation, SearchHit


def hit(file: str, number: int, score: float, excerpt: str = "text") -> SearchHit:
    return SearchHit(
        chunk_id=f"{file}-v:{number}",
        score=score,
        vector_score=None,
        lexical_score=None,
        excerpt=excerpt,
        citation=Citation(
            file_id=file,
            version_id=f"{file}-v",
            filename=f"{file}.txt",
            media_type="text/plain",
            collection_id="docs",
            excerpt=excerpt,
            retrieved_at=datetime(2026, 12, 7, tzinfo=UTC),
        ),
    )


RANKED = [hit("a", 0, 1.0), hit("b", 3, 0.9), hit("a", 2, 0.8), hit("c", 1, 0.7), hit("a", 5, 0.6), hit("b", 1, 0.5)]


def test_files_come_in_the_order_of_their_best_hit_each_with_its_hits_in_order() -> None:
    groups, truncated = by_file(RANKED, limit=10, per_file=3, budget_characters=10_000)
    assert [group.file_id for group in groups] == ["a", "b", "c"]
    assert [hit.chunk_id for hit in groups[0].hits] == ["a-v:0", "a-v:2", "a-v:5"]
    assert [group.score for group in groups] == [1.0, 0.9, 0.7]
    assert (groups[1].filename, groups[1].version_id, groups[1].collection_id) == ("b.txt", "b-v", "docs")
    assert not truncated


def test_the_limit_counts_files_and_each_file_brings_at_most_its_share() -> None:
    groups, _ = by_file(RANKED, limit=2, per_file=2, budget_characters=10_000)
    assert [(group.file_id, len(group.hits)) for group in groups] == [("a", 2), ("b", 2)]


def test_the_budget_keeps_whole_groups_and_never_fewer_than_one() -> None:
    long = [hit("a", 0, 1.0, "x" * 600), hit("a", 1, 0.9, "x" * 600), hit("b", 0, 0.8, "x" * 100)]
    groups, truncated = by_file(long, limit=10, per_file=3, budget_characters=1_000)
    assert [group.file_id for group in groups] == ["a"] and truncated
    groups, truncated = by_file(long, limit=10, per_file=3, budget_characters=1_300)
    assert [group.file_id for group in groups] == ["a", "b"] and not truncated


def test_no_hits_make_no_groups() -> None:
    assert by_file([], limit=5, per_file=3, budget_characters=100) == ((), False)
