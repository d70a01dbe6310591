"""Grounded answers: the types every stage shares (docs/answers.md).

A question is answered only from evidence Quire retrieved and stored: the model (when there is one) drafts
claims that name evidence ids and quote spans of them; the server validates every claim against that
evidence, numbers the citations itself, and builds them from stored snapshots. Nothing the model says about
names, pages or places is kept. Without a model (always locally), the answer is extractive: sentences of the
evidence itself, each a claim citing the block it came from.

Groundedness is derived, never stored: a claim is supported exactly when some citation names it, so a
citation withheld at assembly (the caller can no longer read its source) leaves its claim honestly unsupported.
"""

from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field, model_validator

from shared.domain.search import ChunkSnapshot, Citation, SearchFilters, SearchMode

MAX_QUESTION_CHARACTERS = 2_000
MAX_CLAIMS = 12
MAX_CLAIM_CHARACTERS = 600
MAX_FEEDBACK_NOTE_CHARACTERS = 2_000


class AnswerOutcome(StrEnum):
    ANSWERED = "answered"  # a model drafted it; every kept claim validated against its evidence
    EVIDENCE_ONLY = "evidence_only"  # extractive: sentences of the evidence, verbatim, each cited
    REFUSED = "refused"  # no answer text at all; `refusal` says why


class AnswerMethod(StrEnum):
    GENERATED = "generated"
    EXTRACTIVE = "extractive"


class RefusalReason(StrEnum):
    NO_ACCESS = "no_access"
    NO_MATCH = "no_match"
    BELOW_FLOOR = "below_floor"
    INSUFFICIENT_EVIDENCE = "insufficient_evidence"
    CONFLICTING_EVIDENCE = "conflicting_evidence"
    OUT_OF_SCOPE = "out_of_scope"

    @property
    def sentence(self) -> str:
        return _REFUSAL_SENTENCES[self]


_REFUSAL_SENTENCES = {
    RefusalReason.NO_ACCESS: "You have access to no collection this question could be answered from.",
    RefusalReason.NO_MATCH: "Nothing in your collections matches that question.",
    RefusalReason.BELOW_FLOOR: "Some documents are related, but none closely enough to answer from. Try the exact"
    " words or an identifier from the document.",
    RefusalReason.INSUFFICIENT_EVIDENCE: "The documents found do not say enough to answer that; the closest"
    " passages are not an answer to it.",
    RefusalReason.CONFLICTING_EVIDENCE: "The documents disagree on this: cited sources give different figures or"
    " dates for the same thing, so no single answer can be given. Read the sources side by side.",
    RefusalReason.OUT_OF_SCOPE: "That is not a question about your documents: answers come only from what is"
    " stored in your collections.",
}


class Refusal(BaseModel):
    model_config = ConfigDict(frozen=True)

    reason: RefusalReason
    sentence: str

    @classmethod
    def of(cls, reason: RefusalReason) -> "Refusal":
        return cls(reason=reason, sentence=reason.sentence)


class AnswerRequest(BaseModel):
    """A question, with the same narrowing a search takes (filters apply inside every lane)."""

    model_config = ConfigDict(frozen=True)

    question: str = Field(min_length=1, max_length=MAX_QUESTION_CHARACTERS)
    filters: SearchFilters = Field(default_factory=SearchFilters)
    mode: SearchMode = SearchMode.HYBRID

    @model_validator(mode="after")
    def _has_words(self) -> "AnswerRequest":
        if not any(character.isalnum() for character in self.question):
            raise ValueError("the question is empty: it needs at least one word")
        return self


class Evidence(BaseModel):
    """One selected piece of evidence: a stored chunk, its retrieval scores, and the id the generator sees.

    `evidence_id` is assigned by the server in selection order ("E1", "E2", ...): the only handle a model
    gets, so an id it invents is recognisably outside the set."""

    model_config = ConfigDict(frozen=True)

    evidence_id: str
    snapshot: ChunkSnapshot
    score: float  # fused, comparable within one question only
    vector_score: float | None
    lexical_score: float | None
    direct_subject: bool = False  # the question names this chunk's document by its complete title

    @property
    def chunk_id(self) -> str:
        return self.snapshot.chunk_id

    @property
    def text(self) -> str:
        return self.snapshot.body


class EvidenceBlock(BaseModel):
    """What a generator is given of one piece of evidence: its id, where it sits (heading path), its text.
    All of it is document text, untrusted: a generator fences it as data."""

    model_config = ConfigDict(frozen=True)

    evidence_id: str
    heading_path: tuple[str, ...] = ()
    text: str


