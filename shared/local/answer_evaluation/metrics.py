"""The answer evaluation's figures: pure functions over `Observation`s, each one question asked once (the
figures are defined in docs/answers.md, "Evaluation")."""

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from shared.domain.answers import AnswerOutcome
from shared.local.answer_evaluation.labels import RESTRICTED, Expectation, LabelledQuestion


@dataclass(frozen=True)
class CitedChunk:
    """One citation of an answer as the evaluation judged it."""

    number: int
    document: str  # filename (demo) or corpus id (SciFact); "?" when the file is not the asking tenant's
    collection_id: str
    gold: bool  # of a gold document
    gold_passage: bool  # a chunk holding a gold snippet (demo)
    resolvable: bool
    foreign: bool  # the file is not the asking tenant's


@dataclass(frozen=True)
class Observation:
    """One question asked once: by its own tenant's caller (`own`) or by the decoy tenant's."""

    question: LabelledQuestion
    own: bool
    outcome: AnswerOutcome
    refusal: str | None
    citations: tuple[CitedChunk, ...]
    claims: int  # claims of an evidence-only answer
    verbatim_claims: int
    milliseconds: float
    stages: dict[str, float] = field(default_factory=dict)
    # Per claim of an evidence-only answer, best first: its cosine with the question and the citations naming it
    # (the calibration derives every higher floor's answer from these).
    claim_scores: tuple[float, ...] = ()
    claim_citations: tuple[tuple[int, ...], ...] = ()

    @property
    def refused(self) -> bool:
        return self.outcome is AnswerOutcome.REFUSED


def _answerable(observations: Sequence[Observation]) -> list[Observation]:
    return [item for item in observations if item.own and item.question.expect is Expectation.ANSWERABLE]


def _share(hits: int, total: int) -> float | None:
    return round(hits / total, 4) if total else None


def recall_at(observations: Sequence[Observation], k: int) -> float | None:
    """Answerable own-tenant questions with a gold document among their first k citations (refused: a miss)."""
    answerable = _answerable(observations)
    found = sum(
        any(citation.gold for citation in sorted(item.citations, key=lambda c: c.number)[:k]) for item in answerable
    )
    return _share(found, len(answerable))


def gold_passage_recall(observations: Sequence[Observation]) -> float | None:
    """Answerable own-tenant questions with labelled snippets, one of whose citations holds a gold snippet."""
    labelled = [item for item in _answerable(observations) if any(gold.snippet for gold in item.question.gold)]
    return _share(sum(any(c.gold_passage for c in item.citations) for item in labelled), len(labelled))


def citation_precision(observations: Sequence[Observation]) -> float | None:
    """Cited chunks of gold documents / all cited chunks, pooled over answerable own-tenant answers that cite."""
    cited = [citation for item in _answerable(observations) if not item.refused for citation in item.citations]
    return _share(sum(citation.gold for citation in cited), len(cited))


def resolvability(observations: Sequence[Observation]) -> float | None:
    """Citations whose excerpt is at the cited version and location / all citations (every ask)."""
    cited = [citation for item in observations for citation in item.citations]
    return _share(sum(citation.resolvable for citation in cited), len(cited))


def verbatim_share(observations: Sequence[Observation]) -> float | None:
    """Claims of evidence-only answers verbatim in a chunk they cite / all such claims (every ask)."""
    return _share(sum(item.verbatim_claims for item in observations), sum(item.claims for item in observations))


def correctly_refused(item: Observation) -> bool:
    """Refused or not as the label says; an unauthorised question may also be answered from what the caller may
    read, so long as nothing of the restricted collection is cited."""
    if item.question.expect is Expectation.ANSWERABLE:
        return not item.refused
    if item.question.expect is Expectation.UNANSWERABLE:
        return item.refused
    return item.refused or not any(citation.collection_id == RESTRICTED for citation in item.citations)


def refusal_correctness(observations: Sequence[Observation], expect: Expectation | None = None) -> float | None:
    """Own-tenant questions (of the class `expect`, or all) whose refusal matches the label / all of them."""
    asked = [item for item in observations if item.own and (expect is None or item.question.expect is expect)]
    return _share(sum(correctly_refused(item) for item in asked), len(asked))


def cross_tenant_citations(observations: Sequence[Observation]) -> int:
    """Citations, over every ask, whose file is not the asking tenant's."""
    return sum(citation.foreign for item in observations for citation in item.citations)


def percentile(values: Sequence[float], share: float) -> float | None:
    """The nearest-rank percentile (share in (0, 1])."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * share // 1))
    return round(ordered[int(rank) - 1], 1)


def latency(observations: Sequence[Observation]) -> dict[str, Any]:
    """p50 / p95 of the own-tenant answers, and each stage's p50 (over the answers that ran it)."""
    own = [item for item in observations if item.own]
    stages: dict[str, list[float]] = {}
    for item in own:
        for name, spent in item.stages.items():
            stages.setdefault(name, []).append(spent)
    return {
        "p50_ms": percentile([item.milliseconds for item in own], 0.5),
        "p95_ms": percentile([item.milliseconds for item in own], 0.95),
        "stage_p50_ms": {name: percentile(values, 0.5) for name, values in stages.items()},
    }


def metrics(observations: Sequence[Observation]) -> dict[str, Any]:
    """Every figure of one set (docstring of this module)."""
    own = [item for item in observations if item.own]
    return {
        "questions": {expect.value: sum(item.question.expect is expect for item in own) for expect in Expectation},
        "recall@1": recall_at(observations, 1),
        "recall@3": recall_at(observations, 3),
        "recall@5": recall_at(observations, 5),
        "gold_passage_recall": gold_passage_recall(observations),
        "citation_precision": citation_precision(observations),
        "citation_resolvability": resolvability(observations),
        "citations_checked": sum(len(item.citations) for item in observations),
        "verbatim_share": verbatim_share(observations),
        "refusal_correctness": refusal_correctness(observations),
        "refusal_correctness_by_class": {
            expect.value: refusal_correctness(observations, expect) for expect in Expectation
        },
        "cross_tenant_citations": cross_tenant_citations(observations),
        "asked_by_other_tenant": sum(not item.own for item in observations),
        "latency": latency(observations),
    }


def sweep_row(name: str, parameter: str, value: float, observed: Sequence[Observation]) -> dict[str, Any]:
    """One row of a calibration sweep: the set, the parameter's value, and the figures it decides: refusal
    correctness (all and per class), recall@1/3, citation precision and claims per answer."""
    answered = [item for item in observed if item.own and item.claims]
    return {
        "set": name,
        parameter: value,
        "refusal_correctness": refusal_correctness(observed),
        "answerable": refusal_correctness(observed, Expectation.ANSWERABLE),
        "unanswerable": refusal_correctness(observed, Expectation.UNANSWERABLE),
        "recall@1": recall_at(observed, 1),
        "recall@3": recall_at(observed, 3),
        "citation_precision": citation_precision(observed),
        "claims_per_answer": round(sum(item.claims for item in answered) / len(answered), 2) if answered else None,
    }
