"""The export renderers: deterministic bytes (rendered twice *and* the fixed values asserted), fidelity
checked by Quire's own parsers reading each export back, and hostile content ending rendered or refused with
a sentence."""

import io
import re
import zipfile
from datetime import UTC, datetime

import pypdfium2 as pdfium
import pytest

from shared.adapters.parsers.docx import DocxParser
from shared.adapters.parsers.html import HtmlParser
from shared.adapters.parsers.markdown import MarkdownParser
from shared.adapters.parsers.pdf import PdfParser
from shared.adapters.renderers.docx import DocxRenderer
from shared.adapters.renderers.html import HtmlRenderer
from shared.adapters.renderers.markdown import MarkdownRenderer
from shared.adapters.renderers.pdf import PdfRenderer
from shared.domain.artifacts import ArtifactCitation
from shared.domain.document import Block, BlockKind, ExtractedDocument, ExtractionLimits, Table
from shared.domain.exports import RENDER_EPOCH, ExportFormat, RenderFailed, RenderLimits, RenderRequest, content_id
from shared.domain.search import Citation, CitedKind
from shared.ports import ArtifactRenderer, DocumentParser

REPORT = """# Quarterly report

Revenue grew in every region, led by the northern markets [1].

## Regional results

| Region | Revenue | Margin |
| --- | --- | --- |
| North | 12.4 | 31% |
| South | 9.1 | 27% |
| East | 7.7 | 22% |
| West | 5.0 | 19% |

## Risks

- Supply chain delays
- Currency movements

> Forecasts are estimates, not commitments.

```
total = north + south + east + west
```

Ελληνικά, кириллица, Łódź and Ærøskøbing render in one font.
"""

RENDERERS: list[ArtifactRenderer] = [PdfRenderer(), DocxRenderer(), HtmlRenderer(), MarkdownRenderer()]
PARSERS: dict[ExportFormat, DocumentParser] = {
    ExportFormat.PDF: PdfParser(),
    ExportFormat.DOCX: DocxParser(),
    ExportFormat.HTML: HtmlParser(),
    ExportFormat.MARKDOWN: MarkdownParser(),
}


def blocks_of(markdown: str) -> tuple[Block, ...]:
    document = MarkdownParser().parse(markdown.encode(), ExtractionLimits())
    assert isinstance(document, ExtractedDocument)
    return document.blocks


def citation() -> ArtifactCitation:
    cited = Citation(
        file_id="5d1f6c1e-0000-4000-8000-000000000001",
        version_id="5d1f6c1e-0000-4000-8000-000000000002",
        filename="sales-2026.xlsx",
        media_type="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        collection_id="docs",
        sheet="Q3",
        cells="B2:D5",
        kind=CitedKind.QUOTE,
        excerpt="North 12.4 31%",
        retrieved_at=datetime(2026, 11, 30, tzinfo=UTC),
        metadata={"region": "north", "audited": True, "tags": ["q3", "final"]},
        metadata_revision=2,
    )
    return ArtifactCitation(number=1, chunk_id="chunk-1", citation=cited)


def request(markdown: str = REPORT, **changes: object) -> RenderRequest:
    base = RenderRequest(
        title="Quarterly report", blocks=blocks_of(markdown), citations=(citation(),), content_id=content_id("x", "1")
    )
    return base.model_copy(update=changes)


def parsed(fmt: ExportFormat, content: bytes) -> ExtractedDocument:
    document = PARSERS[fmt].parse(content, ExtractionLimits())
    assert isinstance(document, ExtractedDocument), document
    return document


