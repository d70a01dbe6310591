"""The API's request and response bodies (camelCase on the wire). No storage key or bucket is a field."""

from datetime import datetime
from typing import Annotated, Literal, Self
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel

from shared.domain.auth import Role
from shared.domain.errors import InvalidRequest
from shared.domain.files import (
    FailureReason,
    FileRecord,
    FileVersionRecord,
    OcrState,
    PresignedUpload,
    ProcessingState,
    VersionState,
    VisionState,
    interruption_notice,
)
from shared.domain.knowledge import CollectionCoverage
from shared.domain.recognition import BoundingBox
from shared.domain.search import (
    MAX_QUERY_CHARACTERS,
    MAX_RESULTS,
    CitedKind,
    Empty,
    EmptyReason,
    SearchFilters,
    SearchMode,
    SearchOutcome,
    SearchQuery,
)
from shared.domain.usage import UsageTotal
from shared.services.page_images import PageImage
from shared.services.reindexing import ReindexReport


class ApiModel(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True)


class UploadRequest(ApiModel):
    collection_id: str = Field(min_length=1, max_length=64)
    filename: str = Field(min_length=1, max_length=4096)
    media_type: str = Field(min_length=1, max_length=255)
    byte_size: int = Field(ge=0)


class NewVersionRequest(ApiModel):
    filename: str = Field(min_length=1, max_length=4096)
    media_type: str = Field(min_length=1, max_length=255)
    byte_size: int = Field(ge=0)


class MoveRequest(ApiModel):
    collection_id: str = Field(min_length=1, max_length=64)


class UploadTarget(ApiModel):
    url: str
    fields: dict[str, str]


class UploadResponse(ApiModel):
    file_id: UUID
    version_id: UUID
    upload: UploadTarget
    expires_at: datetime

    @classmethod
    def of(cls, file_id: UUID, version_id: UUID, upload: PresignedUpload) -> "UploadResponse":
        return cls(
            file_id=file_id,
            version_id=version_id,
            upload=UploadTarget(url=upload.url, fields=upload.fields),
            expires_at=upload.expires_at,
        )


class FailureView(ApiModel):
    reason: FailureReason
    message: str
    detail: str | None = None


class ExtractionView(ApiModel):
    page_count: int | None
    block_count: int | None
    pages_without_text: list[int]
    warnings: list[str]
    truncated: bool


class IndexingView(ApiModel):
    chunk_count: int
    embedded_chunk_count: int
    embedding_model: str | None
    # Why some chunks have no vector yet (found by keyword search only until a re-index embeds them).
    embedding_gap: str | None
    indexed_at: datetime


class OcrView(ApiModel):
    """What OCR did for the pages without a text layer: which it read, how surely, or why it did not."""

    state: OcrState
    engine: str | None
    pages: list[int]
    confidence: float | None
    low_confidence: bool
    detail: str | None


class VisionView(ApiModel):
    """Whether the image was described (the description is a labelled block of the document, never text)."""

    state: VisionState
    model: str | None
    detail: str | None


