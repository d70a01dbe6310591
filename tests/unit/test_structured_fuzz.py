"""Fuzzing with structure: mutations that keep the container valid, so that the parser reads past it.

Office files are rewritten inside a valid zip, PDFs object by object behind a cross-reference that points
at every object, and the text formats are generated from their grammar (tests/unit/fuzz_*.py). For every
input the parser returns blocks within the limits or a failure value from the closed set (the property
is tests/unit/fuzzing.py's). `make test` runs a few dozen examples of each; `make fuzz` (and a long
campaign: QUIRE_FUZZ_EXAMPLES, QUIRE_FUZZ_FINDINGS) many more. What a campaign found is kept below as
plain regression tests, each input built in the test.
"""

import io
import re
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shared.adapters.parsers.csv_table import CsvParser
from shared.adapters.parsers.docx import DOCX_TYPE, DocxParser
from shared.adapters.parsers.html import HtmlParser
from shared.adapters.parsers.markdown import MarkdownParser
from shared.adapters.parsers.pdf import MAX_PAGE_CHARACTERS, PDF_TYPE, PdfParser
from shared.adapters.parsers.plain_text import PlainTextParser
from shared.adapters.parsers.pptx import PPTX_TYPE, PptxParser
from shared.adapters.parsers.xlsx import XLSX_TYPE, XlsxParser
from shared.domain.document import ExtractedDocument, ExtractionLimits
from shared.domain.files import FailureReason
from shared.ports import DocumentParser
from tests.unit.fuzz_office import (
    OFFICE_OPERATIONS,
    generated_office_seeds,
    mutate_office,
    public_office_seeds,
    unzipped,
    zipped,
)
from tests.unit.fuzz_pdf import PDF_OPERATIONS, generated_pdf_seeds, mutate_pdf, public_pdf_seeds
from tests.unit.fuzz_text import TEXT_GRAMMARS, encoded_text
from tests.unit.fuzzing import (
    DAMAGED,
    DERANDOMIZE,
    EXAMPLES,
    LIMITS,
    NEVER_REFUSED,
    OFFICE_DATA,
    PAGED_AND_DAMAGED,
    PDF_DATA,
    SANDBOXED_EXAMPLES,
    Edit,
    edits,
    judge,
    parsed_in_process,
    pick,
    sandboxed,
)

OFFICE: dict[str, tuple[DocumentParser, str, frozenset[FailureReason]]] = {
    "docx": (DocxParser(), DOCX_TYPE, DAMAGED),
    "xlsx": (XlsxParser(), XLSX_TYPE, DAMAGED),
    "pptx": (PptxParser(), PPTX_TYPE, PAGED_AND_DAMAGED),
}
TEXT: dict[str, DocumentParser] = {
    "text/csv": CsvParser(),
    "text/markdown": MarkdownParser(),
    "text/html": HtmlParser(),
    "text/plain": PlainTextParser(),
}
FUZZ = settings(
    max_examples=EXAMPLES,
    derandomize=DERANDOMIZE,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
)
SANDBOX = settings(FUZZ, max_examples=SANDBOXED_EXAMPLES)
# pytest-timeout bounds a whole test: a long campaign needs room for its examples (each is bounded).
CAMPAIGN = pytest.mark.timeout(max(300, EXAMPLES))
SEED = st.integers(min_value=0, max_value=1 << 16)
NO_PUBLIC_OFFICE = pytest.mark.skipif(
    not OFFICE_DATA.is_dir(), reason="the public Office files (../shared/data/office) are absent"
)
NO_PUBLIC_PDFS = pytest.mark.skipif(not PDF_DATA.is_dir(), reason="the public PDFs (../shared/data/pdfs) are absent")


def in_process(
    label: str, parser: DocumentParser, content: bytes, limits: ExtractionLimits, reasons: frozenset[FailureReason]
) -> None:
    began = time.monotonic()
    outcome = parsed_in_process(parser, content, limits)
    judge(label, content, outcome, limits, reasons, seconds=time.monotonic() - began)


