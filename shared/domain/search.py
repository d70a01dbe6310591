"""Search: the query, the fusion of the two lanes, the floors, and an outcome that is a union.

"Found nothing" is its own type with no hits to read as a weak answer, and its reason says which
sentence is true: you may read nothing that could match / nothing matches / nothing is close enough.
"""

import json
import re
import statistics
from collections.abc import Callable, Sequence
from datetime import datetime
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_serializer, model_validator

from shared.domain.document import BlockKind
from shared.domain.knowledge import ChunkLocation, ChunkRegion, RankedChunk
from shared.domain.languages import cjk_apart, keyword_text
from shared.domain.metadata_filter import MetadataFilter
from shared.domain.query_constraints import QueryConstraints
from shared.domain.recognition import BoundingBox
from shared.domain.reranking import RerankOutcome
from shared.domain.similarity import MINILM_SCALE
from shared.domain.stopwords import ENGLISH_STOPWORDS, stopwords_of

MAX_QUERY_CHARACTERS = 2_000
MAX_EXCERPT_CHARACTERS = 2_000
MAX_RESULTS = 50


class SearchMode(StrEnum):
    HYBRID = "hybrid"
    KEYWORD = "keyword"
    SEMANTIC = "semantic"


class SearchFilters(BaseModel):
    """Narrow the candidates inside both lanes, before ranking (never after: that would leak counts)."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    collections: frozenset[str] | None = None
    media_types: frozenset[str] | None = None
    filename: str | None = Field(default=None, min_length=1, max_length=255)  # case-insensitive substring
    uploaded_after: datetime | None = None
    uploaded_before: datetime | None = None
    # The product's metadata filter (the body's `filter`; shared/domain/metadata_filter.py), applied in every lane.
    where: MetadataFilter | None = None

    @field_serializer("where")
    def _where_as_json(self, where: MetadataFilter | None) -> Any:
        return json.loads(where.text) if where is not None else None

    @model_validator(mode="after")
    def _ordered_window(self) -> "SearchFilters":
        if self.uploaded_after and self.uploaded_before and self.uploaded_after >= self.uploaded_before:
            raise ValueError("uploadedAfter must be earlier than uploadedBefore")
        return self


class SearchQuery(BaseModel):
    model_config = ConfigDict(frozen=True)

    text: str = Field(min_length=1, max_length=MAX_QUERY_CHARACTERS)
    limit: int = Field(default=10, ge=1, le=MAX_RESULTS)
    mode: SearchMode = SearchMode.HYBRID
    filters: SearchFilters = Field(default_factory=SearchFilters)
    constraints: QueryConstraints = QueryConstraints()  # the query's phrases and exclusions (query_syntax.py)

    @model_validator(mode="after")
    def _has_words(self) -> "SearchQuery":
        if not self.text.strip():
            raise ValueError("the query is empty")
        return self


class Fusion(StrEnum):
    """How the two lanes become one ranking (docs/search.md, docs/adr/0008)."""

    RRF = "rrf"  # reciprocal rank: ranks only
    ZSCORE = "zscore"  # a weighted sum of per-query standardised scores, per document


class RetrievalTuning(BaseModel):
    """The numbers retrieval depends on; each is a setting, chosen on the train split (docs/adr/0004)."""

    model_config = ConfigDict(frozen=True)

    # Chosen on the SciFact train split's tune queries (docs/adr/0008): z-score fusion per document beat
    # reciprocal rank there and on the held-out queries.
    fusion: Fusion = Fusion.ZSCORE
    # The vector lane's share of a z-score fusion (the keyword lane's is 1 - this); 0.55 was best on tune.
    vector_weight: float = Field(default=0.55, ge=0, le=1)
    # Its share instead when the question is in a language the embedding model does not cover: the vector lane
    # then places the question by its characters, not its meaning (docs/adr/0011).
    uncovered_vector_weight: float = Field(default=0.1, ge=0, le=1)
    # Set (by Retrieval.tuning_for) on the tuning of a question the embedding model does not cover, whose
    # vector_weight is then uncovered_vector_weight: reciprocal rank weighs the vector lane down in proportion.
    question_uncovered: bool = False
    # For rrf fusion: k 10 fused best (0.716 nDCG@10 vs 0.702 at 60; docs/adr/0004).
    rrf_k: int = Field(default=10, ge=1)
    # Absolute, on (cosine + 1) / 2: unrelated text sits near 0.5, not 0, so without a floor there is
    # always a "nearest" chunk and never an honest "nothing is close enough". Model-specific: for MiniLM
    # on the SciFact train split 99% of queries' best relevant chunk scores >= 0.667, a plain paraphrase
    # of a runbook line 0.64, while off-topic questions' nearest chunk scores 0.57-0.69: 0.6 keeps every
    # real match and turns the clearly unrelated away. Titan needs its own measurement.
    semantic_floor: float = Field(default=MINILM_SCALE.unrelated, ge=0, le=1)
    # Relative to the best fused score (both fusions score every returned chunk above 0): drops the tail of a
    # good result set (never rejects a poor set; that is the absolute floor's job). For z-score fusion 0.3 is
    # the highest that cost no nDCG@10 on the SciFact train tune queries, keeping 9.3 of 10 hits on average
    # as rrf's 0.4 kept 9.2 (docs/adr/0008).
    fused_floor: float = Field(default=0.3, ge=0, le=1)
    candidates: int = Field(default=50, ge=1, le=1000)  # per lane, before fusion
    context_budget_characters: int = Field(default=12_000, ge=MAX_EXCERPT_CHARACTERS)
    bm25_k1: float = Field(default=0.9, gt=0)
    bm25_b: float = Field(default=0.6, ge=0, le=1)
    # What a term in a chunk's context (title, headings, caption) counts for in BM25 against one in its body.
    context_weight: float = Field(default=1.0, ge=0, le=10)


class EmptyReason(StrEnum):
    NO_ACCESS = "no_access"
    NO_MATCH = "no_match"
    BELOW_FLOOR = "below_floor"

    @property
    def sentence(self) -> str:
        return _EMPTY_SENTENCES[self]


_EMPTY_SENTENCES = {
    EmptyReason.NO_ACCESS: "You have access to no collection this search could look in.",
    EmptyReason.NO_MATCH: "Nothing in your collections matches that search.",
    EmptyReason.BELOW_FLOOR: "Some documents are related, but none closely enough to cite. Try the exact words"
    " or an identifier from the document.",
}


class CitedKind(StrEnum):
    """What the cited text is: the document's own words, OCR's reading of its pixels (or a speech engine's of a
    recording), or a vision model's description of an image. An answer may quote the first, should hedge the
    second, and must never present the third as something the document says."""

    QUOTE = "quote"
    TRANSCRIPTION = "transcription"
    DESCRIPTION = "description"


class CitedRegion(BaseModel):
    """One block (or run of adjacent blocks) of the cited chunk, in the format's own terms."""

    model_config = ConfigDict(frozen=True)

    page: int | None = None
    box: BoundingBox | None = None
    sheet: str | None = None
    cells: str | None = None
    slide: int | None = None
    shape: str | None = None
    line_start: int | None = None
    line_end: int | None = None
    paragraph_start: int | None = None
    paragraph_end: int | None = None
    table_index: int | None = None
    start_seconds: float | None = None
    end_seconds: float | None = None
    speaker: str | None = None

    @classmethod
    def of(cls, region: ChunkRegion) -> "CitedRegion":
        return cls(
            page=region.page,
            box=region.box,
            sheet=region.sheet,
            cells=region.cell_range,
            slide=region.slide,
            shape=region.shape,
            line_start=region.line_start,
            line_end=region.line_end,
            paragraph_start=region.paragraph_start,
            paragraph_end=region.paragraph_end,
            table_index=region.table_index,
            start_seconds=region.start_seconds,
            end_seconds=region.end_seconds,
            speaker=region.speaker,
        )


