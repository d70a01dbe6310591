"""PDF text layer → headings (inferred from font size), paragraphs and tables, per page, each with its box.

PDFium (pypdfium2) reads the text layer: it is an order of magnitude faster than pypdf here and gives
each character's box and font size. The lines become blocks by the rules OCR output follows too
(shared/domain/layout.py). A filled form's values and the comments on a page are text in the file
that the page's content does not draw: each becomes a paragraph on its page, with its box, among the
page's blocks where it sits. Pages without a usable text layer (a form's values count as text, comments
do not) are recorded, not failed: OCR reads them next (a scan with no text layer at all is an empty
document with every page listed). So are pages whose layer is not to be trusted, with the reason
(pdf_text_layer.py: implausible text, or a scan whose layer covers little of its writing); their layer is
kept until OCR returns text for them. Before PDFium opens the file, its streams are counted as they would
decode (pdf_inflation.py).
"""

import logging
import math
import statistics
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any

from shared.adapters.parsers.pdf_inflation import inflation_failure
from shared.adapters.parsers.pdf_text_layer import TextLayerJudge
from shared.domain.document import (
    Block,
    BlockCollector,
    BlockKind,
    DoubtfulTextLayer,
    ExtractionFailure,
    ExtractionLimits,
    ExtractionOutcome,
    Location,
)
from shared.domain.files import FailureReason
from shared.domain.layout import Cell, LayoutRules, TextLine, layout_blocks
from shared.domain.recognition import BoundingBox
from shared.domain.recognized_layout import NO_TEXT_LAYER_WARNING_PREFIX
from shared.ports import DocumentParser

_log = logging.getLogger(__name__)

PDF_TYPE = "application/pdf"
# Fewer visible characters than this on a page: no usable text layer (a page number, a stray mark).
MIN_PAGE_CHARACTERS = 16
# Characters read from one page's text layer: a dense page has some ten thousand. A small file can draw
# one content stream hundreds of times over (millions of characters, whose boxes cost a minute and
# gigabytes here), and the inflated-bytes count does not see it, since the content itself is small.
MAX_PAGE_CHARACTERS = 100_000
_PASSWORD_ERROR = 4  # FPDF_ERR_PASSWORD
_SECURITY_ERROR = 5  # FPDF_ERR_SECURITY: a security handler PDFium does not implement (certificates, DRM)
# A gap this many font sizes wide inside a line separates columns (word spaces are about a quarter).
COLUMN_GAP_EMS = 1.0
# Font sizes are exact in a text layer: lines within 0.6 pt of each other set one paragraph.
PDF_LAYOUT = LayoutRules(size_tolerance=0.6)


class PdfParser(DocumentParser):
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
            form = _form(document)
            judge = TextLayerJudge()
            lines: list[TextLine] = []
            without_text: list[int] = []
            doubtful: list[DoubtfulTextLayer] = []
            marks: dict[int, list[Block]] = {}
            rotations: dict[int, int] = {}
            warnings: list[str] = []
            for number in range(1, pages + 1):
                try:
                    page_lines, page_marks, rotations[number], doubt = _read_page(
                        document[number - 1], number, form, warnings, judge
                    )
                except pdfium.PdfiumError as error:
                    _log.warning("PDFium could not read page %d: %s", number, error)
                    return ExtractionFailure(reason=FailureReason.MALFORMED, detail=damaged_page_detail(number))
                # A form's values are the page's text as much as what its content draws; comments are not.
                typed = sum(_visible(mark.block.text) for mark in page_marks if mark.typed)
                if sum(_visible(line.text) for line in page_lines) + typed < MIN_PAGE_CHARACTERS:
                    without_text.append(number)
                else:
                    lines.extend(page_lines)
                    if doubt is not None:
                        doubtful.append(DoubtfulTextLayer(page=number, reason=doubt))
                marks[number] = [mark.block for mark in page_marks]
            title = _title_property(document)
        finally:
            document.close()
        collector = BlockCollector(limits)
        # A page without a usable text layer is not a failure here: OCR reads it next, where there is OCR.
        for block in _in_reading_order(layout_blocks(lines, PDF_LAYOUT), marks):
            # Boxes are of the page as it is displayed (as OCR's are, read from the rendered page): /Rotate applied.
            if not collector.add(_turned(block, rotations.get(block.location.page or 0, 0))):
                break
        warnings.extend(_text_layer_warnings(without_text, doubtful, judge.unchecked, pages))
        return collector.document(
            PDF_TYPE,
            page_count=pages,
            pages_without_text=tuple(without_text),
            doubtful_text_layers=tuple(doubtful),
            warnings=tuple(warnings),
            title=title,
        )


