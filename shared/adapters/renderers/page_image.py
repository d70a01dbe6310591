"""The PageRasterizer: a PDF page drawn by PDFium, an image's frame decoded by Pillow, each as a PNG of the page as
it is displayed (a PDF's /Rotate, an image's EXIF orientation), sized by `domain.page_images.fit_page`.

Runs inside the sandbox's child on a tenant's bytes (`isolated.render_page`). The bounds are checked before
anything is decoded: a PDF page's size comes from its boxes, which can claim hundreds of inches (the scale is
fitted to them, so a huge page is a small drawing), and an image's header can claim a gigapixel canvas in a few
bytes (refused past MAX_IMAGE_PIXELS, Pillow's own bomb check set to the same limit). Wall clock and memory are
the sandbox's.
"""

import io
import logging
from typing import Any

from shared.adapters.parsers.image import MAX_IMAGE_PIXELS
from shared.domain.page_images import (
    IMAGE_TYPES,
    MAX_IMAGE_UPSCALE,
    MAX_PDF_UPSCALE,
    PAGE_COUNT_KEYWORD,
    PDF_TYPE,
    DrawnPage,
    PageOutcome,
    PageOutOfRange,
    PageUnreadable,
    fit_page,
)
from shared.ports import PageRasterizer

_log = logging.getLogger(__name__)

_PASSWORD_ERROR = 4  # FPDF_ERR_PASSWORD
_SECURITY_ERROR = 5  # FPDF_ERR_SECURITY
# Only the decoders of the image types Quire accepts (JPEG's also opens a phone's MPO).
_DECODERS = ("JPEG", "PNG", "TIFF")
# Pillow modes a PNG holds as they are; any other (CMYK, 16-bit, float, a palette) is converted first.
_PNG_MODES = {"1": "L", "L": "L", "LA": "LA", "RGB": "RGB", "RGBA": "RGBA"}
_UNOPENABLE_PDF = "the PDF is damaged and cannot be opened: save or print it to a new PDF and upload that"
_ORIENTATION = 0x0112  # the EXIF tag
_UNREADABLE_IMAGE = "the image could not be decoded: it is damaged or not the format its name says"


class PdfiumPageRasterizer(PageRasterizer):
    media_types = frozenset({PDF_TYPE}) | IMAGE_TYPES

    def rasterize(self, content: bytes, media_type: str, page: int) -> PageOutcome:
        if media_type == PDF_TYPE:
            return _pdf_page(content, page)
        if media_type in IMAGE_TYPES:
            return _image_page(content, page)
        return PageUnreadable(f"{media_type} has no pages to draw")


def _open_pdf(content: bytes) -> Any:
    """The PDFium document, or why it cannot be opened."""
    import pypdfium2 as pdfium

    try:
        return pdfium.PdfDocument(content)
    except pdfium.PdfiumError as error:
        code = getattr(error, "err_code", None)
        if code == _PASSWORD_ERROR:
            return PageUnreadable("the PDF is password-protected: its pages cannot be drawn")
        if code == _SECURITY_ERROR:
            return PageUnreadable("the PDF is protected by a security handler PDFium cannot open")
        _log.warning("PDFium could not open a PDF: %s", error)
        return PageUnreadable(_UNOPENABLE_PDF)


def _pdf_page(content: bytes, number: int) -> PageOutcome:
    import pypdfium2 as pdfium

    document = _open_pdf(content)
    if isinstance(document, PageUnreadable):
        return document
    try:
        total = len(document)
        if not 1 <= number <= total:
            return PageOutOfRange(page=number, page_count=total)
        _init_forms(document)
        page = document[number - 1]
        try:
            # The size as displayed: PDFium swaps width and height for a page turned by /Rotate 90 or 270.
            width, height = page.get_size()
            try:
                fit = fit_page(width, height, max_upscale=MAX_PDF_UPSCALE)
            except ValueError as error:
                return PageUnreadable(f"page {number} cannot be drawn: {error}")
            bitmap = page.render(scale=fit.scale, may_draw_forms=True)
            try:
                image = bitmap.to_pil()
            finally:
                bitmap.close()
        finally:
            page.close()
    except pdfium.PdfiumError as error:
        _log.warning("PDFium could not draw page %d: %s", number, error)
        return PageUnreadable(f"page {number} is damaged: save or print the PDF to a new one and upload that")
    finally:
        document.close()
    return _drawn(image, number, total, (fit.width, fit.height))


