"""The text formats to located blocks, asserted block by block; bounded; never raising on garbage."""

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shared.adapters.parsers.cells import ROWS_PER_BLOCK, a1_range, column_letters
from shared.adapters.parsers.csv_table import CsvParser
from shared.adapters.parsers.html import HtmlParser
from shared.adapters.parsers.markdown import MarkdownParser
from shared.adapters.parsers.plain_text import PlainTextParser
from shared.domain.document import Block, BlockKind, ExtractedDocument, ExtractionLimits
from shared.domain.rendering import render_markdown
from shared.ports import DocumentParser

LIMITS = ExtractionLimits()
PARSERS: list[DocumentParser] = [PlainTextParser(), MarkdownParser(), CsvParser(), HtmlParser()]


def parse(parser: DocumentParser, content: bytes, limits: ExtractionLimits = LIMITS) -> ExtractedDocument:
    outcome = parser.parse(content, limits)
    assert isinstance(outcome, ExtractedDocument)
    return outcome


def shape(blocks: tuple[Block, ...]) -> list[tuple[object, ...]]:
    return [(b.kind.value, b.text, b.level, b.depth, b.location.line_start, b.location.line_end) for b in blocks]


def test_plain_text_becomes_paragraphs_with_their_line_spans() -> None:
    document = parse(PlainTextParser(), b"First line\nsecond line\n\n\nThird paragraph\n")
    assert shape(document.blocks) == [
        ("paragraph", "First line\nsecond line", None, None, 1, 2),
        ("paragraph", "Third paragraph", None, None, 5, 5),
    ]


def test_text_that_is_not_utf8_is_detected_and_said_so() -> None:
    document = parse(PlainTextParser(), "Café crème, déjà vu — naïve façade.\n".encode("cp1252"))
    assert document.blocks[0].text.startswith("Caf")
    assert "é" in document.blocks[0].text
    assert any("not UTF-8" in warning for warning in document.warnings)


def test_utf16_text_with_a_byte_order_mark_is_read() -> None:
    document = parse(PlainTextParser(), "Grüße\n".encode("utf-16"))
    assert document.blocks[0].text == "Grüße"


MARKDOWN = b"""# Handbook

Intro paragraph.

## Leave

- Annual leave
  - Carry-over
1. First step

> Quoted policy.

| Region | Days |
| --- | --- |
| EU | 25 |
| US | 15 |

```python
print("hi")
```

<script>alert(1)</script>
"""


def test_markdown_keeps_headings_lists_quotes_tables_and_code_with_lines() -> None:
    document = parse(MarkdownParser(), MARKDOWN)
    assert shape(document.blocks) == [
        ("heading", "Handbook", 1, None, 1, 1),
        ("paragraph", "Intro paragraph.", None, None, 3, 3),
        ("heading", "Leave", 2, None, 5, 5),
        ("list_item", "Annual leave", None, 0, 7, 7),
        ("list_item", "Carry-over", None, 1, 8, 8),
        ("list_item", "First step", None, 0, 9, 9),
        ("quote", "Quoted policy.", None, None, 11, 11),
        ("table", "", None, None, 13, 16),
        ("code", 'print("hi")', None, None, 18, 20),
    ]
    table = document.blocks[7].table
    assert table is not None
    assert (table.rows, table.header_rows) == ((("Region", "Days"), ("EU", "25"), ("US", "15")), 1)
    assert document.blocks[4].heading_path == ("Handbook", "Leave")
    assert document.blocks[5].ordered is True


def test_the_renderer_gives_a_model_a_table_as_a_table() -> None:
    rendered = render_markdown(parse(MarkdownParser(), MARKDOWN).blocks)
    assert "| Region | Days |\n| --- | --- |\n| EU | 25 |\n| US | 15 |" in rendered
    assert "## Leave" in rendered
    assert "- Annual leave\n  - Carry-over\n1. First step" in rendered


def test_csv_becomes_tables_with_the_header_repeated_and_a1_ranges() -> None:
    rows = ["name,amount,currency"] + [f"item {i},{i}.50,EUR" for i in range(250)]
    document = parse(CsvParser(), "\n".join(rows).encode())
    assert [b.location.cell_range for b in document.blocks] == ["A2:C101", "A102:C201", "A202:C251"]
    for block in document.blocks:
        assert block.table is not None
        assert block.table.header_rows == 1
        assert block.table.rows[0] == ("name", "amount", "currency")
    assert len(document.blocks[0].table.rows) == ROWS_PER_BLOCK + 1  # type: ignore[union-attr]