# A title property is a line; one past this many bytes (UTF-16) is not read at all.
MAX_TITLE_PROPERTY_BYTES = 8_192


def _title_property(document: Any) -> str | None:
    """The document information dictionary's /Title, bounded before it is read."""
    import ctypes

    import pypdfium2.raw as pdfium_c

    key = b"Title\x00"
    size = pdfium_c.FPDF_GetMetaText(document, key, None, 0)
    if size <= 2 or size > MAX_TITLE_PROPERTY_BYTES:
        return None
    buffer = ctypes.create_string_buffer(size)
    pdfium_c.FPDF_GetMetaText(document, key, buffer, size)
    return bytes(buffer.raw[: size - 2]).decode("utf-16-le", errors="replace")


# What the file's owner is told; PDFium's own words go to the log.
UNOPENABLE_PDF_DETAIL = "the PDF is damaged and cannot be opened: save or print it to a new PDF and upload that"


def damaged_page_detail(number: int) -> str:
    return f"page {number} is damaged: save or print the PDF to a new one and upload that"


def _open(content: bytes, limits: ExtractionLimits) -> Any:
    """The PDFium document, or the failure that stops it before any page is read."""
    import pypdfium2 as pdfium

    failure = inflation_failure(content, limits.max_inflated_bytes)
    if failure is not None:
        return failure
    try:
        return pdfium.PdfDocument(content)
    except pdfium.PdfiumError as error:
        code = getattr(error, "err_code", None)
        if code == _PASSWORD_ERROR:
            return ExtractionFailure(reason=FailureReason.ENCRYPTED, detail="the PDF is password-protected")
        if code == _SECURITY_ERROR:
            return ExtractionFailure(
                reason=FailureReason.ENCRYPTED, detail="the PDF is protected by a security handler PDFium cannot open"
            )
        _log.warning("PDFium could not open a PDF: %s", error)
        return ExtractionFailure(reason=FailureReason.MALFORMED, detail=UNOPENABLE_PDF_DETAIL)


def _text_layer_warnings(
    without_text: list[int], doubtful: list[DoubtfulTextLayer], unchecked: list[int], pages: int
) -> list[str]:
    """Pages without a text layer; pages whose layer is not trusted, and why (the first 20 with their reasons);
    pages whose layer was not checked against their scan."""
    warnings: list[str] = []
    if without_text:
        warnings.append(f"{NO_TEXT_LAYER_WARNING_PREFIX} {_pages(without_text)} (of {pages})")
    if doubtful:
        shown = "; ".join(f"page {layer.page}: {layer.reason}" for layer in doubtful[:20])
        more = f"; and {len(doubtful) - 20} more pages" if len(doubtful) > 20 else ""
        warnings.append(f"{DOUBTFUL_TEXT_LAYER_WARNING_PREFIX} {shown}{more}")
    if unchecked:
        warnings.append(
            f"the text layers of pages {_pages(unchecked)} were not checked against their scanned image"
            " (the image pixels decoded to check them are bounded per document)"
        )
    return warnings


# Said once per document; the reasons name what was measured ("text layer covers 6% of the inked area").
DOUBTFUL_TEXT_LAYER_WARNING_PREFIX = "text layers not trusted, so OCR reads these pages where it can:"


def _pages(numbers: list[int]) -> str:
    shown = ", ".join(str(n) for n in numbers[:20])
    return shown + (f" and {len(numbers) - 20} more" if len(numbers) > 20 else "")


def _visible(text: str) -> int:
    return len(text) - text.count(" ")


