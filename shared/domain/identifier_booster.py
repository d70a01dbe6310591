"""The built-in reranker, and the local default (docs/adr/0007): fusion cannot know that one lane matched an exact
code rather than a common word, so chunks containing the query's identifiers (ERR-4021, Q3-2026, v2.1) verbatim move
ahead. Pure, free and in process: no budget is ever short for it and nothing is metered."""

import re
from collections.abc import Sequence

from shared.domain.reranking import RerankCandidate, Reranked
from shared.domain.search import contains_term, identifier_terms

# What a search response names as the reranker's model.
IDENTIFIER_BOOSTER = "identifier-booster"


# An all-capitals code joined by hyphens, as the query writes it (SKU-ABX, ACME-EU-WEST): a code without a digit.
_CAPITALS_CODE = re.compile(r"(?<![\w-])[A-Z]{2,}(?:-[A-Z0-9]+)+(?![\w-])")


def boosted_identifiers(query: str) -> list[str]:
    """The query's identifiers the booster moves chunks for: codes, each once, case-folded. A term with a letter and a
    digit (ERR-4021, Q3-2026, v2.1, IL-6, p53) or an all-capitals code joined by a hyphen (SKU-ABX) is one; a
    hyphenated word ("pro-inflammatory", "in-hospital") or a bare number ("10", "2024") is not: the booster sorts
    every candidate holding one ahead of every candidate without, which such common terms turn into noise (on SciFact
    train they cost 0.028 nDCG@10 of search's ranking: docs/adr/0007). The lanes still weigh them as words."""
    codes = {match.group(0).casefold() for match in _CAPITALS_CODE.finditer(query)}
    return [
        term
        for term in dict.fromkeys(identifier_terms(query))
        if term in codes or (any(ch.isdigit() for ch in term) and any(ch.isalpha() for ch in term))
    ]


def boost_identifiers(order: Sequence[str], contents: dict[str, str], identifiers: Sequence[str]) -> list[str]:
    """Chunks containing more of the query's identifiers verbatim move ahead; otherwise fusion order stands."""
    if not identifiers:
        return list(order)

    def matched(chunk_id: str) -> int:
        text = contents.get(chunk_id, "").casefold()
        return sum(1 for term in identifiers if contains_term(text, term))

    position = {chunk_id: index for index, chunk_id in enumerate(order)}
    return sorted(order, key=lambda chunk_id: (-matched(chunk_id), position[chunk_id]))


class IdentifierBooster:
    """A `Reranker` (shared/ports/search.py; the domain implements it by its shape, it may not import the port)."""

    model_id = IDENTIFIER_BOOSTER
    depth: int | None = None  # every fused candidate: it costs microseconds
    metered = False
    in_process = True  # called inline: no worker thread, no budget

    def rerank(self, query: str, candidates: Sequence[RerankCandidate]) -> Reranked:
        order = boost_identifiers(
            [candidate.chunk_id for candidate in candidates],
            {candidate.chunk_id: candidate.text for candidate in candidates},
            boosted_identifiers(query),
        )
        return Reranked.applied(self.model_id, tuple(order), candidates=len(candidates))
