"""What OCR read off a page → the same located blocks a text layer gives (shared/domain/layout.py).

An engine returns lines on the page as displayed, and says how far it turned the page to read them. The
layout rules need the text upright (a paragraph's next line is below the last), so the boxes are turned
upright, laid out, and the blocks' boxes turned back: a citation points at the page a viewer shows.

OCR detects a table row as several lines side by side (a wide gap ends a detection), so lines at the same
height are joined into one row whose pieces are the cells: that is the evidence the table rule reads.
Lines side by side that are not short like cells are columns of text: a band of them is read down the
left column, then down the right, never across.
"""

import math
from collections.abc import Sequence

from shared.domain.document import (
    Block,
    BlockCollector,
    BlockKind,
    ExtractedDocument,
    ExtractionLimits,
    Location,
    Table,
)
from shared.domain.layout import Cell, LayoutRules, TextLine, extent, layout_blocks
from shared.domain.recognition import (
    LOW_CONFIDENCE_THRESHOLD,
    BoundingBox,
    ImageDescription,
    RecognitionResult,
    RecognizedLine,
    RecognizedPage,
    RecognizedTable,
)

# A detector's line box is padded and its height varies with the letters in it (descenders, capitals): a
# body line's height ranged 15-21 thousandths of the page in one scan. The width per character is steadier
# (it averages over the line), so it is the size: bucketed in steps of 8%, a heading must be 30% wider per
# character than the body and read as a title; lines continue a paragraph on their spacing alone.
OCR_LAYOUT = LayoutRules(size_tolerance_ratio=1.0, heading_ratio=1.3, heading_must_read_as_title=True)
_SIZE_STEP = 1.08
# Two lines are one row when they overlap vertically by at least this much of the shorter one.
_SAME_ROW_OVERLAP = 0.5
# A line of a text column is at least this long on both sides of the gutter (table cells are shorter:
# the layout rules want a median cell of at most 24 characters).
_MIN_COLUMN_LINE = 25


def recognized_blocks(page: RecognizedPage) -> list[Block]:
    """The page's blocks in reading order, each with its box on the displayed page and its confidence."""
    turn = page.rotation_degrees % 360
    upright = [_turned_line(line, turn) for line in page.lines]
    blocks = layout_blocks([_text_line(page.page, row) for row in _reading_order(upright)], OCR_LAYOUT)
    tables = [(turned(table.box, turn), table) for table in page.tables]
    merged: list[Block] = []
    for block in blocks:
        while tables and block.location.box is not None and tables[0][0].top <= block.location.box.top:
            merged.append(_table_block(page.page, *tables.pop(0)))
        merged.append(block)
    merged.extend(_table_block(page.page, box, table) for box, table in tables)
    back = (360 - turn) % 360
    return [
        block.model_copy(update={"location": Location(page=page.page, box=turned(block.location.box, back))})
        if block.location.box is not None
        else block
        for block in merged
    ]


