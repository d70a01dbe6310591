"""Exports: an exact artifact version (or an uploaded file version) rendered as a portable file.

An export is a rendering of content, not a version of it (docs/artifacts.md): one record per
(artifact, version, format), rendered once and downloaded as often as wanted. Pure rules, no I/O.
"""

import hashlib
import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any
from uuid import UUID, uuid5

from pydantic import BaseModel, ConfigDict, JsonValue

from shared.domain.artifacts import ArtifactCitation, SourceRef
from shared.domain.document import Block, BlockKind
from shared.domain.search import Citation
from shared.domain.transcription import time_span


class ExportFormat(StrEnum):
    MARKDOWN = "md"
    HTML = "html"
    PDF = "pdf"
    DOCX = "docx"
    TEXT = "txt"
    CSV = "csv"
    XLSX = "xlsx"

    @property
    def media_type(self) -> str:
        return _MEDIA_TYPES[self]

    @property
    def extension(self) -> str:
        return f".{self.value}"


_MEDIA_TYPES = {
    ExportFormat.MARKDOWN: "text/markdown",
    ExportFormat.HTML: "text/html",
    ExportFormat.PDF: "application/pdf",
    ExportFormat.DOCX: "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    ExportFormat.TEXT: "text/plain",
    ExportFormat.CSV: "text/csv",
    ExportFormat.XLSX: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
}

# The date every rendering carries (PDF /CreationDate, DOCX core properties, zip entries): a constant, so the
# same content and format always give the same bytes.
RENDER_EPOCH = datetime(2000, 1, 1, tzinfo=UTC)


class RenderLimits(BaseModel):
    """A render is bounded like an extraction: in pages, in bytes, and in time and memory from outside."""

    model_config = ConfigDict(frozen=True)

    max_pages: int = 2_000
    max_bytes: int = 100 * 1024 * 1024
    timeout_seconds: float = 120.0
    memory_limit_bytes: int = 2 * 1024 * 1024 * 1024


class RenderRequest(BaseModel):
    """What a renderer is given: a title (metadata), the blocks, their citations, and what identifies the
    content (the source of the PDF's /ID)."""

    model_config = ConfigDict(frozen=True)

    title: str
    blocks: tuple[Block, ...]
    citations: tuple[ArtifactCitation, ...] = ()
    content_id: str


class RenderedFile(BaseModel):
    model_config = ConfigDict(frozen=True)

    content: bytes
    format: ExportFormat
    page_count: int | None = None
    # Characters the format's font cannot draw: left out and listed here, never drawn as blanks or "?".
    unsupported_characters: tuple[str, ...] = ()


class RenderFailed(Exception):
    """The content cannot be rendered within the limits: `sentence` says why, for the person who asked.
    `retryable` when the same request may succeed later (a timeout, a crashed renderer), not the content's fault."""

    code = "cannot_render"

    def __init__(self, sentence: str, *, retryable: bool = False) -> None:
        super().__init__(sentence)
        self.sentence = sentence
        self.retryable = retryable


def content_id(*parts: str) -> str:
    """An identifier derived from what is rendered (never random, never a clock)."""
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()


def describe_location(citation: Citation) -> str:
    """Where a citation points, as a person reads it: page, sheet and cells, slide, lines or paragraphs."""
    parts: list[str] = []
    if citation.page is not None:
        end = citation.page_end
        parts.append(f"pages {citation.page}-{end}" if end and end != citation.page else f"page {citation.page}")
    if citation.sheet:
        parts.append(f"sheet {citation.sheet}" + (f", cells {citation.cells}" if citation.cells else ""))
    if citation.slide is not None:
        parts.append(f"slide {citation.slide}")
    if citation.start_seconds is not None:
        moment = time_span(citation.start_seconds, citation.end_seconds or citation.start_seconds)
        parts.append(f"at {moment}" + (f", {citation.speaker}" if citation.speaker else ""))
    if citation.line_start is not None:
        end_line = citation.line_end
        parts.append(
            f"lines {citation.line_start}-{end_line}"
            if end_line and end_line != citation.line_start
            else f"line {citation.line_start}"
        )
    if citation.paragraph_start is not None and not parts:
        end_paragraph = citation.paragraph_end
        parts.append(
            f"paragraphs {citation.paragraph_start + 1}-{end_paragraph + 1}"
            if end_paragraph is not None and end_paragraph != citation.paragraph_start
            else f"paragraph {citation.paragraph_start + 1}"
        )
    if citation.heading_path:
        parts.append("under " + " > ".join(citation.heading_path))
    return ", ".join(parts)


