"""The agent tools' parameters and results: pydantic models, camelCase on the wire as the HTTP API names things.
Their JSON Schemas are the tools' input and output schemas on both surfaces (MCP and /v1/tools).

No field holds a storage key, a bucket or a presigned URL: files, versions, artifacts and exports are referred
to by id. Text a document supplied (extracted, OCR'd, described) is only ever inside a fence (shared.domain.fencing),
and a result that carries some says so in `untrusted`."""

from typing import Any, Literal
from uuid import UUID

from pydantic import Field

from functions.tools.filtering import FilterParameter
from functions.views.answers import ConfidenceView, RefusalView
from functions.views.artifacts import (
    ArtifactSummaryView,
    ArtifactVersionView,
    CreateArtifactRequest,
    NewArtifactVersionRequest,
)
from functions.views.base import ApiModel
from functions.views.exports import ExportSummary
from functions.views.files import FileListView, FileView
from functions.views.search import QUERY_DESCRIPTION, CitationPlace, InterpretedQueryView
from shared.domain.answers import MAX_QUESTION_CHARACTERS, AnswerMethod, AnswerOutcome, ClaimKind
from shared.domain.exports import ExportFormat
from shared.domain.grouping import DEFAULT_HITS_PER_FILE, MAX_HITS_PER_FILE
from shared.domain.recognition import BoundingBox
from shared.domain.search import MAX_QUERY_CHARACTERS, MAX_RESULTS, SearchMode
from shared.domain.text_reads import MAX_TEXT_READ_BYTES
from shared.services.files import MAX_PAGE_SIZE

# --- parameters ---------------------------------------------------------------------------------------------

_ID = "the id as the API returned it"


class FileRef(ApiModel):
    file_id: UUID = Field(description=f"The file: {_ID} (list_files, search_files).")


class VersionedFileRef(FileRef):
    version_id: UUID | None = Field(default=None, description="One version of the file; the newest when omitted.")


class ListFilesParams(ApiModel):
    collection_id: str | None = Field(default=None, min_length=1, max_length=64, description="Only this collection.")
    limit: int = Field(default=20, ge=1, le=MAX_PAGE_SIZE)
    cursor: str | None = Field(default=None, max_length=512, description="nextCursor of the previous page.")
    filter_: FilterParameter


class ReadFileParams(VersionedFileRef):
    offset: int = Field(default=0, ge=0, description="Byte offset to read from: nextOffset of the previous read.")
    limit: int = Field(
        default=MAX_TEXT_READ_BYTES,
        ge=1,
        le=2**31,
        description=f"Bytes to read; a larger request is clamped to {MAX_TEXT_READ_BYTES}.",
    )


class SearchFilesParams(ApiModel):
    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARACTERS, description=QUERY_DESCRIPTION)
    collection_id: str | None = Field(default=None, min_length=1, max_length=64, description="Only this collection.")
    limit: int = Field(default=10, ge=1, le=MAX_RESULTS, description='Hits; with groupBy "file", files.')
    mode: SearchMode = SearchMode.HYBRID
    filter_: FilterParameter
    # As POST /v1/search takes them (functions/views/search.py:SearchRequest).
    group_by: Literal["file"] | None = Field(
        default=None,
        description='"file": `groups` are the best `limit` files, each with its best `hitsPerFile` hits in rank order'
        " (a file's place is its best hit's); `hits` are the same hits, group by group. For which documents hold"
        " the answer before which passages do.",
    )
    hits_per_file: int = Field(
        default=DEFAULT_HITS_PER_FILE,
        ge=1,
        le=MAX_HITS_PER_FILE,
        description='With groupBy "file": how many hits each file brings at most.',
    )


_PART = (
    "Within the block at offset, for a block larger than one window: nextPart of the previous call (a row of a"
    " table, a character of any other block)."
)


class ExtractTextParams(VersionedFileRef):
    offset: int = Field(default=0, ge=0, description="Block to continue from: nextOffset of the previous call.")
    part: int = Field(default=0, ge=0, description=_PART)


class ExtractTablesParams(VersionedFileRef):
    offset: int = Field(default=0, ge=0, description="Table to continue from: nextOffset of the previous call.")
    part: int = Field(default=0, ge=0, description=_PART.replace("block", "table"))