def test_csv_without_a_header_row_is_not_given_one() -> None:
    document = parse(CsvParser(), b"1,2,3\n4,5,6\n")
    table = document.blocks[0].table
    assert table is not None
    assert (table.header_rows, table.rows) == (0, (("1", "2", "3"), ("4", "5", "6")))


def test_csv_with_semicolons_is_sniffed() -> None:
    table = parse(CsvParser(), b"city;population\nParis;2100000\nLyon;520000\n").blocks[0].table
    assert table is not None
    assert table.rows[1] == ("Paris", "2100000")


@pytest.mark.parametrize(("index", "letters"), [(0, "A"), (25, "Z"), (26, "AA"), (701, "ZZ"), (702, "AAA")])
def test_column_letters(index: int, letters: str) -> None:
    assert column_letters(index) == letters
    assert a1_range(2, 3, index + 1) == f"A2:{letters}3"


HTML = b"""<!doctype html>
<html><head><title>T</title><style>p{color:red}</style><script>steal()</script></head>
<body>
<nav><a href="/">Home</a></nav>
<h1>Quarterly report</h1>
<p>Revenue grew <b>12%</b>.</p>
<ul><li>North</li><li>South<ol><li>Inner</li></ol></li></ul>
<table><tr><th>Quarter</th><th>Revenue</th></tr><tr><td>Q3</td><td>4.2</td></tr></table>
<img src="http://169.254.169.254/latest" alt="Chart of revenue">
<footer>Copyright</footer>
</body></html>
"""


def test_html_keeps_content_and_drops_script_style_and_chrome() -> None:
    document = parse(HtmlParser(), HTML)
    assert [(b.kind.value, b.text) for b in document.blocks if b.kind is not BlockKind.TABLE] == [
        ("heading", "Quarterly report"),
        ("paragraph", "Revenue grew 12%."),
        ("list_item", "North"),
        ("list_item", "South"),
        ("list_item", "Inner"),
        ("image", "Chart of revenue"),
    ]
    table = next(b.table for b in document.blocks if b.table is not None)
    assert (table.rows, table.header_rows) == ((("Quarter", "Revenue"), ("Q3", "4.2")), 1)
    everything = render_markdown(document.blocks)
    for absent in ("steal", "color:red", "Home", "Copyright", "169.254"):
        assert absent not in everything
    assert document.blocks[0].location.line_start == 5


@pytest.mark.parametrize("parser", PARSERS, ids=lambda p: type(p).__name__)
def test_text_beyond_the_limit_is_cut_and_said_so(parser: DocumentParser) -> None:
    limits = ExtractionLimits(max_text_bytes=1000)
    content = b"\n\n".join(b"word " * 40 + str(i).encode() for i in range(200))
    if isinstance(parser, CsvParser):
        content = b"\n".join(b"a,b," + str(i).encode() * 20 for i in range(2000))
    document = parse(parser, content, limits)
    assert document.truncated is True
    kept = sum(
        len(b.text.encode()) + sum(len(cell.encode()) for row in (b.table.rows if b.table else ()) for cell in row)
        for b in document.blocks
    )
    assert 0 < kept <= 1000
    assert any("limit" in warning for warning in document.warnings)


@pytest.mark.slow
@pytest.mark.parametrize("parser", PARSERS, ids=lambda p: type(p).__name__)
def test_the_block_limit_holds_for_a_million_empty_looking_items(parser: DocumentParser) -> None:
    content = b"x\n\n" * 200_000 if not isinstance(parser, HtmlParser) else b"<p>x</p>" * 200_000
    if isinstance(parser, CsvParser):
        content = b"x\n" * 200_000
    document = parse(parser, content, ExtractionLimits(max_blocks=50))
    assert len(document.blocks) <= 50
    assert document.truncated is True or isinstance(parser, CsvParser)


@pytest.mark.parametrize("parser", PARSERS, ids=lambda p: type(p).__name__)
@settings(max_examples=int(os.environ.get("QUIRE_FUZZ_EXAMPLES", "60")), deadline=None)
@given(content=st.binary(max_size=2048) | st.text(max_size=1024).map(str.encode))
def test_no_input_makes_a_text_parser_raise(parser: DocumentParser, content: bytes) -> None:
    outcome = parser.parse(content, ExtractionLimits(max_blocks=100, max_text_bytes=10_000))
    assert isinstance(outcome, ExtractedDocument)
    assert len(outcome.blocks) <= 100
    render_markdown(outcome.blocks)


