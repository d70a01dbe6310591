"""The answer evaluation's pure parts (shared/local/answer_evaluation/): the metrics over observations built by
hand, the labelled sets and the per-ask JSON, none of them needing a stack."""

import pytest

from shared.domain.answers import AnswerOutcome
from shared.domain.similarity import E5_SCALE, MINILM_SCALE, SimilarityScale
from shared.local.answer_evaluation.labels import (
    RESTRICTED,
    Expectation,
    Gold,
    LabelledQuestion,
    decoy_dataset,
    demo_questions,
    encyclopedia_dataset,
    encyclopedia_questions,
    load_labels,
    scifact_questions,
)
from shared.local.answer_evaluation.metrics import (
    CitedChunk,
    Observation,
    citation_precision,
    correctly_refused,
    cross_tenant_citations,
    gold_passage_recall,
    latency,
    metrics,
    percentile,
    recall_at,
    refusal_correctness,
    resolvability,
    sweep_row,
    verbatim_share,
)
from shared.local.answer_evaluation.report import observations_json
from shared.local.answer_evaluation.runner import CALIBRATION_FLOORS, calibration_floors
from shared.local.evaluation import Dataset


def cited(
    number: int,
    gold: bool,
    *,
    passage: bool = False,
    resolvable: bool = True,
    foreign: bool = False,
    collection: str = "demo",
) -> CitedChunk:
    return CitedChunk(number, "doc", collection, gold, passage, resolvable, foreign)


def question(expect: Expectation, snippet: str | None = "s") -> LabelledQuestion:
    return LabelledQuestion(
        "q", "why?", expect, (Gold("doc", snippet),) if expect is not Expectation.UNANSWERABLE else ()
    )


def observed(
    expect: Expectation,
    citations: tuple[CitedChunk, ...] = (),
    *,
    refused: bool = False,
    own: bool = True,
    claims: int = 0,
    verbatim: int = 0,
    milliseconds: float = 10.0,
    scores: tuple[float, ...] = (),
    claim_citations: tuple[tuple[int, ...], ...] = (),
) -> Observation:
    return Observation(
        question=question(expect),
        own=own,
        outcome=AnswerOutcome.REFUSED if refused else AnswerOutcome.EVIDENCE_ONLY,
        refusal="no_match" if refused else None,
        citations=citations,
        claims=claims,
        verbatim_claims=verbatim,
        milliseconds=milliseconds,
        stages={"retrieve": milliseconds / 2},
        claim_scores=scores,
        claim_citations=claim_citations,
    )


ANSWERABLE, UNANSWERABLE, UNAUTHORISED = Expectation.ANSWERABLE, Expectation.UNANSWERABLE, Expectation.UNAUTHORISED


def test_recall_counts_a_gold_document_among_the_first_k_citations_and_a_refusal_as_a_miss() -> None:
    items = [
        observed(ANSWERABLE, (cited(1, True), cited(2, False))),
        observed(ANSWERABLE, (cited(2, True), cited(1, False))),  # by number, not by list order
        observed(ANSWERABLE, (cited(1, False), cited(2, False), cited(3, False), cited(4, True))),
        observed(ANSWERABLE, refused=True),
        observed(UNANSWERABLE, (cited(1, True),)),  # not answerable: not counted
        observed(ANSWERABLE, (cited(1, True),), own=False),  # the other tenant's ask: not counted
    ]
    assert recall_at(items, 1) == 0.25
    assert recall_at(items, 3) == 0.5
    assert recall_at(items, 5) == 0.75
    assert recall_at([], 1) is None


def test_citation_precision_pools_the_cited_chunks_of_answerable_answers() -> None:
    items = [
        observed(ANSWERABLE, (cited(1, True), cited(2, False), cited(3, True))),
        observed(ANSWERABLE, (cited(1, True),)),
        observed(UNAUTHORISED, (cited(1, False),)),
    ]
    assert citation_precision(items) == 0.75


def test_gold_passage_recall_needs_a_cited_chunk_holding_the_snippet() -> None:
    items = [observed(ANSWERABLE, (cited(1, True, passage=True),)), observed(ANSWERABLE, (cited(1, True),))]
    assert gold_passage_recall(items) == 0.5


