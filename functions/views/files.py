"""Bodies of files: uploads, versions and their processing, reads, page images, the extracted document, deletion."""

from datetime import datetime
from typing import Annotated, Any, Literal, Self
from uuid import UUID

from pydantic import Field, SerializerFunctionWrapHandler, StrictBool, model_serializer

from functions.views.base import ApiModel
from functions.views.facets import WithFacets
from shared.domain.document import Block, BlockKind, ExtractedDocument
from shared.domain.errors import DocumentNotReady
from shared.domain.files import (
    FailureReason,
    FileRecord,
    FileVersionRecord,
    OcrState,
    ProcessingState,
    SameBytes,
    VersionState,
    VisionState,
    interruption_notice,
)
from shared.domain.metadata_schema import MetadataSchema
from shared.domain.reading import Window
from shared.domain.recognition import BoundingBox
from shared.domain.rendering import render_markdown
from shared.services.files import PartsRequest, UploadTicket
from shared.services.page_images import PageImage
from shared.services.upload_sessions import SessionTicket

METADATA_DESCRIPTION = (
    "The product's own attributes of the file: keys matching ^[a-z][a-z0-9_.-]{0,63}$ (quire. is reserved), values"
    " a string (at most 1,024 characters), a finite number, a boolean, a date (an ISO 8601 day or an instant with"
    " its zone) or a list of at most 100 strings; at most 64 keys and 16 KiB as JSON. A key keeps, in its"
    " collection, the type it first had (or the one the collection's metadata schema declares)."
)
METADATA_EXAMPLE = {"customer": "acme", "doctype": "contract", "effective": "2026-01-01", "tags": ["nda"]}


class ByParts(ApiModel):
    """How an upload asks to go by parts (an upload session): always past the single POST's limit, and on request
    below it (resumable)."""

    multipart: StrictBool = Field(
        default=False,
        description="Upload by parts (an upload session) even when the single POST would take the file; a file past"
        " the single POST's limit always goes by parts.",
    )
    part_size: int | None = Field(
        default=None,
        ge=5 * 1024 * 1024,
        le=5 * 1024 * 1024 * 1024,
        description="Bytes of every part but the last: whole MiB, at least 5 MiB (S3's smallest part); raised when"
        " the file would need more than 10,000 parts. 16 MiB when not given.",
    )
    checksums: StrictBool = Field(
        default=False,
        description="Every part URL is then asked for with the part's SHA-256 (base64) and signed with it: S3 refuses"
        " a part whose bytes do not match.",
    )

    def parts_request(self) -> PartsRequest:
        return PartsRequest(multipart=self.multipart, part_size=self.part_size, checksums=self.checksums)


LANGUAGE_DESCRIPTION = (
    "The language the file's text is in, as an ISO 639-1 code or a tag (de, de-CH): every chunk is read as that"
    " language instead of the one detected. Without it (or a `language` metadata value naming one), each part of the"
    " document is detected on its own."
)


EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
# Its shape is the service's to check, so that a wrong one is a 400 saying what it must be.
SHA256_DESCRIPTION = (
    "The SHA-256 of the file's bytes (64 hexadecimal digits, either case). The single POST's policy then carries it"
    " and S3 refuses other bytes (on AWS; the local S3 does not check); `duplicateOf` in the answer names an earlier"
    " version in the collection with these bytes. Never a reason to refuse the upload."
)


class UploadRequest(ByParts):
    collection_id: str = Field(min_length=1, max_length=64)
    filename: str = Field(min_length=1, max_length=4096)
    media_type: str = Field(min_length=1, max_length=255)
    byte_size: int = Field(ge=0)
    metadata: dict[str, Any] | None = Field(default=None, description=METADATA_DESCRIPTION, examples=[METADATA_EXAMPLE])
    language: str | None = Field(default=None, max_length=35, description=LANGUAGE_DESCRIPTION, examples=["de"])
    sha256: str | None = Field(default=None, max_length=128, description=SHA256_DESCRIPTION, examples=[EMPTY_SHA256])