def _read_page(
    page: Any, number: int, form: Any, warnings: list[str], judge: TextLayerJudge
) -> tuple[list[TextLine], list["_Mark"], int, str | None]:
    """The page's lines of text, the text of its form fields and comments, how far /Rotate turns it, and why
    its text layer is not to be trusted (None when it is, or there is too little of one to judge)."""
    # The visible page (crop box within the media box) in user space (y up): boxes are measured from its own
    # top-left corner, wherever it sits, and normalised to its size. get_bbox, not get_cropbox: the boxes are
    # inheritable from the page tree (fpdf2 writes them there), and get_cropbox reads only the page's own
    # dictionary, falling back to US Letter, which put every box of an A4 page in the wrong place.
    crop = page.get_bbox()
    textpage = page.get_textpage()
    try:
        characters = textpage.count_chars()
        if characters > MAX_PAGE_CHARACTERS:
            warnings.append(
                f"page {number} has {characters} characters: only the first {MAX_PAGE_CHARACTERS} were read"
            )
        lines = _page_lines(textpage, number, crop, min(characters, MAX_PAGE_CHARACTERS))
        marks = _marks(page, textpage, number, crop, form=form, warnings=warnings)
        rotation = page.get_rotation() % 360
        doubt = None
        if sum(_visible(line.text) for line in lines) >= MIN_PAGE_CHARACTERS:
            doubt = judge.doubt(page, textpage, lines, number=number, crop=crop, rotation=rotation)
        return lines, marks, rotation, doubt
    finally:
        textpage.close()
        page.close()


def as_displayed(
    left: float, top: float, right: float, bottom: float, rotation: int
) -> tuple[float, float, float, float]:
    """A rectangle normalised to the unrotated page (0..1 from its top-left) on the page turned clockwise by
    `rotation` degrees, as a viewer shows it: (left, top, right, bottom) again."""
    if rotation == 90:
        return 1 - bottom, left, 1 - top, right
    if rotation == 180:
        return 1 - right, 1 - bottom, 1 - left, 1 - top
    if rotation == 270:
        return top, 1 - right, bottom, 1 - left
    return left, top, right, bottom


def _turned(block: Block, rotation: int) -> Block:
    """The block with its box on the page as displayed. Layout ran on the unrotated page, where the lines of a
    paragraph follow each other down the page as they were written; only the result is turned."""
    box = block.location.box
    if not rotation or box is None:
        return block
    left, top, right, bottom = as_displayed(box.left, box.top, box.right, box.bottom, rotation)
    turned = BoundingBox(left=left, top=top, width=right - left, height=bottom - top)
    return block.model_copy(update={"location": block.location.model_copy(update={"box": turned})})


def _page_lines(textpage: Any, number: int, crop: tuple[float, float, float, float], characters: int) -> list[TextLine]:
    """The lines of the page's first `characters` characters."""
    import pypdfium2.raw as pdfium_c

    crop_left, crop_bottom, crop_right, crop_top = crop
    width, height = max(crop_right - crop_left, 1.0), max(crop_top - crop_bottom, 1.0)
    text = textpage.get_text_range(0, characters)
    # One box per character (a few milliseconds a page): line extents, and the gaps that reveal columns.
    boxes = [textpage.get_charbox(i) for i in range(min(len(text), characters))]
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
        # Text may run past the visible page (or sit outside it): its box is the part on the page.
        lines.append(
            TextLine(
                page=number,
                text=" ".join(line.split()),
                size=size,
                left=_unit((min(boxes[i][0] for i in visible) - crop_left) / width),
                top=_unit((crop_top - max(boxes[i][3] for i in visible)) / height),
                right=_unit((max(boxes[i][2] for i in visible) - crop_left) / width),
                bottom=_unit((crop_top - min(boxes[i][1] for i in visible)) / height),
                cells=_cells(text, boxes, visible, size, left=crop_left, width=width),
            )
        )
    return lines


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


@cache
def _commented_subtypes() -> frozenset[int]:
    import pypdfium2.raw as pdfium_c

    names = "TEXT LINE SQUARE CIRCLE POLYGON POLYLINE HIGHLIGHT UNDERLINE SQUIGGLY STRIKEOUT STAMP CARET INK"
    return frozenset(getattr(pdfium_c, f"FPDF_ANNOT_{name}") for name in (*names.split(), "FILEATTACHMENT"))


# Form fields and comments: text in the file that the page's content does not draw (a filled form's
# values, a sticky note). Each is a paragraph on its page, with its box: a field reads "name: value"
# (one field one block: a citation points at the very field, and a model reads the label with the value).
# At most this many annotations are read on a page, each cut to this many characters, and it is said.
MAX_ANNOTATIONS_PER_PAGE = 300
MAX_ANNOTATION_CHARACTERS = 2_000
_MAX_STRING_BYTES = 1024 * 1024
_MAX_LABEL_CHARACTERS = 200
# What a checked box's own value says when it says nothing but "checked".
_CHECKED_WORDS = frozenset({"", "yes", "on", "true", "1", "x"})