@pytest.mark.parametrize("renderer", RENDERERS, ids=lambda r: r.format.value)
def test_every_export_reads_back_with_its_headings_paragraphs_and_table_cells(renderer: object) -> None:
    rendered = renderer.render(request(), RenderLimits())  # type: ignore[attr-defined]
    back = parsed(rendered.format, rendered.content)
    headings = [" ".join(block.text.split()) for block in back.blocks if block.kind is BlockKind.HEADING]
    assert {"Quarterly report", "Regional results", "Risks"} <= set(headings)
    text = " ".join(" ".join(block.text.split()) for block in back.blocks)
    assert "Revenue grew in every region, led by the northern markets [1]." in text
    assert "Ελληνικά, кириллица, Łódź and Ærøskøbing render in one font." in text
    tables = [block.table for block in back.blocks if block.table is not None]
    assert any(
        [list(row) for row in table.rows][:2] == [["Region", "Revenue", "Margin"], ["North", "12.4", "31%"]]
        for table in tables
    ), tables
    # The citation is a numbered note naming the file, its exact version and the location.
    assert "sales-2026.xlsx, version 5d1f6c1e-0000-4000-8000-000000000002, sheet Q3, cells B2:D5" in text
    # With the cited file's metadata as it was cited (issue 33: provenance carries it).
    assert "cells B2:D5 (audited: true; region: north; tags: q3, final)" in text


@pytest.mark.parametrize("renderer", RENDERERS, ids=lambda r: r.format.value)
def test_the_same_content_always_gives_the_same_bytes(renderer: object) -> None:
    first = renderer.render(request(), RenderLimits())  # type: ignore[attr-defined]
    second = renderer.render(request(), RenderLimits())  # type: ignore[attr-defined]
    assert first.content == second.content
    other = renderer.render(request(REPORT.replace("12.4", "12.5")), RenderLimits())  # type: ignore[attr-defined]
    assert other.content != first.content


def test_the_pdf_carries_the_fixed_date_and_an_id_derived_from_the_content() -> None:
    assert datetime(2000, 1, 1, tzinfo=UTC) == RENDER_EPOCH
    rendered = PdfRenderer().render(request(), RenderLimits())
    assert b"/CreationDate (D:20000101000000Z" in rendered.content
    expected = content_id("x", "1")[:32].upper()
    assert f"/ID [<{expected}><{expected}>]".encode() in rendered.content
    moved = PdfRenderer().render(request(content_id=content_id("x", "2")), RenderLimits())
    assert f"<{expected}>".encode() not in moved.content


def test_the_docx_carries_fixed_core_dates_and_fixed_zip_entry_times() -> None:
    rendered = DocxRenderer().render(request(), RenderLimits())
    with zipfile.ZipFile(io.BytesIO(rendered.content)) as archive:
        assert {info.date_time for info in archive.infolist()} == {(1980, 1, 1, 0, 0, 0)}
        core = archive.read("docProps/core.xml").decode()
        document = archive.read("word/document.xml").decode()
    assert "<dcterms:created" in core and "2000-01-01T00:00:00Z</dcterms:created>" in core
    assert "2000-01-01T00:00:00Z</dcterms:modified>" in core
    # Real heading styles, list styles, and a header row Word repeats on every page.
    assert 'w:val="Heading1"' in document and 'w:val="ListBullet"' in document
    assert "<w:tblHeader/>" in document


def test_html_is_self_contained_and_escapes_every_text() -> None:
    hostile = '# <script>alert(1)</script>\n\nA paragraph with <img src=x onerror=alert(2)> and "quotes" & [1].\n'
    rendered = HtmlRenderer().render(request(hostile), RenderLimits())
    page = rendered.content.decode()
    assert "<script" not in page and "<img" not in page and "onerror=alert(2)>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "default-src 'none'" in page
    assert not re.search(r"""(src|href)=["']?(https?:|//)""", page)
    assert '<a href="#note-1">[1]</a>' in page and 'id="note-1"' in page


def test_characters_the_pdf_font_lacks_are_reported_and_said_in_the_document_never_drawn_as_blanks() -> None:
    rendered = PdfRenderer().render(request("# Report 中文\n\nTotal: 42 单位.\n"), RenderLimits())
    assert set(rendered.unsupported_characters) == {"中", "文", "单", "位"}
    text = " ".join(block.text for block in parsed(ExportFormat.PDF, rendered.content).blocks)
    assert "Report" in text and "Total: 42 ." in text
    assert "?" not in text.replace("left out", "")
    assert "U+4E2D" in text and "left out" in text
    # The other formats keep every character.
    for renderer in (DocxRenderer(), HtmlRenderer(), MarkdownRenderer()):
        again = renderer.render(request("# Report 中文\n"), RenderLimits())
        assert again.unsupported_characters == ()
        assert "中文" in " ".join(block.text for block in parsed(again.format, again.content).blocks)