def turned(box: BoundingBox, degrees: int) -> BoundingBox:
    """`box` on the page after the page is turned `degrees` clockwise (0, 90, 180 or 270)."""
    corners = [(box.left, box.top), (box.right, box.bottom)]
    for _ in range((degrees // 90) % 4):
        # A clockwise quarter turn moves (x, y) to (1 - y, x) on the normalised page.
        corners = [(1 - y, x) for x, y in corners]
    xs = [min(max(x, 0.0), 1.0) for x, _ in corners]
    ys = [min(max(y, 0.0), 1.0) for _, y in corners]
    return BoundingBox(left=min(xs), top=min(ys), width=max(xs) - min(xs), height=max(ys) - min(ys))


def _turned_line(line: RecognizedLine, degrees: int) -> RecognizedLine:
    if not degrees:
        return line
    segments = tuple(segment.model_copy(update={"box": turned(segment.box, degrees)}) for segment in line.segments)
    return line.model_copy(update={"box": turned(line.box, degrees), "segments": segments})


def _reading_order(lines: Sequence[RecognizedLine]) -> list[list[RecognizedLine]]:
    """Upright lines → rows in reading order: side by side pieces stay one row (a table's cells), except in
    a band of text columns, read down the left column and then down the right."""
    rows: list[list[RecognizedLine]] = []
    for line in sorted(lines, key=lambda candidate: (candidate.box.top, candidate.box.left)):
        if rows and _same_row(rows[-1], line):
            rows[-1].append(line)
        else:
            rows.append([line])
    rows = [sorted(row, key=lambda member: member.box.left) for row in rows]
    # Columns of text show as rows of exactly two long pieces (a table row has short cells, or more of
    # them); one such row could be a coincidence, two agree on where the gutter is.
    text_columns = [row for row in rows if len(row) == 2 and all(len(piece.text) >= _MIN_COLUMN_LINE for piece in row)]
    if len(text_columns) < 2:
        return rows
    gutter = sorted(_gap_middle(row) for row in text_columns)[len(text_columns) // 2]
    ordered: list[list[RecognizedLine]] = []
    left: list[list[RecognizedLine]] = []
    right: list[list[RecognizedLine]] = []
    for row in rows:
        on_left = [piece for piece in row if piece.box.right <= gutter]
        on_right = [piece for piece in row if piece.box.left >= gutter]
        # A piece across the gutter, or a row of short cells on both sides (a table as wide as the page).
        wide_table = len(row) > 2 and on_left and on_right and all(len(p.text) < _MIN_COLUMN_LINE for p in row)
        spans = len(on_left) + len(on_right) < len(row) or wide_table
        if spans:
            # Across the gutter (a title, a full-width paragraph, a wide table): the band above ends here.
            ordered.extend(left + right)
            left, right = [], []
            ordered.append(row)
            continue
        if on_left:
            left.append(on_left)
        if on_right:
            right.append(on_right)
    ordered.extend(left + right)
    return ordered


def _gap_middle(row: list[RecognizedLine]) -> float:
    first, second = row
    return (first.box.right + second.box.left) / 2


def _same_row(row: list[RecognizedLine], line: RecognizedLine) -> bool:
    top = min(member.box.top for member in row)
    bottom = max(member.box.bottom for member in row)
    overlap = min(bottom, line.box.bottom) - max(top, line.box.top)
    shorter = min(bottom - top, line.box.height)
    return shorter > 0 and overlap >= shorter * _SAME_ROW_OVERLAP


def _text_line(page: int, row: list[RecognizedLine]) -> TextLine:
    # Each line's own segments where the engine found wide gaps inside it, else the line as one piece.
    cells = [
        Cell(text=piece.text, left=piece.box.left, right=piece.box.right)
        for line in row
        for piece in (line.segments or (line,))
    ]
    characters = sum(len(line.text) for line in row)
    inked = sum(len(line.text.replace(" ", "")) for line in row)
    left, top, right, bottom = extent(line.box for line in row)
    return TextLine(
        page=page,
        text=" ".join(line.text for line in row),
        size=_bucket(sum(line.box.width for line in row) / max(inked, 1)),
        left=left,
        top=top,
        right=right,
        bottom=bottom,
        cells=tuple(cells) if len(cells) > 1 else (),
        confidence=sum(line.confidence * len(line.text) for line in row) / max(characters, 1),
    )


def _bucket(width: float) -> float:
    """A width per character rounded to a step of 8%, so lines of one font size share one size."""
    if width <= 0:
        return 0.0
    return round(_SIZE_STEP ** round(math.log(width * 1000) / math.log(_SIZE_STEP)), 3)


def _table_block(page: int, box: BoundingBox, table: RecognizedTable) -> Block:
    return Block(
        kind=BlockKind.TABLE,
        location=Location(page=page, box=box),
        table=Table(rows=table.rows, header_rows=table.header_rows),
        confidence=round(table.confidence, 4),
    )


def with_recognition(
    document: ExtractedDocument,
    limits: ExtractionLimits,
    *,
    read_pages: Sequence[int],
    result: RecognitionResult | None,
    description: ImageDescription | None,
    notes: Sequence[str],
) -> ExtractedDocument:
    """`document` with what OCR read on `read_pages` and an image's description, in page order, bounded by
    the same limits as any extraction. A page's text layer gives way only to OCR text for that page: a page
    OCR returned blank, or not at all, keeps what it had. `notes` are warnings the caller adds (OCR or
    vision unavailable or failed)."""
    recognized = {page.page: page for page in (result.pages if result is not None else ())}
    with_text = {number for number, page in recognized.items() if page.lines or page.tables}
    kept = [block for block in document.blocks if block.location.page not in with_text]
    for page in recognized.values():
        kept.extend(recognized_blocks(page))
    if description is not None:
        kept.append(Block(kind=BlockKind.DESCRIPTION, text=description.text.strip(), location=Location(page=1)))
    # Stable: text-layer blocks keep their order within a page, and a page's description follows its text.
    ordered = sorted(kept, key=lambda block: block.location.page or 0)
    collector = BlockCollector(limits)
    for block in ordered:
        if not collector.add(block.model_copy(update={"heading_path": ()})):
            break
    still_without = tuple(page for page in document.pages_without_text if page not in with_text)
    # A doubtful layer OCR replaced is gone; one OCR left (blank, or not read) is still doubtful. The warning
    # naming why each was doubted stays: it is why OCR read those pages.
    still_doubtful = tuple(layer for layer in document.doubtful_text_layers if layer.page not in with_text)
    warnings = [warning for warning in document.warnings if not warning.startswith(NO_TEXT_LAYER_WARNING_PREFIX)]
    if still_without:
        warnings.append(f"{len(still_without)} pages have no text: {_listed(still_without)}")
    warnings.extend(_recognition_warnings(result))
    missing = tuple(page for page in read_pages if page not in recognized) if result is not None else ()
    if missing:
        warnings.append(f"OCR returned nothing for pages {_listed(missing)}")
    warnings.extend(notes)
    merged = collector.document(
        document.media_type,
        page_count=document.page_count,
        pages_without_text=still_without,
        doubtful_text_layers=still_doubtful,
        warnings=tuple(warnings),
    )
    # Cut by the extraction before OCR, or by the limits now: either way the document is not whole.
    merged = merged.model_copy(update={"truncated": merged.truncated or document.truncated})
    if result is None:
        return merged
    return merged.model_copy(
        update={"recognized_pages": tuple(sorted(recognized)), "confidence": round(result.confidence, 4)}
    )


# The text-layer parser's note on pages without text: replaced once OCR has had its say.
NO_TEXT_LAYER_WARNING_PREFIX = "pages with no text layer:"


def _recognition_warnings(result: RecognitionResult | None) -> list[str]:
    if result is None:
        return []
    warnings: list[str] = []
    low = [page.page for page in result.pages if page.confidence < LOW_CONFIDENCE_THRESHOLD]
    if result.confidence < LOW_CONFIDENCE_THRESHOLD or low:
        warnings.append(
            f"low OCR confidence ({result.confidence:.2f}, below {LOW_CONFIDENCE_THRESHOLD}) on pages "
            f"{_listed(low)}: recognised words may be wrong; check them against the original"
        )
    unclear = [page.page for page in result.pages if page.unreadable_lines]
    if unclear:
        count = sum(len(page.unreadable_lines) for page in result.pages)
        warnings.append(f"{count} lines too unclear to keep as text, on pages {_listed(unclear)}")
    blank = [page.page for page in result.pages if not page.lines and not page.tables]
    if blank:
        warnings.append(f"OCR found no text on pages {_listed(blank)}")
    return warnings


def _listed(pages: Sequence[int]) -> str:
    shown = ", ".join(str(page) for page in pages[:20])
    return shown + (f" and {len(pages) - 20} more" if len(pages) > 20 else "")
