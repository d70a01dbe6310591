"""The built-in reranker, and the local default (docs/adr/0007): fusion cannot know that one lane matched an exact
code rather than a common word, so chunks containing the query's identifiers (ERR-4021, Q3-2026, v2.1) verbatim move
ahead. Pure, free and in process: no budget is ever short for it and nothing is metered."""

from collections.abc import Sequence

from shared.domain.reranking import RerankCandidate, Reranked
from shared.domain.search import contains_term, identifier_terms

# What a search response names as the reranker's model.
IDENTIFIER_BOOSTER = "identifier-booster"


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
            identifier_terms(query),
        )
        return Reranked.applied(self.model_id, tuple(order), candidates=len(candidates))
