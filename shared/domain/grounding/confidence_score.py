"""The confidence band of an answer, with the factors it was computed from (never a model's opinion of itself)."""

from collections.abc import Sequence

from shared.domain.answers import (
    AnswerCitation,
    AnswerClaim,
    ClaimKind,
    Confidence,
    ConfidenceBand,
    ConfidenceFactors,
    Evidence,
)
from shared.domain.search import CitedKind
from shared.domain.similarity import SimilarityScale

HIGH_BAND, MEDIUM_BAND = 0.75, 0.5


def top_retrieval(evidence: Sequence[Evidence], *, lexical_coverage: float, scale: SimilarityScale) -> float:
    """The best semantic score mapped onto [0, 1] (keyword only: the share of the question's words in the best
    piece). The semantic lane's scores are (cosine + 1) / 2: at the model's `unrelated` a best chunk is barely related
    (the semantic floor), at its `close` a close paraphrase; that range maps onto [0, 1]."""
    vector_scores = [piece.vector_score for piece in evidence if piece.vector_score is not None]
    if not vector_scores:
        return round(lexical_coverage, 4)
    position = (max(vector_scores) - scale.unrelated) / (scale.close - scale.unrelated)
    return round(min(1.0, max(0.0, position)), 4)


def confidence_of(
    *,
    top: float,
    vector_available: bool,
    ambiguous: bool,
    claims: Sequence[AnswerClaim],
    citations: Sequence[AnswerCitation],
    extractive: bool,
) -> Confidence:
    """The band from retrieval and validation facts only (never a model's opinion of itself):

    score = 0.35·top retrieval + 0.25·direct-claim coverage + 0.2·citation coverage + 0.2·min(documents, 3)/3
            - unsupported-claim penalty (0.15 each, at most 0.45) - ambiguous-evidence penalty (0.15)
            - degraded-index penalty (0.2 lexical only; 0.1 when a cited passage is OCR read below 0.8 or a
              vision model's description).
    HIGH ≥ 0.75, MEDIUM ≥ 0.5, else LOW; an extractive answer is passages, not a composed answer: at most MEDIUM.
    """
    total = len(claims)
    supported = [claim for claim in claims if claim.supported]
    direct = [claim for claim in supported if claim.kind is not ClaimKind.INFERRED]
    direct_coverage = len(direct) / total if total else 0.0
    citation_coverage = len(supported) / total if total else 0.0
    documents = len({citation.citation.file_id for citation in citations})
    unsupported_penalty = min(0.45, 0.15 * (total - len(supported)))
    ambiguous_penalty = 0.15 if ambiguous else 0.0
    degraded = 0.2 if not vector_available else 0.0
    if any(
        (
            citation.citation.kind is CitedKind.TRANSCRIPTION
            and (citation.citation.ocr_confidence or citation.citation.speech_confidence or 0) < 0.8
        )
        or citation.citation.kind is CitedKind.DESCRIPTION
        for citation in citations
    ):
        degraded += 0.1
    score = (
        0.35 * top
        + 0.25 * direct_coverage
        + 0.2 * citation_coverage
        + 0.2 * min(documents, 3) / 3
        - unsupported_penalty
        - ambiguous_penalty
        - degraded
    )
    score = round(max(0.0, min(1.0, score)), 4)
    if score >= HIGH_BAND:
        band = ConfidenceBand.MEDIUM if extractive else ConfidenceBand.HIGH
    else:
        band = ConfidenceBand.MEDIUM if score >= MEDIUM_BAND else ConfidenceBand.LOW
    return Confidence(
        band=band,
        score=score,
        factors=ConfidenceFactors(
            top_retrieval_score=round(top, 4),
            direct_claim_coverage=round(direct_coverage, 4),
            citation_coverage=round(citation_coverage, 4),
            independent_documents=documents,
            unsupported_claim_penalty=round(unsupported_penalty, 4),
            ambiguous_evidence_penalty=ambiguous_penalty,
            degraded_index_penalty=round(degraded, 4),
        ),
    )


def confidence(
    *,
    claims: Sequence[AnswerClaim],
    citations: Sequence[AnswerCitation],
    evidence: Sequence[Evidence],
    vector_available: bool,
    ambiguous: bool,
    extractive: bool,
    lexical_coverage: float,
    scale: SimilarityScale,
) -> Confidence:
    """confidence_of, with the top retrieval factor read off the evidence on the embedding model's `scale`."""
    return confidence_of(
        top=top_retrieval(evidence, lexical_coverage=lexical_coverage, scale=scale),
        vector_available=vector_available,
        ambiguous=ambiguous,
        claims=claims,
        citations=citations,
        extractive=extractive,
    )
