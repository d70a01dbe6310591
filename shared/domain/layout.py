"""Positioned lines of text → headings, paragraphs and tables, for any source that has no structure of its
own: a PDF's text layer, and what OCR read off a scan. Both give lines at coordinates; neither says
which line is a heading or that a grid of them is a table.

Coordinates are normalised to the page (0..1, top-left origin, y down), so the rules are the same at
any size or DPI. A heading is a short line set clearly larger than the body text; a table is recovered
only when the evidence is strong (several consecutive rows cut into the same aligned columns): a wrong
table is worse than none, because it looks authoritative, so anything less stays paragraphs.
"""

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from shared.domain.document import Block, BlockKind, Location, Table
from shared.domain.recognition import BoundingBox, mean_confidence

HEADING_SIZE_RATIO = 1.15
MAX_HEADING_CHARACTERS = 160
# A table needs at least this many rows with the same columns, aligned.
MIN_TABLE_ROWS = 3
MAX_MEDIAN_CELL_CHARACTERS = 24
MAX_CELL_CHARACTERS = 80


class Edges(Protocol):
    """Anything with a rectangle's four edges on the normalised page: a BoundingBox, a TextLine."""

    @property
    def left(self) -> float: ...
    @property
    def top(self) -> float: ...
    @property
    def right(self) -> float: ...
    @property
    def bottom(self) -> float: ...


def extent(items: Iterable[Edges]) -> tuple[float, float, float, float]:
    """(left, top, right, bottom) of the smallest rectangle around every one of `items` (at least one)."""
    edges = [(item.left, item.top, item.right, item.bottom) for item in items]
    return (
        min(left for left, _, _, _ in edges),
        min(top for _, top, _, _ in edges),
        max(right for _, _, right, _ in edges),
        max(bottom for _, _, _, bottom in edges),
    )


def on_page(left: float, top: float, right: float, bottom: float) -> BoundingBox:
    """The rectangle as a box cut at the page's edges: what a source places a hair outside 0..1 stays on it."""
    left, top = _unit(left), _unit(top)
    right, bottom = min(max(right, left), 1.0), min(max(bottom, top), 1.0)
    return BoundingBox(left=left, top=top, width=right - left, height=bottom - top)


def union(boxes: Sequence[BoundingBox]) -> BoundingBox:
    """The smallest box around `boxes` (at least one), on the page; one box is its own union, unchanged."""
    if len(boxes) == 1:
        return boxes[0]
    return on_page(*extent(boxes))


@dataclass(frozen=True)
class Cell:
    """A run of a line's text between wide gaps: a candidate table cell."""

    text: str
    left: float
    right: float


@dataclass(frozen=True)
class TextLine:
    page: int
    text: str
    # The text's size, compared only within one document: a font size in points for a text layer, a
    # line height in pixels for OCR (sources say how alike two sizes must be, `size_tolerance`).
    size: float
    left: float
    top: float
    right: float
    bottom: float
    cells: tuple[Cell, ...] = ()
    # None when the text was read from a text layer, not recognised.
    confidence: float | None = None

    @property
    def height(self) -> float:
        return max(self.bottom - self.top, 1e-6)


@dataclass(frozen=True)
class LayoutRules:
    """How alike two sizes must be to be one paragraph's (a fraction of the larger, or an absolute floor),
    and how much larger than the body a heading must be."""

    size_tolerance: float = 0.0
    size_tolerance_ratio: float = 0.0
    heading_ratio: float = HEADING_SIZE_RATIO
    # Where sizes are estimates (OCR), a heading must also read like one: a few letters, not a sentence.
    heading_must_read_as_title: bool = False

    def may_be_heading(self, text: str) -> bool:
        if len(text) > MAX_HEADING_CHARACTERS:
            return False
        if not self.heading_must_read_as_title:
            return True
        return sum(character.isalpha() for character in text) >= 4 and not text.rstrip().endswith((".", ",", ";", ":"))

    def same_size(self, first: float, second: float) -> bool:
        return abs(first - second) <= max(self.size_tolerance, self.size_tolerance_ratio * max(first, second))


def layout_blocks(lines: Sequence[TextLine], rules: LayoutRules, *, headings: bool = True) -> list[Block]:
    """Blocks in reading order (the order of `lines`), each located on its page with its box."""
    if not lines:
        return []
    levels = heading_levels(lines, rules.heading_ratio) if headings else {}
    tables = _table_runs(lines)
    blocks: list[Block] = []
    paragraph: list[TextLine] = []

    def flush() -> None:
        if paragraph:
            blocks.append(_block(BlockKind.PARAGRAPH, paragraph))
            paragraph.clear()

    index = 0
    while index < len(lines):
        line = lines[index]
        if index in tables:
            flush()
            end = tables[index]
            blocks.append(_table_block(lines[index:end]))
            index = end
            continue
        level = levels.get(line.size)
        if level is not None and rules.may_be_heading(line.text):
            flush()
            blocks.append(_block(BlockKind.HEADING, [line], level=level))
        else:
            if paragraph and not _continues(paragraph[-1], line, rules):
                flush()
            paragraph.append(line)
        index += 1
    flush()
    return blocks