class DraftClaim(BaseModel):
    """One claim as a model drafted it. Nothing here is trusted until validation: evidence ids may be invented,
    the quote may not be in the evidence, the numbers may be wrong."""

    model_config = ConfigDict(frozen=True)

    text: str
    evidence_ids: tuple[str, ...] = ()
    quote: str = ""  # the span of the evidence the claim rests on, verbatim
    direct: bool = True  # stated by the evidence (True) or inferred from it (False)


class GeneratedDraft(BaseModel):
    """A model's structured answer before validation."""

    model_config = ConfigDict(frozen=True)

    summary: str = ""
    claims: tuple[DraftClaim, ...] = ()
    assumptions: tuple[str, ...] = ()
    needs_review: bool = False
    # The model judged the question unanswerable from the evidence, or outside the documents' subject.
    unanswerable: bool = False
    model: str
    input_tokens: int = Field(default=0, ge=0)
    output_tokens: int = Field(default=0, ge=0)


class ClaimKind(StrEnum):
    DIRECT = "direct"  # stated by the cited evidence
    INFERRED = "inferred"  # the model's inference from it
    EXTRACTIVE = "extractive"  # a sentence of the evidence itself


class AnswerClaim(BaseModel):
    """A claim of the answer: its text and the citation numbers that bear it out (none: unsupported)."""

    model_config = ConfigDict(frozen=True)

    text: str
    citations: tuple[int, ...] = ()
    kind: ClaimKind
    quote: str | None = None  # the verbatim span of its first citation it rests on

    @property
    def supported(self) -> bool:
        return bool(self.citations)


class AnswerCitation(BaseModel):
    """A numbered citation: the stored snapshot of the chunk it cites, as search cites it."""

    model_config = ConfigDict(frozen=True)

    number: int = Field(ge=1)
    chunk_id: str
    score: float
    citation: Citation


class AnswerHit(BaseModel):
    """One piece of the evidence the answer was drawn from, with its retrieval scores (cited or not): where it is,
    never its text (a hit that is cited has its excerpt in the citation)."""

    model_config = ConfigDict(frozen=True)

    chunk_id: str
    file_id: str
    version_id: str
    filename: str
    collection_id: str
    score: float
    vector_score: float | None
    lexical_score: float | None
    direct_subject: bool = False
    citation: int | None = None  # its citation's number, when the answer cites it


class ConfidenceBand(StrEnum):
    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"


class ConfidenceFactors(BaseModel):
    """Every number the band was computed from (each in [0, 1]; penalties subtract)."""

    model_config = ConfigDict(frozen=True)

    top_retrieval_score: float
    direct_claim_coverage: float
    citation_coverage: float
    independent_documents: int
    unsupported_claim_penalty: float
    ambiguous_evidence_penalty: float
    degraded_index_penalty: float


class Confidence(BaseModel):
    model_config = ConfigDict(frozen=True)

    band: ConfidenceBand
    score: float
    factors: ConfidenceFactors


class Answer(BaseModel):
    """The whole answer as it is returned, stored and cached."""

    model_config = ConfigDict(frozen=True)

    answer_id: str
    question: str
    outcome: AnswerOutcome
    method: AnswerMethod | None  # None for a refusal
    claims: tuple[AnswerClaim, ...] = ()
    citations: tuple[AnswerCitation, ...] = ()
    assumptions: tuple[str, ...] = ()
    needs_review: bool = False
    confidence: Confidence
    refusal: Refusal | None = None
    withheld: int = Field(default=0, ge=0)
    # The selected evidence with its scores, best first (evidence only: what the extractive answer chose from).
    hits: tuple[AnswerHit, ...] = ()
    # Why a generated answer was not given (the generator was absent, failed, or its draft did not validate).
    fallback: str | None = None
    vector_available: bool = True
    model: str | None = None
    prompt_version: str
    index_version: str
    cached: bool = False
    created_at: datetime


class FeedbackVerdict(StrEnum):
    HELPFUL = "helpful"
    WRONG_CITATION = "wrong_citation"
    WRONG_ANSWER = "wrong_answer"


class AnswerFeedback(BaseModel):
    model_config = ConfigDict(frozen=True)

    verdict: FeedbackVerdict
    note: str | None = Field(default=None, max_length=MAX_FEEDBACK_NOTE_CHARACTERS)
    citation: int | None = Field(default=None, ge=1)  # which citation was wrong, for wrong_citation


class StoredAnswer(BaseModel):
    """An answer as persisted: who asked, under which cache key."""

    model_config = ConfigDict(frozen=True)

    tenant_id: str
    subject: str
    cache_key: str
    collections: frozenset[str]  # the collections its citations were read from (re-checked on every read)
    answer: Answer