def _init_forms(document: Any) -> None:
    """Form fields drawn with their values, as a viewer shows them (a citation may be of a field's value)."""
    import pypdfium2.raw as pdfium_c

    if document.get_formtype() != pdfium_c.FORMTYPE_NONE:
        document.init_forms()


def _image_page(content: bytes, number: int) -> PageOutcome:
    from PIL import Image, ImageOps

    # Pillow's own check (a warning past the limit, an error past twice it) at the bound every image path uses.
    Image.MAX_IMAGE_PIXELS = MAX_IMAGE_PIXELS
    try:
        with Image.open(io.BytesIO(content), formats=_DECODERS) as image:
            # An MPO's further frames are previews and depth maps of the one picture, not pages.
            total = 1 if image.format == "MPO" else int(getattr(image, "n_frames", 1))
            if not 1 <= number <= total:
                return PageOutOfRange(page=number, page_count=total)
            if number > 1:
                image.seek(number - 1)
            # Every frame has a header of its own: a small first page says nothing about the one asked for.
            width, height = image.size
            if width * height > MAX_IMAGE_PIXELS:
                return _too_many_pixels(number, f"{width}x{height}")
            fit = fit_page(width, height, max_upscale=MAX_IMAGE_UPSCALE)
            if image.format == "JPEG" and fit.scale < 0.5:
                # A JPEG decodes at 1/2, 1/4 or 1/8 of its size for a fraction of the memory and time.
                image.draft("RGB", (fit.width, fit.height))
            # The orientation it is displayed in (a phone's EXIF tag): the citation's box is on that view.
            upright = ImageOps.exif_transpose(image) if image.getexif().get(_ORIENTATION, 1) != 1 else image
            fit = fit_page(*upright.size, max_upscale=MAX_IMAGE_UPSCALE)
            if upright.size != (fit.width, fit.height):
                upright = upright.resize((fit.width, fit.height), Image.Resampling.LANCZOS, reducing_gap=3.0)
            return _drawn(upright, number, total, (fit.width, fit.height))
    except Image.DecompressionBombError:
        return _too_many_pixels(number, None)
    except MemoryError:
        raise
    except Exception as error:
        # A damaged image surfaces from Pillow's readers as almost any exception (OSError, but also TypeError,
        # KeyError, struct.error): each one means the same thing here. Pillow's words go to the log.
        _log.warning("an image could not be drawn: %s: %s", type(error).__name__, error)
        return PageUnreadable(_UNREADABLE_IMAGE)


def _too_many_pixels(number: int, declared: str | None) -> PageUnreadable:
    if declared is None:
        return PageUnreadable(
            f"page {number} of the image declares more than {MAX_IMAGE_PIXELS:,} pixels (the limit): it is not drawn"
        )
    return PageUnreadable(
        f"page {number} of the image declares {declared} pixels; the limit is {MAX_IMAGE_PIXELS:,} pixels:"
        " it is not drawn"
    )


def _drawn(image: Any, number: int, total: int, bound: tuple[int, int]) -> PageOutcome:
    from PIL import PngImagePlugin

    if image.width > bound[0] or image.height > bound[1]:
        return PageUnreadable(f"page {number} was drawn larger than the bound: it is not served")
    mode = _PNG_MODES.get(image.mode)
    if mode is None:
        mode = "RGBA" if "A" in image.mode or "transparency" in image.info else "RGB"
    if image.mode != mode:
        image = image.convert(mode)
    info = PngImagePlugin.PngInfo()
    info.add_text(PAGE_COUNT_KEYWORD, str(total))
    buffer = io.BytesIO()
    # No ICC profile carried over (it would come before the page-count chunk, and could be any size).
    image.save(buffer, format="PNG", pnginfo=info, compress_level=6, icc_profile=None)
    return DrawnPage(png=buffer.getvalue(), page=number, page_count=total, width=image.width, height=image.height)
