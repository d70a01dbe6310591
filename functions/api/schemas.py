"""The API's request and response bodies (camelCase on the wire). No storage key or bucket is a field."""

from datetime import datetime
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from shared.domain.files import FailureReason, FileRecord, FileVersionRecord, PresignedUpload


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
    extraction: ExtractionView | None = None

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
            extraction=ExtractionView(
                page_count=version.page_count,
                block_count=version.block_count,
                pages_without_text=list(version.pages_without_text),
                warnings=list(version.extraction_warnings),
                truncated=version.extraction_truncated,
            )
            if version.document_key
            else None,
        )


class FileSummary(ApiModel):
    file_id: UUID
    collection_id: str
    filename: str
    created_at: datetime
    current: VersionView
    # Filled by the OCR work; present now so clients can rely on the shape.
    low_confidence: bool = False
    ocr_pages: list[int] = Field(default_factory=list)

    @classmethod
    def of(cls, record: FileRecord) -> "FileSummary":
        return cls(
            file_id=record.file_id,
            collection_id=record.collection_id,
            filename=record.filename,
            created_at=record.created_at,
            current=VersionView.of(record.current),
        )


class FileView(FileSummary):
    versions: list[VersionView]

    @classmethod
    def of(cls, record: FileRecord) -> "FileView":
        return cls(**FileSummary.of(record).model_dump(), versions=[VersionView.of(v) for v in record.versions])


class FileListView(ApiModel):
    files: list[FileSummary]
    next_cursor: str | None


class SignedReadView(ApiModel):
    url: str
    expires_at: datetime


class DeletionView(ApiModel):
    file_id: UUID
    state: str = "deleting"


class CollectionDeletionView(ApiModel):
    collection_id: str
    versions_deleting: int


class DocumentWindowView(ApiModel):
    file_id: UUID
    version_id: UUID
    start: int
    next_cursor: str | None
    total_blocks: int
    markdown: str
    blocks: list[dict[str, object]]
    warnings: list[str]
    low_confidence: bool = False


class NothingToReadView(ApiModel):
    error: str
    message: str
    retryable: bool
    processing_state: str
    reason: str | None = None
