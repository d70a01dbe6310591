"""What OCR read becomes located blocks: boxes turned upright and back, rows joined into tables, the text
layer kept where it exists, descriptions kept apart, and confidence carried to the chunk and citation."""

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shared.domain.chunking import StructuralChunker
from shared.domain.document import Block, BlockKind, ExtractedDocument, ExtractionLimits, Location
from shared.domain.recognition import (
    BoundingBox,
    ImageDescription,
    RecognitionResult,
    RecognizedLine,
    RecognizedPage,
    RecognizedSegment,
    RecognizedTable,
)
from shared.domain.recognized_layout import recognized_blocks, turned, with_recognition
from shared.domain.search import Citation, CitedKind
from shared.domain.usage import Usage

USAGE = Usage(provider="fake-ocr", operation="fake:read", priced=False, pages=1)
LIMITS = ExtractionLimits()


def box(left: float, top: float, width: float, height: float) -> BoundingBox:
    return BoundingBox(left=left, top=top, width=width, height=height)


def line(text: str, left: float, top: float, *, confidence: float = 0.95, width: float | None = None) -> RecognizedLine:
    return RecognizedLine(
        text=text, box=box(left, top, width if width is not None else 0.011 * len(text), 0.018), confidence=confidence
    )


unit = st.floats(min_value=0, max_value=1, allow_nan=False)


@given(left=unit, top=unit, width=unit, height=unit, degrees=st.sampled_from([0, 90, 180, 270]))
def test_turning_a_box_and_turning_it_back_is_the_same_box(
    left: float, top: float, width: float, height: float, degrees: int
) -> None:
    original = box(left, top, min(width, 1 - left), min(height, 1 - top))
    back = turned(turned(original, degrees), (360 - degrees) % 360)
    for name in ("left", "top", "width", "height"):
        assert getattr(back, name) == pytest.approx(getattr(original, name), abs=1e-9)
    once = turned(original, degrees)
    assert once.width * once.height == pytest.approx(original.width * original.height, abs=1e-9)


def test_a_clockwise_quarter_turn_moves_the_top_left_corner_to_the_top_right() -> None:
    moved = turned(box(0.0, 0.0, 0.2, 0.1), 90)
    assert (moved.left, moved.top, moved.width, moved.height) == pytest.approx((0.9, 0.0, 0.1, 0.2))


def test_lines_become_a_heading_and_a_paragraph_in_reading_order() -> None:
    page = RecognizedPage(
        page=1,
        lines=(
            line("Remittance advice", 0.1, 0.08, width=0.3),  # wider per character: a title
            line("Payment for invoice QX-7731 was received in full", 0.1, 0.13),
            line("from Harrowgate Ceramics on 14 March 2026.", 0.1, 0.15),
        ),
    )
    blocks = recognized_blocks(page)
    assert [block.kind for block in blocks] == [BlockKind.HEADING, BlockKind.PARAGRAPH]
    assert blocks[1].text.startswith("Payment for invoice") and blocks[1].text.endswith("2026.")
    assert blocks[1].confidence == pytest.approx(0.95)
    assert blocks[1].location.page == 1 and blocks[1].location.box is not None


def test_detections_side_by_side_are_one_row_and_aligned_rows_are_a_table() -> None:
    rows = [("Region", "Orders", "Margin"), ("Zanzibar", "1,204", "12.5%"), ("Patagonia", "2,918", "9.1%")]
    rows.append(("Kamchatka", "611", "15.8%"))
    lines = [
        line(cell, 0.1 + 0.25 * column, 0.2 + 0.04 * index, width=0.1)
        for index, row in enumerate(rows)
        for column, cell in enumerate(row)
    ]
    blocks = recognized_blocks(RecognizedPage(page=1, lines=tuple(lines)))
    assert [block.kind for block in blocks] == [BlockKind.TABLE]
    table = blocks[0].table
    assert table is not None and table.rows == tuple(rows) and table.header_rows == 1


def test_a_line_split_by_wide_gaps_gives_its_segments_as_cells() -> None:
    def row(cells: tuple[str, str], top: float) -> RecognizedLine:
        segments = tuple(
            RecognizedSegment(text=text, box=box(0.1 + 0.3 * index, top, 0.1, 0.018))
            for index, text in enumerate(cells)
        )
        return RecognizedLine(text=" ".join(cells), box=box(0.1, top, 0.4, 0.018), confidence=0.9, segments=segments)

    page = RecognizedPage(
        page=1,
        lines=tuple(
            row(cells, 0.3 + 0.04 * i) for i, cells in enumerate([("Item", "Price"), ("Tea", "4.50"), ("Cake", "3.20")])
        ),
    )
    blocks = recognized_blocks(page)
    assert blocks[0].table is not None and blocks[0].table.rows[1] == ("Tea", "4.50")