class VersionView(ApiModel):
    version_id: UUID
    state: str
    processing_state: str
    filename: str
    media_type: str
    declared_byte_size: int
    byte_size: int | None
    created_at: datetime
    stored_at: datetime | None
    rejection_reason: str | None
    failure: FailureView | None
    # Set while processing is `interrupted`: what failed in the infrastructure (retried automatically).
    interruption: str | None = None
    extraction: ExtractionView | None = None
    indexing: IndexingView | None = None
    ocr: OcrView | None = None
    vision: VisionView | None = None
    # The export that rendered this version (its processing is `skipped`: Quire wrote it, nobody extracts it).
    # The malware scanner's verdict on the bytes (NO_THREATS_FOUND, …), or "not_scanned": no scanner runs in this
    # deployment (`quire status` says why) or its verdict has not arrived.
    malware_scan: str = "not_scanned"
    export_id: UUID | None = None

    @classmethod
    def of(cls, version: FileVersionRecord) -> "VersionView":
        failure = (
            FailureView(
                reason=version.failure_reason,
                message=version.failure_reason.user_sentence,
                detail=version.failure_detail,
            )
            if version.failure_reason
            else None
        )
        return cls(
            version_id=version.version_id,
            state=version.state.value,
            processing_state=version.processing_state.value,
            filename=version.filename,
            media_type=version.media_type,
            declared_byte_size=version.declared_byte_size,
            byte_size=version.byte_size,
            created_at=version.created_at,
            stored_at=version.stored_at,
            rejection_reason=version.rejection_reason,
            failure=failure,
            interruption=interruption_notice(version.failure_detail, version.processing_retries)
            if version.processing_state is ProcessingState.INTERRUPTED
            else None,
            extraction=ExtractionView(
                page_count=version.page_count,
                block_count=version.block_count,
                pages_without_text=list(version.pages_without_text),
                warnings=list(version.extraction_warnings),
                truncated=version.extraction_truncated,
            )
            if version.document_key
            else None,
            indexing=IndexingView(
                chunk_count=version.chunk_count,
                embedded_chunk_count=version.embedded_chunk_count,
                embedding_model=version.embedding_model,
                embedding_gap=version.embedding_gap,
                indexed_at=version.indexed_at,
            )
            if version.indexed_at
            else None,
            ocr=OcrView(
                state=version.ocr_state,
                engine=version.ocr_engine,
                pages=list(version.recognized_pages),
                confidence=version.ocr_confidence,
                low_confidence=version.recognition.low_confidence,
                detail=version.ocr_detail,
            )
            if version.ocr_state
            else None,
            vision=VisionView(state=version.vision_state, model=version.vision_model, detail=version.vision_detail)
            if version.vision_state
            else None,
            malware_scan=version.malware_scan.value if version.malware_scan else "not_scanned",
            export_id=version.export_id,
        )


_GONE = frozenset({VersionState.DELETING, VersionState.DELETED})


class FileSummary(ApiModel):
    file_id: UUID
    collection_id: str
    filename: str
    created_at: datetime
    current: VersionView
    # The listing's marker: OCR read the current version with low confidence (words may be wrong), so a
    # reader choosing between files knows before opening any of them.
    low_confidence: bool = False
    ocr_pages: list[int] = Field(default_factory=list)
    # Versions not deleted nor being deleted: the file's history (one still uploading or refused included).
    version_count: int = 1

    @classmethod
    def of(cls, record: FileRecord) -> "FileSummary":
        current = record.current
        return cls(
            version_count=sum(1 for version in record.versions if version.state not in _GONE),
            file_id=record.file_id,
            collection_id=record.collection_id,
            filename=record.filename,
            created_at=record.created_at,
            current=VersionView.of(current),
            low_confidence=current.recognition.low_confidence,
            ocr_pages=list(current.recognized_pages),
        )


class FileView(FileSummary):
    versions: list[VersionView]

    @classmethod
    def of(cls, record: FileRecord) -> Self:
        return cls(**FileSummary.of(record).model_dump(), versions=[VersionView.of(v) for v in record.versions])


class FileListView(ApiModel):
    files: list[FileSummary]
    next_cursor: str | None


class SignedReadView(ApiModel):
    url: str
    expires_at: datetime


class PageImageView(ApiModel):
    """One page drawn as a PNG: a signed GET of at most 15 minutes served as image/png (for an <img>), and the
    drawing's size in pixels (a citation's normalised box times width and height is its rectangle on it)."""

    url: str
    expires_at: datetime
    page: int
    page_count: int
    width: int
    height: int
    version_id: UUID

    @classmethod
    def of(cls, image: PageImage) -> "PageImageView":
        if image.url is None or image.expires_at is None:
            raise ValueError("a page image without a signed URL is served as its bytes")
        return cls(
            url=image.url,
            expires_at=image.expires_at,
            page=image.page,
            page_count=image.page_count,
            width=image.width,
            height=image.height,
            version_id=image.version_id,
        )


class DeletionView(ApiModel):
    file_id: UUID
    state: str = "deleting"
    # Stored versions whose bytes were not removed before this answer (links to them work until the sweep).
    bytes_left_to_sweep: int = 0


