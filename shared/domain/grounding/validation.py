"""A model's draft validated against the evidence it was sent: no claim keeps a citation its evidence does not
bear out."""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from shared.domain.answers import (
    MAX_CLAIM_CHARACTERS,
    MAX_CLAIMS,
    ClaimKind,
    DraftClaim,
    Evidence,
    EvidenceBlock,
    GeneratedDraft,
)
from shared.domain.grounding.conflicts import content_words
from shared.domain.grounding.evidence import piece_of
from shared.domain.search import words_of
from shared.domain.text import contains_token, normalised, quote_fits, stated_figures

MIN_QUOTE_WORDS = 4
MIN_CLAIM_OVERLAP = 0.5


@dataclass(frozen=True)
class ValidatedClaim:
    """A draft claim after validation: the evidence ids that bear it out (none: it was downgraded)."""

    text: str
    evidence_ids: tuple[str, ...]
    kind: ClaimKind
    quote: str | None
    rejected_ids: int  # ids the model named that were not sent


@dataclass(frozen=True)
class ValidatedDraft:
    claims: tuple[ValidatedClaim, ...]
    rejected_ids: int
    downgraded: int

    @property
    def supported(self) -> int:
        return sum(1 for claim in self.claims if claim.evidence_ids)


def clipped_at_word(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", 0, limit + 1)
    return text[: cut if cut > limit // 2 else limit].rstrip()


def validated_claim(
    draft: DraftClaim, evidence: Mapping[str, Evidence], sent: frozenset[str] | None = None
) -> ValidatedClaim | None:
    """One draft claim checked against the evidence sent (None: nothing to say, e.g. an empty text).

    - ids not among those sent are rejected, never kept as an unresolved citation;
    - the quote must be a verbatim span (white space normalised) of one piece its remaining ids name, and of at
      least MIN_QUOTE_WORDS words (or the whole of a shorter piece): "the" bears out nothing;
    - most of the claim's content words (at least MIN_CLAIM_OVERLAP of them) must be in the pieces that hold the
      quote: a true quote does not carry a claim about something else;
    - every number and identifier the claim states must appear, as a whole token, in those pieces (a page or a
      figure the model supplied that the evidence does not state is invented);
    - a claim failing any keeps its text but loses its evidence: it is shown unsupported, never as cited.
    Negation is not caught ("did not fail" quoting "failed"): no rule here reads meaning; the quote is shown.
    """
    text = clipped_at_word(normalised(draft.text), MAX_CLAIM_CHARACTERS)
    if not any(character.isalnum() for character in text):
        return None
    kind = ClaimKind.DIRECT if draft.direct else ClaimKind.INFERRED
    named = [piece_of(evidence_id, evidence, sent) for evidence_id in dict.fromkeys(draft.evidence_ids)]
    known = tuple(dict.fromkeys(piece for piece in named if piece is not None))
    rejected = sum(1 for piece in named if piece is None)
    unsupported = ValidatedClaim(text=text, evidence_ids=(), kind=kind, quote=None, rejected_ids=rejected)
    quote = normalised(draft.quote)
    # Only the pieces the quote is in bear the claim out; others the model named alongside are dropped.
    bearing = tuple(evidence_id for evidence_id in known if quote and quote_fits(quote, [evidence[evidence_id].text]))
    if not bearing:
        return unsupported
    cited = [normalised(evidence[evidence_id].text).casefold() for evidence_id in bearing]
    # Words as the keyword lane counts them: a Chinese or Japanese sentence has no spaces, its pairs are its words.
    if len(words_of(quote)) < MIN_QUOTE_WORDS and not any(quote.casefold() == body for body in cited):
        return unsupported
    claimed = content_words(text)
    if claimed and len(claimed & frozenset().union(*(content_words(body) for body in cited))) < MIN_CLAIM_OVERLAP * len(
        claimed
    ):
        return unsupported
    if not all(any(contains_token(body, figure) for body in cited) for figure in stated_figures(text)):
        return unsupported
    return ValidatedClaim(
        text=text,
        evidence_ids=bearing,
        kind=kind,
        quote=clipped_at_word(quote, MAX_CLAIM_CHARACTERS),
        rejected_ids=rejected,
    )


def supported_assumptions(
    assumptions: Sequence[str], evidence: Sequence[Evidence], *, limit: int = 5
) -> tuple[str, ...]:
    """The model's assumptions worth showing (its own words, labelled so): none stating a figure the evidence does
    not (a page, a date, an amount it made up), at most `limit`, each clipped."""
    bodies = [normalised(piece.text).casefold() for piece in evidence]
    kept = [
        clipped_at_word(normalised(assumption), MAX_CLAIM_CHARACTERS)
        for assumption in assumptions
        if normalised(assumption)
        and all(any(contains_token(body, figure) for body in bodies) for figure in stated_figures(assumption))
    ]
    return tuple(kept[:limit])


def validated_draft(
    draft: GeneratedDraft, evidence: Sequence[Evidence], sent: Sequence[EvidenceBlock] | None = None
) -> ValidatedDraft:
    """Every claim of the draft validated against the evidence; `sent`, the blocks the model was really given."""
    by_id = {piece.evidence_id: piece for piece in evidence}
    ids = frozenset(block.evidence_id for block in sent) if sent is not None else None
    claims = [claim for claim in (validated_claim(item, by_id, ids) for item in draft.claims[:MAX_CLAIMS]) if claim]
    return ValidatedDraft(
        claims=tuple(claims),
        rejected_ids=sum(claim.rejected_ids for claim in claims),
        downgraded=sum(1 for claim in claims if not claim.evidence_ids),
    )
