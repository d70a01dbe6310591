"""Read a document in windows (seeds/000 "Read in windows"): at most 50 blocks or 24,000 characters,
never splitting a block, with the block to continue from. A character bound that cut a table would hand
a reader half of it, and the missing rows would be invisible."""

from pydantic import BaseModel, ConfigDict

from shared.domain.document import Block
from shared.domain.rendering import render_block

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
