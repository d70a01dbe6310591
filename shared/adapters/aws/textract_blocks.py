"""Textract's response blocks → recognised pages: a pure mapping (no client, no retries), numbered as in the
original. Response shapes are those of the Textract developer guide ("Text detection and document analysis
response objects"); blocks are parsed with amazon-textract-response-parser (`trp`)."""

import math
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from itertools import pairwise
from typing import Any

from shared.domain.layout import on_page, union
from shared.domain.recognition import (
    MIN_LINE_CONFIDENCE,
    BoundingBox,
    RecognizedLine,
    RecognizedPage,
    RecognizedSegment,
    RecognizedTable,
    mean_confidence,
)

COLUMN_HEADER = "COLUMN_HEADER"


def recognized_pages(
    responses: Iterable[dict[str, Any]], original_page: Callable[[int], int | None]
) -> tuple[RecognizedPage, ...]:
    """The pages of Textract's responses, numbered as in the original; job pages with no original dropped."""
    from trp import Document  # type: ignore[import-untyped]

    by_page: dict[int, list[dict[str, Any]]] = {}
    for response in responses:
        for block in response.get("Blocks", []):
            # A synchronous read of an image leaves Page out: it has one page.
            by_page.setdefault(int(block.get("Page", 1)), []).append(block)
    pages: list[RecognizedPage] = []
    for job_page in sorted(by_page):
        number = original_page(job_page)
        if number is None:
            continue
        # trp cuts pages at PAGE blocks in stream order, so each page is parsed on its own with its
        # PAGE block first, whatever order the response pages delivered the blocks in.
        blocks = sorted(by_page[job_page], key=lambda block: block.get("BlockType") != "PAGE")
        if blocks[0].get("BlockType") != "PAGE":
            blocks.insert(0, _whole_page_block(job_page))
        [parsed] = Document({"Blocks": blocks}).pages
        pages.append(_recognized_page(number, parsed))
    return tuple(pages)


def _whole_page_block(job_page: int) -> dict[str, Any]:
    corners = [{"X": 0.0, "Y": 0.0}, {"X": 1.0, "Y": 0.0}, {"X": 1.0, "Y": 1.0}, {"X": 0.0, "Y": 1.0}]
    return {
        "BlockType": "PAGE",
        "Id": f"quire-page-{job_page}",
        "Page": job_page,
        "Geometry": {"BoundingBox": {"Left": 0.0, "Top": 0.0, "Width": 1.0, "Height": 1.0}, "Polygon": corners},
    }


def _recognized_page(number: int, page: Any) -> RecognizedPage:
    tables = [table for table in (_recognized_table(parsed) for parsed in page.tables) if table is not None]
    lines: list[RecognizedLine] = []
    unreadable: list[RecognizedLine] = []
    for line in page.lines:
        text = line.text.strip()
        if not text:
            continue
        box = _box(line.geometry.boundingBox)
        # The table carries this text, cell by cell: as a line too it would be indexed twice.
        if any(_contains(table.box, box) for table in tables):
            continue
        recognized = RecognizedLine(
            text=text, box=box, confidence=_confidence(line.confidence), segments=_segments(line, box)
        )
        (lines if recognized.confidence >= MIN_LINE_CONFIDENCE else unreadable).append(recognized)
    return RecognizedPage(
        page=number,
        rotation_degrees=_rotation(page.lines),
        lines=tuple(lines),
        tables=tuple(tables),
        unreadable_lines=tuple(unreadable),
    )


def _segments(line: Any, line_box: BoundingBox) -> tuple[RecognizedSegment, ...]:
    """The line's words in groups, a new group wherever the gap to the next word is wider than the line is
    tall: far more than a word space (about a quarter of that), so it is a column gap.

    Both are normalised, to the page's width and height: on a portrait page the threshold is ~1.3 line
    heights in real units, still far from a word space.
    """
    words = [(word.text.strip(), _box(word.geometry.boundingBox)) for word in line.words if word.text.strip()]
    if not words:
        return ()
    groups: list[list[tuple[str, BoundingBox]]] = [[words[0]]]
    for previous, word in pairwise(words):
        if word[1].left - previous[1].right > line_box.height:
            groups.append([word])
        else:
            groups[-1].append(word)
    return tuple(
        RecognizedSegment(text=" ".join(text for text, _ in group), box=union([box for _, box in group]))
        for group in groups
    )


def _recognized_table(table: Any) -> RecognizedTable | None:
    """Rows of cell texts. A merged cell's text is repeated in every position it covers, so each row
    reads whole on its own (a table split by rows keeps its context)."""
    cells = [cell for row in table.rows for cell in row.cells]
    if not cells:
        return None
    row_count = max(cell.rowIndex + max(cell.rowSpan, 1) - 1 for cell in cells)
    column_count = max(cell.columnIndex + max(cell.columnSpan, 1) - 1 for cell in cells)
    grid = [[""] * column_count for _ in range(row_count)]
    header_rows: set[int] = set()
    for cell in cells:
        text = cell.mergedText.strip()
        rows = range(cell.rowIndex, cell.rowIndex + max(cell.rowSpan, 1))
        for row in rows:
            for column in range(cell.columnIndex, cell.columnIndex + max(cell.columnSpan, 1)):
                if not grid[row - 1][column - 1]:
                    grid[row - 1][column - 1] = text
        if COLUMN_HEADER in cell.entityTypes:
            header_rows.update(rows)
    leading_headers = 0
    while leading_headers + 1 in header_rows:
        leading_headers += 1
    # The words' own confidence, as for a line: the table's confidence is about its structure, not
    # whether its words were read right, which is what the low-confidence flag is for.
    words = [item for cell in cells for item in cell.content if getattr(item, "text", "")]
    confidence = (
        mean_confidence([(_confidence(word.confidence), len(word.text)) for word in words])
        if words
        else _confidence(table.confidence)
    )
    return RecognizedTable(
        box=_box(table.geometry.boundingBox),
        confidence=confidence,
        rows=tuple(tuple(row) for row in grid),
        header_rows=leading_headers,
    )


def _rotation(lines: Sequence[Any]) -> int:
    """How far the page was turned clockwise to read it upright (0, 90, 180 or 270).

    Each line's polygon starts at the top-left corner of its text as read and runs along it, so the
    first edge points the way the text runs on the displayed page: right when upright, down when the
    content is turned 90° clockwise (reading it needs a turn of 270°). The direction most characters
    run in wins; a page without lines is upright.
    """
    votes: Counter[int] = Counter()
    for line in lines:
        polygon = line.geometry.polygon
        if len(polygon) < 2:
            continue
        angle = math.degrees(math.atan2(polygon[1].y - polygon[0].y, polygon[1].x - polygon[0].x))
        direction = round(angle / 90) % 4 * 90
        votes[direction] += max(len(line.text), 1)
    if not votes:
        return 0
    direction = max(votes, key=lambda candidate: (votes[candidate], candidate == 0))
    return (360 - direction) % 360


def _confidence(percent: float) -> float:
    return min(max(float(percent) / 100.0, 0.0), 1.0)


def _box(box: Any) -> BoundingBox:
    """Textract's box on the page: an edge it places a hair outside 0..1 stays on it."""
    left, top = float(box.left), float(box.top)
    return on_page(left, top, left + float(box.width), top + float(box.height))


def _contains(outer: BoundingBox, inner: BoundingBox) -> bool:
    """Whether `inner`'s centre lies inside `outer`."""
    x = inner.left + inner.width / 2
    y = inner.top + inner.height / 2
    return outer.left <= x <= outer.right and outer.top <= y <= outer.bottom
