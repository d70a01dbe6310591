"""Structural chunking: within the token budget, under the heading path, by whole blocks, located."""

import itertools
import math
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shared.domain.chunking import ChunkingStrategy, StructuralChunker, block_text
from shared.domain.document import (
    Block,
    BlockCollector,
    BlockKind,
    ExtractedDocument,
    ExtractionLimits,
    Location,
    Table,
)
from shared.domain.knowledge import MAX_CHUNK_REGIONS, ChunkDraft
from shared.domain.recognition import BoundingBox

Counter = Callable[[str], int]


def words(text: str) -> int:
    return len(text.split())


def quarter_characters(text: str) -> int:
    return math.ceil(len(text) / 4)


def superadditive(text: str) -> int:
    """Words, plus a penalty growing with the square: a chunk costs more than its blocks counted alone."""
    count = len(text.split())
    return count + count * count // 20


class CountingWords:
    """Words, remembering how often it was asked."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, text: str) -> int:
        self.calls += 1
        return len(text.split())


def document(*blocks: Block) -> ExtractedDocument:
    """The blocks as an extractor hands them over: heading paths set as the headings go by."""
    collector = BlockCollector(ExtractionLimits())
    for block in blocks:
        collector.add(block)
    return collector.document("text/plain")


def heading(text: str, level: int = 1, **location: object) -> Block:
    return Block(kind=BlockKind.HEADING, text=text, level=level, location=Location.model_validate(location))


def paragraph(text: str, **location: object) -> Block:
    return Block(kind=BlockKind.PARAGRAPH, text=text, location=Location.model_validate(location))


def table(*rows: tuple[str, ...], header_rows: int = 1, **location: object) -> Block:
    return Block(
        kind=BlockKind.TABLE,
        table=Table(rows=rows, header_rows=header_rows),
        location=Location.model_validate(location),
    )


def numbered(count: int, prefix: str = "w") -> str:
    return " ".join(f"{prefix}{i}" for i in range(count))


def chunk(doc: ExtractedDocument, max_tokens: int, count: Counter = words, **options: int | float) -> list[ChunkDraft]:
    return StructuralChunker(count, max_tokens, **options).chunk(doc)  # type: ignore[arg-type]


def bodies(chunks: list[ChunkDraft]) -> list[str]:
    return [c.text for c in chunks]


# block_text


def test_a_table_renders_as_rows_of_cells_joined_by_pipes_one_row_a_line() -> None:
    # Given a table of a header and two rows
    block = table(("Region", "Revenue"), ("North", "10"), ("South", "12"))
    # When it is rendered, then each row is a line of its cells
    assert block_text(block) == "Region | Revenue\nNorth | 10\nSouth | 12"


def test_a_line_break_inside_a_cell_keeps_its_row_on_one_line() -> None:
    # Given a cell written over two lines
    block = table(("Note", "Value"), ("first\nsecond", "1"))
    # When it is rendered, then the row is still one line
    assert block_text(block).splitlines() == ["Note | Value", "first second | 1"]


def test_a_text_block_renders_as_its_text_without_markers() -> None:
    # Given a numbered list item
    block = Block(kind=BlockKind.LIST_ITEM, text="Preheat the oven", ordered=True, depth=0)
    # When it is rendered, then it is its text, with no invented number or bullet
    assert block_text(block) == "Preheat the oven"


# Size


def test_every_chunk_fits_the_budget_and_reports_the_tokens_of_its_content() -> None:
    # Given a section of many paragraphs
    doc = document(heading("Guide"), *(paragraph(numbered(7, f"p{i}x")) for i in range(40)))
    # When it is chunked within 30 tokens
    chunks = chunk(doc, 30)
    # Then every chunk's content (heading path and body) is within 30 and its token count is that content's
    assert len(chunks) > 1
    assert all(c.token_count == words(c.content) <= 30 for c in chunks)


def test_a_chunk_that_counts_over_the_budget_once_whole_gives_its_last_blocks_to_the_next() -> None:
    # Given a tokenizer for which a text costs more than its parts counted alone
    doc = document(*(paragraph(numbered(5, f"p{i}x")) for i in range(10)))
    # When the paragraphs are packed by their own counts into 20 tokens
    chunks = chunk(doc, 20, superadditive, overlap_blocks=0)
    # Then each chunk still fits once counted whole, and no paragraph is lost or repeated
    assert all(c.token_count == superadditive(c.content) <= 20 for c in chunks)
    assert "\n\n".join(bodies(chunks)) == "\n\n".join(numbered(5, f"p{i}x") for i in range(10))


def test_a_single_block_that_counts_over_the_budget_once_whole_is_cut_smaller() -> None:
    # Given a paragraph whose sentences fit 20 tokens by their own counts, but not once counted together
    text = " ".join(f"s{i}a s{i}b s{i}c." for i in range(6))
    # When it is chunked within 20 tokens
    chunks = chunk(document(paragraph(text)), 20, superadditive)
    # Then it is cut between sentences until each piece fits
    assert all(c.token_count == superadditive(c.content) <= 20 for c in chunks)
    assert " ".join(bodies(chunks)) == text


def test_each_block_is_counted_once_while_packing_and_each_chunk_once_when_cut() -> None:
    # Given a section of 30 short paragraphs and a tokenizer that counts its calls
    doc = document(heading("Log"), *(paragraph(numbered(3, f"p{i}x")) for i in range(30)))
    count = CountingWords()
    chunker = StructuralChunker(count, 20, overlap_blocks=0)
    calls_to_set_up = count.calls
    # When it is chunked
    chunks = chunker.chunk(doc)
    # Then the tokenizer was asked once for the heading path, once per block and once per chunk
    assert count.calls - calls_to_set_up == 1 + 30 + len(chunks)


# Headings


def test_the_heading_path_is_prefixed_to_every_chunk() -> None:
    # Given a paragraph under a heading under a heading
    doc = document(heading("Quarterly review"), heading("By region", level=2), paragraph("Revenue rose 9%."))
    # When it is chunked
    (only,) = chunk(doc, 100)
    # Then the chunk's content is its heading path, then its body
    assert only.heading_path == ("Quarterly review", "By region")
    assert only.content == "Quarterly review > By region\n\nRevenue rose 9%."


def test_a_heading_starts_a_new_chunk_even_when_there_is_room() -> None:
    # Given two short sections
    doc = document(heading("One"), paragraph("first"), heading("Two"), paragraph("second"))
    # When they are chunked with room for both
    chunks = chunk(doc, 100)
    # Then each section is its own chunk
    assert [(c.heading_path, c.text) for c in chunks] == [(("One",), "first"), (("Two",), "second")]


def test_a_heading_with_nothing_under_it_makes_no_chunk() -> None:
    # Given a heading followed by another heading, and a heading that ends the document
    doc = document(heading("Part"), heading("Chapter", level=2), paragraph("text"), heading("Appendix"))
    # When it is chunked
    chunks = chunk(doc, 100)
    # Then only the paragraph makes a chunk, with both headings in its path
    assert [(c.heading_path, c.text) for c in chunks] == [(("Part", "Chapter"), "text")]


def test_a_heading_is_never_in_a_body() -> None:
    # Given headings between paragraphs
    doc = document(paragraph("intro"), heading("Methods"), paragraph("we measured"), heading("Results"))
    # When it is chunked
    chunks = chunk(doc, 100)
    # Then no body holds a heading's text
    assert bodies(chunks) == ["intro", "we measured"]


def test_blocks_before_the_first_heading_have_no_heading_path_and_no_parent() -> None:
    # Given a paragraph before any heading
    doc = document(paragraph("preamble"), heading("Body"), paragraph("text"))
    # When it is chunked
    first = chunk(doc, 100)[0]
    # Then its chunk has no heading path and no parent
    assert (first.text, first.heading_path, first.parent) == ("preamble", (), None)


def test_the_parent_is_the_index_of_the_section_heading() -> None:
    # Given a section heading at index 2
    doc = document(heading("Top"), paragraph("a"), heading("Sub", level=2), paragraph("b"))
    # When it is chunked
    chunks = chunk(doc, 100)
    # Then each chunk names the index of its own section's heading
    assert [(c.text, c.parent) for c in chunks] == [("a", 0), ("b", 2)]


def test_a_heading_path_over_half_the_budget_loses_its_outermost_headings() -> None:
    # Given a paragraph under six levels of three-word headings
    headings = [heading(f"level {level} heading", level=level) for level in range(1, 7)]
    doc = document(*headings, paragraph(numbered(4)))
    # When it is chunked within 20 tokens (the path may take 10)
    (only,) = chunk(doc, 20)
    # Then the outermost headings are dropped and the innermost kept
    assert only.heading_path == ("level 5 heading", "level 6 heading")
    assert only.token_count <= 20


def test_an_innermost_heading_over_half_the_budget_is_cut_short() -> None:
    # Given a paragraph under one heading of forty words
    doc = document(heading(numbered(40, "h")), paragraph(numbered(4)))
    # When it is chunked within 20 tokens
    (only,) = chunk(doc, 20)
    # Then the heading is cut to its first ten words, and the chunk fits
    assert only.heading_path == (numbered(10, "h"),)
    assert only.text == numbered(4)
    assert only.token_count <= 20


# Packing


def test_blocks_are_packed_greedily_in_order() -> None:
    # Given five paragraphs of four words
    texts = [numbered(4, f"p{i}x") for i in range(5)]
    # When they are chunked within 10 tokens, without overlap
    chunks = chunk(document(*(paragraph(t) for t in texts)), 10, overlap_blocks=0)
    # Then each chunk takes as many as fit, in order
    assert bodies(chunks) == [f"{texts[0]}\n\n{texts[1]}", f"{texts[2]}\n\n{texts[3]}", texts[4]]


def test_empty_blocks_and_page_breaks_are_skipped() -> None:
    # Given a paragraph, a blank paragraph, a page break, an image without text and an empty table
    doc = document(
        paragraph("before"),
        paragraph("   "),
        Block(kind=BlockKind.PAGE_BREAK, location=Location(page=2)),
        Block(kind=BlockKind.IMAGE, image_ref="media/1.png"),
        table(("", ""), header_rows=0),
        paragraph("after"),
    )
    # When it is chunked
    (only,) = chunk(doc, 100)
    # Then only the two paragraphs are in the body
    assert only.text == "before\n\nafter"


def test_an_image_with_alt_text_is_chunked_as_text() -> None:
    # Given an image with alt text
    doc = document(Block(kind=BlockKind.IMAGE, text="A map of the sales regions", image_ref="media/1.png"))
    # When it is chunked
    (only,) = chunk(doc, 100)
    # Then its text is the chunk's body
    assert (only.text, only.block_kind) == ("A map of the sales regions", BlockKind.IMAGE)


# Overlap


def test_the_next_chunk_starts_with_the_last_block_of_the_previous() -> None:
    # Given paragraphs of 8, 4 and 8 words
    doc = document(paragraph(numbered(8, "a")), paragraph(numbered(4, "b")), paragraph(numbered(8, "c")))
    # When they are chunked within 16 tokens (overlap up to 4)
    chunks = chunk(doc, 16)
    # Then the second chunk repeats the 4-word paragraph, and claims it
    assert bodies(chunks) == [f"{numbered(8, 'a')}\n\n{numbered(4, 'b')}", f"{numbered(4, 'b')}\n\n{numbered(8, 'c')}"]
    assert (chunks[1].block_start, chunks[1].block_end) == (1, 2)


def test_no_overlap_when_the_last_block_is_over_the_overlap_fraction() -> None:
    # Given paragraphs of 8, 5 and 8 words
    doc = document(paragraph(numbered(8, "a")), paragraph(numbered(5, "b")), paragraph(numbered(8, "c")))
    # When they are chunked within 16 tokens (overlap up to 4)
    chunks = chunk(doc, 16)
    # Then the second chunk starts with its own paragraph
    assert chunks[1].text == numbered(8, "c")


def test_overlap_blocks_sets_how_many_blocks_are_repeated() -> None:
    # Given paragraphs of 6, 2, 2 and 6 words
    texts = [numbered(6, "a"), numbered(2, "b"), numbered(2, "c"), numbered(6, "d")]
    # When they are chunked within 12 tokens, repeating up to two blocks in half the budget
    chunks = chunk(document(*(paragraph(t) for t in texts)), 12, overlap_blocks=2, max_overlap_fraction=0.5)
    # Then the second chunk starts with the last two blocks of the first
    assert chunks[1].text == "\n\n".join(texts[1:])


def test_no_overlap_when_overlap_blocks_is_zero() -> None:
    # Given paragraphs of 8, 4 and 8 words
    doc = document(paragraph(numbered(8, "a")), paragraph(numbered(4, "b")), paragraph(numbered(8, "c")))
    # When they are chunked without overlap
    chunks = chunk(doc, 16, overlap_blocks=0)
    # Then the second chunk starts with its own paragraph
    assert chunks[1].text == numbered(8, "c")


def test_overlap_never_crosses_a_section() -> None:
    # Given two sections of short paragraphs
    doc = document(heading("One"), paragraph(numbered(3, "a")), heading("Two"), paragraph(numbered(3, "b")))
    # When they are chunked
    chunks = chunk(doc, 100)
    # Then the second section's chunk holds only its own paragraph
    assert chunks[1].text == numbered(3, "b")


def test_a_table_is_never_repeated_as_overlap() -> None:
    # Given a paragraph, a small table and a paragraph that would have room for it
    small = table(("k", "v"), ("a", "1"), header_rows=0)
    doc = document(paragraph(numbered(10, "a")), small, paragraph(numbered(10, "c")))
    # When they are chunked
    chunks = chunk(doc, 100, max_overlap_fraction=1.0)
    # Then the paragraph after the table does not start with the table
    assert chunks[2].text == numbered(10, "c")


def test_split_pieces_of_a_block_are_not_repeated_as_overlap() -> None:
    # Given a paragraph too large for a chunk whose last sentence is short, then a paragraph
    doc = document(paragraph(f"{numbered(9, 'a')}. {numbered(2, 'b')}."), paragraph(numbered(9, "c")))
    # When they are chunked within 10 tokens with a generous overlap
    chunks = chunk(doc, 10, max_overlap_fraction=1.0)
    # Then no sentence is repeated: overlap is by whole block only
    assert bodies(chunks) == [f"{numbered(9, 'a')}.", f"{numbered(2, 'b')}.", numbered(9, "c")]


# Tables


def test_a_table_that_fits_is_one_chunk_of_its_own() -> None:
    # Given a small table between paragraphs
    small = table(("Region", "Revenue"), ("North", "10"), sheet="Q1", cell_range="A1:B2")
    doc = document(paragraph("before"), small, paragraph("after"))
    # When they are chunked with room for all three
    chunks = chunk(doc, 100)
    # Then the table is a chunk alone, whole, located as the table
    assert bodies(chunks) == ["before", "Region | Revenue\nNorth | 10", "after"]
    assert chunks[1].block_kind is BlockKind.TABLE
    assert (chunks[1].location.sheet, chunks[1].location.cell_range) == ("Q1", "A1:B2")


def test_a_large_table_is_split_by_rows_with_its_header_on_every_piece() -> None:
    # Given a table of a header and 12 rows of three words
    rows = [(f"r{i}a", f"r{i}b") for i in range(12)]
    doc = document(table(("Name", "Count"), *rows))
    # When it is chunked within 13 tokens (a header and three rows)
    chunks = chunk(doc, 13)
    # Then every piece starts with the header and the rows follow in order, each once
    assert all(c.text.startswith("Name | Count\n") for c in chunks)
    assert [line for c in chunks for line in c.text.splitlines()[1:]] == [f"r{i}a | r{i}b" for i in range(12)]
    assert all(c.block_kind is BlockKind.TABLE and c.token_count <= 13 for c in chunks)


def test_each_table_piece_has_the_cell_range_of_its_own_data_rows() -> None:
    # Given a sheet's table over $B$3:$F$200: a header, then 198 data rows
    rows = [tuple(f"r{i}c{j}" for j in range(5)) for i in range(198)]
    doc = document(table(("A", "B", "C", "D", "E"), *rows, sheet="Data", cell_range="$B$3:$F$200"))
    # When it is chunked in pieces of about 20 rows
    chunks = chunk(doc, 200)
    # Then the pieces' ranges are consecutive, each exactly as many rows as it holds, from B3 to F200
    assert len(chunks) > 2
    expected_top = 3
    for c in chunks:
        data_rows = len(c.text.splitlines()) - 1
        assert c.location.cell_range == f"B{expected_top}:F{expected_top + data_rows - 1}"
        assert c.location.sheet == "Data"
        expected_top += data_rows
    assert expected_top == 201


def test_a_cell_range_with_skipped_rows_gives_each_piece_a_range_that_holds_its_rows() -> None:
    # Given a table of 4 data rows over A2:B9 (blank rows in between were skipped by the parser)
    doc = document(table(("Key", "Value"), *((f"k{i}", f"v{i}") for i in range(4)), cell_range="A2:B9"))
    # When it is chunked one row a piece
    chunks = chunk(doc, 6)
    # Then each piece's range is the narrowest that surely holds its row
    assert [c.location.cell_range for c in chunks] == ["A2:B6", "A3:B7", "A4:B8", "A5:B9"]


def test_table_pieces_without_a_cell_range_keep_the_table_location() -> None:
    # Given a table on page 3 of a PDF, with its box
    box = BoundingBox(left=0.1, top=0.2, width=0.8, height=0.5)
    doc = document(table(("Name", "Count"), *((f"r{i}a", f"r{i}b") for i in range(12)), page=3, box=box))
    # When it is split
    chunks = chunk(doc, 13)
    # Then every piece is located as the whole table
    assert len(chunks) > 1
    assert all((c.location.page_start, c.location.page_end, c.location.box) == (3, 3, box) for c in chunks)


def test_a_row_too_large_for_a_chunk_is_cut_between_words_under_the_header() -> None:
    # Given a table over A2:B4 whose middle row has a cell of 30 words
    rows = [("a", "short"), ("row", numbered(30, "n")), ("c", "short")]
    doc = document(table(("Name", "Notes"), *rows, cell_range="A2:B4"))
    # When it is chunked within 13 tokens
    chunks = chunk(doc, 13)
    # Then the long row is cut into runs of whole words, each under the header and located at the row
    assert all(c.text.startswith("Name | Notes\n") and c.token_count <= 13 for c in chunks)
    assert [c.location.cell_range for c in chunks] == ["A2:B2", "A3:B3", "A3:B3", "A3:B3", "A3:B3", "A4:B4"]
    fragments = [c.text.split("\n", 1)[1] for c in chunks[1:-1]]
    assert " ".join(fragments) == f"row | {numbered(30, 'n')}"


def test_a_header_too_large_to_repeat_goes_once_and_the_rows_go_without_it() -> None:
    # Given a table whose header row is 12 words
    header = tuple(f"h{i}" for i in range(12))
    rows = [tuple(f"r{i}c{j}" for j in range(12)) for i in range(3)]
    doc = document(table(header, *rows))
    # When it is chunked within 40 tokens (a row and its pipes are 23)
    chunks = chunk(doc, 40)
    # Then the header is a piece of its own and each row a piece without it
    assert bodies(chunks) == [" | ".join(header), *(" | ".join(row) for row in rows)]


# Splitting text


def test_a_paragraph_over_budget_is_split_between_sentences() -> None:
    # Given a paragraph of four sentences of three words
    text = "One two three. Four five six! Seven eight nine? Ten eleven twelve."
    # When it is chunked within 7 tokens
    chunks = chunk(document(paragraph(text)), 7)
    # Then each chunk is a run of whole sentences, and together they are the paragraph
    assert bodies(chunks) == ["One two three. Four five six!", "Seven eight nine? Ten eleven twelve."]


def test_an_ellipsis_ends_a_sentence() -> None:
    # Given a paragraph with an ellipsis before a capital
    text = "Go now! Why not? Well… Maybe so. Done."
    # When it is chunked within 2 tokens
    chunks = chunk(document(paragraph(text)), 2)
    # Then the ellipsis ends a sentence like ! and ?
    assert bodies(chunks) == ["Go now!", "Why not?", "Well…", "Maybe so.", "Done."]


@pytest.mark.parametrize(
    "sentence",
    [
        "See Fig. 3 for all the details.",
        "Ask Dr. Who about it right now.",
        "Use tools, e.g. hammers, for this job.",
        "It holds, i.e. never breaks, they said.",
        "Call J. Smith about the new plan.",
        "Pi is 3.14 and e is 2.71.",
    ],
)
def test_abbreviations_initials_and_decimals_do_not_end_a_sentence(sentence: str) -> None:
    # Given a one-word sentence, then a seven-word sentence with a full stop inside it
    text = f"Short. {sentence}"
    # When it is chunked within 7 tokens (a false sentence end would let its start join "Short.")
    chunks = chunk(document(paragraph(text)), 7)
    # Then the second sentence is kept whole
    assert bodies(chunks) == ["Short.", sentence]


def test_a_sentence_over_budget_is_split_between_words() -> None:
    # Given one sentence of 25 words
    text = numbered(25) + "."
    # When it is chunked within 10 tokens
    chunks = chunk(document(paragraph(text)), 10)
    # Then it is cut into runs of whole words
    assert bodies(chunks) == [numbered(10), " ".join(f"w{i}" for i in range(10, 20)), "w20 w21 w22 w23 w24."]


def test_a_word_over_budget_is_split_by_characters() -> None:
    # Given a 10 KB run with no spaces, and a tokenizer that counts characters
    run = "QUJD" * 2_560
    # When it is chunked within 1,000 tokens
    chunks = chunk(document(paragraph(f"Data: {run} end.")), 1_000, len)
    # Then it is cut by characters into pieces that fit, losing nothing
    assert all(c.token_count <= 1_000 for c in chunks)
    assert "".join(bodies(chunks)).replace(" ", "") == f"Data:{run}end."


def test_pieces_of_a_split_block_keep_its_location() -> None:
    # Given a long paragraph on page 4 with a box and lines 10 to 12
    box = BoundingBox(left=0.1, top=0.1, width=0.5, height=0.2)
    text = " ".join(f"s{i}a s{i}b." for i in range(20))
    doc = document(paragraph(text, page=4, box=box, line_start=10, line_end=12))
    # When it is split
    chunks = chunk(doc, 10)
    # Then every piece is located as the paragraph
    assert len(chunks) > 1
    assert {(c.location.page_start, c.location.box, c.location.line_start, c.location.line_end) for c in chunks} == {
        (4, box, 10, 12)
    }


def test_a_word_that_cannot_fit_under_its_headings_goes_under_fewer() -> None:
    # Given a tokenizer that counts the square of the words, and a word under a heading that takes half the budget
    doc = document(heading("a b"), paragraph("x"))
    # When it is chunked within 8 tokens (the heading alone is 4, with the word 9)
    (only,) = chunk(doc, 8, lambda text: len(text.split()) ** 2)
    # Then the word still makes a chunk that fits, without the heading
    assert (only.heading_path, only.text, only.token_count) == ((), "x", 1)


def test_a_budget_too_small_for_one_character_is_refused() -> None:
    # Given a tokenizer for which any text costs 5 tokens
    chunker = StructuralChunker(lambda _: 5, 4)
    # When a document is chunked within 4, then it is refused rather than looping or overshooting
    with pytest.raises(ValueError, match="max_tokens=4"):
        chunker.chunk(document(paragraph("ab")))


# Location


def test_a_chunk_never_crosses_a_page_and_each_is_boxed_on_its_own() -> None:
    # Given a paragraph that runs from the foot of page 2 onto page 3, each part boxed on its page
    foot = BoundingBox(left=0.1, top=0.85, width=0.8, height=0.1)
    head = BoundingBox(left=0.1, top=0.05, width=0.8, height=0.1)
    doc = document(paragraph("end of two", page=2, box=foot), paragraph("start of three", page=3, box=head))
    # When it is chunked with room for both and a generous overlap
    chunks = chunk(doc, 100, max_overlap_fraction=1.0)
    # Then each page has its own chunk, boxed there, and no page-2 text is repeated on page 3
    assert bodies(chunks) == ["end of two", "start of three"]
    assert [(c.location.page_start, c.location.page_end, c.location.box) for c in chunks] == [
        (2, 2, foot),
        (3, 3, head),
    ]


def test_blocks_on_one_page_give_the_union_of_their_boxes() -> None:
    # Given two paragraphs on page 1, one above the other
    upper = BoundingBox(left=0.1, top=0.1, width=0.4, height=0.1)
    lower = BoundingBox(left=0.2, top=0.3, width=0.6, height=0.2)
    doc = document(paragraph("upper", page=1, box=upper), paragraph("lower", page=1, box=lower))
    # When they make one chunk
    (only,) = chunk(doc, 100)
    # Then its box covers both
    assert only.location.box is not None
    assert only.location.box.model_dump() == pytest.approx({"left": 0.1, "top": 0.1, "width": 0.7, "height": 0.4})


def test_no_box_when_a_block_has_none() -> None:
    # Given two paragraphs on page 1, only one with a box
    box = BoundingBox(left=0.1, top=0.1, width=0.4, height=0.1)
    doc = document(paragraph("boxed", page=1, box=box), paragraph("unboxed", page=1))
    # When they make one chunk
    (only,) = chunk(doc, 100)
    # Then it has no box
    assert (only.location.page_start, only.location.box) == (1, None)


@pytest.mark.parametrize(("first", "second"), [({"slide": 1}, {"slide": 2}), ({"sheet": "A"}, {"sheet": "B"})])
def test_a_new_chunk_starts_where_the_slide_or_sheet_changes(
    first: dict[str, object], second: dict[str, object]
) -> None:
    # Given short paragraphs on two slides (or sheets)
    doc = document(paragraph("one", **first), paragraph("two", **first), paragraph("three", **second))
    # When they are chunked with room for all and a generous overlap
    chunks = chunk(doc, 100, max_overlap_fraction=1.0)
    # Then each slide (or sheet) has its own chunk, with no overlap between them
    assert bodies(chunks) == ["one\n\ntwo", "three"]
    assert [(c.location.slide, c.location.sheet) for c in chunks] == [
        (first.get("slide"), first.get("sheet")),
        (second.get("slide"), second.get("sheet")),
    ]


def test_each_block_of_a_chunk_is_a_region_with_its_box_and_its_part_of_the_body() -> None:
    # Given three paragraphs on page 4, one above the other, each boxed
    boxes = [BoundingBox(left=0.1, top=0.1 + 0.2 * i, width=0.8, height=0.1) for i in range(3)]
    texts = ["first paragraph", "second one", "third and last"]
    doc = document(*(paragraph(text, page=4, box=box) for text, box in zip(texts, boxes, strict=True)))
    # When they make one chunk
    (only,) = chunk(doc, 100)
    # Then it has a region per block: its page, its box, and the span of the body that is its text
    assert [(r.page, r.box) for r in only.location.regions] == [(4, box) for box in boxes]
    assert [only.text[r.start : r.end] for r in only.location.regions] == texts


def test_the_regions_of_200_one_line_blocks_are_merged_into_a_bounded_few_that_cover_them() -> None:
    # Given 200 one-line paragraphs down page 1, each boxed
    lines = [f"line{i}" for i in range(200)]
    doc = document(
        *(
            paragraph(text, page=1, box=BoundingBox(left=0.1, top=i / 250, width=0.5, height=0.004))
            for i, text in enumerate(lines)
        )
    )
    # When they make one chunk
    (only,) = chunk(doc, 1000)
    regions = only.location.regions
    # Then it carries at most MAX_CHUNK_REGIONS regions, each a run of adjacent lines boxed together
    assert 1 < len(regions) <= MAX_CHUNK_REGIONS
    assert "\n\n".join(only.text[r.start : r.end] for r in regions) == only.text
    for region in regions:
        run = only.text[region.start : region.end].split("\n\n")
        first, last = lines.index(run[0]), lines.index(run[-1])
        assert run == lines[first : last + 1]
        assert region.page == 1 and region.box is not None
        assert region.box.top == pytest.approx(first / 250)
        assert region.box.bottom == pytest.approx(last / 250 + 0.004)


def test_a_table_split_by_rows_has_one_region_per_chunk_naming_its_rows() -> None:
    # Given a table of 6 data rows over A1:B7 of sheet "Data"
    doc = document(table(("Key", "Value"), *((f"k{i}", f"v{i}") for i in range(6)), sheet="Data", cell_range="A1:B7"))
    # When it is split by rows
    chunks = chunk(doc, 9)
    # Then each piece has one region: its sheet and its rows' cells, quoting the whole piece
    assert len(chunks) > 1
    for c in chunks:
        (region,) = c.location.regions
        assert (region.sheet, region.cell_range) == ("Data", c.location.cell_range)
        assert (region.start, region.end) == (0, len(c.text))


@pytest.mark.parametrize(
    ("places", "expected"),
    [
        (
            [{"line_start": 1, "line_end": 2}, {"line_start": 4, "line_end": 6}],
            [{"line_start": 1, "line_end": 2}, {"line_start": 4, "line_end": 6}],
        ),
        (
            [{"paragraph_index": 3}, {"paragraph_index": 4}],
            [{"paragraph_start": 3, "paragraph_end": 3}, {"paragraph_start": 4, "paragraph_end": 4}],
        ),
        (
            [{"slide": 2, "shape": "Title 1"}, {"slide": 2, "shape": "Body 2"}],
            [{"slide": 2, "shape": "Title 1"}, {"slide": 2, "shape": "Body 2"}],
        ),
    ],
)
def test_regions_name_each_blocks_place_in_formats_without_pages(
    places: list[dict[str, object]], expected: list[dict[str, object]]
) -> None:
    # Given two paragraphs placed by lines (text), paragraph index (DOCX) or slide and shape (PPTX)
    doc = document(paragraph("alpha", **places[0]), paragraph("beta", **places[1]))
    # When they make one chunk
    (only,) = chunk(doc, 100)
    # Then each is its own region, named in its format's terms
    regions = [r.model_dump(exclude_none=True, exclude={"start", "end"}) for r in only.location.regions]
    assert regions == expected


def test_a_chunks_line_span_runs_from_its_first_to_its_last_line() -> None:
    # Given paragraphs over lines 3-4 and 6-9
    doc = document(paragraph("a", line_start=3, line_end=4), paragraph("b", line_start=6, line_end=9))
    # When they make one chunk
    (only,) = chunk(doc, 100)
    # Then it spans lines 3 to 9
    assert (only.location.line_start, only.location.line_end) == (3, 9)


def test_block_start_and_end_are_indices_into_the_document() -> None:
    # Given a heading, two paragraphs, a page break and a paragraph
    doc = document(
        heading("H"), paragraph("a"), paragraph("b"), Block(kind=BlockKind.PAGE_BREAK), paragraph(numbered(10))
    )
    # When they are chunked within 11 tokens
    chunks = chunk(doc, 11, overlap_blocks=0)
    # Then each chunk names its first and last block by index in the document
    assert [(c.block_start, c.block_end) for c in chunks] == [(1, 2), (4, 4)]


def test_the_block_kind_is_that_of_the_first_block() -> None:
    # Given a list item, then a paragraph
    item = Block(kind=BlockKind.LIST_ITEM, text="first item", depth=0, ordered=False)
    doc = document(item, paragraph("after the list"))
    # When they make one chunk
    (only,) = chunk(doc, 100)
    # Then its kind is the list item's
    assert only.block_kind is BlockKind.LIST_ITEM


def test_ordinals_count_up_in_document_order() -> None:
    # Given a document of several sections and a table
    doc = document(
        heading("A"),
        paragraph(numbered(8)),
        paragraph(numbered(8)),
        table(("k",), ("v",)),
        heading("B"),
        paragraph("x"),
    )
    # When it is chunked
    chunks = chunk(doc, 12)
    # Then the ordinals are 0, 1, 2, … in order
    assert [c.ordinal for c in chunks] == list(range(len(chunks)))
    assert [c.block_start for c in chunks] == sorted(c.block_start for c in chunks)


# Body


def test_the_body_is_the_blocks_text_joined_by_blank_lines_with_nothing_invented() -> None:
    # Given an ordered list item, a quote and a code block
    doc = document(
        Block(kind=BlockKind.LIST_ITEM, text="Mix the flour", ordered=True, depth=1),
        Block(kind=BlockKind.QUOTE, text="Never rush"),
        Block(kind=BlockKind.CODE, text="    bake(minutes=40)"),
    )
    # When they make one chunk
    (only,) = chunk(doc, 100)
    # Then the body is their texts joined by blank lines: no numbers, bullets, quote marks or fences
    assert only.text == "Mix the flour\n\nNever rush\n\n    bake(minutes=40)"


# Determinism and bounds


def test_the_same_document_gives_the_same_chunks() -> None:
    # Given a document with sections, overlap, split paragraphs and a split table
    doc = document(
        heading("A"),
        *(paragraph(f"{numbered(4, f's{i}x')}. {numbered(3, f't{i}x')}.") for i in range(10)),
        table(("k", "v"), *((f"k{i}", f"v{i}") for i in range(30))),
    )
    # When it is chunked twice, then the chunks are the same
    assert chunk(doc, 12) == chunk(doc, 12)


def test_an_empty_document_has_no_chunks() -> None:
    # Given a chunking strategy and a document of no blocks
    strategy: ChunkingStrategy = StructuralChunker(words, 100)
    # When it is chunked, then there are no chunks
    assert strategy.chunk(ExtractedDocument(media_type="text/plain", blocks=())) == []


def test_a_large_document_is_chunked_with_work_linear_in_its_size() -> None:
    # Given 20,000 paragraphs and a table of 5,000 rows
    paragraphs = [
        Block(kind=BlockKind.PARAGRAPH, text=f"Paragraph {i} says something short.", heading_path=("Big",))
        for i in range(20_000)
    ]
    big_table = table(("Id", "Name", "Value"), *((str(i), f"name{i}", f"{i}.5") for i in range(5_000)))
    blocks = (heading("Big"), *paragraphs, big_table.model_copy(update={"heading_path": ("Big",)}))
    doc = ExtractedDocument(media_type="text/plain", blocks=blocks)
    count = CountingWords()
    # When it is chunked
    chunks = StructuralChunker(count, 256).chunk(doc)
    # Then every block is in a chunk that fits, and the tokenizer was asked about each block, row and chunk
    # about once
    assert all(c.token_count <= 256 for c in chunks)
    assert chunks[-1].block_end == 20_001
    assert count.calls <= len(blocks) + 5_000 + len(chunks) + 10


@pytest.mark.parametrize(
    "options",
    [{"max_tokens": 0}, {"max_tokens": 10, "overlap_blocks": -1}, {"max_tokens": 10, "max_overlap_fraction": 1.5}],
)
def test_settings_that_cannot_work_are_refused(options: dict[str, int | float]) -> None:
    # Given impossible settings, when a chunker is made, then it is refused
    with pytest.raises(ValueError, match=r"must|cannot"):
        StructuralChunker(words, **options)  # type: ignore[arg-type]


# Properties over random documents


@st.composite
def random_documents(draw: st.DrawFn) -> ExtractedDocument:
    serial = itertools.count()

    def word() -> str:
        """A word no other block has, so a block's words can be followed through the chunks."""
        return f"w{next(serial)}" + draw(st.sampled_from(["", "x", "xxxxxxx"]))

    blocks: list[Block] = []
    for _ in range(draw(st.integers(0, 25))):
        kind = draw(st.sampled_from(["heading", "paragraph", "paragraph", "list", "table", "empty", "page break"]))
        place = draw(st.sampled_from([{}, {}, {"slide": 1}, {"slide": 2}, {"page": 1}, {"page": 2}]))
        if kind == "heading":
            text = " ".join(word() for _ in range(draw(st.integers(1, 4))))
            blocks.append(heading(text, level=draw(st.integers(1, 6)), **place))
        elif kind in ("paragraph", "list"):
            sentences = [
                " ".join(word() for _ in range(draw(st.integers(1, 14)))) + draw(st.sampled_from([".", "!", "?", ""]))
                for _ in range(draw(st.integers(1, 6)))
            ]
            text = draw(st.sampled_from([" ", "\n"])).join(sentences)
            block_kind = BlockKind.LIST_ITEM if kind == "list" else BlockKind.PARAGRAPH
            blocks.append(Block(kind=block_kind, text=text, depth=0, location=Location.model_validate(place)))
        elif kind == "table":
            width = draw(st.integers(1, 4))
            rows = tuple(
                tuple(" ".join(word() for _ in range(draw(st.integers(0, 6)))) for _ in range(width))
                for _ in range(draw(st.integers(1, 12)))
            )
            cell_range = draw(st.sampled_from([None, f"C5:F{5 + len(rows)}", f"$A$2:$D${100 + len(rows)}"]))
            blocks.append(table(*rows, header_rows=draw(st.integers(0, 2)), cell_range=cell_range, **place))
        elif kind == "empty":
            blocks.append(paragraph(" \n "))
        else:
            blocks.append(Block(kind=BlockKind.PAGE_BREAK))
    return document(*blocks)