def test_resolvability_verbatim_share_and_cross_tenant_citations_cover_every_ask() -> None:
    items = [
        observed(ANSWERABLE, (cited(1, True), cited(2, False, resolvable=False)), claims=3, verbatim=3),
        observed(UNANSWERABLE, (cited(1, False, foreign=True),), own=False, claims=1, verbatim=0),
    ]
    assert resolvability(items) == pytest.approx(2 / 3, abs=1e-4)
    assert verbatim_share(items) == 0.75
    assert cross_tenant_citations(items) == 1
    assert verbatim_share([observed(UNANSWERABLE, refused=True)]) is None


def test_refusal_correctness_follows_the_label_and_an_unauthorised_question_may_not_cite_the_restricted() -> None:
    assert correctly_refused(observed(ANSWERABLE, (cited(1, True),)))
    assert not correctly_refused(observed(ANSWERABLE, refused=True))
    assert correctly_refused(observed(UNANSWERABLE, refused=True))
    assert not correctly_refused(observed(UNANSWERABLE, (cited(1, False),)))
    assert correctly_refused(observed(UNAUTHORISED, refused=True))
    assert correctly_refused(observed(UNAUTHORISED, (cited(1, False),)))
    assert not correctly_refused(observed(UNAUTHORISED, (cited(1, False, collection=RESTRICTED),)))
    items = [
        observed(ANSWERABLE, (cited(1, True),)),
        observed(ANSWERABLE, refused=True),
        observed(UNANSWERABLE, refused=True),
        observed(UNANSWERABLE, (cited(1, False),), own=False),  # another tenant's ask: not scored
    ]
    assert refusal_correctness(items) == pytest.approx(2 / 3, abs=1e-4)
    assert refusal_correctness(items, ANSWERABLE) == 0.5
    assert refusal_correctness(items, UNANSWERABLE) == 1.0
    assert refusal_correctness(items, UNAUTHORISED) is None


def test_latency_is_nearest_rank_over_own_asks_with_each_stage() -> None:
    assert percentile([5.0, 1.0, 3.0, 2.0, 4.0], 0.5) == 3.0
    assert percentile([float(value) for value in range(1, 101)], 0.95) == 95.0
    assert percentile([], 0.5) is None
    items = [observed(ANSWERABLE, milliseconds=value) for value in (10.0, 20.0, 30.0)]
    items.append(observed(ANSWERABLE, own=False, milliseconds=1000.0))
    measured = latency(items)
    assert (measured["p50_ms"], measured["p95_ms"]) == (20.0, 30.0)
    assert measured["stage_p50_ms"] == {"retrieve": 10.0}


def test_a_sweep_row_names_its_parameter_and_the_figures_it_decides() -> None:
    items = [
        observed(ANSWERABLE, (cited(1, True), cited(2, False)), claims=2, verbatim=2),
        observed(ANSWERABLE, (cited(1, True),), claims=1, verbatim=1),
        observed(UNANSWERABLE, refused=True),
        observed(UNANSWERABLE, (cited(1, False),), claims=1, verbatim=1),
    ]
    row = sweep_row("demo", "margin", 0.05, items)
    assert row["set"] == "demo" and row["margin"] == 0.05
    assert (row["answerable"], row["unanswerable"], row["refusal_correctness"]) == (1.0, 0.5, 0.75)
    assert (row["recall@1"], row["citation_precision"]) == (1.0, round(2 / 3, 4))
    assert row["claims_per_answer"] == round(4 / 3, 2)
    assert sweep_row("demo", "floor", 0.3, [observed(UNANSWERABLE, refused=True)])["claims_per_answer"] is None


