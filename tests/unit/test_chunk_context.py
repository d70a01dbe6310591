"""Contextual chunks (issue 37, item 1): the title a chunk is indexed under, where it comes from, how the chunker
puts it (with the heading path and a table's caption) ahead of the body within the token budget, and the parsers'
declared titles, bounded."""

import io

import pytest

from shared.adapters.parsers.docx import DocxParser
from shared.adapters.parsers.html import HtmlParser
from shared.adapters.parsers.pdf import PdfParser
from shared.adapters.parsers.plain_text import PlainTextParser
from shared.adapters.parsers.pptx import PptxParser
from shared.domain.chunk_context import (
    MAX_TITLE_CHARACTERS,
    caption_before,
    declared_title,
    document_title,
    readable_stem,
    top_heading,
)
from shared.domain.chunking import StructuralChunker
from shared.domain.document import (
    MAX_DECLARED_TITLE_CHARACTERS,
    Block,
    BlockCollector,
    BlockKind,
    ExtractedDocument,
    ExtractionLimits,
    Table,
)
from shared.domain.knowledge import HEADING_SEPARATOR


def words(text: str) -> int:
    return len(text.split())


def heading(text: str, level: int = 1) -> Block:
    return Block(kind=BlockKind.HEADING, text=text, level=level)


def paragraph(text: str) -> Block:
    return Block(kind=BlockKind.PARAGRAPH, text=text)


def document(*blocks: Block, title: str | None = None) -> ExtractedDocument:
    return ExtractedDocument(media_type="text/plain", blocks=blocks, title=title)


@pytest.mark.parametrize(
    ("filename", "expected"),
    [
        ("Northwind Traders Q3 2025 report.pdf", "Northwind Traders Q3 2025 report"),
        ("board_minutes_march.docx", "board minutes march"),
        ("folder/sub\\Annual-Review.txt", "Annual-Review"),
        ("scan0001.pdf", None),
        ("IMG_2034.jpg", None),
        ("Untitled (3).docx", None),
        ("document.pdf", None),
        ("12345.txt", None),
    ],
)
def test_a_file_name_names_its_document_unless_it_is_a_default(filename: str, expected: str | None) -> None:
    assert readable_stem(filename) == expected


def test_a_declared_title_is_cleaned_of_the_producer_and_bounded() -> None:
    assert declared_title("Microsoft Word - Q3 board pack.docx") == "Q3 board pack"
    assert declared_title("Microsoft Word - Budget 2026 draft") == "Budget 2026 draft"
    assert declared_title("  Annual\n report   2025 ") == "Annual report 2025"
    assert declared_title("untitled") is None
    assert declared_title("12/03/2024") is None  # no word: says nothing
    long = declared_title("word " * 500)
    assert long is not None and len(long) <= MAX_TITLE_CHARACTERS and long.endswith("word")


def test_the_first_heading_is_the_title_only_when_it_is_the_document_s_top() -> None:
    assert top_heading((heading("Annual report"), heading("Results", 2), heading("Risks", 2))) == "Annual report"
    # Sibling sections: the first is not the document's title.
    assert top_heading((heading("Introduction"), heading("Methods"))) is None
    assert top_heading((paragraph("no headings"),)) is None


def test_the_title_comes_from_the_top_heading_then_the_declared_title_then_the_file_name() -> None:
    headed = document(heading("Annual report"), paragraph("text"), title="Declared")
    assert document_title(headed, "file name.pdf") == "Annual report"
    declared = document(heading("Introduction"), heading("Methods"), title="Declared title")
    assert document_title(declared, "file name.pdf") == "Declared title"
    assert document_title(document(paragraph("text")), "Board pack March.pdf") == "Board pack March"
    assert document_title(document(paragraph("text")), "scan0001.pdf") is None


def test_a_table_s_caption_is_the_short_paragraph_just_before_it() -> None:
    blocks = (paragraph("Table 3: Revenue by region, Q3 2025"), Block(kind=BlockKind.TABLE, text="t"))
    assert caption_before(blocks, [0, 1], 1) == "Table 3: Revenue by region, Q3 2025"
    long = (paragraph("prose " * 60), Block(kind=BlockKind.TABLE, text="t"))
    assert caption_before(long, [0, 1], 1) is None
    assert caption_before(blocks, [1], 0) is None


def chunker(max_tokens: int = 60) -> StructuralChunker:
    return StructuralChunker(words, max_tokens)


def test_every_chunk_is_indexed_under_the_title_and_its_heading_path_and_quotes_only_its_body() -> None:
    body = " ".join(f"word{i}" for i in range(30))
    drafts = chunker().chunk(document(paragraph(body), paragraph(body + " again")), title="Board pack March")
    assert len(drafts) == 2
    for draft in drafts:
        assert draft.title == "Board pack March"
        assert draft.content.startswith("Board pack March\n\n") and draft.content.endswith(draft.text)
        assert "Board pack" not in draft.text
        assert draft.token_count <= 60


def test_a_heading_path_that_begins_with_the_title_does_not_repeat_it() -> None:
    collector = BlockCollector(ExtractionLimits())
    for block in (heading("Annual report"), heading("Results", 2), paragraph("Revenue rose.")):
        collector.add(block)
    drafts = chunker().chunk(collector.document("text/markdown"), title="Annual report")
    assert drafts[0].title is None and drafts[0].heading_path == ("Annual report", "Results")
    assert drafts[0].content == f"Annual report{HEADING_SEPARATOR}Results\n\nRevenue rose."


