"""A summary of one document written by a model, kept only where the document's own blocks bear it out.

The model's draft is never trusted: it arrives as sentences, each with the citations the model attached
(the blocks it points to and the text it says it quoted from them), and `validated_summary` checks every
citation against the blocks that were really sent before a sentence may stand:

- a cited block index must be one of the blocks sent (an index outside them is rejected, never kept as an
  unresolved reference);
- every quoted span must be a verbatim substring of the blocks its citation points to, after white space
  (and Unicode composition) is normalised;
- a citation that keeps no block or no quote is rejected, and a sentence left with no citation is dropped;
- the numbers and identifiers a sentence states (anything with a digit, codes such as ERR-4021) must appear,
  as whole tokens, in one of the blocks it still cites: a figure the evidence does not contain is invented;
- a sentence longer than `max_characters` is dropped (it cannot be shown as one claim), and at most
  `max_sentences` survive.

Dropped sentences are counted, so a reader can tell a short summary from a heavily rejected one.
"""

import re
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from shared.domain.text import contains_token, normalised, quote_fits, stated_figures

MAX_SUMMARY_SENTENCES = 20
MAX_SUMMARY_SENTENCE_CHARACTERS = 400
# A stored quote is cut to this (at a word boundary, so it stays a verbatim substring of its block): a citation
# of a whole long block would otherwise carry the block into every answer.
MAX_QUOTE_CHARACTERS = 300

# The quote and figure checks are re-exported: they lived here before shared/domain/text.py.
__all__ = [
    "MAX_QUOTE_CHARACTERS",
    "MAX_SUMMARY_SENTENCES",
    "MAX_SUMMARY_SENTENCE_CHARACTERS",
    "DraftCitation",
    "DraftSentence",
    "GeneratedSummary",
    "SummarySentence",
    "ValidatedSentences",
    "contains_token",
    "normalised",
    "quote_fits",
    "stated_figures",
    "validated_summary",
]

# List markers a model may put before a sentence despite being asked for prose.
_LIST_MARKER = re.compile(r"^(?:[-*\u2022\u2013]\s+|\d{1,2}[.)]\s+)")


class DraftCitation(BaseModel):
    """One citation as the model gave it: the blocks it points to (indexes into the blocks sent) and the text
    it says it took from them. Nothing in it is trusted until `validated_summary` has checked it."""

    model_config = ConfigDict(frozen=True)

    block_indexes: tuple[int, ...]
    quotes: tuple[str, ...]


class DraftSentence(BaseModel):
    """One sentence of the model's draft, with every citation attached to any part of it."""

    model_config = ConfigDict(frozen=True)

    text: str
    citations: tuple[DraftCitation, ...] = ()


class SummarySentence(BaseModel):
    """A sentence that survived validation: the model's words, the blocks that bear it out, and the spans of
    those blocks it cited (each a verbatim substring of one of them, white space normalised)."""

    model_config = ConfigDict(frozen=True)

    text: str = Field(min_length=1)
    block_indexes: tuple[int, ...] = Field(min_length=1)
    quotes: tuple[str, ...] = Field(min_length=1)


class ValidatedSentences(BaseModel):
    """What validation kept (indexes into the blocks it was given), what it rejected, and what it had no room for."""

    model_config = ConfigDict(frozen=True)

    sentences: tuple[SummarySentence, ...]
    dropped: int = Field(ge=0)  # rejected: no surviving citation, an unsupported figure, too long
    omitted: int = Field(ge=0)  # valid, but past max_sentences


class GeneratedSummary(BaseModel):
    """A model's summary of one document, every sentence cited and validated.

    Indexes are the caller's: `block_indexes` point into the block sequence it passed. The model read the
    blocks with text among the first `blocks_sent` (the last of them cut short when `last_block_clipped`);
    blocks from `blocks_sent` on were not sent at all.
    """

    model_config = ConfigDict(frozen=True)

    sentences: tuple[SummarySentence, ...] = Field(min_length=1)
    model: str
    dropped: int = Field(ge=0)
    omitted: int = Field(default=0, ge=0)
    blocks_sent: int = Field(ge=0)
    last_block_clipped: bool = False
    input_tokens: int = Field(default=0, ge=0)
    output_tokens: int = Field(default=0, ge=0)


def _clipped_quote(quote: str) -> str:
    if len(quote) <= MAX_QUOTE_CHARACTERS:
        return quote
    cut = quote.rfind(" ", 0, MAX_QUOTE_CHARACTERS + 1)
    return quote[: cut if cut > 0 else MAX_QUOTE_CHARACTERS].rstrip()


def _sentence_text(text: str) -> str:
    return _LIST_MARKER.sub("", normalised(text), count=1)


def _is_prose(text: str) -> bool:
    """Whether a fragment says anything (a letter or a digit): lone punctuation and white space are no sentence."""
    return any(ch.isalnum() for ch in text)


def _validated(draft: DraftSentence, blocks_text: Sequence[str], max_characters: int) -> SummarySentence | None:
    text = _sentence_text(draft.text)
    if len(text) > max_characters:
        return None
    indexes: list[int] = []
    quotes: list[str] = []
    for citation in draft.citations:
        cited = citation.block_indexes
        if not cited or any(index < 0 or index >= len(blocks_text) for index in cited):
            continue
        evidence = [blocks_text[index] for index in cited]
        kept = [normalised(quote) for quote in citation.quotes]
        if not kept or not all(quote_fits(quote, evidence) for quote in kept):
            continue
        indexes.extend(cited)
        quotes.extend(_clipped_quote(quote) for quote in kept)
    if not indexes:
        return None
    cited_texts = [normalised(blocks_text[index]).casefold() for index in dict.fromkeys(indexes)]
    if not all(any(contains_token(block, figure) for block in cited_texts) for figure in stated_figures(text)):
        return None
    return SummarySentence(text=text, block_indexes=tuple(sorted(set(indexes))), quotes=tuple(dict.fromkeys(quotes)))


def validated_summary(
    drafts: Sequence[DraftSentence],
    blocks_text: Sequence[str],
    *,
    max_sentences: int = MAX_SUMMARY_SENTENCES,
    max_characters: int = MAX_SUMMARY_SENTENCE_CHARACTERS,
) -> ValidatedSentences:
    """The draft's sentences that the blocks sent (`blocks_text`, indexed as the citations index them) bear out,
    in order, at most `max_sentences`; fragments with no letter or digit (a stray full stop, a blank line) are
    ignored rather than counted."""
    if max_sentences < 1:
        raise ValueError(f"max_sentences must be at least 1, not {max_sentences}")
    kept: list[SummarySentence] = []
    dropped = omitted = 0
    for draft in drafts:
        if not _is_prose(draft.text):
            continue
        sentence = _validated(draft, blocks_text, max_characters)
        if sentence is None:
            dropped += 1
        elif len(kept) < max_sentences:
            kept.append(sentence)
        else:
            omitted += 1
    return ValidatedSentences(sentences=tuple(kept), dropped=dropped, omitted=omitted)
