"""DOCX, XLSX and PPTX to located blocks: documents written by the real writers, asserted block by block;
hostile archives refused within their bounds; the public office files parsed without a crash."""

import io
import zipfile
from datetime import datetime
from pathlib import Path

import pytest

from shared.adapters.parsers.docx import DOCX_TYPE, DocxParser
from shared.adapters.parsers.pptx import PPTX_TYPE, PptxParser
from shared.adapters.parsers.xlsx import XLSX_TYPE, XlsxParser
from shared.domain.document import BlockKind, ExtractedDocument, ExtractionFailure, ExtractionLimits
from shared.domain.files import FailureReason
from shared.domain.rendering import render_markdown
from tests.conftest import REPO_ROOT

LIMITS = ExtractionLimits()
OFFICE_DATA = REPO_ROOT.parent / "shared" / "data" / "office"


def word_document() -> bytes:
    from docx import Document

    document = Document()
    document.add_heading("Employee handbook", level=0)
    document.add_heading("Leave", level=1)
    document.add_paragraph("Everyone gets annual leave.")
    document.add_paragraph("Plan ahead", style="List Bullet")
    document.add_paragraph("Ask early", style="List Number")
    table = document.add_table(rows=3, cols=2)
    for row, values in zip(table.rows, [("Region", "Days"), ("EU", "25"), ("US", "15")], strict=True):
        for cell, value in zip(row.cells, values, strict=True):
            cell.text = value
    document.add_heading("Sick leave", level=2)
    document.add_paragraph("Tell your manager.")
    document.sections[0].header.paragraphs[0].text = "ACME confidential"
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def parsed(outcome: object) -> ExtractedDocument:
    assert isinstance(outcome, ExtractedDocument), outcome
    return outcome


def test_docx_headings_lists_tables_and_headers_block_by_block() -> None:
    document = parsed(DocxParser().parse(word_document(), LIMITS))
    assert [(b.kind.value, b.text, b.level, b.depth) for b in document.blocks if b.kind is not BlockKind.TABLE] == [
        ("paragraph", "ACME confidential", None, None),
        ("heading", "Employee handbook", 1, None),
        ("heading", "Leave", 1, None),
        ("paragraph", "Everyone gets annual leave.", None, None),
        ("list_item", "Plan ahead", None, 0),
        ("list_item", "Ask early", None, 0),
        ("heading", "Sick leave", 2, None),
        ("paragraph", "Tell your manager.", None, None),
    ]
    table = next(b for b in document.blocks if b.kind is BlockKind.TABLE)
    assert table.table is not None
    assert (table.table.rows, table.table.header_rows) == ((("Region", "Days"), ("EU", "25"), ("US", "15")), 1)
    assert table.location.table_index == 0
    assert table.heading_path == ("Leave",)
    assert document.blocks[0].location.shape == "header"
    sick = next(b for b in document.blocks if b.text == "Tell your manager.")
    assert sick.heading_path == ("Leave", "Sick leave")
    assert sick.location.paragraph_index is not None
    assert "| Region | Days |" in render_markdown(document.blocks)


def workbook() -> bytes:
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Budget"
    sheet.append(["Item", "Cost", "Share", "Due"])
    sheet.append(["Rent", 1200.0, 0.6, datetime(2026, 3, 1)])
    sheet.append(["Food", 800, 0.4, datetime(2026, 3, 15, 9, 30)])
    sheet["C2"].number_format = "0%"
    sheet["C3"].number_format = "0%"
    sheet["A4"] = "Total"
    sheet["B4"] = "=SUM(B2:B3)"
    other = book.create_sheet("Notes")
    other["C5"] = "far away"
    buffer = io.BytesIO()
    book.save(buffer)
    return buffer.getvalue()


def test_xlsx_sheets_become_tables_with_displayed_values_and_ranges() -> None:
    document = parsed(XlsxParser().parse(workbook(), LIMITS))
    budget, notes = document.blocks
    assert (budget.location.sheet, budget.location.cell_range) == ("Budget", "A2:D4")
    assert budget.table is not None
    assert budget.table.header_rows == 1
    assert budget.table.rows[:3] == (
        ("Item", "Cost", "Share", "Due"),
        ("Rent", "1200", "60%", "2026-03-01"),
        ("Food", "800", "40%", "2026-03-15 09:30:00"),
    )
    # A formula never calculated by a spreadsheet program has no cached value: it shows empty, never the formula.
    assert budget.table.rows[3] == ("Total", "", "", "")
    assert (notes.location.sheet, notes.location.cell_range, notes.table.rows) == (  # type: ignore[union-attr]
        "Notes",
        "C5:C5",
        (("far away",),),
    )