@dataclass(frozen=True)
class _Mark:
    block: Block
    # Typed onto the page (a field's value, a FreeText): the page's text, so no reason to OCR it.
    typed: bool


def _form(document: Any) -> Any:
    """The form handle the field functions need (set up before any page is loaded), if there is a form."""
    import pypdfium2.raw as pdfium_c

    if document.get_formtype() == pdfium_c.FORMTYPE_NONE:
        return None
    document.init_forms()
    return document.formenv.raw if document.formenv is not None else None


def _marks(
    page: Any, textpage: Any, number: int, crop: tuple[float, float, float, float], *, form: Any, warnings: list[str]
) -> list[_Mark]:
    import pypdfium2.raw as pdfium_c

    count = pdfium_c.FPDFPage_GetAnnotCount(page)
    if count > MAX_ANNOTATIONS_PER_PAGE:
        warnings.append(f"page {number} has {count} annotations: only the first {MAX_ANNOTATIONS_PER_PAGE} were read")
    marks: list[_Mark] = []
    seen: set[str] = set()
    cut = False
    for index in range(min(count, MAX_ANNOTATIONS_PER_PAGE)):
        annotation = pdfium_c.FPDFPage_GetAnnot(page, index)
        if not annotation:
            continue
        try:
            read = _annotation_text(annotation, form)
            box = _annotation_box(annotation, crop)
        finally:
            pdfium_c.FPDFPage_CloseAnnot(annotation)
        if read is None or box is None:
            continue
        text, shown, typed = read
        if len(text) > MAX_ANNOTATION_CHARACTERS:
            text, cut = text[:MAX_ANNOTATION_CHARACTERS].rstrip(), True
        # A value the page's content also draws in the field's place (a flattened copy) is there already.
        if text in seen or (typed and _drawn_in(textpage, box, shown, crop)):
            continue
        seen.add(text)
        marks.append(_Mark(Block(kind=BlockKind.PARAGRAPH, text=text, location=Location(page=number, box=box)), typed))
    if cut:
        warnings.append(
            f"page {number}: form values or annotations longer than {MAX_ANNOTATION_CHARACTERS} characters were cut"
        )
    return marks


def _annotation_text(annotation: Any, form: Any) -> tuple[str, str, bool] | None:
    """What an annotation says (its block's text, the part the page might also draw, whether it is typed
    onto the page), or None for one that says nothing to read or is not shown."""
    import pypdfium2.raw as pdfium_c

    if pdfium_c.FPDFAnnot_GetFlags(annotation) & (pdfium_c.FPDF_ANNOT_FLAG_HIDDEN | pdfium_c.FPDF_ANNOT_FLAG_NOVIEW):
        return None
    subtype = pdfium_c.FPDFAnnot_GetSubtype(annotation)
    if subtype == pdfium_c.FPDF_ANNOT_WIDGET:
        field = _field_text(annotation, form) if form is not None else None
        return (f"{field[0]}: {field[1]}" if field[0] else field[1], field[1], True) if field else None
    contents = _clean(_string(pdfium_c.FPDFAnnot_GetStringValue, annotation, b"Contents"))
    if not contents:
        return None
    if subtype == pdfium_c.FPDF_ANNOT_FREETEXT:
        return contents, contents, True
    # A note or a markup's comment (a popup only shows its parent's, so it is not read again).
    return (f"Comment: {contents}", contents, False) if subtype in _commented_subtypes() else None


