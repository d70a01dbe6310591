"""DOCX, XLSX and PPTX to located blocks: documents written by the real writers, asserted block by block;
hostile archives refused within their bounds; the public office files parsed without a crash."""

import io
import posixpath
import zipfile
from pathlib import Path

import pytest

from shared.adapters.parsers.docx import DOCX_TYPE, DocxParser
from shared.adapters.parsers.pptx import PPTX_TYPE, PptxParser
from shared.adapters.parsers.xlsx import XLSX_TYPE, XlsxParser
from shared.domain.document import BlockKind, ExtractedDocument, ExtractionFailure, ExtractionLimits
from shared.domain.files import FailureReason
from shared.domain.rendering import render_markdown
from shared.ports import DocumentParser
from tests.builders.office import (
    slides,
    slides_with_line_breaks,
    word_document,
    word_document_with_hidden_places,
    workbook,
    workbook_with_a_text_box,
)
from tests.conftest import REPO_ROOT

LIMITS = ExtractionLimits()
OFFICE_DATA = REPO_ROOT.parent / "shared" / "data" / "office"


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
    parsers: dict[str, DocumentParser] = {DOCX_TYPE: DocxParser(), XLSX_TYPE: XlsxParser(), PPTX_TYPE: PptxParser()}
    parser = parsers[media_type]
    for content in (b"", b"PK\x03\x04 broken", b"%PDF-1.4 not office"):
        outcome = parser.parse(content, LIMITS)
        assert isinstance(outcome, ExtractionFailure)
        assert outcome.reason is FailureReason.MALFORMED


def public_office_files() -> list[Path]:
    if not OFFICE_DATA.exists():
        return []
    return sorted(p for p in OFFICE_DATA.rglob("*") if p.suffix.lower() in (".docx", ".xlsx", ".pptx"))


@pytest.mark.slow
@pytest.mark.skipif(not OFFICE_DATA.exists(), reason="../shared/data/office is not present on this machine")
def test_every_public_office_file_parses_to_blocks_or_a_failure_value() -> None:
    parsers: dict[str, DocumentParser] = {".docx": DocxParser(), ".xlsx": XlsxParser(), ".pptx": PptxParser()}
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


@pytest.mark.slow
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


def workbook_with_external_link(*, link_part: bytes | None) -> bytes:
    """A workbook whose workbook.xml names an external link: `link_part` None leaves the relationship
    dangling (its part absent); otherwise the part is written as given, without relationships of its own."""
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Rates"
    sheet.append(["Currency", "Rate"])
    sheet.append(["EUR", 1.08])
    buffer = io.BytesIO()
    book.save(buffer)
    source = zipfile.ZipFile(io.BytesIO(buffer.getvalue()))
    relationship = (
        '<Relationship Id="rId99" Target="externalLinks/externalLink1.xml" '
        'Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/externalLink"/>'
    )
    reference = (
        '<externalReferences><externalReference xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/'
        'relationships" r:id="rId99"/></externalReferences>'
    )
    rewritten = io.BytesIO()
    with zipfile.ZipFile(rewritten, "w", zipfile.ZIP_DEFLATED) as target:
        for item in source.infolist():
            data = source.read(item.filename)
            if item.filename == "xl/workbook.xml":
                data = data.replace(b"<definedNames/>", reference.encode() + b"<definedNames/>")
            elif item.filename == "xl/_rels/workbook.xml.rels":
                data = data.replace(b"</Relationships>", relationship.encode() + b"</Relationships>")
            target.writestr(item, data)
        if link_part is not None:
            target.writestr("xl/externalLinks/externalLink1.xml", link_part)
    return rewritten.getvalue()


DDE_LINK = (
    b'<externalLink xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">'
    b'<ddeLink ddeService="Excel" ddeTopic="C:\\prices.xls"><ddeItems><ddeItem name="R1C1"/></ddeItems></ddeLink>'
    b"</externalLink>"
)


@pytest.mark.parametrize("link_part", [None, DDE_LINK], ids=["dangling-link", "dde-link"])
def test_a_workbook_with_an_external_link_is_read_without_it_and_says_so(link_part: bytes | None) -> None:
    # Given a workbook linking to another workbook (its part missing) or to a DDE source
    content = workbook_with_external_link(link_part=link_part)
    # When it is parsed
    document = parsed(XlsxParser().parse(content, LIMITS))
    # Then its own cells are read, and the warning says the link was not followed
    assert document.blocks[0].table is not None
    assert document.blocks[0].table.rows == (("Currency", "Rate"), ("EUR", "1.08"))
    assert any("links to other workbooks" in warning for warning in document.warnings)


