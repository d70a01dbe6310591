"""The extracted document: a list of located blocks, never one long string.

A table keeps its rows and cells, a heading its level, a list item its depth; every block says where
it came from (page and box, sheet and cell range, slide and shape, paragraph index, or line span), so
a citation can point back at the exact place. Failure is a value from a closed set, not an exception.
"""

from collections.abc import Iterable
from enum import StrEnum
from itertools import islice

from pydantic import AliasChoices, AliasGenerator, BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from shared.domain.files import FailureReason
from shared.domain.recognition import LOW_CONFIDENCE_THRESHOLD, BoundingBox

# A block as the API sends it (camelCase: GET /v1/files/{id}/document) is read back as the same block: each field is
# also read under its camelCase name, so a client never loses one it copied (an artifact's blocks, an edit's).
_EITHER_SPELLING = ConfigDict(
    frozen=True, alias_generator=AliasGenerator(validation_alias=lambda name: AliasChoices(name, to_camel(name)))
)


class BlockKind(StrEnum):
    HEADING = "heading"
    PARAGRAPH = "paragraph"
    LIST_ITEM = "list_item"
    TABLE = "table"
    CODE = "code"
    QUOTE = "quote"
    IMAGE = "image"
    PAGE_BREAK = "page_break"
    # A vision model's reading of an image: an inference, never a quote, so it is its own kind all the
    # way to the citation (and never shares a chunk with transcribed text).
    DESCRIPTION = "description"


class Location(BaseModel):
    """Where a block is in its source; only the fields that apply to the format are set."""

    model_config = _EITHER_SPELLING

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
    # A recording's transcript: where the block is spoken, in seconds from the start, and who speaks it when
    # the engine labels speakers (shared/domain/transcription.py).
    start_seconds: float | None = None
    end_seconds: float | None = None
    speaker: str | None = None


class Table(BaseModel):
    model_config = _EITHER_SPELLING

    rows: tuple[tuple[str, ...], ...]
    # How many leading rows are headers (0 when the evidence for a header row is not there).
    header_rows: int = 0


class Block(BaseModel):
    model_config = _EITHER_SPELLING

    kind: BlockKind
    text: str = ""
    location: Location = Field(default_factory=Location)
    level: int | None = None  # heading level 1..6
    depth: int | None = None  # list nesting, 0 for top level
    ordered: bool | None = None  # list item of a numbered list
    table: Table | None = None
    image_ref: str | None = None  # where the image's bytes are, for OCR and vision
    heading_path: tuple[str, ...] = ()
    # How sure OCR was of this text (0..1); None when it was read from a text layer, not recognised.
    confidence: float | None = None

    @property
    def size(self) -> int:
        """Characters this block costs a reader: its text, or its cells for a table."""
        if self.table is not None:
            return sum(len(cell) for row in self.table.rows for cell in row)
        return len(self.text)


class DoubtfulTextLayer(BaseModel):
    """A page whose text layer is kept only until OCR reads the page: it says little of what the page shows,
    or is not text (`reason` says which, in words a reader of the file's warnings understands)."""

    model_config = ConfigDict(frozen=True)

    page: int
    reason: str


class ExtractedDocument(BaseModel):
    model_config = ConfigDict(frozen=True)

    media_type: str
    blocks: tuple[Block, ...]
    page_count: int | None = None
    pages_without_text: tuple[int, ...] = ()
    # Pages with a text layer not to be trusted: OCR reads them as it reads pages without text, and a page OCR
    # returns text for gives its layer up (one OCR returns blank, or cannot read, keeps it).
    doubtful_text_layers: tuple[DoubtfulTextLayer, ...] = ()
    warnings: tuple[str, ...] = ()
    truncated: bool = False
    # Pages (1-based; 1 for an image) whose text OCR recognised, and its character-weighted confidence.
    # None when nothing was recognised: a text layer is read, not guessed, so a confidence would mean nothing.
    recognized_pages: tuple[int, ...] = ()
    confidence: float | None = None
    # A recording: how long it lasts, and the language its speech was transcribed in (BCP-47, as the engine said).
    duration_seconds: float | None = None
    language: str | None = None
    # The title the file declares (a PDF's or an Office file's title property, an HTML <title>), as written: a
    # chunk's context names its document by it when no heading does (shared/domain/chunk_context.py).
    title: str | None = None

    @property
    def low_confidence(self) -> bool:
        return self.confidence is not None and self.confidence < LOW_CONFIDENCE_THRESHOLD