def through_the_sandbox(
    label: str, content: bytes, media_type: str, limits: ExtractionLimits, reasons: frozenset[FailureReason]
) -> None:
    began = time.monotonic()
    outcome = sandboxed(content, media_type, limits)
    judge(label, content, outcome, limits, reasons, seconds=time.monotonic() - began)


# ---------------------------------------------------------------------------------------------------
# The property: Office and text formats in this process, PDFs through the sandbox (native code that
# aborts or needs gigabytes must not take the test run, or the machine, with it; and the fork costs a
# PDF parse only about three times over)


@pytest.mark.parametrize("family", [*sorted(OFFICE), "pdf"])
def test_every_generated_seed_is_read_to_blocks_before_it_is_mutated(family: str) -> None:
    # Given the seeds the mutations start from (a seed the parser refused would fuzz only the refusal)
    parser = OFFICE[family][0] if family in OFFICE else PdfParser()
    seeds = generated_office_seeds(family) if family in OFFICE else generated_pdf_seeds()
    # When each is parsed as it is, then each is read to blocks
    for seed in seeds:
        outcome = parser.parse(seed, ExtractionLimits())
        assert isinstance(outcome, ExtractedDocument), outcome
        assert outcome.blocks


@pytest.mark.slow
@CAMPAIGN
@pytest.mark.parametrize("kind", sorted(OFFICE))
@FUZZ
@given(seed=SEED, changes=edits(OFFICE_OPERATIONS), limits=LIMITS)
def test_an_office_file_rewritten_inside_a_valid_zip_is_blocks_within_the_limits_or_a_failure_value(
    kind: str, seed: int, changes: list[Edit], limits: ExtractionLimits
) -> None:
    parser, _, reasons = OFFICE[kind]
    content = mutate_office(pick(generated_office_seeds(kind), seed), changes)
    in_process(kind, parser, content, limits, reasons)


@pytest.mark.slow
@NO_PUBLIC_OFFICE
@CAMPAIGN
@pytest.mark.parametrize("kind", sorted(OFFICE))
@FUZZ
@given(seed=SEED, changes=edits(OFFICE_OPERATIONS), limits=LIMITS)
def test_a_public_office_file_rewritten_inside_a_valid_zip_is_blocks_within_the_limits_or_a_failure_value(
    kind: str, seed: int, changes: list[Edit], limits: ExtractionLimits
) -> None:
    parser, _, reasons = OFFICE[kind]
    content = mutate_office(pick(public_office_seeds(kind), seed), changes)
    in_process(f"public-{kind}", parser, content, limits, reasons)


@pytest.mark.slow
@CAMPAIGN
@FUZZ
@given(seed=SEED, changes=edits(PDF_OPERATIONS), limits=LIMITS)
def test_a_pdf_rewritten_object_by_object_is_blocks_within_the_limits_or_a_failure_value(
    seed: int, changes: list[Edit], limits: ExtractionLimits
) -> None:
    content = mutate_pdf(pick(generated_pdf_seeds(), seed), changes)
    through_the_sandbox("pdf", content, PDF_TYPE, limits, PAGED_AND_DAMAGED)


@pytest.mark.slow
@NO_PUBLIC_PDFS
@CAMPAIGN
@FUZZ
@given(seed=SEED, changes=edits(PDF_OPERATIONS), limits=LIMITS)
def test_a_public_pdf_rewritten_object_by_object_is_blocks_within_the_limits_or_a_failure_value(
    seed: int, changes: list[Edit], limits: ExtractionLimits
) -> None:
    content = mutate_pdf(pick(public_pdf_seeds(), seed), changes)
    through_the_sandbox("public-pdf", content, PDF_TYPE, limits, PAGED_AND_DAMAGED)


@pytest.mark.slow
@CAMPAIGN
@pytest.mark.parametrize("media_type", sorted(TEXT))
@FUZZ
@given(data=st.data(), limits=LIMITS)
def test_a_text_document_from_its_grammar_is_blocks_within_the_limits(
    media_type: str, data: st.DataObject, limits: ExtractionLimits
) -> None:
    content = data.draw(encoded_text(TEXT_GRAMMARS[media_type]), label="content")
    in_process(media_type.split("/")[1], TEXT[media_type], content, limits, NEVER_REFUSED)