def _claimed_text(doc: ExtractedDocument, c: ChunkDraft) -> str:
    return "\n".join(block_text(block) for block in doc.blocks[c.block_start : c.block_end + 1])


PROPERTY_SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.slow
@PROPERTY_SETTINGS
@given(
    doc=random_documents(),
    max_tokens=st.integers(8, 80),
    count=st.sampled_from([words, quarter_characters, superadditive]),
    overlap_blocks=st.integers(0, 2),
)
def test_every_chunk_fits_is_not_empty_and_holds_no_heading(
    doc: ExtractedDocument, max_tokens: int, count: Counter, overlap_blocks: int
) -> None:
    # Given a random document, when it is chunked
    chunks = chunk(doc, max_tokens, count, overlap_blocks=overlap_blocks)
    # Then every chunk fits and says its true size, has a body, spans no heading, and ordinals count up
    assert [c.ordinal for c in chunks] == list(range(len(chunks)))
    for c in chunks:
        assert c.token_count == count(c.content) <= max_tokens
        assert c.text.strip()
        assert all(block.kind is not BlockKind.HEADING for block in doc.blocks[c.block_start : c.block_end + 1])


@pytest.mark.slow
@PROPERTY_SETTINGS
@given(
    doc=random_documents(),
    max_tokens=st.integers(8, 80),
    count=st.sampled_from([words, superadditive]),
    overlap_blocks=st.integers(0, 2),
)
def test_every_blocks_text_is_chunked_in_order(
    doc: ExtractedDocument, max_tokens: int, count: Counter, overlap_blocks: int
) -> None:
    # Given a random document (every word in it unique), when it is chunked
    chunks = chunk(doc, max_tokens, count, overlap_blocks=overlap_blocks)
    # Then each text block's words (not the pipes between cells) are found, in order, in the chunks in order
    stream = " ".join(bodies(chunks)).split()
    position = 0
    for block in doc.blocks:
        if block.kind in (BlockKind.HEADING, BlockKind.PAGE_BREAK):
            continue
        for word in block_text(block).split():
            if word != "|":
                position = stream.index(word, position) + 1