class ExtractionFailure(BaseModel):
    model_config = ConfigDict(frozen=True)

    reason: FailureReason
    detail: str

    @property
    def user_sentence(self) -> str:
        return self.reason.user_sentence


ExtractionOutcome = ExtractedDocument | ExtractionFailure


# The largest stored document (its JSON) anything reads back: far above what the extraction limits let a
# document grow to (10 MiB of text in at most 100,000 blocks), and the bound on a parser's answer.
MAX_DOCUMENT_BYTES = 256 * 1024 * 1024


class ExtractionLimits(BaseModel):
    """Every dimension an attacker-controlled document can grow in."""

    model_config = ConfigDict(frozen=True)

    max_bytes: int = 100 * 1024 * 1024  # read from storage: refused, never truncated
    max_pages: int = 2_000  # refused, naming the count and the limit
    max_text_bytes: int = 10 * 1024 * 1024  # extracted text kept: truncated, and said so
    max_blocks: int = 100_000  # separate from text: a million empty paragraphs cost no text
    # Columns kept per table row: a reader sees every row padded to the widest, so one wide row would
    # widen the whole table (and every repeated header) to it.
    max_columns: int = 256
    timeout_seconds: float = 120.0  # enforced from outside the parser
    max_inflated_bytes: int = 512 * 1024 * 1024  # decompressed PDF streams / OOXML members, as actually inflated


def _row_cost(row: tuple[str, ...], width: int) -> int:
    """Bytes a row costs in a table `width` wide: every cell at least one, the padding included (a reader
    receives the table padded to its widest row, and empty cells are how a tiny file grows a huge table)."""
    return sum(max(1, len(cell.encode())) for cell in row) + max(0, width - len(row))


def _table_width(table: Table) -> int:
    return max((len(row) for row in table.rows), default=0)


def _cost(block: Block) -> int:
    """Bytes a block costs: its text, and a table's rows times its width."""
    if block.table is None:
        return len(block.text.encode())
    width = _table_width(block.table)
    return len(block.text.encode()) + sum(_row_cost(row, width) for row in block.table.rows)


def _shortened(block: Block, budget: int) -> Block | None:
    """As much of the block as fits in `budget` bytes: leading text, or leading rows (header kept)."""
    if budget <= 0:
        return None
    if block.table is not None:
        table = block.table
        width = _table_width(table)
        kept: list[tuple[str, ...]] = []
        spent = len(block.text.encode())
        for row in table.rows:
            spent += _row_cost(row, width)
            if spent > budget:
                break
            kept.append(row)
        if len(kept) <= table.header_rows:
            return None
        return block.model_copy(update={"table": Table(rows=tuple(kept), header_rows=table.header_rows)})
    text = block.text.encode()[:budget].decode("utf-8", errors="ignore").rstrip()
    return block.model_copy(update={"text": text}) if text else None


def _without_nul(block: Block) -> Block:
    """NUL is not text (PostgreSQL refuses it in a text column, and no reader shows it): dropped once,
    here, so the stored document, the chunks and every excerpt agree."""
    table = block.table
    has_nul = "\x00" in block.text or (table is not None and any("\x00" in cell for row in table.rows for cell in row))
    if not has_nul:
        return block
    update: dict[str, object] = {"text": block.text.replace("\x00", "")}
    if table is not None:
        rows = tuple(tuple(cell.replace("\x00", "") for cell in row) for row in table.rows)
        update["table"] = Table(rows=rows, header_rows=table.header_rows)
    return block.model_copy(update=update)


