"""Whether a PDF page's text layer can be trusted, or the page is read by OCR like one without text: a layer that
says little of what a scanned page shows, or is not text, is set aside (docs/ocr.md, "Which text layers are kept").
"""

import ctypes
import logging
import math
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from shared.domain.layout import TextLine

_log = logging.getLogger(__name__)

# Plausibility: judged on pages with at least this many words of a cased script, or characters.
MIN_WORDS_JUDGED = 20
MIN_CHARACTERS_JUDGED = 40
# Share of the words (of those in a cased script) that are one letter in a run of three or more, past which a
# layer is not prose. English has almost none (a lone "a" or "I"); letters spaced apart are all of them.
MAX_ONE_LETTER_SHARE = 0.6
_SPACED_RUN = 3
# Share of characters no font mapped past which the layer is not text.
MAX_UNMAPPED_SHARE = 0.3

# A page looks like a scan when images cover this much of it, and this share of its layer is not drawn.
MIN_SCAN_IMAGE_SHARE = 0.6
MIN_HIDDEN_SHARE = 0.5
# A scan's layer that covers less than this share of its writing's ink lost most of what is printed.
MIN_INK_COVERAGE = 0.5
# Less ink than this share of the page: too little to judge a layer by (a near-blank scan).
MIN_INK_SHARE = 0.002
# Page objects looked at (nested ones included) and characters sampled for their render mode. A page with
# more vector drawings (paths, shadings) than MAX_DRAWINGS is vector art, not a scan, and the walk stops there.
MAX_OBJECTS = 20_000
MAX_DRAWINGS = 1_000
_MAX_FORM_DEPTH = 4
_SAMPLED_CHARACTERS = 64
# The render: about 100 dpi on A4, never more pixels than this, never more than 100 dpi.
RENDER_PIXELS = 1_000_000
_MAX_RENDER_SCALE = 100 / 72
# Decoding the images dominates a check (a 300 dpi A4 scan is 8.7 megapixels, 25-40 ms): bounded per page (a
# 600 dpi A4 scan is 35 megapixels; more is not rendered, whatever its codec needs to decode it) and per
# document (about 170 pages at 300 dpi, some 6 seconds), past which the remaining pages are trusted unchecked.
MAX_PAGE_IMAGE_PIXELS = 40_000_000
MAX_CHECKED_IMAGE_PIXELS = 1_500_000_000
# Ink is what is darker than this share of the local paper brightness (the brightest pixels within about a
# fifth of an inch, at the render's resolution), so a large dark area counts only by its edges.
_INK_DARKNESS = 0.75
_BACKGROUND_REDUCTION = 4
_BACKGROUND_WINDOW = 5
# Line boxes grow by this share of their height (and a pixel) before ink is counted inside them.
_BOX_DILATION = 0.35

_INVISIBLE_MODES = frozenset({3, 7})  # FPDF_TEXTRENDERMODE_INVISIBLE, FPDF_TEXTRENDERMODE_CLIP
_IMAGE, _TEXT, _FORM = 3, 1, 5  # FPDF_PAGEOBJ_IMAGE, FPDF_PAGEOBJ_TEXT, FPDF_PAGEOBJ_FORM


def implausibility(text: str) -> str | None:
    """Why a page's text is not text a person wrote, or None: judged from the words and characters alone."""
    cores = [_letters(word) for word in text.split()]
    words = sum(1 for core in cores if core)
    if words >= MIN_WORDS_JUDGED:
        spaced = _spaced_letters(cores)
        if spaced / words >= MAX_ONE_LETTER_SHARE:
            return f"text layer implausible: {_percent(spaced / words)} one-letter words (letters spaced apart)"
    visible = "".join(text.split())
    # Every unmapped character is unprintable but U+FFFD: most pages are decided without a loop.
    if len(visible) >= MIN_CHARACTERS_JUDGED and ("\ufffd" in visible or not visible.isprintable()):
        unmapped = sum(1 for character in visible if _unmapped(character))
        if unmapped / len(visible) >= MAX_UNMAPPED_SHARE:
            return (
                f"text layer implausible: {_percent(unmapped / len(visible))} of its characters are unmapped"
                " (replacement, private-use or control characters)"
            )
    return None