def _field_text(annotation: Any, form: Any) -> tuple[str, str] | None:
    """A filled field's label and value; None for an empty, secret, unchecked, button or signature field."""
    import pypdfium2.raw as pdfium_c

    kind = pdfium_c.FPDFAnnot_GetFormFieldType(form, annotation)
    label = _clean(_string(pdfium_c.FPDFAnnot_GetFormFieldAlternateName, form, annotation))
    label = (label or _clean(_string(pdfium_c.FPDFAnnot_GetFormFieldName, form, annotation)))[:_MAX_LABEL_CHARACTERS]
    if kind in {pdfium_c.FPDF_FORMFIELD_TEXTFIELD, pdfium_c.FPDF_FORMFIELD_COMBOBOX, pdfium_c.FPDF_FORMFIELD_LISTBOX}:
        password = pdfium_c.FPDFAnnot_GetFormFieldFlags(form, annotation) & pdfium_c.FPDF_FORMFLAG_TEXT_PASSWORD
        value = "" if password else _clean(_string(pdfium_c.FPDFAnnot_GetFormFieldValue, form, annotation))
    elif kind in {pdfium_c.FPDF_FORMFIELD_CHECKBOX, pdfium_c.FPDF_FORMFIELD_RADIOBUTTON}:
        if not pdfium_c.FPDFAnnot_IsChecked(form, annotation):
            return None
        chosen = _clean(_string(pdfium_c.FPDFAnnot_GetFormFieldExportValue, form, annotation))
        if kind == pdfium_c.FPDF_FORMFIELD_CHECKBOX:
            value = "Yes" if chosen.lower() in _CHECKED_WORDS else chosen
        else:
            # An option named "1" or "2" says nothing without the page's picture of it.
            value = chosen if any(character.isalpha() for character in chosen) else ""
    else:
        return None  # a push button, a signature, or what this PDFium does not know
    return (label, value) if value else None


def _string(function: Any, *arguments: Any) -> str:
    """A UTF-16 string out of a PDFium getter (asked for its size first; past a megabyte, left out)."""
    import ctypes

    needed = int(function(*arguments, None, 0))
    if needed <= 2 or needed > _MAX_STRING_BYTES:
        return ""
    buffer = (ctypes.c_ushort * (needed // 2 + 1))()
    function(*arguments, buffer, needed)
    return bytes(buffer)[: needed - 2].decode("utf-16-le", errors="replace")


def _clean(text: str) -> str:
    return " ".join(text.split())


def _annotation_box(annotation: Any, crop: tuple[float, float, float, float]) -> BoundingBox | None:
    import pypdfium2.raw as pdfium_c

    rect = pdfium_c.FS_RECTF()
    if not pdfium_c.FPDFAnnot_GetRect(annotation, rect):
        return None
    corners = (rect.left, rect.bottom, rect.right, rect.top)
    if not all(math.isfinite(value) for value in corners):
        return None
    crop_left, crop_bottom, crop_right, crop_top = crop
    width, height = max(crop_right - crop_left, 1.0), max(crop_top - crop_bottom, 1.0)
    xs = sorted(_unit((x - crop_left) / width) for x in (rect.left, rect.right))
    ys = sorted(_unit((crop_top - y) / height) for y in (rect.bottom, rect.top))
    return BoundingBox(left=xs[0], top=ys[0], width=xs[1] - xs[0], height=ys[1] - ys[0])


def _unit(value: float) -> float:
    return min(max(value, 0.0), 1.0)


def _drawn_in(textpage: Any, box: BoundingBox, text: str, crop: tuple[float, float, float, float]) -> bool:
    """Whether the page's text layer already reads `text` inside `box` (give or take a few points)."""
    crop_left, crop_bottom, crop_right, crop_top = crop
    width, height = crop_right - crop_left, crop_top - crop_bottom
    drawn = textpage.get_text_bounded(
        left=crop_left + box.left * width - 4,
        bottom=crop_top - box.bottom * height - 4,
        right=crop_left + box.right * width + 4,
        top=crop_top - box.top * height + 4,
    )
    return _clean(text) in _clean(drawn)


def _in_reading_order(blocks: list[Block], marks: dict[int, list[Block]]) -> Iterator[Block]:
    """The text layer's blocks, with each page's fields and comments among them by where they sit."""

    def position(block: Block) -> tuple[float, float]:
        box = block.location.box
        return (box.top, box.left) if box is not None else (0.0, 0.0)

    pending = {page: sorted(found, key=position) for page, found in marks.items() if found}
    done = 0
    for block in blocks:
        page = block.location.page or 0
        for earlier in range(done + 1, page):
            yield from pending.pop(earlier, [])
        done = max(done, page - 1)
        waiting = pending.get(page, [])
        while waiting and position(waiting[0]) < position(block):
            yield waiting.pop(0)
        yield block
    for page in sorted(pending):
        yield from pending[page]
