"""Fusion that knows what a lane knows: a question in a language the embedding model does not cover is fused with the
vector lane's weight for uncovered languages; a question in a covered language, or whose language is not clear, or
any question to a multilingual model, keeps the configured weight."""

import pytest

from shared.adapters.language_detection import Py3LangidDetector
from shared.domain.knowledge import RankedChunk
from shared.domain.search import Found, RetrievalTuning, SearchQuery, fuse, reciprocal_rank_fusion
from shared.services.authorization import ClaimsAuthorizationPolicy
from shared.services.retrieval import Retrieval
from tests.unit.retrieval_fakes import NOW, FakeEmbedder, FakeLanes, caller

pytestmark = pytest.mark.unit


class EnglishOnlyEmbedder(FakeEmbedder):
    """A fake embedder that declares, as MiniLM does, that it covers English alone."""

    languages = frozenset({"en"})


def retrieval(lanes: FakeLanes, embedder: FakeEmbedder) -> Retrieval:
    return Retrieval(
        authorization=ClaimsAuthorizationPolicy(),
        knowledge=lanes,
        vectors=lanes,
        keywords=lanes,
        embedder=embedder,
        tuning=RetrievalTuning(vector_weight=0.55, uncovered_vector_weight=0.1),
        languages=Py3LangidDetector(),
        clock=lambda: NOW,
    )


@pytest.mark.parametrize(
    ("question", "weight"),
    [
        ("How long is the notice period for the apartment?", 0.55),
        ("Wie lange ist die Kündigungsfrist für die Wohnung?", 0.1),
        ("租房的通知期限是多久？", 0.1),
        ("ما هي مدة الإشعار للشقة؟", 0.1),
        ("Какой срок уведомления о выселении?", 0.1),
        ("ERR-4021", 0.55),  # no language to tell: the configured weight
    ],
)
def test_an_english_only_model_s_lane_weighs_less_for_a_question_in_another_language(
    question: str, weight: float
) -> None:
    searching = retrieval(FakeLanes([], [], {}), EnglishOnlyEmbedder())
    assert searching.tuning_for(question).vector_weight == weight


def test_a_multilingual_model_keeps_its_weight_in_every_language() -> None:
    searching = retrieval(FakeLanes([], [], {}), FakeEmbedder())
    assert searching.tuning_for("Wie lange ist die Kündigungsfrist für die Wohnung?").vector_weight == 0.55


def test_the_keyword_lane_s_exact_match_leads_when_the_vector_lane_cannot_read_the_question() -> None:
    # Twelve documents: the vector lane (an English model reading German) ranks noise first; the keyword lane
    # finds the one chunk with the question's words.
    vector = [("v0:0", 0.95)] + [(f"v{n}:0", 0.70 - n * 0.005) for n in range(1, 12)]
    keyword = [("v7:0", 2.0)] + [(f"v{n}:0", 1.0) for n in range(12) if n != 7]
    lanes = FakeLanes(vector, keyword, {})
    german = "Wie lange ist die Kündigungsfrist für die Wohnung?"
    uncovered = retrieval(lanes, EnglishOnlyEmbedder()).search(caller("docs"), SearchQuery(text=german))
    covered = retrieval(lanes, FakeEmbedder()).search(caller("docs"), SearchQuery(text=german))
    assert isinstance(uncovered, Found) and isinstance(covered, Found)
    assert uncovered.hits[0].chunk_id == "v7:0"
    assert covered.hits[0].chunk_id != "v7:0"  # with the configured weight the vector lane's noise wins


def ranked(hits: list[tuple[str, float]]) -> list[RankedChunk]:
    return [RankedChunk(chunk_id=chunk_id, rank=rank, score=score) for rank, (chunk_id, score) in enumerate(hits, 1)]


def test_a_small_collection_fused_by_rank_weighs_an_uncovered_question_s_vector_lane_down_too() -> None:
    # Four documents: too few for z-scores, so reciprocal rank fuses them. The English model ranks a German
    # question's noise first and the answer last; the keyword lane ranks the answer first and the noise second.
    vector = [("noise:0", 0.93), ("other:0", 0.92), ("third:0", 0.90), ("answer:0", 0.61)]
    keyword = [("answer:0", 3.1), ("noise:0", 1.2)]
    lanes = FakeLanes(vector, keyword, {})
    german = "Wie lange ist die Kündigungsfrist für die Wohnung?"
    uncovered = retrieval(lanes, EnglishOnlyEmbedder())
    tuning = uncovered.tuning_for(german)
    assert tuning.question_uncovered and tuning.vector_weight == 0.1
    found = uncovered.search(caller("docs"), SearchQuery(text=german))
    assert isinstance(found, Found) and found.hits[0].chunk_id == "answer:0"
    # With equal weights (a multilingual model) the vector lane's first carries the fusion.
    covered = retrieval(lanes, FakeEmbedder()).search(caller("docs"), SearchQuery(text=german))
    assert isinstance(covered, Found) and covered.hits[0].chunk_id == "noise:0"
    # An English question keeps equal weights: the same rank fusion as before.
    english = uncovered.tuning_for("How long is the notice period for the apartment?")
    assert not english.question_uncovered
    both = [ranked(vector), ranked(keyword)]
    assert fuse(both, english) == reciprocal_rank_fusion(both, english.rrf_k)


def test_weighted_reciprocal_rank_needs_a_weight_per_lane() -> None:
    with pytest.raises(ValueError, match="2 lanes need 2 weights"):
        reciprocal_rank_fusion([ranked([("a:0", 1.0)]), ranked([("a:0", 1.0)])], 10, [1.0])
