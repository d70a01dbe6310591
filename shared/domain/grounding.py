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
from typing import Any

from shared.domain.answers import (
    MAX_CLAIM_CHARACTERS,
    MAX_CLAIMS,
    Answer,
    AnswerCitation,
    AnswerClaim,
    AnswerHit,
    AnswerMethod,
    AnswerOutcome,
    ClaimKind,
    Confidence,
    ConfidenceBand,
    ConfidenceFactors,
    DraftClaim,
    Evidence,
    EvidenceBlock,
    GeneratedDraft,
    Refusal,
    RefusalReason,
)
from shared.domain.knowledge import ChunkRegion
from shared.domain.search import Citation, CitedKind, SearchFilters, excerpt_of, matching_regions, query_terms
from shared.domain.text import (
    BLOCK_SEPARATOR,
    CELL_SEPARATOR,
    contains_token,
    normalised,
    quote_fits,
    sentence_spans,
    stated_figures,
)

MAX_EVIDENCE = 8
# The generator sends at most this many blocks (its own bound, shared/adapters/aws/bedrock_answers.py): what is
# built here always fits it, so every selected piece reaches the model.
MAX_EVIDENCE_BLOCKS = 20
EVIDENCE_BUDGET_CHARACTERS = 12_000
EXTRACTIVE_SENTENCES = 3
# Sentences embedded to rank an extractive answer: all of the LEADING_PIECES best pieces', then word-sharing ones.
MAX_RANKED_SENTENCES = 24
LEADING_PIECES = 2
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
MIN_QUOTE_WORDS = 4
MIN_CLAIM_OVERLAP = 0.5
_WORD = re.compile(r"[^\W_]+")
_FIGURE = re.compile(r"\d")


# --- the question ---------------------------------------------------------------------------------------------


def normalised_question(text: str) -> str:
    """The question as the cache compares it: NFKC, case-folded, white space collapsed."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


# Requests that are not questions about the documents, in the form an instruction takes: to drop the rules, to
# reveal the assistant's own prompt, to reach other tenants, or to change stored data (an imperative first word).
# Deterministic and narrow on purpose: "How do I delete old files?" or "What does the runbook say about the system
# prompt?" are questions for the documents; retrieval's floors and the model's "unanswerable" handle the rest.
_TENANT_DATA = r"(?:data|documents?|files?|collections?|content|answers?|records?|uploads?|information|chunks?)\b"
_OUT_OF_SCOPE = tuple(
    re.compile(pattern, re.I)
    for pattern in (
        r"^\W*(?:please\s+)?(?:ignore|disregard|forget|override)\b.{0,60}\b(?:instructions?|rules|prompts?|guidelines)\b",
        r"\b(?:your|the hidden|the initial|the original)\s+(?:system\s+)?(?:prompt|instructions|rules)\b",
        r"\byour\s+system\s+prompt\b",
        r"\b(?:instructions|prompt|rules)\s+(?:that\s+)?you\s+(?:were|are|have\s+been)\s+given\b",
        r"^\W*(?:please\s+)?(?:reveal|print|repeat|disclose|show|output)\b.{0,20}\bsystem\s+prompt\b",
        # Another tenant's data, not a lease's tenants ("What must every tenant do before moving out?").
        rf"\b(?:other|another|all|every|different)\s+tenants?(?:'s|')?\s+(?:\w+\s+){{0,2}}?{_TENANT_DATA}",
        rf"\b{_TENANT_DATA}\s+(?:of|from|for|belonging\s+to|owned\s+by)\s+(?:other|another|all|every|different)\s+tenants?\b",
        # An instruction with an object ("delete all files"), not a noun ("Drop-off times?", "Upload limits?").
        r"^\W*(?:please\s+)?(?:delete|erase|drop|overwrite|rename|upload|remove|wipe)\s+(?:all|every|each|the|this|"
        r"these|those|my|our|any)\b",
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
        "filters": _canonical_filters(filters),
        "mode": mode,
        "index": index_version,
        "retrieval": retrieval_settings,
        "prompt": prompt_version,
        "model": model,
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def _canonical_filters(filters: SearchFilters) -> dict[str, Any]:
    """The filters with their sets sorted: a set's JSON follows its hash order, which changes per process, and the
    same filter must give the same key in every Lambda instance."""
    dumped = filters.model_dump(mode="json")
    return {name: sorted(value) if isinstance(value, list) else value for name, value in dumped.items()}


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
    text, numbered E1, E2, … in that order: the first piece is always taken (evidence_blocks cuts it to the budget)."""
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