def _text_stays_on_the_page(content: bytes) -> None:
    document = pdfium.PdfDocument(content)
    try:
        for page in document:
            width = page.get_width()
            text = page.get_textpage()
            for index in range(text.count_chars()):
                left, _, right, _ = text.get_charbox(index)
                assert left >= 0 and right <= width - 40, (left, right, width)  # inside the 20 mm margins
    finally:
        document.close()


def test_a_word_wider_than_the_column_is_broken_not_run_off_the_page() -> None:
    word = "x" * 5_000
    rendered = PdfRenderer().render(request(f"# Long\n\nStart {word} end.\n"), RenderLimits())
    _text_stays_on_the_page(rendered.content)
    text = "".join(block.text for block in parsed(ExportFormat.PDF, rendered.content).blocks)
    assert text.count("x") >= 5_000


def test_a_long_table_repeats_its_header_row_on_every_page() -> None:
    rows = [("Item", "Quantity", "Price"), *((f"item-{i}", str(i), f"{i * 1.5:.2f}") for i in range(300))]
    table = Block(kind=BlockKind.TABLE, table=Table(rows=tuple(rows), header_rows=1))
    rendered = PdfRenderer().render(request(blocks=(table,), citations=()), RenderLimits())
    assert rendered.page_count is not None and rendered.page_count >= 5
    document = pdfium.PdfDocument(rendered.content)
    try:
        for page in document:
            assert page.get_textpage().get_text_range().lstrip().startswith("Item")
    finally:
        document.close()


def test_lists_code_and_quotes_keep_their_text_in_every_format() -> None:
    for renderer in RENDERERS:
        rendered = renderer.render(request(), RenderLimits())
        text = " ".join(" ".join(block.text.split()) for block in parsed(rendered.format, rendered.content).blocks)
        for words in ("Supply chain delays", "Currency movements", "Forecasts are estimates", "total = north"):
            assert words in text, (renderer.format, words)


HOSTILE = {
    "a 10,000-row table": (
        Block(
            kind=BlockKind.TABLE,
            table=Table(rows=tuple((f"r{i}", str(i * 3), "value") for i in range(10_000)), header_rows=1),
        ),
    ),
    "a 5,000-character word": (Block(kind=BlockKind.PARAGRAPH, text="w" * 5_000),),
    "a 5,000-character word in a cell": (
        Block(kind=BlockKind.TABLE, table=Table(rows=(("a", "b"), ("w" * 5_000, "y")), header_rows=1)),
    ),
    "20,000 blocks": tuple(Block(kind=BlockKind.PARAGRAPH, text=f"Paragraph {i}.") for i in range(20_000)),
    "right-to-left text": (Block(kind=BlockKind.PARAGRAPH, text="مرحبا بالعالم שלום עולם " * 100),),
    "combining marks": (Block(kind=BlockKind.PARAGRAPH, text="e\u0301 a\u0308 o\u0302 Z\u0351\u0352 " * 200),),
    "CJK": (Block(kind=BlockKind.PARAGRAPH, text="中文字符 日本語 한국어 " * 50),),
}


# fpdf2 cannot split one table row across pages: a cell taller than a page is refused, saying what to do.
REFUSED = {("a 5,000-character word in a cell", ExportFormat.PDF)}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(HOSTILE))
@pytest.mark.parametrize("renderer", [PdfRenderer(), DocxRenderer()], ids=lambda r: r.format.value)
def test_hostile_content_ends_rendered_or_refused_with_a_sentence(name: str, renderer: object) -> None:
    limits = RenderLimits()
    hostile = RenderRequest(title=name, blocks=HOSTILE[name], content_id=content_id(name))
    if (name, renderer.format) in REFUSED:  # type: ignore[attr-defined]
        with pytest.raises(RenderFailed, match=r"taller than a page .* export it as DOCX, HTML or Markdown"):
            renderer.render(hostile, limits)  # type: ignore[attr-defined]
        return
    rendered = renderer.render(hostile, limits)  # type: ignore[attr-defined]
    assert len(rendered.content) <= limits.max_bytes
    if rendered.page_count is not None:
        assert rendered.page_count <= limits.max_pages
    if name == "CJK" and renderer.format is ExportFormat.PDF:  # type: ignore[attr-defined]
        assert {"中", "日", "한"} <= set(rendered.unsupported_characters)
    else:
        assert rendered.unsupported_characters == ()