class NewVersionRequest(ByParts):
    filename: str = Field(min_length=1, max_length=4096)
    media_type: str = Field(min_length=1, max_length=255)
    byte_size: int = Field(ge=0)
    # Keys set on the file's metadata with this version (the rest stay as they are); none keeps it whole.
    metadata: dict[str, Any] | None = Field(default=None, description=METADATA_DESCRIPTION, examples=[METADATA_EXAMPLE])
    language: str | None = Field(default=None, max_length=35, description=LANGUAGE_DESCRIPTION, examples=["de"])
    sha256: str | None = Field(default=None, max_length=128, description=SHA256_DESCRIPTION, examples=[EMPTY_SHA256])


class MetadataPatchRequest(ApiModel):
    """`PATCH /v1/files/{id}/metadata`: keys to set, keys to remove, and the revision the writer last read (a
    stale one is a 409 with the current revision; none applies the change to whatever the file has)."""

    set: dict[str, Any] = Field(default_factory=dict, description=METADATA_DESCRIPTION)
    remove: list[Annotated[str, Field(max_length=64)]] = Field(default_factory=list, max_length=64)
    expected_revision: int | None = Field(default=None, ge=0)


class BulkMetadataItem(MetadataPatchRequest):
    file_id: UUID


class BulkMetadataRequest(ApiModel):
    """`POST /v1/files/metadata`: up to 1,000 files' changes, all applied or none; at most 100 of them may set or
    remove `language` (each re-indexes its file when the language it declares changes)."""

    # At most 1,000: the service's 400 names the limit.
    files: list[BulkMetadataItem] = Field(min_length=1)


class MetadataRevisionView(ApiModel):
    file_id: UUID
    metadata_revision: int


class BulkMetadataView(ApiModel):
    files: list[MetadataRevisionView]


class MetadataSchemaView(ApiModel):
    """A collection's metadata schema as put (`schema` null: none; types are then taken from the values)."""

    collection_id: str
    schema_: dict[str, Any] | None = Field(alias="schema")

    @classmethod
    def of(cls, collection_id: str, schema: MetadataSchema | None) -> "MetadataSchemaView":
        return cls(collection_id=collection_id, schema_=schema.as_json() if schema is not None else None)


class MoveRequest(ApiModel):
    collection_id: str = Field(min_length=1, max_length=64)


class UploadTarget(ApiModel):
    url: str
    fields: dict[str, str]


class SameBytesView(ApiModel):
    """An earlier version in the same collection whose bytes are these (by SHA-256): `duplicateOf`."""

    file_id: UUID
    version_id: UUID
    filename: str

    @classmethod
    def of(cls, same: SameBytes | None) -> "SameBytesView | None":
        return cls(file_id=same.file_id, version_id=same.version_id, filename=same.filename) if same else None


