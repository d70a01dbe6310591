"""Fusion of the two lanes: z-scores per document (the default) and reciprocal rank, and the one function
search and the evaluation both call."""

import pytest

from shared.domain.knowledge import RankedChunk
from shared.domain.search import (
    Fusion,
    RetrievalTuning,
    fuse,
    reciprocal_rank_fusion,
    version_of,
    zscore_fusion,
)


def lane(*hits: tuple[str, float]) -> list[RankedChunk]:
    return [RankedChunk(chunk_id=chunk_id, rank=rank, score=score) for rank, (chunk_id, score) in enumerate(hits, 1)]


def order(fused: list[tuple[str, float]]) -> list[str]:
    return [chunk_id for chunk_id, _ in fused]


def test_a_chunk_id_names_its_version() -> None:
    assert version_of("0b7c:12") == "0b7c"
    assert version_of("plain") == "plain"


def test_scores_are_standardised_per_lane_so_neither_scale_dominates() -> None:
    # BM25 scores are tens, cosines below one: the same shape in each lane counts the same.
    vector = lane(("a:0", 0.90), ("b:0", 0.80), ("c:0", 0.70))
    keyword = lane(("c:0", 30.0), ("b:0", 20.0), ("a:0", 10.0))
    assert dict(zscore_fusion([vector, keyword], [0.5, 0.5])) == pytest.approx({"a:0": 1.0, "b:0": 1.0, "c:0": 1.0})
    # The weight leans on one lane.
    assert order(zscore_fusion([vector, keyword], [0.8, 0.2])) == ["a:0", "b:0", "c:0"]
    assert order(zscore_fusion([vector, keyword], [0.2, 0.8])) == ["c:0", "b:0", "a:0"]


def test_ties_keep_the_order_of_first_appearance() -> None:
    # z: a +1 and b -1 in the vector lane, the reverse in the keyword lane: both fuse to exactly the same.
    vector = lane(("a:0", 1.0), ("b:0", 0.0))
    keyword = lane(("b:0", 3.0), ("a:0", 1.0))
    assert zscore_fusion([vector, keyword], [0.5, 0.5]) == [("a:0", 1.0), ("b:0", 1.0)]
    assert zscore_fusion([keyword, vector], [0.5, 0.5]) == [("b:0", 1.0), ("a:0", 1.0)]


def test_a_chunk_a_lane_missed_scores_below_that_lanes_weakest_and_the_scale_runs_from_unfound_to_best() -> None:
    vector = lane(("a:0", 0.9), ("b:0", 0.7))  # z: a +1, b -1
    keyword = lane(("b:0", 6.0), ("c:0", 4.0), ("d:0", 2.0))  # z: b +s, c 0, d -s
    s = 2 / (8 / 3) ** 0.5
    unfound_vector, unfound_keyword = -1 - 0.5, -s - 0.5
    raw = {
        "a:0": 0.5 * 1 + 0.5 * unfound_keyword,
        "b:0": 0.5 * -1 + 0.5 * s,
        "c:0": 0.5 * unfound_vector + 0.5 * 0,
        "d:0": 0.5 * unfound_vector + 0.5 * -s,
    }
    zero = 0.5 * (unfound_vector - 1) + 0.5 * (unfound_keyword - 1)  # a standard deviation below a miss
    fused = zscore_fusion([vector, keyword], [0.5, 0.5], missed=0.5)
    assert order(fused) == ["b:0", "a:0", "c:0", "d:0"]
    assert dict(fused) == pytest.approx({chunk: (value - zero) / (raw["b:0"] - zero) for chunk, value in raw.items()})
    assert fused[0][1] == 1.0
    assert all(score > 0 for _, score in fused)


def test_being_a_lanes_only_document_counts_though_it_has_no_spread() -> None:
    # An exact name only one document holds: the keyword lane's only hit. The semantic lane prefers another
    # (OCR noise, say); the exact match must still lift its document, not score as a miss.
    vector = lane(("faded:0", 0.82), ("remittance:0", 0.78), ("dashboard:0", 0.70))
    keyword = lane(("remittance:0", 7.5), ("remittance:1", 3.0))
    assert order(zscore_fusion([vector, keyword], [0.55, 0.45]))[0] == "remittance:0"
    flat = lane(("a:0", 0.8), ("b:0", 0.8))  # no spread: both found alike
    assert order(zscore_fusion([flat, lane(("b:0", 5.0))], [0.5, 0.5])) == ["b:0", "a:0"]


def test_by_default_a_lanes_weakest_counts_as_much_as_missed_and_missed_can_count_below_it() -> None:
    vector = lane(("a:0", 0.9), ("b:0", 0.5), ("c:0", 0.1))
    keyword = lane(("c:0", 9.0), ("b:0", 1.0))  # a is missed: scored as the weakest, b
    fused = dict(zscore_fusion([vector, keyword], [0.5, 0.5]))
    assert fused["a:0"] > fused["b:0"]
    below = dict(zscore_fusion([vector, keyword], [0.5, 0.5], missed=5.0))
    assert below["a:0"] < below["b:0"]