@pytest.mark.slow
@PROPERTY_SETTINGS
@given(
    doc=random_documents(),
    max_tokens=st.integers(8, 80),
    count=st.sampled_from([words, quarter_characters, superadditive]),
    overlap_blocks=st.integers(0, 2),
)
def test_every_chunk_is_on_one_page_and_its_regions_quote_its_blocks_in_order(
    doc: ExtractedDocument, max_tokens: int, count: Counter, overlap_blocks: int
) -> None:
    # Given a random document over pages, slides and unplaced blocks, when it is chunked
    chunks = chunk(doc, max_tokens, count, overlap_blocks=overlap_blocks)
    for c in chunks:
        # Then no chunk crosses a page, and its regions are bounded, on its page, and in order
        assert c.location.page_start == c.location.page_end
        assert 1 <= len(c.location.regions) <= MAX_CHUNK_REGIONS
        assert all(region.page == c.location.page_start for region in c.location.regions)
        spans = [(region.start, region.end) for region in c.location.regions]
        assert spans[0][0] == 0 and spans[-1][1] == len(c.text)
        assert all(end <= next_start for (_, end), (next_start, _) in itertools.pairwise(spans))
        # and every line of a region's text is in a block on its page
        for region in c.location.regions:
            on_page = "\n".join(
                block_text(block)
                for block in doc.blocks[c.block_start : c.block_end + 1]
                if block.location.page == region.page
            )
            assert all(line in on_page for line in c.text[region.start : region.end].split("\n"))


@pytest.mark.slow
@PROPERTY_SETTINGS
@given(
    doc=random_documents(),
    max_tokens=st.integers(8, 80),
    count=st.sampled_from([words, quarter_characters, superadditive]),
    overlap_blocks=st.integers(0, 2),
)
def test_every_line_of_a_chunk_is_in_the_blocks_it_claims(
    doc: ExtractedDocument, max_tokens: int, count: Counter, overlap_blocks: int
) -> None:
    # Given a random document, when it is chunked
    chunks = chunk(doc, max_tokens, count, overlap_blocks=overlap_blocks)
    # Then every line of every body is quoted from its blocks (a repeated header line from its own table)
    for c in chunks:
        claimed = _claimed_text(doc, c)
        assert all(line in claimed for line in c.text.split("\n"))