def test_no_block_text_can_break_out_of_its_place_in_the_markdown() -> None:
    from shared.domain.document import Table

    blocks = (
        Block(kind=BlockKind.HEADING, text="Title\n| a | b |\n# injected", level=2),
        Block(kind=BlockKind.PARAGRAPH, text="```\nswallow the rest"),
        Block(kind=BlockKind.CODE, text="~~~\n````\n# not a heading"),
        Block(kind=BlockKind.TABLE, table=Table(rows=(("<img src=x onerror=alert(1)>", "a|b\nc"),), header_rows=0)),
        Block(kind=BlockKind.IMAGE, text="alt](javascript:x)"),
        Block(kind=BlockKind.LIST_ITEM, text="item\n# heading", depth=0, ordered=False),
    )
    rendered = render_markdown(blocks)
    assert rendered.splitlines()[0] == "## Title | a | b | # injected"
    # Read back by a real CommonMark parser: one heading, one fence, one table, no raw HTML at all.
    from markdown_it import MarkdownIt

    tokens = MarkdownIt("commonmark").enable("table").parse(rendered)
    kinds = [token.type for token in tokens]
    assert kinds.count("heading_open") == 1
    assert kinds.count("fence") == 1
    assert kinds.count("table_open") == 1
    assert not any(t.type in ("html_block", "html_inline") for t in tokens)
    assert not any(child.type == "html_inline" for t in tokens for child in (t.children or []))
    assert "\\```" in rendered  # the paragraph's fence is escaped, so it opens nothing
    assert "`````\n~~~\n````\n# not a heading\n`````" in rendered  # the fence outlasts the content
    assert "<img" not in rendered and "&lt;img src=x onerror=alert(1)>" in rendered
    assert "| a\\|b c |" in rendered
    assert "](javascript" not in rendered


@pytest.mark.parametrize(
    "page",
    [
        b"<html><head><title>Report</title><meta charset=utf-8><body><p>Body text that matters</p>",
        b"<html><head><title>Report</title><link rel=icon href=x><p>Body text that matters</p>",
        b"<head><title>Report</title><script>var p = '<p>not this</p>'</script>Body text that matters",
        b"<head><title>A <b>bold</b> report</title><head><body><p>Body text that matters</p>",
    ],
    ids=["body-tag", "no-body-tag", "text-in-head", "markup-in-title-and-a-second-head"],
)
def test_html_whose_head_is_never_closed_keeps_its_body(page: bytes) -> None:
    # Given a page that leaves out `</head>` (valid HTML, and what minifiers write): the whole page was
    # read as head, and skipped
    document = parse(HtmlParser(), page)
    # When parsed, then the head ends where browsers end it, and the body is read (the title and the
    # script's text are not)
    assert [block.text for block in document.blocks] == ["Body text that matters"]


def test_html_forms_keep_their_text_and_open_or_nested_tables_lose_nothing() -> None:
    page = (
        b"<form><h1>Invoice</h1><p>Due in 30 days.</p></form>"
        b"<table><tr><th>Item</th><th>Detail</th></tr>"
        b"<tr><td>Outer</td><td><table><tr><td>inner</td></tr></table></td></tr>"
        b"<tr><td>Last row</td><td>x</td></tr>"  # the outer table is never closed
    )
    document = parse(HtmlParser(), page)
    assert [(b.kind.value, b.text) for b in document.blocks if b.kind is not BlockKind.TABLE] == [
        ("heading", "Invoice"),
        ("paragraph", "Due in 30 days."),
    ]
    tables = [b.table.rows for b in document.blocks if b.table is not None]
    assert (("inner",),) in tables
    outer = next(rows for rows in tables if rows[0] == ("Item", "Detail"))
    assert ("Outer", "") in outer or any(row[0] == "Outer" for row in outer)
    assert ("Last row", "x") in outer


def test_csv_ranges_count_the_blank_rows_of_the_file() -> None:
    document = parse(CsvParser(), b"\n\nname,total\nrent,1200\nfood,800\n")
    assert document.blocks[0].location.cell_range == "A4:B5"


def test_a_form_feed_does_not_shift_line_numbers() -> None:
    document = parse(PlainTextParser(), b"page one\f\n\nline three\n")
    assert document.blocks[-1].location.line_start == 3