def evidence_blocks(
    evidence: Sequence[Evidence], *, budget: int = EVIDENCE_BUDGET_CHARACTERS, max_blocks: int = MAX_EVIDENCE_BLOCKS
) -> list[EvidenceBlock]:
    """What the generator is sent: each piece's Quire blocks (its regions: a paragraph, a table, a slide's shape) as
    blocks of their own, id'd `E2.1`, `E2.2`, … (a piece with one region, or none stored, is one block, `E2`), with
    the piece's heading path. At most `max_blocks` in all, shared fairly: a piece with more regions than its share
    has its adjacent regions joined, so every selected piece is seen. `budget` characters in all, the last cut."""
    share = max(1, max_blocks // max(1, len(evidence)))
    blocks: list[EvidenceBlock] = []
    left = budget
    for piece in evidence:
        body = piece.text
        regions = piece.snapshot.location.regions
        spans = [(region.start, region.end) for region in regions] if len(regions) > 1 else [(0, len(body))]
        if len(spans) > share:
            # Runs of adjacent regions, as even as the share allows, each from the first's start to the last's end.
            size = -(-len(spans) // share)
            spans = [
                (spans[index][0], spans[min(index + size, len(spans)) - 1][1]) for index in range(0, len(spans), size)
            ]
        for number, (start, end) in enumerate(spans, start=1):
            text = body[start:end].strip()
            if not text or left <= 0 or len(blocks) == max_blocks:
                continue
            evidence_id = f"{piece.evidence_id}.{number}" if len(spans) > 1 else piece.evidence_id
            blocks.append(
                EvidenceBlock(evidence_id=evidence_id, heading_path=piece.snapshot.heading_path, text=text[:left])
            )
            left -= len(text)
    return blocks


def piece_of(evidence_id: str, evidence: Mapping[str, Evidence], sent: frozenset[str] | None = None) -> str | None:
    """The piece an id names: a piece's own id (E2) or one of its blocks' (E2.1) among those `sent` (every block
    id of a sent piece, when not given); None for anything else: an id the model was never given."""
    if evidence_id in evidence:
        return evidence_id
    piece, _, block = evidence_id.rpartition(".")
    if piece not in evidence or not (block.isascii() and block.isdigit()):  # "²" is a digit int() refuses
        return None
    if sent is not None:
        return piece if evidence_id in sent else None
    return piece if 1 <= int(block) <= max(len(evidence[piece].snapshot.location.regions), 1) else None


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


def _clipped(text: str, limit: int) -> str:
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
    text = _clipped(normalised(draft.text), MAX_CLAIM_CHARACTERS)
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
    if len(quote.split()) < MIN_QUOTE_WORDS and not any(quote.casefold() == body for body in cited):
        return unsupported
    claimed = _content_words(text)
    if claimed and len(
        claimed & frozenset().union(*(_content_words(body) for body in cited))
    ) < MIN_CLAIM_OVERLAP * len(claimed):
        return unsupported
    if not all(any(contains_token(body, figure) for body in cited) for figure in stated_figures(text)):
        return unsupported
    return ValidatedClaim(
        text=text, evidence_ids=bearing, kind=kind, quote=_clipped(quote, MAX_CLAIM_CHARACTERS), rejected_ids=rejected
    )


def supported_assumptions(
    assumptions: Sequence[str], evidence: Sequence[Evidence], *, limit: int = 5
) -> tuple[str, ...]:
    """The model's assumptions worth showing (its own words, labelled so): none stating a figure the evidence does
    not (a page, a date, an amount it made up), at most `limit`, each clipped."""
    bodies = [normalised(piece.text).casefold() for piece in evidence]
    kept = [
        _clipped(normalised(assumption), MAX_CLAIM_CHARACTERS)
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
        # A table's rows are its sentences.
        for start, end in sentence_spans(block, by_line=CELL_SEPARATOR in block):
            text = block[start:end]
            if len(text) >= MIN_SENTENCE_CHARACTERS and any(character.isalpha() for character in text):
                clipped = _clipped(text, MAX_CLAIM_CHARACTERS)
                begin = offset + start
                found.append(Sentence(piece.evidence_id, begin, begin + len(clipped), clipped))
            if len(found) == MAX_SENTENCES_PER_EVIDENCE:
                return found
        offset += len(block) + len(BLOCK_SEPARATOR)
    return found


def sentences_to_rank(
    question: str,
    sentences: Sequence[Sentence],
    evidence_order: Mapping[str, int],
    *,
    limit: int = MAX_RANKED_SENTENCES,
) -> list[Sentence]:
    """The sentences worth embedding, at most `limit`: every sentence of the best-ranked pieces (where a
    paraphrase with no shared word is likeliest to be), then those of the rest that share a word with the
    question, best-sharing first. Embedding every sentence of eight pieces costs most of an answer's time and
    changes its choice seldom: the pieces are already ranked."""
    if len(sentences) <= limit:
        return list(sentences)
    leading = [sentence for sentence in sentences if evidence_order[sentence.evidence_id] < LEADING_PIECES]
    rest = sorted(
        (sentence for sentence in sentences if evidence_order[sentence.evidence_id] >= LEADING_PIECES),
        key=lambda sentence: (
            -lexical_similarity(question, sentence.text),
            evidence_order[sentence.evidence_id],
            sentence.start,
        ),
    )
    chosen = leading[:limit] + [sentence for sentence in rest if lexical_similarity(question, sentence.text) > 0]
    kept = set(map(id, chosen[:limit]))
    return [sentence for sentence in sentences if id(sentence) in kept]


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


# The semantic lane's scores are (cosine + 1) / 2: for MiniLM a best chunk at 0.6 is barely related (the
# semantic floor), one at 0.85 a close paraphrase. The top factor maps that range onto [0, 1].
TOP_SCORE_LOW, TOP_SCORE_HIGH = 0.6, 0.85
HIGH_BAND, MEDIUM_BAND = 0.75, 0.5


def top_retrieval(evidence: Sequence[Evidence], *, lexical_coverage: float) -> float:
    """The best semantic score mapped onto [0, 1] (keyword only: the share of the question's words in the best
    piece)."""
    vector_scores = [piece.vector_score for piece in evidence if piece.vector_score is not None]
    if not vector_scores:
        return round(lexical_coverage, 4)
    return round(min(1.0, max(0.0, (max(vector_scores) - TOP_SCORE_LOW) / (TOP_SCORE_HIGH - TOP_SCORE_LOW))), 4)


def confidence_of(
    *,
    top: float,
    vector_available: bool,
    ambiguous: bool,
    claims: Sequence[AnswerClaim],
    citations: Sequence[AnswerCitation],
    extractive: bool,
) -> Confidence:
    """The band from retrieval and validation facts only (never a model's opinion of itself):

    score = 0.35·top retrieval + 0.25·direct-claim coverage + 0.2·citation coverage + 0.2·min(documents, 3)/3
            - unsupported-claim penalty (0.15 each, at most 0.45) - ambiguous-evidence penalty (0.15)
            - degraded-index penalty (0.2 lexical only; 0.1 when a cited passage is OCR read below 0.8 or a
              vision model's description).
    HIGH ≥ 0.75, MEDIUM ≥ 0.5, else LOW; an extractive answer is passages, not a composed answer: at most MEDIUM.
    """
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
    """confidence_of, with the top retrieval factor read off the evidence."""
    return confidence_of(
        top=top_retrieval(evidence, lexical_coverage=lexical_coverage),
        vector_available=vector_available,
        ambiguous=ambiguous,
        claims=claims,
        citations=citations,
        extractive=extractive,
    )
