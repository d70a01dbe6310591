"""Grounding: from ranked hits to a cited answer, deterministically (docs/answers.md).

Every step here is a pure function of its inputs, so the same index and question give the same answer byte for
byte: overlap deduplication, evidence selection within a budget, validation of a model's draft against the
evidence it was sent, extractive answers (sentences of the evidence, verbatim), conflicting figures, citation
numbering, and the confidence band with the factors it was computed from.

Nothing a model wrote about places is kept: its claims name evidence ids, and names, pages and locations come
from the stored snapshots those ids stand for.
"""

import hashlib
import json
import math
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from shared.domain.answers import (
    MAX_CLAIM_CHARACTERS,
    MAX_CLAIMS,
    AnswerCitation,
    AnswerClaim,
    ClaimKind,
    Confidence,
    ConfidenceBand,
    ConfidenceFactors,
    DraftClaim,
    Evidence,
    EvidenceBlock,
    GeneratedDraft,
)
from shared.domain.chunking import BLOCK_SEPARATOR, sentence_spans
from shared.domain.knowledge import ChunkRegion
from shared.domain.search import Citation, CitedKind, SearchFilters, excerpt_of, matching_regions, query_terms
from shared.domain.summaries import normalised, quote_fits, stated_figures

MAX_EVIDENCE = 8
EVIDENCE_BUDGET_CHARACTERS = 12_000
EXTRACTIVE_SENTENCES = 3
MAX_SENTENCES_PER_EVIDENCE = 60  # a hostile chunk of a thousand one-word "sentences" is not ranked whole
MIN_SENTENCE_CHARACTERS = 12  # "Yes." or a page number is no answer on its own
# Shingle containment above which a lower-ranked chunk repeats a higher-ranked one (3-word shingles): an
# overlapping neighbour of one block sequence shares its overlap block, a re-upload shares nearly everything.
NEAR_DUPLICATE = 0.8
NEIGHBOUR_OVERLAP = 0.5
# Content-word overlap (Jaccard, figures left out) above which two sentences of different documents speak of
# the same thing: then different figures in them are a conflict, not two facts.
SAME_SUBJECT = 0.6
AMBIGUOUS_SUBJECT = 0.4
_WORD = re.compile(r"[^\W_]+")
_FIGURE = re.compile(r"\d")


# --- the question ---------------------------------------------------------------------------------------------