def test_documents_rank_by_their_best_chunk_per_lane_and_their_chunks_by_their_own_score() -> None:
    # Document v: its first chunk is the vector lane's best, its second the keyword lane's best.
    vector = lane(("v:0", 0.9), ("w:0", 0.8), ("v:1", 0.5))
    keyword = lane(("v:1", 9.0), ("w:0", 8.0), ("v:0", 1.0))
    fused = zscore_fusion([vector, keyword], [0.5, 0.5])
    # v, best in both lanes, leads; its chunk v:1 (better fused on its own than v:0) carries it, and
    # v:0 keeps its own, weaker, score, below w.
    assert order(fused) == ["v:1", "w:0", "v:0"]
    assert [score for _, score in fused] == sorted((score for _, score in fused), reverse=True)


def test_a_long_documents_weaker_chunks_do_not_crowd_out_the_next_document() -> None:
    vector = lane(("long:0", 0.95), ("other:0", 0.90), ("long:1", 0.60), ("long:2", 0.59), ("long:3", 0.58))
    assert order(zscore_fusion([vector], [1.0])) == ["long:0", "other:0", "long:1", "long:2", "long:3"]


def test_the_same_lanes_give_the_same_ranking_every_time() -> None:
    vector = lane(*((f"d{i % 7}:{i}", 0.9 - (i % 5) * 0.01) for i in range(30)))
    keyword = lane(*((f"d{i % 4}:{i}", 10.0 - (i % 3)) for i in range(20)))
    first = zscore_fusion([vector, keyword], [0.5, 0.5])
    assert all(zscore_fusion([vector, keyword], [0.5, 0.5]) == first for _ in range(5))
    assert len(first) == len({hit.chunk_id for hit in vector + keyword})


def test_one_lane_alone_keeps_its_own_order() -> None:
    keyword = lane(("a:0", 5.0), ("b:0", 3.0), ("c:0", 1.0))
    alone = zscore_fusion([[], keyword], [0.5, 0.5])
    assert order(alone) == ["a:0", "b:0", "c:0"]
    assert alone[0][1] == 1.0 and alone[-1][1] > 0
    assert order(zscore_fusion([keyword], [1.0])) == ["a:0", "b:0", "c:0"]
    # A keyword-only search when the weight is all on the vector lane still ranks by the keyword lane.
    assert order(fuse([[], keyword], RetrievalTuning(vector_weight=1.0))) == ["a:0", "b:0", "c:0"]
    # One hit, or equal scores: no spread to standardise by; all are the best.
    assert zscore_fusion([lane(("a:0", 0.7))], [1.0]) == [("a:0", 1.0)]
    assert zscore_fusion([lane(("b:0", 2.0), ("a:0", 2.0))], [1.0]) == [("b:0", 1.0), ("a:0", 1.0)]
    # Every returned chunk is above the scale's 0, the weakest too.
    assert all(score > 0 for _, score in zscore_fusion([lane(("a:0", 9.0), ("b:0", 1.0))], [1.0]))


def test_no_lane_found_anything() -> None:
    assert zscore_fusion([[], []], [0.5, 0.5]) == []
    assert zscore_fusion([], []) == []


def test_each_lane_needs_a_weight_and_a_miss_is_never_above_the_weakest() -> None:
    with pytest.raises(ValueError, match="2 lanes need 2 weights"):
        zscore_fusion([lane(("a:0", 1.0)), []], [1.0])
    with pytest.raises(ValueError, match="missed must be at least 0"):
        zscore_fusion([lane(("a:0", 1.0))], [1.0], missed=-1)
    # However far below a miss is put, every returned chunk stays above the scale's 0.
    disagreeing = zscore_fusion(
        [lane(("a:0", 0.9), ("b:0", 0.1)), lane(("c:0", 9.0), ("d:0", 1.0))], [0.5, 0.5], missed=3
    )
    assert disagreeing[0][1] == 1.0 and all(score > 0 for _, score in disagreeing)


def test_fuse_follows_the_tuning_and_keeps_reciprocal_rank_available() -> None:
    vector = lane(("a:0", 0.9), ("b:0", 0.8))
    keyword = lane(("c:0", 9.0), ("b:0", 5.0))
    rrf = RetrievalTuning(fusion=Fusion.RRF, rrf_k=60)
    assert fuse([vector, keyword], rrf) == reciprocal_rank_fusion([vector, keyword], 60)
    assert RetrievalTuning().fusion is Fusion.ZSCORE
    zscore = RetrievalTuning(vector_weight=0.7)
    wide_vector = lane(*((f"d{n}:0", 0.9 - n / 100) for n in range(6)))
    wide_keyword = lane(*((f"d{n}:0", 9.0 - n) for n in range(5, -1, -1)))
    assert fuse([wide_vector, wide_keyword], zscore) == zscore_fusion([wide_vector, wide_keyword], [0.7, 1 - 0.7])
    # Two documents are no sample: the query is fused by rank.
    assert fuse([vector, keyword], zscore) == reciprocal_rank_fusion([vector, keyword], zscore.rrf_k)


def test_a_small_collections_near_tie_does_not_outweigh_the_other_lanes_exact_match() -> None:
    # The e2e case: two scans nearly tie in the semantic lane; only one holds the name the query gives.
    vector = lane(("faded:0", 0.636), ("remittance:1", 0.620))
    keyword = lane(("remittance:1", 2.74))
    assert order(fuse([vector, keyword], RetrievalTuning()))[0] == "remittance:1"