def texts(document: ExtractedDocument) -> list[tuple[str | None, str]]:
    return [(b.location.shape, b.text) for b in document.blocks if b.text]


def test_docx_text_in_text_boxes_is_read_once_after_its_paragraph() -> None:
    # Given a paragraph anchoring a text box (its drawing and its VML fallback copy)
    document = parsed(DocxParser().parse(word_document_with_hidden_places(), LIMITS))
    # When it is read
    # Then the box's text comes once, after its paragraph, located on it
    boxes = [b for b in document.blocks if b.text == "Call 555-0100 to book"]
    assert len(boxes) == 1
    flyer = next(b for b in document.blocks if b.text == "Flyer:")
    assert (boxes[0].location.shape, boxes[0].location.paragraph_index) == ("text box", flyer.location.paragraph_index)
    assert document.blocks.index(boxes[0]) == document.blocks.index(flyer) + 1


def test_docx_tracked_insertions_content_controls_and_fields_are_text_and_deletions_are_not() -> None:
    # Given text inside a tracked insertion (beside a deletion), a content control and a simple field
    document = parsed(DocxParser().parse(word_document_with_hidden_places(), LIMITS))
    body = [text for shape, text in texts(document) if shape is None]
    # When it is read
    # Then a reader gets what Word shows
    assert "Prices rise 12% in May" in body
    assert "Signed by Jane Roe" in body
    assert "Page 4" in body
    assert "Cover page: annual report 2026" in body
    assert not any("10%" in text for text in body)


def test_docx_even_page_headers_header_tables_comments_and_footnotes_are_read() -> None:
    # Given an even-page header, a table in a header, a comment and a footnote
    document = parsed(DocxParser().parse(word_document_with_hidden_places(), LIMITS))
    found = texts(document)
    # When it is read
    # Then each is a block, located by the part it comes from
    assert ("header", "Odd pages") in found
    assert ("header", "Even pages") in found
    assert ("footnote 1", "Board decision of 3 March.") in found
    assert any(
        shape is not None and shape.startswith("comment") and text == "Appendix B is missing" for shape, text in found
    )
    header_table = next(b for b in document.blocks if b.table is not None and b.location.shape == "header")
    assert header_table.table is not None
    assert header_table.table.rows == (("Ref", "HR-7"),)


def test_docx_a_cell_merged_into_the_one_above_shows_nothing_of_its_own() -> None:
    from docx import Document

    # Given a table whose second row's first cell is merged into the first row's, keeping stale text
    document = Document()
    table = document.add_table(rows=2, cols=2)
    table.cell(0, 0).text, table.cell(0, 1).text = "Region", "EU"
    table.cell(1, 1).text = "US"
    table.cell(0, 0).merge(table.cell(1, 0))
    # Word hides what a continuation cell still holds (documents from other writers keep some).
    continuation = table._tbl.tr_lst[1].tc_lst[0]
    continuation.p_lst[0].add_r().text = "stale"
    buffer = io.BytesIO()
    document.save(buffer)
    # When it is read
    outcome = parsed(DocxParser().parse(buffer.getvalue(), LIMITS))
    # Then the merged cell shows its first cell's text only
    assert outcome.blocks[0].table is not None
    assert outcome.blocks[0].table.rows == (("Region", "EU"), ("", "US"))


def test_pptx_a_line_break_inside_a_paragraph_separates_its_words() -> None:
    # Given a text box whose paragraph breaks its line between two runs
    # When it is read
    document = parsed(PptxParser().parse(slides_with_line_breaks(), LIMITS))
    # Then the words on either side of the break stay apart
    assert [b.text for b in document.blocks] == ["Opening hours Monday to Friday"]


def test_xlsx_the_text_of_a_sheets_text_box_is_a_block_after_its_tables() -> None:
    # Given a sheet with a text box drawn over cells A6:D10
    # When it is read
    document = parsed(XlsxParser().parse(workbook_with_a_text_box(), LIMITS))
    # Then the box's text is a paragraph of that sheet, located by its shape and the cells it covers
    box = next(b for b in document.blocks if b.kind is BlockKind.PARAGRAPH)
    assert box.text == "Figures are unaudited.\nSource: finance team"
    assert (box.location.sheet, box.location.shape, box.location.cell_range) == ("Budget", "TextBox 1", "A6:D10")
    assert document.blocks.index(box) == 1  # after the Budget table, before the Notes sheet


