"""Request and response bodies of artifacts (camelCase on the wire, like the rest of the API)."""

from datetime import datetime
from typing import Any
from uuid import UUID

from pydantic import Field

from functions.views.base import ApiModel
from functions.views.files import BlockView
from functions.views.search import CitationView
from shared.domain.artifacts import ArtifactRecord, ArtifactVersionRecord, Provenance
from shared.domain.reading import window
from shared.domain.rendering import render_markdown
from shared.services.artifacts import ArtifactView, ContentInput, SourceInput, parse_blocks


class SourceBody(ApiModel):
    file_id: UUID
    version_id: UUID | None = None


class CitationBody(ApiModel):
    chunk_id: str = Field(min_length=1, max_length=200)


class ContentBody(ApiModel):
    """Exactly one of `markdown` or `blocks` (the block model's JSON, as GET /v1/files/{id}/document
    returns it); `[n]` in the text cites `citations[n-1]`."""

    # Sizes are checked by the service, which refuses with 413 naming the limit.
    markdown: str | None = None
    blocks: list[dict[str, Any]] | None = None
    citations: list[CitationBody] = Field(default_factory=list)
    sources: list[SourceBody] = Field(default_factory=list)

    def to_input(self) -> ContentInput:
        """The service's input: blocks parsed (each refused with its position when it is not one)."""
        return ContentInput(
            markdown=self.markdown,
            blocks=parse_blocks(self.blocks) if self.blocks is not None else None,
            citations=tuple(citation.chunk_id for citation in self.citations),
            sources=tuple(SourceInput(file_id=source.file_id, version_id=source.version_id) for source in self.sources),
        )


class CreateArtifactRequest(ContentBody):
    collection_id: str = Field(min_length=1, max_length=64)
    name: str = Field(min_length=1, max_length=1000)


class NewArtifactVersionRequest(ContentBody):
    expected_latest_version: int = Field(ge=1)


class RestoreRequest(ApiModel):
    version: int = Field(ge=1)
    expected_latest_version: int = Field(ge=1)


class SourceRefView(ApiModel):
    """A file version the content came from, with the file's metadata as it was when the version (or export) was
    made: a snapshot, which later changes to the file's metadata leave as it is."""

    file_id: UUID
    version_id: UUID
    chunk_ids: list[str]
    metadata: dict[str, Any] = Field(default_factory=dict)
    # None: recorded before files had metadata.
    metadata_revision: int | None = None


class ProvenanceView(ApiModel):
    producer: str
    inputs: dict[str, Any]
    sources: list[SourceRefView]
    restored_from: int | None = None
    proposal_id: UUID | None = None

    @classmethod
    def of(cls, provenance: Provenance) -> "ProvenanceView":
        return cls.model_validate(provenance.model_dump())


class ArtifactVersionView(ApiModel):
    version: int
    content_hash: str
    content_bytes: int
    block_count: int
    provenance: ProvenanceView
    created_by: str
    created_at: datetime

    @classmethod
    def of(cls, record: ArtifactVersionRecord) -> "ArtifactVersionView":
        return cls(
            version=record.version,
            content_hash=record.content_hash,
            content_bytes=record.content_bytes,
            block_count=record.block_count,
            provenance=ProvenanceView.of(record.provenance),
            created_by=record.created_by,
            created_at=record.created_at,
        )


class ArtifactCitationView(ApiModel):
    number: int
    chunk_id: str
    citation: CitationView


class ArtifactBlockView(BlockView):
    """A block of an artifact, with its id (kept as the block moves between versions)."""

    id: str


class ContentWindowView(ApiModel):
    """One window of the version's blocks (each with its id), the window as Markdown, and every citation."""

    start: int
    next_cursor: str | None
    total_blocks: int
    markdown: str
    blocks: list[ArtifactBlockView]
    citations: list[ArtifactCitationView]


class ArtifactSummaryView(ApiModel):
    artifact_id: UUID
    collection_id: str
    name: str
    latest_version: int
    created_by: str
    created_at: datetime
    updated_at: datetime

    @classmethod
    def of(cls, record: ArtifactRecord) -> "ArtifactSummaryView":
        return cls.model_validate(record.model_dump(exclude={"tenant_id"}))


class ArtifactDetailView(ArtifactSummaryView):
    version: ArtifactVersionView
    content: ContentWindowView

    @classmethod
    def detail(cls, view: ArtifactView, start: int = 0) -> "ArtifactDetailView":
        blocks = view.content.blocks
        shown = window(blocks, start)
        return cls(
            **ArtifactSummaryView.of(view.artifact).model_dump(),
            version=ArtifactVersionView.of(view.version),
            content=ContentWindowView(
                start=shown.start,
                next_cursor=str(shown.next_start) if shown.next_start is not None else None,
                total_blocks=shown.total_blocks,
                markdown=render_markdown(shown.blocks),
                blocks=[ArtifactBlockView.of(block) for block in shown.blocks],
                citations=[
                    ArtifactCitationView.model_validate(citation.model_dump()) for citation in view.content.citations
                ],
            ),
        )


class ArtifactListView(ApiModel):
    artifacts: list[ArtifactSummaryView]
    next_cursor: str | None


class ArtifactHistoryView(ApiModel):
    artifact_id: UUID
    latest_version: int
    versions: list[ArtifactVersionView]
    next_cursor: str | None
