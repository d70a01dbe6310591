"""PDF text layer to located blocks: headings by size, paragraphs with boxes, pages without text recorded."""

import io

import pytest

from shared.adapters.parsers.pdf import PdfParser
from shared.domain.document import BlockKind, ExtractedDocument, ExtractionFailure, ExtractionLimits
from shared.domain.files import FailureReason
from shared.domain.recognition import BoundingBox
from shared.local.hostile_corpus import raw_pdf
from shared.services.extraction import Extractor
from tests.builders.pdf import page_with_text, report_pdf, table_pdf
from tests.conftest import REPO_ROOT

PDF_DATA = REPO_ROOT.parent / "shared" / "data" / "pdfs"
LIMITS = ExtractionLimits()


def document(content: bytes) -> ExtractedDocument:
    outcome = PdfParser().parse(content, LIMITS)
    assert isinstance(outcome, ExtractedDocument), outcome
    return outcome


def test_headings_come_from_font_size_and_paragraphs_keep_their_page_and_box() -> None:
    extracted = document(report_pdf())
    assert [(b.kind.value, b.level, b.text[:30]) for b in extracted.blocks] == [
        ("heading", 1, "Annual report"),
        ("heading", 2, "Revenue"),
        ("paragraph", None, "Revenue grew twelve percent in"),
        ("paragraph", None, "Costs stayed flat across every"),
    ]
    first_paragraph = extracted.blocks[2]
    assert first_paragraph.text.count("Revenue grew twelve percent") == 4  # wrapped lines joined back
    assert first_paragraph.heading_path == ("Annual report", "Revenue")
    box = first_paragraph.location.box
    assert first_paragraph.location.page == 1
    assert box is not None
    assert 0.0 < box.left < 0.2 and 0.0 < box.top < 0.3 and 0.5 < box.width <= 1.0 and box.height > 0.01
    assert extracted.blocks[0].location.box.top < box.top  # type: ignore[union-attr]


def test_a_page_without_a_text_layer_is_recorded_for_ocr() -> None:
    extracted = document(report_pdf(blank_second_page=True))
    assert (extracted.page_count, extracted.pages_without_text) == (2, (2,))
    assert any("no text layer" in warning for warning in extracted.warnings)


def test_a_password_protected_pdf_is_encrypted() -> None:
    outcome = PdfParser().parse(report_pdf(password="secret"), LIMITS)
    assert isinstance(outcome, ExtractionFailure)
    assert outcome.reason is FailureReason.ENCRYPTED


def test_a_pdf_encrypted_with_an_empty_user_password_is_read() -> None:
    # Given a PDF with only an owner password (it opens without one, as in any viewer)
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("Helvetica", size=12)
    pdf.cell(text="Readable without any password at all")
    pdf.set_encryption(owner_password="owner", user_password="")
    # When parsed, then its text is read
    assert [block.text for block in document(bytes(pdf.output())).blocks] == ["Readable without any password at all"]


def test_a_pdf_protected_by_a_security_handler_pdfium_lacks_is_encrypted_not_damaged() -> None:
    # Given a PDF protected by certificate security (not the password handler PDFium implements)
    content = report_pdf(password="secret").replace(b"/Filter /Standard", b"/Filter /Adobe.PubSec")
    # When parsed, then the user is told to remove the protection, not to re-export a "damaged" file
    outcome = PdfParser().parse(content, LIMITS)
    assert isinstance(outcome, ExtractionFailure)
    assert outcome.reason is FailureReason.ENCRYPTED


@pytest.mark.parametrize("content", [b"", b"%PDF-1.7\n garbage", b"not a pdf at all"])
def test_a_broken_pdf_is_malformed(content: bytes) -> None:
    outcome = PdfParser().parse(content, LIMITS)
    assert isinstance(outcome, ExtractionFailure)
    assert outcome.reason is FailureReason.MALFORMED


@pytest.mark.slow
def test_ten_thousand_empty_pages_are_refused_naming_the_count_and_limit() -> None:
    from fpdf import FPDF

    pdf = FPDF()
    for _ in range(10_000):
        pdf.add_page()
    outcome = Extractor([PdfParser()], ExtractionLimits(max_pages=2_000)).extract(
        bytes(pdf.output()), "application/pdf"
    )
    assert isinstance(outcome, ExtractionFailure)
    assert (outcome.reason, outcome.detail) == (
        FailureReason.TOO_MANY_PAGES,
        "the document has 10000 pages; the limit is 2000",
    )