def slides() -> bytes:
    from pptx import Presentation
    from pptx.util import Inches

    deck = Presentation()
    first = deck.slides.add_slide(deck.slide_layouts[1])
    first.shapes.title.text = "Quarterly results"
    body = first.placeholders[1].text_frame
    body.text = "Revenue up"
    nested = body.add_paragraph()
    nested.text = "EU strongest"
    nested.level = 1
    first.notes_slide.notes_text_frame.text = "Mention the EU launch."
    second = deck.slides.add_slide(deck.slide_layouts[5])
    second.shapes.title.text = "Numbers"
    shape = second.shapes.add_table(2, 2, Inches(1), Inches(2), Inches(4), Inches(1))
    for (row, col), value in {(0, 0): "Quarter", (0, 1): "Revenue", (1, 0): "Q3", (1, 1): "4.2"}.items():
        shape.table.cell(row, col).text = value
    buffer = io.BytesIO()
    deck.save(buffer)
    return buffer.getvalue()


def test_pptx_titles_bullets_tables_and_notes_by_slide() -> None:
    document = parsed(PptxParser().parse(slides(), LIMITS))
    assert document.page_count == 2
    assert [(b.kind.value, b.text, b.depth, b.location.slide) for b in document.blocks if b.table is None] == [
        ("heading", "Quarterly results", None, 1),
        ("list_item", "Revenue up", 0, 1),
        ("list_item", "EU strongest", 1, 1),
        ("paragraph", "Mention the EU launch.", None, 1),
        ("heading", "Numbers", None, 2),
    ]
    table = next(b for b in document.blocks if b.table is not None)
    assert table.table is not None
    assert (table.table.rows, table.table.header_rows, table.location.slide) == (
        (("Quarter", "Revenue"), ("Q3", "4.2")),
        1,
        2,
    )


def rewrite_member(archive_bytes: bytes, name: str, data: bytes) -> bytes:
    source = zipfile.ZipFile(io.BytesIO(archive_bytes))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as target:
        for item in source.infolist():
            target.writestr(item, data if item.filename == name else source.read(item.filename))
    return buffer.getvalue()