class Citation(BaseModel):
    """A snapshot of what was read and where, not a pointer: it stays evidence after the file is deleted.

    The location fields span the whole chunk, except page and box: those are the first region whose words
    matched the query, so a hit for words on page 2 points at page 2. `regions` are the matching blocks'
    places (every block's when none matched, as for a purely semantic hit; none for chunks stored before
    regions were kept)."""

    model_config = ConfigDict(frozen=True)

    file_id: str
    version_id: str
    filename: str
    media_type: str
    collection_id: str
    page: int | None = None
    page_end: int | None = None
    box: BoundingBox | None = None
    sheet: str | None = None
    cells: str | None = None
    slide: int | None = None
    line_start: int | None = None
    line_end: int | None = None
    paragraph_start: int | None = None
    paragraph_end: int | None = None
    table_index: int | None = None
    shape: str | None = None
    # A recording: the moment cited (the first matching region's span, else the chunk's), and its speaker.
    start_seconds: float | None = None
    end_seconds: float | None = None
    speaker: str | None = None
    regions: tuple[CitedRegion, ...] = ()
    heading_path: tuple[str, ...] = ()
    kind: CitedKind = CitedKind.QUOTE
    # How surely OCR read a transcription (the least sure of its blocks); None for a quote or description.
    ocr_confidence: float | None = None
    # How surely the speech engine heard a recording's words (the least sure of the cited segments).
    speech_confidence: float | None = None
    # The language the cited chunk is written in (ISO 639-1; None: not known, or cited before languages were kept).
    language: str | None = None
    excerpt: str
    retrieved_at: datetime
    # The file's metadata when it was cited (issue 33), and its revision (None for citations made before).
    metadata: dict[str, Any] = Field(default_factory=dict)
    metadata_revision: int | None = None

    @classmethod
    def of_snapshot(
        cls,
        snapshot: "ChunkSnapshot",
        *,
        excerpt: str,
        retrieved_at: datetime,
        matched: Sequence[ChunkRegion] = (),
    ) -> "Citation":
        """The citation of a stored chunk, as search and artifacts both cite it."""
        return cls.at(
            snapshot.location,
            block_kind=snapshot.block_kind,
            matched=matched,
            file_id=snapshot.file_id,
            version_id=snapshot.version_id,
            filename=snapshot.filename,
            media_type=snapshot.media_type,
            collection_id=snapshot.collection_id,
            heading_path=snapshot.heading_path,
            excerpt=excerpt,
            retrieved_at=retrieved_at,
            metadata=snapshot.metadata,
            metadata_revision=snapshot.metadata_revision,
            language=snapshot.language,
        )

    @classmethod
    def at(
        cls,
        location: ChunkLocation,
        *,
        block_kind: BlockKind = BlockKind.PARAGRAPH,
        matched: Sequence[ChunkRegion] = (),
        **fields: object,
    ) -> "Citation":
        """The citation of a chunk at `location`; `matched` are its regions whose words the query named."""
        spoken = location.start_seconds is not None
        if block_kind is BlockKind.DESCRIPTION:
            kind = CitedKind.DESCRIPTION
        elif location.ocr_confidence is not None or spoken:
            kind = CitedKind.TRANSCRIPTION
        else:
            kind = CitedKind.QUOTE
        heard = kind is CitedKind.TRANSCRIPTION and spoken
        moment = next((region for region in matched if region.start_seconds is not None), None)
        return cls.model_validate(
            {
                **fields,
                "kind": kind,
                "ocr_confidence": location.ocr_confidence if kind is CitedKind.TRANSCRIPTION and not spoken else None,
                "speech_confidence": location.ocr_confidence if heard else None,
                "start_seconds": moment.start_seconds if moment else location.start_seconds,
                "end_seconds": moment.end_seconds if moment else location.end_seconds,
                "speaker": moment.speaker if moment else location.speaker,
                "page": matched[0].page if matched else location.page_start,
                "page_end": location.page_end,
                "box": matched[0].box if matched else location.box,
                "sheet": location.sheet,
                "cells": location.cell_range,
                "slide": location.slide,
                "line_start": location.line_start,
                "line_end": location.line_end,
                "paragraph_start": location.paragraph_start,
                "paragraph_end": location.paragraph_end,
                "table_index": location.table_index,
                "shape": location.shape,
                "regions": tuple(CitedRegion.of(region) for region in (matched or location.regions)),
            }
        )


