"""The one sentence splitter (shared/domain/text.py) that chunking, outlines and grounding all use; block_text is
tested with the chunker (test_chunking.py), the quote and figure checks with summaries (test_summaries.py)."""

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shared.domain.document import Block, BlockKind, Location
from shared.domain.outline import outline
from shared.domain.text import sentence_ends, sentence_spans


def sentences(text: str, **options: bool) -> list[str]:
    return [text[start:end] for start, end in sentence_spans(text, **options)]


def test_terminal_punctuation_before_white_space_ends_a_sentence() -> None:
    text = 'He said "Stop." Then he left! Why? Well… maybe so. Done.'
    assert sentences(text) == ['He said "Stop."', "Then he left!", "Why?", "Well…", "maybe so.", "Done."]


@pytest.mark.parametrize(
    "sentence",
    [
        "Sales rose at Acme Inc. last year.",  # an abbreviation the chunker's list lacked before the unification
        "The U.S. Army set the rule.",
        "See No. 4 and pp. 12 to 14.",
        "Pi is 3.14 and e is 2.71.",
        "Call J. Smith about it.",
    ],
)
def test_abbreviations_initials_and_decimals_do_not_end_a_sentence(sentence: str) -> None:
    assert sentences(f"Short. {sentence} Next one.") == ["Short.", sentence, "Next one."]


def test_a_list_number_opening_a_sentence_does_not_end_it() -> None:
    assert sentences("Steps follow. 1. Install the agent. 2. Start it.") == [
        "Steps follow.",
        "1. Install the agent.",
        "2. Start it.",
    ]


def test_only_before_capitals_keeps_a_lower_case_continuation_in_the_sentence() -> None:
    text = "It was hard? yes, it was. (Really.) 2024 came."
    assert sentences(text) == ["It was hard?", "yes, it was.", "(Really.)", "2024 came."]
    assert sentences(text, only_before_capitals=True) == ["It was hard? yes, it was.", "(Really.)", "2024 came."]


def test_by_line_a_line_break_ends_a_sentence_and_offsets_stay_in_the_whole_text() -> None:
    text = "Region | Revenue\nNorth | 10. South | 12"
    spans = sentence_spans(text, by_line=True)
    assert [text[start:end] for start, end in spans] == ["Region | Revenue", "North | 10.", "South | 12"]
    assert sentences("One\ntwo") == ["One\ntwo"]


def test_sentence_ends_scans_from_start_and_no_further_than_stop() -> None:
    text = "First one. Second one. Third one."
    assert list(sentence_ends(text)) == [10, 22]
    assert list(sentence_ends(text, 11)) == [22]
    assert list(sentence_ends(text, 0, 21)) == [10]


def test_a_long_run_of_marks_is_scanned_once() -> None:
    text = "." * 200_000 + " Done."
    assert sentences(text) == ["." * 200_000, "Done."]


@given(st.text(alphabet=st.sampled_from(list("ab AB.!?…\"'()1\n")), max_size=80))
def test_sentences_are_trimmed_ordered_disjoint_and_cover_every_word(text: str) -> None:
    spans = sentence_spans(text)
    assert all(start < end and not text[start].isspace() and not text[end - 1].isspace() for start, end in spans)
    assert all(first[1] <= second[0] for first, second in itertools.pairwise(spans))
    assert " ".join(text[start:end] for start, end in spans).split() == text.split()


@given(
    st.lists(st.sampled_from(["Alpha beta.", "gamma.", "Dr. Who", "1.", "U.S. law!", "Yes?", "e.g. this"]), max_size=6)
)
def test_an_outline_cuts_a_paragraph_where_the_splitter_does(words: list[str]) -> None:
    text = " ".join(words)
    block = Block(kind=BlockKind.PARAGRAPH, text=text, depth=0, location=Location())
    shown = [
        sentence.text
        for section in outline([block], sentences_per_section=10).sections
        for sentence in section.sentences
    ]
    assert shown == sentences(text, only_before_capitals=True)


@pytest.mark.parametrize(
    ("text", "sentences"),
    [
        ("The answer was no. Then we left.", ["The answer was no.", "Then we left."]),
        ("Shares of Acme Inc. The company grew.", ["Shares of Acme Inc.", "The company grew."]),
        ("See No. 5 in the list. Then go.", ["See No. 5 in the list.", "Then go."]),
        ("It was est. in the spring.", ["It was est. in the spring."]),
    ],
)
def test_a_word_that_is_also_an_abbreviation_ends_a_sentence_before_a_capital_only(
    text: str, sentences: list[str]
) -> None:
    assert [text[start:end] for start, end in sentence_spans(text)] == sentences
    # An outline needs a capital at every boundary, so there the abbreviation never ends one.
    assert len(sentence_spans(text, only_before_capitals=True)) <= len(sentences)
