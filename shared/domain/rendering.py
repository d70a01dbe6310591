"""Blocks → Markdown for a model: a heading stays a heading, a table arrives as a table."""

import re
from collections.abc import Iterable

from shared.domain.document import Block, BlockKind
from shared.domain.transcription import time_span


def _inline(text: str) -> str:
    """One line of text that cannot open a block of its own: no line breaks, no raw HTML."""
    return " ".join(text.split()).replace("&", "&amp;").replace("<", "&lt;")


def _cell(text: str) -> str:
    # A pipe or a line break inside a cell would break the table's grid.
    return _inline(text).replace("\\", "\\\\").replace("|", "\\|")


def _text(text: str) -> str:
    """A paragraph: its lines kept, but none may start a fence, a heading, a quote or a list of its own."""
    lines = []
    for line in text.replace("&", "&amp;").replace("<", "&lt;").splitlines():
        stripped = line.lstrip()
        opens_a_block = stripped[:1] in ("#", ">", "-", "+", "*", "|", "`", "~", "=")
        lines.append("\\" + stripped if opens_a_block or stripped[:2].rstrip(".").isdigit() else line)
    return "\n".join(lines)


def render_table(rows: tuple[tuple[str, ...], ...], header_rows: int) -> str:
    if not rows:
        return ""
    width = max(len(row) for row in rows)
    padded = [tuple(row) + ("",) * (width - len(row)) for row in rows]
    # Markdown tables need exactly one header row; without a known header an empty one keeps data as data.
    header = padded[0] if header_rows else ("",) * width
    body = padded[1:] if header_rows else padded
    lines = ["| " + " | ".join(_cell(cell) for cell in header) + " |", "|" + " --- |" * width]
    lines.extend("| " + " | ".join(_cell(cell) for cell in row) + " |" for row in body)
    return "\n".join(lines)


def _heading(block: Block) -> str:
    return f"{'#' * min(max(block.level or 1, 1), 6)} {_inline(block.text)}"


def _list_item(block: Block) -> str:
    return f"{'  ' * (block.depth or 0)}{'1.' if block.ordered else '-'} {_inline(block.text)}"


def _table(block: Block) -> str:
    return render_table(block.table.rows, block.table.header_rows) if block.table else ""


def _code(block: Block) -> str:
    # Longer than any run of backticks inside, so the content can never close the fence.
    longest = max((len(run) for run in re.findall(r"`+", block.text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}\n{block.text}\n{fence}"


def _quote(block: Block) -> str:
    return "\n".join(f"> {line}" for line in _text(block.text).splitlines() or [""])


def _image(block: Block) -> str:
    alt = _inline(block.text).replace("[", "(").replace("]", ")")
    return f"[image{': ' + alt if alt else ''}]"


def _page_break(block: Block) -> str:
    return f"<!-- page {block.location.page} -->" if block.location.page else "---"


_RENDERERS = {
    BlockKind.HEADING: _heading,
    BlockKind.LIST_ITEM: _list_item,
    BlockKind.TABLE: _table,
    BlockKind.CODE: _code,
    BlockKind.QUOTE: _quote,
    BlockKind.IMAGE: _image,
    BlockKind.PAGE_BREAK: _page_break,
}


def _spoken(block: Block) -> str:
    """A recording's segment: when it is spoken, who speaks it (when known), what is said."""
    start, end = block.location.start_seconds or 0.0, block.location.end_seconds or 0.0
    speaker = f"{_inline(block.location.speaker)}: " if block.location.speaker else ""
    return f"{time_span(start, end)} {speaker}{_inline(block.text)}"


def render_block(block: Block) -> str:
    if block.location.start_seconds is not None and block.kind is BlockKind.PARAGRAPH:
        return _spoken(block)
    renderer = _RENDERERS.get(block.kind)
    return renderer(block) if renderer else _text(block.text)


def render_markdown(blocks: Iterable[Block]) -> str:
    """Consecutive list items stay one list; everything else is separated by a blank line."""
    parts: list[str] = []
    previous: BlockKind | None = None
    for block in blocks:
        rendered = render_block(block)
        if parts and not (previous is BlockKind.LIST_ITEM and block.kind is BlockKind.LIST_ITEM):
            parts.append("")
        parts.append(rendered)
        previous = block.kind
    return "\n".join(parts) + ("\n" if parts else "")
