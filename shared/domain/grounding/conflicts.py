"""Conflicts: statements of different documents about the same thing that state different figures."""

import re
from collections.abc import Sequence
from dataclasses import dataclass

from shared.domain.search import query_terms
from shared.domain.text import stated_figures

# Content-word overlap (Jaccard, figures left out) above which two sentences of different documents speak of
# the same thing: then different figures in them are a conflict, not two facts.
SAME_SUBJECT = 0.6
AMBIGUOUS_SUBJECT = 0.4
_FIGURE = re.compile(r"\d")


def content_words(text: str) -> frozenset[str]:
    """What a text speaks of: its query terms without the figures (validation compares claims by them too)."""
    return frozenset(word for word in query_terms(text) if not _FIGURE.search(word))


def _jaccard(first: frozenset[str], second: frozenset[str]) -> float:
    union = first | second
    return len(first & second) / len(union) if union else 0.0


@dataclass(frozen=True)
class Statement:
    """A sentence a claim rests on, with the document it comes from."""

    file_id: str
    evidence_id: str
    text: str


# Figures that name which thing a statement is about rather than a value of it: a year, a quarter or half, a
# dotted version. Two statements with different qualifiers speak of different things ("the 2024 budget" and "the
# 2025 budget"), whatever their other figures say.
_QUALIFIER = re.compile(r"(?:1[89]|2[01])\d\d|[qh][1-4]|fy\d{2,4}|v?\d+(?:\.\d+)+")


def _qualifiers(figures: frozenset[str]) -> frozenset[str]:
    return frozenset(figure for figure in figures if _QUALIFIER.fullmatch(figure))


def disagreements(statements: Sequence[Statement], *, threshold: float = SAME_SUBJECT) -> list[tuple[str, str]]:
    """Pairs of evidence ids from different documents whose statements speak of the same thing (content words,
    figures left out, overlap at least `threshold`; the same qualifiers: years, quarters, versions) but state
    values neither of which includes the other's: "due 14 March 2026" against "due 21 March 2026" is a conflict;
    "the 2024 budget was 5 million" against "the 2025 budget was 6 million" is not, nor is a statement that only
    adds a figure to the other's."""
    found: list[tuple[str, str]] = []
    for index, first in enumerate(statements):
        first_figures = frozenset(stated_figures(first.text))
        if not first_figures:
            continue
        for second in statements[index + 1 :]:
            if second.file_id == first.file_id or second.evidence_id == first.evidence_id:
                continue
            second_figures = frozenset(stated_figures(second.text))
            if not second_figures or _qualifiers(first_figures) != _qualifiers(second_figures):
                continue
            first_values = first_figures - _qualifiers(first_figures)
            second_values = second_figures - _qualifiers(second_figures)
            if not first_values or not second_values or first_values <= second_values or second_values <= first_values:
                continue
            if _jaccard(content_words(first.text), content_words(second.text)) >= threshold:
                found.append((first.evidence_id, second.evidence_id))
    return found
