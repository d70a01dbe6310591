"""Request and response bodies of exports and conversions (camelCase on the wire)."""

from datetime import datetime
from typing import Annotated
from uuid import UUID

from pydantic import Field

from functions.views.artifacts import SourceRefView
from functions.views.base import ApiModel
from shared.domain.exports import ExportFormat, ExportKind, ExportState
from shared.domain.pdf_tools import MAX_PDF_INPUTS, MAX_SPLIT_PARTS
from shared.services.exports import ExportView as Export


class ExportRequest(ApiModel):
    format: ExportFormat


class ConversionRequest(ApiModel):
    format: ExportFormat
    version_id: UUID | None = None


class ExportSummary(ApiModel):
    """The export of one exact source, without its download: what an agent's tool is told (the model is handed
    no link; the user downloads it from GET /v1/exports/{id})."""

    export_id: UUID
    state: ExportState
    kind: ExportKind
    format: ExportFormat
    collection_id: str
    artifact_id: UUID | None = None
    version: int | None = None
    source_file_id: UUID | None = None
    source_version_id: UUID | None = None
    file_id: UUID | None = None
    failure: str | None = None
    # Characters the format's font cannot draw, left out of the file (never drawn as blanks or "?").
    unsupported_characters: list[str]
    page_count: int | None = None
    byte_size: int | None = None
    created_at: datetime
    rendered_at: datetime | None = None
    # The file versions rendered, each with its file's metadata as of the export's claim (an artifact version's
    # as that version recorded them): provenance that later metadata changes leave as it is.
    sources: list[SourceRefView] = Field(default_factory=list)

    @classmethod
    def of(cls, export: Export) -> "ExportSummary":
        record = export.record
        return cls(
            export_id=record.export_id,
            state=record.state,
            kind=record.kind,
            format=record.format,
            collection_id=record.collection_id,
            artifact_id=record.artifact_id,
            version=record.version,
            source_file_id=record.source_file_id,
            source_version_id=record.source_version_id,
            file_id=record.file_id,
            failure=record.failure_reason or export.gone,
            unsupported_characters=list(record.unsupported_characters),
            page_count=record.page_count,
            byte_size=record.byte_size,
            created_at=record.created_at,
            rendered_at=record.rendered_at,
            sources=[SourceRefView.model_validate(source.model_dump()) for source in record.sources],
        )


class ExportView(ExportSummary):
    """The export of one exact source; `url` (a signed GET, at most 15 minutes) once rendered, `failure` (a
    sentence) when it could not be."""

    url: str | None = None
    expires_at: datetime | None = None

    @classmethod
    def of(cls, export: Export) -> "ExportView":
        return cls(
            **ExportSummary.of(export).model_dump(),
            url=export.download.url if export.download else None,
            expires_at=export.download.expires_at if export.download else None,
        )


class PdfSourceBody(ApiModel):
    file_id: UUID
    version_id: UUID | None = None
    pages: str | None = Field(default=None, min_length=1, max_length=200, description='e.g. "1-3,5,8-"')


class MergeRequest(ApiModel):
    sources: list[PdfSourceBody] = Field(min_length=2, max_length=MAX_PDF_INPUTS)
    name: str | None = Field(default=None, min_length=1, max_length=200)
    collection_id: str | None = Field(default=None, min_length=1, max_length=64)


class ComposeRequest(ApiModel):
    pages: list[PdfSourceBody] = Field(min_length=1, max_length=MAX_PDF_INPUTS)
    name: str | None = Field(default=None, min_length=1, max_length=200)
    collection_id: str | None = Field(default=None, min_length=1, max_length=64)


class SplitRequest(ApiModel):
    file_id: UUID
    version_id: UUID | None = None
    ranges: list[Annotated[str, Field(min_length=1, max_length=200)]] = Field(min_length=1, max_length=MAX_SPLIT_PARTS)


class WatermarkRequest(ApiModel):
    file_id: UUID
    version_id: UUID | None = None
    text: str = Field(min_length=1, max_length=1000)
    opacity: float = 0.25


class ExportListView(ApiModel):
    exports: list[ExportView]
