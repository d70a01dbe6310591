"""Does a citation point at text that says what its excerpt says? Checked against the extracted document."""

from shared.domain.chunking import block_text
from shared.domain.document import Block, ExtractedDocument, Location
from shared.domain.recognition import BoundingBox
from shared.domain.search import Citation, CitedRegion

# Boxes come back from JSON and unions: a block's edge may sit a rounding error outside its region's.
_EDGE = 1e-6


def _within(value: int | None, first: int, last: int | None) -> bool:
    return value is not None and first <= value <= (first if last is None else last)


def _covers(citation: Citation, where: Location) -> bool:
    """Does the citation's location include a block at `where`? The most specific field decides."""
    if citation.page is not None:
        return _within(where.page, citation.page, citation.page_end)
    if citation.sheet is not None or citation.slide is not None:
        return (where.sheet, where.slide) == (citation.sheet, citation.slide)
    if citation.table_index is not None:
        return where.table_index == citation.table_index
    if citation.paragraph_start is not None:
        return _within(where.paragraph_index, citation.paragraph_start, citation.paragraph_end)
    if citation.line_start is not None:
        last = citation.line_end or citation.line_start
        return (
            where.line_start is not None
            and where.line_start <= last
            and (where.line_end or where.line_start) >= citation.line_start
        )
    return True


def blocks_at(document: ExtractedDocument, citation: Citation) -> list[Block]:
    """The blocks a citation's location covers: its pages, sheet, slide, table, paragraphs or lines."""
    return [block for block in document.blocks if _covers(citation, block.location)]


def excerpt_is_at_location(document: ExtractedDocument, citation: Citation) -> bool:
    """True when every line of the excerpt appears in the text of the blocks at the cited location."""
    text = "\n".join(block_text(block) for block in blocks_at(document, citation))
    lines = [line.strip() for line in citation.excerpt.splitlines() if line.strip()]
    return bool(lines) and all(line in text for line in lines)


def _inside(inner: BoundingBox, outer: BoundingBox) -> bool:
    return (
        inner.left >= outer.left - _EDGE
        and inner.top >= outer.top - _EDGE
        and inner.right <= outer.right + _EDGE
        and inner.bottom <= outer.bottom + _EDGE
    )


def _holds(region: CitedRegion, where: Location) -> bool:
    """Is the block at `where` inside the region? The most specific field decides, as for a citation."""
    if region.page is not None:
        boxed = region.box is None or (where.box is not None and _inside(where.box, region.box))
        return where.page == region.page and boxed
    if region.sheet is not None or region.slide is not None:
        same_shape = region.shape is None or where.shape == region.shape
        return (where.sheet, where.slide) == (region.sheet, region.slide) and same_shape
    if region.table_index is not None:
        return where.table_index == region.table_index
    if region.paragraph_start is not None:
        return _within(where.paragraph_index, region.paragraph_start, region.paragraph_end)
    if region.line_start is not None:
        last = region.line_end or region.line_start
        return where.line_start is not None and region.line_start <= where.line_start <= last
    return True


def regions_are_blocks(document: ExtractedDocument, citation: Citation) -> bool:
    """True when each cited region holds at least one block of the document: on its page and inside its box,
    on its sheet or slide (and shape), or over its table, paragraphs or lines."""
    return all(any(_holds(region, block.location) for block in document.blocks) for region in citation.regions)
