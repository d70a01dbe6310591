"""PDF merge, split, watermark and page composition with pypdf. The inputs are attacker-controlled files: the
caller runs these in a bounded child process, and every problem with an input (encrypted, malformed, a page
that is not there) is a PdfInputProblem naming the input, never a stack trace."""

import io
import math
from collections.abc import Sequence

from fpdf import FPDF
from pypdf import PdfReader, PdfWriter, Transformation
from pypdf.errors import PdfReadError, PyPdfError
from pypdf.generic import NameObject, NumberObject

from quire_fonts import BOLD, font_path
from shared.domain.exports import RENDER_EPOCH
from shared.domain.pdf_tools import PagePick, PdfInput, PdfInputProblem, Segments
from shared.ports import PdfOperations


def _reader(source: PdfInput) -> PdfReader:
    try:
        reader = PdfReader(io.BytesIO(source.content), strict=False)
        if reader.is_encrypted:
            raise PdfInputProblem(f"{source.name} is encrypted: remove its password and upload it again")
        _ = len(reader.pages)
    except PdfInputProblem:
        raise
    except (PdfReadError, PyPdfError, ValueError, KeyError, TypeError, AttributeError, RecursionError) as error:
        raise PdfInputProblem(f"{source.name} could not be read as a PDF ({type(error).__name__})") from error
    return reader


def _pages(reader: PdfReader, source: PdfInput, wanted: Segments | None) -> list[int]:
    total = len(reader.pages)
    if wanted is None:
        return list(range(1, total + 1))
    chosen: list[int] = []
    for first, last in wanted:
        end = total if last is None else last
        if not 1 <= first <= end <= total:
            shown = f"{first}-{last if last is not None else ''}" if last != first else str(first)
            raise PdfInputProblem(f"{source.name} has {total} pages, so it has no pages {shown}")
        chosen.extend(range(first, end + 1))
    return chosen


def _output(writer: PdfWriter, max_pages: int) -> tuple[bytes, int]:
    if len(writer.pages) > max_pages:
        raise PdfInputProblem(f"the result would have {len(writer.pages)} pages; the limit is {max_pages}")
    writer.add_metadata({"/Producer": "Quire (pypdf)"})
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue(), len(writer.pages)


class PypdfOperations(PdfOperations):
    """PdfOperations with pypdf (and fpdf2 for the watermark's stamp)."""

    def compose(
        self, inputs: Sequence[PdfInput], picks: Sequence[PagePick], *, outline: bool, max_pages: int
    ) -> tuple[bytes, int]:
        return compose(inputs, picks, outline=outline, max_pages=max_pages)

    def watermark(self, source: PdfInput, text: str, *, opacity: float, max_pages: int) -> tuple[bytes, int]:
        return watermark(source, text, opacity=opacity, max_pages=max_pages)


def compose(
    inputs: Sequence[PdfInput], picks: Sequence[PagePick], *, outline: bool, max_pages: int
) -> tuple[bytes, int]:
    """The picked pages, in order, as one PDF; with `outline`, one outline entry per pick naming its source."""
    readers = [_reader(source) for source in inputs]
    writer = PdfWriter()
    for pick in picks:
        reader, source = readers[pick.source], inputs[pick.source]
        first = len(writer.pages)
        for page in _pages(reader, source, pick.pages):
            writer.add_page(reader.pages[page - 1])
            if len(writer.pages) > max_pages:
                raise PdfInputProblem(f"the result would pass {max_pages} pages (the limit)")
        if outline and len(writer.pages) > first:
            writer.add_outline_item(title=source.name, page_number=first)
    return _output(writer, max_pages)


def _stamp(text: str, width: float, height: float, opacity: float) -> PdfReader:
    """One page of `width` by `height` points with `text` across its diagonal, in translucent grey."""
    pdf = FPDF(unit="pt", format=(width, height))
    pdf.set_creation_date(RENDER_EPOCH)
    pdf.add_font("DejaVu", "B", font_path(BOLD))
    pdf.add_page()
    pdf.set_font("DejaVu", "B", 10)
    diagonal = math.hypot(width, height)
    size = max(8.0, min(120.0, 10 * diagonal * 0.7 / max(pdf.get_string_width(text), 1.0)))
    pdf.set_font("DejaVu", "B", size)
    pdf.set_text_color(128, 128, 128)
    angle = math.degrees(math.atan2(height, width))
    with pdf.local_context(fill_opacity=opacity), pdf.rotation(angle, x=width / 2, y=height / 2):
        text_width = pdf.get_string_width(text)
        pdf.text(width / 2 - text_width / 2, height / 2 + size / 3, text)
    return PdfReader(io.BytesIO(bytes(pdf.output())))


def watermark(source: PdfInput, text: str, *, opacity: float, max_pages: int) -> tuple[bytes, int]:
    """`text` over every page, upright as each page is displayed: a page's /Rotate is moved into its content
    first, so a rotated page is not stamped sideways."""
    reader = _reader(source)
    writer = PdfWriter(clone_from=reader)
    stamps: dict[tuple[float, float], PdfReader] = {}
    for page in writer.pages:
        if page.rotation % 360:
            page.transfer_rotation_to_content()
        box = page.mediabox
        left, bottom = float(box.left), float(box.bottom)
        width, height = float(box.width), float(box.height)
        key = (round(width, 2), round(height, 2))
        if key not in stamps:
            stamps[key] = _stamp(text, width, height, opacity)
        page.merge_transformed_page(stamps[key].pages[0], Transformation().translate(left, bottom), over=True)
        page[NameObject("/Rotate")] = NumberObject(0)
    return _output(writer, max_pages)
