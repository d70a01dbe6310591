"""Bounds that hostile text and tables must not get past: columns in every parser that makes tables, a
ragged table charged as the padded grid a reader receives, shortening in linear time, and the text
parsers in linear time on inputs that made them quadratic.

The time guards are pytest-timeout marks far above what the linear code takes (well under a second)
and far below what the quadratic code took (minutes): no test measures time itself.
"""

import io
from collections.abc import Callable

import pytest

from shared.adapters.parsers.csv_table import CsvParser
from shared.adapters.parsers.docx import DocxParser
from shared.adapters.parsers.html import HtmlParser
from shared.adapters.parsers.markdown import MarkdownParser
from shared.adapters.parsers.pptx import PptxParser
from shared.adapters.parsers.xlsx import XlsxParser
from shared.domain.document import (
    Block,
    BlockCollector,
    BlockKind,
    ExtractedDocument,
    ExtractionLimits,
    Table,
)
from shared.domain.rendering import render_block
from shared.ports import DocumentParser

NARROW = ExtractionLimits(max_columns=8)
COLUMN_WARNING = "only the first 8 columns were kept (the column limit)"
WIDE = 40


def parsed(outcome: object) -> ExtractedDocument:
    assert isinstance(outcome, ExtractedDocument), outcome
    return outcome


def wide_csv() -> bytes:
    return ("\n".join(",".join(f"r{row}c{column}" for column in range(WIDE)) for row in range(3)) + "\n").encode()


def wide_html() -> bytes:
    cells = "".join(f"<td>c{column}</td>" for column in range(WIDE))
    return f"<table><tr>{cells}</tr><tr>{cells}</tr></table>".encode()


def wide_markdown() -> bytes:
    header = "|" + "|".join(f"c{column}" for column in range(WIDE)) + "|"
    return f"{header}\n|{'---|' * WIDE}\n{header}\n".encode()


def wide_xlsx() -> bytes:
    import openpyxl

    book = openpyxl.Workbook()
    for row in range(3):
        book.active.append([f"r{row}c{column}" for column in range(WIDE)])
    buffer = io.BytesIO()
    book.save(buffer)
    return buffer.getvalue()


def wide_docx() -> bytes:
    from docx import Document

    document = Document()
    table = document.add_table(rows=2, cols=WIDE)
    for row in table.rows:
        for column, cell in enumerate(row.cells):
            cell.text = f"c{column}"
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def wide_pptx() -> bytes:
    from pptx import Presentation
    from pptx.util import Inches

    deck = Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[6])
    table = slide.shapes.add_table(2, WIDE, Inches(0), Inches(0), Inches(9), Inches(1)).table
    for row in range(2):
        for column in range(WIDE):
            table.cell(row, column).text = f"c{column}"
    buffer = io.BytesIO()
    deck.save(buffer)
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("parser", "make"),
    [
        (CsvParser(), wide_csv),
        (HtmlParser(), wide_html),
        (MarkdownParser(), wide_markdown),
        (XlsxParser(), wide_xlsx),
        (DocxParser(), wide_docx),
        (PptxParser(), wide_pptx),
    ],
    ids=["csv", "html", "markdown", "xlsx", "docx", "pptx"],
)
def test_every_parser_that_makes_tables_keeps_rows_within_the_column_limit_and_says_so(
    parser: DocumentParser, make: Callable[[], bytes]
) -> None:
    # Given a table 40 columns wide, and a limit of 8
    # When it is parsed
    document = parsed(parser.parse(make(), NARROW))
    # Then no row is wider than the limit, the first columns are the ones kept, and the warning names the limit
    tables = [b.table for b in document.blocks if b.table is not None]
    assert tables
    assert all(len(row) <= 8 for table in tables for row in table.rows)
    assert any(cell.endswith("c0") for table in tables for row in table.rows for cell in row)
    assert COLUMN_WARNING in document.warnings


def test_a_table_from_any_source_is_cut_to_the_column_limit_by_the_collector() -> None:
    # Given a parser that hands the collector a table wider than the limit
    collector = BlockCollector(NARROW)
    collector.add(Block(kind=BlockKind.TABLE, table=Table(rows=(tuple("abcdefghijkl"),))))
    # When the document is made
    document = collector.document("text/csv")
    # Then the table keeps its first columns, and says so
    assert document.blocks[0].table is not None
    assert document.blocks[0].table.rows == (tuple("abcdefgh"),)
    assert document.warnings == (COLUMN_WARNING,)


def test_a_ragged_table_is_charged_as_the_padded_grid_a_reader_receives() -> None:
    # Given one row 200 cells wide over 500 rows of one cell: a reader receives 501 rows of 200 cells
    rows = (("h",) * 200, *((f"{i}",) for i in range(500)))
    collector = BlockCollector(ExtractionLimits(max_text_bytes=20_000))
    # When the collector keeps it within a 20,000-byte text budget
    collector.add(Block(kind=BlockKind.TABLE, table=Table(rows=rows, header_rows=1)))
    document = collector.document("text/csv")
    # Then it is cut, and what is kept (rows times width) fits the budget
    assert document.truncated is True
    kept = document.blocks[0].table
    assert kept is not None
    assert 1 < len(kept.rows) < len(rows)
    assert len(kept.rows) * max(len(row) for row in kept.rows) <= 20_000