BILLION_LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
<!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">]>
<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p><w:r><w:t>&lol3;</w:t></w:r></w:p></w:body></w:document>"""


@pytest.mark.parametrize(
    ("parser", "make", "part"),
    [
        (DocxParser(), word_document, "word/document.xml"),
        (XlsxParser(), workbook, "xl/workbook.xml"),
        (PptxParser(), slides, "ppt/presentation.xml"),
    ],
    ids=["docx", "xlsx", "pptx"],
)
def test_an_xml_part_with_a_dtd_is_refused_before_any_xml_library_reads_it(parser, make, part) -> None:  # type: ignore[no-untyped-def]
    outcome = parser.parse(rewrite_member(make(), part, BILLION_LAUGHS), LIMITS)
    assert isinstance(outcome, ExtractionFailure)
    assert outcome.reason is FailureReason.MALFORMED
    assert "DTD" in outcome.detail


@pytest.mark.parametrize(
    ("parser", "make"), [(DocxParser(), word_document), (XlsxParser(), workbook)], ids=["docx", "xlsx"]
)
def test_a_zip_bomb_stops_at_the_inflated_ceiling(parser, make) -> None:  # type: ignore[no-untyped-def]
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        original = zipfile.ZipFile(io.BytesIO(make()))
        for item in original.infolist():
            archive.writestr(item.filename, original.read(item.filename))
        archive.writestr("word/media/bomb.bin", b"\0" * (64 * 1024 * 1024))  # 64 MB → ~64 KB
    bomb = buffer.getvalue()
    assert len(bomb) < 1024 * 1024
    outcome = parser.parse(bomb, ExtractionLimits(max_inflated_bytes=16 * 1024 * 1024))
    assert isinstance(outcome, ExtractionFailure)
    assert (outcome.reason, outcome.detail) == (
        FailureReason.TOO_LARGE,
        f"its parts inflate past {16 * 1024 * 1024} bytes",
    )


def test_a_sheet_declaring_a_million_cells_is_read_by_the_cells_it_has() -> None:
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    sheet["A1"] = "first"
    sheet["XFD1048576"] = "last"  # declares A1:XFD1048576, about 17 billion cells
    buffer = io.BytesIO()
    book.save(buffer)
    document = parsed(XlsxParser().parse(buffer.getvalue(), LIMITS))
    texts = [cell for block in document.blocks for row in block.table.rows for cell in row if cell]  # type: ignore[union-attr]
    assert "first" in texts


@pytest.mark.parametrize("media_type", [DOCX_TYPE, XLSX_TYPE, PPTX_TYPE])
def test_bytes_that_are_not_an_office_file_are_malformed_not_a_crash(media_type: str) -> None:
    parser = {DOCX_TYPE: DocxParser(), XLSX_TYPE: XlsxParser(), PPTX_TYPE: PptxParser()}[media_type]
    for content in (b"", b"PK\x03\x04 broken", b"%PDF-1.4 not office"):
        outcome = parser.parse(content, LIMITS)
        assert isinstance(outcome, ExtractionFailure)
        assert outcome.reason is FailureReason.MALFORMED


def public_office_files() -> list[Path]:
    if not OFFICE_DATA.exists():
        return []
    return sorted(p for p in OFFICE_DATA.rglob("*") if p.suffix.lower() in (".docx", ".xlsx", ".pptx"))


@pytest.mark.skipif(not OFFICE_DATA.exists(), reason="../shared/data/office is not present on this machine")
def test_every_public_office_file_parses_to_blocks_or_a_failure_value() -> None:
    parsers = {".docx": DocxParser(), ".xlsx": XlsxParser(), ".pptx": PptxParser()}
    files = public_office_files()
    assert files
    documents = 0
    for path in files:
        outcome = parsers[path.suffix.lower()].parse(path.read_bytes(), LIMITS)
        assert isinstance(outcome, ExtractedDocument | ExtractionFailure), path
        if isinstance(outcome, ExtractedDocument):
            documents += 1
            render_markdown(outcome.blocks)
    # Nearly all of them are real, readable documents.
    assert documents >= 0.8 * len(files)


@pytest.mark.parametrize("parser", [DocxParser(), XlsxParser(), PptxParser()], ids=["docx", "xlsx", "pptx"])
def test_a_password_protected_office_file_is_encrypted_not_malformed(parser) -> None:  # type: ignore[no-untyped-def]
    # What Office writes for a protected file: an OLE container with an EncryptedPackage stream.
    container = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(1024) + "EncryptedPackage".encode("utf-16-le") + bytes(512)
    outcome = parser.parse(container, LIMITS)
    assert isinstance(outcome, ExtractionFailure)
    assert outcome.reason is FailureReason.ENCRYPTED


def test_a_million_empty_cells_are_walked_within_the_cell_limit_and_said_so(monkeypatch: pytest.MonkeyPatch) -> None:
    from shared.adapters.parsers import xlsx
    from shared.adapters.parsers.cells import column_letters

    # 1,000 rows of 1,000 empty cells each, written as cells (not just a declared dimension).
    columns = [column_letters(i) for i in range(1000)]
    rows = "".join(
        f'<row r="{r}">' + "".join(f'<c r="{c}{r}" t="inlineStr"><is><t></t></is></c>' for c in columns) + "</row>"
        for r in range(1, 1001)
    )
    sheet = (
        '<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>'
        + rows
        + "</sheetData></worksheet>"
    ).encode()
    bomb = rewrite_member(workbook(), "xl/worksheets/sheet1.xml", sheet)
    monkeypatch.setattr(xlsx, "MAX_CELLS_VISITED", 50_000)
    outcome = XlsxParser().parse(bomb, LIMITS)
    assert isinstance(outcome, ExtractedDocument)
    assert any("cell limit" in warning for warning in outcome.warnings)