def test_a_pdf_past_the_page_limit_is_refused_naming_the_limit() -> None:
    blocks = tuple(Block(kind=BlockKind.PARAGRAPH, text=f"Paragraph {i}.") for i in range(2_000))
    with pytest.raises(RenderFailed, match="pass 10 pages"):
        PdfRenderer().render(RenderRequest(title="t", blocks=blocks, content_id="0" * 64), RenderLimits(max_pages=10))


def test_text_csv_and_xlsx_read_back_and_never_turn_a_cell_into_a_formula() -> None:
    from shared.adapters.parsers.csv_table import CsvParser
    from shared.adapters.parsers.plain_text import PlainTextParser
    from shared.adapters.parsers.xlsx import XlsxParser
    from shared.adapters.renderers.plain import CsvRenderer, TextRenderer, XlsxRenderer

    rows = (("Name", "Formula", "Delta"), ("Ann", '=HYPERLINK("http://x")', "-5"), ("Bo", "@SUM(A1)", "+3"))
    table = Block(kind=BlockKind.TABLE, table=Table(rows=rows, header_rows=1))
    heading = Block(kind=BlockKind.HEADING, text="Ledger", level=1)
    the_request = RenderRequest(title="Ledger", blocks=(heading, table), content_id="1" * 64)
    text = TextRenderer().render(the_request, RenderLimits())
    assert "Ledger" in text.content.decode() and "Ann\t=HYPERLINK" in text.content.decode()
    assert isinstance(PlainTextParser().parse(text.content, ExtractionLimits()), ExtractedDocument)
    spreadsheet = CsvRenderer().render(the_request, RenderLimits()).content.decode()
    assert "'=HYPERLINK" in spreadsheet and "'@SUM(A1)" in spreadsheet and ",-5\r\n" in spreadsheet
    back = CsvParser().parse(spreadsheet.encode(), ExtractionLimits())
    assert isinstance(back, ExtractedDocument) and back.blocks[0].table is not None
    assert back.blocks[0].table.rows[0] == ("Name", "Formula", "Delta")
    workbook = XlsxRenderer().render(the_request, RenderLimits())
    assert workbook.content == XlsxRenderer().render(the_request, RenderLimits()).content
    with zipfile.ZipFile(io.BytesIO(workbook.content)) as archive:
        sheet = archive.read("xl/worksheets/sheet1.xml").decode()
        core = archive.read("docProps/core.xml").decode()
        assert {info.date_time for info in archive.infolist()} == {(1980, 1, 1, 0, 0, 0)}
    # openpyxl stamps the save time into `modified`: the fixed value is asserted, not only two renders compared.
    assert "2000-01-01T00:00:00Z</dcterms:modified>" in core and "2000-01-01T00:00:00Z</dcterms:created>" in core
    assert "<f>" not in sheet  # no formula anywhere
    cells = [
        row for block in parsed_xlsx(XlsxParser(), workbook.content).blocks if block.table for row in block.table.rows
    ]
    assert ("Ann", '=HYPERLINK("http://x")', "-5") in cells
    with pytest.raises(RenderFailed, match="has none"):
        CsvRenderer().render(RenderRequest(title="t", blocks=(heading,), content_id="2" * 64), RenderLimits())


def parsed_xlsx(parser: object, content: bytes) -> ExtractedDocument:
    document = parser.parse(content, ExtractionLimits())  # type: ignore[attr-defined]
    assert isinstance(document, ExtractedDocument)
    return document