@pytest.mark.timeout(30)
def test_shortening_a_long_table_to_the_budget_is_linear_in_its_rows() -> None:
    # Given a 60,000-row table that does not fit the text budget (shortening it re-summed every kept row
    # for each new one: 1.8 billion cell visits)
    rows = tuple((f"row {i}",) for i in range(60_000))
    collector = BlockCollector(ExtractionLimits(max_text_bytes=500_000))
    # When the collector keeps what fits
    collector.add(Block(kind=BlockKind.TABLE, table=Table(rows=rows)))
    # Then it keeps leading rows up to the budget, in time
    kept = collector.document("text/csv").blocks[0].table
    assert kept is not None
    assert kept.rows == rows[: len(kept.rows)]
    assert sum(len(row[0]) for row in kept.rows) <= 500_000 < sum(len(row[0]) for row in rows)


def test_a_ragged_csv_cannot_make_a_document_larger_than_its_text_budget_when_rendered() -> None:
    # Given a 200 KB CSV whose first row (a header) is 20,000 columns wide and whose other rows are one cell
    content = (",".join(["name"] * 20_000) + "\n" + "\n".join(f"v{i}" for i in range(25_000)) + "\n").encode()
    limits = ExtractionLimits(max_text_bytes=1_000_000)
    # When it is parsed and every block rendered as a reader receives it
    document = parsed(CsvParser().parse(content, limits))
    rendered = sum(len(render_block(block)) for block in document.blocks)
    # Then the rendered document stays within a small multiple of the text budget
    assert rendered <= 5 * limits.max_text_bytes


@pytest.mark.timeout(30)
def test_the_csv_delimiter_is_found_in_linear_time_on_a_hostile_first_line() -> None:
    # Given a first line of `, "a` repeated (csv.Sniffer's regexes took over a minute on 64 KiB of it)
    content = (', "a' * 20_000 + "\nx,y\n").encode()
    # When it is parsed
    document = parsed(CsvParser().parse(content, ExtractionLimits()))
    # Then it is read, in time
    assert document.blocks


def test_the_csv_delimiter_is_the_one_that_cuts_rows_alike() -> None:
    # Given semicolon-separated rows whose cells contain commas
    content = b"city;note\nParis;big, old\nLyon;food, silk\n"
    # When it is parsed
    table = parsed(CsvParser().parse(content, ExtractionLimits())).blocks[0].table
    # Then the semicolon is the delimiter
    assert table is not None
    assert table.rows == (("city", "note"), ("Paris", "big, old"), ("Lyon", "food, silk"))


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    "unit", [b"<", b"<script", b"<style "], ids=["lone-angle-brackets", "unclosed-scripts", "unclosed-styles"]
)
def test_markdown_html_blocks_are_read_in_linear_time(unit: bytes) -> None:
    # Given an HTML block of 300 KB of `<` without `>` or of unclosed `<script` / `<style`
    # (the old regexes took about ten seconds on 64 KB, and four times as long at each doubling)
    content = b"<div>\n" + unit * (300_000 // len(unit)) + b"\n\nAfter the block.\n"
    # When it is parsed
    document = parsed(MarkdownParser().parse(content, ExtractionLimits()))
    # Then the text after it is read, in time
    assert document.blocks[-1].text == "After the block."


def test_markdown_html_blocks_keep_their_text_tables_and_entities_but_not_their_script() -> None:
    # Given a README's HTML block with an entity, a table and a script
    content = (
        b"# Title\n\n<div>\n<p>Fish &amp; chips</p>\n<table><tr><th>a</th><th>b</th></tr><tr><td>1</td><td>2</td>"
        b"</tr></table>\n<script>steal()</script>\n</div>\n"
    )
    # When it is parsed
    document = parsed(MarkdownParser().parse(content, ExtractionLimits()))
    # Then the text and the table are blocks on the Markdown file's lines, and the script is gone
    assert [(b.kind.value, b.text, b.location.line_start) for b in document.blocks if b.table is None] == [
        ("heading", "Title", 1),
        ("paragraph", "Fish & chips", 4),
    ]
    table = next(b for b in document.blocks if b.table is not None)
    assert table.table is not None
    assert (table.table.rows, table.location.line_start) == ((("a", "b"), ("1", "2")), 5)
    assert not any("steal" in b.text for b in document.blocks)


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    "content",
    [b"<p>x</p>" + b"<a " * 40_000, b"<p>x</p>" + b"<a/" * 40_000, b"<p>x</p>" + b"<!--" * 100_000, b"</" * 500_000],
    ids=["unclosed-tags", "unclosed-self-closing", "unclosed-comments", "unclosed-end-tags"],
)
def test_html_that_never_closes_its_tags_is_read_in_linear_time(content: bytes) -> None:
    # Given markup that opens constructs it never closes (html.parser rescanned to the end from each one:
    # 100 KB of `<a ` took it three minutes)
    # When it is parsed
    document = parsed(HtmlParser().parse(content, ExtractionLimits()))
    # Then it is read as text, in time
    assert document.blocks


def test_html_an_unknown_marked_section_is_text_not_a_crash() -> None:
    # Given `<![` followed by a keyword html.parser does not know (it raised AssertionError)
    # When it is parsed
    document = parsed(HtmlParser().parse(b"<p>Intro</p><![foo bar]><p>Still read</p>", ExtractionLimits()))
    # Then the page around it is read
    texts = [b.text for b in document.blocks]
    assert "Intro" in texts
    assert any("Still read" in text for text in texts)


def test_html_tables_whose_cells_and_rows_are_never_closed_keep_every_cell() -> None:
    # Given a table that leaves out `</td>` and `</tr>` (valid HTML), and a cell outside any row
    page = b"<table><tr><th>Item<th>Price<tr><td>Tea<td>3<tr><td>Cake<td>4</table><table><td>alone</table>"
    # When it is parsed
    tables = [b.table.rows for b in parsed(HtmlParser().parse(page, ExtractionLimits())).blocks if b.table]
    # Then every cell is in its row
    assert tables == [(("Item", "Price"), ("Tea", "3"), ("Cake", "4")), (("alone",),)]
