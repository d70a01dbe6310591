"""The bodies of grounded answers (camelCase on the wire): `POST /v1/answer`, `GET /v1/answers/{id}`, feedback."""

from datetime import datetime

from pydantic import Field, ValidationError

from functions.views.base import ApiModel
from functions.views.filter_shape import FilterParameter
from functions.views.search import (
    CitationView,
    SearchFiltersBody,
    metadata_filter,
    search_filters,
)
from shared.domain.answers import (
    MAX_FEEDBACK_NOTE_CHARACTERS,
    MAX_QUESTION_CHARACTERS,
    Answer,
    AnswerFeedback,
    AnswerMethod,
    AnswerOutcome,
    AnswerRequest,
    ClaimKind,
    ConfidenceBand,
    FeedbackVerdict,
    RefusalReason,
)
from shared.domain.errors import InvalidRequest
from shared.domain.search import SearchMode


class AnswerRequestBody(ApiModel):
    question: str = Field(min_length=1, max_length=MAX_QUESTION_CHARACTERS)
    mode: SearchMode = SearchMode.HYBRID
    filters: SearchFiltersBody | None = None
    filter_: FilterParameter

    def to_request(self) -> AnswerRequest:
        where = metadata_filter(self.filter_)
        try:
            return AnswerRequest(question=self.question, mode=self.mode, filters=search_filters(self.filters, where))
        except ValidationError as error:
            raise InvalidRequest("; ".join(str(problem["msg"]) for problem in error.errors())) from error


class AnswerClaimView(ApiModel):
    text: str
    citations: list[int]
    # Derived from `citations` (a claim is supported exactly when a citation names it), never stored.
    supported: bool
    kind: ClaimKind
    quote: str | None


class AnswerCitationView(CitationView):
    """A numbered citation: the search citation snapshot of the chunk, its id and its retrieval score."""

    number: int
    chunk_id: str
    score: float


class AnswerHitView(ApiModel):
    """A piece of the evidence the answer was drawn from: where it is and its scores (`citation`: its number)."""

    chunk_id: str
    file_id: str
    version_id: str
    filename: str
    collection_id: str
    score: float
    vector_score: float | None
    lexical_score: float | None
    direct_subject: bool
    citation: int | None


class ConfidenceFactorsView(ApiModel):
    top_retrieval_score: float
    direct_claim_coverage: float
    citation_coverage: float
    independent_documents: int
    unsupported_claim_penalty: float
    ambiguous_evidence_penalty: float
    degraded_index_penalty: float


class ConfidenceView(ApiModel):
    band: ConfidenceBand
    score: float
    factors: ConfidenceFactorsView


class RefusalView(ApiModel):
    reason: RefusalReason
    sentence: str


class AnswerView(ApiModel):
    answer_id: str
    question: str
    outcome: AnswerOutcome
    # generated (a model's claims, validated) or extractive (sentences of the evidence, verbatim); null if refused.
    method: AnswerMethod | None
    claims: list[AnswerClaimView]
    citations: list[AnswerCitationView]
    assumptions: list[str]
    needs_review: bool
    confidence: ConfidenceView
    refusal: RefusalView | None
    # Citations left out because the caller can no longer read their source: their claims show as unsupported.
    withheld: int
    # The selected evidence with its retrieval scores, best first, cited or not.
    hits: list[AnswerHitView]
    # Why the answer is evidence only although answers may be generated (null when nothing fell back).
    fallback: str | None
    vector_available: bool
    model: str | None
    prompt_version: str
    index_version: str
    cached: bool
    created_at: datetime

    @classmethod
    def of(cls, answer: Answer) -> "AnswerView":
        body = answer.model_dump(exclude={"claims", "citations"})
        return cls.model_validate(
            {
                **body,
                "claims": [
                    {**claim.model_dump(), "supported": claim.supported, "citations": list(claim.citations)}
                    for claim in answer.claims
                ],
                "citations": [
                    {
                        **citation.citation.model_dump(),
                        "number": citation.number,
                        "chunk_id": citation.chunk_id,
                        "score": citation.score,
                    }
                    for citation in answer.citations
                ],
            }
        )


class FeedbackRequest(ApiModel):
    verdict: FeedbackVerdict
    note: str | None = Field(default=None, max_length=MAX_FEEDBACK_NOTE_CHARACTERS)
    citation: int | None = Field(default=None, ge=1, description="which citation is wrong (wrong_citation)")

    def to_feedback(self) -> AnswerFeedback:
        return AnswerFeedback(verdict=self.verdict, note=self.note, citation=self.citation)


class FeedbackView(ApiModel):
    feedback_id: str
    answer_id: str
