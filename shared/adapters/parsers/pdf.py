"""PDF text layer → headings (inferred from font size), paragraphs and tables, per page, each with its box.

PDFium (pypdfium2) reads the text layer: it is an order of magnitude faster than pypdf here and gives
each character's box and font size. The lines become blocks by the rules OCR output follows too
(shared/domain/layout.py). Pages without a usable text layer are recorded, not failed: OCR reads them
next (a scan with no text layer at all is an empty document with every page listed).
"""

import statistics
from typing import Any

from shared.adapters.parsers.pdf_inflation import inflated_size_exceeds
from shared.domain.document import BlockCollector, ExtractionFailure, ExtractionLimits, ExtractionOutcome
from shared.domain.files import FailureReason
from shared.domain.layout import Cell, LayoutRules, TextLine, layout_blocks
from shared.domain.recognized_layout import NO_TEXT_LAYER_WARNING_PREFIX

PDF_TYPE = "application/pdf"
# Fewer visible characters than this on a page: no usable text layer (a page number, a stray mark).
MIN_PAGE_CHARACTERS = 16
_PASSWORD_ERROR = 4  # FPDF_ERR_PASSWORD
# A gap this many font sizes wide inside a line separates columns (word spaces are about a quarter).
COLUMN_GAP_EMS = 1.0
# Font sizes are exact in a text layer: lines within 0.6 pt of each other set one paragraph.
PDF_LAYOUT = LayoutRules(size_tolerance=0.6)


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
            lines: list[TextLine] = []
            without_text: list[int] = []
            for number in range(1, pages + 1):
                try:
                    page_lines = _page_lines(document[number - 1], number)
                except pdfium.PdfiumError as error:
                    return ExtractionFailure(
                        reason=FailureReason.MALFORMED, detail=f"page {number} is damaged: {error}"
                    )
                if sum(len(line.text.replace(" ", "")) for line in page_lines) < MIN_PAGE_CHARACTERS:
                    without_text.append(number)
                else:
                    lines.extend(page_lines)
        finally:
            document.close()
        collector = BlockCollector(limits)
        # A page without a usable text layer is not a failure here: OCR reads it next, where there is OCR.
        for block in layout_blocks(lines, PDF_LAYOUT):
            if not collector.add(block):
                break
        warnings = (f"{NO_TEXT_LAYER_WARNING_PREFIX} {_pages(without_text)} (of {pages})",) if without_text else ()
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


def _page_lines(page: Any, number: int) -> list[TextLine]:
    import pypdfium2.raw as pdfium_c

    # The visible page (crop box) in user space (y up): boxes are measured from its own top-left corner,
    # wherever it sits, and normalised to its size.
    crop_left, crop_bottom, crop_right, crop_top = page.get_cropbox()
    width, height = max(crop_right - crop_left, 1.0), max(crop_top - crop_bottom, 1.0)
    textpage = page.get_textpage()
    try:
        text = textpage.get_text_range()
        # One box per character (a few milliseconds a page): line extents, and the gaps that reveal columns.
        boxes = [textpage.get_charbox(i) for i in range(min(len(text), textpage.count_chars()))]
        lines: list[TextLine] = []
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
                TextLine(
                    page=number,
                    text=" ".join(line.split()),
                    size=size,
                    left=(min(boxes[i][0] for i in visible) - crop_left) / width,
                    top=(crop_top - max(boxes[i][3] for i in visible)) / height,
                    right=(max(boxes[i][2] for i in visible) - crop_left) / width,
                    bottom=(crop_top - min(boxes[i][1] for i in visible)) / height,
                    cells=_cells(text, boxes, visible, size, left=crop_left, width=width),
                )
            )
        return lines
    finally:
        textpage.close()
        page.close()


def _cells(
    text: str,
    boxes: list[tuple[float, float, float, float]],
    visible: list[int],
    size: float,
    *,
    left: float,
    width: float,
) -> tuple[Cell, ...]:
    """The line cut where the ink stops for much longer than a word space: candidate table cells."""
    threshold = max(size * COLUMN_GAP_EMS, 4.0)
    cells: list[Cell] = []
    group: list[int] = []
    for index in visible:
        if group and boxes[index][0] - boxes[group[-1]][2] > threshold:
            cells.append(_cell(text, boxes, group, left=left, width=width))
            group = []
        group.append(index)
    if group:
        cells.append(_cell(text, boxes, group, left=left, width=width))
    return tuple(cells)


def _cell(
    text: str, boxes: list[tuple[float, float, float, float]], group: list[int], *, left: float, width: float
) -> Cell:
    words = text[group[0] : group[-1] + 1]
    return Cell(
        text=" ".join(words.split()),
        left=(boxes[group[0]][0] - left) / width,
        right=(boxes[group[-1]][2] - left) / width,
    )