def test_an_upside_down_page_is_laid_out_upright_and_located_as_displayed() -> None:
    upright = [line("First line of the notice", 0.1, 0.1), line("second line of the notice", 0.1, 0.12)]
    # As the engine reports them: on the page as displayed (turned 180), and how far it turned to read.
    displayed = [item.model_copy(update={"box": turned(item.box, 180)}) for item in upright]
    blocks = recognized_blocks(RecognizedPage(page=2, rotation_degrees=180, lines=tuple(displayed)))
    assert len(blocks) == 1 and blocks[0].text == "First line of the notice second line of the notice"
    shown = blocks[0].location.box
    assert shown is not None and shown.top > 0.8  # the top of the upright page is the bottom of the display


def test_an_engines_own_table_replaces_the_lines_inside_it_in_reading_order() -> None:
    page = RecognizedPage(
        page=1,
        lines=(line("Introduction before the table", 0.1, 0.1), line("Closing words after it", 0.1, 0.6)),
        tables=(
            RecognizedTable(box=box(0.1, 0.3, 0.6, 0.2), confidence=0.88, rows=(("A", "B"), ("1", "2")), header_rows=1),
        ),
    )
    kinds = [block.kind for block in recognized_blocks(page)]
    assert kinds == [BlockKind.PARAGRAPH, BlockKind.TABLE, BlockKind.PARAGRAPH]


def text_layer_document() -> ExtractedDocument:
    return ExtractedDocument(
        media_type="application/pdf",
        blocks=(Block(kind=BlockKind.PARAGRAPH, text="Typed text on page one.", location=Location(page=1)),),
        page_count=3,
        pages_without_text=(2, 3),
        warnings=("pages with no text layer: 2, 3 (of 3)",),
    )


def test_recognised_pages_join_the_text_layer_in_page_order_and_the_warning_is_replaced() -> None:
    result = RecognitionResult(
        engine="fake",
        pages=(
            RecognizedPage(page=2, lines=(line("Scanned words on page two.", 0.1, 0.1),)),
            RecognizedPage(page=3, lines=()),
        ),
        usage=USAGE,
    )
    merged = with_recognition(
        text_layer_document(), LIMITS, read_pages=(2, 3), result=result, description=None, notes=()
    )
    assert [(block.location.page, block.confidence) for block in merged.blocks] == [(1, None), (2, 0.95)]
    assert merged.recognized_pages == (2, 3) and merged.pages_without_text == (3,)
    assert not any(warning.startswith("pages with no text layer") for warning in merged.warnings)
    assert "OCR found no text on pages 3" in merged.warnings
    # The blank page weighs in at 0: the whole read is less sure than its one good page.
    assert merged.confidence is not None and merged.confidence < 0.95


def test_a_rescan_replaces_the_text_layer_of_the_pages_it_read() -> None:
    result = RecognitionResult(
        engine="fake",
        pages=tuple(RecognizedPage(page=n, lines=(line(f"Read from page {n}.", 0.1, 0.1),)) for n in (1, 2, 3)),
        usage=USAGE,
    )
    merged = with_recognition(
        text_layer_document(), LIMITS, read_pages=(1, 2, 3), result=result, description=None, notes=()
    )
    assert [block.text for block in merged.blocks] == ["Read from page 1.", "Read from page 2.", "Read from page 3."]


def test_low_confidence_and_unreadable_lines_are_warned_about() -> None:
    result = RecognitionResult(
        engine="fake",
        pages=(
            RecognizedPage(
                page=2,
                lines=(line("Faint words", 0.1, 0.1, confidence=0.6),),
                unreadable_lines=(line("x#q!", 0.1, 0.2, confidence=0.2),),
            ),
        ),
        usage=USAGE,
    )
    merged = with_recognition(text_layer_document(), LIMITS, read_pages=(2,), result=result, description=None, notes=())
    assert merged.low_confidence
    assert any(warning.startswith("low OCR confidence") for warning in merged.warnings)
    assert any("1 lines too unclear" in warning for warning in merged.warnings)
    assert all("x#q!" not in block.text for block in merged.blocks)