def _spaced_letters(cores: list[str]) -> int:
    """One-letter words in runs of three or more: letters spaced apart. A lone one ("a", "I", the x of a formula,
    the B of an answer key's "2 B") is a word."""
    spaced = run = 0
    for core in [*cores, ""]:
        if len(core) == 1:
            run += 1
            continue
        spaced += run if run >= _SPACED_RUN else 0
        run = 0
    return spaced


def _letters(word: str) -> str:
    """The letters and digits of a word in a script with letter case (a CJK character is a word of its own,
    so one alone says nothing); empty for a word with no cased letter."""
    core = "".join(character for character in word if character.isalnum())
    return core if any(character.lower() != character.upper() for character in core) else ""


def _unmapped(character: str) -> bool:
    if character == "\ufffd":
        return True
    category = unicodedata.category(character)
    # Unassigned code points, but not U+FFFE/U+FFFF, which PDFium uses as markers of its own.
    return category in ("Co", "Cc", "Cs") or (category == "Cn" and character not in "\ufffe\uffff")


def _percent(share: float) -> str:
    return f"{round(share * 100)}%"


@dataclass(frozen=True)
class _Image:
    box: tuple[float, float, float, float]  # left, bottom, right, top in page space
    order: int  # its top-level object's place in the drawing order
    pixels: int


@dataclass(frozen=True)
class _Objects:
    images: tuple[_Image, ...]
    # Each text object, with its top-level object's place in the drawing order.
    texts: tuple[tuple[Any, int], ...]

    def text_order(self) -> dict[int, int]:
        """A text object's address → its place in the drawing order (asked only of a page that may be a scan)."""
        return {_address(item): order for item, order in self.texts}


class TextLayerJudge:
    """One per document: judges each page's layer, within the document's budget of image pixels decoded."""

    def __init__(self) -> None:
        self._image_pixels_left = MAX_CHECKED_IMAGE_PIXELS
        self.unchecked: list[int] = []

    def doubt(
        self,
        page: Any,
        textpage: Any,
        lines: Sequence[TextLine],
        *,
        number: int,
        crop: tuple[float, float, float, float],
        rotation: int,
    ) -> str | None:
        """Why the page's layer is not to be trusted (it goes to OCR), or None."""
        import pypdfium2 as pdfium

        implausible = implausibility("\n".join(line.text for line in lines))
        if implausible is not None:
            return implausible
        objects = _objects(page)
        if objects is None or not _looks_like_a_scan(objects, textpage, crop):
            return None
        pixels = sum(image.pixels for image in objects.images)
        if pixels > MAX_PAGE_IMAGE_PIXELS or pixels > self._image_pixels_left:
            self.unchecked.append(number)
            return None
        self._image_pixels_left -= pixels
        try:
            coverage = ink_coverage(page, lines, crop, rotation)
        except pdfium.PdfiumError as error:
            # The check is not the reading: a page PDFium cannot render keeps the layer it could read.
            _log.warning("PDFium could not render page %d to check its text layer: %s", number, error)
            return None
        if coverage is None or coverage >= MIN_INK_COVERAGE:
            return None
        return f"text layer covers {_percent(coverage)} of the inked area"


