"""Read a document in windows: at most 50 blocks or 24,000 characters,
never splitting a block, with the block to continue from. A character bound that cut a table would hand
a reader half of it, and the missing rows would be invisible."""

from pydantic import BaseModel, ConfigDict

from shared.domain.document import Block, BlockKind, Table
from shared.domain.rendering import render_block, render_table

MAX_WINDOW_BLOCKS = 50
MAX_WINDOW_CHARACTERS = 24_000


class Window(BaseModel):
    model_config = ConfigDict(frozen=True)

    blocks: tuple[Block, ...]
    start: int
    next_start: int | None  # None: the document ends here
    total_blocks: int


def window(blocks: tuple[Block, ...], start: int) -> Window:
    """The blocks from `start`, as many as fit. A single block larger than the character bound comes
    alone (whole), so reading always advances."""
    if not 0 <= start <= len(blocks):
        raise ValueError(f"start {start} is outside the document's {len(blocks)} blocks")
    taken: list[Block] = []
    characters = 0
    for block in blocks[start : start + MAX_WINDOW_BLOCKS]:
        # Measured as the reader receives it (Markdown, with a table's grid and padding), not as raw text.
        size = len(render_block(block)) + sum(len(heading) for heading in block.heading_path)
        if taken and characters + size > MAX_WINDOW_CHARACTERS:
            break
        taken.append(block)
        characters += size
    end = start + len(taken)
    return Window(
        blocks=tuple(taken), start=start, next_start=end if end < len(blocks) else None, total_blocks=len(blocks)
    )


class Part(BaseModel):
    """A piece of one block too large for a window: a table's header rows with the next rows that fit, or the
    next characters of any other block. `next_part` is the row or character to continue from (None: the block
    ends here)."""

    model_config = ConfigDict(frozen=True)

    markdown: str
    part: int
    next_part: int | None


def is_oversized(block: Block) -> bool:
    return len(render_block(block)) > MAX_WINDOW_CHARACTERS


def part_of(block: Block, part: int) -> Part:
    """The piece of `block` from `part` (a row of a table, a character of anything else) that fits a window; a
    table is cut between rows, never inside one, and its header rows come with every piece."""
    if block.kind is BlockKind.TABLE and block.table is not None:
        return _table_part(block, part)
    text = block.text
    if not 0 <= part < max(len(text), 1):
        raise ValueError(f"part {part} is outside the block's {len(text)} characters")
    end = min(len(text), part + MAX_WINDOW_CHARACTERS)
    if end < len(text):
        # At a word boundary when there is one near the bound, so no word is cut in two.
        space = text.rfind(" ", part + MAX_WINDOW_CHARACTERS // 2, end)
        end = space + 1 if space > 0 else end
    piece = block.model_copy(update={"text": text[part:end]})
    return Part(markdown=render_block(piece), part=part, next_part=end if end < len(text) else None)


def _table_part(block: Block, part: int) -> Part:
    assert block.table is not None
    rows, header_rows = block.table.rows, block.table.header_rows
    first = max(part, header_rows)
    if not header_rows <= first < max(len(rows), header_rows + 1):
        raise ValueError(f"part {part} is outside the table's {len(rows)} rows")
    width = max(len(row) for row in rows)
    # Measured line by line (a table's Markdown is one line per row), so a huge table costs one pass.
    size = len(render_table(tuple(rows[:header_rows]) or (("",) * width,), header_rows))
    end = first
    while end < len(rows):
        line = len(render_table(((*rows[end], *("",) * (width - len(rows[end]))),), 0).splitlines()[-1]) + 1
        if end > first and size + line > MAX_WINDOW_CHARACTERS:
            break
        size += line
        end += 1
    taken = (*rows[:header_rows], *rows[first:end])
    piece = block.model_copy(update={"table": Table(rows=taken, header_rows=header_rows)})
    return Part(markdown=render_block(piece), part=first, next_part=end if end < len(rows) else None)
