"""Indexed knowledge: chunks as the chunker cuts them and the indexes store them, and what the lanes return."""

from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, ConfigDict

from shared.domain.document import BlockKind
from shared.domain.recognition import BoundingBox

HEADING_SEPARATOR = " > "


# A chunk's regions are bounded whatever its blocks: 200 one-line blocks are cited as a few runs of lines.
MAX_CHUNK_REGIONS = 8


class ChunkRegion(BaseModel):
    """Where one block of a chunk (or a run of adjacent ones) is, and which part of the chunk's body is its
    text, so a citation can name the block that matched rather than the whole chunk."""

    model_config = ConfigDict(frozen=True)

    start: int  # the region's text is the chunk body's [start:end]
    end: int
    page: int | None = None
    box: BoundingBox | None = None
    sheet: str | None = None
    cell_range: str | None = None
    slide: int | None = None
    shape: str | None = None
    line_start: int | None = None
    line_end: int | None = None
    paragraph_start: int | None = None
    paragraph_end: int | None = None
    table_index: int | None = None
    start_seconds: float | None = None
    end_seconds: float | None = None
    speaker: str | None = None


class ChunkLocation(BaseModel):
    """Where a chunk's text is in its source: the span of its blocks, in the format's own terms."""

    model_config = ConfigDict(frozen=True)

    # In a paged document a chunk never crosses a page: page_start == page_end. Chunks stored before that
    # rule may span two pages, with no box and no regions.
    page_start: int | None = None
    page_end: int | None = None
    box: BoundingBox | None = None  # only when every block is on one page and has a box: their union
    sheet: str | None = None
    cell_range: str | None = None
    slide: int | None = None
    line_start: int | None = None
    line_end: int | None = None
    paragraph_start: int | None = None  # DOCX: the document's paragraphs, counted from 0
    paragraph_end: int | None = None
    table_index: int | None = None  # DOCX: the document's tables, counted from 0
    shape: str | None = None  # PPTX: the shape on the slide
    # A recording: the span its blocks are spoken in (seconds from the start), and the speaker they agree on.
    start_seconds: float | None = None
    end_seconds: float | None = None
    speaker: str | None = None
    # Set when OCR (or, for a recording, the speech engine) recognised the text: the least confidence among its
    # blocks. A transcription, not a quote.
    ocr_confidence: float | None = None
    # Its blocks' places in body order, at most MAX_CHUNK_REGIONS; empty for chunks stored without them.
    regions: tuple[ChunkRegion, ...] = ()


class ChunkDraft(BaseModel):
    """One chunk as cut from an extracted document, before it is embedded and stored."""

    model_config = ConfigDict(frozen=True)

    ordinal: int  # 0.. in document order; with (file, version) it makes the chunk's stable id
    text: str  # the body, exactly as rendered from its blocks (what an excerpt quotes)
    heading_path: tuple[str, ...]
    block_kind: BlockKind  # TABLE for a table or a piece of one; otherwise the kind of its first block
    location: ChunkLocation
    block_start: int  # index of its first block in the document
    block_end: int  # index of its last block (inclusive)
    parent: int | None  # index of the heading block it sits under, None before the first heading
    token_count: int  # of `content`, in the embedding model's tokens
    # The document's first heading, on the first chunk only (ordinal 0), for the title lane: heading paths
    # may be trimmed, so they cannot be relied on to still hold it.
    document_title: str | None = None
    # The language it is written in (ISO 639-1), as detected when the document was chunked or as the file declares;
    # None when it could not be told. It picks the analyser the keyword lane reads it with.
    language: str | None = None
    # The document's title when its heading path does not begin with it, and a table's caption
    # (shared/domain/chunk_context.py): context, indexed with the chunk, never quoted.
    title: str | None = None
    caption: str | None = None
    # On AWS when configured, a model's one sentence on where the chunk sits in its document
    # (shared/domain/chunk_situations.py): context too, after the rest, never quoted.
    situation: str | None = None

    @property
    def context(self) -> tuple[str, ...]:
        """What the chunk is indexed under: its document's title, its heading path, its table's caption, and its
        situating sentence when a model wrote one."""
        context = chunk_context(self.title, self.heading_path, self.caption)
        return (*context, self.situation) if self.situation else context

    @property
    def content(self) -> str:
        """What is embedded and keyword-indexed: the context, then the body. "Revenue rose 9%" alone is
        unretrievable; under "Northwind Q3 2025 report > By region" it is found and explicable."""
        return embedded_content(self.context, self.text)


def chunk_context(title: str | None, heading_path: tuple[str, ...], caption: str | None) -> tuple[str, ...]:
    return (*((title,) if title else ()), *heading_path, *((caption,) if caption else ()))


def embedded_content(context: tuple[str, ...], text: str) -> str:
    """The context's parts on one line, then the body: body_offset = len(content) - len(text) finds the body."""
    if not context:
        return text
    return f"{HEADING_SEPARATOR.join(context)}\n\n{text}"


class IndexedChunk(BaseModel):
    """One chunk of one file version, as stored for both retrieval lanes (with its citation snapshot)."""

    model_config = ConfigDict(frozen=True)

    chunk_id: str
    file_id: str
    version_id: str
    collection_id: str
    filename: str
    media_type: str
    uploaded_at: datetime
    draft: ChunkDraft
    content_hash: str
    embedding: tuple[float, ...] | None
    embedding_model: str | None


class IndexingResult(BaseModel):
    """What indexing one version did; recorded on the version and reported by the step."""

    model_config = ConfigDict(frozen=True)

    chunk_count: int
    embedded_count: int
    embedding_model: str | None
    # Why some chunks have no vector (the embedder was unavailable or failed); they are keyword-searchable
    # now and embedded by the next re-index.
    embedding_gap: str | None = None
    truncated: bool = False
    # Why some chunks were indexed without a situating sentence where a model writes them (shared/domain/
    # chunk_situations.py): they keep their deterministic context, and a re-index asks again.
    context_gap: str | None = None
    context_model: str | None = None  # the model that situated them, where one was asked


class IndexWrite(StrEnum):
    STORED = "stored"
    SUPERSEDED = "superseded"  # a newer version of the file is indexed: this one's chunks are not written
    NOT_CLAIMED = "not_claimed"  # deleted, or taken over by another attempt, while it was being indexed


class CollectionCoverage(BaseModel):
    model_config = ConfigDict(frozen=True)

    collection_id: str
    files: int
    indexed: int
    failed: int
    in_progress: int
    stale: int  # indexed by another embedding model than the current one
    lexical_only: int  # some chunks have no vector yet


class RankedChunk(BaseModel):
    """A lane's answer: which chunk, at which rank, with the lane's own score (not comparable across lanes)."""

    model_config = ConfigDict(frozen=True)

    chunk_id: str
    rank: int
    score: float