def _objects(page: Any) -> _Objects | None:
    """The page's images and the drawing order of its text objects; None past MAX_OBJECTS objects or
    MAX_DRAWINGS drawings (not a scan). What a form XObject holds is placed by the form: its drawing order, and
    its bounds (a nested object's own bounds are in the form's space)."""
    import pypdfium2.raw as pdfium_c

    images: list[_Image] = []
    texts: list[tuple[Any, int]] = []
    visited = drawings = 0

    def within_bounds(kind: int | None) -> bool:
        nonlocal visited, drawings
        visited += 1
        if kind not in (_TEXT, _IMAGE, _FORM):
            drawings += 1
        return visited <= MAX_OBJECTS and drawings <= MAX_DRAWINGS

    def nested(form: Any, depth: int) -> tuple[list[Any], int] | None:
        """The text objects inside a form (to any depth within bounds), and its images' pixels."""
        texts: list[Any] = []
        pixels = 0
        for index in range(pdfium_c.FPDFFormObj_CountObjects(form)):
            item = pdfium_c.FPDFFormObj_GetObject(form, index)
            kind = pdfium_c.FPDFPageObj_GetType(item) if item else None
            if not within_bounds(kind):
                return None
            if kind == _TEXT:
                texts.append(item)
            elif kind == _IMAGE:
                pixels += _pixels(pdfium_c, item)
            elif kind == _FORM and depth < _MAX_FORM_DEPTH:
                inner = nested(item, depth + 1)
                if inner is None:
                    return None
                texts.extend(inner[0])
                pixels += inner[1]
        return texts, pixels

    for order in range(pdfium_c.FPDFPage_CountObjects(page.raw)):
        item = pdfium_c.FPDFPage_GetObject(page.raw, order)
        kind = pdfium_c.FPDFPageObj_GetType(item) if item else None
        if not within_bounds(kind):
            return None
        if kind == _TEXT:
            texts.append((item, order))
        elif kind == _IMAGE:
            box = _bounds(pdfium_c, item)
            if box is not None:
                images.append(_Image(box=box, order=order, pixels=_pixels(pdfium_c, item)))
        elif kind == _FORM:
            found = nested(item, 1)
            if found is None:
                return None
            inside, pixels = found
            texts.extend((text, order) for text in inside)
            box = _bounds(pdfium_c, item)
            if pixels and box is not None:
                images.append(_Image(box=box, order=order, pixels=pixels))
    return _Objects(images=tuple(images), texts=tuple(texts))


def _address(item: Any) -> int:
    return ctypes.cast(item, ctypes.c_void_p).value or 0


def _bounds(pdfium_c: Any, item: Any) -> tuple[float, float, float, float] | None:
    left, bottom, right, top = (ctypes.c_float() for _ in range(4))
    if not pdfium_c.FPDFPageObj_GetBounds(item, left, bottom, right, top):
        return None
    box = (left.value, bottom.value, right.value, top.value)
    return box if all(math.isfinite(value) for value in box) else None


def _pixels(pdfium_c: Any, item: Any) -> int:
    width, height = ctypes.c_uint(), ctypes.c_uint()
    if not pdfium_c.FPDFImageObj_GetImagePixelSize(item, width, height):
        return 0
    return int(width.value) * int(height.value)


def _looks_like_a_scan(objects: _Objects, textpage: Any, crop: tuple[float, float, float, float]) -> bool:
    """Images under most of the page, and most of the layer not drawn: invisible, a clip, or under an image."""
    crop_left, crop_bottom, crop_right, crop_top = crop
    area = max(crop_right - crop_left, 1.0) * max(crop_top - crop_bottom, 1.0)
    covered = 0.0
    large: list[_Image] = []
    for image in objects.images:
        left, bottom, right, top = image.box
        width = min(right, crop_right) - max(left, crop_left)
        height = min(top, crop_top) - max(bottom, crop_bottom)
        if width > 0 and height > 0:
            covered += width * height
            if width * height >= area / 4:
                large.append(image)
    if covered < MIN_SCAN_IMAGE_SHARE * area:
        return False
    return _hidden_share(objects, textpage, large) >= MIN_HIDDEN_SHARE