class CollectionDeletionView(ApiModel):
    collection_id: str
    versions_deleting: int
    bytes_left_to_sweep: int = 0


class DocumentWindowView(ApiModel):
    file_id: UUID
    version_id: UUID
    start: int
    next_cursor: str | None
    total_blocks: int
    markdown: str
    blocks: list[dict[str, object]]
    warnings: list[str]
    # OCR read some of these pages: how surely (None when every word came from a text layer), and the flag.
    recognized_pages: list[int] = Field(default_factory=list)
    confidence: float | None = None
    low_confidence: bool = False


class NothingToReadView(ApiModel):
    error: str
    message: str
    retryable: bool
    processing_state: str
    reason: str | None = None

    @classmethod
    def of(cls, version: FileVersionRecord) -> "NothingToReadView":
        """Why there is nothing to read yet, and whether trying again could change that."""
        if version.processing_state is ProcessingState.FAILED and version.failure_reason is not None:
            return cls(
                error="extraction_failed",
                message=version.failure_reason.user_sentence,
                reason=version.failure_reason.value,
                # Only a timeout may go differently next time; the same bytes give the same answer otherwise.
                retryable=version.failure_reason is FailureReason.TIMED_OUT,
                processing_state=version.processing_state.value,
            )
        if version.processing_state is ProcessingState.SKIPPED:
            return cls(
                error="not_extracted",
                message="this file is an export Quire rendered: it is never extracted, so read what it was rendered"
                " from (its export's source file or artifact) instead",
                retryable=False,
                processing_state=version.processing_state.value,
            )
        if version.processing_state is ProcessingState.INTERRUPTED:
            return cls(
                error="not_ready",
                message=interruption_notice(version.failure_detail, version.processing_retries),
                retryable=True,
                processing_state=version.processing_state.value,
            )
        return cls(
            error="not_ready",
            message=f"the document is {version.processing_state.value.replace('_', ' ')}; try again shortly",
            retryable=True,
            processing_state=version.processing_state.value,
        )


class SearchFiltersBody(ApiModel):
    collections: list[Annotated[str, Field(min_length=1, max_length=64)]] | None = Field(default=None, max_length=100)
    media_types: list[Annotated[str, Field(min_length=1, max_length=255)]] | None = Field(default=None, max_length=50)
    filename: str | None = Field(default=None, min_length=1, max_length=255)
    uploaded_after: datetime | None = None
    uploaded_before: datetime | None = None


class SearchRequest(ApiModel):
    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARACTERS)
    limit: int = Field(default=10, ge=1, le=MAX_RESULTS)
    mode: SearchMode = SearchMode.HYBRID
    filters: SearchFiltersBody | None = None

    def to_query(self) -> SearchQuery:
        """The domain's query; a combination the body's schema allows but the query does not is a 400."""
        try:
            return SearchQuery(text=self.query, limit=self.limit, mode=self.mode, filters=search_filters(self.filters))
        except ValidationError as error:
            raise InvalidRequest("; ".join(str(problem["msg"]) for problem in error.errors())) from error


def search_filters(filters: SearchFiltersBody | None) -> SearchFilters:
    """The domain's filters of a body's (a ValidationError for a combination the schema allows but they do not)."""
    return SearchFilters(
        collections=frozenset(filters.collections) if filters and filters.collections is not None else None,
        media_types=frozenset(filters.media_types) if filters and filters.media_types else None,
        filename=filters.filename if filters else None,
        uploaded_after=filters.uploaded_after if filters else None,
        uploaded_before=filters.uploaded_before if filters else None,
    )


class CallerView(ApiModel):
    """Who the API takes the caller for: the tenant, the subject, the collections they may read, and their
    role in each (read, write or admin)."""

    tenant_id: str
    subject: str
    collections: list[str]
    roles: dict[str, Role]


class CitedRegionView(ApiModel):
    """One matching block of the cited chunk (or a run of adjacent ones): the fields of its format."""

    page: int | None
    box: BoundingBox | None
    sheet: str | None
    cells: str | None
    slide: int | None
    shape: str | None
    line_start: int | None
    line_end: int | None
    paragraph_start: int | None
    paragraph_end: int | None
    table_index: int | None