def test_a_pdf_with_pages_but_no_text_at_all_lists_every_page_for_ocr() -> None:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.add_page()
    outcome = PdfParser().parse(bytes(pdf.output()), LIMITS)
    # Not a failure at this stage: OCR reads the pages next (the pipeline records no-text-layer only
    # where there is no OCR to read them).
    assert isinstance(outcome, ExtractedDocument)
    assert (outcome.blocks, outcome.page_count, outcome.pages_without_text) == ((), 2, (1, 2))


@pytest.mark.slow
@pytest.mark.skipif(not PDF_DATA.exists(), reason="../shared/data/pdfs is not present on this machine")
def test_every_public_pdf_ends_in_blocks_or_a_failure_value_inside_the_isolated_extractor() -> None:
    extractor = Extractor([PdfParser()], LIMITS)
    files = sorted(PDF_DATA.rglob("*.pdf"))
    assert files
    outcomes = {path.name: extractor.extract(path.read_bytes(), "application/pdf") for path in files}
    documents = [o for o in outcomes.values() if isinstance(o, ExtractedDocument)]
    assert len(documents) >= len(files) // 2
    assert all(b.location.page for o in documents for b in o.blocks)
    reasons = {o.reason for o in outcomes.values() if isinstance(o, ExtractionFailure)}
    assert reasons <= {FailureReason.ENCRYPTED, FailureReason.NO_TEXT_LAYER, FailureReason.MALFORMED}
    assert any(o.reason is FailureReason.ENCRYPTED for o in outcomes.values() if isinstance(o, ExtractionFailure))


def test_the_blocks_read_in_order_down_the_page() -> None:
    extracted = document(report_pdf(blank_second_page=False))
    tops = [block.location.box.top for block in extracted.blocks if block.location.box]
    assert tops == sorted(tops)


@pytest.mark.slow
def test_a_content_stream_that_inflates_past_the_memory_ceiling_ends_as_a_failure_value() -> None:
    import zlib

    bomb = zlib.compress(b"0 0 m " * (120 * 1024 * 1024 // 6), 9)  # ~120 MB of drawing operators
    content = raw_pdf(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>",
            f"<< /Length {len(bomb)} /Filter /FlateDecode >>\nstream\n".encode() + bomb + b"\nendstream",
        ]
    )
    assert len(content) < 1024 * 1024
    # Refused by the inflation count, under the default 2 GiB address space: not rescued by a tight one.
    extractor = Extractor([PdfParser()], ExtractionLimits(timeout_seconds=30, max_inflated_bytes=64 * 1024 * 1024))
    outcome = extractor.extract(content, "application/pdf")
    assert isinstance(outcome, ExtractionFailure)
    assert (outcome.reason, outcome.detail) == (
        FailureReason.TOO_LARGE,
        f"its compressed streams inflate past {64 * 1024 * 1024} bytes",
    )


def test_a_page_tree_that_loops_back_on_itself_ends_as_a_failure_value() -> None:
    content = raw_pdf(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [2 0 R 3 0 R] /Count 2 >>",  # the tree contains itself
            b"<< /Type /Pages /Kids [2 0 R] /Count 1 >>",
        ]
    )
    outcome = Extractor([PdfParser()], ExtractionLimits(timeout_seconds=10)).extract(content, "application/pdf")
    assert isinstance(outcome, ExtractionFailure)


def test_a_table_of_aligned_text_is_recovered_with_its_header() -> None:
    extracted = document(table_pdf())
    assert [block.kind for block in extracted.blocks] == [BlockKind.PARAGRAPH, BlockKind.TABLE, BlockKind.PARAGRAPH]
    table = extracted.blocks[1].table
    assert table is not None
    assert table.rows == (
        ("Region", "Q2", "Q3"),
        ("Europe", "4.1", "4.6"),
        ("Americas", "3.3", "3.9"),
        ("Asia", "2.0", "2.4"),
    )
    assert table.header_rows == 1
    assert extracted.blocks[1].location.box is not None


def test_two_columns_of_running_prose_are_not_mistaken_for_a_table() -> None:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("Helvetica", size=10)
    left = "The committee met on Tuesday to review the budget and"
    right = "agreed that spending on travel would be reduced next"
    for _ in range(8):
        pdf.cell(w=90, text=left)
        pdf.cell(w=90, text=right, new_x="LMARGIN", new_y="NEXT")
    extracted = document(bytes(pdf.output()))
    assert all(block.kind is not BlockKind.TABLE for block in extracted.blocks)