# ---------------------------------------------------------------------------------------------------
# A sample of the Office and text examples through the sandbox, as the pipeline runs them


def drawn(family: str, data: st.DataObject) -> tuple[bytes, str, frozenset[FailureReason]]:
    """An input of a family (an Office kind or a text type), public seeds among the generated ones."""
    if family in OFFICE:
        _, media_type, reasons = OFFICE[family]
        seeds = generated_office_seeds(family) + public_office_seeds(family)
        seed, changes = data.draw(SEED, label="seed"), data.draw(edits(OFFICE_OPERATIONS), label="edits")
        return mutate_office(pick(seeds, seed), changes), media_type, reasons
    return data.draw(encoded_text(TEXT_GRAMMARS[family]), label="content"), family, NEVER_REFUSED


@pytest.mark.slow
@CAMPAIGN
@pytest.mark.parametrize("family", [*sorted(OFFICE), *sorted(TEXT)])
@SANDBOX
@given(data=st.data(), limits=LIMITS)
def test_through_the_sandbox_office_and_text_formats_end_as_blocks_within_the_limits_or_a_failure_value(
    family: str, data: st.DataObject, limits: ExtractionLimits
) -> None:
    content, media_type, reasons = drawn(family, data)
    through_the_sandbox(f"sandboxed-{family.rsplit('/', 1)[-1]}", content, media_type, limits, reasons)


# ---------------------------------------------------------------------------------------------------
# What the campaigns found, kept


def one_page(drawing: bytes, media_box: bytes = b"[0 0 612 792]") -> bytes:
    from shared.local.hostile_corpus import raw_pdf

    return raw_pdf(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox " + media_box + b" /Contents 4 0 R"
            b" /Resources << /Font << /F1 5 0 R >> >> >>",
            b"<< /Length %d >>\nstream\n" % len(drawing) + drawing + b"\nendstream",
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        ]
    )


@pytest.mark.parametrize(
    "drawing",
    [
        b"BT /F1 12 Tf 72 700 Td (" + b"A" * 2_000 + b") Tj ET",  # runs off the right edge
        b"BT /F1 12 Tf -5000 700 Td (A line of text that starts left of the page) Tj ET",
        b"BT /F1 12 Tf 72 -5000 Td (A line of text set below the bottom of the page) Tj ET",
    ],
    ids=["past-the-right-edge", "left-of-the-page", "below-the-page"],
)
def test_text_drawn_past_the_edge_of_the_page_gets_a_box_inside_the_page(drawing: bytes) -> None:
    # Given a page whose text runs past (or sits outside) the edge of its visible area
    content = one_page(drawing)
    # When it is parsed
    outcome = PdfParser().parse(content, ExtractionLimits())
    # Then its text is read, in a box that stays within the page (0..1 on both axes, right and bottom too)
    judge("pdf", content, outcome, ExtractionLimits(), PAGED_AND_DAMAGED)
    boxes = [block.location.box for block in outcome.blocks]  # type: ignore[union-attr]
    assert boxes and all(box is not None and box.right <= 1.0 and box.bottom <= 1.0 for box in boxes)


def test_a_sheet_whose_last_row_claims_a_number_past_two_billion_ends_within_its_bound() -> None:
    # Given a small workbook whose last row says it is row 2,147,483,648 (past Excel's 1,048,576):
    # openpyxl yields an empty row for every number skipped, and empty rows visit no cells
    from tests.builders.office import workbook

    parts = dict(unzipped(workbook()))
    sheet = parts["xl/worksheets/sheet1.xml"].replace(b'<row r="4">', b'<row r="2147483648">')
    content = zipped({**parts, "xl/worksheets/sheet1.xml": sheet}.items())
    assert sheet.count(b"2147483648") == 1 and len(content) < 10_000
    # When the pipeline extracts it, under a wall clock a thousand times what its three rows need
    limits = ExtractionLimits(timeout_seconds=20)
    outcome = sandboxed(content, XLSX_TYPE, limits)
    # Then it ends as blocks or a failure value, not as timed-out (the pipeline would retry it, twice)
    judge("xlsx", content, outcome, limits, DAMAGED)


