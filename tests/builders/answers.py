"""Answers as the answer stores keep them, with every awkward part a stored answer can have (a box, regions, a heading
path, OCR confidence, floats that are not round in binary, text beyond ASCII): for the store's contract
(tests/contracts/answers.py) and the PostgreSQL adapter's own tests (tests/integration/test_answer_store.py)."""

import uuid
from datetime import UTC, datetime

from shared.domain.answers import (
    Answer,
    AnswerCitation,
    AnswerClaim,
    AnswerMethod,
    AnswerOutcome,
    ClaimKind,
    Confidence,
    ConfidenceBand,
    ConfidenceFactors,
    Refusal,
    RefusalReason,
    StoredAnswer,
)
from shared.domain.recognition import BoundingBox
from shared.domain.search import Citation, CitedKind, CitedRegion

CREATED = datetime(2026, 12, 1, 9, 30, 15, 123456, tzinfo=UTC)


def a_citation(collection: str = "docs", **fields: object) -> Citation:
    """A citation with every awkward part a snapshot can have: a box, regions, a heading path, OCR confidence,
    floats that are not round in binary, text beyond ASCII."""
    values: dict[str, object] = {
        "file_id": str(uuid.uuid4()),
        "version_id": str(uuid.uuid4()),
        "filename": "Überblick Q3 «final».pdf",
        "media_type": "application/pdf",
        "collection_id": collection,
        "page": 2,
        "page_end": 2,
        "box": BoundingBox(left=0.1, top=0.2 + 0.1, width=1 / 3, height=0.05),
        "regions": (CitedRegion(page=2, box=BoundingBox(left=0.1, top=0.3, width=0.25, height=0.0125)),),
        "heading_path": ("Finance", "Budget"),
        "kind": CitedKind.TRANSCRIPTION,
        "ocr_confidence": 0.8712345678901234,
        "excerpt": "The budget is 400 EUR a quarter — «approved».",
        "retrieved_at": datetime(2026, 12, 1, 9, 30, 14, 987654, tzinfo=UTC),
    }
    values.update(fields)
    return Citation.model_validate(values)


def an_answer(
    *, created_at: datetime = CREATED, question: str = "What is the budget?", collection: str = "docs"
) -> Answer:
    first = a_citation(collection)
    second = a_citation(collection, page=None, page_end=None, box=None, regions=(), ocr_confidence=None)
    return Answer(
        answer_id=str(uuid.uuid4()),
        question=question,
        outcome=AnswerOutcome.ANSWERED,
        method=AnswerMethod.GENERATED,
        claims=(
            # Citation numbers in the claim's own order, not sorted: the order is kept.
            AnswerClaim(text="The budget is 400 EUR a quarter.", citations=(2, 1), kind=ClaimKind.DIRECT, quote="400"),
            AnswerClaim(text="It was approved.", citations=(1,), kind=ClaimKind.INFERRED),
            AnswerClaim(text="It may rise next year.", kind=ClaimKind.INFERRED),
        ),
        citations=(
            AnswerCitation(number=1, chunk_id=f"{first.version_id}:3", score=0.1 + 0.2, citation=first),
            AnswerCitation(number=2, chunk_id=f"{second.version_id}:0", score=1e-7, citation=second),
        ),
        assumptions=("The quarter is a calendar quarter.",),
        needs_review=True,
        confidence=Confidence(
            band=ConfidenceBand.MEDIUM,
            score=0.6180339887498949,
            factors=ConfidenceFactors(
                top_retrieval_score=0.0327868852459016,
                direct_claim_coverage=2 / 3,
                citation_coverage=1.0,
                independent_documents=2,
                unsupported_claim_penalty=0.1,
                ambiguous_evidence_penalty=0.0,
                degraded_index_penalty=0.05,
            ),
        ),
        withheld=1,
        fallback=None,
        vector_available=False,
        model="anthropic.claude-test",
        prompt_version="answers-v1",
        index_version="0123456789abcdef",
        created_at=created_at,
    )


def a_refusal(*, created_at: datetime = CREATED) -> Answer:
    return Answer(
        answer_id=str(uuid.uuid4()),
        question="Who will win the match?",
        outcome=AnswerOutcome.REFUSED,
        method=None,
        confidence=Confidence(
            band=ConfidenceBand.LOW,
            score=0.0,
            factors=ConfidenceFactors(
                top_retrieval_score=0.0,
                direct_claim_coverage=0.0,
                citation_coverage=0.0,
                independent_documents=0,
                unsupported_claim_penalty=0.0,
                ambiguous_evidence_penalty=0.0,
                degraded_index_penalty=0.0,
            ),
        ),
        refusal=Refusal.of(RefusalReason.OUT_OF_SCOPE),
        fallback="no generator is configured",
        prompt_version="answers-v1",
        index_version="fedcba9876543210",
        created_at=created_at,
    )


def stored(tenant: str, answer: Answer, *, subject: str = "ann", key: str = "key-1") -> StoredAnswer:
    return StoredAnswer(
        tenant_id=tenant,
        subject=subject,
        cache_key=key,
        collections=frozenset({citation.citation.collection_id for citation in answer.citations}),
        answer=answer,
    )