class CitationPlace(ApiModel):
    """Where a citation points: the file version and the place in it, without the cited words (an agent's tool
    gets those fenced, apart)."""

    file_id: str
    version_id: str
    filename: str
    media_type: str
    collection_id: str
    page: int | None
    page_end: int | None
    box: BoundingBox | None
    sheet: str | None
    cells: str | None
    slide: int | None
    line_start: int | None
    line_end: int | None
    paragraph_start: int | None
    paragraph_end: int | None
    table_index: int | None
    shape: str | None
    # Where the words that matched are (page and box are the first of them); every block's place when none
    # matched; empty for chunks indexed before regions were kept.
    regions: list[CitedRegionView]
    # quote (the document's words), transcription (OCR's reading, with its confidence) or description
    # (a vision model's reading of an image, never to be presented as the document's words).
    kind: CitedKind
    ocr_confidence: float | None


class CitationView(CitationPlace):
    heading_path: list[str]
    excerpt: str
    retrieved_at: datetime


class HitView(ApiModel):
    chunk_id: str
    score: float
    vector_score: float | None
    lexical_score: float | None
    direct_subject: bool
    excerpt: str
    citation: CitationView


class SearchFoundView(ApiModel):
    outcome: Literal["found"]
    vector_available: bool
    truncated_by_budget: bool
    hits: list[HitView]


class SearchEmptyView(ApiModel):
    """No hits field at all: an empty result cannot be read as a weak answer."""

    outcome: EmptyReason
    message: str
    vector_available: bool


def search_view(outcome: SearchOutcome) -> SearchFoundView | SearchEmptyView:
    if isinstance(outcome, Empty):
        return SearchEmptyView(
            outcome=outcome.outcome, message=outcome.message, vector_available=outcome.vector_available
        )
    return SearchFoundView(
        outcome="found",
        vector_available=outcome.vector_available,
        truncated_by_budget=outcome.truncated_by_budget,
        hits=[HitView.model_validate(hit.model_dump()) for hit in outcome.hits],
    )


class CollectionCoverageView(ApiModel):
    collection_id: str
    files: int
    indexed: int
    failed: int
    in_progress: int
    stale: int
    lexical_only: int


class CoverageView(ApiModel):
    embedding_model: str
    embedder_available: bool
    collections: list[CollectionCoverageView]

    @classmethod
    def of(cls, embedding_model: str, available: bool, coverage: list[CollectionCoverage]) -> "CoverageView":
        return cls(
            embedding_model=embedding_model,
            embedder_available=available,
            collections=[CollectionCoverageView.model_validate(entry.model_dump()) for entry in coverage],
        )


class ReindexView(ApiModel):
    """What one call started: `queued` re-indexes run through the workflow (GET /v1/coverage shows them in
    progress, then indexed with `embeddingModel`); `remaining` stale versions are left for the next call."""

    embedding_model: str
    queued: int
    # The same number under its name from before re-indexing ran through the workflow: started, not finished.
    reindexed: int
    dropped: int
    skipped: int
    remaining: int

    @classmethod
    def of(cls, report: ReindexReport) -> "ReindexView":
        return cls(**report.model_dump(), reindexed=report.queued)


class ScanView(ApiModel):
    file_id: UUID
    version_id: UUID
    attempt: int
    engine: str
    state: Literal["queued"] = "queued"


class UsageLineView(ApiModel):
    step: str
    provider: str
    operation: str
    model: str | None
    priced: bool
    calls: int
    pages: int
    images: int
    input_tokens: int
    output_tokens: int


class UsageView(ApiModel):
    since: datetime
    until: datetime
    lines: list[UsageLineView]

    @classmethod
    def of(cls, since: datetime, until: datetime, totals: list[UsageTotal]) -> "UsageView":
        return cls(
            since=since,
            until=until,
            lines=[
                UsageLineView.model_validate(total.model_dump(exclude={"first_recorded_at", "last_recorded_at"}))
                for total in totals
            ],
        )