@pytest.mark.parametrize(
    ("media_type", "content"),
    [
        ("text/html", b"<table><tr><td>Price</td></tr><script>"),
        ("text/html", b"<p>Menu</p><table><tr><td>Price</td><td><svg><table>"),
        ("text/markdown", b"# Prices\n\n<table><tr><td>Price</td></tr><style>\n"),
    ],
    ids=["html-script", "html-svg-in-a-cell", "markdown-html-block"],
)
def test_a_table_left_open_inside_an_element_never_closed_ends_the_parse(media_type: str, content: bytes) -> None:
    # Given markup that ends inside a table and inside an element whose content is skipped (script,
    # style, svg): closing the open tables at the end waited for the skipped element to end, forever
    limits = ExtractionLimits(timeout_seconds=10)
    # When the pipeline extracts it
    outcome = sandboxed(content, media_type, limits)
    # Then it ends, and the table that was written before keeps its cell
    judge(media_type, content, outcome, limits, NEVER_REFUSED)
    cells = [cell for block in outcome.blocks if block.table for row in block.table.rows for cell in row]  # type: ignore[union-attr]
    assert "Price" in cells


def test_a_header_part_without_its_content_type_does_not_cost_the_document_its_body() -> None:
    # Given a DOCX whose header part lost its content type: python-docx opens it, as a plain part
    from tests.builders.office import word_document

    parts = dict(unzipped(word_document()))
    types = parts["[Content_Types].xml"]
    override = re.search(rb'<Override PartName="/word/header1.xml"[^>]*/>', types)
    assert override is not None
    content = zipped({**parts, "[Content_Types].xml": types.replace(override[0], b"")}.items())
    # When it is parsed, then its body is read (the parser's own code raised on the header part)
    outcome = DocxParser().parse(content, ExtractionLimits())
    judge("docx", content, outcome, ExtractionLimits(), DAMAGED)
    assert isinstance(outcome, ExtractedDocument), outcome
    assert "Tell your manager." in [block.text for block in outcome.blocks]


def content_drawn_over_and_over(times: int) -> bytes:
    """One page whose /Contents names the same small stream `times` over: 3,000 lines each time."""
    from shared.local.hostile_corpus import raw_pdf

    lines = b"BT /F1 12 Tf 14 TL 72 700 Td" + b" (line) Tj T*" * 3_000 + b" ET"
    return raw_pdf(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents [" + b" 4 0 R" * times + b"]"
            b" /Resources << /Font << /F1 5 0 R >> >> >>",
            b"<< /Length %d >>\nstream\n" % len(lines) + lines + b"\nendstream",
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        ]
    )


@pytest.mark.slow
def test_a_page_whose_content_is_drawn_hundreds_of_times_over_is_read_up_to_the_character_limit() -> None:
    # Given a 40 KB page that draws its one content stream twenty times over: 360,000 characters (and at
    # 300 times, 5.4 million: a minute and 2.5 GB of character boxes, which the inflated-bytes count
    # cannot see, since the content is small)
    content = content_drawn_over_and_over(20)
    assert len(content) < 50_000
    # When it is parsed
    outcome = PdfParser().parse(content, ExtractionLimits())
    # Then only the page's first characters are read, and the document says so
    judge("pdf", content, outcome, ExtractionLimits(), PAGED_AND_DAMAGED)
    assert isinstance(outcome, ExtractedDocument)
    assert sum(len(block.text) for block in outcome.blocks) <= MAX_PAGE_CHARACTERS
    assert any(f"only the first {MAX_PAGE_CHARACTERS} were read" in warning for warning in outcome.warnings)