def heading_levels(lines: Sequence[TextLine], ratio: float = HEADING_SIZE_RATIO) -> dict[float, int]:
    """A level for each size set clearly larger than the body text (the size with the most characters)."""
    weight: dict[float, int] = {}
    for line in lines:
        weight[line.size] = weight.get(line.size, 0) + len(line.text)
    body = max(weight, key=lambda size: weight[size])
    larger = sorted({line.size for line in lines if line.size >= body * ratio}, reverse=True)
    return {size: min(level, 6) for level, size in enumerate(larger, start=1)}


def _table_runs(lines: Sequence[TextLine]) -> dict[int, int]:
    """start → end (exclusive) of each run of lines that is a table beyond reasonable doubt: at least
    MIN_TABLE_ROWS consecutive lines on one page, each cut into the same number (≥ 2) of cells, every
    column overlapping itself from row to row and never its neighbour."""
    runs: dict[int, int] = {}
    start = 0
    while start < len(lines):
        end = start + 1
        while end < len(lines) and _same_grid(lines[start], lines[end - 1], lines[end]):
            end += 1
        if end - start >= MIN_TABLE_ROWS and len(lines[start].cells) >= 2 and _cell_sized(lines[start:end]):
            runs[start] = end
            start = end
        else:
            start += 1
    return runs


def _cell_sized(rows: Sequence[TextLine]) -> bool:
    """Table cells are short; two columns of running prose are not a table, however well aligned."""
    lengths = sorted(len(cell.text) for row in rows for cell in row.cells)
    return lengths[len(lengths) // 2] <= MAX_MEDIAN_CELL_CHARACTERS and lengths[-1] <= MAX_CELL_CHARACTERS


def _same_grid(first: TextLine, previous: TextLine, line: TextLine) -> bool:
    columns = len(first.cells)
    if columns < 2 or len(line.cells) != columns or line.page != first.page:
        return False
    if not 0 <= line.top - previous.bottom < previous.height * 2.5:
        return False
    for column, cell in enumerate(line.cells):
        anchor = first.cells[column]
        if cell.right < anchor.left or cell.left > anchor.right:
            return False  # this column drifted away from its own first row
        if column + 1 < columns and cell.right >= first.cells[column + 1].left:
            return False  # it runs into the next column
    return True


def _table_block(rows: Sequence[TextLine]) -> Block:
    cells = [tuple(cell.text for cell in row.cells) for row in rows]
    frame = _block(BlockKind.TABLE, rows)
    return frame.model_copy(
        update={"text": "", "table": Table(rows=tuple(cells), header_rows=1 if looks_like_header(cells) else 0)}
    )


def _continues(previous: TextLine, line: TextLine, rules: LayoutRules) -> bool:
    """Same page, same size, and the next line down within a normal line gap."""
    gap = line.top - previous.bottom
    return (
        line.page == previous.page
        and rules.same_size(line.size, previous.size)
        and -previous.height < gap < previous.height * 1.2
    )


def _block(kind: BlockKind, lines: Sequence[TextLine], level: int | None = None) -> Block:
    box = on_page(*extent(lines))
    text = lines[0].text
    for line in lines[1:]:
        # A word hyphenated across lines is one word again.
        text = text[:-1] + line.text if text.endswith("-") and line.text[:1].islower() else f"{text} {line.text}"
    recognised = [(line.confidence, len(line.text)) for line in lines if line.confidence is not None]
    return Block(
        kind=kind,
        text=text,
        level=level,
        location=Location(page=lines[0].page, box=box),
        confidence=round(mean_confidence(recognised), 4) if recognised else None,
    )


def _unit(value: float) -> float:
    return min(max(value, 0.0), 1.0)


def numeric(cell: str) -> bool:
    try:
        float(cell.replace(",", "").replace("%", "").strip())
    except ValueError:
        return False
    return True


def looks_like_header(rows: Sequence[Sequence[str]]) -> bool:
    """A first row of labels over columns of data: all filled, no numbers, and data below it."""
    if len(rows) < 2 or not rows[0] or any(not cell.strip() for cell in rows[0]):
        return False
    if any(numeric(cell) for cell in rows[0]):
        return False
    body = rows[1:51]
    return any(numeric(cell) for row in body for cell in row) or len({tuple(r) for r in body}) == len(body) > 0
