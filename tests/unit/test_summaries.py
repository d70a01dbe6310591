"""validated_summary: a model's draft kept only where the blocks sent bear it out, each rule on its own."""

import pytest

from shared.domain.summaries import (
    MAX_QUOTE_CHARACTERS,
    DraftCitation,
    DraftSentence,
    SummarySentence,
    quote_fits,
    stated_figures,
    validated_summary,
)

BLOCKS = (
    "Refunds are paid within 14 days of the request.",
    "Error ERR-4021 means the card issuer declined the payment.",
    "The service level applies from\n  1 March 2026   to all tenants.",
)


def cites(*indexes: int, quote: str) -> DraftCitation:
    return DraftCitation(block_indexes=indexes, quotes=(quote,))


def draft(text: str, *citations: DraftCitation) -> DraftSentence:
    return DraftSentence(text=text, citations=citations)


def test_a_sentence_citing_a_block_it_quotes_verbatim_is_kept_with_that_block_and_quote() -> None:
    result = validated_summary([draft("Refunds arrive within 14 days.", cites(0, quote="paid within 14 days"))], BLOCKS)

    assert result.sentences == (
        SummarySentence(text="Refunds arrive within 14 days.", block_indexes=(0,), quotes=("paid within 14 days",)),
    )
    assert result.dropped == 0 and result.omitted == 0


def test_a_quote_matches_its_block_whatever_the_white_space() -> None:
    quote = "applies from 1 March\t2026 to all"
    result = validated_summary([draft("It starts on 1 March 2026.", cites(2, quote=quote))], BLOCKS)

    [sentence] = result.sentences
    assert sentence.quotes == ("applies from 1 March 2026 to all",)


def test_a_block_index_the_model_invented_is_rejected_not_kept() -> None:
    # Given a model citing block 7 when three blocks were sent (and one citing block -1)
    drafts = [
        draft("Refunds take 14 days.", cites(7, quote="paid within 14 days")),
        draft("Refunds take 14 days.", cites(-1, quote="paid within 14 days")),
    ]

    # Then neither sentence stands, and both are counted
    result = validated_summary(drafts, BLOCKS)
    assert result.sentences == ()
    assert result.dropped == 2


def test_an_invented_index_beside_a_real_citation_leaves_only_the_real_one() -> None:
    sentence = draft(
        "Refunds take 14 days.", cites(7, quote="paid within 14 days"), cites(0, quote="paid within 14 days")
    )

    [kept] = validated_summary([sentence], BLOCKS).sentences
    assert kept.block_indexes == (0,)


def test_a_quote_that_is_not_in_the_cited_block_rejects_the_citation() -> None:
    drafts = [
        # Not in the document at all.
        draft("Refunds take 30 days.", cites(0, quote="paid within 30 days")),
        # In the document, but in block 1, not the block cited.
        draft("The issuer declined the payment.", cites(0, quote="the card issuer declined the payment")),
    ]

    result = validated_summary(drafts, BLOCKS)
    assert result.sentences == () and result.dropped == 2


def test_a_citation_with_no_quote_is_rejected() -> None:
    sentence = draft("Refunds are paid.", DraftCitation(block_indexes=(0,), quotes=()))

    assert validated_summary([sentence], BLOCKS).dropped == 1


def test_a_citation_naming_no_block_is_rejected() -> None:
    sentence = draft("Refunds are paid.", DraftCitation(block_indexes=(), quotes=("Refunds are paid",)))

    assert validated_summary([sentence], BLOCKS).dropped == 1


def test_a_sentence_with_no_citation_is_dropped_and_counted() -> None:
    drafts = [draft("This document is about payments."), draft("Refunds are paid.", cites(0, quote="Refunds"))]

    result = validated_summary(drafts, BLOCKS)
    assert [sentence.text for sentence in result.sentences] == ["Refunds are paid."]
    assert result.dropped == 1


def test_a_number_the_cited_block_does_not_state_drops_the_sentence() -> None:
    # The quote is genuine, but the figure is the model's own.
    sentence = draft("Refunds are paid within 30 days.", cites(0, quote="Refunds are paid within"))

    result = validated_summary([sentence], BLOCKS)
    assert result.sentences == () and result.dropped == 1


