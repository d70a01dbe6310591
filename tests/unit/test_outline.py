"""The extractive outline: headings in order with their first sentences, every sentence verbatim from the block
it cites, and bounded however large the document."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shared.domain.document import Block, BlockCollector, BlockKind, ExtractionLimits, Location, Table
from shared.domain.outline import (
    MAX_HEADING_CHARACTERS,
    MAX_OUTLINE_CHARACTERS,
    MAX_OUTLINE_SECTIONS,
    MAX_SENTENCE_CHARACTERS,
    Outline,
    outline,
)


def collected(*blocks: Block) -> tuple[Block, ...]:
    """The blocks as an extractor hands them over: heading paths set as the headings go by."""
    collector = BlockCollector(ExtractionLimits(max_text_bytes=64 * 1024 * 1024))
    for block in blocks:
        collector.add(block)
    return collector.document("text/plain").blocks


def heading(text: str, level: int = 1) -> Block:
    return Block(kind=BlockKind.HEADING, text=text, level=level)


def paragraph(text: str, **location: int) -> Block:
    return Block(kind=BlockKind.PARAGRAPH, text=text, location=Location(**location))


def sentences_of(result: Outline) -> list[list[str]]:
    return [[sentence.text for sentence in section.sentences] for section in result.sections]


def assert_verbatim(result: Outline, blocks: tuple[Block, ...]) -> None:
    for section in result.sections:
        for sentence in section.sentences:
            assert sentence.text
            assert sentence.text in blocks[sentence.block_index].text
            assert sentence.location == blocks[sentence.block_index].location


def test_each_heading_starts_a_section_with_the_first_sentences_under_it() -> None:
    blocks = collected(
        paragraph("A preface. It says little. More than needed.", page=1),
        heading("Scope"),
        paragraph("This policy covers laptops. It also covers phones. Tablets are out.", page=2),
        heading("Details", level=2),
        Block(kind=BlockKind.LIST_ITEM, text="Encrypt the disk", depth=0),
        Block(kind=BlockKind.LIST_ITEM, text="Lock the screen", depth=0),
        Block(kind=BlockKind.LIST_ITEM, text="Report a loss", depth=0),
    )
    result = outline(blocks)
    assert [(s.heading, s.heading_path, s.level, s.block_index) for s in result.sections] == [
        (None, (), None, None),
        ("Scope", ("Scope",), 1, 1),
        ("Details", ("Scope", "Details"), 2, 3),
    ]
    assert sentences_of(result) == [
        ["A preface.", "It says little."],
        ["This policy covers laptops.", "It also covers phones."],
        ["Encrypt the disk", "Lock the screen"],
    ]
    cited = result.sections[1].sentences[0]
    assert (cited.block_index, cited.location.page, cited.clipped) == (2, 2, False)
    assert (result.method, result.truncated) == ("extractive", False)


def test_tables_code_images_descriptions_and_page_breaks_give_no_sentences() -> None:
    blocks = collected(
        heading("Numbers"),
        Block(kind=BlockKind.TABLE, table=Table(rows=(("Total.", "Revenue."),))),
        Block(kind=BlockKind.CODE, text="print('Hello.') # Not prose."),
        Block(kind=BlockKind.IMAGE, text="A chart."),
        Block(kind=BlockKind.DESCRIPTION, text="The chart shows growth."),
        Block(kind=BlockKind.PAGE_BREAK, location=Location(page=2)),
        Block(kind=BlockKind.QUOTE, text="Growth was steady. It will continue."),
    )
    assert sentences_of(outline(blocks)) == [["Growth was steady.", "It will continue."]]


def test_a_section_takes_sentences_from_its_following_prose_blocks_until_it_has_enough() -> None:
    blocks = collected(heading("Intro"), paragraph("Only one sentence here."), paragraph("A second one. A third."))
    assert sentences_of(outline(blocks, sentences_per_section=3)) == [
        ["Only one sentence here.", "A second one.", "A third."]
    ]


def test_a_heading_with_nothing_under_it_is_still_a_section_and_an_empty_preface_is_not() -> None:
    blocks = collected(paragraph("   "), heading("Part I"), heading("Chapter 1", level=2), paragraph("Text."))
    result = outline(blocks)
    assert [(s.heading, len(s.sentences)) for s in result.sections] == [("Part I", 0), ("Chapter 1", 1)]


def test_an_empty_document_has_no_sections() -> None:
    assert outline(()) == Outline(sections=(), truncated=False)
    assert outline(collected(Block(kind=BlockKind.PAGE_BREAK))).sections == ()


@pytest.mark.parametrize(
    "text",
    [
        "Use a strong passphrase, e.g. Four random words will do, as Fig. 2 shows for 3.5 million cases.",
        "The rule was set by J. R. Smith and Dr. Jones in the U.S. Army, see No. 4 and pp. 12 to 14 here.",
        "Version 3.5 of the tool (see Sec. 2) was released on Mar. 3 by Acme Inc. Engineering staff.",
        "1. Install the agent before anything else is done on the machine.",
    ],
)
def test_abbreviations_initials_decimals_and_list_numbers_do_not_end_a_sentence(text: str) -> None:
    result = outline(collected(paragraph(text)))
    assert sentences_of(result) == [[text]]


def test_a_sentence_ends_only_before_a_capital_letter_or_a_digit() -> None:
    text = 'He said "Stop." Then he left! 2024 was hard? yes, it was. (Really.) Quite.'
    result = outline(collected(paragraph(text)), sentences_per_section=10)
    assert sentences_of(result) == [
        ['He said "Stop."', "Then he left!", "2024 was hard? yes, it was.", "(Really.)", "Quite."]
    ]


def test_a_sentence_without_a_clean_end_is_clipped_at_a_word_boundary_without_an_ellipsis() -> None:
    text = "word " * 1_000
    result = outline(collected(paragraph(text)))
    (sentence,) = result.sections[0].sentences
    assert sentence.clipped
    assert len(sentence.text) <= MAX_SENTENCE_CHARACTERS
    assert text.startswith(sentence.text)
    assert sentence.text.endswith("word")
    assert "…" not in sentence.text


def test_one_word_longer_than_a_sentence_is_cut_at_the_bound() -> None:
    text = "x" * (MAX_SENTENCE_CHARACTERS * 4)
    (sentence,) = outline(collected(paragraph(text))).sections[0].sentences
    assert (sentence.text, sentence.clipped) == ("x" * MAX_SENTENCE_CHARACTERS, True)


def test_a_megabyte_paragraph_gives_bounded_sentences() -> None:
    text = ("This goes on and on without stopping " * 30_000) + ". The end."
    blocks = collected(heading("Long"), paragraph(text))
    result = outline(blocks)
    assert len(text) > 1_000_000
    (sentence,) = result.sections[0].sentences  # clipped: nothing after it is a sentence start
    assert sentence.clipped
    assert len(sentence.text) <= MAX_SENTENCE_CHARACTERS
    assert_verbatim(result, blocks)


def test_thousands_of_headings_are_bounded_in_sections_and_characters() -> None:
    blocks = collected(*(b for n in range(5_000) for b in (heading(f"Heading {n}"), paragraph(f"Text {n}. More."))))
    result = outline(blocks)
    assert len(result.sections) == MAX_OUTLINE_SECTIONS
    assert result.truncated
    small = outline(blocks, max_sections=10_000, max_characters=2_000)
    assert small.truncated
    shown = sum(len(t) for s in small.sections for t in s.heading_path) + sum(
        len(sentence.text) for s in small.sections for sentence in s.sentences
    )
    assert shown <= 2_000


def test_a_huge_heading_is_cut_and_said_so() -> None:
    blocks = collected(heading("Title " * 1_000), paragraph("Body."))
    result = outline(blocks)
    assert len(result.sections[0].heading or "") <= MAX_HEADING_CHARACTERS
    assert result.truncated


def test_zero_sentences_per_section_gives_the_headings_alone() -> None:
    blocks = collected(heading("A"), paragraph("One."), heading("B", level=2), paragraph("Two."))
    result = outline(blocks, sentences_per_section=0)
    assert [(s.heading_path, s.sentences) for s in result.sections] == [(("A",), ()), (("A", "B"), ())]


def test_negative_bounds_are_refused() -> None:
    with pytest.raises(ValueError, match="negative"):
        outline((), max_sections=-1)


prose = st.text(alphabet=st.sampled_from("aB. !?\n3\"')(e.g"), max_size=400)


@given(
    st.lists(
        st.one_of(
            prose.map(paragraph),
            prose.map(lambda text: Block(kind=BlockKind.LIST_ITEM, text=text)),
            st.tuples(prose, st.integers(1, 4)).map(lambda pair: heading(*pair)),
        ),
        max_size=30,
    ),
    st.integers(0, 4),
    st.integers(0, 800),
)
def test_every_sentence_is_verbatim_from_the_block_it_cites_and_the_bounds_hold(
    raw: list[Block], per_section: int, max_characters: int
) -> None:
    blocks = collected(*raw)
    result = outline(blocks, sentences_per_section=per_section, max_characters=max_characters, max_sections=8)
    assert_verbatim(result, blocks)
    assert len(result.sections) <= 8
    assert all(len(section.sentences) <= per_section for section in result.sections)
    assert all(len(sentence.text) <= MAX_SENTENCE_CHARACTERS for s in result.sections for sentence in s.sentences)
    shown = sum(len(t) for s in result.sections for t in s.heading_path) + sum(
        len(sentence.text) for s in result.sections for sentence in s.sentences
    )
    assert shown <= min(max_characters, MAX_OUTLINE_CHARACTERS)