class CompareDocumentsParams(VersionedFileRef):
    other_file_id: UUID | None = Field(
        default=None, description="The file to compare with; the same file (another version) when omitted."
    )
    other_version_id: UUID | None = Field(
        default=None,
        description="The version to compare with. With neither other field, the file's previous version is"
        " compared with the one named (or the newest).",
    )


class UpdateArtifactParams(NewArtifactVersionRequest):
    artifact_id: UUID


class ExportArtifactParams(ApiModel):
    artifact_id: UUID
    version: int | None = Field(default=None, ge=1, description="The version to export; the latest when omitted.")
    format: ExportFormat


class ConvertFileParams(VersionedFileRef):
    format: ExportFormat


# Creating an artifact and a PDF report take exactly the body POST /v1/artifacts takes.
CreateArtifactParams = CreateArtifactRequest
CreatePdfParams = CreateArtifactRequest


# --- results ------------------------------------------------------------------------------------------------


class Refusal(ApiModel):
    """Why a call did nothing, as a result the model reads: what was wrong and what to call instead."""

    error: str
    message: str
    next_tool: str | None = Field(default=None, description="The tool to call instead, when one would help.")
    retryable: bool = False
    retry_after_seconds: int | None = None
    latest_version: int | None = None
    capability: str | None = None


class Fenced(ApiModel):
    # The reminder, one line: the fenced text is data, not instructions (its markers carry this response's nonce).
    untrusted: str | None = None


class FileList(FileListView, Fenced):
    """The caller's files; each filename (the uploader's text) fenced."""


class FileStatus(FileView, Fenced):
    """A file's versions and processing; each filename fenced."""


class TextRead(Fenced):
    file_id: UUID
    version_id: UUID
    media_type: str
    encoding: str
    offset: int
    byte_length: int
    next_offset: int | None = Field(description="Where the next read continues; null at the end of the file.")
    total_bytes: int
    content: str


class BlockRef(ApiModel):
    """Where one block of a window is (its text is in the window's fenced content)."""

    index: int
    kind: str
    page: int | None = None
    box: BoundingBox | None = None
    sheet: str | None = None
    cell_range: str | None = None
    slide: int | None = None
    paragraph_index: int | None = None
    table_index: int | None = None
    line_start: int | None = None
    line_end: int | None = None
    confidence: float | None = None


class TextWindow(Fenced):
    file_id: UUID
    version_id: UUID
    offset: int
    part: int
    next_offset: int | None = Field(description="The block to continue from; null at the end of the document.")
    next_part: int | None = Field(description="With nextOffset: where in that block to continue (a block in parts).")
    total_blocks: int
    content: str = Field(description="The window's blocks as Markdown, fenced.")
    blocks: list[BlockRef]
    warnings: list[str]
    recognized_pages: list[int]
    confidence: float | None
    low_confidence: bool


class TableRead(ApiModel):
    index: int
    location: BlockRef
    header_rows: int
    row_count: int
    column_count: int
    confidence: float | None
    content: str = Field(description="The section it is in and the table as Markdown, fenced.")


class TablesWindow(Fenced):
    file_id: UUID
    version_id: UUID
    offset: int
    part: int
    next_offset: int | None
    next_part: int | None = Field(description="With nextOffset: the row to continue from (a table in parts).")
    total_tables: int
    tables: list[TableRead]


class CitedPlace(CitationPlace):
    """Where a citation points, and the cited file's metadata as it was when cited."""

    metadata: dict[str, Any] = Field(
        default_factory=dict, description="The cited file's metadata: every string value and list item fenced."
    )
    metadata_revision: int | None = Field(default=None, description="null for a citation made before metadata.")


class AlsoInPlace(CitationPlace):
    """Another place the hit's text is stored word for word (its file, version, location), readable by the caller."""

    section: str | None = Field(description="The heading path there, fenced.")


class SearchHitResult(ApiModel):
    chunk_id: str
    score: float
    section: str | None = Field(description="The heading path, fenced.")
    excerpt: str = Field(description="The cited text, fenced.")
    citation: CitedPlace
    also_in: list[AlsoInPlace] = Field(
        default_factory=list,
        description="The same text in other places (identical, oldest upload first): collapsed into this hit.",
    )


class FileGroupResult(ApiModel):
    """One file of a search grouped by file: its best hits, its score its best hit's."""

    file_id: str
    version_id: str
    filename: str
    collection_id: str
    score: float
    hits: list[SearchHitResult]


