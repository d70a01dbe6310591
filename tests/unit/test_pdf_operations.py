"""PDF merge, split, watermark and composition with pypdf: page order, outlines, a watermark upright on rotated
pages, and encrypted or malformed inputs refused with a sentence that names them."""

import io
import math

import pypdfium2 as pdfium
import pytest
from pypdf import PdfReader, PdfWriter

from shared.adapters.pdf_operations import PypdfOperations
from shared.domain.pdf_tools import PagePick, PdfInput, PdfInputProblem, format_pages, parse_pages
from tests.builders.pdf import page_texts, pdf_of, top_level_outline

OPS = PypdfOperations()


def test_merge_keeps_every_page_in_order_with_an_outline_entry_per_source() -> None:
    first, second = PdfInput("a.pdf", pdf_of("A1", "A2")), PdfInput("b.pdf", pdf_of("B1"))
    merged, pages = OPS.compose([first, second], [PagePick(0, None), PagePick(1, None)], outline=True, max_pages=100)
    assert pages == 3 and page_texts(merged) == ["A1", "A2", "B1"]
    reader = PdfReader(io.BytesIO(merged))
    outline = [(item.title, reader.get_destination_page_number(item)) for item in top_level_outline(reader)]
    assert outline == [("a.pdf", 0), ("b.pdf", 2)]


def test_split_and_compose_take_exactly_the_pages_named_in_the_order_named() -> None:
    source = PdfInput("five.pdf", pdf_of("P1", "P2", "P3", "P4", "P5"))
    part, _ = OPS.compose([source], [PagePick(0, parse_pages("2-3"))], outline=False, max_pages=100)
    assert page_texts(part) == ["P2", "P3"]
    tail, _ = OPS.compose([source], [PagePick(0, parse_pages("4-"))], outline=False, max_pages=100)
    assert page_texts(tail) == ["P4", "P5"]
    other = PdfInput("x.pdf", pdf_of("X1", "X2"))
    composed, _ = OPS.compose(
        [source, other],
        [PagePick(1, parse_pages("2")), PagePick(0, parse_pages("5,1")), PagePick(1, parse_pages("1"))],
        outline=False,
        max_pages=100,
    )
    assert page_texts(composed) == ["X2", "P5", "P1", "X1"]
    with pytest.raises(PdfInputProblem, match=r"five\.pdf has 5 pages, so it has no pages 6-7"):
        OPS.compose([source], [PagePick(0, parse_pages("6-7"))], outline=False, max_pages=100)
    with pytest.raises(PdfInputProblem, match=r"limit is 3|pass 3 pages"):
        OPS.compose([source], [PagePick(0, None)], outline=False, max_pages=3)


def test_page_ranges_are_parsed_and_refused_with_the_part_that_is_wrong() -> None:
    assert parse_pages("1-3, 5,8-") == ((1, 3), (5, 5), (8, None))
    assert format_pages(parse_pages("1-3,5,8-")) == "1-3,5,8-"
    for bad in ("", "0", "3-1", "a-b", "1,,2", "-4"):
        with pytest.raises(ValueError, match="not"):
            parse_pages(bad)


def _rotated(content: bytes, degrees: int) -> bytes:
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(content)))
    for page in writer.pages:
        page.rotate(degrees)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


@pytest.mark.parametrize("degrees", [0, 90, 180, 270])
def test_a_watermark_runs_up_the_diagonal_of_the_page_as_displayed_rotated_pages_included(degrees: int) -> None:
    source = PdfInput("memo.pdf", _rotated(pdf_of("Original words"), degrees))
    stamped, pages = OPS.watermark(source, "CONFIDENTIAL", opacity=0.3, max_pages=10)
    assert pages == 1
    document = pdfium.PdfDocument(stamped)
    try:
        page = document[0]
        width, height = page.get_size()  # as displayed
        assert (width > height) == (degrees in (90, 270))
        text = page.get_textpage()
        full = text.get_text_range()
        start = full.index("C")
        first, last = text.get_charbox(start), text.get_charbox(start + len("CONFIDENTIAL") - 1)
        rotation = page.get_rotation()
    finally:
        document.close()
    assert "Original words" in full
    # Page coordinates are display coordinates once the rotation is in the content.
    assert rotation == 0
    dx = (last[0] + last[2]) / 2 - (first[0] + first[2]) / 2
    dy = (last[1] + last[3]) / 2 - (first[1] + first[3]) / 2
    assert dx > 0 and dy > 0
    assert abs(math.degrees(math.atan2(dy, dx)) - math.degrees(math.atan2(height, width))) < 8


def test_encrypted_and_malformed_inputs_are_refused_naming_the_file() -> None:
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(pdf_of("secret"))))
    writer.encrypt("pw")
    locked = io.BytesIO()
    writer.write(locked)
    with pytest.raises(PdfInputProblem, match=r"locked\.pdf is encrypted"):
        OPS.compose([PdfInput("locked.pdf", locked.getvalue())], [PagePick(0, None)], outline=False, max_pages=10)
    with pytest.raises(PdfInputProblem, match=r"junk\.pdf could not be read as a PDF"):
        OPS.watermark(PdfInput("junk.pdf", b"%PDF-1.7\nnot really"), "x", opacity=0.3, max_pages=10)


def test_the_same_operation_gives_the_same_bytes() -> None:
    source = PdfInput("a.pdf", pdf_of("A1", "A2"))
    assert OPS.watermark(source, "DRAFT", opacity=0.3, max_pages=10) == OPS.watermark(
        source, "DRAFT", opacity=0.3, max_pages=10
    )
    picks = [PagePick(0, parse_pages("2,1"))]
    assert OPS.compose([source], picks, outline=False, max_pages=10) == OPS.compose(
        [source], picks, outline=False, max_pages=10
    )