class SearchHit(BaseModel):
    model_config = ConfigDict(frozen=True)

    chunk_id: str
    # Fused: with z-score fusion (the default) 1 for the best candidate and 0 for what a chunk no lane returned
    # would score; with rrf, Σ 1/(k + rank). Comparable within one result set only, never across queries.
    score: float
    vector_score: float | None  # (cosine + 1) / 2, None when the semantic lane did not find it
    lexical_score: float | None  # BM25, None when the keyword lane did not find it
    excerpt: str
    citation: Citation
    # The question names this chunk's document by a complete title (the title lane): such hits come first.
    # A named document's chunk no lane found has a score of 0.
    direct_subject: bool = False
    # The same text's other places the caller may read (shared/domain/duplicates.py), oldest upload first.
    also_in: tuple[Citation, ...] = ()


class Found(BaseModel):
    model_config = ConfigDict(frozen=True)

    outcome: Literal["found"] = "found"
    hits: tuple[SearchHit, ...]
    vector_available: bool
    truncated_by_budget: bool = False
    rerank: RerankOutcome = Field(default_factory=RerankOutcome.off)  # the reranker's order applied, or why not


class Empty(BaseModel):
    model_config = ConfigDict(frozen=True)

    outcome: EmptyReason
    message: str
    vector_available: bool


