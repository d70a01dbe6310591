"""Retrieval's decisions with fake lanes (named as fakes): fusion, floors, the empty reasons, the
identifier booster, the context budget, and the subjects always handed to both lanes."""

from collections.abc import Sequence

import pytest

from shared.domain.identifier_booster import boost_identifiers, boosted_identifiers
from shared.domain.knowledge import RankedChunk
from shared.domain.reranking import RerankCandidate, Reranked
from shared.domain.search import (
    Empty,
    EmptyReason,
    Found,
    SearchFilters,
    SearchMode,
    SearchQuery,
    excerpt_of,
    identifier_terms,
    query_terms,
    reciprocal_rank_fusion,
)
from tests.unit.retrieval_fakes import NOW, FakeEmbedder, FakeLanes, caller, retrieval


def test_fusion_ranks_agreement_above_one_lanes_confidence() -> None:
    vector = [RankedChunk(chunk_id="a", rank=1, score=0.9), RankedChunk(chunk_id="b", rank=2, score=0.8)]
    keyword = [RankedChunk(chunk_id="c", rank=1, score=9.0), RankedChunk(chunk_id="b", rank=2, score=5.0)]
    fused = reciprocal_rank_fusion([vector, keyword], k=60)
    assert [chunk_id for chunk_id, _ in fused] == ["b", "a", "c"]
    assert fused[0][1] == pytest.approx(2 / 62)
    assert fused[1][1] == fused[2][1] == pytest.approx(1 / 61)


def test_a_caller_with_no_readable_collection_gets_no_access_and_no_lane_runs() -> None:
    lanes = FakeLanes([("a", 0.9)], [("a", 3.0)], {})
    outcome = retrieval(lanes).search(caller(), SearchQuery(text="anything"))
    assert isinstance(outcome, Empty)
    assert outcome.outcome is EmptyReason.NO_ACCESS
    assert lanes.asked == []
    # Asking for a collection the caller cannot read is the same answer, whether or not it exists.
    filtered = SearchQuery(text="anything", filters=SearchFilters(collections=frozenset({"secret"})))
    assert retrieval(lanes).search(caller("docs"), filtered).outcome is EmptyReason.NO_ACCESS


def test_both_lanes_receive_exactly_the_callers_readable_collections() -> None:
    lanes = FakeLanes([("a", 0.9)], [("a", 3.0)], {})
    query = SearchQuery(text="q", filters=SearchFilters(collections=frozenset({"docs", "hr"})))
    retrieval(lanes).search(caller("docs", "eng"), query)
    assert lanes.asked == [("vector", frozenset({"docs"})), ("keyword", frozenset({"docs"}))]


def test_nothing_from_either_lane_is_no_match_and_only_distant_vectors_is_below_floor() -> None:
    nothing = retrieval(FakeLanes([], [], {})).search(caller("docs"), SearchQuery(text="q"))
    assert isinstance(nothing, Empty)
    assert nothing.outcome is EmptyReason.NO_MATCH
    distant = retrieval(FakeLanes([("a", 0.52), ("b", 0.51)], [], {})).search(caller("docs"), SearchQuery(text="q"))
    assert isinstance(distant, Empty)
    assert distant.outcome is EmptyReason.BELOW_FLOOR
    assert distant.message == EmptyReason.BELOW_FLOOR.sentence
    assert not hasattr(distant, "hits")


def test_the_relative_floor_drops_the_tail_of_a_good_result_set() -> None:
    vector = [(f"v{i}", 0.9 - i * 0.001) for i in range(40)]
    keyword = [("v0", 9.0)]
    outcome = retrieval(FakeLanes(vector, keyword, {}), fused_floor=0.5).search(
        caller("docs"), SearchQuery(text="q", limit=50)
    )
    assert isinstance(outcome, Found)
    best = outcome.hits[0].score
    assert outcome.hits[0].chunk_id == "v0"
    assert all(hit.score >= 0.5 * best for hit in outcome.hits)
    assert len(outcome.hits) < 40


def test_each_hit_carries_both_lane_scores_or_null_and_a_citation_snapshot() -> None:
    lanes = FakeLanes([("a", 0.8)], [("b", 4.0)], {"a": "alpha text", "b": "beta text"})
    outcome = retrieval(lanes).search(caller("docs"), SearchQuery(text="q"))
    assert isinstance(outcome, Found)
    by_id = {hit.chunk_id: hit for hit in outcome.hits}
    assert by_id["a"].vector_score == 0.8 and by_id["a"].lexical_score is None
    assert by_id["b"].lexical_score == 4.0 and by_id["b"].vector_score is None
    citation = by_id["a"].citation
    assert (citation.file_id, citation.version_id, citation.page, citation.heading_path) == ("f", "v", 2, ("Intro",))
    assert citation.excerpt == by_id["a"].excerpt == "alpha text"
    assert citation.retrieved_at == NOW
    assert outcome.vector_available


def test_a_failing_embedder_degrades_to_keyword_only_and_says_so() -> None:
    lanes = FakeLanes([("a", 0.9)], [("b", 2.0)], {})
    outcome = retrieval(lanes, FakeEmbedder(fails=True)).search(
        caller("docs"), SearchQuery(text="q", mode=SearchMode.SEMANTIC)
    )
    assert isinstance(outcome, Found)
    assert not outcome.vector_available
    assert [hit.chunk_id for hit in outcome.hits] == ["b"]