def test_a_number_stated_only_in_a_block_the_sentence_does_not_cite_drops_it() -> None:
    # 2026 is in block 2, but the sentence cites block 0 only.
    sentence = draft("Refunds are paid within 14 days from 2026.", cites(0, quote="paid within 14 days"))

    assert validated_summary([sentence], BLOCKS).dropped == 1


def test_an_identifier_must_appear_whole_in_a_cited_block() -> None:
    quote = "the card issuer declined"
    drafts = [
        draft("ERR-4021 means the issuer declined.", cites(1, quote=quote)),
        draft("ERR-402 means the issuer declined.", cites(1, quote=quote)),  # a prefix of the real code
        draft("Code err-4021 is a decline.", cites(1, quote=quote)),  # case does not matter
    ]

    result = validated_summary(drafts, BLOCKS)
    assert [sentence.text for sentence in result.sentences] == [
        "ERR-4021 means the issuer declined.",
        "Code err-4021 is a decline.",
    ]
    assert result.dropped == 1


def test_figures_from_any_of_the_cited_blocks_are_enough() -> None:
    sentence = draft(
        "Refunds take 14 days and ERR-4021 is a decline.",
        cites(0, quote="within 14 days"),
        cites(1, quote="Error ERR-4021"),
    )

    [kept] = validated_summary([sentence], BLOCKS).sentences
    assert kept.block_indexes == (0, 1)
    assert kept.quotes == ("within 14 days", "Error ERR-4021")


def test_a_quote_may_run_from_one_cited_block_into_the_next() -> None:
    blocks = ("The first part ends here.", "The second part begins here.")
    for quote in ("ends here. The second part", "ends here.The second part"):
        sentence = draft("Two parts follow each other.", cites(0, 1, quote=quote))
        [kept] = validated_summary([sentence], blocks).sentences
        assert kept.block_indexes == (0, 1)


def test_fragments_with_no_letter_or_digit_are_ignored_not_counted() -> None:
    result = validated_summary([draft(" . "), draft("\n\n"), draft("Refunds.", cites(0, quote="Refunds"))], BLOCKS)

    assert len(result.sentences) == 1 and result.dropped == 0


def test_at_most_max_sentences_are_kept_and_the_rest_counted_as_omitted() -> None:
    drafts = [draft(f"Refunds, point {n}.", cites(0, quote="Refunds")) for n in ("one", "two", "three")]

    result = validated_summary(drafts, BLOCKS, max_sentences=2)
    assert [sentence.text for sentence in result.sentences] == ["Refunds, point one.", "Refunds, point two."]
    assert result.omitted == 1 and result.dropped == 0


def test_a_sentence_longer_than_the_bound_is_dropped() -> None:
    long = "Refunds " + "are paid " * 60
    result = validated_summary([draft(long, cites(0, quote="Refunds"))], BLOCKS, max_characters=200)

    assert result.sentences == () and result.dropped == 1


def test_a_list_marker_before_a_sentence_is_not_part_of_it() -> None:
    [kept] = validated_summary([draft("- Refunds are paid.", cites(0, quote="Refunds"))], BLOCKS).sentences

    assert kept.text == "Refunds are paid."


def test_a_long_quote_is_kept_as_its_verbatim_start() -> None:
    block = " ".join(f"word{n}" for n in range(200))
    [kept] = validated_summary([draft("Many words.", cites(0, quote=block))], [block]).sentences

    [quote] = kept.quotes
    assert len(quote) <= MAX_QUOTE_CHARACTERS
    assert block.startswith(quote) and quote_fits(quote, [block])


def test_max_sentences_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_sentences"):
        validated_summary([], BLOCKS, max_sentences=0)


@pytest.mark.parametrize(
    ("text", "figures"),
    [
        ("Error ERR-4021 on v2.1, 14 days.", ["err-4021", "v2.1", "14"]),
        ("Set HTTP_PROXY and SKU-ABX.", ["http_proxy", "sku-abx"]),
        ("Paid on 2026-03-01 at 12:30, 1,200 units.", ["2026-03-01", "12:30", "1", "200"]),
        ("No figures here, just well-known words.", []),
    ],
)
def test_stated_figures_are_tokens_with_digits_and_capital_codes(text: str, figures: list[str]) -> None:
    assert sorted(stated_figures(text)) == sorted(figures)


def test_an_empty_quote_fits_nothing() -> None:
    assert not quote_fits("  ", BLOCKS)