def normalised_question(text: str) -> str:
    """The question as the cache compares it: NFKC, case-folded, white space collapsed."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


# Requests that are not questions about the documents: to reveal the instructions or other tenants' data, or
# to change stored data. Deterministic and narrow on purpose: a false refusal is visible, a leak is not.
_OUT_OF_SCOPE = tuple(
    re.compile(pattern, re.I)
    for pattern in (
        r"\b(?:system|hidden|initial|original)\s+(?:prompt|instructions?|rules)\b",
        r"\b(?:reveal|show|print|repeat|disclose)\b.{0,40}\b(?:prompt|instructions?)\b",
        r"\bignore\b.{0,30}\b(?:previous|prior|above|earlier|all)\b.{0,20}\b(?:instructions?|rules|prompts?)\b",
        r"\b(?:other|another|different|all)\s+(?:tenants?|customers?|organi[sz]ations?)(?:'s|'|s)?\b.{0,40}"
        r"\b(?:data|documents?|files?|records?|content)\b",
        r"\b(?:delete|remove|erase|drop|overwrite|modify|rename|upload)\b.{0,40}"
        r"\b(?:files?|documents?|collections?|tables?|records?|data)\b.{0,20}$",
    )
)


def out_of_scope(question: str) -> bool:
    """Whether the question asks for something answers never give (see _OUT_OF_SCOPE)."""
    text = " ".join(question.split())
    return any(pattern.search(text) for pattern in _OUT_OF_SCOPE)


def cache_key(
    *,
    tenant_id: str,
    collections: frozenset[str],
    question: str,
    filters: SearchFilters,
    mode: str,
    index_version: str,
    retrieval_settings: str,
    prompt_version: str,
    model: str,
) -> str:
    """seeds/003's key: tenant, readable collections, normalised question, filter hash, index version derived from
    indexed state, retrieval settings, prompt version and model. Any change to any of them is another key."""
    parts = {
        "tenant": tenant_id,
        "collections": sorted(collections),
        "question": normalised_question(question),
        "filters": filters.model_dump_json(),
        "mode": mode,
        "index": index_version,
        "retrieval": retrieval_settings,
        "prompt": prompt_version,
        "model": model,
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


# --- overlap and selection ------------------------------------------------------------------------------------


def _shingles(text: str) -> frozenset[tuple[str, ...]]:
    words = _WORD.findall(text.casefold())
    if len(words) < 3:
        return frozenset({tuple(words)}) if words else frozenset()
    return frozenset(tuple(words[index : index + 3]) for index in range(len(words) - 2))


def _containment(smaller: frozenset[tuple[str, ...]], larger: frozenset[tuple[str, ...]]) -> float:
    if not smaller or not larger:
        return 0.0
    if len(smaller) > len(larger):
        smaller, larger = larger, smaller
    return len(smaller & larger) / len(smaller)


def _version_and_ordinal(chunk_id: str) -> tuple[str, int | None]:
    version, _, ordinal = chunk_id.rpartition(":")
    return (version, int(ordinal)) if ordinal.isdigit() else (chunk_id, None)


def _neighbours(first: str, second: str) -> bool:
    (version_a, ordinal_a), (version_b, ordinal_b) = _version_and_ordinal(first), _version_and_ordinal(second)
    return (
        version_a == version_b and ordinal_a is not None and ordinal_b is not None and abs(ordinal_a - ordinal_b) == 1
    )


def deduplicated(candidates: Sequence[Evidence]) -> list[Evidence]:
    """The candidates in order, less each one that repeats a better-ranked one: near-identical text anywhere (a
    re-upload, a copied paragraph), or a neighbouring chunk of the same block sequence that is mostly overlap."""
    kept: list[tuple[Evidence, frozenset[tuple[str, ...]]]] = []
    for candidate in candidates:
        shingles = _shingles(candidate.text)
        repeats = False
        for earlier, earlier_shingles in kept:
            overlap = _containment(shingles, earlier_shingles)
            neighbour = _neighbours(candidate.chunk_id, earlier.chunk_id)
            if overlap >= NEAR_DUPLICATE or (neighbour and overlap >= NEIGHBOUR_OVERLAP):
                repeats = True
                break
        if not repeats:
            kept.append((candidate, shingles))
    return [candidate for candidate, _ in kept]


def selected(
    candidates: Sequence[Evidence], *, limit: int = MAX_EVIDENCE, budget: int = EVIDENCE_BUDGET_CHARACTERS
) -> list[Evidence]:
    """A prefix of the ranking (direct subjects already first) within `limit` pieces and `budget` characters of
    text, numbered E1, E2, … in that order: the first piece is always taken, cut to the budget if it must be."""
    chosen: list[Evidence] = []
    spent = 0
    for candidate in candidates:
        if len(chosen) == limit:
            break
        size = len(candidate.text)
        if chosen and spent + size > budget:
            break
        spent += size
        chosen.append(candidate)
    return [piece.model_copy(update={"evidence_id": f"E{number}"}) for number, piece in enumerate(chosen, start=1)]


def evidence_blocks(evidence: Sequence[Evidence], *, budget: int = EVIDENCE_BUDGET_CHARACTERS) -> list[EvidenceBlock]:
    """What the generator is sent: one block per Quire block of each piece (its regions: a paragraph, a table, a
    slide's shape), id'd `E2.1`, `E2.2`, … (a piece with one region, or none stored, is one block, `E2`), with
    the piece's heading path; `budget` characters in all, the last block cut to fit."""
    blocks: list[EvidenceBlock] = []
    left = budget
    for piece in evidence:
        body = piece.text
        regions = piece.snapshot.location.regions
        spans = [(region.start, region.end) for region in regions] if len(regions) > 1 else [(0, len(body))]
        for number, (start, end) in enumerate(spans, start=1):
            text = body[start:end].strip()
            if not text or left <= 0:
                continue
            evidence_id = f"{piece.evidence_id}.{number}" if len(spans) > 1 else piece.evidence_id
            blocks.append(
                EvidenceBlock(evidence_id=evidence_id, heading_path=piece.snapshot.heading_path, text=text[:left])
            )
            left -= len(text)
    return blocks


def piece_of(evidence_id: str, evidence: Mapping[str, Evidence]) -> str | None:
    """The piece an id names: a piece's own id (E2) or one of its blocks' (E2.1); None for anything else."""
    if evidence_id in evidence:
        return evidence_id
    piece, _, block = evidence_id.rpartition(".")
    if piece in evidence and block.isdigit():
        regions = evidence[piece].snapshot.location.regions
        return piece if 1 <= int(block) <= max(len(regions), 1) else None
    return None


def quoted_regions(piece: Evidence, quote: str | None) -> tuple[ChunkRegion, ...]:
    """The piece's regions (blocks) the quote lies in, found verbatim in its text (white space normalised); none
    when it cannot be placed, and then the citation names the chunk's regions as search does."""
    if not quote:
        return ()
    body = piece.text
    start = body.find(quote)
    end = start + len(quote)
    if start < 0:
        # The quote is compared with white space normalised: place it by its words.
        words = quote.split()
        pattern = r"\s+".join(re.escape(word) for word in words)
        match = re.search(pattern, body) if words else None
        if match is None:
            return ()
        start, end = match.span()
    return tuple(region for region in piece.snapshot.location.regions if region.start < end and start < region.end)


# --- validation of a draft ------------------------------------------------------------------------------------


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


def _contains_token(text: str, token: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(token)}(?![\w-])", text) is not None


def _clipped(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", 0, limit + 1)
    return text[: cut if cut > limit // 2 else limit].rstrip()


def validated_claim(draft: DraftClaim, evidence: Mapping[str, Evidence]) -> ValidatedClaim | None:
    """One draft claim checked against the evidence sent (None: nothing to say, e.g. an empty text).

    - ids not among those sent are rejected, never kept as an unresolved citation;
    - the quote must be a verbatim span (white space normalised) of the evidence its remaining ids name;
    - every number and identifier the claim states must appear, as a whole token, in that evidence (a page or a
      figure the model supplied that the evidence does not state is invented);
    - a claim failing either keeps its text but loses its evidence: it is shown unsupported, never as cited.
    """
    text = _clipped(normalised(draft.text), MAX_CLAIM_CHARACTERS)
    if not any(character.isalnum() for character in text):
        return None
    kind = ClaimKind.DIRECT if draft.direct else ClaimKind.INFERRED
    named = [piece_of(evidence_id, evidence) for evidence_id in dict.fromkeys(draft.evidence_ids)]
    known = tuple(dict.fromkeys(piece for piece in named if piece is not None))
    rejected = sum(1 for piece in named if piece is None)
    quote = normalised(draft.quote)
    texts = [evidence[evidence_id].text for evidence_id in known]
    if not known or not quote or not quote_fits(quote, texts):
        return ValidatedClaim(text=text, evidence_ids=(), kind=kind, quote=None, rejected_ids=rejected)
    # Only the pieces the quote is in bear the claim out; others the model named alongside are dropped.
    bearing = tuple(evidence_id for evidence_id in known if quote_fits(quote, [evidence[evidence_id].text])) or known
    cited = [normalised(evidence[evidence_id].text).casefold() for evidence_id in bearing]
    if not all(any(_contains_token(body, figure) for body in cited) for figure in stated_figures(text)):
        return ValidatedClaim(text=text, evidence_ids=(), kind=kind, quote=None, rejected_ids=rejected)
    return ValidatedClaim(
        text=text, evidence_ids=bearing, kind=kind, quote=_clipped(quote, MAX_CLAIM_CHARACTERS), rejected_ids=rejected
    )


def validated_draft(draft: GeneratedDraft, evidence: Sequence[Evidence]) -> ValidatedDraft:
    by_id = {piece.evidence_id: piece for piece in evidence}
    claims = [claim for claim in (validated_claim(item, by_id) for item in draft.claims[:MAX_CLAIMS]) if claim]
    return ValidatedDraft(
        claims=tuple(claims),
        rejected_ids=sum(claim.rejected_ids for claim in claims),
        downgraded=sum(1 for claim in claims if not claim.evidence_ids),
    )


# --- extractive answers ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Sentence:
    """A sentence of one piece of evidence: verbatim `evidence.text[start:end]`."""

    evidence_id: str
    start: int
    end: int
    text: str


def sentences_of(piece: Evidence) -> list[Sentence]:
    """The piece's sentences, each a verbatim slice of its text: blocks (and a table's rows) first, then the
    chunker's sentence boundaries inside each; bounded per piece."""
    body = piece.text
    found: list[Sentence] = []
    offset = 0
    for block in body.split(BLOCK_SEPARATOR):
        lines = block.split("\n") if " | " in block else [block]
        line_offset = offset
        for line in lines:
            for start, end in sentence_spans(line):
                text = line[start:end]
                if len(text) >= MIN_SENTENCE_CHARACTERS and any(character.isalpha() for character in text):
                    clipped = _clipped(text, MAX_CLAIM_CHARACTERS)
                    begin = line_offset + start
                    found.append(Sentence(piece.evidence_id, begin, begin + len(clipped), clipped))
                if len(found) == MAX_SENTENCES_PER_EVIDENCE:
                    return found
            line_offset += len(line) + 1
        offset += len(block) + len(BLOCK_SEPARATOR)
    return found


def lexical_similarity(question: str, sentence: str) -> float:
    """The share of the question's words (stopwords off) the sentence holds: the ranking when no embedding runs."""
    wanted = query_terms(question)
    if not wanted:
        return 0.0
    return len(wanted & query_terms(sentence)) / len(wanted)


def cosine(first: Sequence[float], second: Sequence[float]) -> float:
    dot = sum(a * b for a, b in zip(first, second, strict=True))
    norms = math.sqrt(sum(a * a for a in first)) * math.sqrt(sum(b * b for b in second))
    return dot / norms if norms else 0.0


def ranked_sentences(
    sentences: Sequence[Sentence], similarity: Sequence[float], evidence_order: Mapping[str, int]
) -> list[tuple[Sentence, float]]:
    """Sentences best first; ties by evidence rank, then position (deterministic)."""
    paired = list(zip(sentences, similarity, strict=True))
    return sorted(paired, key=lambda item: (-round(item[1], 6), evidence_order[item[0].evidence_id], item[0].start))


def extractive_choice(
    ranked: Sequence[tuple[Sentence, float]], *, count: int = EXTRACTIVE_SENTENCES, floor: float
) -> list[tuple[Sentence, float]]:
    """The best `count` sentences at or above `floor`, no two near-identical, at most two from one piece."""
    chosen: list[tuple[Sentence, float]] = []
    per_piece: dict[str, int] = {}
    shingles: list[frozenset[tuple[str, ...]]] = []
    for sentence, score in ranked:
        if len(chosen) == count or score < floor:
            break
        if per_piece.get(sentence.evidence_id, 0) == 2:
            continue
        own = _shingles(sentence.text)
        if any(_containment(own, other) >= NEAR_DUPLICATE for other in shingles):
            continue
        chosen.append((sentence, score))
        shingles.append(own)
        per_piece[sentence.evidence_id] = per_piece.get(sentence.evidence_id, 0) + 1
    return chosen


# --- conflicts ------------------------------------------------------------------------------------------------


def _content_words(text: str) -> frozenset[str]:
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


def disagreements(statements: Sequence[Statement], *, threshold: float = SAME_SUBJECT) -> list[tuple[str, str]]:
    """Pairs of evidence ids from different documents whose statements speak of the same thing (content words,
    figures left out, overlap at least `threshold`) but state figures (numbers, dates) neither of which includes
    the other's: "due 14 March 2026" against "due 21 March 2026" is a conflict; a statement that only adds a
    figure to the other's is not."""
    found: list[tuple[str, str]] = []
    for index, first in enumerate(statements):
        first_figures = frozenset(stated_figures(first.text))
        if not first_figures:
            continue
        for second in statements[index + 1 :]:
            if second.file_id == first.file_id or second.evidence_id == first.evidence_id:
                continue
            second_figures = frozenset(stated_figures(second.text))
            if not second_figures or first_figures <= second_figures or second_figures <= first_figures:
                continue
            if _jaccard(_content_words(first.text), _content_words(second.text)) >= threshold:
                found.append((first.evidence_id, second.evidence_id))
    return found


# --- citations and confidence ---------------------------------------------------------------------------------


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


def withheld_citations(
    claims: Sequence[AnswerClaim],
    citations: Sequence[AnswerCitation],
    readable: frozenset[str],
    present: frozenset[str],
) -> tuple[list[AnswerClaim], list[AnswerCitation], int]:
    """The citations the caller may still read (their collection readable, their chunk still stored), renumbered
    in order; the claims keep the numbers that survive; the count withheld."""
    kept = [
        citation
        for citation in citations
        if citation.citation.collection_id in readable and citation.chunk_id in present
    ]
    renumber = {citation.number: position for position, citation in enumerate(kept, start=1)}
    return (
        [
            claim.model_copy(
                update={"citations": tuple(renumber[number] for number in claim.citations if number in renumber)}
            )
            for claim in claims
        ],
        [citation.model_copy(update={"number": renumber[citation.number]}) for citation in kept],
        len(citations) - len(kept),
    )


# The semantic lane's scores are (cosine + 1) / 2: for MiniLM a best chunk at 0.6 is barely related (the
# semantic floor), one at 0.85 a close paraphrase. The top factor maps that range onto [0, 1].
TOP_SCORE_LOW, TOP_SCORE_HIGH = 0.6, 0.85
HIGH_BAND, MEDIUM_BAND = 0.75, 0.5


def confidence(
    *,
    claims: Sequence[AnswerClaim],
    citations: Sequence[AnswerCitation],
    evidence: Sequence[Evidence],
    vector_available: bool,
    ambiguous: bool,
    extractive: bool,
    lexical_coverage: float,
) -> Confidence:
    """The band from retrieval and validation facts only (never a model's opinion of itself):

    score = 0.35·top retrieval + 0.25·direct-claim coverage + 0.2·citation coverage + 0.2·min(documents, 3)/3
            - unsupported-claim penalty (0.15 each, at most 0.45) - ambiguous-evidence penalty (0.15)
            - degraded-index penalty (0.2 lexical only; 0.1 when a cited passage is OCR read below 0.8 or a
              vision model's description).
    HIGH ≥ 0.75, MEDIUM ≥ 0.5, else LOW; an extractive answer is passages, not a composed answer: at most MEDIUM.
    """
    vector_scores = [piece.vector_score for piece in evidence if piece.vector_score is not None]
    if vector_scores:
        top = min(1.0, max(0.0, (max(vector_scores) - TOP_SCORE_LOW) / (TOP_SCORE_HIGH - TOP_SCORE_LOW)))
    else:
        top = lexical_coverage
    total = len(claims)
    supported = [claim for claim in claims if claim.supported]
    direct = [claim for claim in supported if claim.kind is not ClaimKind.INFERRED]
    direct_coverage = len(direct) / total if total else 0.0
    citation_coverage = len(supported) / total if total else 0.0
    documents = len({citation.citation.file_id for citation in citations})
    unsupported_penalty = min(0.45, 0.15 * (total - len(supported)))
    ambiguous_penalty = 0.15 if ambiguous else 0.0
    degraded = 0.2 if not vector_available else 0.0
    if any(
        (citation.citation.kind is CitedKind.TRANSCRIPTION and (citation.citation.ocr_confidence or 0) < 0.8)
        or citation.citation.kind is CitedKind.DESCRIPTION
        for citation in citations
    ):
        degraded += 0.1
    score = (
        0.35 * top
        + 0.25 * direct_coverage
        + 0.2 * citation_coverage
        + 0.2 * min(documents, 3) / 3
        - unsupported_penalty
        - ambiguous_penalty
        - degraded
    )
    score = round(max(0.0, min(1.0, score)), 4)
    if score >= HIGH_BAND:
        band = ConfidenceBand.MEDIUM if extractive else ConfidenceBand.HIGH
    else:
        band = ConfidenceBand.MEDIUM if score >= MEDIUM_BAND else ConfidenceBand.LOW
    return Confidence(
        band=band,
        score=score,
        factors=ConfidenceFactors(
            top_retrieval_score=round(top, 4),
            direct_claim_coverage=round(direct_coverage, 4),
            citation_coverage=round(citation_coverage, 4),
            independent_documents=documents,
            unsupported_claim_penalty=round(unsupported_penalty, 4),
            ambiguous_evidence_penalty=ambiguous_penalty,
            degraded_index_penalty=round(degraded, 4),
        ),
    )
