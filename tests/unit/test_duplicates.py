"""Identical texts collapsed into one hit (shared/domain/duplicates.py), and retrieval over fake lanes (named as fakes):
the copy kept, the others under `also_in`, the page counted in distinct texts."""

from datetime import UTC, datetime, timedelta

import pytest

from shared.domain.duplicates import MAX_ALSO_IN, collapse, text_sha256
from shared.domain.knowledge import ChunkLocation
from shared.domain.search import ChunkSnapshot, Found, SearchFilters, SearchMode, SearchQuery
from tests.unit.retrieval_fakes import FakeLanes, caller, retrieval

DAY = datetime(2026, 3, 1, tzinfo=UTC)


def snapshot(chunk_id: str, body: str, *, uploaded: int | None = 0, page: int = 1) -> ChunkSnapshot:
    return ChunkSnapshot(
        chunk_id=chunk_id,
        file_id=f"file-{chunk_id}",
        version_id=f"version-{chunk_id}",
        filename=f"{chunk_id}.pdf",
        media_type="application/pdf",
        collection_id="docs",
        location=ChunkLocation(page_start=page, page_end=page),
        heading_path=(),
        body=body,
        uploaded_at=DAY + timedelta(days=uploaded) if uploaded is not None else None,
    )


def test_the_text_key_is_the_sha256_of_the_utf8_body() -> None:
    assert text_sha256("a") == "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb"
    assert text_sha256("a ") != text_sha256("a")  # identical means identical: no folding of whitespace or case


def test_pairs_of_identical_texts_become_one_hit_each_at_the_best_copys_place() -> None:
    snapshots = {
        "a1": snapshot("a1", "alpha", uploaded=1),
        "a2": snapshot("a2", "alpha", uploaded=2),
        "b1": snapshot("b1", "beta", uploaded=1),
        "b2": snapshot("b2", "beta", uploaded=2),
        "c": snapshot("c", "gamma"),
    }
    scores = {"a1": (0.9,), "a2": (0.9,), "b2": (0.8,), "b1": (0.7,), "c": (0.6,)}  # evidence: one lane's score
    collapsed = collapse(["a1", "a2", "b2", "b1", "c"], snapshots, evidence=scores)
    assert [hit.chunk_id for hit in collapsed] == ["a1", "b2", "c"]
    # The best-ranked copy is kept even when it is the newer upload; the other is listed under it.
    assert [other.chunk_id for other in collapsed[1].others] == ["b1"]
    assert collapsed[2].others == ()


def test_of_copies_tied_on_score_the_oldest_upload_is_kept_whichever_the_ranking_put_first() -> None:
    snapshots = {
        "new": snapshot("new", "same words", uploaded=5),
        "old": snapshot("old", "same words", uploaded=1),
        "mid": snapshot("mid", "same words", uploaded=3),
    }
    scores = dict.fromkeys(snapshots, (0.5, 3.1804877619608916))
    # PostgreSQL's BM25 sums in no fixed order: the same text can score a rounding apart, and still ties.
    scores["new"] = (0.5, 3.180487761960891)
    for order in (["new", "old", "mid"], ["mid", "new", "old"], ["old", "mid", "new"]):
        (hit,) = collapse(order, snapshots, evidence=scores)
        assert hit.chunk_id == "old"
        assert [other.chunk_id for other in hit.others] == ["mid", "new"]


def test_equal_uploads_are_settled_by_chunk_id_and_undated_copies_come_last() -> None:
    snapshots = {
        "b": snapshot("b", "text", uploaded=1),
        "a": snapshot("a", "text", uploaded=1),
        "z": snapshot("z", "text", uploaded=None),
    }
    (hit,) = collapse(["z", "b", "a"], snapshots, evidence=dict.fromkeys(snapshots, (1.0,)))
    assert hit.chunk_id == "a"
    assert [other.chunk_id for other in hit.others] == ["b", "z"]


def test_a_tie_never_swaps_a_directly_named_copy_for_an_incidental_one() -> None:
    snapshots = {"named": snapshot("named", "text", uploaded=9), "older": snapshot("older", "text", uploaded=1)}
    evidence = {"named": (None, None, True), "older": (None, None, False)}
    (hit,) = collapse(["named", "older"], snapshots, evidence=evidence)
    assert hit.chunk_id == "named" and hit.ranked_as == "named"
    assert [other.chunk_id for other in hit.others] == ["older"]


def test_copies_found_elsewhere_join_the_list_once_oldest_first_and_bounded() -> None:
    snapshots = {"hit": snapshot("hit", "clause", uploaded=50), "x": snapshot("x", "other", uploaded=0)}
    elsewhere = [snapshot(f"e{i}", "clause", uploaded=i) for i in range(MAX_ALSO_IN + 5)]
    # The candidate itself coming back from the lookup, and a copy of a text no candidate has: neither is listed.
    elsewhere += [snapshots["hit"], snapshot("stranger", "not a candidate's text", uploaded=0)]
    hit, other = collapse(["hit", "x"], snapshots, evidence={"hit": (1.0,), "x": (0.5,)}, copies=elsewhere)
    assert hit.chunk_id == "hit"
    assert [place.chunk_id for place in hit.others] == [f"e{i}" for i in range(MAX_ALSO_IN)]
    assert other.others == ()