def test_keyword_mode_runs_only_the_keyword_lane() -> None:
    lanes = FakeLanes([("a", 0.9)], [("b", 2.0)], {})
    retrieval(lanes).search(caller("docs"), SearchQuery(text="q", mode=SearchMode.KEYWORD))
    assert [lane for lane, _ in lanes.asked] == ["keyword"]


def test_query_terms_are_lower_case_words_without_stopwords() -> None:
    # Given a query with capitals, stopwords, an identifier and a contraction, when its terms are taken
    terms = query_terms("Why didn't ERR-4021 stop THE checkout_flow?")
    # Then they are lower case runs of letters or digits, stopwords (and their pieces) gone
    assert terms == {"err", "4021", "stop", "checkout", "flow"}


def test_identifier_terms_are_codes_not_words() -> None:
    assert identifier_terms("why did ERR-4021 happen in Q3-2026 on v2.1?") == ["err-4021", "q3-2026", "v2.1"]
    assert identifier_terms("the quick brown fox") == []


def test_the_booster_promotes_an_exact_identifier_and_never_a_prefix_of_one() -> None:
    contents = {"a": "error ERR-40211 in the log", "b": "the outage: ERR-4021 again", "c": "nothing here"}
    assert boost_identifiers(["a", "c", "b"], contents, ["err-4021"]) == ["b", "a", "c"]
    assert boost_identifiers(["a", "c", "b"], contents, []) == ["a", "c", "b"]


def test_the_context_budget_keeps_a_prefix_of_the_ranking() -> None:
    # 4,500 characters each, cut to 2,000 per excerpt; each its own text (identical ones would collapse into one hit).
    bodies = {f"c{i}": f"text{i} " + "word " * 900 for i in range(6)}
    lanes = FakeLanes([(f"c{i}", 0.9) for i in range(6)], [], bodies)
    outcome = retrieval(lanes, context_budget_characters=5_000).search(caller("docs"), SearchQuery(text="q"))
    assert isinstance(outcome, Found)
    assert [hit.chunk_id for hit in outcome.hits] == ["c0", "c1"]
    assert outcome.truncated_by_budget
    assert all(len(hit.excerpt) <= 2_000 for hit in outcome.hits)


def test_an_excerpt_is_cut_on_a_word_boundary() -> None:
    body = "alpha " * 500
    excerpt = excerpt_of(body, 2_000)
    assert len(excerpt) <= 2_000
    assert excerpt.endswith("alpha")
    assert body.startswith(excerpt)


class SilentReranker:
    """A fake reranker with no opinion: it answers, ordering nothing."""

    model_id = "silent"
    depth = None
    metered = False
    in_process = True

    def rerank(self, query: str, candidates: Sequence[RerankCandidate]) -> Reranked:
        return Reranked.applied(self.model_id, (), candidates=len(candidates))


def test_a_reranker_with_no_opinion_leaves_fusion_order_and_never_empties_the_result() -> None:
    # Fused, b (high in both lanes) leads a (the vector lane's best, the keyword lane's weakest).
    lanes = FakeLanes([("a", 0.9), ("b", 0.85), ("c", 0.7)], [("b", 3.0), ("c", 2.9), ("a", 1.0)], {})
    outcome = retrieval(lanes, reranker=SilentReranker()).search(caller("docs"), SearchQuery(text="q"))
    assert isinstance(outcome, Found)
    assert [hit.chunk_id for hit in outcome.hits] == ["b", "a", "c"]


def test_the_booster_moves_chunks_for_codes_and_never_for_hyphenated_words_or_bare_numbers() -> None:
    # Given queries with codes, hyphenated words and numbers, when the booster picks what it moves chunks for:
    # a letter with a digit, or capitals joined by a hyphen, once each; never a word like "pro-inflammatory" or "10".
    assert boosted_identifiers("why did ERR-4021 happen in Q3-2026 on v2.1?") == ["err-4021", "q3-2026", "v2.1"]
    assert boosted_identifiers("is SKU-ABX in stock") == ["sku-abx"]
    assert boosted_identifiers("IL-6 and p53 rise; IL-6 falls") == ["il-6", "p53"]
    assert boosted_identifiers("pro-inflammatory cytokines rose 10 fold in-hospital in 2024") == []
    assert identifier_terms("pro-inflammatory cytokines rose 10 fold") == ["pro-inflammatory", "10"]


def test_a_hyphenated_word_in_the_query_leaves_fusion_order_under_the_booster() -> None:
    # b holds the query's hyphenated word verbatim but fuses last: the booster does not lift it.
    bodies = {"a": "cytokines rose in tumours", "b": "a pro-inflammatory diet", "c": "nothing"}
    lanes = FakeLanes([("a", 0.9)], [("a", 3.0), ("c", 2.0), ("b", 1.0)], bodies)
    outcome = retrieval(lanes).search(caller("docs"), SearchQuery(text="pro-inflammatory cytokines in tumours"))
    assert isinstance(outcome, Found)
    assert [hit.chunk_id for hit in outcome.hits] == ["a", "c", "b"]


def test_the_identifier_booster_lifts_the_chunk_with_the_exact_code_over_fusion_order() -> None:
    bodies = {"a": "the error page explains errors", "b": "incident ERR-4021 root cause", "c": "nothing"}
    lanes = FakeLanes([("a", 0.9)], [("a", 3.0), ("b", 2.0), ("c", 1.0)], bodies)
    outcome = retrieval(lanes).search(caller("docs"), SearchQuery(text="what caused ERR-4021"))
    assert isinstance(outcome, Found)
    assert [hit.chunk_id for hit in outcome.hits] == ["b", "a", "c"]