def workbook_with_shared_strings(indexes: list[str]) -> bytes:
    """A sheet whose first row's cells refer by number to a two-entry shared-string table (rich text first)."""
    base = workbook()
    strings = (
        b'<sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" count="2" uniqueCount="2">'
        b'<si><r><t>Net</t></r><r><rPr><b/></rPr><t xml:space="preserve"> revenue</t></r></si>'
        b'<si><t>Tokyo</t><rPh sb="0" eb="2"><t>TOUKYOU</t></rPh></si></sst>'
    )
    cells = "".join(f'<c r="{chr(65 + i)}1" t="s"><v>{index}</v></c>' for i, index in enumerate(indexes))
    sheet = (
        '<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>'
        f'<row r="1">{cells}</row><row r="2"><c r="A2"><v>7</v></c></row></sheetData></worksheet>'
    ).encode()
    strings_type = "application/vnd.openxmlformats-officedocument.spreadsheetml.sharedStrings+xml"
    source = zipfile.ZipFile(io.BytesIO(base))
    rewritten = io.BytesIO()
    with zipfile.ZipFile(rewritten, "w", zipfile.ZIP_DEFLATED) as target:
        for item in source.infolist():
            data = source.read(item.filename)
            if item.filename == "xl/worksheets/sheet1.xml":
                data = sheet
            elif item.filename == "[Content_Types].xml":
                override = f'<Override PartName="/xl/sharedStrings.xml" ContentType="{strings_type}"/>'
                data = data.replace(b"</Types>", override.encode() + b"</Types>")
            elif item.filename == "xl/_rels/workbook.xml.rels":
                data = data.replace(
                    b"</Relationships>",
                    b'<Relationship Id="rIdStrings" Target="sharedStrings.xml" Type="http://schemas.openxmlformats'
                    b'.org/officeDocument/2006/relationships/sharedStrings"/></Relationships>',
                )
            target.writestr(item, data)
        target.writestr("xl/sharedStrings.xml", strings)
    return rewritten.getvalue()


def test_xlsx_rich_and_phonetic_shared_strings_read_as_their_text() -> None:
    # Given cells whose shared strings are rich text and text with a phonetic reading
    # When they are read
    document = parsed(XlsxParser().parse(workbook_with_shared_strings(["0", "1"]), LIMITS))
    # Then each cell shows the text, the phonetic guide left out
    assert document.blocks[0].table is not None
    assert document.blocks[0].table.rows[0] == ("Net revenue", "Tokyo")


def test_xlsx_a_cell_referring_past_the_shared_strings_is_empty_not_a_broken_workbook() -> None:
    # Given a cell that refers to shared string 99 of a table of two
    # When the workbook is read
    document = parsed(XlsxParser().parse(workbook_with_shared_strings(["99", "0"]), LIMITS))
    # Then the other cells are read, that one is empty, and the warning says why
    assert document.blocks[0].table is not None
    assert document.blocks[0].table.rows == (("", "Net revenue"), ("7", ""))
    assert "some cells refer to text the workbook does not have; they are shown empty" in document.warnings


def test_a_dtd_in_a_utf16_part_is_refused_like_an_ascii_one() -> None:
    # UTF-16 hides the ASCII "<!DOCTYPE" a byte scan looks for; XML parsers read it all the same.
    utf16 = BILLION_LAUGHS.decode().replace('<?xml version="1.0"?>', '<?xml version="1.0" encoding="UTF-16"?>')
    outcome = DocxParser().parse(rewrite_member(word_document(), "word/document.xml", utf16.encode("utf-16")), LIMITS)
    assert isinstance(outcome, ExtractionFailure)
    assert outcome.reason is FailureReason.MALFORMED
    assert "DTD" in outcome.detail


