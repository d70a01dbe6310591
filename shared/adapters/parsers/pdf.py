"""PDF text layer → headings (inferred from font size), paragraphs, per page, each with its bounding box.

PDFium (pypdfium2) reads the text layer: it is an order of magnitude faster than pypdf here and gives
each character's box and font size. A PDF has no headings, only text that happens to be bigger, so
a heading is a short line set clearly larger than the body text. Pages without a usable text layer are
recorded (OCR reads them later). A table is recovered from aligned text only when the evidence is
strong (several consecutive rows cut into the same aligned columns): a wrong table is worse than none,
so anything less stays paragraphs.
"""

import statistics
from dataclasses import dataclass
from typing import Any

from shared.adapters.parsers.pdf_inflation import inflated_size_exceeds
from shared.domain.document import (
    Block,
    BlockCollector,
    BlockKind,
    ExtractionFailure,
    ExtractionLimits,
    ExtractionOutcome,
    Location,
    Table,
)
from shared.domain.files import FailureReason
from shared.domain.recognition import BoundingBox

PDF_TYPE = "application/pdf"
# Fewer visible characters than this on a page: no usable text layer (a page number, a stray mark).
MIN_PAGE_CHARACTERS = 16
HEADING_SIZE_RATIO = 1.15
MAX_HEADING_CHARACTERS = 160
_PASSWORD_ERROR = 4  # FPDF_ERR_PASSWORD
# A gap this many font sizes wide inside a line separates columns (word spaces are about a quarter).
COLUMN_GAP_EMS = 1.0
# A table needs at least this many rows with the same columns, aligned: a wrong table is worse than none.
MIN_TABLE_ROWS = 3
MAX_MEDIAN_CELL_CHARACTERS = 24
MAX_CELL_CHARACTERS = 80


@dataclass(frozen=True)
class _Frame:
    """The visible page in PDF user space (points): its top-left corner and size."""

    left: float
    top: float
    width: float
    height: float


@dataclass(frozen=True)
class _Cell:
    text: str
    left: float
    right: float


@dataclass
class _Line:
    page: int
    text: str
    size: float
    left: float
    bottom: float
    right: float
    top: float
    cells: tuple[_Cell, ...] = ()


class PdfParser:
    media_types = frozenset({PDF_TYPE})

    def parse(self, content: bytes, limits: ExtractionLimits) -> ExtractionOutcome:
        import pypdfium2 as pdfium

        document = _open(content, limits)
        if isinstance(document, ExtractionFailure):
            return document
        try:
            pages = len(document)
            if pages > limits.max_pages:
                return ExtractionFailure(
                    reason=FailureReason.TOO_MANY_PAGES,
                    detail=f"the document has {pages} pages; the limit is {limits.max_pages}",
                )
            lines: list[_Line] = []
            sizes: dict[int, _Frame] = {}
            without_text: list[int] = []
            for number in range(1, pages + 1):
                try:
                    page_lines, size = _page_lines(document[number - 1], number)
                except pdfium.PdfiumError as error:
                    return ExtractionFailure(
                        reason=FailureReason.MALFORMED, detail=f"page {number} is damaged: {error}"
                    )
                sizes[number] = size
                if sum(len(line.text.replace(" ", "")) for line in page_lines) < MIN_PAGE_CHARACTERS:
                    without_text.append(number)
                else:
                    lines.extend(page_lines)
        finally:
            document.close()
        if not lines:
            return ExtractionFailure(
                reason=FailureReason.NO_TEXT_LAYER, detail=f"none of its {pages} pages has a text layer"
            )
        collector = BlockCollector(limits)
        for block in _blocks(lines, sizes):
            if not collector.add(block):
                break
        warnings = (
            (f"{len(without_text)} of {pages} pages have no text layer: {_pages(without_text)}",)
            if without_text
            else ()
        )
        return collector.document(PDF_TYPE, page_count=pages, pages_without_text=tuple(without_text), warnings=warnings)