SearchOutcome = Found | Empty


class ChunkSnapshot(BaseModel):
    """What a hit needs from its stored chunk to be cited."""

    model_config = ConfigDict(frozen=True)

    chunk_id: str
    file_id: str
    version_id: str
    filename: str
    media_type: str
    collection_id: str
    location: ChunkLocation
    heading_path: tuple[str, ...]
    body: str
    # What it is indexed under before its body (title, headings, caption, and the blank line after them): read
    # by the reranker as the lanes read it, never quoted.
    context: str = ""
    block_kind: BlockKind = BlockKind.PARAGRAPH
    metadata: dict[str, Any] = Field(default_factory=dict)
    metadata_revision: int | None = None
    language: str | None = None
    uploaded_at: datetime | None = None  # the version's, as indexed: which of equal copies search keeps


# --- pure functions -----------------------------------------------------------------------------------


def reciprocal_rank_fusion(
    lanes: Sequence[Sequence[RankedChunk]], k: int, weights: Sequence[float] | None = None
) -> list[tuple[str, float]]:
    """score(d) = Σ over lanes of weight / (k + rank(d)) (every weight 1 by default); only ranks count, so no
    lane's scale can dominate. Ties keep the order of first appearance (lane order, then rank), so the result is
    deterministic."""
    if weights is not None and len(weights) != len(lanes):
        raise ValueError(f"{len(lanes)} lanes need {len(lanes)} weights, not {len(weights)}")
    scores: dict[str, float] = {}
    for position, lane in enumerate(lanes):
        weight = 1.0 if weights is None else weights[position]
        for hit in lane:
            scores[hit.chunk_id] = scores.get(hit.chunk_id, 0.0) + weight / (k + hit.rank)
    order = {chunk_id: position for position, chunk_id in enumerate(scores)}
    return sorted(scores.items(), key=lambda item: (-item[1], order[item[0]]))


# Standard deviations below a lane's weakest document that a document the lane did not return scores: 0 (as
# the weakest) fused best on the SciFact train tune queries (0.5 and 1 a little lower: docs/adr/0008).
MISSED_BY_A_LANE = 0.0
# Fewer documents than this in a lane, and the query is fused by reciprocal rank (see fuse).
MIN_ZSCORE_DOCUMENTS = 5
# The fused scale's 0: this many standard deviations below what a lane's miss scores (every returned chunk is above).
SCALE_ZERO_BELOW_WEAKEST = 1.0


def version_of(chunk_id: str) -> str:
    """The file version a chunk belongs to: chunk ids are `{version_id}:{ordinal}`."""
    return chunk_id.split(":", 1)[0]


