"""Retrieval with the title lane, over fake lanes and a fake title index (named as fakes): named documents'
chunks come first, keep their fused scores, survive the relative floor, and join when no lane found them."""

from collections.abc import Iterable, Sequence

from shared.domain.query_constraints import NO_CONSTRAINTS, QueryConstraints
from shared.domain.search import Found, RetrievalTuning, SearchFilters, SearchQuery
from shared.domain.titles import DirectChunk, NamedTitle
from shared.services.authorization import ClaimsAuthorizationPolicy
from shared.services.retrieval import Retrieval
from tests.unit.retrieval_fakes import NOW, FakeEmbedder, FakeLanes, caller


class FakeTitleIndex:
    """Titles by key; a version's chunks are the ids starting with "<version>:"."""

    def __init__(self, titles: dict[str, list[str]], chunks: dict[str, list[str]]) -> None:
        self.titles = titles  # key -> version ids
        self.chunks = chunks  # version -> chunk ids, best first
        self.asked_keys: list[str] = []
        self.asked_constraints = QueryConstraints()

    def named(
        self, tenant_id: str, collections: frozenset[str], keys: Sequence[str], *, filters: SearchFilters
    ) -> list[NamedTitle]:
        self.asked_keys = list(keys)
        return [
            NamedTitle(key=key, file_id=f"file-{version}", version_id=version)
            for key in keys
            for version in self.titles.get(key, [])
        ]

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
        self.asked_constraints = constraints  # its chunks are ids without text: the constraint is only recorded
        found = [c for c in candidates if c.split(":")[0] in version_ids]
        result = [DirectChunk(chunk_id=c, version_id=c.split(":")[0], found=True) for c in found]
        for version in version_ids:
            if not any(c.startswith(f"{version}:") for c in found):
                result += [
                    DirectChunk(chunk_id=c, version_id=version, found=False)
                    for c in self.chunks.get(version, [])[:per_document]
                ]
        return result


def retrieval(lanes: FakeLanes, titles: FakeTitleIndex | None, **tuning: object) -> Retrieval:
    return Retrieval(
        authorization=ClaimsAuthorizationPolicy(),
        knowledge=lanes,
        vectors=lanes,
        keywords=lanes,
        embedder=FakeEmbedder(),
        tuning=RetrievalTuning.model_validate(tuning),
        titles=titles,
        clock=lambda: NOW,
    )


PLAN = "jlpt n2 window weekly plan"
QUESTION = "what is due this week in the JLPT N2 Window Weekly Plan"


def test_a_named_documents_chunks_come_first_with_their_fused_scores_and_the_bit() -> None:
    lanes = FakeLanes([("other:0", 0.9), ("plan:2", 0.7)], [("other:0", 9.0), ("plan:2", 3.0)], {})
    titles = FakeTitleIndex({PLAN: ["plan"], "jlpt n2": ["n2"]}, {"n2": ["n2:0"]})
    outcome = retrieval(lanes, titles).search(caller("docs"), SearchQuery(text=QUESTION))
    assert isinstance(outcome, Found)
    assert [(hit.chunk_id, hit.direct_subject) for hit in outcome.hits] == [("plan:2", True), ("other:0", False)]
    assert outcome.hits[0].score < outcome.hits[1].score  # the fused score stands; only the order changes
    assert PLAN in titles.asked_keys


def test_without_a_title_index_the_ranking_is_the_lanes_alone() -> None:
    lanes = FakeLanes([("other:0", 0.9), ("plan:2", 0.7)], [("other:0", 9.0), ("plan:2", 3.0)], {})
    outcome = retrieval(lanes, None).search(caller("docs"), SearchQuery(text=QUESTION))
    assert isinstance(outcome, Found)
    assert [(hit.chunk_id, hit.direct_subject) for hit in outcome.hits] == [("other:0", False), ("plan:2", False)]


def test_a_named_document_no_lane_found_joins_with_its_best_chunks_ahead_of_the_rest() -> None:
    lanes = FakeLanes([("other:0", 0.9)], [("other:0", 9.0)], {})
    titles = FakeTitleIndex({PLAN: ["plan"]}, {"plan": ["plan:5", "plan:0", "plan:1", "plan:9"]})
    outcome = retrieval(lanes, titles).search(caller("docs"), SearchQuery(text=QUESTION))
    assert isinstance(outcome, Found)
    assert [hit.chunk_id for hit in outcome.hits] == ["plan:5", "plan:0", "plan:1", "other:0"]
    assert [hit.score for hit in outcome.hits[:3]] == [0.0, 0.0, 0.0]
    assert all(hit.direct_subject for hit in outcome.hits[:3]) and not outcome.hits[3].direct_subject


def test_a_direct_subject_is_not_dropped_by_the_relative_floor_but_incidental_tails_still_are() -> None:
    vector = [("a:0", 0.9)] + [(f"x:{i}", 0.8) for i in range(20)] + [("plan:3", 0.7)]
    lanes = FakeLanes(vector, [("a:0", 9.0)], {})
    titles = FakeTitleIndex({PLAN: ["plan"]}, {})
    outcome = retrieval(lanes, titles, fused_floor=0.9).search(caller("docs"), SearchQuery(text=QUESTION))
    assert isinstance(outcome, Found)
    assert [hit.chunk_id for hit in outcome.hits] == ["plan:3", "a:0"]


def test_a_question_naming_a_document_is_answered_even_when_no_lane_finds_anything() -> None:
    lanes = FakeLanes([], [], {})
    titles = FakeTitleIndex({"q3 budget": ["budget"]}, {"budget": ["budget:0"]})
    outcome = retrieval(lanes, titles).search(caller("docs"), SearchQuery(text="q3-budget"))
    assert isinstance(outcome, Found)
    assert [(hit.chunk_id, hit.direct_subject) for hit in outcome.hits] == [("budget:0", True)]


def test_the_shorter_title_inside_a_named_longer_one_brings_nothing_in() -> None:
    lanes = FakeLanes([("other:0", 0.9)], [], {})
    titles = FakeTitleIndex({PLAN: ["plan"], "jlpt n2": ["n2"]}, {"plan": ["plan:0"], "n2": ["n2:0"]})
    outcome = retrieval(lanes, titles).search(caller("docs"), SearchQuery(text=QUESTION))
    assert isinstance(outcome, Found)
    assert [hit.chunk_id for hit in outcome.hits] == ["plan:0", "other:0"]
