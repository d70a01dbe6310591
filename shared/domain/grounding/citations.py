"""Citations numbered from stored snapshots and withheld where the caller may no longer read them."""

from collections.abc import Mapping, Sequence
from datetime import datetime

from shared.domain.answers import (
    Answer,
    AnswerCitation,
    AnswerClaim,
    AnswerHit,
    AnswerMethod,
    AnswerOutcome,
    Evidence,
    Refusal,
    RefusalReason,
)
from shared.domain.grounding.confidence_score import confidence_of
from shared.domain.grounding.evidence import quoted_regions
from shared.domain.grounding.validation import ValidatedClaim
from shared.domain.search import Citation, excerpt_of, matching_regions, query_terms


def numbered_citations(
    claims: Sequence[ValidatedClaim], evidence: Mapping[str, Evidence], *, retrieved_at: datetime
) -> tuple[list[AnswerClaim], list[AnswerCitation]]:
    """Citation numbers by first appearance (claim order, then the claim's evidence order), built from stored
    snapshots; each claim names its numbers."""
    numbers: dict[str, int] = {}
    citations: list[AnswerCitation] = []
    answer_claims: list[AnswerClaim] = []
    for claim in claims:
        cited: list[int] = []
        for evidence_id in claim.evidence_ids:
            if evidence_id not in numbers:
                piece = evidence[evidence_id]
                numbers[evidence_id] = len(numbers) + 1
                citations.append(
                    AnswerCitation(
                        number=numbers[evidence_id],
                        chunk_id=piece.chunk_id,
                        score=piece.score,
                        citation=Citation.of_snapshot(
                            piece.snapshot,
                            excerpt=excerpt_of(piece.snapshot.body),
                            retrieved_at=retrieved_at,
                            # The block the claim quotes: its page and box, not the chunk's first.
                            matched=quoted_regions(piece, claim.quote)
                            or matching_regions(
                                piece.snapshot.location, piece.snapshot.body, query_terms(claim.quote or claim.text)
                            ),
                        ),
                    )
                )
            cited.append(numbers[evidence_id])
        answer_claims.append(AnswerClaim(text=claim.text, citations=tuple(cited), kind=claim.kind, quote=claim.quote))
    return answer_claims, citations


def answer_hits(evidence: Sequence[Evidence], citations: Sequence[AnswerCitation]) -> tuple[AnswerHit, ...]:
    """The selected evidence as hits with their scores, each with its citation's number where it is cited."""
    cited = {citation.chunk_id: citation.number for citation in citations}
    return tuple(
        AnswerHit(
            chunk_id=piece.chunk_id,
            file_id=piece.snapshot.file_id,
            version_id=piece.snapshot.version_id,
            filename=piece.snapshot.filename,
            collection_id=piece.snapshot.collection_id,
            score=piece.score,
            vector_score=piece.vector_score,
            lexical_score=piece.lexical_score,
            direct_subject=piece.direct_subject,
            citation=cited.get(piece.chunk_id),
        )
        for piece in evidence
    )


def _kept(
    citations: Sequence[AnswerCitation], readable: frozenset[str], present: frozenset[str]
) -> list[AnswerCitation]:
    return [c for c in citations if c.citation.collection_id in readable and c.chunk_id in present]


def withheld_citations(
    claims: Sequence[AnswerClaim],
    citations: Sequence[AnswerCitation],
    readable: frozenset[str],
    present: frozenset[str],
) -> tuple[list[AnswerClaim], list[AnswerCitation], int]:
    """The citations the caller may still read (their collection readable, their chunk still stored), renumbered
    in order, and the count withheld. A claim that named a withheld citation is withheld with it: its words came
    from that source (verbatim, for an extractive claim), so leaving them would leak what the citation withholds.
    A claim the validation had already left uncited stays, unsupported."""
    kept = _kept(citations, readable, present)
    renumber = {citation.number: position for position, citation in enumerate(kept, start=1)}
    return (
        [
            claim.model_copy(update={"citations": tuple(renumber[number] for number in claim.citations)})
            for claim in claims
            if all(number in renumber for number in claim.citations)
        ],
        [citation.model_copy(update={"number": renumber[citation.number]}) for citation in kept],
        len(citations) - len(kept),
    )


def answer_as_readable(answer: Answer, readable: frozenset[str], present: frozenset[str]) -> Answer:
    """The answer as a caller who may read `readable` (and whose cited chunks in `present` still exist) may see it:
    citations withheld and counted, their claims and hits with them, and, when nothing the answer rested on is
    left, a refusal (no_access: its sources are ones the caller cannot read); confidence recomputed."""
    claims, citations, withheld = withheld_citations(answer.claims, answer.citations, readable, present)
    if not withheld and all(hit.collection_id in readable for hit in answer.hits):
        return answer
    renumbered = {
        old.number: new.number for old, new in zip(_kept(answer.citations, readable, present), citations, strict=True)
    }
    # Uncited evidence is shown too (where it is, with its scores): of readable collections only.
    hits = tuple(
        hit.model_copy(update={"citation": renumbered.get(hit.citation) if hit.citation else None})
        for hit in answer.hits
        if hit.collection_id in readable
    )
    if withheld:
        # The model wrote its uncited claims and its assumptions having read the withheld evidence: they go with it.
        claims = [claim for claim in claims if claim.citations]
    outcome, method, refusal = answer.outcome, answer.method, answer.refusal
    left_nothing = (
        not any(claim.supported for claim in claims) if outcome is not AnswerOutcome.REFUSED else not citations
    )
    if left_nothing:
        outcome, method, refusal = AnswerOutcome.REFUSED, None, Refusal.of(RefusalReason.NO_ACCESS)
        claims, citations, hits = [], [], ()
    return answer.model_copy(
        update={
            "outcome": outcome,
            "method": method,
            "refusal": refusal,
            "claims": tuple(claims),
            "citations": tuple(citations),
            "hits": hits,
            "assumptions": answer.assumptions if claims and not withheld else (),
            "withheld": answer.withheld + withheld,
            "confidence": confidence_of(
                top=answer.confidence.factors.top_retrieval_score,
                vector_available=answer.vector_available,
                ambiguous=answer.confidence.factors.ambiguous_evidence_penalty > 0,
                claims=claims,
                citations=citations,
                extractive=method is AnswerMethod.EXTRACTIVE,
            ),
        }
    )