def duplicated_lanes() -> FakeLanes:
    """Three texts, each stored twice (an older and a newer upload) and ranked as pairs, then a fourth text."""
    ranking = [("a-new", 0.90), ("a-old", 0.90), ("b-old", 0.85), ("b-new", 0.85), ("c-old", 0.80), ("c-new", 0.80)]
    ranking.append(("d", 0.75))
    bodies = {chunk_id: f"the {chunk_id[0]} paragraph" for chunk_id, _ in ranking}
    lanes = FakeLanes(ranking, [], bodies)
    lanes.uploaded = {chunk_id: DAY + timedelta(days=1 if "old" in chunk_id else 2) for chunk_id, _ in ranking}
    return lanes


@pytest.mark.parametrize("mode", [SearchMode.HYBRID, SearchMode.SEMANTIC])
def test_a_page_of_hits_counts_distinct_texts_and_lists_the_other_copy_under_each(mode: SearchMode) -> None:
    lanes = duplicated_lanes()
    outcome = retrieval(lanes).search(caller("docs"), SearchQuery(text="paragraph", limit=3, mode=mode))
    assert isinstance(outcome, Found)
    assert [hit.chunk_id for hit in outcome.hits] == ["a-old", "b-old", "c-old"]
    assert len({hit.excerpt for hit in outcome.hits}) == 3
    for hit in outcome.hits:
        (other,) = hit.also_in
        assert other.file_id == f"f-{hit.chunk_id.replace('old', 'new')}"
        assert other.excerpt == hit.excerpt and other.page == 2


def test_the_keyword_lane_alone_collapses_as_well() -> None:
    lanes = FakeLanes([], [("x2", 7.0), ("x1", 7.0), ("y", 3.0)], {"x1": "same", "x2": "same", "y": "else"})
    outcome = retrieval(lanes).search(caller("docs"), SearchQuery(text="same", mode=SearchMode.KEYWORD))
    assert isinstance(outcome, Found)
    # Tied in the lane (reciprocal rank made them ranks 1 and 2): the smaller id, none being dated, in the first place.
    assert [hit.chunk_id for hit in outcome.hits] == ["x1", "y"]
    assert outcome.hits[0].score == 1 / 11 and outcome.hits[0].lexical_score == 7.0
    assert [place.file_id for place in outcome.hits[0].also_in] == ["f"]


def test_copies_beyond_the_candidates_are_looked_up_in_the_searched_collections_with_the_querys_filters() -> None:
    lanes = FakeLanes([("a", 0.9)], [], {"a": "the clause"})
    lanes.copies = [snapshot("far", "the clause", uploaded=0, page=7)]
    filters = SearchFilters(collections=frozenset({"docs", "hr"}), media_types=frozenset({"application/pdf"}))
    outcome = retrieval(lanes).search(caller("docs", "eng"), SearchQuery(text="clause", filters=filters))
    assert isinstance(outcome, Found)
    (place,) = outcome.hits[0].also_in
    assert place.file_id == "file-far" and place.page == 7
    # Asked in the collections both lanes searched, with the query's filters, for places besides the candidates.
    assert lanes.texts_asked == [(frozenset({"docs"}), filters, frozenset({"a"}))]


def test_the_cli_prints_each_other_place_under_the_hit(capsys: pytest.CaptureFixture[str]) -> None:
    from functions.views.search import search_view
    from shared.local.search_output import print_search_result

    lanes = FakeLanes([("a", 0.9)], [], {"a": "the clause"})
    lanes.copies = [snapshot("far", "the clause", uploaded=0, page=7)]
    query = SearchQuery(text="clause")
    outcome = retrieval(lanes).search(caller("docs"), query)
    print_search_result("clause", search_view(outcome, query).model_dump(mode="json", by_alias=True))
    printed = capsys.readouterr().out
    assert "also in far.pdf, p. 7 (file file-far version version-far)" in printed
    assert printed.count('"the clause"') == 1  # the text is quoted once, for the hit


def test_a_search_grouped_by_file_sends_each_hits_other_places_as_places() -> None:
    from functions.views.search import search_view

    # Given a hit whose text is stored elsewhere too
    lanes = FakeLanes([("a", 0.9)], [], {"a": "the clause"})
    lanes.copies = [snapshot("far", "the clause", uploaded=0, page=7)]
    query = SearchQuery(text="clause")
    outcome, groups = retrieval(lanes).search_by_file(caller("docs"), query, per_file=3)
    # When it is sent grouped by file, the group's hit lists the other place as the ungrouped hit does
    sent = search_view(outcome, query, groups=groups).model_dump(mode="json", by_alias=True)
    [group] = sent["groups"]
    assert group["hits"] == sent["hits"]
    assert [place["fileId"] for place in group["hits"][0]["alsoIn"]] == ["file-far"]