def test_a_sheet_drawing_reached_by_a_relationship_cannot_carry_a_dtd() -> None:
    import openpyxl

    book = openpyxl.Workbook()
    book.active["A1"] = "figures"
    buffer = io.BytesIO()
    book.save(buffer)
    # A drawing part not named .xml (so no byte scan of XML parts reads it), with an entity declaration.
    drawing = b'<?xml version="1.0"?><!DOCTYPE d [<!ENTITY x "expanded">]><xdr:wsDr xmlns:xdr="urn:x">&x;</xdr:wsDr>'
    relationships = (
        b'<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
        b'<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/drawing"'
        b' Target="../drawings/drawing1.bin"/></Relationships>'
    )
    source = zipfile.ZipFile(io.BytesIO(buffer.getvalue()))
    rebuilt = io.BytesIO()
    with zipfile.ZipFile(rebuilt, "w") as target:
        for item in source.infolist():
            target.writestr(item, source.read(item.filename))
        target.writestr("xl/worksheets/_rels/sheet1.xml.rels", relationships)
        target.writestr("xl/drawings/drawing1.bin", drawing)
    outcome = XlsxParser().parse(rebuilt.getvalue(), LIMITS)
    assert isinstance(outcome, ExtractionFailure)
    assert outcome.reason is FailureReason.MALFORMED


def header_part_renamed(name: str, data: bytes) -> bytes:
    """The test document with its header part moved to `name` (a .dat file gets a content type of plain
    bytes, so python-docx opens it as a plain part, not as XML) and holding `data`."""
    source = zipfile.ZipFile(io.BytesIO(word_document()))
    parts = {item.filename: source.read(item.filename) for item in source.infolist()}
    parts.pop("word/header1.xml")
    plain = b'<Default Extension="dat" ContentType="application/octet-stream"/>'
    parts["[Content_Types].xml"] = parts["[Content_Types].xml"].replace(b"<Default ", plain + b"<Default ", 1)
    relationships = parts["word/_rels/document.xml.rels"]
    parts["word/_rels/document.xml.rels"] = relationships.replace(b"header1.xml", posixpath.basename(name).encode())
    rebuilt = io.BytesIO()
    with zipfile.ZipFile(rebuilt, "w") as target:
        for part, body in {**parts, name: data}.items():
            target.writestr(part, body)
    return rebuilt.getvalue()


@pytest.mark.parametrize("name", ["word/header1.dat", "word/header1.XML"])
def test_a_header_part_not_named_as_xml_cannot_carry_a_dtd(name: str) -> None:
    # Given a header reached by its relationship whatever it is named, with an entity declaration (the
    # guard read only parts named .xml, in lower case; python-docx's parser does not expand entities,
    # but a DTD is refused wherever it is, as everywhere else)
    header = b'<?xml version="1.0"?><!DOCTYPE w:hdr [<!ENTITY x "expanded">]><w:hdr xmlns:w="urn:x">&x;</w:hdr>'
    # When parsed, then the document is refused, naming the part
    outcome = DocxParser().parse(header_part_renamed(name, header), LIMITS)
    assert isinstance(outcome, ExtractionFailure)
    assert outcome.reason is FailureReason.MALFORMED
    assert outcome.detail == f"{name} declares a DTD or entities, which are refused"


def test_a_header_part_that_is_not_xml_costs_the_document_nothing_else() -> None:
    # Given a header part reached by its relationship that holds bytes, not XML
    outcome = DocxParser().parse(header_part_renamed("word/header1.dat", b"\x00\x01 not xml"), LIMITS)
    # When parsed, then the body is read
    assert "Tell your manager." in [block.text for block in parsed(outcome).blocks]


def with_member(package: bytes, name: str, content: bytes) -> bytes:
    """The same Office package with one member's bytes replaced."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(package)) as source, zipfile.ZipFile(out, "w") as target:
        for info in source.infolist():
            target.writestr(info, content if info.filename == name else source.read(info.filename))
    return out.getvalue()


def test_a_damaged_office_part_is_malformed_with_a_fixed_sentence_and_the_librarys_words_only_in_the_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Given a Word package whose document part is not well-formed XML (lxml says where and what it expected)
    damaged = with_member(word_document(), "word/document.xml", b"<w:document xmlns:w='urn:w'><w:body></w:document>")
    with caplog.at_level("WARNING", logger="shared.adapters.parsers.ooxml_guard"):
        outcome = DocxParser().parse(damaged, LIMITS)
    assert isinstance(outcome, ExtractionFailure) and outcome.reason is FailureReason.MALFORMED
    assert (
        outcome.detail == "not a readable DOCX: open it in the program that made it, save it again and upload it again"
    )
    assert "XMLSyntaxError" in caplog.text and "line 1" in caplog.text