class UploadResponse(ApiModel):
    """A single POST's target (`upload`), or an upload session (`uploadId` and its parts: ask
    `POST /v1/uploads/{uploadId}/parts` for their URLs, then `POST /v1/uploads/{uploadId}/complete`)."""

    file_id: UUID
    version_id: UUID
    upload: UploadTarget | None = Field(default=None, description="The single POST's target; absent for a session.")
    expires_at: datetime = Field(description="When the POST's URL, or the session, ends.")
    upload_id: UUID | None = Field(default=None, description="The upload session; absent for a single POST.")
    part_size: int | None = None
    part_count: int | None = None
    checksums: bool | None = None
    duplicate_of: SameBytesView | None = Field(
        default=None,
        description="The declared `sha256` is the bytes of this earlier version in the same collection (as read when"
        " it was processed): the upload is taken all the same. Null without a declared hash or a match.",
    )

    @classmethod
    def of(cls, ticket: UploadTicket | SessionTicket) -> "UploadResponse":
        if isinstance(ticket, SessionTicket):
            return cls(
                file_id=ticket.file_id,
                version_id=ticket.version_id,
                expires_at=ticket.expires_at,
                upload_id=ticket.upload_id,
                part_size=ticket.part_size,
                part_count=ticket.part_count,
                checksums=ticket.checksums,
                duplicate_of=SameBytesView.of(ticket.duplicate_of),
            )
        return cls(
            file_id=ticket.file_id,
            version_id=ticket.version_id,
            upload=UploadTarget(url=ticket.upload.url, fields=ticket.upload.fields),
            expires_at=ticket.upload.expires_at,
            duplicate_of=SameBytesView.of(ticket.duplicate_of),
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
    # Why some chunks were indexed without a model's situating sentence (on AWS, where one is configured): they
    # keep their title and heading context, and a re-index asks again.
    context_gap: str | None
    indexed_at: datetime


class OcrView(ApiModel):
    """What OCR did for the pages without a text layer: which it read, how surely, or why it did not."""

    state: OcrState
    engine: str | None
    pages: list[int]
    confidence: float | None
    low_confidence: bool
    detail: str | None


class TranscriptionView(ApiModel):
    """What the speech engine did for a recording: how long it lasts, the language heard, how surely, or why it
    did not transcribe it."""

    state: OcrState
    engine: str | None
    language: str | None
    duration_seconds: float | None
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
    # A recording: what the speech engine did (null until it ran, and for every other type).
    transcription: TranscriptionView | None = None
    # The export that rendered this version (its processing is `skipped`: Quire wrote it, nobody extracts it).
    # The malware scanner's verdict on the bytes (NO_THREATS_FOUND, …), or "not_scanned": no scanner runs in this
    # deployment (`quire status` says why) or its verdict has not arrived.
    malware_scan: str = "not_scanned"
    export_id: UUID | None = None
    # The language its text is in (ISO 639-1): the declared one, else the one most of its chunks are in as indexed;
    # `languages` are all its chunks' languages, the most first (a mixed document has several); null and [] until
    # indexed, or when no language could be told.
    language: str | None = None
    languages: list[str] = Field(default_factory=list)
    # What the upload declared (every chunk's language, none detected), or null.
    declared_language: str | None = None
    sha256: str | None = Field(
        default=None,
        description="The bytes' SHA-256 (hex) as processing read them; null until then, and for a recording.",
    )
    duplicate_of: SameBytesView | None = Field(
        default=None,
        description="The earliest other version in the file's collection with the same bytes (uploaded before this"
        " one); null when there is none or the bytes are not read yet.",
    )

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
                context_gap=version.context_gap,
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
            transcription=TranscriptionView(
                state=version.transcription_state,
                engine=version.transcription_engine,
                language=version.transcription_language,
                duration_seconds=version.duration_seconds,
                confidence=version.transcription_confidence,
                low_confidence=version.recognition.low_confidence,
                detail=version.transcription_detail,
            )
            if version.transcription_state
            else None,
            malware_scan=version.malware_scan.value if version.malware_scan else "not_scanned",
            export_id=version.export_id,
            language=version.languages[0] if version.languages else version.declared_language,
            languages=list(version.languages),
            declared_language=version.declared_language,
            sha256=version.content_sha256,
            duplicate_of=SameBytesView.of(version.duplicate_of),
        )


# Versions that no longer count: a deletion in progress or done.
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
    # The product's own attributes (issue 33) and how many times they have changed (a patch names it).
    metadata: dict[str, Any] = Field(default_factory=dict)
    metadata_revision: int = 0

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
            metadata=record.metadata,
            metadata_revision=record.metadata_revision,
        )


class FileView(FileSummary):
    versions: list[VersionView]

    @classmethod
    def of(cls, record: FileRecord) -> Self:
        return cls(**FileSummary.of(record).model_dump(), versions=[VersionView.of(v) for v in record.versions])


class FileListView(WithFacets):
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


# Block fields whose snake_case name clients of the first release read: sent under both names until the next
# release (docs/api.md "Extracted document"), then under the camelCase one only.
_LEGACY_NAMES = {
    "cellRange": "cell_range",
    "paragraphIndex": "paragraph_index",
    "tableIndex": "table_index",
    "lineStart": "line_start",
    "lineEnd": "line_end",
    "headerRows": "header_rows",
    "imageRef": "image_ref",
    "headingPath": "heading_path",
}