@pytest.mark.slow
def test_tables_nested_a_hundred_thousand_deep_are_read_as_at_most_the_nesting_limit_of_tables() -> None:
    # Given 1.5 MB of tables each opened in the cell of the one before, never closed (a campaign's slowest
    # HTML: a table block per level, 100,000 of them, 9-12 s through the sandbox)
    from shared.adapters.parsers.html import MAX_TABLE_NESTING

    content = b"<table><tr><td>" * 100_000 + b"the innermost words"
    # When parsed
    outcome = HtmlParser().parse(content, ExtractionLimits())
    judge("html", content, outcome, ExtractionLimits(), NEVER_REFUSED)
    # Then the deeper levels are read as rows of the innermost kept table, and its words are kept
    tables = [block for block in outcome.blocks if block.table]  # type: ignore[union-attr]
    assert MAX_TABLE_NESTING <= 32 and 0 < len(tables) <= MAX_TABLE_NESTING
    cells = {cell for block in tables for row in block.table.rows for cell in row}  # type: ignore[union-attr]
    assert "the innermost words" in cells


def test_sheets_with_a_note_in_their_last_row_are_each_read_whole() -> None:
    # Given seven sheets, each with two cells at the top and a note in row 1,048,576 (Excel's last): the
    # empty rows openpyxl makes up for the row numbers between were charged to the cell budget, and the
    # last two sheets were not read
    import openpyxl

    book = openpyxl.Workbook()
    for serial in range(7):
        sheet = book.active if serial == 0 else book.create_sheet()
        sheet.title = f"S{serial}"
        sheet["A1"], sheet["A2"], sheet["A1048576"] = f"Sheet {serial} heading", f"value {serial}", "last row note"
    written = io.BytesIO()
    book.save(written)
    # When parsed
    outcome = XlsxParser().parse(written.getvalue(), ExtractionLimits())
    # Then every sheet is read to its note, which is located in its own row, and no limit was met
    judge("xlsx", written.getvalue(), outcome, ExtractionLimits(), DAMAGED)
    assert isinstance(outcome, ExtractedDocument) and outcome.warnings == ()
    assert {block.location.sheet for block in outcome.blocks} == {f"S{serial}" for serial in range(7)}
    assert all(block.location.cell_range.endswith("1048576") for block in outcome.blocks if block.location.cell_range)


def test_a_document_part_without_a_body_keeps_its_headers() -> None:
    # Given a DOCX whose document part lost its body (headers and section properties stay reachable
    # through the relationships): the parser's own code raised on the missing body
    from tests.builders.office import word_document

    parts = dict(unzipped(word_document()))
    document = parts["word/document.xml"]
    bodiless = document[: document.index(b"<w:body>")] + document[document.index(b"</w:body>") + 9 :]
    content = zipped({**parts, "word/document.xml": bodiless}.items())
    # When parsed (in this process: the Office readers answer malformed whatever raises, so
    # parsed_in_process reports what our own code raised)
    outcome = parsed_in_process(DocxParser(), content, ExtractionLimits())
    # Then it is a document, without the body's text
    judge("docx", content, outcome, ExtractionLimits(), DAMAGED)
    assert isinstance(outcome, ExtractedDocument)
    assert "Tell your manager." not in [block.text for block in outcome.blocks]


def test_a_row_out_of_order_is_skipped_as_openpyxl_skips_it() -> None:
    # Given a sheet whose XML has row 2 again after row 3 (walking the rows the XML has kept it, and the
    # block's range named A2:B2)
    from tests.builders.office import workbook

    parts = dict(unzipped(workbook()))
    sheet = parts["xl/worksheets/sheet1.xml"]
    late = b'<row r="2"><c r="A2" t="inlineStr"><is><t>out of order</t></is></c></row>'
    content = zipped(
        {**parts, "xl/worksheets/sheet1.xml": sheet.replace(b"</sheetData>", late + b"</sheetData>")}.items()
    )
    # When parsed, then the late row is not read, and the ranges run forward
    outcome = XlsxParser().parse(content, ExtractionLimits())
    judge("xlsx", content, outcome, ExtractionLimits(), DAMAGED)
    assert isinstance(outcome, ExtractedDocument)
    assert all("out of order" not in row for block in outcome.blocks if block.table for row in block.table.rows)