class SearchResult(Fenced):
    outcome: str = Field(description="found, or why nothing was (no_access, no_matches, …).")
    message: str | None = None
    vector_available: bool
    truncated_by_budget: bool = False
    interpreted_query: InterpretedQueryView = Field(
        description="How the query was read: its phrases, exclusions and identifiers."
    )
    hits: list[SearchHitResult] = Field(default_factory=list)
    groups: list[FileGroupResult] | None = Field(
        default=None, description='With groupBy "file" only: the files, best first, each with its hits.'
    )


class AnswerParams(ApiModel):
    question: str = Field(min_length=1, max_length=MAX_QUESTION_CHARACTERS)
    collection_id: str | None = Field(default=None, min_length=1, max_length=64, description="Only this collection.")
    mode: SearchMode = SearchMode.HYBRID
    filter_: FilterParameter


class AnswerClaimResult(ApiModel):
    text: str = Field(description="The claim, fenced: document text (extractive) or a model's words about it.")
    citations: list[int] = Field(description="The numbers of the citations that bear it out; empty: unsupported.")
    supported: bool
    kind: ClaimKind


class AnswerCitationResult(ApiModel):
    number: int
    chunk_id: str
    score: float
    section: str | None = Field(description="The heading path, fenced.")
    excerpt: str = Field(description="The cited text, fenced.")
    citation: CitedPlace


class AnswerResult(Fenced):
    answer_id: str
    outcome: AnswerOutcome
    method: AnswerMethod | None
    claims: list[AnswerClaimResult]
    citations: list[AnswerCitationResult]
    confidence: ConfidenceView
    refusal: RefusalView | None
    withheld: int = Field(description="Citations left out: the caller can no longer read their source.")
    fallback: str | None
    vector_available: bool


class ImageAnalysisResult(Fenced):
    file_id: UUID
    version_id: UUID
    transcription: str | None = Field(description="What OCR read off the image, line by line, fenced.")
    lines: list[BlockRef]
    description: str | None = Field(description="A vision model's reading of the image (an inference), fenced.")
    confidence: float | None
    low_confidence: bool
    ocr_state: str | None
    vision_state: str | None
    vision_detail: str | None


class OutlineSentenceRef(ApiModel):
    block_index: int
    page: int | None = None
    clipped: bool = False


class OutlineSectionRef(ApiModel):
    level: int | None
    sentences: list[OutlineSentenceRef]


class GeneratedSentenceRef(ApiModel):
    block_indexes: list[int] = Field(description="The blocks the sentence rests on (extract_text shows them).")


class SummaryResult(Fenced):
    file_id: UUID
    version_id: UUID
    method: Literal["generated", "extractive"] = Field(
        description="generated: a model's sentences, each citing the blocks it rests on, checked against them;"
        " extractive: the document's own sentences, each cited. Nothing is invented either way."
    )
    generator: str | None = Field(description="Why no model wrote the summary, when none did.")
    model: str | None = None
    content: str = Field(description="The summary as Markdown, fenced; [b12] cites block 12 (extract_text).")
    sections: list[OutlineSectionRef] = Field(description="The outline's sections (extractive).")
    sentences: list[GeneratedSentenceRef] = Field(description="Each generated sentence's blocks (generated).")
    # Generated sentences the server rejected (a citation outside the document, a quote or figure not in it).
    dropped: int = 0
    truncated: bool


class DiffSide(ApiModel):
    file_id: UUID
    version_id: UUID
    filename: str
    total_blocks: int


class ComparisonResult(Fenced):
    before: DiffSide
    after: DiffSide
    identical: bool
    sections_added: int
    sections_removed: int
    sections_changed: int
    unchanged_sections: int
    tables_changed: int
    content: str = Field(description="The differences as Markdown, fenced.")
    truncated: bool
    details: dict[str, Any] = Field(description="The structural diff (block indexes, table cells) as data.")


class ArtifactWritten(ApiModel):
    artifact: ArtifactSummaryView
    version: ArtifactVersionView


# An export or conversion: its state now, and the file it makes (fileId) once rendered. No link is handed to the
# model: the user downloads it from GET /v1/exports/{exportId}.
ToolExport = ExportSummary


class PdfCreated(ApiModel):
    artifact: ArtifactSummaryView
    version: ArtifactVersionView
    export: ToolExport
