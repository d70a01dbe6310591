from hypothesis import given
from hypothesis import strategies as st

from shared.domain.document import Block, BlockKind, Table
from shared.domain.reading import MAX_WINDOW_BLOCKS, MAX_WINDOW_CHARACTERS, window


def paragraph(size: int) -> Block:
    return Block(kind=BlockKind.PARAGRAPH, text="x" * size)


def test_a_window_holds_at_most_fifty_blocks() -> None:
    blocks = tuple(paragraph(10) for _ in range(120))
    first = window(blocks, 0)
    assert (len(first.blocks), first.next_start) == (MAX_WINDOW_BLOCKS, 50)
    last = window(blocks, 100)
    assert (len(last.blocks), last.next_start, last.total_blocks) == (20, None, 120)


def test_a_window_stops_before_a_block_that_would_cross_the_character_bound() -> None:
    table = Block(kind=BlockKind.TABLE, table=Table(rows=(("a" * 9_000, "b" * 9_000),)))
    blocks = (paragraph(10_000), table, paragraph(5))
    first = window(blocks, 0)
    assert [b.kind for b in first.blocks] == [BlockKind.PARAGRAPH]  # the table is not cut in half
    second = window(blocks, first.next_start or 0)
    assert [b.kind for b in second.blocks] == [BlockKind.TABLE, BlockKind.PARAGRAPH]


def test_a_block_larger_than_the_bound_comes_alone_and_whole() -> None:
    blocks = (paragraph(MAX_WINDOW_CHARACTERS * 3), paragraph(1))
    first = window(blocks, 0)
    assert (len(first.blocks), first.blocks[0].size, first.next_start) == (1, MAX_WINDOW_CHARACTERS * 3, 1)


@given(st.lists(st.integers(min_value=0, max_value=30_000), max_size=200))
def test_reading_window_after_window_yields_every_block_once_in_order(sizes: list[int]) -> None:
    blocks = tuple(paragraph(size) for size in sizes)
    seen: list[Block] = []
    start: int | None = 0
    while start is not None:
        current = window(blocks, start)
        assert current.blocks or not blocks
        assert len(current.blocks) <= MAX_WINDOW_BLOCKS
        assert len(current.blocks) == 1 or sum(b.size for b in current.blocks) <= MAX_WINDOW_CHARACTERS
        seen.extend(current.blocks)
        start = current.next_start
    assert tuple(seen) == blocks