def _shortened(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def describe_metadata(metadata: Mapping[str, Any]) -> str:
    """A file's metadata as a person reads it, keys in order: `customer: acme; tags: nda, renewal`."""

    def shown(value: Any) -> str:
        if isinstance(value, list):
            return ", ".join(str(item) for item in value)
        return json.dumps(value) if isinstance(value, bool) else str(value)

    return "; ".join(f"{key}: {shown(metadata[key])}" for key in sorted(metadata))


def note_text(note: ArtifactCitation) -> str:
    """A citation as a numbered note: file, exact version, location, the file's metadata when it was cited (cut
    like the excerpt: a note stays a line or two), and the cited words."""
    cited = note.citation
    where = describe_location(cited)
    kind = "" if cited.kind.value == "quote" else f" ({cited.kind.value})"
    metadata = f" ({_shortened(describe_metadata(cited.metadata))})" if cited.metadata else ""
    excerpt = _shortened(cited.excerpt)
    return f"{cited.filename}, version {cited.version_id}{', ' + where if where else ''}{kind}{metadata}: “{excerpt}”"


def ordered_numbers(blocks: Sequence[Block]) -> list[int | None]:
    """The number each item of a numbered list shows (None for anything else), counted per list and depth."""
    numbers: list[int | None] = []
    counters: dict[int, int] = {}
    for block in blocks:
        if block.kind is not BlockKind.LIST_ITEM:
            counters = {}
            numbers.append(None)
            continue
        depth = block.depth or 0
        counters = {level: count for level, count in counters.items() if level <= depth}
        if block.ordered:
            counters[depth] = counters.get(depth, 0) + 1
            numbers.append(counters[depth])
        else:
            numbers.append(None)
    return numbers


# How many times one export may be rendered again (its file deleted, a passing failure): content that always
# times out is not rendered at full cost for ever.
MAX_GENERATIONS = 5


class ExportKind(StrEnum):
    ARTIFACT = "artifact"  # an exact artifact version
    CONVERSION = "conversion"  # an uploaded file version, through its block list
    PDF = "pdf"  # a PDF operation (merge, split, watermark, compose) over stored PDFs


class ExportState(StrEnum):
    PENDING = "pending"
    RENDERED = "rendered"
    FAILED = "failed"


class NewExport(BaseModel):
    """An export to claim: the record is made once per source and format, whoever asks first."""

    model_config = ConfigDict(frozen=True)

    tenant_id: str
    export_id: UUID
    collection_id: str
    kind: ExportKind
    format: ExportFormat
    artifact_id: UUID | None = None
    version: int | None = None
    source_file_id: UUID | None = None
    source_version_id: UUID | None = None
    operation: dict[str, JsonValue] | None = None
    operation_hash: str | None = None
    created_by: str
    # The file versions rendered, each with its file's metadata as of the claim (an artifact version's: as the
    # version recorded them), so the export's provenance stays what it was after the metadata changes.
    sources: tuple[SourceRef, ...] = ()


class ExportRecord(NewExport):
    state: ExportState
    file_id: UUID | None = None
    failure_reason: str | None = None
    unsupported_characters: tuple[str, ...] = ()
    page_count: int | None = None
    byte_size: int | None = None
    render_attempts: int = 0
    # Each time an export is rendered again (its file was deleted, or it failed for a passing reason).
    generation: int = 0
    failure_retryable: bool = False
    created_at: datetime
    updated_at: datetime
    rendered_at: datetime | None = None

    def _output(self, what: str) -> UUID:
        return uuid5(self.export_id, what if self.generation == 0 else f"{what}-{self.generation}")

    @property
    def output_file_id(self) -> UUID:
        """The file this generation of the rendering becomes: derived from the export, so a retried render
        reuses its row."""
        return self._output("file")

    @property
    def output_version_id(self) -> UUID:
        return self._output("version")


class RenderJob(BaseModel):
    """What the render worker is handed: which export, of which tenant (ids only, never content)."""

    model_config = ConfigDict(frozen=True)

    tenant_id: str
    export_id: UUID