def _standardised(
    lane: Sequence[RankedChunk], group: Callable[[str], str], missed: float
) -> tuple[dict[str, float], float]:
    """A lane's chunks' z-scores, and what a chunk the lane did not return scores.

    Per query and lane: (score - mean) / population standard deviation, the statistics taken over the documents
    the lane returned (each at its best chunk), so a document of many chunks weighs once; a miss scores `missed`
    below the weakest. A lane whose documents all score alike (one document, say: the only one holding an exact
    name) has no spread to standardise by, but being found by it still says something: its documents score 1
    and a miss 0, or an exact-word match would count for nothing against the semantic lane's spread."""
    documents: dict[str, float] = {}
    for hit in lane:
        key = group(hit.chunk_id)
        documents[key] = max(documents.get(key, hit.score), hit.score)
    mean = statistics.fmean(documents.values())
    spread = statistics.pstdev(documents.values())
    standardised: dict[str, float] = {}
    for hit in lane:
        standardised.setdefault(hit.chunk_id, (hit.score - mean) / spread if spread else 1.0)
    return standardised, (min(standardised.values()) - missed if spread else 0.0)


def zscore_fusion(
    lanes: Sequence[Sequence[RankedChunk]],
    weights: Sequence[float],
    *,
    group: Callable[[str], str] = version_of,
    missed: float = MISSED_BY_A_LANE,
) -> list[tuple[str, float]]:
    """A convex combination of the lanes' scores, each standardised per query (a z-score over the documents
    the lane returned), fused per document (`group`, by default the file version), then per chunk.

    A document's score in a lane is its best chunk's there; a document or chunk the lane did not return
    scores `missed` (>= 0) standard deviations below the lane's weakest (above 0, being found at all counts;
    that did not help on SciFact). A document's fused score is Σ weight * lane score; its best chunk (by the
    chunk's own fused score) carries it, its other chunks their own fused score, never higher: documents rank
    as their fused scores say, a document's chunks in their own order, and a long document's weaker chunks
    cannot crowd out the next document. An empty lane takes no part. Ties keep the order of first appearance
    (lane order, then rank).

    The result is rescaled per query so that 1 is the best candidate and 0 lies SCALE_ZERO_BELOW_WEAKEST
    standard deviations below what each lane's miss scores: every returned chunk is above 0, so a floor
    relative to the best means what it meant for reciprocal rank, whose scores are above 0 too. Comparable
    within one result set only."""
    if len(weights) != len(lanes):
        raise ValueError(f"{len(lanes)} lanes need {len(lanes)} weights, not {len(weights)}")
    if missed < 0:
        raise ValueError(f"missed must be at least 0, not {missed}")
    standardised = [
        (_standardised(lane, group, missed), weight) for lane, weight in zip(lanes, weights, strict=True) if lane
    ]
    present = [(scores, weight) for (scores, _), weight in standardised]
    unfound = [absent for (_, absent), _ in standardised]
    if not present:
        return []
    if sum(weight for _, weight in present) <= 0:  # only lanes weighted 0 answered (a keyword-only search)
        present = [(scores, 1.0) for scores, _ in present]
    appearance: dict[str, None] = {}
    for lane in lanes:
        for hit in lane:
            appearance.setdefault(hit.chunk_id, None)
    own = {
        chunk_id: sum(
            weight * scores.get(chunk_id, absent) for (scores, weight), absent in zip(present, unfound, strict=True)
        )
        for chunk_id in appearance
    }
    documents: dict[str, list[str]] = {}
    for chunk_id in appearance:
        documents.setdefault(group(chunk_id), []).append(chunk_id)
    fused: dict[str, float] = {}
    for chunk_ids in documents.values():
        best = max(chunk_ids, key=lambda chunk_id: own[chunk_id])  # the first of equals
        document_score = sum(
            weight * max((scores[chunk_id] for chunk_id in chunk_ids if chunk_id in scores), default=absent)
            for (scores, weight), absent in zip(present, unfound, strict=True)
        )
        for chunk_id in chunk_ids:
            fused[chunk_id] = document_score if chunk_id == best else own[chunk_id]
    position = {chunk_id: index for index, chunk_id in enumerate(appearance)}
    ranked = sorted(fused.items(), key=lambda item: (-item[1], position[item[0]]))
    zero = sum(
        weight * (absent - SCALE_ZERO_BELOW_WEAKEST) for (_, weight), absent in zip(present, unfound, strict=True)
    )
    top = ranked[0][1] - zero
    return [(chunk_id, (score - zero) / top) for chunk_id, score in ranked]