def _hidden_share(objects: _Objects, textpage: Any, large: list[_Image]) -> float:
    import pypdfium2.raw as pdfium_c

    count = textpage.count_chars()
    if count <= 0:
        return 0.0
    samples = sorted({index * count // _SAMPLED_CHARACTERS for index in range(_SAMPLED_CHARACTERS)})
    hidden = judged = 0
    text_order = objects.text_order() if large else {}
    for index in samples:
        item = pdfium_c.FPDFText_GetTextObject(textpage.raw, index)
        if not item:
            continue  # a character PDFium generated (a space, a line break)
        judged += 1
        if pdfium_c.FPDFTextObj_GetTextRenderMode(item) in _INVISIBLE_MODES:
            hidden += 1
            continue
        order = text_order.get(_address(item))
        if order is None:
            continue
        left, bottom, right, top = textpage.get_charbox(index)
        x, y = (left + right) / 2, (bottom + top) / 2
        if any(
            image.order > order and image.box[0] <= x <= image.box[2] and image.box[1] <= y <= image.box[3]
            for image in large
        ):
            hidden += 1
    return hidden / judged if judged else 0.0


def ink_coverage(
    page: Any, lines: Sequence[TextLine], crop: tuple[float, float, float, float], rotation: int
) -> float | None:
    """The share of the rendered page's ink inside the lines' boxes (their cells, where a line has wide gaps),
    dilated a little; None when the page has too little ink to say."""
    from PIL import Image, ImageChops, ImageDraw, ImageFilter

    from shared.adapters.parsers.pdf import as_displayed

    width, height = page.get_size()  # as displayed, /Rotate applied: what the render draws
    scale = min(_MAX_RENDER_SCALE, math.sqrt(RENDER_PIXELS / max(width * height, 1.0)))
    # The bitmap's sides are rounded up: a page's worth of pixels on each side may tip it over the bound.
    while math.ceil(width * scale) * math.ceil(height * scale) > RENDER_PIXELS:
        scale *= 0.99
    # The lines are normalised to the unrotated page: a box grows as much across as it does down.
    aspect = max(crop[3] - crop[1], 1.0) / max(crop[2] - crop[0], 1.0)
    bitmap = page.render(scale=scale, grayscale=True, may_draw_forms=False, draw_annots=False)
    try:
        image = bitmap.to_pil().convert("L")
    finally:
        bitmap.close()
    columns, rows = image.size
    if columns < 8 or rows < 8:
        return None
    reduced = image.reduce(_BACKGROUND_REDUCTION).filter(ImageFilter.MaxFilter(_BACKGROUND_WINDOW))
    paper = reduced.resize(image.size, Image.Resampling.BILINEAR).point(lambda value: int(value * _INK_DARKNESS))
    ink = ImageChops.subtract(paper, image).point(lambda value: 255 if value > 0 else 0)
    # Writing is strokes a pixel or two wide at this resolution; a photograph's texture, a filled shape or a
    # thick smudge survives an opening (erode, then dilate) with a 3x3 square, and so is not counted.
    ink = ImageChops.subtract(ink, _opened(ink))
    inked = ink.histogram()[255]
    if inked < MIN_INK_SHARE * columns * rows:
        return None
    boxes = Image.new("L", image.size, 0)
    draw = ImageDraw.Draw(boxes)
    for line in lines:
        grow = _BOX_DILATION * (line.bottom - line.top)
        for left, right in [(cell.left, cell.right) for cell in line.cells] or [(line.left, line.right)]:
            shown = as_displayed(
                _unit(left - grow * aspect),
                _unit(line.top - grow),
                _unit(right + grow * aspect),
                _unit(line.bottom + grow),
                rotation,
            )
            draw.rectangle(
                (shown[0] * columns - 1, shown[1] * rows - 1, shown[2] * columns + 1, shown[3] * rows + 1), fill=255
            )
    covered = ImageChops.multiply(ink, boxes).histogram()[255]
    return covered / inked


def _opened(mask: Any) -> Any:
    """A 0/255 mask opened with a 3x3 square. A 3x3 box average is 255 only where all nine pixels are set
    (erosion) and above 0 where any is (dilation): the same result as a rank filter, four times faster."""
    from PIL import ImageFilter

    eroded = mask.filter(ImageFilter.BoxBlur(1)).point(lambda value: 255 if value > 250 else 0)
    return eroded.filter(ImageFilter.BoxBlur(1)).point(lambda value: 255 if value > 0 else 0)


def _unit(value: float) -> float:
    return min(max(value, 0.0), 1.0)
