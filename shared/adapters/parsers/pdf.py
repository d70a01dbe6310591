"""PDF text layer → headings (inferred from font size), paragraphs, per page, each with its bounding box.

PDFium (pypdfium2) reads the text layer: it is an order of magnitude faster than pypdf here and gives
each character's box and font size. A PDF has no headings, only text that happens to be bigger, so
a heading is a short line set clearly larger than the body text. Pages without a usable text layer are
recorded (OCR reads them later). Tables are not guessed from positions yet: a wrong table is worse
than none, so such text stays paragraphs.
"""

import statistics
from dataclasses import dataclass
from typing import Any

from shared.domain.document import (
    Block,
    BlockCollector,
    BlockKind,
    ExtractionFailure,
    ExtractionLimits,
    ExtractionOutcome,
    Location,
)
from shared.domain.files import FailureReason
from shared.domain.recognition import BoundingBox

PDF_TYPE = "application/pdf"
# Fewer visible characters than this on a page: no usable text layer (a page number, a stray mark).
MIN_PAGE_CHARACTERS = 16
HEADING_SIZE_RATIO = 1.15
MAX_HEADING_CHARACTERS = 160
_PASSWORD_ERROR = 4  # FPDF_ERR_PASSWORD


@dataclass
class _Line:
    page: int
    text: str
    size: float
    left: float
    bottom: float
    right: float
    top: float


class PdfParser:
    media_types = frozenset({PDF_TYPE})

    def parse(self, content: bytes, limits: ExtractionLimits) -> ExtractionOutcome:
        import pypdfium2 as pdfium

        try:
            document = pdfium.PdfDocument(content)
        except pdfium.PdfiumError as error:
            if getattr(error, "err_code", None) == _PASSWORD_ERROR:
                return ExtractionFailure(reason=FailureReason.ENCRYPTED, detail="the PDF is password-protected")
            return ExtractionFailure(reason=FailureReason.MALFORMED, detail=f"PDFium could not open it: {error}")
        try:
            pages = len(document)
            if pages > limits.max_pages:
                return ExtractionFailure(
                    reason=FailureReason.TOO_MANY_PAGES,
                    detail=f"the document has {pages} pages; the limit is {limits.max_pages}",
                )
            lines: list[_Line] = []
            sizes: dict[int, tuple[float, float]] = {}
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


def _pages(numbers: list[int]) -> str:
    shown = ", ".join(str(n) for n in numbers[:20])
    return shown + (f" and {len(numbers) - 20} more" if len(numbers) > 20 else "")


def _page_lines(page: Any, number: int) -> tuple[list[_Line], tuple[float, float]]:
    import pypdfium2.raw as pdfium_c

    width, height = page.get_size()
    textpage = page.get_textpage()
    try:
        text = textpage.get_text_range()
        lines: list[_Line] = []
        position = 0
        for raw in text.split("\n"):
            start, position = position, position + len(raw) + 1
            line = raw.rstrip("\r")
            stripped = line.strip()
            if not stripped:
                continue
            first = start + (len(line) - len(line.lstrip()))
            last = start + len(line.rstrip()) - 1
            # Three characters stand for the line: its size and extent, without a call per character.
            samples = sorted({first, (first + last) // 2, last})
            font_sizes = [pdfium_c.FPDFText_GetFontSize(textpage, i) for i in samples]
            boxes = [textpage.get_charbox(i) for i in samples]
            lines.append(
                _Line(
                    page=number,
                    text=" ".join(stripped.split()),
                    size=round(statistics.median(font_sizes), 1),
                    left=min(b[0] for b in boxes),
                    bottom=min(b[1] for b in boxes),
                    right=max(b[2] for b in boxes),
                    top=max(b[3] for b in boxes),
                )
            )
        return lines, (width, height)
    finally:
        textpage.close()
        page.close()


def _heading_levels(lines: list[_Line]) -> tuple[float, dict[float, int]]:
    """The body size (by characters), and a level for each size set clearly larger than it."""
    weight: dict[float, int] = {}
    for line in lines:
        weight[line.size] = weight.get(line.size, 0) + len(line.text)
    body = max(weight, key=lambda size: weight[size])
    larger = sorted({line.size for line in lines if line.size >= body * HEADING_SIZE_RATIO}, reverse=True)
    return body, {size: min(level, 6) for level, size in enumerate(larger, start=1)}


def _blocks(lines: list[_Line], sizes: dict[int, tuple[float, float]]) -> list[Block]:
    _, levels = _heading_levels(lines)
    blocks: list[Block] = []
    paragraph: list[_Line] = []

    def flush() -> None:
        if paragraph:
            blocks.append(_block(BlockKind.PARAGRAPH, paragraph, sizes))
            paragraph.clear()

    for line in lines:
        level = levels.get(line.size)
        if level is not None and len(line.text) <= MAX_HEADING_CHARACTERS:
            flush()
            blocks.append(_block(BlockKind.HEADING, [line], sizes, level=level))
            continue
        if paragraph and not _continues(paragraph[-1], line):
            flush()
        paragraph.append(line)
    flush()
    return blocks


def _continues(previous: _Line, line: _Line) -> bool:
    """Same page, same size, and the next line down within a normal line gap."""
    height = max(previous.top - previous.bottom, 1.0)
    gap = previous.bottom - line.top
    return line.page == previous.page and abs(line.size - previous.size) < 0.6 and -height < gap < height * 1.2


def _block(
    kind: BlockKind, lines: list[_Line], sizes: dict[int, tuple[float, float]], level: int | None = None
) -> Block:
    width, height = sizes[lines[0].page]
    left = min(line.left for line in lines)
    right = max(line.right for line in lines)
    top = max(line.top for line in lines)
    bottom = min(line.bottom for line in lines)
    box = BoundingBox(
        left=_unit(left / width),
        top=_unit((height - top) / height),
        width=_unit((right - left) / width),
        height=_unit((top - bottom) / height),
    )
    text = lines[0].text
    for line in lines[1:]:
        # A word hyphenated across lines is one word again.
        text = text[:-1] + line.text if text.endswith("-") and line.text[:1].islower() else f"{text} {line.text}"
    return Block(kind=kind, text=text, level=level, location=Location(page=lines[0].page, box=box))


def _unit(value: float) -> float:
    return min(max(value, 0.0), 1.0)
