"""What OCR, vision and transcription engines return, independent of the engine.

OCR transcribes (the words on the page, each line with its box and a confidence); vision describes (a
model's reading of an image). They are kept apart all the way to the citation, so an answer can tell a
quote from an inference (docs/ocr.md).
"""

from collections.abc import Callable
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from shared.domain.usage import Usage

# Below this, OCR stops being "a few wrong characters" and becomes "wrong words": the extraction is
# flagged on the document, the read result and the file record.
LOW_CONFIDENCE_THRESHOLD = 0.7
# A line recognised with less confidence than this is not kept as text (it would be searched and cited
# as if it said something); it still counts, at its confidence, in the page's confidence.
MIN_LINE_CONFIDENCE = 0.5
# Pages OCR reads per document; more are left unread and the document says which (Textract's own
# asynchronous limit is 3,000 pages; the local engine reads about one page a second).
MAX_OCR_PAGES = 500


class BoundingBox(BaseModel):
    """Normalised to the page: 0..1 from the top-left corner, so it survives rendering at any DPI."""

    model_config = ConfigDict(frozen=True)

    left: float = Field(ge=0, le=1)
    top: float = Field(ge=0, le=1)
    width: float = Field(ge=0, le=1)
    height: float = Field(ge=0, le=1)

    @property
    def right(self) -> float:
        return self.left + self.width

    @property
    def bottom(self) -> float:
        return self.top + self.height


@dataclass(frozen=True)
class OcrSource:
    """The original a page range is read from: engines that read storage themselves (Textract) use the
    key and version, engines that need the bytes (RapidOCR) call `read`, so nobody reads what they do not use."""

    media_type: str
    # 1-based pages of a PDF or multi-page TIFF to read, ascending; None reads every page (an image).
    pages: tuple[int, ...] | None
    # Pages in the original when known: an engine reading all of them can use the original as it is.
    page_count: int | None
    storage_key: str
    storage_version_id: str | None
    read: Callable[[], bytes]
    # Names this read (version and attempt): a re-delivered start is the same read and gets the same job;
    # a real re-run (a new attempt, a rescan) gets a new one.
    run_id: str = ""


class RecognizedSegment(BaseModel):
    """Words of a line that sit together; a wide gap starts the next segment (a table cell, often)."""

    model_config = ConfigDict(frozen=True)

    text: str
    box: BoundingBox


class RecognizedLine(BaseModel):
    model_config = ConfigDict(frozen=True)

    text: str
    box: BoundingBox
    # Required, never defaulted: an engine that cannot say reports 0 and lets the low-confidence flag fire.
    confidence: float = Field(ge=0, le=1)
    # Left to right; empty when the engine does not say where its words are (the line is one segment).
    segments: tuple[RecognizedSegment, ...] = ()


class RecognizedTable(BaseModel):
    """A table the engine found itself (Textract TABLES): rows of cell texts, header rows first."""

    model_config = ConfigDict(frozen=True)

    box: BoundingBox
    confidence: float = Field(ge=0, le=1)
    rows: tuple[tuple[str, ...], ...]
    header_rows: int = 0


class RecognizedPage(BaseModel):
    model_config = ConfigDict(frozen=True)

    page: int = Field(ge=1)
    # How far the page's content was turned to read it upright (0, 90, 180, 270, clockwise). Boxes are
    # always on the page as it is displayed, so a viewer can highlight them without turning anything.
    rotation_degrees: int = 0
    lines: tuple[RecognizedLine, ...]
    tables: tuple[RecognizedTable, ...] = ()
    # Lines recognised below MIN_LINE_CONFIDENCE: not kept as text, counted here and in `confidence`.
    unreadable_lines: tuple[RecognizedLine, ...] = ()

    @property
    def confidence(self) -> float:
        """Character-weighted mean over everything recognised; 0 for a page where nothing was read."""
        return mean_confidence(
            [(line.confidence, len(line.text)) for line in (*self.lines, *self.unreadable_lines)]
            + [(table.confidence, sum(len(cell) for row in table.rows for cell in row)) for table in self.tables]
        )


class RecognitionResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    engine: str
    pages: tuple[RecognizedPage, ...]
    usage: Usage

    @property
    def confidence(self) -> float:
        weighted = [(page.confidence, page_characters(page)) for page in self.pages]
        return mean_confidence(weighted)


class RecognitionJob(BaseModel):
    """An engine's job still running (Textract's asynchronous PDF analysis): everything needed to collect
    it later, small enough to ride in a workflow's state between polls."""

    model_config = ConfigDict(frozen=True)

    engine: str
    job_id: str
    # analysis (with tables) or text detection: they are collected with different calls.
    analysis: bool
    # Original page numbers: for a copy of only the pages that need OCR, page i of the job is pages[i - 1];
    # for a job on the original itself, the pages to keep (empty: every page). The adapter says which.
    pages: tuple[int, ...]
    # An object the adapter staged for the job (only the pages that need OCR), removed once collected.
    staged_key: str | None = None


class ImageDescription(BaseModel):
    """A model's reading of an image. Always labelled a description, never mixed with transcribed text."""

    model_config = ConfigDict(frozen=True)

    model_id: str
    text: str
    usage: Usage


def page_characters(page: RecognizedPage) -> int:
    return sum(len(line.text) for line in (*page.lines, *page.unreadable_lines)) + sum(
        len(cell) for table in page.tables for row in table.rows for cell in row
    )


def mean_confidence(weighted: list[tuple[float, int]]) -> float:
    """Mean of (confidence, weight) pairs; a weightless item still counts once, so an empty read is 0."""
    total = sum(max(weight, 1) for _, weight in weighted)
    if total == 0:
        return 0.0
    return sum(confidence * max(weight, 1) for confidence, weight in weighted) / total