def test_a_description_is_its_own_block_its_own_chunk_and_cited_as_a_description() -> None:
    image = ExtractedDocument(media_type="image/png", blocks=(), page_count=1, pages_without_text=(1,))
    result = RecognitionResult(
        engine="fake", pages=(RecognizedPage(page=1, lines=(line("Revenue by region 2026", 0.1, 0.1),)),), usage=USAGE
    )
    description = ImageDescription(
        model_id="vision-model", text="A bar chart of revenue by region; Zanzibar leads.", usage=USAGE
    )
    merged = with_recognition(image, LIMITS, read_pages=(1,), result=result, description=description, notes=())
    assert [block.kind for block in merged.blocks] == [BlockKind.PARAGRAPH, BlockKind.DESCRIPTION]
    drafts = StructuralChunker(lambda text: len(text.split()), 200).chunk(merged)
    assert [draft.block_kind for draft in drafts] == [BlockKind.PARAGRAPH, BlockKind.DESCRIPTION]
    transcription, reading = (
        Citation.at(draft.location, block_kind=draft.block_kind, excerpt=draft.text, **_citation_fields())
        for draft in drafts
    )
    assert transcription.kind == CitedKind.TRANSCRIPTION
    assert transcription.ocr_confidence == pytest.approx(0.95)
    assert (reading.kind, reading.ocr_confidence) == (CitedKind.DESCRIPTION, None)


def test_text_layer_chunks_are_quotes_with_no_confidence() -> None:
    drafts = StructuralChunker(lambda text: len(text.split()), 200).chunk(text_layer_document())
    citation = Citation.at(drafts[0].location, block_kind=drafts[0].block_kind, excerpt="x", **_citation_fields())
    assert (citation.kind, citation.ocr_confidence) == (CitedKind.QUOTE, None)


def _citation_fields() -> dict[str, Any]:
    from datetime import UTC, datetime

    return {
        "file_id": "f",
        "version_id": "v",
        "filename": "scan.pdf",
        "media_type": "application/pdf",
        "collection_id": "c",
        "retrieved_at": datetime.now(UTC),
    }


def test_a_table_on_a_turned_page_is_still_a_table() -> None:
    rows = [("Region", "Orders", "Margin"), ("Zanzibar", "1,204", "12.5%"), ("Patagonia", "2,918", "9.1%")]
    rows.append(("Kamchatka", "611", "15.8%"))
    upright = [
        line(cell, 0.1 + 0.25 * column, 0.2 + 0.04 * index, width=0.1)
        for index, row in enumerate(rows)
        for column, cell in enumerate(row)
    ]
    for degrees in (90, 180, 270):
        # As an engine reports a page scanned turned: boxes on the displayed page, and the turn it undid.
        displayed = tuple(item.model_copy(update={"box": turned(item.box, (360 - degrees) % 360)}) for item in upright)
        blocks = recognized_blocks(RecognizedPage(page=1, rotation_degrees=degrees, lines=displayed))
        assert [block.kind for block in blocks] == [BlockKind.TABLE], degrees
        assert blocks[0].table is not None and blocks[0].table.rows == tuple(rows)


def test_two_columns_of_text_are_read_one_after_the_other_not_across() -> None:
    left = ["The quick brown fox jumps over the lazy dog", "and keeps running until the river bank ends."]
    right = ["Meanwhile the second column tells a story", "about a harbour committee and its dredging."]
    lines = [line("Two column newsletter", 0.1, 0.05, width=0.5)]
    for index, (first, second) in enumerate(zip(left, right, strict=True)):
        lines.append(line(first, 0.05, 0.1 + 0.02 * index, width=0.4))
        lines.append(line(second, 0.55, 0.1 + 0.02 * index, width=0.4))
    text = " ".join(block.text for block in recognized_blocks(RecognizedPage(page=1, lines=tuple(lines))))
    assert " ".join(left) in text and " ".join(right) in text
    assert text.index(left[1]) < text.index(right[0])