def _open(content: bytes, limits: ExtractionLimits) -> Any:
    """The PDFium document, or the failure that stops it before any page is read."""
    import pypdfium2 as pdfium

    if inflated_size_exceeds(content, limits.max_inflated_bytes):
        return ExtractionFailure(
            reason=FailureReason.TOO_LARGE,
            detail=f"its compressed streams inflate past {limits.max_inflated_bytes} bytes",
        )
    try:
        return pdfium.PdfDocument(content)
    except pdfium.PdfiumError as error:
        if getattr(error, "err_code", None) == _PASSWORD_ERROR:
            return ExtractionFailure(reason=FailureReason.ENCRYPTED, detail="the PDF is password-protected")
        return ExtractionFailure(reason=FailureReason.MALFORMED, detail=f"PDFium could not open it: {error}")


def _pages(numbers: list[int]) -> str:
    shown = ", ".join(str(n) for n in numbers[:20])
    return shown + (f" and {len(numbers) - 20} more" if len(numbers) > 20 else "")


def _page_lines(page: Any, number: int) -> tuple[list[_Line], _Frame]:
    import pypdfium2.raw as pdfium_c

    # The visible page (crop box) in user space: boxes are measured from its own corner, wherever it sits.
    crop_left, crop_bottom, crop_right, crop_top = page.get_cropbox()
    frame = _Frame(
        left=crop_left, top=crop_top, width=max(crop_right - crop_left, 1.0), height=max(crop_top - crop_bottom, 1.0)
    )
    textpage = page.get_textpage()
    try:
        text = textpage.get_text_range()
        # One box per character (a few milliseconds a page): line extents, and the gaps that reveal columns.
        boxes = [textpage.get_charbox(i) for i in range(min(len(text), textpage.count_chars()))]
        lines: list[_Line] = []
        position = 0
        for raw in text.split("\n"):
            start, position = position, position + len(raw) + 1
            line = raw.rstrip("\r")
            if not line.strip():
                continue
            first = start + (len(line) - len(line.lstrip()))
            last = min(start + len(line.rstrip()) - 1, len(boxes) - 1)
            if last < first:
                continue
            samples = sorted({first, (first + last) // 2, last})
            size = round(statistics.median(pdfium_c.FPDFText_GetFontSize(textpage, i) for i in samples), 1)
            visible = [i for i in range(first, last + 1) if not text[i].isspace()]
            lines.append(
                _Line(
                    page=number,
                    text=" ".join(line.split()),
                    size=size,
                    left=min(boxes[i][0] for i in visible),
                    bottom=min(boxes[i][1] for i in visible),
                    right=max(boxes[i][2] for i in visible),
                    top=max(boxes[i][3] for i in visible),
                    cells=_cells(text, boxes, visible, size),
                )
            )
        return lines, frame
    finally:
        textpage.close()
        page.close()


def _cells(
    text: str, boxes: list[tuple[float, float, float, float]], visible: list[int], size: float
) -> tuple[_Cell, ...]:
    """The line cut where the ink stops for much longer than a word space: candidate table cells."""
    threshold = max(size * COLUMN_GAP_EMS, 4.0)
    cells: list[_Cell] = []
    group: list[int] = []
    for index in visible:
        if group and boxes[index][0] - boxes[group[-1]][2] > threshold:
            cells.append(_cell(text, boxes, group))
            group = []
        group.append(index)
    if group:
        cells.append(_cell(text, boxes, group))
    return tuple(cells)


def _cell(text: str, boxes: list[tuple[float, float, float, float]], group: list[int]) -> _Cell:
    words = text[group[0] : group[-1] + 1]
    return _Cell(text=" ".join(words.split()), left=boxes[group[0]][0], right=boxes[group[-1]][2])


def _heading_levels(lines: list[_Line]) -> tuple[float, dict[float, int]]:
    """The body size (by characters), and a level for each size set clearly larger than it."""
    weight: dict[float, int] = {}
    for line in lines:
        weight[line.size] = weight.get(line.size, 0) + len(line.text)
    body = max(weight, key=lambda size: weight[size])
    larger = sorted({line.size for line in lines if line.size >= body * HEADING_SIZE_RATIO}, reverse=True)
    return body, {size: min(level, 6) for level, size in enumerate(larger, start=1)}


def _blocks(lines: list[_Line], sizes: dict[int, _Frame]) -> list[Block]:
    _, levels = _heading_levels(lines)
    tables = _table_runs(lines)
    blocks: list[Block] = []
    paragraph: list[_Line] = []

    def flush() -> None:
        if paragraph:
            blocks.append(_block(BlockKind.PARAGRAPH, paragraph, sizes))
            paragraph.clear()

    index = 0
    while index < len(lines):
        line = lines[index]
        if index in tables:
            flush()
            end = tables[index]
            blocks.append(_table_block(lines[index:end], sizes))
            index = end
            continue
        level = levels.get(line.size)
        if level is not None and len(line.text) <= MAX_HEADING_CHARACTERS:
            flush()
            blocks.append(_block(BlockKind.HEADING, [line], sizes, level=level))
        else:
            if paragraph and not _continues(paragraph[-1], line):
                flush()
            paragraph.append(line)
        index += 1
    flush()
    return blocks


def _table_runs(lines: list[_Line]) -> dict[int, int]:
    """start → end (exclusive) of each run of lines that is a table beyond reasonable doubt: at least
    MIN_TABLE_ROWS consecutive lines on one page, each cut into the same number (≥ 2) of cells, every
    column overlapping itself from row to row and never its neighbour."""
    runs: dict[int, int] = {}
    start = 0
    while start < len(lines):
        end = start + 1
        while end < len(lines) and _same_grid(lines[start], lines[end - 1], lines[end]):
            end += 1
        if end - start >= MIN_TABLE_ROWS and len(lines[start].cells) >= 2 and _cell_sized(lines[start:end]):
            runs[start] = end
            start = end
        else:
            start += 1
    return runs


def _cell_sized(rows: list[_Line]) -> bool:
    """Table cells are short; two columns of running prose are not a table, however well aligned."""
    lengths = sorted(len(cell.text) for row in rows for cell in row.cells)
    return lengths[len(lengths) // 2] <= MAX_MEDIAN_CELL_CHARACTERS and lengths[-1] <= MAX_CELL_CHARACTERS


def _same_grid(first: _Line, previous: _Line, line: _Line) -> bool:
    columns = len(first.cells)
    if columns < 2 or len(line.cells) != columns or line.page != first.page:
        return False
    height = max(previous.top - previous.bottom, 1.0)
    if not 0 <= previous.bottom - line.top < height * 2.5:
        return False
    for column, cell in enumerate(line.cells):
        anchor = first.cells[column]
        if cell.right < anchor.left or cell.left > anchor.right:
            return False  # this column drifted away from its own first row
        if column + 1 < columns and cell.right >= first.cells[column + 1].left:
            return False  # it runs into the next column
    return True


def _table_block(rows: list[_Line], sizes: dict[int, _Frame]) -> Block:
    from shared.adapters.parsers.cells import looks_like_header

    cells = [tuple(cell.text for cell in row.cells) for row in rows]
    frame = _block(BlockKind.TABLE, rows, sizes)
    return frame.model_copy(
        update={"text": "", "table": Table(rows=tuple(cells), header_rows=1 if looks_like_header(cells) else 0)}
    )


def _continues(previous: _Line, line: _Line) -> bool:
    """Same page, same size, and the next line down within a normal line gap."""
    height = max(previous.top - previous.bottom, 1.0)
    gap = previous.bottom - line.top
    return line.page == previous.page and abs(line.size - previous.size) < 0.6 and -height < gap < height * 1.2


def _block(kind: BlockKind, lines: list[_Line], sizes: dict[int, _Frame], level: int | None = None) -> Block:
    frame = sizes[lines[0].page]
    left = min(line.left for line in lines)
    right = max(line.right for line in lines)
    top = max(line.top for line in lines)
    bottom = min(line.bottom for line in lines)
    box = BoundingBox(
        left=_unit((left - frame.left) / frame.width),
        top=_unit((frame.top - top) / frame.height),
        width=_unit((right - left) / frame.width),
        height=_unit((top - bottom) / frame.height),
    )
    text = lines[0].text
    for line in lines[1:]:
        # A word hyphenated across lines is one word again.
        text = text[:-1] + line.text if text.endswith("-") and line.text[:1].islower() else f"{text} {line.text}"
    return Block(kind=kind, text=text, level=level, location=Location(page=lines[0].page, box=box))


def _unit(value: float) -> float:
    return min(max(value, 0.0), 1.0)