def test_two_rows_are_not_evidence_enough_for_a_table() -> None:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("Helvetica", size=11)
    for values in [("Name", "Total"), ("Rent", "1200")]:
        pdf.cell(w=60, text=values[0])
        pdf.cell(w=30, text=values[1], new_x="LMARGIN", new_y="NEXT")
    pdf.multi_cell(w=170, text="Nothing else on this page is tabular at all, which is the point of this test.")
    extracted = document(bytes(pdf.output()))
    assert all(block.kind is not BlockKind.TABLE for block in extracted.blocks)


def test_a_box_is_measured_from_the_visible_page_wherever_its_origin_sits() -> None:
    plain = document(page_with_text(0)).blocks[0].location.box
    shifted = document(page_with_text(200)).blocks[0].location.box
    assert plain is not None and shifted is not None
    assert abs(plain.left - shifted.left) < 0.01 and abs(plain.top - shifted.top) < 0.01
    assert 0.1 < plain.left < 0.15 and 0.05 < plain.top < 0.12


def test_a_pdf_pdfium_cannot_open_is_malformed_with_a_fixed_sentence_and_pdfiums_words_only_in_the_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level("WARNING", logger="shared.adapters.parsers.pdf"):
        outcome = PdfParser().parse(b"%PDF-1.7\n1 0 obj\n<< /Type /Catalog >>\nthis is not a PDF\n", LIMITS)
    assert isinstance(outcome, ExtractionFailure) and outcome.reason is FailureReason.MALFORMED
    assert outcome.detail == "the PDF is damaged and cannot be opened: save or print it to a new PDF and upload that"
    assert "PDFium could not open a PDF: Failed to load document" in caplog.text


def test_a_box_is_measured_against_a_page_size_inherited_from_the_page_tree() -> None:
    # Given an A4 page whose MediaBox sits on the Pages node (fpdf2 writes it there), with a line 150 mm down
    from fpdf import FPDF

    pdf = FPDF(format="A4")
    pdf.set_font("Helvetica", size=12)
    pdf.add_page()
    pdf.set_xy(60, 150)
    pdf.multi_cell(100, 8, "A sentence placed well inside an A4 page, at a known spot.")
    # When it is read
    box = document(bytes(pdf.output())).blocks[0].location.box
    # Then its box is a share of the A4 page (210 x 297 mm), not of the US Letter size PDFium falls back to
    assert box is not None
    assert abs(box.left - 60 / 210) < 0.01
    assert abs(box.top - 150 / 297) < 0.01


def paragraph_page() -> bytes:
    """One page with one paragraph of several lines, away from every edge."""
    from fpdf import FPDF

    pdf = FPDF(format="A4")
    pdf.set_font("Helvetica", size=12)
    pdf.add_page()
    pdf.set_xy(40, 60)
    pdf.multi_cell(110, 7, " ".join(["The survey counted burrows along the northern dunes."] * 5))
    return bytes(pdf.output())


@pytest.mark.parametrize("rotation", [0, 90, 180, 270])
def test_a_box_is_of_the_page_as_displayed_so_it_lands_on_the_words_of_the_rendered_page(rotation: int) -> None:
    # Given a page turned by /Rotate, with one paragraph of several lines
    import pypdfium2 as pdfium
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(paragraph_page())))
    writer.pages[0].rotate(rotation)
    buffer = io.BytesIO()
    writer.write(buffer)
    content = buffer.getvalue()
    # When it is read, and the page is rendered as a viewer shows it (PDFium applies /Rotate)
    blocks = document(content).blocks
    # Then its words are all there (PDFium hands a page turned a quarter its lines bottom first, so the paragraph
    # may come as one block per line: the layout is as it was before boxes were turned, only the boxes move)
    assert " ".join(block.text for block in blocks).count("northern dunes") == 5
    boxes = [block.location.box for block in blocks if block.location.box is not None]
    assert len(boxes) == len(blocks)
    box = BoundingBox(
        left=min(b.left for b in boxes),
        top=min(b.top for b in boxes),
        width=max(b.right for b in boxes) - min(b.left for b in boxes),
        height=max(b.bottom for b in boxes) - min(b.top for b in boxes),
    )
    rendered = pdfium.PdfDocument(content)[0].render(scale=1).to_pil().convert("L")
    width, height = rendered.size
    ink = [(x, y) for y in range(0, height, 2) for x in range(0, width, 2) if rendered.getpixel((x, y)) < 128]
    # And every dark pixel of the rendering lies inside the blocks' boxes, give or take two pixels
    assert ink
    assert min(x for x, _ in ink) >= box.left * width - 2 and max(x for x, _ in ink) <= box.right * width + 2
    assert min(y for _, y in ink) >= box.top * height - 2 and max(y for _, y in ink) <= box.bottom * height + 2