def test_a_rescan_keeps_the_text_layer_of_pages_ocr_did_not_return() -> None:
    document = ExtractedDocument(
        media_type="application/pdf",
        blocks=tuple(
            Block(kind=BlockKind.PARAGRAPH, text=f"Typed page {n}.", location=Location(page=n)) for n in (1, 2, 3)
        ),
        page_count=3,
    )
    # Page 2 missing from the result (Textract's PARTIAL_SUCCESS), page 3 read blank.
    result = RecognitionResult(
        engine="fake",
        pages=(RecognizedPage(page=1, lines=(line("Read page one.", 0.1, 0.1),)), RecognizedPage(page=3, lines=())),
        usage=USAGE,
    )
    merged = with_recognition(document, LIMITS, read_pages=(1, 2, 3), result=result, description=None, notes=())
    assert [block.text for block in merged.blocks] == ["Read page one.", "Typed page 2.", "Typed page 3."]
    assert "OCR returned nothing for pages 2" in merged.warnings


def test_a_document_cut_by_extraction_stays_marked_cut_whatever_ocr_did() -> None:
    cut = text_layer_document().model_copy(update={"truncated": True})
    for result in (None, RecognitionResult(engine="fake", pages=(), usage=USAGE)):
        merged = with_recognition(cut, LIMITS, read_pages=(2, 3), result=result, description=None, notes=("x",))
        assert merged.truncated is True


def _texts(lines: list[RecognizedLine]) -> list[tuple[BlockKind, str, tuple[tuple[str, ...], ...] | None]]:
    blocks = recognized_blocks(RecognizedPage(page=1, lines=tuple(lines)))
    return [(block.kind, block.text, block.table.rows if block.table else None) for block in blocks]


def test_an_invoice_with_long_descriptions_on_one_column_stays_a_table() -> None:
    items = [
        ("Consulting services for the quarter ending March 2026", "3", "$1,200.00"),
        ("Travel expenses for the on-site workshop in Rotterdam", "1", "$410.50"),
        ("Licence renewal for the reporting module (annual plan)", "1", "$990.00"),
    ]
    lines = [line(text, left, 0.12, width=0.1) for text, left in (("Description", 0.1), ("Qty", 0.62), ("Amount", 0.8))]
    for index, (description, quantity, amount) in enumerate(items, start=1):
        top = 0.12 + 0.03 * index
        lines += [line(description, 0.1, top, width=0.45), line(quantity, 0.62, top, width=0.03)]
        lines.append(line(amount, 0.8, top, width=0.12))
    [(kind, _, rows)] = _texts(lines)
    assert kind is BlockKind.TABLE and rows == (("Description", "Qty", "Amount"), *items)


def test_columns_of_medium_lines_and_a_table_inside_one_column_keep_their_order() -> None:
    left = [f"Left column prose line number {n} continues" for n in range(3)]
    right = [f"Right column prose line number {n} goes on" for n in range(3)]
    lines = []
    for index, (first, second) in enumerate(zip(left, right, strict=True)):
        lines += [line(first, 0.05, 0.1 + 0.025 * index, width=0.4), line(second, 0.55, 0.1 + 0.025 * index, width=0.4)]
    cells = [("Region", "Sales"), ("North", "120"), ("South", "98")]
    beside = [f"More right column prose beside the table {n}" for n in range(3)]
    for index, ((region, sales), prose) in enumerate(zip(cells, beside, strict=True)):
        top = 0.2 + 0.025 * index
        lines += [
            line(region, 0.07, top, width=0.1),
            line(sales, 0.3, top, width=0.06),
            line(prose, 0.55, top, width=0.4),
        ]
    blocks = _texts(lines)
    assert blocks[0] == (BlockKind.PARAGRAPH, " ".join(left), None)
    assert blocks[1] == (BlockKind.TABLE, "", tuple(cells))
    assert [text for kind, text, _ in blocks[2:]] == [" ".join(right), " ".join(beside)]


def test_a_short_line_beside_a_short_line_in_a_column_band_is_not_joined_across() -> None:
    left = ["The quick brown fox jumps over the lazy dog", "and keeps running to the river.", "The end."]
    right = ["Meanwhile the second column tells a story", "about a harbour committee meeting.", "2. Methods"]
    lines = [line("A newsletter title spanning both columns", 0.15, 0.03, width=0.7)]
    for index, (first, second) in enumerate(zip(left, right, strict=True)):
        lines += [line(first, 0.05, 0.1 + 0.025 * index, width=0.4), line(second, 0.55, 0.1 + 0.025 * index, width=0.4)]
    text = " ".join(text for _, text, _ in _texts(lines))
    assert " ".join(left) in text and text.index("The end.") < text.index("Meanwhile")