class BlockCollector:
    """Collects a parser's blocks within the limits: text beyond the budget is cut (and said so), blocks
    beyond the count are dropped (and said so); heading paths are kept as headings go by."""

    def __init__(self, limits: ExtractionLimits) -> None:
        self._limits = limits
        self._blocks: list[Block] = []
        self._text_bytes = 0
        self._headings: list[tuple[int, str]] = []
        self.warnings: list[str] = []
        self.truncated = False

    @property
    def limits(self) -> ExtractionLimits:
        return self._limits

    def kept_columns(self, cells: Iterable[str]) -> tuple[str, ...]:
        """A table row's cells up to the column limit (said once): for a parser to cut a row as it
        builds it, so that a row of a hundred thousand cells is never held whole."""
        limit = self._limits.max_columns
        row = tuple(islice(cells, limit + 1))
        if len(row) <= limit:
            return row
        self.columns_cut()
        return row[:limit]

    def columns_cut(self) -> None:
        """Say (once) that a table lost columns to the limit."""
        warning = f"only the first {self._limits.max_columns} columns were kept (the column limit)"
        if warning not in self.warnings:
            self.warnings.append(warning)

    def add(self, block: Block) -> bool:
        """Keep the block if the limits allow; False once nothing more will be kept."""
        if self.truncated:
            return False
        block = self._narrowed(_without_nul(block))
        if len(self._blocks) >= self._limits.max_blocks:
            self._stop(f"only the first {self._limits.max_blocks} blocks were kept (the block limit)")
            return False
        path_cost = sum(len(text.encode()) for _, text in self._headings)
        cost = _cost(block) + path_cost
        remaining = self._limits.max_text_bytes - self._text_bytes
        if cost > remaining:
            # Half a document is still useful: keep what fits of this block, then stop, and say so.
            self._stop(f"text was cut at {self._limits.max_text_bytes} bytes (the extracted text limit)")
            partial = _shortened(block, remaining - path_cost)
            if partial is None:
                return False
            block, cost = partial, _cost(partial) + path_cost
        self._text_bytes += cost
        if block.kind is BlockKind.HEADING and block.level is not None:
            self._headings = [(level, text) for level, text in self._headings if level < block.level]
            path = tuple(text for _, text in self._headings)
            self._headings.append((block.level, block.text))
        else:
            path = tuple(text for _, text in self._headings)
        self._blocks.append(block.model_copy(update={"heading_path": path}))
        return not self.truncated

    def _narrowed(self, block: Block) -> Block:
        """Every table within the column limit, whichever parser made it."""
        table = block.table
        if table is None or _table_width(table) <= self._limits.max_columns:
            return block
        rows = tuple(self.kept_columns(row) for row in table.rows)
        return block.model_copy(update={"table": Table(rows=rows, header_rows=table.header_rows)})

    def _stop(self, warning: str) -> None:
        self.truncated = True
        self.warnings.append(warning)

    def document(
        self,
        media_type: str,
        *,
        page_count: int | None = None,
        pages_without_text: tuple[int, ...] = (),
        doubtful_text_layers: tuple[DoubtfulTextLayer, ...] = (),
        warnings: tuple[str, ...] = (),
        title: str | None = None,
    ) -> ExtractedDocument:
        return ExtractedDocument(
            media_type=media_type,
            blocks=tuple(self._blocks),
            page_count=page_count,
            pages_without_text=pages_without_text,
            doubtful_text_layers=doubtful_text_layers,
            warnings=tuple(self.warnings) + warnings,
            truncated=self.truncated,
            title=_declared_title(title),
        )


# A title property is the file's to write: more than this is not a title, and is not kept whole.
MAX_DECLARED_TITLE_CHARACTERS = 1_000


def _declared_title(title: object) -> str | None:
    if not isinstance(title, str):
        return None
    kept = title.replace("\x00", "").strip()[:MAX_DECLARED_TITLE_CHARACTERS]
    return kept or None