def test_a_long_title_is_cut_to_a_quarter_of_the_budget_and_the_chunk_still_fits() -> None:
    title = " ".join(f"t{i}" for i in range(100))
    drafts = chunker(40).chunk(document(paragraph(" ".join(f"b{i}" for i in range(80)))), title=title)
    assert drafts and all(draft.token_count <= 40 for draft in drafts)
    assert all(draft.title is not None and words(draft.title) <= 10 for draft in drafts)
    assert " ".join(draft.text for draft in drafts).split()[0] == "b0"


def test_a_table_is_indexed_under_its_caption_and_each_piece_keeps_it() -> None:
    rows = (("Region", "Revenue"), *((f"R{i}", str(i)) for i in range(40)))
    table = Block(kind=BlockKind.TABLE, table=Table(rows=rows, header_rows=1))
    drafts = chunker().chunk(document(paragraph("Revenue by region, Q3 2025"), table), title="Northwind")
    pieces = [draft for draft in drafts if draft.block_kind is BlockKind.TABLE]
    assert len(pieces) > 1
    for piece in pieces:
        assert piece.caption == "Revenue by region, Q3 2025"
        assert piece.context == ("Northwind", "Revenue by region, Q3 2025")
        assert piece.text.startswith("Region")  # the header row is the body's, repeated on each piece
        assert piece.token_count <= 60


def test_a_chunk_s_content_has_no_context_without_a_title_or_headings() -> None:
    drafts = chunker().chunk(document(paragraph("Just text.")))
    assert drafts[0].context == () and drafts[0].content == "Just text."


# --- the parsers' declared titles ---------------------------------------------------------------------------


def parsed(parser: object, content: bytes) -> ExtractedDocument:
    outcome = parser.parse(content, ExtractionLimits())  # type: ignore[attr-defined]
    assert isinstance(outcome, ExtractedDocument), outcome
    return outcome


def test_a_pdf_s_title_property_is_read() -> None:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_title("Northwind Q3 2025 board pack")
    pdf.add_page()
    pdf.set_font("Helvetica", size=11)
    pdf.multi_cell(w=170, text="The company grew this quarter. " * 5)
    assert parsed(PdfParser(), bytes(pdf.output())).title == "Northwind Q3 2025 board pack"


def test_a_pdf_title_past_the_bound_is_not_read() -> None:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_title("x" * 10_000)
    pdf.add_page()
    pdf.set_font("Helvetica", size=11)
    pdf.multi_cell(w=170, text="The company grew this quarter. " * 5)
    assert parsed(PdfParser(), bytes(pdf.output())).title is None


def test_office_title_properties_are_read() -> None:
    from docx import Document
    from pptx import Presentation

    word = Document()
    word.core_properties.title = "Handbook 2026"
    word.add_paragraph("Everyone gets annual leave.")
    buffer = io.BytesIO()
    word.save(buffer)
    assert parsed(DocxParser(), buffer.getvalue()).title == "Handbook 2026"

    deck = Presentation()
    deck.core_properties.title = "Q3 results deck"
    deck.slides.add_slide(deck.slide_layouts[1]).shapes.title.text = "Results"
    buffer = io.BytesIO()
    deck.save(buffer)
    assert parsed(PptxParser(), buffer.getvalue()).title == "Q3 results deck"


def test_an_html_page_s_title_is_read_and_bounded_and_never_a_block() -> None:
    page = b"<html><head><title>Refund policy &amp; terms</title></head><body><p>Refunds take 5 days.</p></body></html>"
    read = parsed(HtmlParser(), page)
    assert read.title == "Refund policy & terms"
    assert [block.text for block in read.blocks] == ["Refunds take 5 days."]
    huge = b"<title>" + b"a" * 100_000 + b"</title><p>x</p>"
    title = parsed(HtmlParser(), huge).title
    assert title is not None and len(title) <= MAX_DECLARED_TITLE_CHARACTERS
    second = b"<title>First</title><title>Second</title><p>x</p>"
    assert parsed(HtmlParser(), second).title == "First"


def test_a_plain_text_file_declares_no_title() -> None:
    assert parsed(PlainTextParser(), b"Just text.\n").title is None


def test_a_near_generic_file_name_is_judged_in_linear_time() -> None:
    # A nested repetition would try every split of the digits before failing (seconds at 24 digits, days at 40).
    # (The test's own timeout is what fails here if it ever backtracks again.)
    near = readable_stem("document" + "1" * 5_000 + "x.txt")
    assert near is not None and near.startswith("document111") and len(near) <= MAX_TITLE_CHARACTERS
    assert declared_title("Scan " + "1" * 500 + "x") is not None
    assert readable_stem("New Document (12)-3_4.pdf") is None


def test_an_unclosed_or_drawn_title_is_not_the_page_s() -> None:
    unclosed = b"<html><head><title>Refunds</head><body><p>" + b"body text " * 200 + b"</p></body></html>"
    assert parsed(HtmlParser(), unclosed).title == "Refunds"
    drawn = b"<body><svg><title>chart</title></svg><p>Text.</p></body>"
    assert parsed(HtmlParser(), drawn).title is None