def test_metrics_gathers_every_figure_and_counts_the_questions_of_each_class_once() -> None:
    items = [
        observed(ANSWERABLE, (cited(1, True), cited(2, False, foreign=True)), claims=2, verbatim=2),
        observed(ANSWERABLE, (cited(1, True),), own=False),
        observed(UNANSWERABLE, refused=True),
    ]
    figures = metrics(items)
    assert figures["questions"] == {"answerable": 1, "unanswerable": 1, "unauthorised": 0}
    assert (figures["recall@1"], figures["citation_precision"], figures["verbatim_share"]) == (1.0, 0.5, 1.0)
    assert (figures["citations_checked"], figures["cross_tenant_citations"], figures["asked_by_other_tenant"]) == (
        3,
        1,
        1,
    )
    assert figures["refusal_correctness_by_class"] == {"answerable": 1.0, "unanswerable": 1.0, "unauthorised": None}


def test_each_ask_as_json_names_its_question_its_cited_documents_and_whether_it_was_right() -> None:
    own, other = observed(ANSWERABLE, (cited(1, True),)), observed(UNANSWERABLE, refused=True, own=False)
    first, second = observations_json([own, other])
    assert (first["id"], first["expect"], first["correct"], first["cited"]) == ("q", "answerable", True, ["doc"])
    assert second["correct"] is None  # another tenant's ask is not scored
    assert not {"question", "citations", "stages", "claim_citations"} & set(first)


SCIFACT = Dataset(
    corpus={},
    queries={f"{n}": f"claim {n}" for n in range(10)},
    # Claims 0 and 1 share a gold document; every claim also has an ungraded one.
    qrels={f"{n}": {f"d{max(n, 1)}": 1, f"z{n}": 0} for n in range(10)},
)
LABELS = {"scifact": {"seed": 3, "answerable": 3, "unauthorised": 2, "unanswerable": ["Who won in 1900?"]}}


def test_the_scifact_sample_is_seeded_and_no_unauthorised_gold_is_an_answerable_claims() -> None:
    questions = scifact_questions(SCIFACT, LABELS)
    assert questions == scifact_questions(SCIFACT, LABELS)
    by_class = {expect: [q for q in questions if q.expect is expect] for expect in Expectation}
    assert [len(by_class[expect]) for expect in Expectation] == [3, 1, 2]
    assert by_class[UNANSWERABLE][0] == LabelledQuestion("n01", "Who won in 1900?", UNANSWERABLE)
    answerable_gold = {gold.document for q in by_class[ANSWERABLE] for gold in q.gold}
    assert all(gold.document not in answerable_gold for q in by_class[UNAUTHORISED] for gold in q.gold)
    assert all(gold.document == f"d{max(int(q.id[1:]), 1)}" for q in questions for gold in q.gold)  # graded > 0
    assert len(scifact_questions(SCIFACT, LABELS, answerable=1)) == 1 + 1 + 2


def test_the_labels_file_gives_the_demo_questions_and_the_decoy_corpus() -> None:
    labels = load_labels()
    questions = demo_questions(labels)
    assert questions and all(q.expect is not UNANSWERABLE or q.gold == () for q in questions)
    assert all(isinstance(gold, Gold) for q in questions for gold in q.gold)
    assert set(decoy_dataset(labels).corpus) == set(labels["decoy"]["documents"])


def test_the_calibration_sweeps_sentence_floors_around_the_embedding_model_s_own() -> None:
    assert calibration_floors(MINILM_SCALE) == CALIBRATION_FLOORS == (0.2, 0.25, 0.3, 0.35, 0.4, 0.45)
    assert calibration_floors(E5_SCALE) == (0.7, 0.75, 0.8, 0.85, 0.9, 0.95)
    assert max(calibration_floors(SimilarityScale(unrelated=0.9, close=0.99, sentence=0.95))) == 1.0


def test_the_encyclopedia_set_is_half_unanswerable_and_each_gold_snippet_is_in_its_article() -> None:
    labels = load_labels()
    questions = encyclopedia_questions(labels)
    articles = encyclopedia_dataset(labels).corpus
    answerable = [q for q in questions if q.expect is ANSWERABLE]
    assert len(answerable) * 2 == len(questions) and len({q.id for q in questions}) == len(questions)
    assert all(q.gold == () for q in questions if q.expect is not ANSWERABLE)
    for item in answerable:
        (gold,) = item.gold
        assert gold.snippet and gold.snippet in articles[gold.document][1], item.id