def fuse(lanes: Sequence[Sequence[RankedChunk]], tuning: "RetrievalTuning") -> list[tuple[str, float]]:
    """The lanes (vector first, then keyword) fused as `tuning` says: what search and the evaluation both call."""
    if tuning.fusion is Fusion.RRF or any(
        0 < len({version_of(hit.chunk_id) for hit in lane}) < MIN_ZSCORE_DOCUMENTS for lane in lanes
    ):
        # A z-score needs a sample: over two documents any difference, however slight, is ±1, and a lane's
        # near-tie would outweigh the other lane's exact match. A small collection's lanes fuse by rank.
        return reciprocal_rank_fusion(lanes, tuning.rrf_k, _rank_weights(tuning, len(lanes)))
    weights = [tuning.vector_weight, 1.0 - tuning.vector_weight][: len(lanes)]
    return zscore_fusion(lanes, weights)


def _rank_weights(tuning: "RetrievalTuning", lanes: int) -> list[float] | None:
    """Reciprocal rank's lane weights: equal, unless the question is in a language the embedding model does not
    cover; then the vector lane counts as z-score fusion would weigh it against the keyword lane (0.1 : 0.9 by
    default, so a ninth), and a small collection is fused as a large one is (docs/adr/0011)."""
    if not tuning.question_uncovered or lanes < 2:
        return None
    vector = tuning.uncovered_vector_weight
    return [vector / (1.0 - vector) if vector < 1 else 1.0, 1.0]


_IDENTIFIER = re.compile(r"[\w][\w./:-]*[\w]", re.UNICODE)


def identifier_terms(query: str) -> list[str]:
    """Query terms shaped like identifiers (ERR-4021, Q3-2026, v2.1): they contain a digit, or join
    words with a hyphen. Boosting common words found verbatim would just re-rank by word frequency."""
    found = []
    for match in _IDENTIFIER.finditer(cjk_apart(query)):
        term = match.group(0)
        if any(ch.isdigit() for ch in term) or "-" in term:
            found.append(term.casefold())
    return found


def contains_term(text: str, term: str) -> bool:
    # As a whole token: ERR-402 must not match inside ERR-4021.
    return re.search(rf"(?<![\w-]){re.escape(term)}(?![\w-])", cjk_apart(text)) is not None


# A run of letters or digits of the folded text (shared/domain/languages.py:keyword_text: lower case in every
# script, a CJK run as its pairs), as PostgreSQL's `simple` parser mostly splits words (don't: don, t; a_b: a, b).
# It keeps a few shapes whole that this splits (3.14, v2.1, an e-mail address; ERR-4021 is err and -4021):
# both the query and a region are split alike here, so those still match, on their parts. keyword_text leaves only
# spaces, ASCII punctuation, letters, digits and combining marks, so a word is a run of anything but the first two:
# a combining mark stays inside its word (Devanagari's and Tamil's vowel signs and viramas are marks, not letters,
# and `[^\W_]+` cut "अक्सर" into "अक" and "सर"), as it does for the keyword lane's parser.
_TERM = re.compile(r"[^\s\x00-/:-@\[-`{-\x7f]+")


def words_of(text: str) -> list[str]:
    """`text`'s words as spelled, folded as the keyword lane folds them (a CJK run's pairs are its words)."""
    return _TERM.findall(keyword_text(text))


def query_terms(query: str, language: str | None = None) -> frozenset[str]:
    """The query's words as the keyword lane looks them up: folded, stopwords stripped (English's, and `language`'s
    own when it is given)."""
    return frozenset(words_of(query)) - (stopwords_of(language) if language else ENGLISH_STOPWORDS)


def matching_regions(location: ChunkLocation, body: str, terms: frozenset[str]) -> tuple[ChunkRegion, ...]:
    """The chunk's regions whose text holds one of `terms` (none when no region's words are among them)."""
    return tuple(
        region for region in location.regions if not terms.isdisjoint(words_of(body[region.start : region.end]))
    )


def excerpt_of(body: str, limit: int = MAX_EXCERPT_CHARACTERS) -> str:
    """The body, cut on a word boundary to at most `limit` characters (never mid-word)."""
    if len(body) <= limit:
        return body
    cut = body[:limit]
    boundary = max(cut.rfind(" "), cut.rfind("\n"))
    return (cut[:boundary] if boundary > limit // 2 else cut).rstrip()