def _without_unset(data: dict[str, Any]) -> dict[str, Any]:
    """A block's fields as the first release sent them: only those set, each also under its old name."""
    kept = {name: value for name, value in data.items() if value is not None}
    kept.update({_LEGACY_NAMES[name]: value for name, value in kept.items() if name in _LEGACY_NAMES})
    return kept


class LocationView(ApiModel):
    page: int | None = None
    box: BoundingBox | None = None
    sheet: str | None = None
    cell_range: str | None = None
    slide: int | None = None
    shape: str | None = None
    paragraph_index: int | None = None
    table_index: int | None = None
    line_start: int | None = None
    line_end: int | None = None
    # A recording's segment: when it is spoken (seconds from the start) and by whom, when the engine says.
    start_seconds: float | None = None
    end_seconds: float | None = None
    speaker: str | None = None

    # No return annotation: one would replace this model's schema in the OpenAPI document.
    @model_serializer(mode="wrap")
    def _wire(self, serialize: SerializerFunctionWrapHandler):  # type: ignore[no-untyped-def]
        return _without_unset(serialize(self))


class TableView(ApiModel):
    rows: list[list[str]]
    header_rows: int = 0

    @model_serializer(mode="wrap")
    def _wire(self, serialize: SerializerFunctionWrapHandler):  # type: ignore[no-untyped-def]
        return _without_unset(serialize(self))


class BlockView(ApiModel):
    """One block of an extracted document (the block model, camelCase like the rest of the API); the body of an
    artifact's `blocks` takes the same shape back."""

    kind: BlockKind
    text: str = ""
    location: LocationView = Field(default_factory=LocationView)
    level: int | None = None
    depth: int | None = None
    ordered: bool | None = None
    table: TableView | None = None
    image_ref: str | None = None
    heading_path: list[str] = Field(default_factory=list)
    confidence: float | None = None

    @classmethod
    def of(cls, block: Block) -> Self:
        return cls.model_validate(block.model_dump())

    @model_serializer(mode="wrap")
    def _wire(self, serialize: SerializerFunctionWrapHandler):  # type: ignore[no-untyped-def]
        return _without_unset(serialize(self))


class DocumentWindowView(ApiModel):
    file_id: UUID
    version_id: UUID
    start: int
    next_cursor: str | None
    total_blocks: int
    markdown: str
    blocks: list["BlockView"]
    warnings: list[str]
    # OCR read some of these pages: how surely (None when every word came from a text layer), and the flag.
    recognized_pages: list[int] = Field(default_factory=list)
    confidence: float | None = None
    low_confidence: bool = False

    @classmethod
    def of(
        cls, file_id: UUID, version: FileVersionRecord, document: ExtractedDocument, shown: Window
    ) -> "DocumentWindowView":
        return cls(
            file_id=file_id,
            version_id=version.version_id,
            start=shown.start,
            next_cursor=str(shown.next_start) if shown.next_start is not None else None,
            total_blocks=shown.total_blocks,
            markdown=render_markdown(shown.blocks),
            blocks=[BlockView.of(block) for block in shown.blocks],
            warnings=list(document.warnings),
            recognized_pages=list(document.recognized_pages),
            confidence=document.confidence,
            low_confidence=document.low_confidence,
        )


class NothingToReadView(ApiModel):
    """Why a version has no document to read (409), and whether trying again could change that."""

    error: str
    message: str
    retryable: bool
    processing_state: str
    reason: str | None = None

    @classmethod
    def of(cls, refusal: DocumentNotReady) -> "NothingToReadView":
        return cls(
            error=refusal.code,
            message=str(refusal),
            retryable=refusal.retryable,
            processing_state=refusal.processing_state,
            reason=refusal.reason,
        )


class ScanView(ApiModel):
    file_id: UUID
    version_id: UUID
    attempt: int
    engine: str
    state: Literal["queued"] = "queued"
